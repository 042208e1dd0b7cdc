"""A ``tf.TensorArray`` used inside a graph means what eager's does (eager is the oracle).

Eager's ``TensorArray`` is one mutable object: ``write`` changes it in place and returns it,
and with ``clear_after_read`` (the default) a ``read`` clears the item — a second read of it
raises, a later ``stack`` sees zeros there.  A graph's is a ``TensorList`` value that forgets
both.  Before the trace modelled eager's array (``janus.lowering.tensor_arrays.method``), a
graph gave ``a + ta.stack()`` from the uncleared items, dropped a write whose result was not
assigned, and returned a value where eager raised.  Each program below runs eagerly and
through Janus with changing inputs, compared after every call.
"""
import types

import tensorflow as tf

from harness import check

CALLS = [(tf.constant(float(i)),) for i in range(1, 7)]


def _prog(body):
    return lambda jit: types.SimpleNamespace(fn=jit(body))


def read_then_stack(x):
    ta = tf.TensorArray(tf.float32, size=2)
    ta = ta.write(0, x)
    ta = ta.write(1, x * 2.0)
    a = ta.read(0)
    return a + ta.stack()  # eager: item 0 was cleared, so [x, 3x]


def written_in_place(x):
    ta = tf.TensorArray(tf.float32, size=3)
    ta.write(0, x)  # eager changes the array: the result need not be kept
    tb = ta.write(1, x + 1.0)
    ta.write(2, x * 3.0)
    return tb.stack(), ta.size()  # tb is ta in eager: all three writes


def read_twice(x):
    ta = tf.TensorArray(tf.float32, size=2).write(0, x).write(1, x)
    return ta.read(0) + ta.read(0)  # eager raises InvalidArgumentError


def read_twice_kept(x):
    ta = tf.TensorArray(tf.float32, size=2, clear_after_read=False).write(0, x).write(1, -x)
    return ta.read(0) + ta.read(0) + ta.stack()


def read_written_again(x):
    ta = tf.TensorArray(tf.float32, size=2).unstack(tf.stack([x, x + 1.0]))
    first = ta.read(1)
    ta = ta.write(1, first * 10.0)  # a write after a clearing read: readable again
    return first + ta.read(1), ta.stack()


def read_at_computed_index(x, k):
    ta = tf.TensorArray(tf.float32, size=3, element_shape=()).unstack(tf.stack([x, x + 1.0, x + 2.0]))
    return ta.read(k), ta.stack()  # eager: item k reads as zero in the stack


def read_then_stacked_of_unknown_shape(x):
    ta = tf.TensorArray(tf.float32, size=3).unstack(tf.stack([x, x + 1.0, x + 2.0]))
    return ta.read(1), ta.stack()  # eager: unstack merged no shape, so no zeros for item 1: raises


def unstacked_read_in_loop(x):
    ta = tf.TensorArray(tf.float32, size=3).unstack(tf.stack([x, 2.0 * x, 3.0 * x]))
    total = tf.constant(0.0)
    for i in tf.range(3):
        total += ta.read(i)
    return total


def read_in_loop_then_stacked(x, n):
    ta = tf.TensorArray(tf.float32, size=4, element_shape=()).unstack(tf.stack([x, 2.0 * x, 3.0 * x, 4.0 * x]))
    total = tf.constant(0.0)
    for i in tf.range(n):
        total += ta.read(i)
    return total, ta.stack()  # eager: the items the loop read are zeros


def read_in_loop_twice(x, n):
    ta = tf.TensorArray(tf.float32, size=4).unstack(tf.stack([x, 2.0 * x, 3.0 * x, 4.0 * x]))
    total = tf.constant(0.0)
    for i in tf.range(n):
        total += ta.read(i // 2)  # eager raises at the second read of item 0
    return total


def carried_written_and_read(x):
    ta = tf.TensorArray(tf.float32, size=3)
    total = tf.constant(0.0)
    for i in tf.range(3):
        ta = ta.write(i, x * tf.cast(i + 1, tf.float32))
        total += ta.read(i)
    return total, ta.stack()  # eager: each item read after its write: zeros in the stack


def test_a_read_clears_the_item_a_later_stack_sees():
    check(_prog(read_then_stack), CALLS, min_graph_calls=3)


def test_a_write_changes_the_one_array_every_handle_sees():
    check(_prog(written_in_place), CALLS, min_graph_calls=3)


def test_a_second_read_raises_as_eager_does():
    check(_prog(read_twice), CALLS, eager_only=True)


def test_an_array_that_keeps_what_it_reads_reads_twice_as_a_graph():
    check(_prog(read_twice_kept), CALLS, min_graph_calls=3)


def test_an_item_written_after_its_read_reads_again():
    check(_prog(read_written_again), CALLS, min_graph_calls=3)


def test_a_read_at_an_index_the_graph_computes_clears_that_item():
    calls = [(tf.constant(float(i)), tf.constant(i % 3)) for i in range(1, 8)]
    check(_prog(read_at_computed_index), calls, min_graph_calls=3)


def test_a_stack_eager_cannot_fill_raises_as_eager_does():
    check(_prog(read_then_stacked_of_unknown_shape), CALLS, graph_calls=0)


def test_reads_in_a_tensor_loop_run_as_a_graph():
    check(_prog(unstacked_read_in_loop), CALLS, min_graph_calls=3)


LOOP_CALLS = [(tf.constant(float(i)), tf.constant(i % 4 + 1)) for i in range(1, 13)]


def test_an_array_read_in_a_loop_then_stacked_is_followed_or_runs_in_python():
    """A ``tf.while_loop``'s body cannot clear the items of an array made outside it, so the
    stack after it runs in Python."""
    total = check(_prog(read_in_loop_then_stacked), LOOP_CALLS, graph_calls=0)
    assert total["breaks"] >= 1, total  # the array the loop read cannot leave the segment: all as written


def test_reads_in_a_tensor_loop_of_an_array_made_outside_it_run_in_python():
    """``ta.read(i // 2)`` reads item 0 twice when the loop runs twice or more: eager raises,
    and a loop's body traced once cannot tell; the loop runs in Python."""
    total = check(_prog(read_in_loop_twice), LOOP_CALLS, graph_calls=0)
    assert total["breaks"] >= 1 and total["segment_graph_calls"] >= 3, total


def read_two_computed(x, k, j):
    ta = tf.TensorArray(tf.float32, size=3).unstack(tf.stack([x, x + 1.0, x + 2.0]))
    return ta.read(k) * 10.0 + ta.read(j)  # eager raises when k == j


def test_reads_at_computed_indices_are_asserted_distinct():
    """Two reads at indices the graph computes: the graph asserts they differ; when they do
    not, the run aborts and eager's re-run raises, as eager does."""
    pairs = [(0, 1), (2, 0), (1, 2), (1, 1), (0, 2), (2, 2), (2, 1), (0, 0), (1, 0)]
    calls = [(tf.constant(float(i)), tf.constant(k), tf.constant(j)) for i, (k, j) in enumerate(pairs)]
    total = check(_prog(read_two_computed), calls, min_graph_calls=3)
    assert total["assertion_failures"] >= 1, total


def test_an_array_the_loop_carries_reads_what_it_wrote_in_the_body():
    check(_prog(carried_written_and_read), CALLS, min_graph_calls=3)
