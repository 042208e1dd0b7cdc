"""Benchmark: whole runs, conversions included, eager against Janus with and without the
whole-run rule (``ConversionPolicy.whole_run``, issue #40 item 8).

Two programs, the same small MLP training step (two 128-unit layers, a batch of 64): one
is given a string tag that changes every 4 calls (each new tag is a guard miss and a new
graph, reused 3 times: conversions that never pay back), the other a fixed tag (one
conversion, then graphs). Each runs eagerly, through Janus as it is ("rule"), and through
Janus with ``whole_run_slack=None`` in ``config.LIMITS`` ("no rule": conversions go on until the budget
of 12), in interleaved rounds (the machine is shared and noisy); the table gives the median
over rounds of the cumulative seconds after 25, 50 and 200 calls, and their ratio to eager.

    python benchmarks/whole_run.py [--rounds 3] [--steps 200]
"""
import argparse
import dataclasses
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import janus  # noqa: E402
from janus import config  # noqa: E402

CHECKPOINTS = (25, 50, 200)


def make_step():
    """A fresh model, optimizer and step (as written: the caller wraps it)."""
    layers = [tf.keras.layers.Dense(128, activation="relu"), tf.keras.layers.Dense(128, activation="relu"),
              tf.keras.layers.Dense(1)]
    model = tf.keras.Sequential(layers)
    model.build((None, 32))
    opt = tf.keras.optimizers.SGD(0.01)

    def step(x, y, tag):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x) - y) ** 2) * (1.0 if tag else 1.0)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return step


def run(mode: str, steps: int, every: int | None) -> tuple[list[float], dict]:
    """Cumulative seconds after each call; the Janus stats and give-up code (empty eagerly)."""
    step = make_step()
    if mode != "eager":
        step = janus.function(step)
    x, y = tf.random.stateless_normal((64, 32), (1, 2)), tf.random.stateless_normal((64, 1), (3, 4))
    limits = config.LIMITS
    if mode == "no rule":
        config.LIMITS = dataclasses.replace(limits, whole_run_slack=None)
    try:
        total, cumulative = 0.0, []
        for i in range(steps):
            tag = f"tag-{i // every}" if every else "tag"
            start = time.perf_counter()
            step(x, y, tag)
            total += time.perf_counter() - start
            cumulative.append(total)
    finally:
        config.LIMITS = limits
    if mode == "eager":
        return cumulative, {}
    why = step.__janus_function__.permanent_reason
    return cumulative, dict(janus.stats(step), code=getattr(why, "code", None))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args(argv)
    checkpoints = [c for c in CHECKPOINTS if c <= args.steps]
    modes = ("eager", "rule", "no rule")
    for title, every in (("tag changing every 4 calls (conversions do not pay)", 4), ("fixed tag", None)):
        times = {m: [] for m in modes}
        stats: dict = {m: [] for m in modes}
        for _ in range(args.rounds):
            for m in modes:
                cumulative, s = run(m, args.steps, every)
                times[m].append(cumulative)
                stats[m].append(s)
        print(f"{title}: {args.rounds} interleaved rounds of {args.steps} calls; cumulative seconds (x eager)")
        print("  mode      " + "".join(f"{f'after {c}':>20}" for c in checkpoints) + "    conversions by round")
        for m in modes:
            cells = ""
            for c in checkpoints:
                mine = statistics.median(t[c - 1] for t in times[m])
                eager = statistics.median(t[c - 1] for t in times["eager"])
                cells += f"{mine:>11.3f} ({mine / eager:4.2f}x)"
            conv = "    " + ", ".join(f"{s['conversions']}" + (f" ({s['code'].value})" if s["code"] else "")
                                   for s in stats[m]) if m != "eager" else ""
            print(f"  {m:<10}{cells}{conv}")


if __name__ == "__main__":
    main()
