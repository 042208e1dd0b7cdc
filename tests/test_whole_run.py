"""Never slower than eager over a whole run (issue #40, item 8): a function's ledger adds up
profiled calls, conversions (failed traces included), trials and graph runs, and a function
whose conversions do not pay for themselves stops converting (``Code.NO_PAYBACK``), while one
whose graphs pay back is never stopped.

No test here depends on the machine's speed: the ``fake_times`` fixture makes the ledger
record fixed seconds for each kind of run (an eager run, a graph run, one trace), so the
policy's decision is forced by those numbers.  (Every other test runs with the rule off,
``conftest.py``: there it would weigh real time.)  Programs run with ``jit_compile=False``: the
XLA trial times with the real clock and would add a trace on a slow machine.
"""
import dataclasses
import types

import numpy as np
import pytest
import tensorflow as tf

import janus
from harness import check
from janus import config
from janus.driver import conversion, segments
from janus.driver.ledger import Ledger
from janus.driver.policy import ConversionPolicy
from janus.reporting.codes import Code
from janus.trace.sources import Arg

STOPPED = "its conversions cost more than they saved"


@pytest.fixture(autouse=True)
def _whole_run_rule_on(monkeypatch):
    """The rule is off in every other test (``conftest.py``: it weighs measured time); here it
    is on, with its default slack, and ``fake_times`` fixes what it weighs."""
    default = config.Limits.whole_run_slack
    monkeypatch.setattr(config, "LIMITS", dataclasses.replace(config.LIMITS, whole_run_slack=default))


@pytest.fixture
def fake_times(monkeypatch):
    """What the ledger records, by kind, whatever was measured: ``eager`` seconds per eager
    run, ``graph`` per graph run, ``trace`` per trace a conversion made (counted where
    traces are built, so failed traces and restarts count too)."""
    times = types.SimpleNamespace(eager=0.001, graph=0.0005, trace=1.0, traces=0)
    build = conversion.build_entry

    def counted_build(*args, **kwargs):
        times.traces += 1
        return build(*args, **kwargs)

    eager_ran, graph_ran, aborted, converted = Ledger.eager_ran, Ledger.graph_ran, Ledger.graph_aborted, Ledger.converted

    def charge_traces(self, seconds):
        traces, times.traces = times.traces, 0
        converted(self, traces * times.trace)

    monkeypatch.setattr(conversion, "build_entry", counted_build)
    monkeypatch.setattr(Ledger, "eager_ran", lambda self, seconds: eager_ran(self, times.eager))
    monkeypatch.setattr(Ledger, "graph_ran",
                        lambda self, seconds, first, trial: graph_ran(self, times.graph, first, trial))
    monkeypatch.setattr(Ledger, "graph_aborted", lambda self, seconds: aborted(self, times.graph))
    monkeypatch.setattr(Ledger, "converted", charge_traces)
    return times


def _no_xla(jit):
    return janus.function(jit_compile=False) if jit is janus.function else jit


def _keyed(jit, made: list):
    """A step specialized on a tuple of strings that changes every few calls: each new tuple
    is a guard miss, then a conversion, then a graph reused until the next one (a tuple is
    never fed: a string alone would be, then specialized at ``len``, one more trace)."""
    @_no_xla(jit)
    def step(x, key):
        return x * float(len(key)) + 1.0

    made.append(step)
    return types.SimpleNamespace(fn=step)


def _calls(n: int, every: int) -> list:
    return [(tf.constant([1.0, float(i)]), ("k",) * (i // every)) for i in range(n)]


# ------------------------------------------------------------------ the rule, in numbers
def _ledger(calls: int, eager: float, eager_runs: int, graph: float, graph_calls: int, converting: float) -> Ledger:
    """A ledger after ``calls`` calls: ``eager_runs`` eager runs of ``eager`` seconds,
    ``graph_calls`` warm graph calls of ``graph`` seconds, ``converting`` seconds converting
    (the other calls: new graphs' first runs, counted in ``converting``)."""
    led = Ledger()
    for _ in range(eager_runs):
        led.eager_ran(eager)
    led.converted(converting)
    led.graph_seconds, led.graph_calls = graph * graph_calls, graph_calls
    led.calls = calls
    return led


def _policy(conversions: int, failed: int = 0) -> ConversionPolicy:
    p = ConversionPolicy("f")
    p.conversions, p.failed_attempts = conversions, failed
    return p


def test_the_first_conversions_always_get_their_chance():
    # two conversions at 2 s each, nothing saved yet: far behind eager, but not stopped
    led = _ledger(calls=8, eager=0.06, eager_runs=4, graph=0.01, graph_calls=2, converting=4.0)
    assert config.LIMITS.min_attempts_before_stopping == 3
    assert not _policy(conversions=2).whole_run(led).stop
    assert _policy(conversions=3).whole_run(led).stop  # the same account after a third conversion


def test_the_issues_example_converts_on_while_its_graphs_pay_for_their_conversions():
    # a step of 60 ms eagerly, 10 ms as a graph (saves 50 ms a call), conversions at 2 s, a
    # miss every 50 calls: each graph saves 48 * 50 ms = 2.4 s before the next miss, more than
    # its conversion; at the fourth miss (call 151) Janus is ahead of eager: not stopped
    led = _ledger(calls=151, eager=0.06, eager_runs=6, graph=0.01, graph_calls=142, converting=6.0)
    account = _policy(conversions=3).whole_run(led)
    assert not account.stop and account.overhead < 0 and account.saved == pytest.approx(142 * 0.05), account
    # a miss every 20 calls: each graph saves 0.9 s of its 2 s; at the fourth miss (call 61)
    # Janus is 3.2 s over eager's 3.7 s, more than 10% of it plus one conversion: stopped
    led = _ledger(calls=61, eager=0.06, eager_runs=6, graph=0.01, graph_calls=52, converting=6.0)
    account = _policy(conversions=3).whole_run(led)
    assert account.stop and account.overhead > account.allowance == pytest.approx(0.1 * 3.66 + 2.0), account


def test_failed_conversions_count_as_attempts():
    led = _ledger(calls=12, eager=0.001, eager_runs=12, graph=0.0, graph_calls=0, converting=3.0)
    account = _policy(conversions=0, failed=3).whole_run(led)
    assert account.stop and account.saved == 0.0, account


def test_clearly_faster_graphs_are_not_stopped_however_much_converting_cost():
    # 9 conversions at 1 s each, but a warm graph call saves 99 ms on 900 of 1,000 calls
    led = _ledger(calls=1000, eager=0.1, eager_runs=50, graph=0.001, graph_calls=900, converting=9.0)
    account = _policy(conversions=9).whole_run(led)
    assert not account.stop and account.overhead < 0, account


def test_a_step_up_the_hierarchy_goes_ahead():
    led = _ledger(calls=12, eager=0.001, eager_runs=12, graph=0.0, graph_calls=0, converting=3.0)
    policy = _policy(conversions=3)
    policy.varying[Arg(1)] = float  # a number whose value guard failed: the next trace feeds it
    assert not policy.whole_run(led).stop
    policy.converted(True)  # ... and once that conversion has not paid either, it stops
    assert policy.whole_run(led).stop
    policy = _policy(conversions=3)
    policy.tensor_values.add(Arg(0))  # a tensor specialized by value, whose value guard failed:
    policy.tensor_value_misses.add(Arg(0))  # the never-reused rule unspecializes it
    assert not policy.whole_run(led).stop
    assert policy.stop_specializing_values() == {Arg(0)}
    assert not policy.whole_run(led).stop  # the next trace knows more


def test_graphs_dropped_for_a_banned_assumption_are_rebuilt_before_the_rule_weighs():
    led = _ledger(calls=12, eager=0.001, eager_runs=12, graph=0.0, graph_calls=0, converting=3.0)
    policy = _policy(conversions=3)
    policy.lost_to_ban(2)  # two graphs made the assumption that failed
    for _ in range(2):
        assert not policy.whole_run(led).stop
        policy.converted(True)
    assert policy.whole_run(led).stop


def test_the_rule_is_off_without_a_slack(monkeypatch):
    monkeypatch.setattr(config, "LIMITS", dataclasses.replace(config.LIMITS, whole_run_slack=None))
    led = _ledger(calls=12, eager=0.001, eager_runs=12, graph=0.0, graph_calls=0, converting=3.0)
    assert not _policy(conversions=3).whole_run(led).stop


# ------------------------------------------------------------------ whole programs
def test_conversions_that_do_not_pay_stop_early(fake_times, monkeypatch):
    """1 s a trace, 1 ms eagerly, 0.5 ms as a graph, a new key every 4 calls: each graph saves
    1.5 ms before the next miss.  After its third conversion the function stops converting
    and runs eagerly, with eager's results; without the rule it converts about every 4 calls."""
    made: list = []
    check(lambda jit: _keyed(jit, made), _calls(40, 4), min_graph_calls=3)
    stats, step = janus.stats(made[-1]), made[-1].__janus_function__
    assert stats["conversions"] == config.LIMITS.min_attempts_before_stopping, janus.explain(made[-1])
    assert step.permanent_reason.code is Code.NO_PAYBACK
    # three traces of 1 s, each new graph's first run (0.5 ms) counted as converting
    assert stats["conversion_seconds"] == pytest.approx(3 * 1.0 + 3 * 0.0005)
    assert stats["eager_estimate_seconds"] == pytest.approx(40 * 0.001)
    # the overhead is three traces less what the 7 graph runs saved (0.5 ms each): it stopped
    # growing at the stop, the 27 calls after it ran eagerly at eager's cost
    assert stats["seconds"] - stats["eager_estimate_seconds"] == pytest.approx(3 * 1.0 - 7 * 0.0005)
    text = str(janus.explain(made[-1]))
    assert STOPPED in text and "[JB059]" in text and "converting: 3.002 s, 3 conversions (0 failed)" in text
    assert stats["eager_calls"] > 40 - 12, stats  # after the stop: every new key eagerly

    # before this rule: a conversion for every new key
    monkeypatch.setattr(config, "LIMITS", dataclasses.replace(config.LIMITS, whole_run_slack=None))
    made.clear()
    check(lambda jit: _keyed(jit, made), _calls(40, 4), min_graph_calls=3)
    assert janus.stats(made[-1])["conversions"] >= 8, (
        "without the rule a conversion for every new key: a new key every 4 of the 40 calls, so about 10: "
        f"{janus.stats(made[-1])}"
    )


def test_graphs_slower_than_eager_go_at_the_stop(fake_times):
    """A warm graph call measured slower than eager (2 ms against 1 ms): at the stop no graph
    stays, though each was reused."""
    fake_times.graph = 0.002
    made: list = []
    check(lambda jit: _keyed(jit, made), _calls(24, 4), min_graph_calls=3)
    stats = janus.stats(made[-1])
    assert made[-1].__janus_function__.permanent_reason.code is Code.NO_PAYBACK
    assert stats["cache_entries"] == 0, stats


def test_graphs_that_pay_back_are_never_stopped(fake_times):
    """0.1 s a trace, 50 ms eagerly, 1 ms as a graph: a graph pays for its conversion in
    about two calls, so a new key every 4 calls keeps converting (as without the rule)."""
    fake_times.eager, fake_times.graph, fake_times.trace = 0.05, 0.001, 0.1
    made: list = []
    check(lambda jit: _keyed(jit, made), _calls(40, 4), min_graph_calls=20)
    stats = janus.stats(made[-1])
    assert made[-1].__janus_function__.permanent_reason is None, janus.explain(made[-1])
    assert stats["conversions"] >= 8 and stats["seconds"] < stats["eager_estimate_seconds"], stats


def test_the_issues_example_is_not_stopped(fake_times):
    """Converting costs 2 s, a call saves 50 ms (60 ms eagerly, 10 ms as a graph), a new key
    every 50 calls: each graph pays for its conversion after 40 calls; never stopped."""
    fake_times.eager, fake_times.graph, fake_times.trace = 0.06, 0.01, 2.0
    made: list = []
    check(lambda jit: _keyed(jit, made), _calls(200, 50), min_graph_calls=180)
    stats = janus.stats(made[-1])
    assert made[-1].__janus_function__.permanent_reason is None, janus.explain(made[-1])
    assert stats["conversions"] == 4 and stats["seconds"] < stats["eager_estimate_seconds"], stats


def test_the_issues_example_with_a_miss_every_20_calls_is_stopped(fake_times):
    """The same step, a new key every 20 calls: each graph saves 0.9 s of its 2 s conversion.
    After three conversions it stops converting (before, it converted until the budget)."""
    fake_times.eager, fake_times.graph, fake_times.trace = 0.06, 0.01, 2.0
    made: list = []
    check(lambda jit: _keyed(jit, made), _calls(100, 20), min_graph_calls=40)
    stats = janus.stats(made[-1])
    assert made[-1].__janus_function__.permanent_reason.code is Code.NO_PAYBACK, janus.explain(made[-1])
    assert stats["conversions"] == config.LIMITS.min_attempts_before_stopping, stats


def test_stats_and_explain_show_where_the_time_went(fake_times):
    fake_times.eager, fake_times.graph, fake_times.trace = 0.002, 0.001, 1.0

    @janus.function(jit_compile=False)
    def f(x):
        return x * 2.0 + 1.0

    for i in range(10):
        f(tf.constant([float(i)]))
    s = janus.stats(f)
    # calls 0-2 profiled, call 3 converts and runs the new graph, calls 4-9 warm graph calls
    assert s["eager_seconds"] == pytest.approx(3 * 0.002) and s["graph_seconds"] == pytest.approx(6 * 0.001)
    assert s["conversion_seconds"] == pytest.approx(1.0 + 0.001)
    assert s["seconds"] == pytest.approx(s["eager_seconds"] + s["graph_seconds"] + s["conversion_seconds"])
    assert s["eager_estimate_seconds"] == pytest.approx(10 * 0.002)
    assert s["trial_seconds"] == 0 and s["aborted_seconds"] == 0, \
        "jit_compile=False: no XLA trial; no graph run aborted"
    text = str(janus.explain(f))
    assert "time: 1.013 s in 10 calls, against eager's estimated 0.020 s (its eager runs, and 2.000 ms" in text, text
    assert "converting: 1.001 s, 1 conversion (0 failed)" in text
    assert "graph runs: 0.006 s in 6 calls, 1.000 ms a call against eager's 2.000 ms" in text
    janus.reset(f)
    assert janus.stats(f)["seconds"] == 0, "janus.reset(f) clears its ledger too"


def _split(jit, made: list):
    @_no_xla(jit)
    def step(x, key):
        y = x * 2.0
        total = float(np.sum(y.numpy()))  # a graph break: runs in Python
        return y * total + float(len(key))

    made.append(step)
    return types.SimpleNamespace(fn=step)


def test_a_segment_whose_conversions_do_not_pay_runs_as_written(fake_times, monkeypatch):
    """The segment after the break specializes on the key; its conversions stop paying and
    it stops converting on its own (the segment before the break keeps its graph)."""
    monkeypatch.setattr(segments, "graphs_faster", lambda trial: True)  # trials keep graphs
    made: list = []
    check(lambda jit: _split(jit, made), _calls(48, 4), min_graph_calls=0)
    root = made[-1].__janus_function__
    assert root.split is not None, janus.explain(made[-1])
    stopped = [s for s in root.split.segments if s.permanent_reason is not None]
    assert [s.permanent_reason.code for s in stopped] == [Code.NO_PAYBACK], janus.explain(made[-1])
    assert janus.stats(stopped[0])["conversions"] == config.LIMITS.min_attempts_before_stopping
    text = str(janus.explain(made[-1]))
    assert "[JB059]" in text and "converting:" in text


# ------------------------------------------------------------------ runs too short to convert
def _shortest_rule_on(monkeypatch) -> None:
    monkeypatch.setattr(config, "LIMITS", dataclasses.replace(config.LIMITS,
                                                              shortest_run_ms=config.Limits.shortest_run_ms))


def test_a_run_shorter_than_a_graph_call_is_never_converted_in_numbers(monkeypatch):
    _shortest_rule_on(monkeypatch)
    assert config.LIMITS.shortest_run_ms == 0.05
    tiny = _ledger(calls=3, eager=0.00002, eager_runs=3, graph=0.0, graph_calls=0, converting=0.0)
    assert _policy(conversions=0).too_short(tiny) == pytest.approx(0.00002)
    assert _policy(conversions=2).too_short(tiny) == pytest.approx(0.00002), (
        "asked at every due conversion: profiled runs (before the first) are slower than the runs as written after")
    enough = _ledger(calls=3, eager=0.0002, eager_runs=3, graph=0.0, graph_calls=0, converting=0.0)
    assert _policy(conversions=0).too_short(enough) is None
    monkeypatch.setattr(config, "LIMITS", dataclasses.replace(config.LIMITS, shortest_run_ms=None))
    assert _policy(conversions=0).too_short(tiny) is None, "None turns the rule off"


def test_a_step_whose_eager_runs_are_too_short_runs_as_written_without_a_warning(fake_times, monkeypatch, caplog):
    """20 us a call eagerly: no graph could pay back a conversion, so none is made; the calls
    run as written, unprofiled, with eager's results, and the reason is in explain."""
    import logging

    _shortest_rule_on(monkeypatch)
    fake_times.eager = 0.00002
    made: list = []
    with caplog.at_level(logging.WARNING, logger="janus"):
        check(lambda jit: _keyed(jit, made), _calls(12, 100), eager_only=True)
    stats, step = janus.stats(made[-1]), made[-1].__janus_function__
    assert stats["conversions"] == 0 and stats["failed_conversions"] == 0, stats
    assert step.permanent_reason.code is Code.TOO_SHORT
    assert "[JB068]" in str(janus.explain(made[-1]))
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], "nothing is lost: no warning"
