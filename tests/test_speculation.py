"""Speculation from the profile, checked against eager: establish, break, return.

Every test runs a call sequence that first *establishes* an assumption (three profiled
eager calls, then several graph calls), then *breaks* it (a flipped branch, a longer
loop, a new callee, a new shape, a new Python value), then *returns* to it.  The
harness compares the result, stdout and state with eager after every call; the test
then shows from ``janus.stats`` / ``janus.explain`` that graphs ran before AND after
the break, and that the first graph really was speculative (its explanation, taken
just before the break, lists the assumption).
"""
import contextlib
import functools
import io
import os
import re
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

import janus
from harness import assert_same, case, check, fresh_module

PROFILE = 3  # default profile_calls


def rnd(shape, seed, scale=1.0, shift=0.0):
    return tf.constant((np.random.RandomState(seed).randn(*shape) * scale + shift).astype(np.float32))


def pos(shape, seed, lo=0.5, hi=1.5):
    return tf.constant(np.random.RandomState(seed).uniform(lo, hi, size=shape).astype(np.float32))




class Seen(str):
    """``janus.explain`` of a function at one moment: its text, and the assumptions it held
    then, read from the typed reports (``Explanation.entries``, ``Explanation.given_up``), each
    as ``"<description> (held H, failed F)"``."""

    graphs: list[list[str]]  # per graph, newest first: its speculations (not its run-time checks)
    given_up: list[str]

    @staticmethod
    def of(explanation) -> "Seen":
        seen = Seen(str(explanation))
        seen.graphs = [[_counted(a) for a in entry.report.assumptions if a.kind.speculative]
                       for entry in explanation.entries]
        seen.given_up = [_counted(a) for a in explanation.given_up]
        return seen


def _counted(a) -> str:
    return f"{a.description} (held {a.held}, failed {a.failed})"


class Probe:
    """Calls that also record Janus's view of the program at that point (Janus run only)."""

    def __init__(self):
        self.explains: list[Seen] = []
        self.stats: list[dict] = []

    def call(self, *args, fn=None):
        """A harness call ``p.fn(*args)`` (or ``p.<fn>``) that first records explain/stats."""
        def run(p):
            f = p.fn if fn is None else getattr(p, fn)
            if hasattr(f, "__janus_function__"):
                self.explains.append(Seen.of(janus.explain(f)))
                self.stats.append(janus.stats(f))
            return f(*args)
        return run

    def after(self, *args, fn=None):
        """A harness call that records stats right after the call."""
        def run(p):
            f = p.fn if fn is None else getattr(p, fn)
            out = f(*args)
            if hasattr(f, "__janus_function__"):
                self.stats.append(janus.stats(f))
            return out
        return run


def graph_sections(explain_text):
    """The per-graph sections of an explanation (text between 'graph i:' headers)."""
    body = explain_text.split("  assumptions given up:")[0].split("  why calls ran eagerly:")[0]
    body = body.split("  generated code:")[0]
    parts = body.split("\n  graph ")[1:]
    return ["graph " + p for p in parts]


def assert_speculative(seen: Seen, *needles):
    """The (only / newest) graph makes an assumption whose description has every needle."""
    assert seen.graphs, f"no graph in:\n{seen}"
    assert seen.graphs[0], f"the graph assumed nothing:\n{seen}"
    assert any(all(n in a for n in needles) for a in seen.graphs[0]), f"no assumption with {needles} in:\n{seen}"
    assert any(all(n in ln for n in needles) for ln in graph_sections(seen)[0].splitlines()), \
        f"janus.explain does not show it:\n{seen}"


def assert_given_up(seen: Seen, *needles):
    """An assumption with every needle was given up, shown so, and the newest graph no longer makes it."""
    assert any(all(n in a for n in needles) for a in seen.given_up), f"no given-up assumption with {needles} in:\n{seen}"
    assert any(all(n in ln for n in needles) for ln in seen.split("  assumptions given up:")[-1].splitlines()), seen
    assert not any(all(n in a for n in needles) for a in (seen.graphs[0] if seen.graphs else ())), seen


def jf_of(p, name="fn"):
    return getattr(p, name).__janus_function__


# =========================================================================================
# 1. branch pruning
# =========================================================================================
def test_branch_pruned_then_flipped_then_back():
    @case
    def f(x):
        if tf.reduce_sum(x) > 0:
            y = x * 2.0 + 1.0
        else:
            y = tf.abs(x) - 3.0
        return y

    probe = Probe()
    P = [pos((5,), i) for i in range(12)]
    N = [-pos((5,), 100 + i) for i in range(3)]
    calls = [(P[0],), (P[1],), (P[2],), (P[3],), (P[4],), (P[5],),     # 3 profiled + 3 graphs
             probe.call(N[0]),                                           # flipped: assertion fails
             (P[6],), (P[7],), (N[1],), (P[8],), (P[9],), (N[2],), probe.call(P[10])]
    total = check(f, calls, min_graph_calls=(6 - PROFILE) + 5)
    before, final = probe.explains
    assert_speculative(before, "branch at", "`(tf.reduce_sum(x) > 0)`", "assumed True", "held 3, failed 0")
    assert probe.stats[0]["graph_calls"] == 6 - PROFILE and probe.stats[0]["assertion_failures"] == 0, \
        f"before the flipped call: the calls after the profiled ones ran the graph assuming True, none aborted: {probe.stats[0]}"
    assert total["assertion_failures"] == 1, total
    assert total["assumptions_failed"] >= 1, total
    assert total["conversions"] == 2, total
    # every call but the profiled ones and the aborted one ran as a graph (the re-conversion
    # happens on the call right after the abort and serves it)
    assert total["graph_calls"] == len(calls) - PROFILE - 1, total
    assert_given_up(final, "branch at", "`(tf.reduce_sum(x) > 0)`", "assumed True", "failed 1")
    assert "assertions in graph: 0" in graph_sections(final)[0], final


def test_conditional_expression_pruned_then_flipped_then_back():
    @case
    def f(x, w):
        h = tf.matmul(x, w)
        scale = 0.5 if tf.reduce_mean(h) < 100.0 else 2.0
        return h * scale, scale

    probe = Probe()
    w = rnd((3, 2), 0)
    X = [rnd((4, 3), i) for i in range(10)]
    big = tf.fill((4, 3), 500.0)
    wbig = tf.ones((3, 2))
    calls = [(X[0], w), (X[1], w), (X[2], w), (X[3], w), (X[4], w), (X[5], w),
             probe.call(big, wbig), (X[6], w), (X[7], w), (big, wbig), probe.call(X[8], w), (X[9], w)]
    total = check(f, calls, min_graph_calls=(6 - PROFILE) + 4)
    before, final = probe.explains
    assert_speculative(before, "branch at", "tf.reduce_mean(h) < 100.0", "assumed True")
    assert total["assertion_failures"] == 1 and total["assumptions_failed"] >= 1, total
    assert total["conversions"] == 2, total
    assert_given_up(final, "tf.reduce_mean(h) < 100.0", "assumed True", "failed 1")


def test_branch_inside_python_loop_pruned_then_flipped_then_back():
    @case
    def f(xs):
        acc = tf.zeros((3,))
        for i in range(4):
            row = xs[i]
            if tf.reduce_min(row) > 0.0:
                acc = acc + tf.sqrt(row)
            else:
                acc = acc - row * row
        return acc

    probe = Probe()
    P = [pos((4, 3), i) for i in range(10)]
    broken = tf.tensor_scatter_nd_update(pos((4, 3), 50), [[2, 1]], [-4.0])   # row 2 flips, late
    calls = [(P[0],), (P[1],), (P[2],), (P[3],), (P[4],), (P[5],),
             probe.call(broken), (P[6],), (P[7],), (broken,), probe.call(P[8],), (P[9],)]
    total = check(f, calls, min_graph_calls=(6 - PROFILE) + 4)
    before, final = probe.explains
    assert_speculative(before, "branch at", "tf.reduce_min(row) > 0.0", "assumed True")
    assert total["assertion_failures"] == 1 and total["assumptions_failed"] >= 1, total
    assert total["conversions"] == 2, total
    assert_given_up(final, "tf.reduce_min(row) > 0.0", "failed 1")


# =========================================================================================
# 2. loop unrolling
# =========================================================================================
def test_while_on_tensor_unrolled_then_longer_then_back():
    @case
    def halve(x):
        n = 0
        while tf.reduce_max(x) >= 1.0:
            x = x / 2.0
            n += 1
        return x, n

    probe = Probe()
    same = [pos((4,), i, 4.0, 7.9) for i in range(12)]     # always 3 halvings
    longer = [pos((4,), 60 + i, 40.0, 60.0) for i in range(2)]   # 6 halvings
    calls = [(same[0],), (same[1],), (same[2],), (same[3],), (same[4],), (same[5],),
             probe.call(longer[0]), (same[6],), (same[7],), (longer[1],), (same[8],),
             (pos((4,), 70, 0.1, 0.5),), probe.call(same[9])]    # zero iterations too
    total = check(halve, calls, min_graph_calls=(6 - PROFILE) + 5)
    before, final = probe.explains
    assert_speculative(before, "loop at", "`(tf.reduce_max(x) >= 1.0)`", "assumed 3 iterations")
    assert "assertions in graph: 4" in graph_sections(before)[0], before   # 3 continue + 1 exit
    assert total["assertion_failures"] == 1 and total["assumptions_failed"] >= 1, total
    assert total["conversions"] == 2, total
    assert total["graph_calls"] == len(calls) - PROFILE - 1, total
    assert_given_up(final, "loop at", "assumed 3 iterations", "failed 1")


def test_while_unrolled_then_shorter_loop():
    """Breaking the other way: the loop would stop early (the exit assertion of an earlier
    iteration fails), then the trip count returns to the profiled one."""
    @case
    def halve(x):
        n = 0
        while tf.reduce_max(x) >= 1.0:
            x = x / 2.0
            n += 1
        return x, n

    same = [pos((4,), i, 4.0, 7.9) for i in range(10)]
    calls = [(same[i],) for i in range(6)] + [(pos((4,), 80, 1.0, 1.9),)] + [(same[i],) for i in range(6, 10)]
    total = check(halve, calls, min_graph_calls=(6 - PROFILE) + 4)
    assert total["assertion_failures"] == 1 and total["assumptions_failed"] >= 1, total
    assert total["conversions"] == 2, total


def test_for_over_tensor_range_unrolled_then_other_count_then_back():
    @case
    def f(x, n):
        acc = tf.zeros_like(x)
        for i in range(n):
            acc = acc * 0.5 + x * tf.cast(i + 1, tf.float32)
        return acc

    probe = Probe()
    four, six, two = tf.constant(4), tf.constant(6), tf.constant(2)
    X = [rnd((3,), i) for i in range(12)]
    calls = [(X[0], four), (X[1], four), (X[2], four), (X[3], four), (X[4], four), (X[5], four),
             probe.call(X[6], six), (X[7], four), (X[8], four), (X[9], six), (X[10], two),
             probe.call(X[11], four)]
    total = check(f, calls, min_graph_calls=(6 - PROFILE) + 4)
    before, final = probe.explains
    assert_speculative(before, "loop at", "range(n)", "assumed 4 iterations")
    assert total["assertion_failures"] == 1 and total["assumptions_failed"] >= 1, total
    assert total["conversions"] == 2, total
    assert total["graph_calls"] == len(calls) - PROFILE - 1, total
    assert_given_up(final, "loop at", "range(n)", "assumed 4 iterations", "failed 1")


def test_for_over_tensor_of_relaxed_length_unrolled_then_shorter_then_back():
    """The width of ``x`` varies, so the graph is traced with shape (3, None): the rows of
    ``tf.transpose(x)[:2]`` have an unknown static count, but it was 2 in every profiled
    call: unrolled with a length assertion, which fails for a width-1 ``x``."""
    @case
    def g(x):
        acc = tf.zeros((3,))
        for row in tf.transpose(x)[:2]:
            acc = acc * 0.5 + row
        return acc

    probe = Probe()
    calls = [(rnd((3, 4), 0),), (rnd((3, 4), 1),), (rnd((3, 5), 2),), (rnd((3, 6), 3),),
             (rnd((3, 7), 4),), (rnd((3, 4), 5),),
             probe.call(rnd((3, 1), 6)),                     # only one row: length assertion fails
             (rnd((3, 5), 7),), (rnd((3, 1), 8),), (rnd((3, 9), 9),), probe.call(rnd((3, 2), 10))]
    total = check(g, calls, min_graph_calls=3 + 3)
    before, final = probe.explains
    assert "(relaxed shapes)" in graph_sections(before)[0] and "float32[3, None]" in before, before
    assert_speculative(before, "loop at", "tf.transpose(x)[:2]", "assumed 2 iterations")
    assert total["assertion_failures"] == 1 and total["assumptions_failed"] >= 1, total
    assert total["conversions"] <= 3, (
        "one conversion after the 3 profiled calls (relaxed shapes, loop unrolled), one after the width-1 x fails the "
        f"length assertion, at most one more: not one per width: {total}"
    )
    assert_given_up(final, "loop at", "tf.transpose(x)[:2]", "failed 1")


def test_for_over_tensor_of_relaxed_length_with_varying_count():
    """``for row in x`` with a varying first dimension: after relaxation to (None, 3) the
    count is not fixed (it varied while profiling): a tf.while_loop serves every length."""
    @case
    def h(x):
        acc = tf.zeros((3,))
        for row in x:
            acc = acc * 0.5 + row
        return acc

    probe = Probe()
    lens = [4, 4, 4, 4, 4, 5, 2, 4, 6, 1, 7, 3]
    calls = [(rnd((n, 3), i),) for i, n in enumerate(lens)] + [probe.call(rnd((8, 3), 99))]
    total = check(h, calls, min_graph_calls=2 + 6)
    final, = probe.explains
    assert "float32[None, 3]" in graph_sections(final)[0], final
    assert total["conversions"] == 2 and total["assertion_failures"] == 0, total


# =========================================================================================
# 3. callee identity
# =========================================================================================
CALLEE_SRC = """
import tensorflow as tf

def helper(x):
    return tf.nn.relu(x) * 2.0

def other(x):
    return tf.tanh(x) - 1.0

@jit
def f(x):
    y = helper(x)
    return y + 1.0
"""


def test_global_callee_rebound_then_back():
    def make(jit):
        mod = fresh_module(CALLEE_SRC, jit=jit)
        return SimpleNamespace(fn=mod.f, mod=mod, orig=mod.helper)

    def rebind(to, x, probe=None):
        def run(p):
            p.mod.helper = getattr(p.mod, to) if to != "orig" else p.orig
            if probe is not None:
                return probe.call(x)(p)
            return p.fn(x)
        return run

    probe = Probe()
    X = [rnd((5,), i) for i in range(16)]
    calls = [(X[0],), (X[1],), (X[2],), (X[3],), (X[4],), (X[5],),     # 3 profiled + 3 graphs
             rebind("other", X[6], probe),      # guard miss: eager
             (X[7],), (X[8],), (X[9],),          # re-converted for `other`, graphs
             rebind("orig", X[10]),              # back: the first graph is still cached
             (X[11],), (X[12],),
             rebind("other", X[13]), (X[14],), probe.call(X[15])]
    total = check(make, calls, min_graph_calls=(6 - PROFILE) + 8)
    before, final = probe.explains
    # the speculation on the callee is a guard on its identity
    assert len(graph_sections(before)) == 1 and ".helper\n" in graph_sections(before)[0], before
    assert "- global helper is " in before, before
    assert total["conversions"] == 2, total
    assert total["graph_calls"] == len(calls) - PROFILE - 1, total
    assert total["assertion_failures"] == 0, total
    newest, older = graph_sections(final)
    assert "global helper is " in newest and ".other\n" in newest, final
    assert "global helper is " in older and ".helper\n" in older, final


def test_callee_rebound_to_a_function_with_a_tensor_branch():
    """The new callee has a tensor branch of its own: it is profiled after the guard miss,
    speculated in the re-converted graph, and its assumption can fail in turn."""
    src = """
import tensorflow as tf

def helper(x):
    return x * 3.0

def clipped(x):
    if tf.reduce_max(x) > 10.0:
        x = x / tf.reduce_max(x)
    return x - 0.5

@jit
def f(x):
    return helper(x) + helper(2.0 * x)
"""

    def make(jit):
        mod = fresh_module(src, jit=jit)
        return SimpleNamespace(fn=mod.f, mod=mod, orig=mod.helper)

    def rebind(to, x):
        def run(p):
            p.mod.helper = getattr(p.mod, to) if to != "orig" else p.orig
            return p.fn(x)
        return run

    X = [rnd((4,), i) for i in range(12)]
    big = tf.constant([20.0, 1.0, 2.0, 3.0])
    calls = [(X[0],), (X[1],), (X[2],), (X[3],), (X[4],),
             rebind("clipped", X[5]), (X[6],), (X[7],), (X[8],), (big,), (X[9],), (X[10],),
             rebind("orig", X[11]), (big,)]
    total = check(make, calls, min_graph_calls=(5 - PROFILE) + 6)
    # graphs: 2 with helper; 3 with clipped (branch assumed not taken); `big` aborts; 2 with
    # clipped's branch as tf.cond; the original graph serves the last two calls again
    assert total["assertion_failures"] == 1 and total["assumptions_failed"] == 1, total
    assert total["conversions"] == 3, total
    assert total["graph_calls"] == 9, total


# =========================================================================================
# 4. shapes
# =========================================================================================
def test_shape_relaxed_once_covers_every_later_shape():
    @case
    def f(x, w):
        h = tf.tanh(tf.matmul(x, w))
        return tf.reduce_mean(h, axis=0), tf.cast(tf.shape(x)[0], tf.float32) * tf.reduce_sum(h)

    probe = Probe()
    w = rnd((8, 3), 0)
    rows = [4, 4, 4, 4, 4, 4, 3, 2, 6, 4, 5, 1, 3, 9]
    calls = [(rnd((n, 8), i), w) for i, n in enumerate(rows)]
    calls[6] = probe.call(*calls[6])                      # just before the first new shape
    calls.append(probe.call(rnd((7, 8), 99), w))
    total = check(f, calls, min_graph_calls=(6 - PROFILE) + len(rows) - 7)
    before, final = probe.explains
    assert "float32[4, 8]" in graph_sections(before)[0], before
    # (3, 8) misses and, a shape being all that changed, converts at once: ONE graph for
    # (None, 8) that serves it and every later shape, (4, 8) included
    assert total["conversions"] == 2, total
    assert total["graph_calls"] == len(calls) - PROFILE, total
    newest, first = graph_sections(final)
    assert "(relaxed shapes)" in newest and "float32[None, 8]" in newest, final
    assert total["eager_calls"] == PROFILE, total
    # the (4, 8) graph still serves its shape after the relaxed one exists (3 + 1 hits)
    assert "float32[4, 8]" in first and first.startswith("graph 1: 4 hits"), final


def test_shape_relaxed_with_a_static_shape_read():
    """The trace reads ``x.shape[0]`` (a Python int): the relaxed graph cannot know it, so
    the trace retries with exact shapes; every result still matches eager."""
    @case
    def f(x):
        n = x.shape[0]
        return tf.reduce_sum(x, axis=0) / n, n

    rows = [4, 4, 4, 4, 4, 3, 2, 6, 4, 3, 2, 6, 4]
    total = check(f, [(rnd((n, 8), i),) for i, n in enumerate(rows)], min_graph_calls=2 + 4)
    assert total["conversions"] <= 5, (
        "the trace reads x.shape[0], so the relaxed attempt retries with exact shapes: a graph per row count (4, 3, 2,"
        f" 6) and the retry, at most 5: {total}"
    )


# =========================================================================================
# 5. Python values
# =========================================================================================
def test_int_argument_specialized_then_new_value_then_back():
    @case
    def f(x, n):
        for _ in range(n):
            x = x * 0.5 + 1.0
        return x, n + 1

    probe = Probe()
    X = [rnd((3,), i) for i in range(12)]
    calls = [(X[0], 3), (X[1], 3), (X[2], 3), (X[3], 3), (X[4], 3), (X[5], 3),
             probe.call(X[6], 5),                      # new value: guard miss, runs eagerly
             probe.call(X[7], 3), (X[8], 3), probe.call(X[9], 3)]
    total = check(f, calls, min_graph_calls=(6 - PROFILE) + 3)
    before, at_back, final = probe.explains
    s_before, s_back = probe.stats[0], probe.stats[1]
    assert "argument n == 3" in graph_sections(before)[0], before
    assert s_back["eager_calls"] == s_before["eager_calls"] + 1, (s_before, s_back)
    assert s_back["graph_calls"] == s_before["graph_calls"], (s_before, s_back)
    assert total["conversions"] == 1, total        # back to 3: the specialized graph again
    assert total["graph_calls"] == len(calls) - PROFILE - 1, total


def test_int_argument_changing_every_call_is_fed():
    @case
    def f(x, step):
        lr = 0.1 / (step + 1)
        y = x * lr
        if step % 2 == 0:          # a tensor branch once step is fed: both sides seen
            y = y + 1.0
        for _ in range(step % 3):   # a tensor range once step is fed: varying count
            y = y * 0.9
        return y, step * 2, lr

    probe = Probe()
    x = rnd((4,), 0)
    calls = [(x, s) for s in range(14)] + [probe.call(x, 2)]
    # the profile saw three values: the first graph already feeds step, and serves every call
    total = check(f, calls, min_graph_calls=len(calls) - PROFILE)
    final, = probe.explains
    assert total["conversions"] <= 2, (
        "the profile saw three values of step, so the first graph feeds it: at most one more conversion, not one per "
        f"value of step: {total}"
    )
    assert re.search(r"argument step is an? int \(fed to the graph\)", graph_sections(final)[0]), final
    assert total["assertion_failures"] == 0, total


def test_float_attribute_changing_every_call_is_fed():
    def make(jit):
        class Opt:
            def __init__(self):
                self.lr = 0.5
                self.w = tf.Variable([1.0, -2.0, 3.0])

            @jit
            def step(self, g):
                self.w.assign_sub(self.lr * g)
                return tf.reduce_sum(self.w) * self.lr

        o = Opt()
        return SimpleNamespace(fn=o.step, o=o, state=lambda: {"w": o.w, "lr": o.lr})

    def with_lr(lr, g, probe=None):
        def run(p):
            p.o.lr = lr
            return probe.call(g)(p) if probe is not None else p.fn(g)
        return run

    probe = Probe()
    G = [rnd((3,), i) for i in range(14)]
    calls = [with_lr(0.5 / (i + 1), G[i]) for i in range(13)] + [with_lr(0.01, G[13], probe)]
    # the first graph may pin lr (a guard miss), the next one feeds it: one eager call at most
    total = check(make, calls, min_graph_calls=len(calls) - PROFILE - 1)
    final, = probe.explains
    assert total["conversions"] <= 2, (
        f"the first graph may pin lr (a guard miss), the next one feeds it: not one conversion per value of lr: {total}"
    )
    assert "fed" in final and "lr" in final, final


def test_bool_flag_flipping_is_specialized_per_value():
    @case
    def f(x, training):
        h = x * 2.0
        if training:
            h = h * 0.5 + tf.reduce_mean(h)
        return h, not training

    probe = Probe()
    X = [rnd((3,), i) for i in range(14)]
    calls = [(X[i], i % 2 == 0) for i in range(13)] + [probe.call(X[13], False)]
    total = check(f, calls, min_graph_calls=len(calls) - PROFILE - 2)
    final, = probe.explains
    assert total["conversions"] == 2 and total["cache_entries"] == 2, total
    sections = graph_sections(final)
    assert any("argument training is True" in s for s in sections), final
    assert any("argument training is False" in s for s in sections), final
    assert "fed to the graph" not in final, final


# =========================================================================================
# 6. all-or-nothing: an assumption that fails LATE leaves every piece of state untouched
# =========================================================================================
LATE_SRC = """
import tensorflow as tf

HIST = []

class Model:
    def __init__(self):
        self.v = tf.Variable([0.5, -0.25, 1.0])
        self.count = 0
        self.history = []
        self.d = {"k": tf.constant(0.0), "n": 0}

    @jit
    def step(self, x):
        loss = tf.reduce_sum(self.v * x)          # read before the write
        self.v.assign_add(x)
        self.count += 1
        self.history.append(loss)
        self.d["k"] = loss * 2.0
        self.d["n"] = self.d["n"] + 1
        HIST.append(self.count)
        print("step", self.count, "loss", loss)
        if loss > 0.0:                             # one-sided while profiling
            out = tf.sqrt(loss)
        else:
            out = -loss
        return out
"""


def _late_program(jit, offset=0):
    # ``offset``: blank lines before the program, so each test's copy of it has its own code
    # objects (see test_identical_functions_in_two_files_are_each_speculated)
    mod = fresh_module("\n" * offset + LATE_SRC, jit=jit)
    m = mod.Model()

    def state():
        return {"v": m.v, "count": m.count, "history": list(m.history), "d": dict(m.d),
                "HIST": list(mod.HIST)}

    return SimpleNamespace(fn=m.step, m=m, mod=mod, state=state)


def _late_inputs():
    # v starts at [0.5, -0.25, 1.0] and grows by x each call; positive x keep loss > 0
    good = [pos((3,), i, 0.1, 0.3) for i in range(ESTABLISH + 5)]
    bad = [tf.constant([-30.0, -30.0, -30.0]), tf.constant([-40.0, 10.0, -50.0])]
    return good, bad


# ``self.count`` and ``self.d["n"]`` change every call: the first graphs pin them and miss
# until both are fed (Janus learns one varying scalar per guard miss), so the program is
# established over ESTABLISH calls, the last ones all on one graph.
ESTABLISH = 10


def test_late_assumption_failure_leaves_all_state_as_eager():
    probe = Probe()
    good, bad = _late_inputs()
    calls = [(good[i],) for i in range(ESTABLISH - 2)] \
        + [probe.after(good[ESTABLISH - 2]), probe.after(good[ESTABLISH - 1])] \
        + [probe.call(bad[0])] + [probe.after(good[ESTABLISH])] \
        + [(good[i],) for i in range(ESTABLISH + 1, ESTABLISH + 3)] \
        + [(bad[1],), (good[ESTABLISH + 3],), probe.call(good[ESTABLISH + 4])]
    total = check(_late_program, calls, min_graph_calls=3 + 5)
    before, final = probe.explains
    almost, established, at_break, after_break = probe.stats[:4]
    assert established["graph_calls"] >= 3, (
        "self.count and self.d['n'] are fed after a guard miss each: by the end of the 10 establishing calls the last "
        f"ones run one graph: {probe.stats}"
    )
    # the last establishing call ran as a graph: the breaking call meets that graph
    assert established["graph_calls"] == almost["graph_calls"] + 1, probe.stats
    assert established["conversions"] == almost["conversions"], probe.stats
    assert at_break == established, probe.stats
    assert_speculative(before, "branch at", "`(loss > 0.0)`", "assumed True")
    assert at_break["assertion_failures"] == 0 and after_break["assertion_failures"] == 1, probe.stats
    # the breaking call was not a graph call; the one after it was (re-converted, tf.cond)
    assert after_break["graph_calls"] == at_break["graph_calls"] + 1, probe.stats
    assert total["assertion_failures"] == 1 and total["assumptions_failed"] >= 1, total
    assert total["graph_calls"] - after_break["graph_calls"] == 5, total   # every call after the break
    assert_given_up(final, "`(loss > 0.0)`", "failed 1")


def _snapshot(p):
    return {"v": p.m.v.numpy().copy(), "count": p.m.count, "history": [h.numpy() for h in p.m.history],
            "d": {"k": p.m.d["k"].numpy(), "n": p.m.d["n"]}, "HIST": list(p.mod.HIST)}


def _call_capturing(p, x):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = p.fn(x)
    return result, out.getvalue()


def test_late_assumption_failure_applies_the_call_exactly_once():
    """Plain test: on the breaking call the graph aborts (once), and the state afterwards is
    what ONE eager call produces: the assign_add, count, appends and print happened once."""
    janus.reset()
    good, bad = _late_inputs()
    eager, jan = _late_program(lambda f: f, 1), _late_program(janus.function, 1)
    for x in good[:ESTABLISH]:
        re_, oe = _call_capturing(eager, x)
        rj, oj = _call_capturing(jan, x)
        assert oe == oj
        assert_same(re_, rj, "establishing result")
    s = janus.stats(jan.fn)
    assert s["graph_calls"] >= 3 and s["assertion_failures"] == 0, s
    assert_speculative(Seen.of(janus.explain(jan.fn)), "`(loss > 0.0)`", "assumed True")
    established = s["graph_calls"]

    before = _snapshot(jan)
    assert_same(_snapshot(eager), before, "state before the breaking call")
    re_, oe = _call_capturing(eager, bad[0])
    rj, oj = _call_capturing(jan, bad[0])
    s = janus.stats(jan.fn)
    assert s["assertion_failures"] == 1 and s["assumptions_failed"] == 1, s
    assert s["graph_calls"] == established, s            # the aborted run is not a graph call
    assert_same(re_, rj, "breaking call result")
    assert oj == oe and oj.count("step ") == 1, (oe, oj)   # printed once, not twice
    after = _snapshot(jan)
    assert_same(_snapshot(eager), after, "state after the breaking call")
    # exactly once, spelled out
    np.testing.assert_allclose(after["v"], before["v"] + bad[0].numpy(), rtol=1e-6)
    assert after["count"] == before["count"] + 1
    assert len(after["history"]) == len(before["history"]) + 1
    assert after["d"]["n"] == before["d"]["n"] + 1
    assert after["HIST"] == before["HIST"] + [before["count"] + 1]

    # and the re-converted graph (branch now a tf.cond) keeps matching eager
    for x in [good[ESTABLISH], bad[1], good[ESTABLISH + 1], good[ESTABLISH + 2]]:
        re_, oe = _call_capturing(eager, x)
        rj, oj = _call_capturing(jan, x)
        assert oe == oj
        assert_same(re_, rj, "result after the break")
        assert_same(_snapshot(eager), _snapshot(jan), "state after the break")
    s = janus.stats(jan.fn)
    assert s["graph_calls"] == established + 4 and s["assertion_failures"] == 1, s


# =========================================================================================
# 7. repeated failure: a site that failed once stays dynamic
# =========================================================================================
def test_branch_flipping_every_other_call_after_first_failure_stays_dynamic():
    @case
    def f(x):
        if tf.reduce_mean(x) > 0.0:
            y = tf.exp(-x)
        else:
            y = x * x
        return y

    probe = Probe()
    P = [pos((4,), i) for i in range(20)]
    N = [-pos((4,), 100 + i) for i in range(10)]
    calls = [(P[i],) for i in range(6)]                        # one-sided: speculated
    for i in range(8):                                         # then it flips every other call
        calls += [(N[i],), (P[6 + i],)]
    calls.append(probe.call(N[9]))
    total = check(f, calls, min_graph_calls=len(calls) - PROFILE - 1)
    final, = probe.explains
    assert total["assertion_failures"] == 1 and total["assumptions_failed"] == 1, total
    assert total["conversions"] <= 3, (
        "one conversion after the 3 profiled calls (one-sided branch speculated), one after the first flip fails it "
        f"(the branch then stays a tf.cond), at most one more: not one per flip: {total}"
    )
    assert total["eager_calls"] == PROFILE + 1, total
    assert_given_up(final, "`(tf.reduce_mean(x) > 0.0)`", "failed 1")
    assert "assumptions:" not in "\n".join(graph_sections(final)), final


def test_loop_count_alternating_after_first_failure_stays_dynamic():
    @case
    def f(x):
        n = tf.constant(0)
        while tf.reduce_max(x) > 1.0:
            x = x * 0.5
            n = n + 1
        return x, n

    probe = Probe()
    S = [pos((3,), i, 2.1, 3.9) for i in range(20)]            # 2 halvings
    L = [pos((3,), 50 + i, 20.0, 30.0) for i in range(10)]     # 5 halvings
    calls = [(S[i],) for i in range(6)]
    for i in range(6):
        calls += [(L[i],), (S[6 + i],)]
    calls.append(probe.call(L[9]))
    total = check(f, calls, min_graph_calls=len(calls) - PROFILE - 1)
    final, = probe.explains
    assert total["assertion_failures"] == 1 and total["assumptions_failed"] == 1, total
    assert total["conversions"] <= 3, (
        "one conversion after the 3 profiled calls (2 iterations speculated), one after the first longer loop fails it"
        f" (the loop then stays dynamic), at most one more: not one per alternation: {total}"
    )
    assert_given_up(final, "loop at", "assumed 2 iterations", "failed 1")


def test_failed_assumption_is_dropped_from_every_cached_graph():
    """Two graphs (one per value of a Python flag) share the speculation on a tensor branch.
    When it fails in one of them, the site is banned for the function: the other graph must
    not run (and fail) on the same assumption again, and explain lists it as given up."""
    @case
    def f(x, training):
        h = x * 2.0
        if training:
            h = h * 0.5
        if tf.reduce_sum(x) > 0:
            h = h + 1.0
        else:
            h = h - 1.0
        return h

    probe = Probe()
    P = [pos((3,), i) for i in range(12)]
    N = [-pos((3,), 40 + i) for i in range(4)]
    calls = [(P[i], i % 2 == 0) for i in range(8)]           # both flag graphs, branch assumed True
    calls += [(N[0], True), (N[1], False), (N[2], True), (N[3], False), (P[8], True), (P[9], False),
              probe.call(P[10], True)]
    total = check(f, calls, min_graph_calls=4)
    final, = probe.explains
    assert total["assumptions_failed"] == 1 and total["assertion_failures"] == 1, total
    assert_given_up(final, "`(tf.reduce_sum(x) > 0)`", "assumed True")
    assert "assumptions:" not in "\n".join(graph_sections(final)), final


# =========================================================================================
# 8. speculate=False: the conservative conversion
# =========================================================================================
def test_speculate_false_converts_without_assumptions():
    def make(jit):
        if jit is janus.function:
            jit = functools.partial(janus.function, speculate=False)

        @jit
        def f(x, n):
            s = tf.constant(0.0)
            for i in range(n):
                s = s + tf.reduce_sum(x) * tf.cast(i, tf.float32)
            y = x * 2.0 if tf.reduce_sum(x) > 0 else -x
            while tf.reduce_max(y) > 1.0:
                y = y * 0.5
            return y, s

        return SimpleNamespace(fn=f)

    probe = Probe()
    four = tf.constant(4)
    P = [pos((3,), i) for i in range(10)]
    calls = [(P[i], four) for i in range(6)] + [probe.call(P[6], four)] \
        + [(-P[7], tf.constant(7)), (P[8] * 10.0, four), probe.call(P[9], tf.constant(0))]
    total = check(make, calls, graph_calls=len(calls) - PROFILE)
    before, final = probe.explains
    for text in (before, final):
        # (the graph may hold non-speculative assertions, e.g. an int64 -> int32 range check)
        assert "assumptions:" not in text and "assumptions given up" not in text, text
        assert "assumed" not in text, text
    assert total["conversions"] == 1 and total["assertion_failures"] == 0, total
    assert total["assumptions_failed"] == 0, total


def test_speculate_false_versus_true_same_program():
    """The same program and calls, speculative: the first graph has assumptions (and one
    fails on the flipped call); both versions match eager at every call."""
    @case
    def f(x, n):
        s = tf.constant(0.0)
        for i in range(n):
            s = s + tf.reduce_sum(x) * tf.cast(i, tf.float32)
        y = x * 2.0 if tf.reduce_sum(x) > 0 else -x
        return y, s

    probe = Probe()
    four = tf.constant(4)
    P = [pos((3,), i) for i in range(10)]
    calls = [(P[i], four) for i in range(6)] + [probe.call(P[6], four)] \
        + [(-P[7], four), (P[8], four), (P[9], four)]
    total = check(f, calls, min_graph_calls=(7 - PROFILE) + 2)
    before, = probe.explains
    assert_speculative(before, "loop at", "range(n)", "assumed 4 iterations")
    assert_speculative(before, "branch at", "tf.reduce_sum(x) > 0", "assumed True")
    assert total["assertion_failures"] == 1, total


# =========================================================================================
# the converter's cache must not mix up identical functions from different files
# =========================================================================================
TWIN_SRC = """
import tensorflow as tf

@jit
def f(x):
    if tf.reduce_sum(x) > 0:
        return x * 2.0
    return -x
"""


def test_identical_functions_in_two_files_are_each_speculated():
    """Two modules with the same source (two copies of a script, a module reloaded from
    another path): each function's branch is profiled one-sided and must be speculated,
    and its assumption must name its own file."""
    x = tf.ones((2,))
    texts = []
    for _ in range(2):
        mod = fresh_module(TWIN_SRC, jit=janus.function)
        for _ in range(5):
            mod.f(x)
        text = Seen.of(janus.explain(mod.f))
        assert janus.stats(mod.f)["graph_calls"] == 5 - PROFILE, text
        assert_speculative(text, "branch at", os.path.basename(mod.__file__), "assumed True")
        texts.append(text)


# =========================================================================================
# more: effects inside speculated code, raising sides, nesting, early exits
# =========================================================================================
def test_effects_inside_the_speculated_side_and_the_other_side():
    """The assumed side writes a variable, appends and prints; the other side does other
    writes.  On the flip, nothing of the assumed side may leak; afterwards (tf.cond) each
    call commits exactly the side that ran."""
    def make(jit):
        class M:
            def __init__(self):
                self.v = tf.Variable([1.0, 2.0])
                self.log = []
                self.neg = 0

            @jit
            def step(self, x):
                s = tf.reduce_sum(x)
                if s > 0:
                    self.v.assign_add(x)
                    self.log.append(s)
                    print("pos", s)
                else:
                    self.v.assign_sub(x * 0.5)
                    self.log.append(-s * 10.0)
                    print("neg")
                return self.v * 1.0

        # (no Python attribute write inside the branch: once the site is dynamic that is a
        # documented conversion gap, and the point here is the speculation)
        m = M()
        return SimpleNamespace(fn=m.step, state=lambda: {"v": m.v, "log": list(m.log)})

    P = [pos((2,), i) for i in range(12)]
    N = [-pos((2,), 30 + i) for i in range(4)]
    calls = [(P[i],) for i in range(6)] + [(N[0],), (P[6],), (P[7],), (N[1],), (N[2],), (P[8],), (N[3],)]
    total = check(make, calls, min_graph_calls=(6 - PROFILE) + 5)
    assert total["assertion_failures"] == 1, total


def test_flip_to_a_side_that_raises():
    """Speculated: the raising side is never taken.  On the flip eager raises; Janus must raise
    the same error with every piece of state untouched, then keep working."""
    def make(jit):
        class M:
            def __init__(self):
                self.v = tf.Variable(0.0)
                self.seen = []

            @jit
            def step(self, x):
                self.v.assign_add(tf.reduce_sum(x))
                self.seen.append(x)
                if tf.reduce_min(x) < 0.0:
                    raise ValueError("negative input")
                return tf.sqrt(x)

        m = M()
        return SimpleNamespace(fn=m.step, state=lambda: {"v": m.v, "seen": list(m.seen)})

    P = [pos((3,), i) for i in range(10)]
    bad = tf.constant([1.0, -1.0, 2.0])
    calls = [(P[i],) for i in range(6)] + [(bad,), (P[6],), (P[7],), (bad,), (P[8],)]
    total = check(make, calls, min_graph_calls=(6 - PROFILE) + 2)
    assert total["assertion_failures"] >= 1, total


def test_return_inside_speculated_branch():
    @case
    def f(x):
        m = tf.reduce_max(x)
        if m > 10.0:
            return x / m, tf.constant(1)
        y = x * 2.0
        if tf.reduce_min(y) < -100.0:
            return -y, tf.constant(2)
        return y + 1.0, tf.constant(3)

    X = [rnd((4,), i) for i in range(12)]
    calls = [(X[i],) for i in range(6)] + [(tf.constant([20.0, 1.0, 2.0, 3.0]),), (X[6],),
                                           (tf.constant([-80.0, 1.0, 2.0, 3.0]),), (X[7],), (X[8],),
                                           (tf.constant([20.0, 1.0, 2.0, -300.0]),), (X[9],)]
    total = check(f, calls, min_graph_calls=(6 - PROFILE) + 4)
    assert total["assertion_failures"] >= 1, total
    assert total["conversions"] <= 4, (
        "one conversion after the 3 profiled calls, one after each speculated early return fails (20.0, then -80.0), "
        f"at most one more: not one per breaking call: {total}"
    )


def test_branch_nested_in_speculated_while_loop():
    @case
    def f(x):
        steps = 0
        while tf.reduce_max(tf.abs(x)) > 1.0:
            if tf.reduce_sum(x) > 0:
                x = x * 0.5
            else:
                x = x * 0.25
            steps += 1
        return x, steps

    probe = Probe()
    S = [pos((3,), i, 4.1, 7.9) for i in range(12)]          # 3 iterations, always the first side
    calls = [(S[i],) for i in range(6)] + [probe.call(-S[6])] + [(S[i],) for i in range(7, 10)] \
        + [(-S[10],), (S[11] * 10.0,), probe.call(S[0])]
    total = check(f, calls, min_graph_calls=(6 - PROFILE) + 4)
    before, final = probe.explains
    assert_speculative(before, "loop at", "assumed 3 iterations")
    assert_speculative(before, "branch at", "tf.reduce_sum(x) > 0", "assumed True")
    assert total["assertion_failures"] >= 1, total
    assert total["conversions"] <= 4, (
        "one conversion after the 3 profiled calls, then one after each failed assumption (branch side, loop count) of"
        f" the breaking calls: at most 4, not one per breaking call: {total}"
    )


def test_unrolled_for_with_break_then_count_changes():
    @case
    def f(xs, limit):
        total = tf.zeros((2,))
        k = 0
        for row in xs:
            if tf.reduce_sum(total) > limit:
                break
            total = total + row
            k += 1
        return total, k

    X = [pos((5, 2), i) for i in range(12)]
    lim = tf.constant(100.0)
    calls = [(X[i], lim) for i in range(6)] + [(X[6], tf.constant(1.0)), (X[7], lim), (X[8], lim),
                                                (X[9], tf.constant(2.0)), (X[10], lim)]
    check(f, calls, min_graph_calls=(6 - PROFILE) + 3)


def test_late_loop_assumption_failure_after_state_writes():
    """The failing assumption is a loop count, checked after variable writes, appends and a
    print in program order."""
    def make(jit):
        class M:
            def __init__(self):
                self.v = tf.Variable(1.0)
                self.trace = []

            @jit
            def step(self, x):
                self.v.assign_add(tf.reduce_mean(x))
                self.trace.append(tf.reduce_mean(x))
                print("mean", tf.reduce_mean(x))
                y = x
                while tf.reduce_max(y) > 1.0:
                    y = y * 0.5
                return y

        m = M()
        return SimpleNamespace(fn=m.step, state=lambda: {"v": m.v, "trace": list(m.trace)})

    S = [pos((3,), i, 2.1, 3.9) for i in range(12)]
    calls = [(S[i],) for i in range(6)] + [(S[6] * 10.0,), (S[7],), (S[8],), (S[9] * 10.0,), (S[10],)]
    total = check(make, calls, min_graph_calls=(6 - PROFILE) + 3)
    assert total["assertion_failures"] == 1, total


def test_dynamic_branch_with_variable_write_writes_once():
    """Once a branch is dynamic (here: both sides seen while profiling), a variable write
    inside a tf.cond side must happen once per call, also when the sides differ in a Python
    int (a second trace of the cond reconciles them)."""
    def make(jit):
        class M:
            def __init__(self):
                self.v = tf.Variable([0.0, 0.0])

            @jit
            def step(self, x):
                if tf.reduce_sum(x) > 0:
                    self.v.assign_add(x)
                    k = 1
                else:
                    self.v.assign_sub(x)
                    k = 2
                return self.v * 1.0, k

        m = M()
        return SimpleNamespace(fn=m.step, state=lambda: {"v": m.v})

    P, N = tf.ones((2,)), -tf.ones((2,))
    calls = [(P,), (N,), (P,), (P,), (P,), (N,), (P,)]
    check(make, calls, graph_calls=len(calls) - PROFILE)


def test_heap_tensor_shape_is_relaxed_after_it_changes():
    """A tensor read from Python state (an RNN state whose batch size changes) is relaxed like
    an argument: after (4, 3) and (2, 3), one graph serves (5, 3), (1, 3), ..."""
    def make(jit):
        class RNN:
            def __init__(self):
                self.w = tf.Variable(tf.eye(3) * 0.5)
                self.state = tf.zeros((4, 3))

            @jit
            def step(self, x):
                h = tf.tanh(tf.matmul(self.state, self.w) + x)
                self.state = h
                return tf.reduce_sum(h)

        r = RNN()
        return SimpleNamespace(fn=r.step, r=r, janus_fns=[RNN.__dict__["step"]],
                               state=lambda: {"state": r.state, "w": r.w})

    def batch(n, seed):
        def call(p):
            if p.r.state.shape[0] != n:
                p.r.state = tf.zeros((n, 3))
            return p.fn(rnd((n, 3), seed))
        return call

    sizes = [4, 4, 4, 4, 4, 2, 2, 2, 5, 1, 3, 4, 6]
    total = check(make, [batch(n, i) for i, n in enumerate(sizes)])
    assert total["conversions"] <= 2, (
        "after (4, 3) and (2, 3) the heap tensor's shape is relaxed: one conversion after profiling, one when the "
        f"batch size first changes, then one graph serves every size: {total}"
    )
    assert total["graph_calls"] >= len(sizes) - PROFILE - 3, (
        "beyond the 3 profiled calls at most 3 run eagerly: the batch-size change at (2, 3) may miss, then one "
        f"relaxed graph serves every size: {total}"
    )
