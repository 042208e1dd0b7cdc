"""``try`` statements: ``finally`` and ``except`` run in Python while tracing, as eager runs them."""
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

from harness import case, check


def rnd(shape, seed):
    return tf.constant(np.random.RandomState(seed).randn(*shape).astype(np.float32))


def test_finally_runs_after_a_return_and_commits_its_writes():
    def make(jit):
        log = []

        class Step:
            def __init__(self):
                self.calls = 0

            @jit
            def run(self, x, clip):
                try:
                    if clip:
                        return tf.clip_by_value(x, -1.0, 1.0)
                    y = x * 2.0
                finally:
                    self.calls += 1
                    log.append(self.calls)
                return y + 1.0

        s = Step()
        return SimpleNamespace(fn=s.run, state=lambda: {"calls": s.calls, "log": list(log)})

    calls = [(rnd((3,), i), i % 3 == 0) for i in range(12)]
    stats = check(make, calls, min_graph_calls=6)
    assert stats["conversions"] <= 3, (
        "clip is a Python bool read by the trace: a graph for True and one for False, at most one more, not one per "
        f"call: {stats}"
    )


def test_except_catches_python_errors_of_the_trace():
    """A missing dict key and the user's own raise, on values the graph is specialized to."""
    def make(jit):
        scales = {"a": 2.0, "b": 0.5}

        @jit
        def f(x, name, limit):
            try:
                s = scales[name]
            except KeyError:
                s = 1.0
            try:
                if limit < 0:
                    raise ValueError(f"negative limit {limit}")
                out = tf.minimum(x * s, float(limit))
            except ValueError as e:
                out = x * 0.0
                print("recovered:", e)
            else:
                out = out + 1.0
            return out

        return SimpleNamespace(fn=f)

    args = [("a", 3), ("c", 3), ("a", -1), ("b", 3), ("a", 3), ("c", 3), ("a", -1), ("b", 3), ("a", 3), ("c", 3)]
    calls = [(rnd((2,), i), n, k) for i, (n, k) in enumerate(args)]
    check(make, calls, min_graph_calls=4)


def test_break_inside_try_inside_a_loop_with_finally():
    @case
    def f(xs, stop):
        total = tf.zeros([2])
        seen = 0
        for i, x in enumerate(xs):
            try:
                if i == stop:
                    break
                total += x
            finally:
                seen += 1
        return total, seen

    calls = [([rnd((2,), i + k) for k in range(4)], i % 5) for i in range(10)]
    check(f, calls, min_graph_calls=3)


def test_errors_of_graph_construction_and_of_graph_runs_are_eager_errors():
    """A shape error TF raises while building the graph, and an error a graph op raises while
    running: eager catches them at run time; Janus must not catch the trace-time one."""
    def make(jit):
        w = tf.ones([3, 2])

        @jit
        def f(x):
            try:
                y = tf.matmul(x, w)
            except (ValueError, tf.errors.InvalidArgumentError) as e:
                y = tf.zeros([1, 2])
                print("matmul failed:", type(e).__name__)
            try:
                tf.debugging.assert_positive(tf.reduce_sum(y) + 100.0)
                y = y + 1.0
            except tf.errors.InvalidArgumentError:
                y = -y
            return y

        return SimpleNamespace(fn=f)

    good = [(rnd((2, 3), i),) for i in range(6)]
    bad = [(rnd((2, 4), i),) for i in range(3)]
    huge = [(rnd((2, 3), 9) * 1000.0,)]
    calls = good[:4] + bad[:1] + good[4:] + huge + bad[1:] + good[:2]
    check(make, calls, min_graph_calls=3, check_message=False)


def test_except_star_is_refused_before_converting():
    import gast

    from janus.convert import support

    source = "def f(x):\n    try:\n        y = x + 1\n    except* ValueError:\n        y = x\n    return y\n"
    assert support.unsupported_in(gast.parse(source).body[0]) == "try/except* (exception groups)"


# ------------------------------------------------------------------ what a block bound before it raised
def _items(n):
    for i in range(n):
        if i == 2:
            raise KeyError(i)
        yield i


def _check_index(i, limit):
    if i > limit:
        raise IndexError(i)
    return True


def test_what_a_block_bound_before_raising_reaches_the_handler():
    """``if``, ``for`` and ``while`` bodies run as block functions in converted code: the
    variables one rebinds before an exception leaves it are those the ``except`` and the
    ``finally`` of the same function see, as in eager (they were lost: janus.lowering.escapes)."""
    def make(jit):
        class Prog:
            def __init__(self):
                self.log = []
                self.k0 = 0

            @jit
            def f(self, x):
                acc, k = x * 0.0, self.k0
                try:  # a loop whose body raises at some iteration
                    for i in range(3):
                        k = k + 1
                        acc = acc + x
                        if k % 2 == 0:
                            last = acc * 2.0  # bound only in the block that raises
                            raise ValueError("even " + str(k))
                except ValueError as e:
                    self.log.append((str(e), k))
                    acc = acc + last
                try:  # an if inside a loop, the loop's iteration itself raising
                    total = 0
                    for v in _items(self.k0 + 2):
                        if v > 0:
                            total = total + v
                            acc = acc * 1.5
                except KeyError:
                    self.log.append(("items", total))
                i = 0
                try:  # a while loop whose test raises
                    while _check_index(i, 2):
                        i = i + 1
                        acc = acc - x
                except IndexError:
                    self.log.append(("while", i))
                try:
                    try:
                        if tf.reduce_sum(x) > 0.0:  # tensor-dependent, speculated
                            acc = acc + 10.0
                            if self.k0 == 1:
                                raise KeyError("one")
                    finally:
                        self.log.append(("finally", k, i))
                except KeyError:
                    acc = acc * -1.0
                return acc, k, total, i

        p = Prog()

        def call(x, k0):
            p.k0 = k0
            return p.f(x)

        return SimpleNamespace(fn=call, janus_fns=[p.f], state=lambda: {"log": list(p.log)})

    calls = [(rnd((2,), i), [0, 1, 2, 1][i % 4]) for i in range(12)]
    stats = check(make, calls, min_graph_calls=0)  # split at the generator: segments run graphs
    assert stats["breaks"] == 1 and stats["segment_graph_calls"] >= 12, stats


def test_a_loop_eager_leaves_by_a_raise_the_trace_assumes_away_is_not_unrolled_forever(monkeypatch):
    """``while check(i, limit)`` ends when ``check`` raises under a tensor condition (the
    limit is a tensor): the trace assumes it does not raise, so the loop never ends while
    tracing.  Past ``config.LIMITS.max_traced_iterations`` the conversion fails and the call
    runs eagerly (it hung)."""
    import dataclasses

    from janus import config

    monkeypatch.setattr(config, "LIMITS", dataclasses.replace(config.LIMITS, max_traced_iterations=40))

    def make(jit):
        class Prog:
            def __init__(self):
                self.log = []

            @jit
            def f(self, x, limit):
                i, acc = 0, x
                try:
                    while _check_index(i, limit):
                        i = i + 1
                        acc = acc * 1.5
                except IndexError:
                    self.log.append(i)
                return acc

        p = Prog()
        return SimpleNamespace(fn=p.f, state=lambda: {"log": list(p.log)})

    # a float limit: an integer one would be specialized by value (janus.trace.known_values)
    stats = check(make, [(rnd((2,), i), tf.constant(float(i % 5))) for i in range(10)], eager_only=True)
    assert stats["failed_conversions"] >= 1, (
        "the trace assumes _check_index never raises: past max_traced_iterations the conversion fails instead of "
        f"unrolling forever: {stats}"
    )
