"""What one call costs: small functions and two training steps, eager, Janus and tf.function.

Per-call medians of timed windows, all modes of a program in one process, interleaved
window by window (the machine is shared: compare only within one run).  Used to check
what a change to the per-call path costs: run it from two checkouts, alternating
processes, e.g. ``PYTHONPATH=<checkout> python benchmarks/call_cost.py`` (the examples
are taken from the checkout's ``examples/``).

Usage: ``python benchmarks/call_cost.py [--windows N]``.
"""
from __future__ import annotations

import argparse
import importlib
import os
import statistics
import sys
import time
import types

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import janus  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(janus.__file__))), "examples"))
import common  # noqa: E402  (examples/common.py)


def _window(call, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        call()
    return (time.perf_counter() - start) / n


def _interleaved(calls: dict, n: int, windows: int) -> dict:
    times: dict = {name: [] for name in calls}
    for _ in range(windows):
        for name, call in calls.items():
            times[name].append(_window(call, n))
    return {name: statistics.median(t) for name, t in times.items()}


def _modes(fn, args: tuple) -> dict:
    """eager, a Janus graph hit, tf.function, and tf.function's bare concrete function."""
    traced = tf.function(fn)
    modes = {"eager": fn, "janus": janus.function(fn), "tf.function": traced,
             "concrete": traced.get_concrete_function(*args)}
    for f in modes.values():
        for _ in range(10):
            f(*args)
    assert janus.stats(modes["janus"])["graph_calls"] > 0
    return modes


def trivial(windows: int) -> dict:
    def inc(x):
        return x + 1.0

    x = tf.constant(1.0)
    return _interleaved({m: (lambda f=f: f(x)) for m, f in _modes(inc, (x,)).items()}, 2000, windows)


def eight_arguments(windows: int) -> dict:
    def add8(a, b, c, d, e, f, g, h):
        return a + b + c + d + e + f + g + h

    xs = tuple(tf.constant(float(i)) for i in range(8))
    return _interleaved({m: (lambda f=f: f(*xs)) for m, f in _modes(add8, xs).items()}, 2000, windows)


class _Eight:
    """A method reading eight variables (state read at each call: fed, not constants)."""

    def __init__(self) -> None:
        self.vs = [tf.Variable(float(i)) for i in range(8)]

    def total(self, x):
        v = self.vs
        return x + v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]


def eight_variables(windows: int) -> dict:
    obj, x = _Eight(), tf.constant(1.0)
    modes = _modes(types.MethodType(_Eight.total, obj), (x,))
    return _interleaved({m: (lambda f=f: f(x)) for m, f in modes.items()}, 2000, windows)


def example(name: str, windows: int) -> dict:
    module = importlib.import_module(name)
    trainers = {"eager": module.build(0), "janus": common.maybe_janus(module.build(0), True)}
    batches = [trainers["eager"].next_batch() for _ in range(8)]
    for t in trainers.values():
        for b in batches:
            t.train_step(*b)
    assert janus.stats(trainers["janus"].train_step)["graph_calls"] > 0
    counter = {m: 0 for m in trainers}

    def step(mode: str) -> None:
        trainers[mode].train_step(*batches[counter[mode] % 8])
        counter[mode] += 1

    return _interleaved({m: (lambda m=m: step(m)) for m in trainers}, 20, windows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=7)
    args = parser.parse_args()
    rows = {"trivial x + 1 (us)": {k: v * 1e6 for k, v in trivial(args.windows).items()},
            "8 arguments (us)": {k: v * 1e6 for k, v in eight_arguments(args.windows).items()},
            "method, 8 variables (us)": {k: v * 1e6 for k, v in eight_variables(args.windows).items()}}
    for name in ("lstm", "treelstm"):
        rows[f"{name} train_step (ms)"] = {k: v * 1e3 for k, v in example(name, args.windows).items()}
    for label, times in rows.items():
        print(f"{label:26s} " + "  ".join(f"{m} {t:8.2f}" for m, t in times.items()) +
              f"   (Janus takes {times['janus'] / times['eager']:.2f}x eager's time)")


if __name__ == "__main__":
    main()
