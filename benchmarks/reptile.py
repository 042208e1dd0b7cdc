"""Benchmark: Reptile meta-learning as keras-io writes it (``model.get_weights()`` before an
inner loop of SGD steps, ``model.set_weights()`` interpolating after), on synthetic sine tasks.

``get_weights()`` needs eager values: traced, it raises.  Janus once traced the step again at
every call (its interpolation rate changes each step, so no two failures looked alike) until
its budget was spent; now the first failure makes that statement a graph break and the inner
loop runs as a graph segment.  ``tf.function`` cannot run the step at all.  Eager, Janus and
``tf.function`` run the same steps in one process, each from a fresh model of the same seed;
per step (median of the last half) and over the whole run (first call included).

    python benchmarks/reptile.py [--steps 40]
"""
import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import janus  # noqa: E402

INNER_STEPS = 3


def make_step(wrap):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.layers.Dense(64, activation="relu"), keras.layers.Dense(64, activation="relu"),
                              keras.layers.Dense(1)])
    model.build((None, 1))
    inner_optimizer = keras.optimizers.SGD(learning_rate=0.003)

    def train_step(x, y, interpolation):
        old_vars = model.get_weights()
        for _ in range(INNER_STEPS):
            with tf.GradientTape() as tape:
                loss = keras.losses.mean_squared_error(y, model(x))
            grads = tape.gradient(loss, model.trainable_weights)
            inner_optimizer.apply_gradients(zip(grads, model.trainable_weights))
        new_vars = model.get_weights()
        model.set_weights([old + (new - old) * interpolation for old, new in zip(old_vars, new_vars)])
        return loss

    return wrap(train_step)


def tasks(steps: int):
    rng = np.random.default_rng(1)
    for i in range(steps):
        amplitude, phase = rng.uniform(0.1, 5.0), rng.uniform(0, np.pi)
        x = rng.uniform(-5, 5, (10, 1)).astype(np.float32)
        yield x, (amplitude * np.sin(x + phase)).astype(np.float32), 0.5 * (1 - i / steps)


def run(name: str, wrap, steps: int) -> tuple[list[float], float, str]:
    step = make_step(wrap)
    times, start = [], time.perf_counter()
    try:
        for x, y, rate in tasks(steps):
            t = time.perf_counter()
            step(x, y, rate)
            times.append(time.perf_counter() - t)
    except Exception as e:  # noqa: BLE001 - the baseline that cannot run the program
        return [], 0.0, f"fails: {type(e).__name__}"
    return times, time.perf_counter() - start, ""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    rows = [("eager", lambda f: f), ("janus", janus.function), ("tf.function", tf.function)]
    results = {name: run(name, wrap, args.steps) for name, wrap in rows}
    eager_step = statistics.median(results["eager"][0][args.steps // 2:])
    print("| | ms per step (median, last half) | whole run (s) | vs eager per step |")
    print("|---|---|---|---|")
    for name, (times, total, note) in results.items():
        if note:
            print(f"| {name} | {note} | | |")
            continue
        per = statistics.median(times[args.steps // 2:])
        print(f"| {name} | {per * 1e3:.1f} | {total:.1f} | {eager_step / per:.2f}x |")


if __name__ == "__main__":
    main()
