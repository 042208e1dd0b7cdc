"""A small eager training script to point ``janus-profile`` at.

    janus-profile examples/profile_demo.py --steps 12

It has what the profiler's report is about: an ``if`` that only ever goes one way
(``training`` is always True), a Python loop with a fixed trip count (the RNN steps
over ``SEQ_LEN`` time steps), a ``while`` whose trip count depends on the data, a
check that never fires (``model.clip`` is None), and two functions Janus cannot
convert: a generator (the data loader) and a function with ``try``/``except``.
``--fail`` makes the script raise at the end, ``--exit N`` makes it exit with N.
"""
import argparse
import sys

import numpy as np
import tensorflow as tf

SEQ_LEN, BATCH, FEATURES, UNITS = 6, 8, 4, 16


def batches(steps, seed):
    """Synthetic regression data: the target is the sum of the inputs."""
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        x = rng.normal(size=(BATCH, SEQ_LEN, FEATURES)).astype("float32")
        yield tf.constant(x), tf.constant(x.sum(axis=(1, 2))[:, None])


def load_learning_rate(path, default=0.01):
    try:
        with open(path, encoding="utf-8") as fh:
            return float(fh.read())
    except OSError:
        return default


class RNNRegressor:
    def __init__(self, units):
        self.cell = tf.keras.layers.SimpleRNNCell(units)
        self.head = tf.keras.layers.Dense(1)
        self.clip = None

    def __call__(self, x, training):
        h = tf.zeros([x.shape[0], UNITS])
        for t in range(x.shape[1]):
            h, _ = self.cell(x[:, t], [h])
        if training:
            h = tf.nn.dropout(h, rate=0.1)
        return self.head(h)

    @property
    def variables(self):
        return self.cell.trainable_variables + self.head.trainable_variables


def train_step(model, optimizer, x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x, training=True) - y) ** 2)
    grads = tape.gradient(loss, model.variables)
    if model.clip is not None:
        grads = [tf.clip_by_norm(g, model.clip) for g in grads]
    optimizer.apply_gradients(zip(grads, model.variables))
    return loss


def halvings(value):
    """How often ``value`` can be halved before it drops below 1 (a data-dependent loop)."""
    n = 0
    while value >= 1.0:
        value /= 2
        n += 1
    return n


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--fail", action="store_true", help="raise an exception at the end")
    parser.add_argument("--exit", type=int, default=None, help="exit with this status at the end")
    args = parser.parse_args(argv)

    tf.keras.utils.set_random_seed(0)
    model = RNNRegressor(UNITS)
    optimizer = tf.keras.optimizers.SGD(load_learning_rate("/nonexistent/lr.txt"))
    for step, (x, y) in enumerate(batches(args.steps, seed=0)):
        loss = float(train_step(model, optimizer, x, y))
        octave = halvings(step + 1)  # 1, 2, 2, 3, 3, 3, 3, 4, ...: log2 buckets of the step
        if step % 4 == 0:
            print(f"step {step:3d}  loss {loss:8.3f}  octave {octave}")
    print("done")
    if args.fail:
        raise RuntimeError("failing on purpose (--fail)")
    if args.exit is not None:
        sys.exit(args.exit)


if __name__ == "__main__":
    main()
