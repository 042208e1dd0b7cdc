"""Own lists changed under tensor conditions (``janus.lowering.graph_lists``): each side of
the conditional changes a copy of its own, and a list the sides leave at different lengths
becomes a list whose length the graph computes.  Every program is compared with eager
after every call (results, exceptions, output, state).  SPINN's parser over trees that
change at every call is in ``test_tensor_values.py``."""
from types import SimpleNamespace

import gast
import numpy as np
import pytest
import tensorflow as tf

import janus
from harness import case, check
from janus.convert.analysis import own_lists


def _pushes_and_pops(jit):
    """A stack pushed where a score is positive and popped elsewhere: eager raises
    ``IndexError`` when it pops an empty stack."""
    w = tf.Variable([[0.5, -0.25], [0.75, 1.0]])
    sizes = []

    @jit
    def f(xs, scores):
        stack = [xs[0]]
        for i in range(1, 6):
            if scores[i] > 0:
                stack.append(tf.tanh(xs[i] @ w))
            else:
                stack.pop()
        w.assign_add(0.01 * tf.transpose(stack[-1]) * tf.ones([2, 2]))
        sizes.append(len(stack))
        return stack[-1]

    return SimpleNamespace(fn=f, state=lambda: {"w": w, "sizes": list(sizes)})


def test_a_pop_from_an_empty_stack_raises_eagers_index_error_and_the_graph_stays():
    """The graph asserts each pop finds an item: a call that pops an empty stack aborts its
    run, the eager re-run raises ``IndexError`` and changes nothing; the graph stays."""
    r = np.random.RandomState(5)
    xs = tf.constant(r.normal(size=(6, 1, 2)).astype(np.float32))
    signs = [np.array([1, 1, -1 if i % 2 else 1, 1, -1 if i % 3 else 1, 1], np.float32) for i in range(14)]
    calls = [(xs * (i + 1), tf.constant(s * (np.abs(r.normal(size=6)) + 0.1).astype(np.float32)))
             for i, s in enumerate(signs)]
    calls[12] = (xs, tf.constant([1.0, -1.0, -1.0, 1.0, 1.0, 1.0]))  # pops twice from one item
    stats = check(_pushes_and_pops, calls, min_graph_calls=10)
    assert stats["conversions"] == 1 and stats["breaks"] == 0, stats
    prog = _pushes_and_pops(janus.function)
    for call in calls:
        try:
            prog.fn(*call)
        except IndexError:
            pass
    assert "a list index was out of range, re-ran eagerly (graph kept)" in str(janus.explain(prog.fn))


def test_indexing_assigning_and_len_of_a_list_whose_length_the_graph_computes():
    def make(jit):
        @jit
        def f(xs, flags, k):
            items = [xs[0]]
            for i in range(1, 4):
                if flags[i] > 0:
                    items.append(xs[i] * 2.0)
            if flags[0] > 0:
                items[-1] = items[-1] + 100.0
            n = len(items)
            return items[k], items[n - 1], items[0], n

        return SimpleNamespace(fn=f)

    xs = tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
    r = np.random.RandomState(0)
    flags = [np.where(r.rand(4) < 0.5, -1.0, 1.0).astype(np.float32) for _ in range(12)]
    for f in flags:
        f[1] = 1.0  # two items at least
    calls = [(xs + i, tf.constant(f), i % 2 - 1) for i, f in enumerate(flags)]
    calls.append((xs, tf.constant([1.0, 1.0, -1.0, -1.0]), -3))  # items[-3] of two: IndexError
    calls.append((xs, tf.constant([1.0, 1.0, -1.0, 1.0]), 2))
    stats = check(make, calls, min_graph_calls=8)
    assert stats["breaks"] == 0 and stats["conversions"] == 1, stats


def test_a_list_changed_on_both_sides_keeps_its_length_and_stays_a_python_list():
    @case
    def f(x, y):
        acc = [x, y]
        for _ in range(3):
            if tf.reduce_sum(acc[-1]) > 0:
                top = acc.pop()
                acc.append(top - 1.0)
            else:
                acc.pop()
                acc.append(acc[0] * 2.0)
        return acc[0], acc[1], len(acc)

    calls = [(tf.constant([float(i)]), tf.constant([2.5 - i])) for i in [-3, 4, -2, 3, -1, 2, 0, 1, -3, 4, 2, -2]]
    stats = check(f, calls, min_graph_calls=8)
    assert stats["breaks"] == 0, stats


def test_a_list_another_name_sees_is_not_copied_and_the_call_is_not_a_wrong_graph():
    """``seen = items``: both names see the changes, so the list is not the block's own and
    a change under a tensor condition still fails the conversion (eager's results)."""
    def make(jit):
        log = []

        @jit
        def f(x):
            items = [x]
            seen = items
            if tf.reduce_sum(x) > 0:
                items.append(x * 2.0)
            log.append(len(seen))
            return tf.add_n(seen)

        return SimpleNamespace(fn=f, state=lambda: {"log": list(log)})

    calls = [(tf.constant([float(i) - 2.0]),) for i in range(6)]
    check(make, calls, min_graph_calls=0)


def test_tensors_of_two_shapes_in_a_list_of_changing_length_fail_the_conversion_not_the_call():
    @case
    def f(x):
        items = [x]
        if tf.reduce_sum(x) > 0:
            items.append(tf.concat([x, x], 0))
        return len(items), items[-1]

    calls = [(tf.constant([float(i) - 2.0]),) for i in range(6)]
    check(f, calls, min_graph_calls=0)


def test_a_side_that_raises_beside_one_that_grows_the_list_is_speculated_away():
    @case
    def f(x, flags):
        stack = [x]
        if flags[0] > 0:
            stack.append(x * 2.0)
        if flags[1] > 0:
            stack.append(x + 1.0)
        else:
            raise ValueError("no room")
        return stack[-1], len(stack)

    r = np.random.RandomState(0)
    calls = [(tf.constant([float(i)]), tf.constant(np.where(r.rand(2) < 0.2, -1.0, 1.0).astype(np.float32)))
             for i in range(10)]
    calls += [(tf.constant([1.0]), tf.constant([1.0, -1.0])), (tf.constant([2.0]), tf.constant([-1.0, 1.0]))]
    stats = check(f, calls, min_graph_calls=6)
    assert stats["breaks"] == 0, stats


def test_a_tensor_while_loop_reduces_a_list_whose_length_the_graph_computes():
    """``while len(stack) > 1`` on a list a condition grew: a ``tf.while_loop`` carrying it."""
    def make(jit):
        w = tf.Variable([[0.5, -0.25], [0.75, 1.0]])

        @jit
        def f(xs, flags):
            stack = [xs[0]]
            for i in range(1, 6):
                if flags[i] > 0:
                    stack.append(xs[i])
            while len(stack) > 1:
                right, left = stack.pop(), stack.pop()
                stack.append(tf.tanh(left @ w + right))
            return stack[-1], len(stack)

        return SimpleNamespace(fn=f)

    r = np.random.RandomState(0)
    xs = tf.constant(r.normal(size=(6, 1, 2)).astype(np.float32))
    calls = [(xs * (i + 1), tf.constant(np.where(r.rand(6) < 0.5, -1.0, 1.0).astype(np.float32))) for i in range(12)]
    stats = check(make, calls, min_graph_calls=8)
    assert stats["conversions"] == 1 and stats["breaks"] == 0, stats


@pytest.mark.parametrize("source, expected", [
    ("def f(a):\n    s = []\n    t = a[1:]\n    s.append(a)\n    return s[-1], len(t)", {"s", "t"}),
    ("def f(a):\n    s = []\n    b = s\n    return b", set()),
    ("def f(a):\n    s = []\n    g(s)\n    return 1", set()),
    ("def f(a):\n    s = []\n    self.x = s\n", set()),
    ("def f(a):\n    s = []\n    return [x for x in s]", set()),
    ("def f(a):\n    s = []\n    s = a\n    s.append(1)", set()),
    ("def f(a):\n    s = list(a)\n    s.insert(0, a[0])\n    s[0] = s[-1]", {"s"}),
    ("def f(a):\n    s = list(a)\n    for x in s:\n        s.pop()", set()),
    ("def f(a):\n    s = []\n    del s[0]", set()),
    ("def f(a):\n    global s\n    s = []", set()),
    ("def f(a):\n    s = []\n    s.whatever()", set()),
])
def test_own_lists_are_lists_the_function_made_and_never_hands_on(source, expected):
    assert own_lists(gast.parse(source).body[0]) == expected
