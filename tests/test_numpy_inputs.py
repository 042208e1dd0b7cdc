"""NumPy arrays passed as arguments, whose values change from call to call: fed to the
graph like tensors (guarded on dtype and shape) while only TensorFlow reads them, and
Python values guarded by value where NumPy or Python reads them (``janus.trace.arrays``).
Every program is compared with eager after every call."""
from types import SimpleNamespace

import numpy as np
import pytest
import tensorflow as tf

import janus
from harness import case, check

RNG = np.random.RandomState(0)
X = RNG.uniform(-1, 1, size=(640, 4)).astype(np.float32)
Y = RNG.uniform(-1, 1, size=(640, 2)).astype(np.float32)


def regression(jit):
    """One SGD step of a linear model on a minibatch given as NumPy arrays."""
    w = tf.Variable(tf.reshape(tf.range(8, dtype=tf.float32), [4, 2]) / 10.0)
    b = tf.Variable(tf.zeros([2]))
    opt = tf.keras.optimizers.SGD(0.1)

    @jit
    def step(x, y):
        with tf.GradientTape() as tape:
            pred = x @ w + b
            loss = tf.reduce_mean(tf.square(pred - y))
        grads = tape.gradient(loss, [w, b])
        opt.apply_gradients(zip(grads, [w, b]))
        return loss, x.shape[0]

    return SimpleNamespace(fn=step, state=lambda: {"w": w, "b": b})


def test_minibatch_loop_runs_one_graph():
    calls = [(X[i:i + 16], Y[i:i + 16]) for i in range(0, 640, 16)]
    stats = check(regression, calls, min_graph_calls=36)
    assert stats["conversions"] <= 2, (
        "every batch has 16 rows and is fed: one conversion after the 3 profiled calls, at most one more, not one per "
        f"batch: {stats}"
    )


def test_changing_batch_size_relaxes_the_shape():
    sizes = [16, 16, 16, 12, 16, 7, 16, 3, 16, 16, 9, 16, 1, 16, 16, 5]
    starts = np.cumsum([0] + sizes[:-1])
    calls = [(X[s:s + n], Y[s:s + n]) for s, n in zip(starts, sizes)]
    stats = check(regression, calls, min_graph_calls=11)
    assert stats["conversions"] <= 2, (
        "the batch size changes: one conversion after the 3 profiled calls, one more relaxes the shape, not one per "
        f"size: {stats}"
    )


def test_len_of_an_array_whose_batch_size_changes_keeps_it_fed():
    # len() needs the size as a Python int: a graph per size, the arrays still fed
    def make(jit):
        w = tf.Variable(tf.ones([4, 2]))

        @jit
        def mean_projection(x):
            return tf.reduce_sum(tf.matmul(x, w), axis=0) / len(x)

        return SimpleNamespace(fn=mean_projection)

    sizes = [16, 16, 16, 16, 8, 16, 8, 8, 16, 8, 16, 16]
    calls = [(X[i:i + n],) for i, n in enumerate(sizes)]
    stats = check(make, calls, min_graph_calls=7)
    assert stats["conversions"] <= 2, (
        f"len() pins the batch size: one graph per size (16 and 8), the arrays still fed, not one per call: {stats}"
    )


def test_float64_arrays_stay_float64():
    def make(jit):
        w = tf.Variable(np.linspace(-1, 1, 8).reshape(4, 2))  # float64

        @jit
        def affine(x, shift):
            return tf.matmul(x, w) + shift, tf.reduce_sum(x * w[:, 0])

        return SimpleNamespace(fn=affine)

    r = np.random.RandomState(1)
    calls = [(r.uniform(size=(3, 4)), r.uniform(size=(2,))) for _ in range(12)]
    stats = check(make, calls, min_graph_calls=8, rtol=0, atol=0)
    assert stats["conversions"] <= 1, (
        "the arrays are fed like tensors (same dtype and shape every call): one conversion after the 3 profiled calls,"
        f" none per new value: {stats}"
    )


@pytest.mark.parametrize("dtype, fed", [(None, True), (tf.float32, True), (tf.float64, False)])
def test_tf_constant_of_a_fed_array_is_the_fed_tensor_unless_it_casts(dtype, fed):
    def make(jit):
        w = tf.Variable(tf.ones([4, 2], tf.float64 if dtype == tf.float64 else tf.float32))

        @jit
        def project(x):
            return tf.reduce_sum(tf.matmul(tf.constant(x, dtype), w))  # a cast reads x as NumPy

        return SimpleNamespace(fn=project)

    r = np.random.RandomState(3)
    calls = [(r.uniform(size=(3, 4)).astype(np.float32),) for _ in range(8)]
    stats = check(make, calls, min_graph_calls=0 if not fed else 5, rtol=0, atol=0)
    prog = make(janus.function)
    for x, in calls[:4]:
        prog.fn(x)
    text = str(janus.explain(prog.fn))
    assert ("argument x is a float32 NumPy array of shape (3, 4) (fed to the graph)" in text) == fed, text
    if fed:
        assert stats["conversions"] == 1, stats


def test_float64_array_meeting_a_float32_variable_raises_as_eager_does():
    def make(jit):
        w = tf.Variable(tf.ones([4, 2]))

        @jit
        def project(x):
            return tf.matmul(x, w)

        return SimpleNamespace(fn=project)

    r = np.random.RandomState(2)
    calls = [(r.uniform(size=(3, 4)).astype(np.float64 if i % 4 == 3 else np.float32),) for i in range(16)]
    check(make, calls, min_graph_calls=6)


def test_operator_with_a_variable_converts_the_array_as_numpy_would():
    # x @ w: NumPy defers to the variable, whose operator converts a float64 array to float32
    # (a float64 tensor would raise): that array stays a Python value, and eager's numbers hold.
    def make(jit):
        w = tf.Variable(tf.ones([4, 2]))

        @jit
        def project(x):
            return x @ w

        return SimpleNamespace(fn=project)

    calls = [(np.full((2, 4), i / 4.0),) for i in range(6)] * 2
    check(make, calls, min_graph_calls=3)


def test_int_arrays_index_a_table():
    def make(jit):
        table = tf.Variable(tf.reshape(tf.range(40, dtype=tf.float32), [10, 4]))

        @jit
        def lookup(ids, weights):
            rows = tf.gather(table, ids)
            return tf.reduce_sum(rows * tf.expand_dims(weights, 1), axis=0), tf.reduce_max(ids)

        return SimpleNamespace(fn=lookup)

    r = np.random.RandomState(3)
    calls = [(r.randint(0, 10, size=5), r.uniform(size=5).astype(np.float32)) for _ in range(12)]
    stats = check(make, calls, min_graph_calls=8)
    assert stats["conversions"] <= 1, (
        "the arrays are fed like tensors (same dtype and shape every call): one conversion after the 3 profiled calls,"
        f" none per new value: {stats}"
    )


def test_arrays_inside_a_tuple_and_a_dict():
    def make(jit):
        w = tf.Variable(tf.ones([4, 1]) * 0.5)

        @jit
        def loss(batch, extra):
            x, y = batch
            err = tf.matmul(x, w) - y
            return tf.reduce_mean(err * err) * extra["scale"], tf.reduce_sum(tf.cast(extra["mask"], tf.float32))

        return SimpleNamespace(fn=loss)

    r = np.random.RandomState(4)
    calls = [((r.uniform(size=(8, 4)).astype(np.float32), r.uniform(size=(8, 1)).astype(np.float32)),
              {"scale": np.array(r.uniform(), np.float32), "mask": r.uniform(size=8) > 0.5}) for _ in range(12)]
    stats = check(make, calls, min_graph_calls=8)
    assert stats["conversions"] <= 1, (
        "the arrays are fed like tensors (same dtype and shape every call): one conversion after the 3 profiled calls,"
        f" none per new value: {stats}"
    )


def test_zero_dimensional_array():
    @case
    def scaled(t, s):
        return tf.multiply(t, s), s.shape, s.ndim

    calls = [(tf.ones([3]) * i, np.array(0.5 * i, np.float32)) for i in range(10)]
    stats = check(scaled, calls, min_graph_calls=6)
    assert stats["conversions"] <= 1, (
        "the arrays are fed like tensors (same dtype and shape every call): one conversion after the 3 profiled calls,"
        f" none per new value: {stats}"
    )


def test_bool_array_mask():
    @case
    def masked_mean(values, mask):
        kept = tf.boolean_mask(values, mask)
        return tf.reduce_mean(kept), tf.shape(kept)[0], tf.where(mask, values, tf.zeros_like(values))

    r = np.random.RandomState(5)
    calls = [(tf.constant(r.uniform(size=6).astype(np.float32)), np.arange(6) % (i % 3 + 2) == 0) for i in range(12)]
    stats = check(masked_mean, calls, min_graph_calls=8)
    assert stats["conversions"] <= 1, (
        "the arrays are fed like tensors (same dtype and shape every call): one conversion after the 3 profiled calls,"
        f" none per new value: {stats}"
    )


def test_the_same_array_passed_twice_is_guarded():
    @case
    def pair(a, b):
        same = 1.0 if a is b else 0.0
        return tf.reduce_sum(a) - tf.reduce_sum(b) + same

    r = np.random.RandomState(6)
    arrays = [r.uniform(size=3) for _ in range(6)]
    calls = [(arrays[i], arrays[i] if i % 2 else arrays[i - 1]) for i in range(1, 6)] * 3
    check(pair, calls, min_graph_calls=6)


def by_method(x, t):
    return t * float(x.mean())


def by_numpy_function(x, t):
    return t + np.sum(x)


def in_a_python_branch(x, t):
    return t * 2.0 if x[0] > 0 else t


def by_iteration(x, t):
    return t + sum([float(v) for v in x])


def by_arithmetic(x, t):
    return x * 2, t  # eager returns a NumPy array


def with_a_number(x, t):
    return tf.reduce_sum(t) + tf.reduce_sum(x + 1)


def by_len(x, t):
    return t * len(x)


def by_slicing(x, t):
    return t + tf.reduce_sum(x[1:])


def by_printing(x, t):
    print("x:", x)
    return t + 1.0


@pytest.mark.parametrize("reader", [by_method, by_numpy_function, in_a_python_branch, by_iteration, by_arithmetic,
                                    with_a_number, by_len, by_slicing, by_printing])
def test_an_array_read_with_numpy_stays_a_python_value(reader):
    @case
    def f(x, t):
        return reader(x, t)

    pool = [np.array([1.5, -2.0, 0.25], np.float32), np.array([-1.0, 3.0, 2.0], np.float32)]
    calls = [(pool[i % 2], tf.constant(float(i))) for i in range(12)]
    stats = check(f, calls, min_graph_calls=4)
    assert stats["conversions"] <= 3, (
        "read with NumPy, x is guarded by value: one graph for each of the two alternating arrays, at most one more "
        f"conversion, not one per call: {stats}"
    )


def test_numpy_reads_are_learned_once_per_argument():
    @case
    def standardize(x, stats):
        mean, std = stats.mean(), stats.std()  # NumPy: stats stays a value
        return (tf.convert_to_tensor(x) - mean) / std

    stats = np.array([1.0, 2.0, 4.0])
    r = np.random.RandomState(7)
    calls = [(r.uniform(size=(4, 3)), stats) for _ in range(12)]
    total = check(standardize, calls, min_graph_calls=8)
    assert total["conversions"] <= 1, (
        "stats is read with NumPy and the same every call: guarded by value, one conversion after the 3 profiled "
        f"calls, none per new x: {total}"
    )


def test_an_array_the_function_writes_into_is_changed_as_eager_changes_it():
    def make(jit):
        @jit
        def clip_first(x, on):
            if on:
                x[0] = 0.0
                x *= 2.0
            return tf.reduce_sum(x)

        arrays = [np.arange(4, dtype=np.float32) + i for i in range(12)]
        return SimpleNamespace(fn=clip_first, arrays=arrays, state=lambda: {"arrays": [a.copy() for a in arrays]})

    calls = [lambda p, i=i: p.fn(p.arrays[i], i in (6, 9)) for i in range(12)]
    check(make, calls, min_graph_calls=6)


def test_a_write_into_an_array_from_state_runs_eagerly():
    def make(jit):
        class Buffer:
            def __init__(self):
                self.data = np.zeros(3)

            @jit
            def put(self, t):
                self.data[0] += 1.0
                return t + self.data[0]

        buf = Buffer()
        return SimpleNamespace(fn=buf.put, state=lambda: {"data": buf.data.copy()})

    check(make, [(tf.constant(float(i)),) for i in range(8)], eager_only=True)


def test_explain_names_a_fed_array():
    janus.reset()
    step = regression(janus.function).fn
    for i in range(0, 96, 16):
        step(X[i:i + 16], Y[i:i + 16])
    text = str(janus.explain(step))
    assert "argument x is a float32 NumPy array of shape (16, 4) (fed to the graph)" in text, text
    assert "inputs: x: float32[16, 4], y: float32[16, 2]" in text, text


def test_array_guard_pins_the_dtype_the_rank_and_the_sizes_that_did_not_vary():
    from janus.trace.guards import GuardBuilder, compile_guard
    from janus.trace.sources import Arg

    b = GuardBuilder()
    g = b.array(Arg(0, "x"), np.zeros((1, 4), np.float32), (None, 4))
    assert g.description == "argument x is a float32 NumPy array of shape (None, 4) (fed to the graph)"
    holds, _ = compile_guard([g], 1, (), b.namespace)
    assert holds((np.zeros((3, 4), np.float32),), {}) and holds((np.zeros((17, 4), np.float32),), {})
    for other in (np.zeros((3, 4)), np.zeros((3, 5), np.float32), np.zeros((3, 4, 1), np.float32),
                  np.zeros((3, 4), ">f4"), tf.zeros((3, 4)), [[0.0] * 4] * 3):
        assert not holds((other,), {}), other
    scalar = b.array(Arg(0, "s"), np.float32(0.5), ())  # a NumPy scalar: its type
    assert scalar.description == "argument s is a NumPy float32 (fed to the graph)"
    holds, _ = compile_guard([scalar], 1, (), b.namespace)
    assert holds((np.float32(-3.0),), {})
    for other in (np.float64(0.5), np.array(0.5, np.float32), 0.5, tf.constant(0.5)):
        assert not holds((other,), {}), other


# ------------------------------------------------------------------ NumPy arrays of Python state
def _normalizer(jit):
    """A step reading running statistics kept as NumPy arrays, updated by NumPy between calls
    (as an environment's observation or a running mean is)."""
    class Normalizer:
        def __init__(self):
            self.mean = np.zeros(4, np.float32)
            self.var = np.ones(4, np.float32)
            self.w = tf.Variable(tf.reshape(tf.range(8, dtype=tf.float32), [4, 2]) / 10.0)

        @jit
        def step(self, x):
            z = (x - self.mean) / (tf.sqrt(self.var) + 1e-3)  # only TensorFlow reads the arrays
            y = z @ self.w
            self.w.assign_sub(0.01 * tf.reduce_mean(y) * tf.ones_like(self.w))
            return y

        def observe(self, x):
            self.mean = 0.9 * self.mean + 0.1 * x.mean(axis=0)
            self.var = 0.9 * self.var + 0.1 * x.var(axis=0)

    n = Normalizer()

    def call(i):
        x = X[i * 8:(i + 1) * 8]
        n.observe(x)
        return n.step(tf.constant(x))

    return SimpleNamespace(fn=call, janus_fns=[n.step], state=lambda: {"w": n.w, "mean": n.mean.copy(),
                                                                          "var": n.var.copy()})


def test_arrays_of_state_whose_values_change_are_fed():
    stats = check(_normalizer, [(i,) for i in range(16)], min_graph_calls=12)
    assert stats["conversions"] == 1, stats
    prog = _normalizer(janus.function)
    for i in range(6):
        prog.fn(i)
    text = str(janus.explain(prog.janus_fns[0]))
    assert "self.mean is a float32 NumPy array of shape (4,) (fed to the graph)" in text, text


def test_an_array_of_state_read_as_numpy_stays_a_value():
    def make(jit):
        class Model:
            def __init__(self):
                self.table = np.arange(6, dtype=np.float32)
                self.scale = np.float32(2.0)

            @jit
            def step(self, t):
                total = float(self.table.sum())  # NumPy reads the array: a value, guarded by value
                return t * total + tf.constant(self.table)[:2]

        m = Model()

        def call(i):
            if i == 5:
                m.table = m.table + 1.0  # a new value: the graph guarded on the old one misses
            return m.step(tf.constant(float(i)))

        return SimpleNamespace(fn=call, janus_fns=[m.step], state=lambda: {"table": m.table.copy()})

    stats = check(make, [(i,) for i in range(10)], min_graph_calls=5)
    assert stats["conversions"] == 2, stats
