"""The conversion policy: permanent reasons stop conversion at once, a visible warning
says why once, and a function whose graphs are never reused gives up (eager is the oracle)."""
import dataclasses
import logging
from types import SimpleNamespace

import tensorflow as tf

import janus
from janus.introspect import janus_function_of
from harness import case, check


def _numbers():
    yield 1.0
    yield 2.0


def test_a_generator_inside_is_traced_once_at_most(caplog):
    @case
    def f(x):
        total = 0.0
        for v in _numbers():
            total += v
        return x * total

    with caplog.at_level(logging.WARNING, logger="janus"):
        total = check(f, [(tf.constant([float(i)]),) for i in range(12)], graph_calls=0)
    assert total["failed_conversions"] <= 1, (
        "the generator's loop becomes a graph break after at most one failed trace: the generator inside is traced "
        f"once at most: {total}"
    )
    # the generator's loop is a graph break: it runs in Python, the rest as a graph segment
    assert total["breaks"] == 1 and total["segment_graph_calls"] >= 5, total
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "runs eagerly from now on" in r.getMessage()]
    assert not warnings, [r.getMessage() for r in caplog.records]


def test_a_construct_janus_never_converts_stops_profiling():
    def f(x):
        return [v for v in x.numpy()]  # .numpy() of a graph value: the trace raises

    jf = janus.function(f)
    for i in range(10):
        jf(tf.constant([float(i)]))
    stats = janus.stats(jf)
    assert stats["graph_calls"] == 0, f"every trace raises (.numpy() of a graph value): no graph ever runs: {stats}"
    assert stats["conversions"] + stats["failed_conversions"] <= 4, (
        "every trace raises the same: a few attempts, then profiling stops, not one conversion per call of the 10: "
        f"{stats}"
    )


def test_graphs_never_reused_make_the_function_give_up(caplog):
    """A Python value that changes at every call (here an object's id-like label) pins
    every graph: after three graphs without a hit, Janus stops converting."""
    @case
    def f(x, label):
        return x * 2.0 if label.startswith("a") else x

    with caplog.at_level(logging.WARNING, logger="janus"):
        total = check(f, [(tf.constant([float(i)]), f"a{i}") for i in range(20)], min_graph_calls=0)
    assert total["conversions"] <= 4, (
        "the label pins every graph: after three graphs without a hit Janus stops converting, at most 4 conversions "
        f"over the 20 calls: {total}"
    )
    assert any("never reused" in r.getMessage() for r in caplog.records), [r.getMessage() for r in caplog.records]


def test_budget_exhaustion_warns_once_naming_the_guard(caplog, monkeypatch):
    from janus import config

    monkeypatch.setattr(config, "LIMITS", dataclasses.replace(config.LIMITS, max_conversions=2))

    @case
    def f(x, mode):
        return x + 1.0 if mode == "p" else x - 1.0

    calls = [(tf.constant([1.0]), m) for m in ["p", "p", "p", "p", "q", "q", "r", "r", "s", "s", "p", "q"]]
    with caplog.at_level(logging.WARNING, logger="janus"):
        check(f, calls, min_graph_calls=1)
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(messages) == 1 and "conversions" in messages[0] and "mode" in messages[0], messages


def _numpy_statistic_step(jit):
    """A step with a NumPy statistic of a gradient between two tapes: the trace cannot give
    NumPy a graph tensor's value, and fails the same way at every attempt; a lambda reads
    its locals, so it cannot be split at that graph break (``tests/test_graph_breaks.py``
    has the step that is)."""
    import numpy as np

    w = tf.Variable([[0.5], [-0.25]])
    norms = []

    @jit
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.matmul(x, w) ** 2)
        g = tape.gradient(loss, w)
        norm = lambda: float(np.linalg.norm(g.numpy()))  # reads a local: not split at the break
        norms.append(norm())
        with tf.GradientTape() as tape:
            loss2 = tf.reduce_sum(tf.matmul(x, w))
        w.assign_sub(0.01 * tape.gradient(loss2, w) / max(norms[-1], 1.0))
        return loss + loss2

    return SimpleNamespace(fn=step, state=lambda: {"w": w.numpy(), "norms": list(norms)})


def _kept(factory, made: list):
    """``factory``, keeping the programs it makes in ``made``: a Janus function the harness
    let go of is freed at once, and the test reads it afterwards."""
    def make(jit):
        made.append(factory(jit))
        return made[-1]
    return make


def test_a_conversion_that_fails_twice_the_same_way_stops_trying():
    """Never slower than eager: the second identical failure (nothing relaxed or banned in
    between) gives up, instead of profiling and tracing until the budget is spent."""
    calls = [(tf.constant([[float(i), 1.0], [2.0, float(-i)]]),) for i in range(20)]
    made = []
    total = check(_kept(_numpy_statistic_step, made), calls, eager_only=True)
    assert total["failed_conversions"] == 2 and total["conversions"] == 0, total
    fns = [janus_function_of(p.fn) for p in made if janus_function_of(p.fn) is not None]
    assert any("failed twice the same way" in (f.permanent_reason or "") for f in fns), \
        [f.permanent_reason for f in fns]


def test_failures_that_differ_keep_trying():
    """A failure that changes between attempts (here the argument that is not a tensor)
    is no reason to stop: the next conversion may well succeed."""
    @case
    def f(x, k):
        total = lambda: float(x.numpy().sum())  # reads a local: not split at the break
        if k < 2:
            return x * total()  # the trace raises, at another value each time
        return x * 2.0

    calls = [(tf.constant([1.0, 2.0]), min(i // 4, 2)) for i in range(16)]
    total = check(f, calls, min_graph_calls=1)
    assert total["conversions"] >= 1, (
        f"the failures differ (k changes), so Janus keeps trying: once k is 2 the next conversion succeeds: {total}"
    )


class Skip(Exception):
    pass


def _skipping(jit):
    """A step that raises on some calls, on a Python flag of its state (a skipped batch)."""
    class Model:
        def __init__(self):
            self.skip = False
            self.v = tf.Variable(1.0)

        @jit
        def step(self, x):
            if self.skip:
                raise Skip("batch skipped")
            self.v.assign_add(tf.reduce_sum(x))
            return x * self.v

    m = Model()

    def call(x, skip):
        m.skip = skip
        return m.step(x)

    return SimpleNamespace(fn=call, janus_fns=[m.step], state=lambda: {"v": m.v})


def test_a_function_that_raises_now_and_then_keeps_its_graph_for_the_other_calls():
    """A trace that raises what eager raises on that call is the call raising, not a failed
    conversion: such calls (matching the guards the trace had checked) run eagerly from then
    on without a trace, and the function never gives up (it gave up after the second)."""
    calls = [(tf.constant([float(i)]), i % 4 == 3) for i in range(40)]
    total = check(_skipping, calls, min_graph_calls=24)
    assert total["failed_conversions"] == 1 and total["conversions"] == 1, total
    prog = _skipping(janus.function)
    for c in calls:
        try:
            prog.fn(*c)
        except Skip:
            pass
    text = str(janus.explain(prog.janus_fns[0]))
    assert "raises Skip on such calls, as eager does" in text and "runs eagerly from now on" not in text, text


def test_a_graph_segment_inside_a_tape_that_raises_now_and_then_is_not_given_up():
    """A segment inside a ``with`` run in Python returns what it raised (its eager version
    catches); eager's outcome is read from that, so a segment whose trace raises what eager
    raises is raising on such calls, not failing to convert."""
    import numpy as np
    from janus.driver import segments

    def make(jit):
        w = tf.Variable([1.0, 2.0])
        log = []

        @jit
        def step(x, skip):
            with tf.GradientTape() as tape:
                y = tf.reduce_sum(x * w)
                log.append(float(np.abs(y.numpy())))  # NumPy reads a tensor: a graph break
                z = tf.tanh(y) * 2.0
                if skip:
                    raise Skip("batch skipped")
                loss = z * z
            w.assign_sub(0.01 * tape.gradient(loss, w))
            return loss

        return SimpleNamespace(fn=step, state=lambda: {"w": w, "log": list(log)})

    calls = [(tf.constant([0.1 * i, 1.0]), i % 4 == 3) for i in range(40)]
    original = segments.graphs_faster
    segments.graphs_faster = lambda trial: True  # keep the segments' graphs (what is tested)
    try:
        check(make, calls, min_graph_calls=0)
        prog = make(janus.function)
        for c in calls:
            try:
                prog.fn(*c)
            except Skip:
                pass
    finally:
        segments.graphs_faster = original
    raising = [c.function for c in janus_function_of(prog.fn).split.calls if c.function.conversion.raising]
    assert len(raising) == 1, [str(janus.explain(c.function)) for c in janus_function_of(prog.fn).split.calls]
    segment = raising[0]
    stats = janus.stats(segment)
    assert not segment.policy.gave_up and stats["graph_calls"] >= 15 and stats["conversions"] == 1, stats
    assert "raises Skip on such calls, as eager does" in str(janus.explain(segment))


def test_two_threads_raising_now_and_then_through_one_function():
    """Each thread's trace and eager run are paired by thread: two threads stepping their own
    model through one Janus method end with eager's states."""
    import threading

    class Model:
        def __init__(self):
            self.skip = False
            self.v = tf.Variable(1.0)

        def step(self, x):
            if self.skip:
                raise Skip("batch skipped")
            self.v.assign_add(tf.reduce_sum(x))
            return x * self.v

    def drive(m, step, offset, together=None):
        for i in range(30):
            if together is not None:
                # in step with the other thread, so that how many calls it makes while this
                # one converts does not depend on how fast the machine is
                together.wait()
            m.skip = (i + offset) % 4 == 3
            try:
                step(m, tf.constant([float(i)]))
            except Skip:
                pass

    eager = [Model(), Model()]
    for offset, m in enumerate(eager):
        drive(m, Model.step, offset)
    jstep = janus.function(Model.step)
    models = [Model(), Model()]
    together = threading.Barrier(2, timeout=900)  # a safety net: a thread that died breaks it
    threads = [threading.Thread(target=drive, args=(m, jstep, offset, together)) for offset, m in enumerate(models)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not together.broken
    assert [float(m.v) for m in models] == [float(m.v) for m in eager]
    stats = janus.stats(jstep)
    # of 60 calls, 15 skip; after the first conversions most of the others run as graphs
    assert stats["graph_calls"] >= 10 and not janus_function_of(jstep).policy.gave_up, stats


def test_a_trace_raising_what_eager_does_not_is_a_break_from_the_next_call():
    """A trace that raises where eager returns (code that asks whether it runs eagerly): the
    statement, not the call's values, is at fault, so it runs in Python from the next call on
    (one failed conversion, not one per call until giving up) and the rest is a graph."""
    @case
    def f(x):
        if not tf.executing_eagerly():
            raise RuntimeError("runs eagerly only")
        return x * 2.0

    made = []
    total = check(_kept(f, made), [(tf.constant([1.0, float(i)]),) for i in range(12)], graph_calls=0)
    assert total["failed_conversions"] == 1 and total["breaks"] == 1, total
    assert total["segment_graph_calls"] >= 5, (
        "from the call after the failed trace the statement runs in Python and the rest as a graph segment: the test "
        f"must not pass by running everything eagerly: {total}"
    )
    assert any("tracing it raised RuntimeError where eager does not" in str(janus.explain(p.fn))
               for p in made if janus_function_of(p.fn) is not None)


# ------------------------------------------------------------------ a miss the relaxation explains
def _scheduled(jit):
    class Sched:
        def __init__(self):
            self.t = 0
            self.lr = 1.0
            self.log = []

        @jit
        def step(self, x):
            self.t += 1  # a number of state that changes at every call
            if tf.reduce_sum(x) > 0:
                self.lr = self.lr * 0.5  # written on some calls: fed with the counter
            self.log.append(self.t)
            return x * self.lr

    s = Sched()
    return SimpleNamespace(fn=s.step, state=lambda: {"t": s.t, "lr": s.lr, "log": list(s.log)})


def test_a_miss_on_a_number_of_state_converts_at_once():
    """The first graph specializes on t; its miss is explained (t is fed from then on, and
    lr, which the graph writes, with it): that call converts and runs a graph, without the
    profiled eager call a conversion after an unexplained miss waits for."""
    signs = [1.0, -1.0, 2.0, -3.0, 1.5, 0.5, -0.5, 4.0, -2.0, 3.0, 1.0, -1.0]  # the profile sees both sides
    calls = [(tf.constant([v, v * 0.5]),) for v in signs]
    total = check(_scheduled, calls, min_graph_calls=9)
    assert total["eager_calls"] == 3 and total["graph_calls"] == 9, total  # the 3 profiled calls only
    assert total["conversions"] == 2, total


def test_a_miss_on_an_argument_runs_eagerly_first():
    """An argument's new value may come back to the one a graph serves: that miss runs eagerly."""
    @case
    def f(x, n):
        return x * n

    calls = [(tf.constant([1.0]), 2)] * 4 + [(tf.constant([1.0]), 3)] + [(tf.constant([1.0]), 2)] * 3
    total = check(f, calls, min_graph_calls=4)
    assert total["conversions"] == 1 and total["eager_calls"] == 4, total
