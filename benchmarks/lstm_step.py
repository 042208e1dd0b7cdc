"""Side-by-side step times of an imperative LSTM training step (the issue-2/4 benchmark).

The same unmodified eager training step (a hand-written LSTM cell, a Python ``for t in
range(seq_len)`` loop, ``tf.GradientTape`` and an SGD update) is run, in one process:

* eagerly;
* through Janus, conservative (``speculate=False``: ``seq_len`` fed as a tensor, the loop a
  ``tf.while_loop``);
* through Janus, speculative (default: ``seq_len`` was the same in every profiled call, so
  it is a constant under a guard and the loop is unrolled);
* through ``tf.function`` (the competitor: it traces the Python loop unrolled);
* as a hand-written graph (``tf.function`` over a step written in graph style with
  ``tf.while_loop`` and state passed explicitly).

Each mode trains its own model from the same seed; losses are compared with eager's.
Step times are medians of repeated timed windows after warm-up (the machine is shared:
compare only within one run).  Usage: ``python benchmarks/lstm_step.py [--steps N]``.
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

import janus  # noqa: E402

H, B, T, D, CLASSES = 64, 16, 20, 8, 4


class LSTMModel:
    """An LSTM classifier written the way eager code is written."""

    def __init__(self, seed: int):
        rng = np.random.default_rng(seed)

        def var(*shape):
            return tf.Variable(rng.normal(0, 0.1, shape).astype(np.float32))

        self.wx, self.wh, self.b = var(D, 4 * H), var(H, 4 * H), var(4 * H)
        self.wo, self.bo = var(H, CLASSES), var(CLASSES)
        self.variables = [self.wx, self.wh, self.b, self.wo, self.bo]
        self.optimizer = tf.keras.optimizers.SGD(0.1)

    def cell(self, x, h, c):
        z = tf.matmul(x, self.wx) + tf.matmul(h, self.wh) + self.b
        i, f, g, o = tf.split(z, 4, axis=1)
        c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
        h = tf.sigmoid(o) * tf.tanh(c)
        return h, c

    def train_step(self, x, y, seq_len):
        with tf.GradientTape() as tape:
            h = tf.zeros([B, H])
            c = tf.zeros([B, H])
            for t in range(seq_len):
                h, c = self.cell(x[:, t], h, c)
            logits = tf.matmul(h, self.wo) + self.bo
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
        grads = tape.gradient(loss, self.variables)
        self.optimizer.apply_gradients(zip(grads, self.variables))
        return loss


def handwritten(model: LSTMModel):
    """The same step in graph style: ``tf.while_loop`` over time, state passed explicitly."""
    @tf.function
    def step(x, y):
        with tf.GradientTape() as tape:
            def body(t, h, c):
                h, c = model.cell(x[:, t], h, c)
                return t + 1, h, c
            _, h, _ = tf.while_loop(lambda t, h, c: t < T, body, (0, tf.zeros([B, H]), tf.zeros([B, H])))
            logits = tf.matmul(h, model.wo) + model.bo
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
        grads = tape.gradient(loss, model.variables)
        model.optimizer.apply_gradients(zip(grads, model.variables))
        return loss
    return lambda x, y, seq_len: step(x, y)


def batches(n: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        x = rng.normal(size=(B, T, D)).astype(np.float32)
        y = (x[:, :, 0].sum(axis=1) > 0).astype(np.int32) + 2 * (x[:, -1, 1] > 0).astype(np.int32)
        yield tf.constant(x), tf.constant(y)


def run(mode: str, steps: int, warmup: int, window: int) -> dict:
    model = LSTMModel(seed=0)
    if mode == "eager":
        step = model.train_step
    elif mode == "janus-conservative":
        step = janus.function(model.train_step, speculate=False)
    elif mode == "janus-speculative":
        step = janus.function(model.train_step)
    elif mode == "tf.function":
        step = tf.function(model.train_step)
    else:
        step = handwritten(model)
    losses, times = [], []
    for x, y in batches(steps):
        start = time.perf_counter()
        loss = step(x, y, T)
        losses.append(float(loss))
        times.append(time.perf_counter() - start)
    timed = times[warmup:]
    windows = [statistics.mean(timed[i:i + window]) for i in range(0, len(timed) - window + 1, window)]
    out = {"mode": mode, "ms": 1000 * statistics.median(windows), "losses": losses}
    if mode.startswith("janus"):
        out["stats"] = janus.stats(step)
        out["assumptions"] = sum(len(e.report.assumptions) for e in step.__janus_function__.entries)
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--window", type=int, default=10)
    args = parser.parse_args(argv)
    modes = ["eager", "janus-conservative", "janus-speculative", "tf.function", "handwritten"]
    results = [run(m, args.steps, args.warmup, args.window) for m in modes]
    eager = results[0]
    print(f"LSTM training step, H={H} B={B} T={T}; {args.steps} steps, median of {args.window}-step windows "
          f"after {args.warmup} warm-up steps")
    print(f"machine: {os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}, TensorFlow {tf.__version__}")
    print(f"{'mode':20s} {'step ms':>9s} {'vs eager':>9s}  losses match eager  notes")
    for r in results:
        match = np.allclose(r["losses"], eager["losses"], rtol=1e-4, atol=1e-5)
        note = ""
        if "stats" in r:
            s = r["stats"]
            note = f"{s['graph_calls']}/{s['calls']} calls as graphs, {r['assumptions']} assumptions"
        print(f"{r['mode']:20s} {r['ms']:9.2f} {eager['ms'] / r['ms']:8.2f}x  {str(match):18s}  {note}")


if __name__ == "__main__":
    main()
