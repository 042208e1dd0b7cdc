"""What XLA does to an example's training step: Janus with and without XLA clusters, and
``tf.function`` with and without whole-function XLA, in one process, alternating windows.

    .venv/bin/python benchmarks/xla_clusters.py lstm lenet treernn [--windows 6] [--steps 30]

Each mode builds the example's own trainer (same seed), runs ``--warmup`` steps, then the
modes take turns running windows of ``--steps`` steps on fresh batches; a mode's number is
the median over its windows of the window's median step time, and each ratio the median
over windows of one mode's window over the other's window in the same turn.
``tf.function(jit_compile=True)`` drops assertions (``../shared/TF-NOTES.md``): Janus
cannot compile whole graphs that way; it is here as the measure of what XLA could give.
Results: ``docs/xla.md``.
"""
from __future__ import annotations

import argparse
import gc
import importlib
import importlib.util
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(HERE), "examples"), HERE]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

MODES = ("janus", "janus+xla", "tf.function", "tf.function+xla")


def build(example: str, mode: str):
    import janus
    import tensorflow as tf

    trainer = importlib.import_module(example).build(0)
    if mode.startswith("janus"):
        trainer.train_step = janus.function(trainer.train_step, jit_compile=mode == "janus+xla")
    else:
        trainer.train_step = tf.function(trainer.train_step, jit_compile=mode == "tf.function+xla")
    return trainer


def window(trainer, steps: int) -> float:
    times = []
    for _ in range(steps):
        batch = trainer.next_batch()
        start = time.perf_counter()
        float(trainer.train_step(*batch))
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def run(example: str, args) -> None:
    trainers = {mode: build(example, mode) for mode in MODES}  # all built first: building seeds TF
    for trainer in trainers.values():
        for _ in range(args.warmup):
            float(trainer.train_step(*trainer.next_batch()))
    gc.collect()
    gc.freeze()
    ms = {mode: [] for mode in MODES}
    for w in range(args.windows):
        for k in range(len(MODES)):
            mode = MODES[(w + k) % len(MODES)]
            gc.collect()
            ms[mode].append(window(trainers[mode], args.steps))

    def ratio(a: str, b: str) -> str:
        r = [x / y for x, y in zip(ms[a], ms[b])]
        return f"{statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f})"

    steps = ", ".join(f"{m} {statistics.median(v):.2f} ms" for m, v in ms.items())
    print(f"| {example} | {steps} | {ratio('janus+xla', 'janus')} | {ratio('tf.function+xla', 'tf.function')} |",
          flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("examples", nargs="+")
    parser.add_argument("--windows", type=int, default=6)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=60)
    args = parser.parse_args(argv)
    for example in args.examples:
        if importlib.util.find_spec(example) is None:
            sys.exit(f"xla_clusters.py: no example named {example!r} in examples/")
    print("| example | median step time | Janus with XLA / without (step time) | tf.function XLA / without |")
    print("|---|---|---|---|")
    for example in args.examples:
        run(example, args)


if __name__ == "__main__":
    main()
