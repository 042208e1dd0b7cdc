"""XLA clusters in Janus graphs, against eager: assumptions that fail still abort the run
before any state changes (all-or-nothing), with XLA on and with XLA chosen by measuring.

XLA compiles only the pure part of a graph that runs before the first state write
(``janus.trace.xla``); its fused kernels round differently from eager's (``tanh`` most),
so results are compared at rtol 1e-4 here — a state write that happened on an aborted
run would be off by a whole update.
"""
import pytest
import numpy as np
import tensorflow as tf

import janus
from janus import config
from harness import check, check_seeded

RTOL = 1e-4


def rnd(shape, seed, scale=1.0, shift=0.0):
    return tf.constant((np.random.RandomState(seed).randn(*shape) * scale + shift).astype(np.float32))


def model_factory(jit_compile, size=48):
    """A training step whose loss scale and update direction depend on tensor conditions:
    the profile sees small positive batches only, so the graph speculates on both branches
    (two assertions)."""
    def factory(jit):
        if jit is janus.function:
            jit = janus.function(jit_compile=jit_compile)

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


@pytest.fixture
def no_global_seed():
    tf.random.set_seed(None)
    yield


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


def test_xla_measured_choice_with_a_failed_speculation(monkeypatch, no_global_seed):
    monkeypatch.setattr(config, "XLA_MIN_RUN_MS", 0.0)  # measure however fast this machine is
    seen = []

    def probe(p):
        out = p.fn(*batches([1], 64)[0])
        _record(seen, p)
        return out

    # 3 profiled calls, a reconversion (self.steps fed), a first untimed run, 3 timed plain
    # runs, the XLA variant's untimed run, then 5 + 5 alternating: decided by call 20.
    # Then the speculation fails.
    signs = [1] * 22
    calls = batches(signs, 64) + [probe] + batches([1, -1, 1, 1, -1], 64)
    total = check(model_factory(None, 64), calls, rtol=RTOL, atol=1e-6, min_graph_calls=15)
    assert total["assertion_failures"] >= 1 and total["assumptions_failed"] >= 1, total
    text = seen[0]
    assert "XLA: chosen by measurement:" in text or "XLA: not chosen: XLA was not at least 5% faster:" in text, text
    assert "ms with XLA" in text and "ms without (medians of 5 and 5 alternating runs)" in text, text


def test_speculation_failing_while_xla_is_measured(monkeypatch, no_global_seed):
    monkeypatch.setattr(config, "XLA_MIN_RUN_MS", 0.0)
    reasons = []

    def last(p):
        out = p.fn(*batches([1])[0])
        if hasattr(p.fn, "__janus_function__"):
            reasons.append(janus.explain(p.fn).reasons)
        return out

    # Conversions at calls 3 and 5 (self.steps becomes fed); timed plain runs 6-8; the XLA
    # variant's untimed first run at call 9 meets a negative batch.  Converted again at
    # call 10 (one speculation left), timed 11-13, variant warm at 14, then XLA, plain, XLA:
    # the timed XLA run at call 17 meets a large value.
    signs = [1] * 9 + [-1] + [1] * 7 + [2] + [1] * 6
    total = check(model_factory(None), batches(signs) + [last], rtol=RTOL, atol=1e-6, min_graph_calls=12)
    assert total["assumptions_failed"] == 2, total
    aborted = "a run of an XLA variant under trial aborted: the trial ends"
    assert reasons[0].get(aborted) == 2, reasons[0]


def test_xla_auto_is_not_tried_when_a_seed_asks_for_eager_numbers(monkeypatch):
    monkeypatch.setattr(config, "XLA_MIN_RUN_MS", 0.0)
    seen = []

    def probe(p):
        out = p.fn(*batches([1])[0])
        _record(seen, p)
        return out

    tf.random.set_seed(7)
    try:
        check(model_factory(None), batches([1] * 6) + [probe], rtol=0, atol=0, min_graph_calls=3)
    finally:
        tf.random.set_seed(None)
    assert "XLA: not chosen: a global seed is set" in seen[0], seen[0]


def test_xla_on_leaves_random_draws_to_eager_kernels():
    """Draws stay outside the XLA clusters: with a seed, the noise is eager's bitwise."""
    def factory(jit):
        if jit is janus.function:
            jit = janus.function(jit_compile=True)

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
    assert janus.function(lambda x: x).xla_mode is True
