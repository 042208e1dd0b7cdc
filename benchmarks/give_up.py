"""Benchmark: a function Janus cannot generalize must not slow the program down.

The Tree-LSTM example's training step, with dropout on every node's state, sees new
trees at every call.  Random draws at every node keep Janus from batching the recursion
over whole trees (``docs/recursion.md``), so every graph it builds is specialized on one
batch of trees and never reused; Janus gives up after a few and runs the step plainly
eagerly.  This runs the same steps eagerly and
through Janus, interleaved in rounds (the machine is shared and noisy), and reports
the median step time of each over the steps after Janus gave up, their ratio, and
what Janus spent before giving up.

    python benchmarks/give_up.py [--steps 60] [--rounds 3]
"""
import argparse
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples"))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

import janus  # noqa: E402
import treelstm  # noqa: E402


class DropoutTreeLSTM(treelstm.TreeLSTM):
    """The example's Tree-LSTM with dropout on each node's hidden state."""

    def encode(self, node):
        h, c = super().encode(node)
        return tf.nn.dropout(h, 0.1), c


def run(steps: int, use_janus: bool) -> tuple[list[float], dict]:
    trainer = treelstm.build(0)
    trainer.model.__class__ = DropoutTreeLSTM
    if use_janus:
        trainer.train_step = janus.function(trainer.train_step)
    times = []
    for _ in range(steps):
        batch = trainer.next_batch()
        start = time.perf_counter()
        trainer.train_step(*batch)
        times.append(time.perf_counter() - start)
    return times, (janus.stats(trainer.train_step) if use_janus else {})


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    half = args.steps // 2
    eager, jan, first_half, stats = [], [], [], {}
    for _ in range(args.rounds):
        e_times, _ = run(args.steps, False)
        j_times, stats = run(args.steps, True)
        eager.append(statistics.median(e_times[half:]))
        jan.append(statistics.median(j_times[half:]))
        first_half.append(sum(j_times[:half]) / max(sum(e_times[:half]), 1e-9))
    ratios = [e / j for e, j in zip(eager, jan)]
    print(f"Tree-LSTM step with dropout per node, new trees every call: {args.rounds} interleaved rounds of {args.steps} steps")
    print(f"  eager, second half:  median {1000 * statistics.median(eager):.1f} ms/step")
    print(f"  Janus, second half:  median {1000 * statistics.median(jan):.1f} ms/step")
    print(f"  Janus speed / eager: median {statistics.median(ratios):.2f}x "
          f"(rounds: {', '.join(f'{r:.2f}' for r in ratios)})")
    print(f"  Janus time / eager time, first half (profiling, conversions): "
          f"{statistics.median(first_half):.2f}x")
    print(f"  Janus stats: {stats}")


if __name__ == "__main__":
    main()
