"""Side-by-side throughput of an LSTM training step over bucketed sequence lengths.

Every batch has its own sequence length (drawn from 12 buckets, 5 to 27 steps), as a
language model fed bucketed sentences sees.  The same unmodified eager step (``for t in
range(x.shape[1])`` over a hand-written LSTM cell, a ``tf.GradientTape``, an SGD update)
runs, in one process:

* eagerly;
* through Janus (after the length varied, ``x.shape[1]`` is a symbolic dimension and the
  loop one ``tf.while_loop``: one graph for every length);
* through ``tf.function`` (it retraces for every new length);
* as a hand-written graph: ``tf.function`` with a ``None`` time dimension in its input
  signature and a ``tf.while_loop`` over ``tf.shape(x)[1]``.

The modes run interleaved in rounds (the machine is shared and noisy); each reports the
median step time over the steps after warm-up, its ratio to eager and to the hand-written
graph, how many conversions or traces it needed, and whether its losses match eager's.
Usage: ``python benchmarks/bucketed_lstm.py [--steps N] [--rounds R]``.
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
import lstm_step  # noqa: E402 - the same model, beside this file

H, B, D, CLASSES = lstm_step.H, lstm_step.B, lstm_step.D, lstm_step.CLASSES
LENGTHS = list(range(5, 28, 2))  # 12 buckets


class LSTMModel(lstm_step.LSTMModel):
    """The LSTM of ``lstm_step.py``; its step loops over the batch's own length."""

    def train_step(self, x, y):
        with tf.GradientTape() as tape:
            h = tf.zeros([B, H])
            c = tf.zeros([B, H])
            for t in range(x.shape[1]):
                h, c = self.cell(x[:, t], h, c)
            logits = tf.matmul(h, self.wo) + self.bo
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
        grads = tape.gradient(loss, self.variables)
        self.optimizer.apply_gradients(zip(grads, self.variables))
        return loss


def handwritten(model: LSTMModel):
    """The same step in graph style: a ``None`` time dimension and a ``tf.while_loop``."""
    @tf.function(input_signature=[tf.TensorSpec([B, None, D]), tf.TensorSpec([B], tf.int32)])
    def step(x, y):
        with tf.GradientTape() as tape:
            def body(t, h, c):
                h, c = model.cell(x[:, t], h, c)
                return t + 1, h, c
            _, h, _ = tf.while_loop(lambda t, h, c: t < tf.shape(x)[1], body,
                                    (0, tf.zeros([B, H]), tf.zeros([B, H])))
            logits = tf.matmul(h, model.wo) + model.bo
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
        grads = tape.gradient(loss, model.variables)
        model.optimizer.apply_gradients(zip(grads, model.variables))
        return loss
    return step


def batches(n: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        t = int(rng.choice(LENGTHS))
        x = rng.normal(size=(B, t, D)).astype(np.float32)
        y = (x[:, :, 0].sum(axis=1) > 0).astype(np.int32) + 2 * (x[:, -1, 1] > 0).astype(np.int32)
        yield tf.constant(x), tf.constant(y)


MODES = ("eager", "janus", "tf.function", "handwritten")


def make(mode: str):
    model = LSTMModel(seed=0)
    if mode == "eager":
        return model.train_step
    if mode == "janus":
        return janus.function(model.train_step)
    if mode == "tf.function":
        return tf.function(model.train_step)
    return handwritten(model)


def run(mode: str, steps: int, warmup: int) -> dict:
    step = make(mode)
    losses, times = [], []
    for x, y in batches(steps):
        start = time.perf_counter()
        losses.append(float(step(x, y)))
        times.append(time.perf_counter() - start)
    out = {"ms": 1000 * statistics.median(times[warmup:]), "losses": losses}
    if mode == "janus":
        s = janus.stats(step)
        out["work"] = f"{s['conversions']} conversions, {s['graph_calls']}/{s['calls']} calls as graphs"
    elif mode == "tf.function":
        out["work"] = f"{step.experimental_get_tracing_count()} traces"
    elif mode == "handwritten":
        out["work"] = f"{step.experimental_get_tracing_count()} trace"
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--steps", type=int, default=80)
    parser.add_argument("--warmup", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    rounds = [{m: run(m, args.steps, args.warmup) for m in MODES} for _ in range(args.rounds)]
    print(f"LSTM training step over bucketed lengths {LENGTHS[0]}..{LENGTHS[-1]} ({len(LENGTHS)} buckets), "
          f"H={H} B={B}; {args.rounds} interleaved rounds of {args.steps} steps, median after {args.warmup} warm-up")
    print(f"machine: {os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}, TensorFlow {tf.__version__}")
    print("| mode | step ms (median of rounds) | vs eager | vs hand-written (min-max) | losses match eager | work |")
    print("|---|---|---|---|---|---|")
    for m in MODES:
        ms = [r[m]["ms"] for r in rounds]
        vs_eager = statistics.median(r["eager"]["ms"] / r[m]["ms"] for r in rounds)
        vs_hand = [r["handwritten"]["ms"] / r[m]["ms"] for r in rounds]
        match = all(np.allclose(r[m]["losses"], r["eager"]["losses"], rtol=1e-4, atol=1e-5) for r in rounds)
        print(f"| {m} | {statistics.median(ms):.2f} | {vs_eager:.2f}x | {statistics.median(vs_hand):.2f}x "
              f"({min(vs_hand):.2f}-{max(vs_hand):.2f}) | {match} | {rounds[-1][m].get('work', '')} |")


if __name__ == "__main__":
    main()
