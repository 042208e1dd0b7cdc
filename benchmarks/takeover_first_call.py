"""What ``janus.enable()`` costs the first call of a step it finds running (issue #27 item 3).

A step defined *after* ``janus.enable()`` is missed by the namespace scan and found by
the watcher while its first call runs (on 3.11 a stack sampler, on 3.12+
``sys.monitoring``); that call finishes as written, eagerly, and the step goes through
Janus from its next call.  The first call must cost at most 3x the same call eagerly.

Each measurement is a fresh process (``enable()`` is process-wide, and a first call is
only first once): modes alternate ``eager``, ``janus`` for ``--repeats`` rounds; the
table gives the medians.  Two steps, both methods of a class made after ``enable()``:

* ``keras``: a Keras-style custom ``train_step`` (``with tf.GradientTape()``, the model's
  loss, ``optimizer.apply_gradients``) on a small MLP; its first call builds the layers
  and the optimizer's slots.
* ``accumulate``: the same model trained by gradient accumulation over 40 micro-batches
  in a Python loop inside the step (a tape per micro-batch): a first call about twice as
  long, found running by a dozen or more samples on 3.11.

    python benchmarks/takeover_first_call.py [--repeats 5] [--calls 8]
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
MODES = ("eager", "janus")
STEPS = ("keras", "accumulate")


def child(mode: str, step_kind: str, calls: int, collect: bool) -> dict:
    import numpy as np
    import tensorflow as tf

    import janus

    enable_ms = 0.0
    if mode == "janus":
        start = time.perf_counter()
        janus.enable()
        enable_ms = (time.perf_counter() - start) * 1e3

    # Everything below is defined after enable(): only the watcher can find the step.
    class Trainer(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.hidden = tf.keras.layers.Dense(64, activation="relu")
            self.hidden2 = tf.keras.layers.Dense(64, activation="relu")
            self.out = tf.keras.layers.Dense(10)
            self.loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
            self.opt = tf.keras.optimizers.Adam(1e-3)

        def call(self, x):
            return self.out(self.hidden2(self.hidden(x)))

        def train_step(self, x, y):
            with tf.GradientTape() as tape:
                loss = self.loss_fn(y, self(x))
            grads = tape.gradient(loss, self.trainable_variables)
            self.opt.apply_gradients(zip(grads, self.trainable_variables))
            return loss

        def accumulate_step(self, xs, ys):
            total, acc = 0.0, None
            for i in range(xs.shape[0]):
                with tf.GradientTape() as tape:
                    loss = self.loss_fn(ys[i], self(xs[i]))
                grads = tape.gradient(loss, self.trainable_variables)
                acc = grads if acc is None else [a + g for a, g in zip(acc, grads)]
                total += loss
            self.opt.apply_gradients(zip([a / xs.shape[0] for a in acc], self.trainable_variables))
            return total / xs.shape[0]

    tf.keras.utils.set_random_seed(0)
    rs = np.random.RandomState(0)
    trainer = Trainer()
    if step_kind == "keras":
        step = trainer.train_step
        batches = [(tf.constant(rs.randn(32, 20).astype(np.float32)), tf.constant(rs.randint(0, 10, 32)))
                   for _ in range(calls)]
    else:
        step = trainer.accumulate_step
        batches = [(tf.constant(rs.randn(40, 16, 20).astype(np.float32)), tf.constant(rs.randint(0, 10, (40, 16))))
                   for _ in range(calls)]
    if collect:
        gc.collect()      # the same collector state in both modes when the first call starts
    gc_ms, started = [], []

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            started[:] = [time.perf_counter()]
        elif started and info["generation"] == 2:
            gc_ms.append((time.perf_counter() - started[0]) * 1e3)

    times, losses = [], []
    for i, (x, y) in enumerate(batches):
        if i == 0:
            gc.callbacks.append(on_gc)
        start = time.perf_counter()
        losses.append(float(step(x, y)))
        times.append(time.perf_counter() - start)
        if i == 0:
            gc.callbacks.remove(on_gc)
    out = {"times": times, "losses": losses, "full_gc_ms": sum(gc_ms), "enable_ms": enable_ms}
    if mode == "janus":
        from janus.takeover import hook

        out["taken"] = hook.taken_over()
        fns = hook.taken_over_functions()
        out["stats"] = {k: v for k, v in janus.stats(fns[0]).items()
                        if k in ("calls", "graph_calls", "eager_calls", "conversions")} if fns else None
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--calls", type=int, default=8, help="calls per process (the first one is measured)")
    parser.add_argument("--steps", nargs="*", default=list(STEPS), choices=STEPS)
    parser.add_argument("--collect", action="store_true",
                        help="gc.collect() before the first call, in both modes (the collector's state equalized)")
    parser.add_argument("--child", nargs=2, metavar=("MODE", "STEP"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print("RESULT " + json.dumps(child(args.child[0], args.child[1], args.calls, args.collect)))
        return

    results = {(s, m): [] for s in args.steps for m in MODES}
    for _ in range(args.repeats):
        for s in args.steps:
            for m in MODES:
                r = subprocess.run([sys.executable, __file__, "--calls", str(args.calls), "--child", m, s]
                                   + (["--collect"] if args.collect else []),
                                   capture_output=True, text=True, check=False)
                line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
                if r.returncode != 0 or line is None:
                    sys.exit(f"{m} {s} failed ({r.returncode}):\n{r.stderr[-3000:]}")
                results[(s, m)].append(json.loads(line[len("RESULT "):]))

    import tensorflow as tf

    watcher = "sys.monitoring" if hasattr(sys, "monitoring") else "stack sampling"
    print(f"first call of a step defined after janus.enable(), {args.repeats} processes per mode, medians"
          f"{'; gc.collect() before the first call' if args.collect else ''}")
    print(f"machine: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, "
          f"TensorFlow {tf.__version__}, watcher: {watcher}")
    print("| step | eager first call (ms) | janus first call (ms) | janus / eager (min-max) | full collections "
          "in the first call, eager / janus (runs, median ms) | calls 2-%d eager / janus (ms) | "
          "janus after the first call |" % args.calls)
    print("|---|---|---|---|---|---|---|")

    def collections_in(runs: list) -> str:
        ms = [r["full_gc_ms"] for r in runs if r["full_gc_ms"]]
        return f"{len(ms)} of {len(runs)}" + (f", {statistics.median(ms):.0f}" if ms else "")

    for s in args.steps:
        eager, jan = results[(s, "eager")], results[(s, "janus")]
        e1 = [r["times"][0] for r in eager]
        j1 = [r["times"][0] for r in jan]
        ratios = [b / a for a, b in zip(e1, j1)]
        erest = statistics.median(sum(r["times"][1:]) for r in eager)
        jrest = statistics.median(sum(r["times"][1:]) for r in jan)
        same = all(abs(a - b) <= 1e-4 * max(1.0, abs(a)) for re_, rj in zip(eager, jan)
                   for a, b in zip(re_["losses"], rj["losses"]))
        print(f"| {s} | {statistics.median(e1) * 1e3:.0f} | {statistics.median(j1) * 1e3:.0f} | "
              f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f}) | "
              f"{collections_in(eager)} / {collections_in(jan)} | {erest * 1e3:.0f} / {jrest * 1e3:.0f} | "
              f"{jan[-1]['stats']}, taken {jan[-1]['taken']}, losses {'match' if same else 'DIFFER from'} eager's |")
    enables = [r["enable_ms"] for s in args.steps for r in results[(s, "janus")]]
    print(f"janus.enable() itself (imports Janus's machinery, scans, starts the watcher, one full collection): "
          f"median {statistics.median(enables):.0f} ms ({min(enables):.0f}-{max(enables):.0f})")
    for s in args.steps:
        for m in MODES:
            print(f"{s} {m} first calls (ms, in run order): "
                  + " ".join(f"{r['times'][0] * 1e3:.0f}" for r in results[(s, m)]))


if __name__ == "__main__":
    main()
