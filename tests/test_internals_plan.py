"""The conversion loop as returned values: each restart revises a frozen TracePlan, every
trace counts towards ``config.LIMITS.max_traces``, the policy learns from the last plan, and a conversion
ends in one Outcome record.  Each program is also compared with eager."""
import numpy as np
import pytest
import tensorflow as tf

import janus
from janus import config, errors
from janus.driver import conversion
from janus.driver.function import JanusFunction
from janus.driver.outcome import Failed
from janus.reporting.codes import Code
from janus.graphs.plan import Arrays, TracePlan
from janus.trace.sources import Arg


def test_each_restart_revises_the_plan_it_was_given_and_starts_the_arrays_again():
    a, b = Arg(0), Arg(1)
    plan = TracePlan(fed={a: int, b: float}, arrays=Arrays.VALUES, numpy_rereads=1)

    class Assumed:
        ban, description = ("site", 3), "a branch taken"

    assert errors.StateBeforeAssertion([Assumed()]).revise(plan).banned == {("site", 3)}
    assert errors.StateBeforeAssertion([]).revise(plan) is None, "no assumption to drop: the trace fails"
    kept = errors.TensorValuesKept({a: "int(t)"}).revise(plan)
    assert kept.tensor_values == {a} and kept.fed == {b: float}, "a value kept is no longer fed"
    assert errors.StateArraysKept({b}).revise(plan).numpy_values == {b}
    assert errors.IslandsRefused({len: "indexed"}, "len").revise(plan).no_islands == {len}
    for revised in (kept, errors.StateArraysKept({b}).revise(plan)):
        assert revised.arrays is Arrays.FED and revised.numpy_rereads == 0, "a restart tries fed arrays again"
    assert plan.arrays is Arrays.VALUES and plan.fed == {a: int, b: float}, "the plan itself is frozen"
    with pytest.raises(AttributeError):
        plan.xla = True


def test_arrays_read_as_numpy_are_kept_then_every_fed_one():
    a, b = Arg(0), Arg(1)
    fed = frozenset({a, b})
    first = errors.ArraysReadAsNumPy({a}, fed).revise(TracePlan())
    assert first.numpy_values == {a} and first.numpy_rereads == 1, "the first re-read keeps the arrays read"
    second = errors.ArraysReadAsNumPy({b}, fed).revise(first)
    assert second.numpy_values == fed, "the second keeps every array the trace fed"


def test_a_failed_trace_with_fed_arrays_tries_static_shapes_then_values():
    a = Arg(0)
    plan = TracePlan(relaxed={a: tf.TensorShape([None])})
    static = plan.arrays_fallback(frozenset({a}))
    assert static.arrays is Arrays.FED_STATIC and static.shapes_for(frozenset({a})) == {}
    values = static.arrays_fallback(frozenset({a}))
    assert values.arrays is Arrays.VALUES
    assert values.arrays_fallback(frozenset({a})) is None, "nothing left to try"
    assert TracePlan().arrays_fallback(frozenset({a})).arrays is Arrays.VALUES, "no relaxed shape: values next"
    assert TracePlan().arrays_fallback(frozenset()) is None, "no array was fed"


def test_every_trace_counts_and_a_conversion_restarted_without_end_fails(monkeypatch):
    """A trace that always asks for a restart ends the conversion after ``max_traces`` traces
    (not ``max_traces`` conversions of several traces each), as a Failed outcome; the call runs
    eagerly with eager's result."""
    traces = []

    def restarting(*args, **kwargs):
        traces.append(args[4])
        raise errors.StateArraysKept({Arg(len(traces))})

    monkeypatch.setattr(conversion, "build_entry", restarting)

    def f(x):
        return x * 2.0

    jf = JanusFunction(f)
    outcomes = []
    run = jf.conversion.run

    def recorded(*args, **kwargs):
        outcomes.append(run(*args, **kwargs))
        return outcomes[-1]

    monkeypatch.setattr(jf.conversion, "run", recorded)
    for i in range(4):
        np.testing.assert_array_equal(jf(tf.constant([float(i)])).numpy(), f(tf.constant([float(i)])).numpy())
    assert len(traces) == config.LIMITS.max_traces, "one conversion: every trace counted"
    assert [len(p.numpy_values) for p in traces] == list(range(config.LIMITS.max_traces)), "each trace's plan revised"
    failed = [o for o in outcomes if isinstance(o, Failed)]
    assert len(failed) == 1 and failed[0].why.reason.code is Code.RESTARTS, outcomes
    assert len(jf.policy.numpy_values) == config.LIMITS.max_traces, "the policy learned from the last plan"
    assert janus.stats(jf)["graph_calls"] == 0 and janus.stats(jf)["eager_calls"] == 4, janus.stats(jf)
