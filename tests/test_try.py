"""``try`` statements: ``finally`` and ``except`` run in Python while tracing, as eager runs them."""
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

from harness import check


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
    assert stats["conversions"] <= 3, stats


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
    def make(jit):
        @jit
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

        return SimpleNamespace(fn=f)

    calls = [([rnd((2,), i + k) for k in range(4)], i % 5) for i in range(10)]
    check(make, calls, min_graph_calls=3)


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
