"""Benchmark: a training loop that feeds NumPy minibatches ``x[i:i + 32]``.

A two-layer regression network trained by SGD on NumPy data, one step per minibatch of
32 rows (the epoch's last batch is shorter).  Janus feeds the arrays to its graph like
tensors (``janus.trace.arrays``), as ``tf.function`` does; before, each array was guarded
by value and Janus gave up after three graphs.  Eager, Janus and ``tf.function`` run the
same epochs, interleaved in rounds (the machine is shared and noisy); reported: the median
time per step over the epochs after the first (warm-up, profiling and conversion happen
in the first), and the losses compared with eager's.

    python benchmarks/numpy_minibatch.py [--epochs 4] [--rounds 3]
"""
import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import janus  # noqa: E402

ROWS, FEATURES, HIDDEN, BATCH = 1000, 32, 64, 32


def data() -> tuple[np.ndarray, np.ndarray]:
    r = np.random.RandomState(0)
    x = r.normal(size=(ROWS, FEATURES)).astype(np.float32)
    y = (x[:, :1] * 0.5 - x[:, 1:2] + 0.1 * r.normal(size=(ROWS, 1))).astype(np.float32)
    return x, y


def make_step(mode: str):
    """A fresh model and its step, run as ``mode`` (eager, janus or tf.function)."""
    init = tf.keras.initializers.GlorotUniform(seed=1)
    w1 = tf.Variable(init([FEATURES, HIDDEN]))
    b1 = tf.Variable(tf.zeros([HIDDEN]))
    w2 = tf.Variable(init([HIDDEN, 1]))
    opt = tf.keras.optimizers.SGD(0.01)
    params = [w1, b1, w2]

    def step(x, y):
        with tf.GradientTape() as tape:
            h = tf.nn.relu(x @ w1 + b1)
            loss = tf.reduce_mean(tf.square(h @ w2 - y))
        opt.apply_gradients(zip(tape.gradient(loss, params), params))
        return loss

    if mode == "janus":
        return janus.function(step)
    if mode == "tf.function":
        return tf.function(step)
    return step


def epoch(step, x: np.ndarray, y: np.ndarray) -> tuple[list[float], list[float]]:
    times, losses = [], []
    for i in range(0, ROWS, BATCH):
        start = time.perf_counter()
        loss = float(step(x[i:i + BATCH], y[i:i + BATCH]))
        times.append(time.perf_counter() - start)
        losses.append(loss)
    return times, losses


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    x, y = data()
    modes = ("eager", "janus", "tf.function")
    medians: dict[str, list[float]] = {m: [] for m in modes}
    worst_diff, stats = 0.0, {}
    for r in range(args.rounds):
        losses = {}
        for mode in modes[r % 3:] + modes[:r % 3]:
            step = make_step(mode)
            times, seen = [], []
            for e in range(args.epochs):
                t, ls = epoch(step, x, y)
                seen += ls
                if e:
                    times += t
            medians[mode].append(statistics.median(times))
            losses[mode] = np.array(seen)
            if mode == "janus":
                stats = janus.stats(step)
        worst_diff = max(worst_diff, float(np.max(np.abs(losses["janus"] - losses["eager"]))))
    steps = -(-ROWS // BATCH)
    print(f"NumPy-minibatch regression: {steps} steps of {BATCH} rows per epoch ({ROWS % BATCH}-row last batch), "
          f"{args.epochs} epochs, {args.rounds} interleaved rounds; median ms/step after the first epoch")
    eager = statistics.median(medians["eager"])
    for mode in modes:
        ms = statistics.median(medians[mode])
        print(f"  {mode:12s} {1000 * ms:7.3f} ms/step  {eager / ms:5.2f}x eager")
    print(f"  Janus: {stats.get('graph_calls')} of {stats.get('calls')} calls as graphs, "
          f"{stats.get('conversions')} conversions; largest |loss - eager's| {worst_diff:.2e}")


if __name__ == "__main__":
    main()
