"""What ``janus.enable()`` costs code that records no tape (and a step it took over).

On Python 3.11 the hook finds steps by sampling every thread's stack (every 10 ms, a
daemon thread); on 3.12+ it uses ``sys.monitoring`` limited to ``GradientTape.__init__``.
Two workloads without a tape run with the hook off and on, interleaved in rounds; the
table gives the median time per run and the ratio on/off (``eager_inference`` names
TensorFlow, so the hook beyond tapes counts its calls: the counting is in the measure; called
once per ``enable()``, which counts from zero, it never becomes hot); then a step found by the hook
against the same step under ``@janus.function``.  What the take-over costs the first
call of a step it finds running: ``benchmarks/takeover_first_call.py``.

    python benchmarks/takeover_overhead.py [--rounds 7]
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import janus  # noqa: E402


def python_work() -> int:
    """Plain Python: many small calls (the case a profile hook slows most)."""
    def leaf(i: int) -> int:
        return i * 3 % 7

    def node(i: int) -> int:
        return leaf(i) + leaf(i + 1)

    return sum(node(i) for i in range(20000))


model = tf.keras.Sequential([tf.keras.Input((32,)), tf.keras.layers.Dense(64, activation="relu"),
                             tf.keras.layers.Dense(10)])
batch = tf.random.stateless_normal([16, 32], seed=[1, 2])


def eager_inference() -> float:
    """An eager evaluation loop: TensorFlow's own Python, no tape."""
    total = 0.0
    for _ in range(20):
        total += float(tf.reduce_sum(model(batch)))
    return total


WORKLOADS = {"plain Python calls": python_work, "eager inference (no tape)": eager_inference}


def make_step(w: tf.Variable):
    def train_step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(x @ w))
        w.assign_sub(0.01 * tape.gradient(loss, w))
        return loss
    return train_step


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    for fn in WORKLOADS.values():
        fn()
    times = {(name, on): [] for name in WORKLOADS for on in (False, True)}
    for _ in range(args.rounds):
        for on in (False, True):
            if on:
                janus.enable()
            for name, fn in WORKLOADS.items():
                times[(name, on)].append(timed(fn))
            if on:
                janus.disable()

    # A step the hook found (a closure) against the same step under @janus.function.
    janus.enable()
    found, decorated = make_step(tf.Variable(tf.ones([32, 10]) * 0.01)), janus.function(make_step(
        tf.Variable(tf.ones([32, 10]) * 0.01)))
    for _ in range(30):
        found(batch), decorated(batch)
    steps = {"found": [], "decorated": []}
    for _ in range(args.rounds):
        steps["found"].append(timed(lambda: [float(found(batch)) for _ in range(50)]))
        steps["decorated"].append(timed(lambda: [float(decorated(batch)) for _ in range(50)]))
    taken = janus.takeover.hook.taken_over()
    janus.disable()

    print(f"janus.enable() overhead: {args.rounds} interleaved rounds, median per run")
    print(f"machine: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, "
          f"TensorFlow {tf.__version__}, watcher: {'sys.monitoring' if hasattr(sys, 'monitoring') else 'stack sampling'}")
    print("| workload | hook off (ms) | hook on (ms) | on / off (min-max over rounds) |")
    print("|---|---|---|---|")
    for name in WORKLOADS:
        off, on = times[(name, False)], times[(name, True)]
        ratios = [b / a for a, b in zip(off, on)]
        print(f"| {name} | {statistics.median(off) * 1e3:.1f} | {statistics.median(on) * 1e3:.1f} | "
              f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}) |")
    ratios = [a / b for a, b in zip(steps["found"], steps["decorated"])]
    print(f"\ntraining step (a closure) taken over by the hook ({', '.join(taken)}): "
          f"{statistics.median(steps['found']) / 50 * 1e3:.2f} ms/step; the same step under @janus.function: "
          f"{statistics.median(steps['decorated']) / 50 * 1e3:.2f} ms/step; ratio {statistics.median(ratios):.2f}x "
          f"({min(ratios):.2f}-{max(ratios):.2f})")


if __name__ == "__main__":
    main()
