"""NumPy scalars (``np.float32(0.5)``, what ``np.percentile`` and ``np.mean`` return) passed
as arguments, held in Python state or handed from Python to a graph segment: fed to the graph
like 0-d arrays, guarded on their type, while only TensorFlow reads them; guarded by value
(type and bytes) where NumPy or Python reads them or eager would cast them
(``janus.trace.arrays``).  Every program is compared with eager after every call."""
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

import janus
from janus.introspect import janus_function_of
from harness import case, check

SCALES = [np.float32(v) for v in np.linspace(0.5, 2.0, 14)]


def _scaled_step(jit):
    """An SGD step whose learning rate is a NumPy scalar that changes at every call."""
    w = tf.Variable([[1.0, -2.0], [0.5, 3.0]])
    seen = []

    @jit
    def step(x, lr):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(x @ w))
        (g,) = tape.gradient(loss, [w])
        w.assign_sub(lr * g)
        seen.append(lr)
        return loss / lr, lr

    return SimpleNamespace(fn=step, state=lambda: {"w": w, "seen": list(seen)})


def test_a_numpy_scalar_argument_is_fed():
    x = tf.constant([[0.1, 0.2], [0.3, -0.1]])
    stats = check(_scaled_step, [(x, s) for s in SCALES], min_graph_calls=10)
    assert stats["conversions"] == 1, stats
    prog = _scaled_step(janus.function)
    for s in SCALES[:6]:
        prog.fn(x, s)
    assert "lr is a NumPy float32 (fed to the graph)" in str(janus.explain(prog.fn))
    result = prog.fn(x, np.float32(0.25))[1]
    assert type(result) is np.float32 and result == np.float32(0.25)


def test_numpy_scalars_of_every_fed_kind():
    @case
    def f(t, i, b, h):
        return tf.where(b, t * h, t) + tf.cast(i, tf.float16), i

    t = tf.constant([1.0, 2.0], tf.float16)
    calls = [(t, np.int64(k), np.bool_(k % 2), np.float16(k / 4)) for k in range(12)]
    stats = check(f, calls, min_graph_calls=8, rtol=0, atol=0)
    assert stats["conversions"] == 1, stats


def test_a_float64_scalar_meeting_float32_is_a_value_as_eager_casts_it():
    # eager casts np.float64 to the tensor's float32; a fed float64 input would not convert
    @case
    def f(t, s):
        return t * s

    t = tf.constant([1.0, 3.0])
    calls = [(t, np.float64(v)) for v in (0.1, 0.1, 0.1, 1e300, 1e300, 0.1, 0.1)]
    check(f, calls, min_graph_calls=3, rtol=0, atol=0)


def test_a_numpy_scalar_read_by_python_is_guarded_by_value():
    @case
    def f(t, s):
        if s > 1.0:  # Python reads the value: guarded by value
            return t * 2.0, float(s)
        return t - 1.0, s * 3

    t = tf.constant([1.0, 2.0])
    calls = [(t, np.float32(v)) for v in (0.5, 0.5, 0.5, 2.0, 2.0, 0.5, 2.0, 2.0, 2.0, 0.5, 0.5)]
    stats = check(f, calls, min_graph_calls=4, rtol=0, atol=0)
    assert 1 <= stats["conversions"] <= 2, (
        "s is read by Python, so guarded by value: the conversion after the 3 profiled calls (s == 0.5), at most one "
        f"more for s == 2.0: {stats}"
    )
    prog = f(janus.function)
    for c in calls:
        prog.fn(*c)
    assert "argument s == " in str(janus.explain(prog.fn))


def test_nan_and_negative_zero_values_are_told_apart():
    @case
    def f(t, s):
        return t + float(s), str(s)

    t = tf.constant(1.0)
    values = [np.nan, np.nan, np.nan, -0.0, -0.0, 0.0, 0.0, np.nan, -0.0]
    stats = check(f, [(t, np.float64(v)) for v in values], min_graph_calls=3, rtol=0, atol=0)
    assert 2 <= stats["conversions"] <= 3, (
        "nan, -0.0 and 0.0 are told apart: the conversion after the 3 profiled nan calls, at least one more for -0.0, "
        f"at most one per value: {stats}"
    )


def test_a_numpy_scalar_isinstance_of_float_as_in_eager():
    @case
    def f(t, s):
        kinds = (isinstance(s, float), isinstance(s, np.floating), isinstance(s, np.float64))
        return tf.cast(t, tf.float64) * s, kinds

    t = tf.constant([1.0, 2.0])
    stats = check(f, [(t, np.float64(v)) for v in np.linspace(0, 1, 8)], min_graph_calls=5, rtol=0, atol=0)
    assert stats["conversions"] == 1, stats


def test_a_numpy_scalar_of_state_is_fed():
    def make(jit):
        class Schedule:
            def __init__(self):
                self.lr = np.float32(0.1)
                self.history = []

            @jit
            def step(self, t):
                y = t * self.lr
                self.history.append(self.lr)
                return y

        s = Schedule()

        def call(i):
            s.lr = np.float32(0.1 * 0.9 ** i)  # changed outside, at every call
            return s.step(tf.constant([1.0, float(i)]))

        return SimpleNamespace(fn=call, janus_fns=[s.step], state=lambda: {"lr": s.lr, "history": list(s.history)})

    stats = check(make, [(i,) for i in range(12)], min_graph_calls=8, rtol=0, atol=0)
    assert stats["conversions"] == 1, stats


def test_a_numpy_statistic_between_two_segments():
    # np.percentile of a gradient (a graph break) gives a new np.float32 at every call; the
    # segment after the break takes it as a fed input and converts once
    def make(jit):
        w = tf.Variable(tf.reshape(tf.range(12, dtype=tf.float32), [4, 3]) / 10.0)
        history = []

        @jit
        def step(x):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.square(x @ w))
            (g,) = tape.gradient(loss, [w])
            scale = np.percentile(np.abs(g.numpy()), 90) + np.float32(1e-3)
            history.append(scale)
            w.assign_sub(0.01 * g / scale)
            return loss * scale

        return SimpleNamespace(fn=step, state=lambda: {"w": w, "history": list(history)})

    r = np.random.RandomState(3)
    calls = [(tf.constant(r.normal(size=(5, 4)).astype(np.float32)),) for _ in range(16)]
    stats = check(make, calls, min_graph_calls=0, rtol=0, atol=0)
    assert stats["breaks"] == 1 and stats["segment_graph_calls"] >= 10, stats
    prog = make(janus.function)
    for c in calls:
        prog.fn(*c)
    after = janus_function_of(prog.fn).split.segments[1]
    assert janus.stats(after)["conversions"] == 1, janus.explain(prog.fn)


def test_numpy_arithmetic_with_a_fed_number_never_leaves_janus_objects():
    """``W * rate`` (a NumPy array times a Python float the graph carries as an input): NumPy
    used to build an object array of per-item graph ops (Reptile's set_weights segment: 18,000
    ops, 19 s a trace) and the graph returned that array of Janus's own objects to the user.
    Now the number refuses NumPy's arithmetic: the trace is specialized on the number's value,
    and every call returns eager's float32 array."""
    weights = np.linspace(-1.0, 1.0, 1600, dtype=np.float32).reshape(40, 40)

    @case
    def step(x, rate):
        return x * 2.0, weights * rate

    calls = [(tf.constant([1.0, float(i)]), 0.1 * (i + 1)) for i in range(8)]
    check(step, calls, min_graph_calls=1, rtol=0, atol=0)
