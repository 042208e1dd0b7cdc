"""XLA clusters in Janus graphs, against eager: assumptions that fail still abort the run
before any state changes (all-or-nothing), with XLA on and with XLA chosen by measuring.

XLA compiles only the pure part of a graph that runs before the first state write
(``janus.trace.xla``); its fused kernels round differently from eager's (``tanh`` most),
so results are compared at rtol 1e-4 with XLA on — a state write that happened on an
aborted run would be off by a whole update.  Chosen by measurement, XLA must give the
plain graph's bits: those tests compare with tolerance 0.
"""
import pytest
import numpy as np
import tensorflow as tf

import janus
from janus import config
from janus.trace import xla as xla_marks
from harness import check, check_seeded

RTOL = 1e-4


def rnd(shape, seed, scale=1.0, shift=0.0):
    return tf.constant((np.random.RandomState(seed).randn(*shape) * scale + shift).astype(np.float32))


def with_xla(jit, jit_compile):
    """The harness's Janus decorator with this ``jit_compile`` (the eager run's is left as is)."""
    return janus.function(jit_compile=jit_compile) if jit is janus.function else jit


def model_factory(jit_compile, size=48):
    """A training step whose loss scale and update direction depend on tensor conditions:
    the profile sees small positive batches only, so the graph speculates on both branches
    (two assertions)."""
    def factory(jit):
        jit = with_xla(jit, jit_compile)

        class Model:
            def __init__(self):
                self.w = tf.Variable(rnd([size, size], 0, 0.2))
                self.steps = 0
                self.history = []

            def step(self, x):
                if tf.reduce_max(tf.abs(x)) < 5.0:
                    scale = 1.0
                else:
                    scale = 0.25
                with tf.GradientTape() as tape:
                    h = x
                    for _ in range(4):
                        h = tf.tanh(tf.matmul(h, self.w))
                    loss = scale * tf.reduce_mean(h * h)
                grad = tape.gradient(loss, self.w)
                if tf.reduce_mean(x) > 0:
                    self.w.assign_sub(0.5 * grad)
                else:
                    self.w.assign_add(0.5 * grad)
                self.steps += 1
                self.history.append(loss)
                return loss

        m = Model()
        m.step = jit(m.step)
        return type("P", (), {"fn": staticmethod(m.step), "m": m,
                              "state": staticmethod(lambda: {"w": m.w, "steps": m.steps, "history": list(m.history)})})
    return factory


def batches(signs, size=48):
    """One batch per sign: 1 small positive, -1 small negative, 2 positive with a large value."""
    out = []
    for i, s in enumerate(signs):
        x = rnd([8, size], i, 0.5, 1.0 if s > 0 else -1.0)
        out.append((x * tf.constant([[1.0]] * 7 + [[12.0]]) if s == 2 else x,))
    return out


def _record(seen: list, p) -> None:
    """Janus's explanation of ``p.fn`` (the Janus run of a harness call only)."""
    if hasattr(p.fn, "__janus_function__"):
        seen.append(str(janus.explain(p.fn)))


def test_xla_on_keeps_a_failed_speculation_all_or_nothing():
    seen = []

    def last(p):
        out = p.fn(*batches([1], 48)[0])
        _record(seen, p)
        return out

    signs = [1] * 7 + [-1] + [1] * 5 + [-1, 1, -1]
    total = check(model_factory(True), batches(signs) + [last], rtol=RTOL, atol=1e-6, min_graph_calls=10)
    assert total["assertion_failures"] >= 1 and total["assumptions_failed"] >= 1, total
    assert total["xla_graphs"] >= 1, total
    assert "XLA: on (jit_compile=True):" in seen[-1] and "ops in XLA clusters" in seen[-1], seen[-1]


def test_xla_not_tried_where_it_would_round_differently(monkeypatch):
    monkeypatch.setattr(config, "XLA_MIN_RUN_MS", 0.0)
    seen = []

    def probe(p):
        out = p.fn(*batches([1], 48)[0])
        _record(seen, p)
        return out

    total = check(model_factory(None), batches([1] * 8) + [probe], rtol=0, atol=0, min_graph_calls=4)
    assert total["xla_graphs"] == 0, total
    assert "XLA: not chosen: not tried: XLA rounds Mean, Mul+Add, Tanh, TanhGrad differently" in seen[0], seen[0]


def test_xla_measured_keeps_eager_bits_with_a_failed_speculation(monkeypatch):
    """By measurement, XLA must give the plain graph's bits: with the prediction of
    rounding turned off, the tanh network is tried, its bits differ, the plain graph stays,
    and every result and state is eager's exactly."""
    monkeypatch.setattr(config, "XLA_MIN_RUN_MS", 0.0)  # try it however fast this machine is
    monkeypatch.setattr(xla_marks, "rounds_differently", lambda *_: [])
    seen = []

    def probe(p):
        out = p.fn(*batches([1], 64)[0])
        _record(seen, p)
        return out

    # 3 profiled calls, a reconversion (self.steps fed), a first untimed run, 3 timed plain
    # runs, then calls that run both graphs; the first disagreement ends the trial.
    calls = batches([1] * 12, 64) + [probe] + batches([1, -1, 1, 1, 2, 1], 64)
    total = check(model_factory(None, 64), calls, rtol=0, atol=0, min_graph_calls=10)
    assert total["assertion_failures"] >= 1 and total["assumptions_failed"] >= 1, total
    assert total["xla_graphs"] == 0, total
    text = seen[0]
    assert "XLA: not chosen: its results differed from the plain graph's in the last bits" in text, text


def exact_factory(jit_compile):
    """Ops XLA computes with eager's bits here (a matmul, which XLA hands to Eigen as eager
    does, relu, an add; not ``x * 3.0 + 1.0``, which XLA fuses into one rounding); a
    speculated branch and a variable update."""
    def factory(jit):
        jit = with_xla(jit, jit_compile)

        class Scaler:
            def __init__(self):
                self.v = tf.Variable(tf.zeros([256, 256]))
                self.w = tf.Variable(rnd([256, 256], 7))
                self.calls = 0

            def step(self, x):
                z = tf.nn.relu(tf.matmul(x, self.w)) + 1.0
                if tf.reduce_min(x) > -100.0:
                    self.v.assign(z + self.v)
                self.calls += 1
                return z

        s = Scaler()
        return type("P", (), {"fn": staticmethod(jit(s.step)),
                              "state": staticmethod(lambda: {"v": s.v, "calls": s.calls})})
    return factory


def test_xla_measured_chosen_when_bits_agree_then_speculation_fails(monkeypatch):
    monkeypatch.setattr(config, "XLA_MIN_RUN_MS", 0.0)
    monkeypatch.setattr(config, "XLA_MIN_GAIN", -1e9)  # keep XLA whenever its bits agree: the path under test
    seen = []

    def probe(p):
        out = p.fn(rnd([256, 256], 99))
        _record(seen, p)
        return out

    xs = [(rnd([256, 256], i),) for i in range(16)]
    calls = xs + [probe, (rnd([256, 256], 50, 1.0, -500.0),)] + xs[:4]
    total = check(exact_factory(None), calls, rtol=0, atol=0, min_graph_calls=12)
    assert total["assumptions_failed"] == 1, total
    text = seen[0]
    assert "XLA: chosen by measurement: " in text and "same results bit for bit" in text, text
    assert "medians over 5 calls running both" in text, text


def test_speculation_failing_while_xla_is_measured(monkeypatch):
    monkeypatch.setattr(config, "XLA_MIN_RUN_MS", 0.0)
    monkeypatch.setattr(config, "XLA_MIN_GAIN", -1e9)
    # Conversions at calls 3 and 5 (self.calls becomes fed), timed plain runs 6-8, then
    # every call runs both graphs; the speculation fails on call 10 (the plain run aborts
    # first: nothing written, eager re-runs) and the rebuilt graph's trial starts again.
    xs = [(rnd([256, 256], i),) for i in range(24)]
    xs[10] = (rnd([256, 256], 10, 1.0, -500.0),)
    total = check(exact_factory(None), xs, rtol=0, atol=0, min_graph_calls=14)
    assert total["assumptions_failed"] == 1, total


def test_xla_on_leaves_random_draws_to_eager_kernels():
    """Draws stay outside the XLA clusters: with a seed, the noise is eager's bitwise."""
    def factory(jit):
        jit = with_xla(jit, True)

        class Noisy:
            def __init__(self):
                self.v = tf.Variable(tf.zeros([4, 16]))

            def step(self, x):
                noise = tf.random.normal([4, 16])
                self.v.assign(x + noise)
                return tf.reduce_max(x * 2.0 + noise)

        n = Noisy()
        return type("P", (), {"fn": staticmethod(jit(n.step)), "state": staticmethod(lambda: {"v": n.v})})

    xs = [(rnd([4, 16], i),) for i in range(8)]
    total = check_seeded(factory, xs, seed=11, min_graph_calls=4)
    assert total["xla_graphs"] == 1, total


def test_xla_off_and_bad_settings(monkeypatch):
    seen = []

    def probe(p):
        out = p.fn(*batches([1])[0])
        _record(seen, p)
        return out

    check(model_factory(False), batches([1] * 5) + [probe], min_graph_calls=2)
    assert "XLA: off (jit_compile=False)" in seen[0], seen[0]
    with pytest.raises(TypeError, match="jit_compile must be True, False or None"):
        janus.function(lambda x: x, jit_compile="yes")
    monkeypatch.setenv("JANUS_JIT_COMPILE", "maybe")
    with pytest.raises(ValueError, match="JANUS_JIT_COMPILE must be 0, 1 or auto"):
        config.jit_compile()
    monkeypatch.setenv("JANUS_JIT_COMPILE", "1")
    assert janus.function(lambda x: x).options.xla_mode is True


def test_integer_division_is_compiled_only_by_constants_without_zeros():
    """Eager raises on an integer division by zero; XLA gives some number: only a constant
    divisor without zeros may go into a cluster."""
    graph = tf.Graph()
    with graph.as_default():
        a = tf.compat.v1.placeholder(tf.int32, [3])
        by_three = tf.math.floormod(a, tf.constant(3))
        with_zero = tf.math.floormod(a, tf.constant([1, 0, 2]))
        computed = tf.math.floordiv(a, a)
        floats = tf.compat.v1.placeholder(tf.float32, [3]) / tf.compat.v1.placeholder(tf.float32, [3])
    assert xla_marks.compilable(by_three.op) and xla_marks.compilable(floats.op)
    assert not xla_marks.compilable(with_zero.op) and not xla_marks.compilable(computed.op)
