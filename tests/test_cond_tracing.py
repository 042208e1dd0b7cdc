"""Tensor conditionals are traced once per side, and every assertion names an assumption.

* Each side of a tensor ``if`` is traced exactly once (k nested conditionals do not trace
  the innermost body 2**k times), from the same trace state: what one side reads or
  changes by a deferred mutation is invisible to the other.
* The check that a raising side is not taken, and the int32 check of a Python int the
  graph computes, are assumptions with ids: when one fails, the graph that made it is
  retired and the next conversion does not assume it again.  A speculation nested inside
  a side of a tensor conditional is checked by the conditional and retired the same way.

Eager is the oracle: every test runs through ``harness.check``.
"""
import functools
import re
from types import SimpleNamespace
from unittest import mock

import numpy as np
import tensorflow as tf

import janus
import janus.driver.conversion as driver
import janus.lowering.ops as runtime_ops
from harness import case, check

PROFILE = 3  # default profile_calls


def vec(*values):
    return tf.constant(np.array(values, np.float32))


def conservative(jit):
    """``jit`` without profile speculation (every tensor branch stays a conditional)."""
    return functools.partial(jit, speculate=False) if jit is janus.function else jit


class Recorder:
    """Harness calls that record ``janus.explain`` / ``janus.stats`` after the call (Janus run only)."""

    def __init__(self):
        self.explains: list[str] = []
        self.stats: list[dict] = []

    def after(self, *args):
        def run(p):
            try:
                return p.fn(*args)
            finally:
                if hasattr(p.fn, "__janus_function__"):
                    self.explains.append(str(janus.explain(p.fn)))
                    self.stats.append(janus.stats(p.fn))
        return run


# -- 1. each side traced once --------------------------------------------------------
def _scale(x):
    return tf.tanh(x) * 2.0


def test_three_nested_tensor_conditionals_trace_the_innermost_body_once():
    """The innermost side calls a user helper; every trace of ``f`` traces that call once
    (the old probe-then-build scheme traced it 2**3 = 8 times).  Counted by wrapping the
    runtime's ``call`` (only converted code calls it, and only while tracing)."""
    def make(jit):
        @conservative(jit)
        def f(x):
            s = tf.reduce_sum(x)
            if s > 0:
                if s > 1:
                    if s > 2:
                        y = _scale(x)
                    else:
                        y = x - 1.0
                else:
                    y = x * 3.0
            else:
                y = -x
            return y

        return SimpleNamespace(fn=f)

    values = [0.5, 3.0, -1.0, 1.5, 2.5, 0.1, 5.0, -4.0, 1.2, 9.0]
    calls = [(vec(v, v / 2),) for v in values]
    with mock.patch.object(runtime_ops, "call", wraps=runtime_ops.call) as calls_made, \
            mock.patch.object(driver, "build_entry", wraps=driver.build_entry) as traces:
        total = check(make, calls, graph_calls=len(calls) - PROFILE)
    helper_traces = sum(1 for c in calls_made.call_args_list if c.args and c.args[0] is _scale)
    assert traces.call_count == total["conversions"] == 1, (traces.call_count, total)
    assert helper_traces == traces.call_count, f"the innermost body was traced {helper_traces} times"


def test_sides_do_not_see_each_others_reads_or_deferred_mutations():
    """The true side appends to ``self.log`` (a deferred mutation of a list not read yet);
    the false side reads the list.  Traced from the same state, the false side's read is
    fine (with the true side's mutation leaking into it, the conversion failed); reading
    the list after the conditional still refuses, since either side may have changed it."""
    def make(jit):
        class M:
            def __init__(self):
                self.log = [tf.constant(0.0)]

            @conservative(jit)
            def step(self, x):
                s = tf.reduce_sum(x)
                if s > 0:
                    self.log.append(s)
                    y = x * 2.0
                else:
                    y = x * tf.cast(len(self.log), tf.float32)
                return y

            @conservative(jit)
            def after(self, x):
                s = tf.reduce_sum(x)
                if s > 0:
                    self.log.append(s)
                return x * tf.cast(len(self.log), tf.float32)

        m = M()
        return SimpleNamespace(fn=m.step, after=m.after, m=m,
                               state=lambda: {"log": list(m.log)}, janus_fns=[m.step])

    # (reading the list guards its length, so a call that appended makes the next one miss)
    calls = [(vec(1.0, 2.0),), (vec(-3.0, 1.0),), (vec(0.5, 0.5),), (vec(-1.0, -1.0),),
             (vec(-2.0, -1.0),), (vec(2.0, 0.0),), (vec(-4.0, 4.0),), (vec(-1.0, 0.0),), (vec(-2.0, 0.0),),
             (vec(-3.0, 0.0),)]
    total = check(make, calls, min_graph_calls=4)
    assert total["failed_conversions"] == 0 and total["assertion_failures"] == 0, total

    def make_after(jit):
        p = make(jit)
        p.fn, p.janus_fns = p.after, [p.after]
        return p

    check(make_after, [(vec(v, 1.0),) for v in (1.0, -3.0, 2.0, -4.0, 5.0)], eager_only=True)


# -- 2. every assertion has an assumption id -----------------------------------------
def test_raising_side_taken_retires_its_graph():
    """``raise`` on a tensor condition never taken while profiling: the graph assumes (and
    asserts) it is not taken.  A call that takes it aborts the graph (eager raises the
    error); the graph is kept while at most half its runs raise, then the assumption is
    given up, so no later call runs that graph again."""
    def make(jit):
        @conservative(jit)
        def f(x):
            if tf.reduce_sum(x) > 100.0:
                raise ValueError(f"too large: {x.shape[0]} values")
            return x * 2.0

        return SimpleNamespace(fn=f)

    rec = Recorder()
    big = vec(200.0, 1.0)
    calls = [(vec(1.0, 2.0),), (vec(3.0, 4.0),), (vec(5.0, 6.0),), rec.after(vec(7.0, 8.0)),
             (big,), rec.after(vec(300.0, 2.0)), (vec(9.0, 1.0),), (vec(2.0, 2.0),), (big,),
             (vec(1.0, 1.0),), (big,), (vec(3.0, 3.0),), (big,), (vec(4.0, 4.0),)]
    total = check(make, calls, min_graph_calls=1)
    assert total["assertion_failures"] == 2 and total["assumptions_failed"] == 2, total
    before, failed = rec.explains
    line = re.search(r"branch at test_cond_tracing\.py:(\d+) `\(tf\.reduce_sum\(x\) > 100\.0\)` assumed not to take "
                     r"its True side, which raises ValueError", before)
    assert line and "run-time checks:" in before, before
    assert "assumptions given up:" in failed and line.group(0) in failed.split("assumptions given up:")[1], failed
    assert rec.stats[1]["cache_entries"] == 0, rec.stats


def test_raising_side_speculated_then_dynamic_then_given_up():
    """With profile speculation the branch is first assumed False (only the other side is
    traced); when that fails, the next graph has both sides and assumes the raising one
    is not taken; when that fails in more than half of its runs, the calls run eagerly.
    Four aborted runs in all: one of the first graph, three of the second (kept after
    the first two)."""
    @case
    def f(x):
        if tf.reduce_sum(x) > 100.0:
            raise ValueError("too large")
        return x * 2.0

    big = vec(200.0, 1.0)
    calls = [(vec(1.0, 2.0),), (vec(3.0, 4.0),), (vec(5.0, 6.0),), (vec(7.0, 8.0),), (big,),
             (vec(9.0, 1.0),), (vec(2.0, 2.0),), (big,), (big,), (big,), (vec(1.0, 1.0),), (vec(4.0, 4.0),)]
    total = check(f, calls, min_graph_calls=2)
    assert total["assertion_failures"] == 4 and total["assumptions_failed"] == 4, total


def test_python_int_overflowing_int32_retires_its_graph():
    """``tf.fill(..., k * 1000)`` with ``k`` a Python int the graph computes: eager makes an
    int32 tensor, or an int64 one once the value leaves int32.  The graph assumes int32
    (checked); the first overflowing call aborts it, later ones run eagerly."""
    @case
    def f(x):
        k = int(tf.reduce_sum(x))
        return tf.fill([2], k * 1000)

    def ints(v):
        return tf.constant([v, 1], tf.int64)

    rec = Recorder()
    calls = [(ints(1),), (ints(2),), (ints(3),), rec.after(ints(4)), rec.after(ints(5_000_000)), (ints(6),),
             (ints(7_000_000),), (ints(8),), (ints(-9_000_000),), (ints(10),), (ints(3_000_000),)]
    total = check(f, calls, min_graph_calls=1)
    assert total["assertion_failures"] == 1 and total["assumptions_failed"] == 1, total
    before, failed = rec.explains
    assert "run-time checks:" in before and "fits int32 where TensorFlow converts it" in before, before
    line = next(i for i, text in enumerate(open(__file__), 1) if "return tf.fill([2], k * 1000)" in text)
    assert f"test_cond_tracing.py:{line} fits int32" in before and "(`return tf.fill([2], k * 1000)`)" in before, before
    assert "fits int32" in failed.split("assumptions given up:")[1], failed


def test_user_assert_failing_in_the_graph_keeps_the_graph():
    """The program's own ``assert`` on a tensor is no assumption: when it fails, the run
    aborts, eager raises the AssertionError, and the graph serves the next calls."""
    @case
    def f(x):
        assert tf.reduce_min(x) > 0.0, "positive inputs only"
        return tf.sqrt(x)

    bad = vec(-1.0, 4.0)
    calls = [(vec(1.0, 4.0),), (vec(9.0, 4.0),), (vec(2.0, 3.0),), (vec(1.0, 1.0),), (bad,),
             (vec(4.0, 4.0),), (bad,), (vec(16.0, 1.0),)]
    total = check(f, calls, graph_calls=len(calls) - PROFILE - 2)
    assert total["assertion_failures"] == 2 and total["assumptions_failed"] == 0, total
    assert total["conversions"] == 1 and total["cache_entries"] == 1, total


def test_speculation_nested_in_a_tensor_conditional_is_checked_and_retired():
    """The outer branch went both ways while profiling (a conditional); the inner one only
    one way (speculated inside the outer side).  Its assertion is part of the graph and
    names the assumption: when it fails, that graph is retired and the next one keeps the
    inner branch dynamic."""
    @case
    def f(x):
        s = tf.reduce_sum(x)
        if s > 0:
            if tf.reduce_max(x) < 10.0:
                y = x * 2.0
            else:
                y = x - 10.0
        else:
            y = -x
        return y

    rec = Recorder()
    calls = [(vec(1.0, 2.0),), (vec(-3.0, 1.0),), (vec(2.0, 2.0),), rec.after(vec(-1.0, -1.0)),
             (vec(3.0, 1.0),), (vec(20.0, 1.0),), (vec(-2.0, 0.0),), (vec(30.0, 1.0),), (vec(1.0, 1.0),)]
    total = check(f, calls, min_graph_calls=5)
    assert total["assertion_failures"] == 1 and total["assumptions_failed"] == 1, total
    assert total["conversions"] == 2, total
    assert "`(tf.reduce_max(x) < 10.0)` assumed True" in rec.explains[0], rec.explains[0]


def _loss(s, w):
    if s > 0:
        if s > 3:
            return s * s
        return tf.sin(s) * w[0]
    return -s


def test_gradient_through_nested_conditionals_built_from_branch_graphs():
    """A tape differentiates through conditionals whose sides were traced once and matched
    afterwards (returns defined on one side only get zeros on the other)."""
    def make(jit):
        @conservative(jit)
        def step(x, w):
            with tf.GradientTape() as tape:
                tape.watch(w)
                y = _loss(tf.reduce_sum(x * w), w)
            return tape.gradient(y, w)

        return SimpleNamespace(fn=step)

    w = vec(1.0, 2.0)
    calls = [(vec(v, v), w) for v in (1.0, -1.0, 0.5, 3.0, -2.0, 0.2, 5.0)]
    total = check(make, calls, graph_calls=len(calls) - PROFILE)
    assert total["conversions"] == 1, total
