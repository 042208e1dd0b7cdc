"""A variable that stays a Python number on some paths and becomes a tensor on others
(``total = 0`` then ``total += v`` after a ``break`` on a tensor test): one graph, and
the result is the number or the tensor, as eager's run went."""
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

from harness import case, check


def ints(values):
    return tf.constant(values, tf.int32)


def test_break_on_a_tensor_test_in_a_for_loop():
    @case
    def f(values):
        total = 0
        for v in values:
            if v % 2 > 0:
                break
            total += v
        return total

    rows = [[2, 4, 5, 6], [1, 2, 3, 4], [2, 2, 2, 2], [3, 4, 4, 4], [2, 4, 6, 7], [1, 1, 1, 1], [8, 4, 5, 6]]
    stats = check(f, [(ints(r),) for r in rows], min_graph_calls=4)
    assert stats["conversions"] == 1, stats


def test_break_in_a_tensor_while_loop():
    @case
    def f(x):
        s = 0
        while x > 0:
            x -= 1
            if x % 2 > 0:
                break
            s += x
        return s, x

    stats = check(f, [(tf.constant(n),) for n in [7, 4, 0, 6, 8, 1, 2, 10, 3]], min_graph_calls=6)
    assert stats["conversions"] == 1, stats


def test_continue_with_a_float_accumulator_and_state():
    def make(jit):
        class Stats:
            def __init__(self):
                self.last = None
                self.log = []

            @jit
            def add(self, values, floor):
                total = 0.0
                for v in values:
                    if v < floor:
                        continue
                    total += v
                self.last = total
                self.log.append(total)
                print("total:", total)
                return total

        s = Stats()
        return SimpleNamespace(fn=s.add, state=lambda: {"last": s.last, "log": list(s.log)})

    rng = np.random.RandomState(0)
    calls = [(tf.constant(rng.randn(3).astype(np.float32)), tf.constant(f)) for f in
             [0.0, 5.0, -5.0, 0.5, 5.0, 0.0, -1.0, 9.0]]
    check(make, calls, min_graph_calls=4)


def test_converging_loop_that_breaks_when_the_error_is_small():
    @case
    def solve(target, tol):
        x = tf.zeros([2])
        steps = 0
        for i in range(12):
            x = x + 0.5 * (target - x)
            err = tf.reduce_max(tf.abs(target - x))
            if err < tol:
                break
            steps = i
        return x, steps

    calls = [(tf.constant([1.0, -2.0]) * k, tf.constant(t)) for k, t in
             [(1, 0.1), (2, 0.01), (1, 10.0), (3, 0.001), (1, 0.1), (0, 0.5), (2, 1.0)]]
    check(solve, calls, min_graph_calls=4)


def test_isinstance_and_type_see_the_python_number_a_fed_value_stands_for():
    def make(jit):
        class Counter:
            def __init__(self):
                self.n = 0

            @jit
            def step(self, x):
                self.n += 1
                k = self.n
                if isinstance(k, int) and type(k) is int:
                    return x * 2.0
                return x

        c = Counter()
        return SimpleNamespace(fn=c.step, state=lambda: {"n": c.n})

    stats = check(make, [(tf.constant(float(i)),) for i in range(10)], min_graph_calls=5)
    assert stats["conversions"] <= 2, (
        "self.n changes every call: the first graph may pin it (a guard miss), the next one feeds it, not one "
        f"conversion per value: {stats}"
    )


def _path_dependent(jit):
    """``total`` is a Python int on one path and a tensor on another, then passed to
    TensorFlow (``fn``) or asked its type (``g``)."""
    @jit
    def f(values):
        total = 0
        for v in values:
            if v % 2 > 0:
                break
            total += v
        return tf.cast(total, tf.float32) + 1.0

    @jit
    def g(values):
        total = 0
        for v in values:
            if v % 2 > 0:
                break
            total += v
        return 1 if isinstance(total, int) else 2

    return SimpleNamespace(fn=f, g=g, janus_fns=[f, g])


def test_uses_that_depend_on_the_path_run_eagerly_and_match():
    """Eager's behaviour differs by path (a Python int or a tensor), so Janus does not
    convert it."""
    # floats: a small integer tensor would be specialized by value, its path then known
    # (the test below)
    rows = [[2.0, 4.0, 5.0, 6.0], [1.0, 2.0, 3.0, 4.0], [2.0, 2.0, 2.0, 2.0], [3.0, 4.0, 4.0, 4.0]]
    calls = [(tf.constant(r),) for r in rows] + [lambda p, r=r: p.g(tf.constant(r)) for r in rows]
    check(_path_dependent, calls, eager_only=True)


def test_a_number_or_a_tensor_by_path_is_known_once_small_integer_values_are():
    """With ``values`` a small integer tensor, specialized by value (``janus.trace.known_values``),
    the path is known while tracing: ``g`` converts, one graph per row, and answers as eager
    does."""
    rows = [[2, 4, 5, 6], [1, 2, 3, 4], [2, 2, 2, 2]]
    stats = check(_path_dependent, [lambda p, i=i: p.g(ints(rows[i % 3])) for i in range(12)], min_graph_calls=5)
    assert stats["breaks"] == 0, stats


def test_arithmetic_on_the_number_or_the_tensor_follows_the_path():
    """``total / count`` after a loop that may not add anything: Python arithmetic where
    ``total`` stayed a number (raising ZeroDivisionError when the loop never ran, as
    Python does), tensor arithmetic where it became a tensor."""
    @case
    def mean_until_odd(values, scale):
        total, count = 0.0, 0
        for v in values:
            if v % 2 > 0:
                break
            total += tf.cast(v, tf.float32)
            count += 1
        return total / count, total * scale - 1, total < 3.0

    rows = [[2, 4, 5, 6], [1, 2, 3, 4], [2, 2, 2, 2], [3, 4, 4, 4], [6, 4, 1, 1], [8, 8, 8, 7]]
    stats = check(mean_until_odd, [(ints(r), 0.5 * i) for i, r in enumerate(rows)], min_graph_calls=2)
    assert stats["conversions"] <= 2, (
        "one graph serves the number and the tensor paths: one conversion after the 3 profiled calls, at most one "
        f"more, not one per row: {stats}"
    )


def test_python_division_by_a_computed_zero_raises_as_python_does():
    """A Python number the graph computes, divided by zero: Python raises where TensorFlow
    would give inf (this was a wrong answer); the graph checks it and the eager re-run raises."""
    @case
    def ratios(values, numerator):
        n = 0
        for v in values:
            if v > 0:
                n += 1
        return numerator / n, numerator % (n + 1), numerator ** (n - 1)

    rows = [[1, 2, -1], [-1, -2, -3], [3, 0, 1], [0, 0, 0], [5, 5, 5], [-4, 2, 2], [-1, -1, -1]]
    stats = check(ratios, [(ints(r), 3.0 if i % 2 else 0.0) for i, r in enumerate(rows)], min_graph_calls=2)
    assert stats["conversions"] <= 2, (
        "one graph serves every count n: one conversion after the 3 profiled calls, at most one more, not one per row:"
        f" {stats}"
    )
