"""What XLA does to an example's training step: Janus with and without XLA clusters, and
``tf.function`` with and without whole-function XLA, in one process, alternating windows.

    .venv/bin/python benchmarks/xla_clusters.py lstm lenet treernn [--windows 6] [--steps 30]
    .venv/bin/python benchmarks/xla_clusters.py treernn treelstm --modes janus,janus+xla
    .venv/bin/python benchmarks/xla_clusters.py treernn treelstm --count
    .venv/bin/python benchmarks/xla_clusters.py --kernels

Each mode builds the example's own trainer (same seed), runs ``--warmup`` steps, then the
modes take turns running windows of ``--steps`` steps on fresh batches; a mode's number is
the median over its windows of the window's median step time, and each ratio the median
over windows of one mode's window over the other's window in the same turn.
``tf.function(jit_compile=True)`` drops assertions (``../shared/TF-NOTES.md``): Janus
cannot compile whole graphs that way; it is here as the measure of what XLA could give.

``--count`` runs Janus with XLA in a child process instead, with TensorFlow's clustering
dump (``TF_XLA_FLAGS=--tf_xla_clustering_debug``) and its compilation cache's log
(``TF_CPP_VMODULE=device_compiler=2``), and reports the XLA clusters of the example's graphs
(each runs once per step: an ``_XlaCompile`` and an ``_XlaRun`` op, a cache lookup keyed by
its inputs' shapes and compile-time constant values), how many hold a single op, the
compilations (and their time) during warm-up and during ``--windows`` x ``--steps`` later
steps (a graph built late compiles its clusters then), and the clusters compiled more than
once (for new input shapes or new values of compile-time constant inputs).

``--kernels`` compares XLA:CPU's code with TensorFlow's kernels: a chain of ten ops of one
kind marked as one cluster against the same graph unmarked, alternating calls; and 50 small
clusters cut apart by an unmarked op (what a cluster's launch costs).

Results: ``docs/xla.md``.
"""
from __future__ import annotations

import argparse
import collections
import gc
import glob
import importlib
import importlib.util
import os
import re
import statistics
import subprocess
import sys
import tempfile
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


def window(trainer, steps: int) -> tuple[float, float]:
    """The window's median and mean step time (ms); the mean counts a step that compiled."""
    times = []
    for _ in range(steps):
        batch = trainer.next_batch()
        start = time.perf_counter()
        float(trainer.train_step(*batch))
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3, statistics.mean(times) * 1e3


def run(example: str, args) -> None:
    modes = args.modes
    trainers = {mode: build(example, mode) for mode in modes}  # all built first: building seeds TF
    for trainer in trainers.values():
        for _ in range(args.warmup):
            float(trainer.train_step(*trainer.next_batch()))
    gc.collect()
    gc.freeze()
    ms = {mode: [] for mode in modes}
    means = {mode: [] for mode in modes}
    for w in range(args.windows):
        for k in range(len(modes)):
            mode = modes[(w + k) % len(modes)]
            gc.collect()
            median, mean = window(trainers[mode], args.steps)
            ms[mode].append(median)
            means[mode].append(mean)

    def ratio(a: str, b: str, of: dict = ms) -> str:
        if a not in of or b not in of:
            return "-"
        r = [x / y for x, y in zip(of[a], of[b])]
        return f"{statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f})"

    steps = ", ".join(f"{m} {statistics.median(v):.2f} ms" for m, v in ms.items())
    print(f"| {example} | {steps} | {ratio('janus+xla', 'janus')} | {ratio('janus+xla', 'janus', means)} | "
          f"{ratio('tf.function+xla', 'tf.function')} |",
          flush=True)


_COMPILED = "Compilation of XLA executable time"
_COMPILING = re.compile(r"Instantly compiling for signature: (cluster_\d+)")
_TIMED = "xla_clusters.py: timed steps start"


def count_child(example: str, args) -> None:
    """In the child: warm up, mark the timed steps' start on stderr, run them."""
    trainer = build(example, "janus+xla")
    for _ in range(args.warmup):
        float(trainer.train_step(*trainer.next_batch()))
    print(_TIMED, file=sys.stderr, flush=True)
    for _ in range(args.windows * args.steps):
        float(trainer.train_step(*trainer.next_batch()))


def clusters(dump: str) -> list[int]:
    """The sizes of the XLA clusters in TensorFlow's clustering dumps under ``dump``."""
    from google.protobuf import text_format
    from tensorflow.core.framework import graph_pb2

    sizes = []
    for path in glob.glob(os.path.join(dump, "mark_for_compilation_annotated*.pbtxt")):
        with open(path) as f:
            graph = text_format.Parse(f.read(), graph_pb2.GraphDef())
        members = collections.Counter(n.attr["_XlaCluster"].s for n in graph.node if "_XlaCluster" in n.attr)
        sizes += members.values()
    return sizes


def count(example: str, args) -> None:
    with tempfile.TemporaryDirectory() as dump:
        env = dict(os.environ, TF_XLA_FLAGS="--tf_xla_clustering_debug", TF_DUMP_GRAPH_PREFIX=dump,
                   TF_CPP_MIN_LOG_LEVEL="0", TF_CPP_VMODULE="device_compiler=2")
        argv = [sys.executable, os.path.abspath(__file__), example, "--count-child", f"--warmup={args.warmup}",
                f"--windows={args.windows}", f"--steps={args.steps}"]
        log = subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stderr
        sizes = clusters(dump)
    warmup, _, timed = log.partition(_TIMED)
    again = [n - 1 for n in collections.Counter(_COMPILING.findall(log)).values() if n > 1]

    def compiled(part: str) -> str:
        seconds = sum(int(us) for us in re.findall(_COMPILED + r": [^(]*\((\d+) us\)", part)) / 1e6
        return f"{part.count(_COMPILED)} ({seconds:.1f} s)"
    print(f"| {example} | {len(sizes)} | {sum(1 for n in sizes if n == 1)} | {sum(sizes)} | {compiled(warmup)} | "
          f"{compiled(timed)} in {args.windows * args.steps} steps | {len(again)} ({sum(again)} times) |",
          flush=True)


def kernels() -> None:
    """XLA:CPU against TensorFlow's kernels: chains of ops marked as clusters, or unmarked."""
    import numpy as np
    import tensorflow as tf
    from janus import _tf_private

    rng = np.random.RandomState(0)

    def weights(*shape):
        return tf.constant(rng.randn(*shape).astype(np.float32) * 0.1)

    cases = {  # name: (input shape, one link of the chain)
        "10 Conv2D 5x5, 16 to 16 channels, on 32x14x14": ([32, 14, 14, 16], lambda h, w=weights(5, 5, 16, 16):
                                                    tf.nn.conv2d(h, w, 1, "SAME")),
        "10 MatMul 32x120 by 120x120": ([32, 120], lambda h, w=weights(120, 120): tf.matmul(h, w)),
        "10 MatMul 20x64 by 64x64": ([20, 64], lambda h, w=weights(64, 64): tf.matmul(h, w)),
        "10 x (Tanh, Mul, AddV2) on 32x120": ([32, 120], lambda h: tf.tanh(h) * 0.5 + h),
        "10 x (Relu, Mul, AddV2) on 32x120": ([32, 120], lambda h: tf.nn.relu(h) * 0.5 + h),
    }

    def chain(shape, op, xla, clusters=1):
        @tf.function(autograph=False)
        def f(x):
            h = x
            for _ in range(clusters):
                for _ in range(10 if clusters == 1 else 1):
                    h = op(h)
                if clusters > 1:
                    h = tf.floor(h)  # left unmarked: it cuts the chain into clusters
            if xla:
                for o in h.graph.get_operations():
                    if o.type not in ("Placeholder", "Floor"):
                        _tf_private.mark_for_xla(o)
            return h
        return f.get_concrete_function(tf.TensorSpec(shape, tf.float32))

    print("| graph | TensorFlow's kernels | XLA | XLA / TensorFlow |")
    print("|---|---|---|---|")
    cases["50 clusters of (Relu, Mul, AddV2) on 16x32, cut by Floor"] = ([16, 32], lambda h: tf.nn.relu(h) * 0.5 + h, 50)
    for name, (shape, op, *clusters) in cases.items():
        x = tf.constant(rng.randn(*shape).astype(np.float32))
        fns = {xla: chain(shape, op, xla, *clusters) for xla in (False, True)}
        times = {False: [], True: []}
        for i in range(220):
            for xla, fn in fns.items():
                start = time.perf_counter()
                _tf_private.call_flat(fn, [x], xla=xla)
                if i >= 20:  # the first calls instantiate and compile
                    times[xla].append(time.perf_counter() - start)
        plain, xla = (statistics.median(times[k]) * 1e6 for k in (False, True))
        print(f"| {name} | {plain:.0f} us | {xla:.0f} us | {xla / plain:.2f} |", flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("examples", nargs="*")
    parser.add_argument("--windows", type=int, default=6)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=60)
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated, of " + ", ".join(MODES))
    parser.add_argument("--count", action="store_true", help="count clusters and compilations (Janus with XLA)")
    parser.add_argument("--count-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--kernels", action="store_true", help="XLA:CPU against TensorFlow's kernels, op by op")
    args = parser.parse_args(argv)
    args.modes = tuple(args.modes.split(","))
    if args.kernels:
        kernels()
        return
    if not args.examples:
        parser.error("name examples (of examples/) or give --kernels")
    if not set(args.modes) <= set(MODES):
        sys.exit(f"xla_clusters.py: modes are {', '.join(MODES)}")
    for example in args.examples:
        if importlib.util.find_spec(example) is None:
            sys.exit(f"xla_clusters.py: no example named {example!r} in examples/")
    if args.count_child:
        count_child(args.examples[0], args)
        return
    if args.count:
        print("| example | XLA clusters | of one op | ops in clusters | compilations (time) in warm-up | after "
              "| clusters compiled again (times) |")
        print("|---|---|---|---|---|---|---|")
        for example in args.examples:
            count(example, args)
        return
    print("| example | median step time | Janus with XLA / without (step time) | same, mean step time "
          "| tf.function XLA / without |")
    print("|---|---|---|---|---|")
    for example in args.examples:
        run(example, args)


if __name__ == "__main__":
    main()
