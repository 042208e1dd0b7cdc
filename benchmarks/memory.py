"""Memory across conversions: does a program that makes Janus functions anew stay flat?

Three programs as users write them, each run eagerly, through Janus and through
``tf.function``, every (program, mode) in a fresh worker process of its own, modes
alternating round by round; the table gives the median over ``--rounds`` of the growth
of the worker's resident memory (RSS, ``/proc/self/statm``, after ``gc.collect()``):

* **epochs**: a two-layer model of ``tf.Variable``s and a ``GradientTape`` training step
  made anew every epoch (``step = janus.function(make_step(model, lr))``), 6 batches per
  epoch (Janus converts at the 4th call); growth from epoch 20 to 100, 200 and 300.
* **reset**: one step function; 100 cycles of ``janus.reset()`` and 6 calls (a
  re-conversion each).  ``tf.function``: a new ``tf.function`` of the step per cycle (a
  retrace); eager: the same calls.  Growth from cycle 10 to 100.
* **fed**: a trainer whose step reads and writes a Python int (``self.steps``, a learning
  rate decaying with it): Janus feeds it to its graph; 30,000 calls, growth from call 1,000
  on.  No ``tf.function`` column: it would bake the int in at its trace (not eager's
  results).

The model's update is ``assign_sub``, not a Keras optimizer: ``tf.function`` alone grows by
0.3 MB per epoch with ``tf.keras.optimizers.SGD`` made once and a new ``tf.function`` per
epoch (Keras's own cache), which would hide what the comparison is about.

Usage: ``python benchmarks/memory.py [--rounds 3] [--epochs 300] [--cycles 100]
[--calls 30000] [--programs epochs,reset,fed] [--modes eager,janus,tf.function] [--trim]
[--json out.json]``; ``--worker PROGRAM MODE`` is internal.  Run from
another checkout with ``PYTHONPATH=<checkout>`` to compare two versions of Janus.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402

import janus  # noqa: E402

MODES = {"epochs": ("eager", "janus", "tf.function"), "reset": ("eager", "janus", "tf.function"),
         "fed": ("eager", "janus")}


def rss_mb() -> float:
    """Resident memory of this process, in MB, after a full collection (and, with
    ``--trim``, after glibc's ``malloc_trim(0)``: what the allocator keeps of freed memory
    then no longer counts, what is still held does)."""
    for _ in range(3):  # a finalizer run by one collection may free a cycle for the next
        gc.collect()
    if os.environ.get("JANUS_BENCH_TRIM"):
        import ctypes
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


# ------------------------------------------------------------------ the programs (as users write them)
def make_model():
    """Two dense layers as ``tf.Variable``s."""
    init = tf.random.stateless_normal
    return {"w1": tf.Variable(init([16, 32], seed=(1, 2)) * 0.1), "b1": tf.Variable(tf.zeros([32])),
            "w2": tf.Variable(init([32, 1], seed=(3, 4)) * 0.1), "b2": tf.Variable(tf.zeros([1]))}


def make_step(model, lr):
    """A training step closing over its model and learning rate."""
    def step(x, y):
        with tf.GradientTape() as tape:
            h = tf.nn.relu(x @ model["w1"] + model["b1"])
            loss = tf.reduce_mean((h @ model["w2"] + model["b2"] - y) ** 2)
        variables = list(model.values())
        for v, g in zip(variables, tape.gradient(loss, variables)):
            v.assign_sub(lr * g)
        return loss
    return step


class Trainer:
    """A step that reads and writes a Python int of its object."""

    def __init__(self):
        self.model = make_model()
        self.steps = 0

    def train_step(self, x, y):
        self.steps += 1
        lr = 0.05 / (1.0 + 0.001 * self.steps)
        with tf.GradientTape() as tape:
            h = tf.nn.relu(x @ self.model["w1"] + self.model["b1"])
            loss = tf.reduce_mean((h @ self.model["w2"] + self.model["b2"] - y) ** 2)
        variables = list(self.model.values())
        for v, g in zip(variables, tape.gradient(loss, variables)):
            v.assign_sub(lr * g)
        return loss


def _wrapper(mode: str):
    return {"eager": lambda f: f, "janus": janus.function, "tf.function": tf.function}[mode]


def _batch():
    x = tf.random.stateless_normal([64, 16], seed=(5, 6))
    return x, tf.reduce_sum(x[:, :4], axis=1, keepdims=True)


def run_epochs(mode: str, epochs: int) -> dict:
    wrap, model = _wrapper(mode), make_model()
    x, y = _batch()
    marks, loss = {}, None
    for epoch in range(1, epochs + 1):
        step = wrap(make_step(model, 0.01))
        for _ in range(6):
            loss = step(x, y)
        if epoch in (20, 100, 200, 300, epochs):
            marks[epoch] = rss_mb()
    return {"marks": marks, "from": 20, "loss": float(loss)}


def run_reset(mode: str, cycles: int) -> dict:
    model = make_model()
    x, y = _batch()
    fn = make_step(model, 0.01)
    step = janus.function(fn) if mode == "janus" else fn
    marks, loss = {}, None
    for cycle in range(1, cycles + 1):
        if mode == "janus":
            janus.reset()
        elif mode == "tf.function":
            step = tf.function(fn)
        for _ in range(6):
            loss = step(x, y)
        if cycle in (10, cycles):
            marks[cycle] = rss_mb()
    if mode == "janus":
        assert janus.stats(step)["graph_calls"] == 3, janus.stats(step)
    return {"marks": marks, "from": 10, "loss": float(loss)}


def run_fed(mode: str, calls: int) -> dict:
    trainer = Trainer()
    step = _wrapper(mode)(Trainer.train_step)
    x, y = _batch()
    marks, loss = {}, None
    for call in range(1, calls + 1):
        loss = step(trainer, x, y)
        if call in (1000, calls):
            marks[call] = rss_mb()
    return {"marks": marks, "from": 1000, "loss": float(loss), "steps": trainer.steps}


PROGRAMS = {"epochs": run_epochs, "reset": run_reset, "fed": run_fed}


# ------------------------------------------------------------------ the parent
def _worker(program: str, mode: str, size: int) -> dict:
    start = time.perf_counter()
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", program, mode, str(size)],
                         capture_output=True, text=True, check=False)
    if out.returncode:
        raise RuntimeError(f"{program}/{mode} failed:\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["seconds"] = time.perf_counter() - start
    return result


def _growth(result: dict) -> dict[int, float]:
    marks = {int(k): v for k, v in result["marks"].items()}
    base = marks[result["from"]]
    return {k: v - base for k, v in marks.items() if k != result["from"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=300)
    parser.add_argument("--cycles", type=int, default=100)
    parser.add_argument("--calls", type=int, default=30000)
    parser.add_argument("--programs", default="epochs,reset,fed")
    parser.add_argument("--modes", default="eager,janus,tf.function", help="e.g. janus alone, from another checkout")
    parser.add_argument("--trim", action="store_true", help="measure after malloc_trim(0) (glibc)")
    parser.add_argument("--json")
    parser.add_argument("--worker", nargs=3)
    args = parser.parse_args()
    if args.worker:
        program, mode, size = args.worker
        print(json.dumps(PROGRAMS[program](mode, int(size))))
        return
    if args.trim:
        os.environ["JANUS_BENCH_TRIM"] = "1"  # read by the workers
    sizes = {"epochs": args.epochs, "reset": args.cycles, "fed": args.calls}
    programs = args.programs.split(",")
    wanted = args.modes.split(",")
    results: dict = {(p, m): [] for p in programs for m in MODES[p] if m in wanted}
    for r in range(args.rounds):
        for p in programs:
            modes = [m for m in MODES[p] if m in wanted]
            for m in modes[r % len(modes):] + modes[:r % len(modes)]:  # alternate who goes first
                results[(p, m)].append(_worker(p, m, sizes[p]))
                print(f"round {r + 1}: {p}/{m}: {_growth(results[(p, m)][-1])} MB "
                      f"({results[(p, m)][-1]['seconds']:.0f} s)", file=sys.stderr, flush=True)
    table = _table(results, sizes)
    print(table)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({f"{p}/{m}": rs for (p, m), rs in results.items()}, f, indent=1)


def _table(results: dict, sizes: dict) -> str:
    lines = [f"janus from {os.path.dirname(os.path.dirname(janus.__file__))}",
             "| program | mode | growth (MB, median; min-max) | per unit | seconds |", "|---|---|---|---|---|"]
    for (p, m), rs in results.items():
        growths = [_growth(r) for r in rs]
        marks = sorted(growths[0])
        cells = "; ".join(f"{k}: {statistics.median(g[k] for g in growths):+.1f} "
                          f"({min(g[k] for g in growths):+.1f}..{max(g[k] for g in growths):+.1f})" for k in marks)
        last = marks[-1]
        units = last - rs[0]["from"]
        per = statistics.median(g[last] for g in growths) * 1024 / units
        lines.append(f"| {p} | {m} | {cells} | {per:+.2f} KB | {statistics.median(r['seconds'] for r in rs):.0f} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
