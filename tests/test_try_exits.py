"""A ``finally`` runs in full and its own ``return``/``break``/``continue`` wins; a ``return E``
whose ``E`` raises returns nothing (issue #24, items 4 and 5)."""
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

from harness import case, check


def rnd(shape, seed):
    return tf.constant(np.random.RandomState(seed).randn(*shape).astype(np.float32))


def runs_of(cases, repeat=3):
    """Each case ``repeat`` times in a row (so its graph is reused), with a new tensor each call."""
    return [(rnd((2,), 10 * i + r), *case) for i, case in enumerate(cases) for r in range(repeat)]


def test_a_return_in_finally_wins_over_the_return_of_the_try():
    @case
    def f(x, keep):
        try:
            return x * 2.0
        finally:
            if keep:
                return x
            return x * 0.0

    calls = [(rnd((2,), i), i % 3 == 0) for i in range(12)]
    check(f, calls, min_graph_calls=6)


def test_finally_runs_in_full_after_a_return_of_the_try_its_handler_or_its_else():
    def make(jit):
        log = []
        table = {"a": 2.0, "b": 3.0}

        @jit
        def f(x, key, where):
            try:
                if where == 0:
                    return x + table[key]
                y = x * table[key]
            except KeyError:
                if where == 1:
                    return -x
                y = x
            else:
                if where == 2:
                    return y * 10.0
            finally:
                if where == 3:
                    log.append(where)
                    return x - 1.0
                log.append(key)
                y = x + 100.0
            return y

        return SimpleNamespace(fn=f, state=lambda: {"log": list(log)})

    calls = runs_of([(key, where) for where in range(5) for key in "az"], repeat=4)
    check(make, calls, min_graph_calls=10)


def test_nested_finally_blocks_each_run_in_full():
    def make(jit):
        log = []

        @jit
        def f(x, a, b):
            try:
                try:
                    return x * 2.0
                finally:
                    if a:
                        return x * 3.0
                    log.append("inner")
            finally:
                if b:
                    log.append("outer returns")
                    return x * 5.0
                log.append("outer")

        return SimpleNamespace(fn=f, state=lambda: {"log": list(log)})

    calls = runs_of([(a, b) for a in (False, True) for b in (False, True)], repeat=4)
    check(make, calls, min_graph_calls=6)


def test_break_and_continue_in_finally_override_a_pending_return_break_or_continue():
    @case
    def f(xs, stop, mode):
        total = tf.zeros([2])
        seen = 0
        for i, x in enumerate(xs):
            try:
                if i == stop:
                    return total, -1
                if i == stop + 1:
                    break
                if i == stop + 2:
                    continue
                total += x
            finally:
                seen += 1
                if mode == 1 and i >= stop:
                    continue
                if mode == 2 and i >= stop:
                    break
            total = total * 2.0
        return total, seen

    cases = [(stop, mode) for mode in range(3) for stop in range(4)]
    calls = [([rnd((2,), 10 * i + r + k) for k in range(5)], *case) for i, case in enumerate(cases) for r in range(4)]
    check(f, calls, min_graph_calls=12)


def test_a_return_in_finally_swallows_the_exception_of_the_try():
    def make(jit):
        table = {"a": 2.0}

        @jit
        def f(x, key, swallow):
            for i in range(2):
                try:
                    y = x * table[key]
                finally:
                    if swallow:
                        break
            try:
                y = x / table[key]
            finally:
                if swallow:
                    return x
            return y

        return SimpleNamespace(fn=f)

    # ("b", True) raises KeyError while tracing, swallowed as eager swallows it: a graph.
    check(make, runs_of([("b", True)], repeat=6), min_graph_calls=3)
    check(make, runs_of([("a", False), ("b", False), ("a", True), ("b", True)], repeat=4), min_graph_calls=6)


def test_a_return_whose_value_raises_into_an_except_goes_on_after_it():
    def make(jit):
        table = {"a": 2.0}

        @jit
        def f(x, key):
            try:
                return x + table[key]
            except KeyError:
                print("no", key)
            if key != "none":
                return x - 1.0

        return SimpleNamespace(fn=f)

    calls = runs_of([("a",), ("b",), ("a",)], repeat=4)
    check(make, calls, min_graph_calls=4)


def test_a_return_in_a_loop_whose_value_raises_goes_on_with_the_loop():
    def make(jit):
        table = {"a": 2.0, "c": 4.0}

        @jit
        def f(x, keys):
            for k in keys:
                try:
                    return x * table[k]
                except KeyError:
                    x = x + 1.0
            return x

        return SimpleNamespace(fn=f)

    calls = runs_of([(("b", "a"),), (("b", "z"),), (("c", "b"),)], repeat=4)
    check(make, calls, min_graph_calls=4)


def test_the_else_of_a_try_is_skipped_when_its_body_returned_or_left_the_loop():
    """Python runs a ``try``'s ``else`` only when its body ran to the end: not after a
    ``return``, ``break`` or ``continue`` in it (found by a generator of try statements:
    the graph printed from the ``else`` after the body had returned)."""
    def make(jit):
        log = []

        @jit
        def f(x, k):
            acc = x * 0.0
            for i in range(3):
                try:
                    if k == i:
                        break
                    if k + i == 4:
                        continue
                    acc = acc + x
                except ValueError:
                    log.append("never")
                else:
                    print("else of", i)
                    log.append(i)
            try:
                if k > 1:
                    return acc, k
                acc = acc * 2.0
            except ValueError:
                log.append("never")
            else:
                print("else after the loop", k)
                log.append(("else", k))
            return acc, k

        return SimpleNamespace(fn=f, state=lambda: {"log": list(log)})

    calls = runs_of([(0,), (1,), (2,), (3,), (4,), (5,)], repeat=3)
    check(make, calls, min_graph_calls=8)
