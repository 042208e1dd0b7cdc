"""Values a graph segment hands to Python cross a break in eager form (issue #38 item 4).

A ``tf.TensorArray`` the graph built leaves it as an eager ``TensorArray`` of the settings it
was made with; composite tensors (``SparseTensor``, ``RaggedTensor``, ``Optional``,
``ExtensionType``) through their ``TypeSpec``; what has no eager form the graph can give (a
dataset built in the graph, an operation, an array read inside the graph) keeps its
producer in Python.  Never a graph tensor reaching Python.

Each test runs the same calls eagerly and through Janus with inputs changing between
calls, compares results, stdout and state after every call, and asserts from
``janus.stats`` that the function was split and where segments ran as graphs.
"""
import types

import numpy as np
import tensorflow as tf

from harness import check


def _array_view(ta):
    """What a program can see of a TensorArray: the kind of array (eager's or a graph's),
    its items, size, settings."""
    if ta is None:
        return None
    return (type(ta._implementation).__name__, ta.stack(), ta.size(), str(ta.element_shape), ta.dynamic_size)


def _vectors(*rows):
    return tf.data.Dataset.from_tensor_slices(np.arange(rows[0] * rows[1], dtype=np.float32).reshape(rows) + rows[0])


# ------------------------------------------------------------------ TensorArray over a dataset (AutoGraph's loop_basic_test)
def _nested_loops_over_a_dataset(jit):
    @jit
    def f(ds):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        i = 0
        for x in ds:
            for y in x:
                ta = ta.write(i, y * 2.0)
                i += 1
        return ta.stack()

    return types.SimpleNamespace(fn=f)


def test_a_tensor_array_written_in_loops_over_a_dataset_crosses_the_break_as_eagers():
    calls = [(_vectors(n, 3),) for n in (2, 3, 2, 4, 1, 3, 2)]
    total = check(_nested_loops_over_a_dataset, calls, graph_calls=0)
    assert total["breaks"] == 1, total  # the dataset loop: it cannot carry a Python TensorArray
    # the segment making the array runs as a graph from the fifth call on (three whole
    # calls profiled, the split found on the third, one profiled run of the segment),
    # handing Python an eager TensorArray; the segments the array enters are given up at
    # once (an eager array is changed in place by its write) and run as written
    assert total["segment_graph_calls"] >= 3, total
    assert total["conversions"] == 0 and total["failed_conversions"] == 1, total


def _nested_loops_over_ragged_rows(jit):
    @jit
    def f(rt):
        ta = tf.TensorArray(tf.int32, size=0, dynamic_size=True)
        i = 0
        for row in rt:
            for v in row:
                ta = ta.write(i, v * 2)
                i += 1
        return ta.stack()

    return types.SimpleNamespace(fn=f)


def test_a_tensor_array_written_in_loops_over_ragged_rows_crosses_the_break_as_eagers():
    calls = [(tf.ragged.constant([[1, 2], [3] * n, [4, 5, 6][:m]]),) for n, m in ((1, 3), (2, 1), (3, 2), (1, 3),
                                                                                  (2, 2), (4, 1), (0, 3))]
    total = check(_nested_loops_over_ragged_rows, calls, graph_calls=0)
    assert total["breaks"] == 1 and total["segment_graph_calls"] >= 3, total
    assert total["conversions"] == 0 and total["failed_conversions"] == 1, total


# ------------------------------------------------------------------ a TensorArray live across a break, used by Python
def _array_live_across_a_break(clear_after_read):
    def make(jit):
        class Model:
            def __init__(self):
                self.sizes = []
                self.kept = None

            @jit
            def step(self, x):
                ta = tf.TensorArray(tf.float32, size=3, clear_after_read=clear_after_read)
                for k in range(3):
                    ta = ta.write(k, x * float(k + 1))
                scale = float(np.max(x.numpy())) + 1.0  # NumPy on a tensor: a break
                first = ta.read(0)  # eager clears item 0 when clear_after_read
                self.sizes.append(int(ta.size()))
                self.kept = ta
                print("shape", ta.element_shape)
                return ta.stack() / scale, first

        m = Model()
        return types.SimpleNamespace(fn=m.step, state=lambda: {"sizes": list(m.sizes), "kept": _array_view(m.kept)})

    return make


def test_a_tensor_array_live_across_a_break_is_eagers_after_it():
    calls = [(tf.constant(np.linspace(-1, 1, n, dtype=np.float32) * (k + 1)),) for k, n in enumerate([4, 4, 3, 5, 4, 2, 6])]
    for clear in (True, False):
        total = check(_array_live_across_a_break(clear), calls, graph_calls=0)
        assert total["breaks"] >= 1, total
        # the segment before the break (the array written) is a graph from the fifth call on,
        # but for a shape that changes once more; the code after it reads the eager array in
        # Python (a segment given an eager TensorArray is given up at once)
        assert total["segment_graph_calls"] >= 2, total
        assert total["conversions"] <= 2, (
            "the segment before the break converts from the fifth call on and once more for a shape that changes "
            f"again: not one conversion per call: {total}"
        )


# ------------------------------------------------------------------ an array the graph read: its producer stays in Python
def _array_read_before_the_break(jit):
    log = []

    @jit
    def f(x):
        ta = tf.TensorArray(tf.float32, size=2)
        ta = ta.write(0, x).write(1, x * 2.0)
        head = ta.read(0) + 1.0  # eager clears item 0: the array Python gets has no item 0
        n = float(np.sum(x.numpy()))  # the break
        log.append(n)
        return head, ta.stack()

    return types.SimpleNamespace(fn=f, state=lambda: {"log": list(log)})


def test_a_tensor_array_read_in_the_graph_keeps_its_segment_in_python():
    calls = [(tf.constant(np.arange(n, dtype=np.float32) + k),) for k, n in enumerate([3, 3, 4, 2, 3, 5])]
    total = check(_array_read_before_the_break, calls, graph_calls=0)
    assert total["breaks"] == 1, total
    # the segment that reads the array cannot hand it over (what eager's read cleared is
    # unknown): its conversion is refused once and it runs as written
    assert total["segment_graph_calls"] == 0 and total["failed_conversions"] == 1, total


# ------------------------------------------------------------------ other TypeSpec kinds across a break
class Masked(tf.experimental.ExtensionType):
    values: tf.Tensor
    mask: tf.Tensor


def _composites_across_a_break(jit):
    seen = []

    @jit
    def f(x):
        sp = tf.sparse.from_dense(tf.reshape(tf.nn.relu(x), [1, -1]))
        rt = tf.RaggedTensor.from_row_lengths(x, [1, tf.size(x) - 1])
        opt = tf.experimental.Optional.from_value(x * 3.0)
        masked = Masked(x, x > 0.0)
        it = iter(tf.data.Dataset.from_tensor_slices(x))
        skipped = next(it)
        total = float(np.sum(x.numpy()))  # the break
        seen.append((type(sp).__name__, tf.sparse.to_dense(sp), rt.row_lengths(), type(opt).__name__,
                     opt.has_value(), opt.get_value(), type(masked).__name__, masked.mask, next(it), skipped))
        return rt * total, tf.where(masked.mask, masked.values, 0.0)

    return types.SimpleNamespace(fn=f, state=lambda: {"seen": list(seen)})


def test_composite_tensors_optionals_and_iterators_cross_a_break_through_their_type_specs():
    calls = [(tf.constant(np.linspace(-1, 2, n, dtype=np.float32) * (k + 1)),) for k, n in enumerate([3, 4, 3, 5, 2, 4, 3])]
    total = check(_composites_across_a_break, calls, graph_calls=0)
    assert total["breaks"] == 1 and total["segment_graph_calls"] >= 4, total


def _dataset_and_operation_across_a_break(jit):
    log = []

    def double(e):
        return e * 2.0

    @jit
    def f(x):
        ds = tf.data.Dataset.from_tensor_slices(x).map(double)
        done = tf.group(x + 1.0)  # eager's is None; the graph's an operation
        n = float(np.sum(x.numpy()))  # the break
        print(ds, done)
        log.append(n)
        return tf.stack(list(ds)) * n

    return types.SimpleNamespace(fn=f, state=lambda: {"log": list(log)})


def test_a_dataset_or_an_operation_built_in_a_segment_keeps_its_producer_in_python():
    calls = [(tf.constant(np.arange(n, dtype=np.float32) * (k + 1)),) for k, n in enumerate([3, 4, 3, 5, 2, 4])]
    total = check(_dataset_and_operation_across_a_break, calls, graph_calls=0)
    assert total["breaks"] >= 1, total
    # the segment building them is refused once (a permanent refusal: the same code would
    # build the same kinds at every call) and runs as written: no graph, one failed conversion
    assert total["segment_graph_calls"] == 0 and total["failed_conversions"] == 1, total


# ------------------------------------------------------------------ an eager TensorArray read by a trace
def _eager_array_in_state(jit):
    class Buffer:
        def __init__(self):
            self.ta = tf.TensorArray(tf.float32, size=2, clear_after_read=False)

        @jit
        def put(self, x):
            t = self.ta.write(0, x * 2.0)  # eager writes into self.ta itself
            return t.read(0) + 1.0

    b = Buffer()
    return types.SimpleNamespace(fn=b.put, state=lambda: {"ta": _array_view(b.ta)})


def test_an_eager_tensor_array_read_by_a_trace_is_never_written_with_graph_tensors():
    calls = [(tf.constant(float(k)),) for k in range(6)]
    total = check(_eager_array_in_state, calls, eager_only=True)
    assert total["conversions"] == 0 and total["failed_conversions"] == 1, total


# ------------------------------------------------------------------ a TensorArray a whole graph stores in Python state
def _array_kept_in_state(jit):
    kept = []

    @jit
    def f(x):
        ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        for i in tf.range(tf.shape(x)[0]):
            ta = ta.write(i, x[i] * 2.0)
        kept.append(ta)  # a deferred append: the array leaves the graph as eager's
        return ta.stack()

    return types.SimpleNamespace(fn=f, state=lambda: {"kept": [_array_view(t) for t in kept]})


def test_a_tensor_array_a_graph_stores_in_python_state_is_eagers():
    calls = [(tf.constant(np.arange(n, dtype=np.float32) - k),) for k, n in enumerate([3, 4, 2, 5, 3, 6, 4])]
    total = check(_array_kept_in_state, calls, min_graph_calls=3)
    # no break: one graph per input length the loop's trip count is specialized on until
    # the lengths vary enough to be relaxed (three profiled calls, then a few conversions)
    assert total["breaks"] == 0 and total["conversions"] <= 4, total
