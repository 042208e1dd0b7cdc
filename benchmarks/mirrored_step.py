"""A 2-replica MirroredStrategy training step (two logical CPU devices): eager under the
strategy, Janus, tf.function, side by side in interleaved rounds.

The step is the TensorFlow tutorial's custom training loop: ``strategy.run`` of a
per-replica step (forward, loss scaled to the global batch, gradients, optimizer) and
``strategy.reduce`` of the losses; the step also appends the loss to a Python list.

    python benchmarks/mirrored_step.py [--rounds 5] [--steps 40]
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)

import janus  # noqa: E402

tf.get_logger().setLevel("ERROR")
GLOBAL_BATCH = 64
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


class Trainer:
    def __init__(self):
        with strategy.scope():
            self.model = tf.keras.Sequential([
                tf.keras.Input((32,)),
                tf.keras.layers.Dense(128, activation="relu", kernel_initializer=tf.keras.initializers.GlorotUniform(1)),
                tf.keras.layers.Dense(128, activation="relu", kernel_initializer=tf.keras.initializers.GlorotUniform(2)),
                tf.keras.layers.Dense(10, kernel_initializer=tf.keras.initializers.GlorotUniform(3)),
            ])
            self.opt = tf.keras.optimizers.Adam(1e-3)
            self.opt.build(self.model.trainable_variables)  # slots made up front: tf.function cannot make them
        self.losses = []

    def replica_step(self, x, y):
        with tf.GradientTape() as tape:
            logits = self.model(x, training=True)
            per_example = tf.keras.losses.sparse_categorical_crossentropy(y, logits, from_logits=True)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.opt.apply_gradients(zip(grads, self.model.trainable_variables))
        return loss

    def step(self, x, y):
        per_replica = strategy.run(self.replica_step, args=(x, y))
        loss = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
        self.losses.append(loss)
        return loss


def batches(n: int) -> list:
    rs = np.random.RandomState(0)
    x = rs.randn(n * GLOBAL_BATCH, 32).astype(np.float32)
    y = rs.randint(0, 10, size=n * GLOBAL_BATCH).astype(np.int32)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(GLOBAL_BATCH)
    return list(strategy.experimental_distribute_dataset(ds))


MODES = {"eager": lambda f: f, "janus": janus.function, "tf.function": tf.function}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=40)
    args = parser.parse_args()
    data = batches(args.steps)
    trainers, steps, losses = {}, {}, {}
    for name, jit in MODES.items():  # same initial weights in every mode
        trainers[name] = Trainer()
        steps[name] = jit(trainers[name].step)
        losses[name] = [float(steps[name](x, y)) for x, y in data[:8]]  # warm-up, compared below
    times = {name: [] for name in MODES}
    for _ in range(args.rounds):
        for name in MODES:
            start = time.perf_counter()
            for x, y in data:
                loss = steps[name](x, y)
            float(loss)
            times[name].append((time.perf_counter() - start) / len(data))
    print(f"2-replica MirroredStrategy step (2 logical CPU devices), global batch {GLOBAL_BATCH}, MLP 32-128-128-10, "
          f"Adam; {args.rounds} interleaved rounds of {args.steps} steps, median")
    print(f"machine: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, "
          f"TensorFlow {tf.__version__}")
    print("| mode | step ms | examples/s | vs eager (min-max) | first 8 losses match eager | notes |")
    print("|---|---|---|---|---|---|")
    eager = times["eager"]
    for name in MODES:
        t = times[name]
        ratios = [e / m for e, m in zip(eager, t)]
        match = np.allclose(losses[name], losses["eager"], rtol=1e-4)
        notes = ""
        if name == "janus":
            s = janus.stats(steps[name])
            notes = f"{s['conversions']} conversions, {s['graph_calls']}/{s['calls']} calls as graphs"
        elif name == "tf.function":
            notes = f"{len(trainers[name].losses)} entries in its Python list after {8 + args.rounds * args.steps} steps"
        print(f"| {name} | {statistics.median(t) * 1e3:.2f} | {GLOBAL_BATCH / statistics.median(t):,.0f} | "
              f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}) | {match} | {notes} |")


if __name__ == "__main__":
    main()
