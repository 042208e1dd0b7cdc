"""The pages of the codes of calls run eagerly and functions given up on (JB050 on): what
each means, a small program that gives it, the fix and the knob (``docs/breaks.md``)."""
from __future__ import annotations

from janus.reporting.codes import ALLOW, EAGER_SEMANTICS, NO_KNOB, STRICT, Code, Entry, Kind, page

FALLBACKS: tuple[Entry, ...] = (
    page(Code.BUDGET, Kind.GIVE_UP, "conversion budget used",
         "The function used its conversions (misses and failed traces): it runs eagerly from now on.",
         "Pass a value that changes at every call as a tensor.", ALLOW, None,
         "needs `config.LIMITS.max_conversions` failing conversions; tests/test_policy.py covers it"),
    page(Code.NEVER_REUSED, Kind.GIVE_UP, "graphs never reused",
         "The last graphs each served only the call that built them (a value they specialize on changes at every "
         "call): the function runs eagerly from now on.",
         "Pass the changing value as a tensor (a string or object: keep it out of the step).", ALLOW, """
@janus.function
def f(x, s):
    return x * float(len(s))
for i in range(14): f(tf.ones(2), "a" * i)
"""),
    page(Code.FAILED_TWICE, Kind.GIVE_UP, "conversion failed twice the same way",
         "Two conversions failed alike where no graph break could be made: the function runs eagerly from now on.",
         "See the failure's own code in `janus.explain(f)`.", ALLOW, """
@janus.function(strict=False)
def f(x, n):
    return tf.reshape(x, (n,))
for _ in range(8):
    try: f(tf.ones(2), 3)
    except Exception: pass
"""),
    page(Code.ALWAYS_ABORTS, Kind.GIVE_UP, "graph failed on each of its runs",
         "A graph's op failed at every run while eager succeeded: the graph, not the input, is wrong; the function "
         "runs eagerly.", "Report it (a bug in Janus or TensorFlow); `janus.do_not_convert` meanwhile.", ALLOW, None,
         "needs a graph TensorFlow cannot run; tests/test_budget_bugs.py covers it"),
    page(Code.TOO_MANY_BREAKS, Kind.GIVE_UP, "too many graph breaks",
         "More than 8 graph breaks in a function and its segments: it runs eagerly as a whole.",
         "Fix the breaks `janus.explain(f)` lists (each has its own code).", ALLOW, """
@janus.function
def f(x):
    a = x.numpy().sum(); x = x * a
    b = x.numpy().sum(); x = x * b
    c = x.numpy().sum(); x = x * c
    d = x.numpy().sum(); x = x * d
    e = x.numpy().sum(); x = x * e
    g = x.numpy().sum(); x = x * g
    h = x.numpy().sum(); x = x * h
    i = x.numpy().sum(); x = x * i
    j = x.numpy().sum(); x = x * j
    return x
for _ in range(40): f(tf.ones(2))
"""),
    page(Code.UNSPLITTABLE, Kind.BREAK, "cannot split at a graph break",
         "A statement could not run in a graph but the function cannot be split there (strict mode, a multi-worker "
         "step, a break inside a loop body Janus cannot cut): the call runs eagerly.",
         "Move the statement out of the construct, or into a function of its own.", STRICT, None,
         "depends on the function's shape; tests/test_graph_breaks.py covers it"),
    page(Code.NO_PAYBACK, Kind.GIVE_UP, "conversions cost more than they saved",
         "Over the whole run so far, the function's conversions (failed traces included) cost more than its graphs "
         "saved: its time is more than 10% over eager's estimate, by more than one conversion, after three "
         "conversions, and the next would be made like the last ones. It stops converting and runs eagerly, "
         "unprofiled (graphs that were reused stay unless slower than eager). `janus.explain(f)` shows the seconds.",
         "Pass values that change between calls as tensors, so that one graph serves them.",
         "`config.LIMITS.whole_run_slack` (None: off)", None,
         "depends on measured time; tests/test_whole_run.py forces it with a fake clock"),
    page(Code.TOO_SHORT, Kind.GIVE_UP, "eager runs too short to pay for a graph",
         "The function's (or segment's) eager runs take less than 0.05 ms: a graph call alone costs about as much, "
         "so no graph of it could pay back its conversion. It stops converting (its graphs dropped) and runs as "
         "written, unprofiled.",
         "Nothing to do: it is already as fast as it gets; put more work in one call to make a graph worth it.",
         "`config.LIMITS.shortest_run_ms` (None: off)", None,
         "depends on measured time; tests/test_whole_run.py forces it with a fake clock"),
    page(Code.RESTARTS, Kind.EAGER, "trace kept restarting",
         "The trace restarted more than its bound (each time learning what to feed or check): the call runs eagerly.",
         "Report it with `janus.explain(f)`.", NO_KNOB, None, "a bound that tests reach by monkeypatching"),
    page(Code.JANUS_BUG, Kind.EAGER, "failure inside Janus",
         "Janus itself failed converting or checking: the call runs eagerly and correctly.",
         "Report it, with `janus.explain(f)`.", ALLOW, None, "a bug has no example"),
    page(Code.RAISES_AS_EAGER, Kind.EAGER, "the call raises, as eager does",
         "The trace raised the user's own exception; eager raised it too: such calls run eagerly (and raise), the "
         "graphs stay for the others.", EAGER_SEMANTICS, NO_KNOB, """
@janus.function
def f(x):
    if x.shape[0] > 2: raise ValueError("too long")
    return x * 2.0
for n in (2, 2, 2, 3, 3, 3, 3):
    try: f(tf.ones(n))
    except ValueError: pass
"""),
    page(Code.GUARD_MISS, Kind.EAGER, "no cached graph's guards held",
         "The call differed from every cached graph's assumptions (a Python value, a shape, a type): it ran eagerly, "
         "profiled, and a new graph may follow.", "Pass values that change as tensors.", NO_KNOB, """
@janus.function
def f(x, flag):
    return x * 2.0 if flag else x
for i in range(8): f(tf.ones(2), i > 4)
"""),
    page(Code.ASSUMPTION_FAILED, Kind.EAGER, "an assumption failed in the graph",
         "A speculation (a branch that always went one way, a loop's trip count) failed while the graph ran: nothing "
         "was committed, the call re-ran eagerly, and the next graph no longer assumes it.", EAGER_SEMANTICS,
         "`speculate=False` assumes nothing", """
@janus.function
def f(x):
    if tf.reduce_sum(x) > 0: return x
    return -x
for v in (1, 1, 1, 1, 1, -1): f(tf.fill([2], float(v)))
"""),
    page(Code.RUN_ABORTED, Kind.EAGER, "a graph run aborted",
         "The user's `assert`, an op (a bad index, a NaN check) or a taken raising side failed in the graph: nothing "
         "was committed and the call re-ran eagerly (the graph stays).", EAGER_SEMANTICS, NO_KNOB, """
@janus.function
def f(x):
    assert tf.reduce_sum(x) > 0
    return x * 2.0
for v in (1, 1, 1, 1, 1, -1):
    try: f(tf.fill([2], float(v)))
    except AssertionError: pass
"""),
    page(Code.IN_REPLICA, Kind.EAGER, "called inside strategy.run",
         "Inside a replica context the function runs as written: the strategy traces it itself.", EAGER_SEMANTICS,
         NO_KNOB, None, "needs a tf.distribute strategy; tests/test_distribute.py covers it"),
    page(Code.BUSY, Kind.EAGER, "another thread was converting",
         "Another thread was profiling or converting the function: this call ran as written rather than wait.",
         EAGER_SEMANTICS, NO_KNOB, None, "needs two threads racing; tests/test_threads_signals.py covers it"),
    page(Code.OTHER_WORKER, Kind.EAGER, "another worker could not run a graph",
         "Workers of a multi-worker strategy take one path: one could not run a graph, so every worker ran eagerly.",
         EAGER_SEMANTICS, NO_KNOB, None, "needs a multi-worker cluster"),
    page(Code.REPLANNED, Kind.NOTE, "retraced with a revised plan",
         "A trace learned what not to assume (a NumPy array read as NumPy, a value Python needs, a check after a "
         "state update) and traced again; nothing ran differently.", EAGER_SEMANTICS, NO_KNOB, """
A = np.ones(2)
@janus.function
def f(x):
    return x * float(A.sum())
for _ in range(6): f(tf.ones(2))
"""),
    page(Code.SEGMENT_TRIAL, Kind.NOTE, "a graph segment's trial against eager",
         "A graph segment was timed as a graph and as written; it stays a graph only if faster (whole calls decide "
         "under a tape). 'runs as written' means eager was faster.", EAGER_SEMANTICS, NO_KNOB, """
@janus.function
def f(x):
    y = x * 2.0
    s = np.sum(y.numpy())
    return y * s
for _ in range(30): f(tf.ones(2))
"""),
    page(Code.DISABLED, Kind.EAGER, "Janus is disabled",
         "`JANUS_DISABLE=1`: every function runs plainly.", "Unset `JANUS_DISABLE`.", "`JANUS_DISABLE`", None,
         "needs the process started with JANUS_DISABLE=1; tests/test_introspection_rules.py covers it"),
    page(Code.NOT_RUN, Kind.EAGER, "Janus has not run it",
         "The function is not decorated, not taken over by `janus.enable()`/`python -m janus`, or not called since.",
         "Decorate it with `@janus.function`, or record a tape in it under `janus.enable()`.", "`janus.function`",
         None, "the absence of a run has no example; tests/test_introspection_rules.py covers it"),
)
