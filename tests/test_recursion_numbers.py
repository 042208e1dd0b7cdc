"""Recursion and loops driven by Python numbers; bounded inlining and trace size
(issue #38, item 5; ``janus.trace.bounds``).

A recursive helper whose depth is a Python int (``unroll(x, k)``, ``k - 1`` each level)
ends where eager's does while the trace sees ``k`` as a number.  Once ``k`` changes, the
policy feeds it as a tensor, and the base case ``k == 0`` became a tensor conditional
whose recursive side inlined the helper again without end (23 GB in seconds).  Now a
number that decides where a recursion ends stays a value: one graph per depth.  Inlining
is bounded in depth (``janus.config.LIMITS.max_inline_depth``) and a trace in ops
(``JANUS_MAX_TRACE_OPS``); past either the call runs eagerly and ``janus.explain`` says
why.  Each test compares eager and Janus after every call (``tests/harness.py``); where a
regression would trace without end, the op bound is set low so it fails fast.
"""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import tensorflow as tf

import janus
from janus import config
from harness import check


def _x(i=0):
    return tf.constant(np.random.RandomState(i).rand(3).astype(np.float32))


@pytest.fixture
def small_traces(monkeypatch):
    """A trace that would not end fails fast (a few thousand ops) instead of filling memory:
    every trace these programs need has a few hundred ops."""
    monkeypatch.setenv("JANUS_MAX_TRACE_OPS", "5000")


def _kept(factory):
    """``factory``, and the programs it made (the last one is Janus's, for ``janus.explain``)."""
    made = []

    def make(jit):
        made.append(factory(jit))
        return made[-1]

    return make, made


def _no_trace_failed(prog) -> str:
    """``janus.explain`` of ``prog.fn``, asserting that no trace of it failed: the policy kept
    the recursion's number a value from the start, never fed it to a trace that could not end."""
    text = str(janus.explain(prog.fn)).split("generated code")[0]
    assert "trace failed" not in text and "specialized by value" in text, text
    return text


def _unroll(jit):
    w = tf.Variable(0.5)

    def unroll(x, k):
        if k == 0:
            return x
        return unroll(x * w + 0.1, k - 1)

    @jit
    def step(x, k):
        return unroll(x, k)

    return SimpleNamespace(fn=step, unroll=unroll)


DEPTHS = [3, 3, 3, 4, 4, 5, 5, 2, 2, 3, 4, 5, 2, 3, 4, 5, 3, 2]


def test_recursion_depth_that_changes_is_one_graph_per_depth(small_traces):
    factory, made = _kept(_unroll)
    stats = check(factory, [(_x(i), k) for i, k in enumerate(DEPTHS)], min_graph_calls=10)
    # One conversion per depth (2, 3, 4, 5): a fed k would have failed its trace (the op
    # bound) and no graph would have run for it.
    assert stats["conversions"] <= 4, stats
    assert stats["failed_conversions"] == 0, stats
    assert stats["cache_entries"] == 4, stats
    _no_trace_failed(made[-1])


def test_depth_fed_after_a_miss_is_specialized_again_and_explained(small_traces):
    # k takes three values while profiling: the first conversion would feed it
    janus.reset()
    p = _unroll(janus.function)
    calls = [3, 4, 5, 5, 5, 4, 4, 3, 3]
    for i, k in enumerate(calls):
        got = p.fn(_x(i), k)
        np.testing.assert_allclose(got.numpy(), p.unroll(_x(i), k).numpy(), rtol=1e-6)
    s = janus.stats(p.fn)
    assert s["graph_calls"] >= 4 and s["conversions"] <= 3 and s["failed_conversions"] == 0, s
    assert "unroll's recursion ends" in _no_trace_failed(p)


def _loop(jit):
    w = tf.Variable(0.5)

    @jit
    def step(x, k):
        for _ in range(k):
            x = x * w + 0.1
        return x

    return SimpleNamespace(fn=step)


def test_loop_over_a_changing_count_is_one_graph(small_traces):
    # A loop's count that decides no recursion stays fed: the loop is a tf.while_loop and
    # one graph serves every count (the graph specialized on the profiled count is the other).
    stats = check(_loop, [(_x(i), k) for i, k in enumerate(DEPTHS)], min_graph_calls=12)
    assert stats["conversions"] <= 2, (
        "the loop's count stays fed, so one graph serves every count; the graph specialized on the profiled count is "
        f"the other: {stats}"
    )


def _expand(jit):
    w = tf.Variable(0.5)

    def expand(x, k):
        for _ in range(k):  # the trip count decides where the recursion ends: range(0) runs none
            x = expand(x * w, k - 1) + 0.1
        return x

    @jit
    def step(x, k):
        return expand(x, k)

    return SimpleNamespace(fn=step)


def test_loop_count_that_drives_a_recursion_is_one_graph_per_count(small_traces):
    counts = [2, 2, 2, 3, 3, 1, 1, 2, 3, 1, 3, 2]
    factory, made = _kept(_expand)
    stats = check(factory, [(_x(i), k) for i, k in enumerate(counts)], min_graph_calls=6)
    # one graph per count (1, 2, 3); a fed count would have traced the while loop's body
    # recursing without end, then failed
    assert stats["conversions"] <= 3, stats
    assert stats["failed_conversions"] == 0, stats
    assert "expand's recursion ends" in _no_trace_failed(made[-1])


def test_recursion_deeper_than_the_inline_bound_runs_eagerly_and_says_why():
    deep = config.LIMITS.max_inline_depth + 16
    p_stats = check(_unroll, [(_x(i), deep) for i in range(7)], eager_only=True)
    # the profiled calls, then conversions that fail at the bound until the policy gives up
    # (a second failure just like the first)
    assert p_stats["conversions"] == 0 and p_stats["failed_conversions"] <= 2, p_stats


def test_inline_bound_reason_in_explain():
    janus.reset()
    p = _unroll(janus.function)
    deep = config.LIMITS.max_inline_depth + 16
    for i in range(5):
        np.testing.assert_allclose(p.fn(_x(i), deep).numpy(), p.unroll(_x(i), deep).numpy(), rtol=1e-6)
    text = str(janus.explain(p.fn))
    assert f"nested more than {config.LIMITS.max_inline_depth} deep" in text, text
    assert janus.stats(p.fn)["graph_calls"] == 0, \
        f"nested more than max_inline_depth deep, the recursion cannot be inlined: every call runs eagerly: " \
        f"{janus.stats(p.fn)}"


def _long_loop(jit):
    w = tf.Variable(0.9)

    @jit
    def step(x):
        for i in range(200):  # a Python loop: unrolled while tracing, a few ops a trip
            x = x * w + float(i)
        return x

    return SimpleNamespace(fn=step)


def test_trace_past_the_op_bound_runs_eagerly_and_says_why(monkeypatch):
    monkeypatch.setenv("JANUS_MAX_TRACE_OPS", "300")
    stats = check(_long_loop, [(_x(i),) for i in range(6)], eager_only=True)
    assert stats["failed_conversions"] <= 2, stats   # the same failure twice: given up
    janus.reset()
    p = _long_loop(janus.function)
    for i in range(5):
        p.fn(_x(i))
    assert "the trace built more than 300 ops (JANUS_MAX_TRACE_OPS)" in str(janus.explain(p.fn))


def test_same_loop_within_the_default_op_bound_converts():
    stats = check(_long_loop, [(_x(i),) for i in range(6)], graph_calls=3)
    assert stats["conversions"] == 1, stats


def test_max_trace_ops_setting_is_checked(monkeypatch):
    monkeypatch.setenv("JANUS_MAX_TRACE_OPS", "0")
    with pytest.raises(config.ConfigError, match="JANUS_MAX_TRACE_OPS"):
        config.check()
    monkeypatch.setenv("JANUS_MAX_TRACE_OPS", "1000")
    assert config.max_trace_ops() == 1000
