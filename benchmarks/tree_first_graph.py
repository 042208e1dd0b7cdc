"""The tree examples' first graph: Janus's conversion against tf.function's first call.

    .venv/bin/python benchmarks/tree_first_graph.py [--rounds 6] [treernn treelstm]

Each round is a fresh process that measures, for one example, both of:

* ``tf.function(train_step)``'s first call (trace, graph optimization, first run) on the
  batch Janus converts on (the fourth: the same seed gives both trainers the same batches);
* Janus: ``janus.function(train_step)`` called on fresh batches until a call runs as a
  graph: the conversion's seconds (``Report.seconds``, what ``janus.explain`` prints as
  "converted in") and the time to the first graph (the summed wall time of those calls:
  the profiled eager calls, the conversion, the first graph run).

Rounds alternate which of the two goes first (the first pays TensorFlow's one-time costs).
Also printed, once per example: the operations of Janus's graph and of the hand-written
batched graph (``benchmarks/handwritten``), gradient and optimizer update included, with
the functions they call (conditionals' branches and gradients).  Medians and spreads over
rounds; timing lives here, not in tests.
"""
import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path[:0] = [os.path.join(os.path.dirname(HERE), "examples"), HERE]


def _ops(concrete) -> int:
    graph = concrete.graph.as_graph_def()
    return len(graph.node) + sum(len(f.node_def) for f in graph.library.function)


def _tf_function(name: str) -> float:
    import tensorflow as tf
    trainer = importlib.import_module(name).build(0)
    for _ in range(3):
        trainer.next_batch()
    batch = trainer.next_batch()
    step = tf.function(trainer.train_step)
    start = time.perf_counter()
    float(step(*batch))
    return time.perf_counter() - start


def _janus(name: str, ops: bool) -> dict:
    import janus
    trainer = importlib.import_module(name).build(0)
    trainer.train_step = janus.function(trainer.train_step)
    spent = 0.0
    for calls in range(1, 20):
        batch = trainer.next_batch()
        start = time.perf_counter()
        float(trainer.train_step(*batch))
        spent += time.perf_counter() - start
        if janus.stats(trainer.train_step)["graph_calls"]:
            break
    out = {"conversion_s": janus.explain(trainer.train_step).entries[0].report.seconds, "first_graph_s": spent,
           "calls": calls}
    if ops:
        hand = importlib.import_module("handwritten." + name).build(0)
        hand.step()
        out["janus_ops"] = _ops(janus.concrete_function(trainer.train_step))
        out["handwritten_ops"] = _ops(hand._step.get_concrete_function(*importlib.import_module(
            "handwritten.trees").SIGNATURE))
    return out


def worker(name: str, tf_first: bool, ops: bool) -> dict:
    if tf_first:
        tf_s = _tf_function(name)
        out = _janus(name, ops)
    else:
        out = _janus(name, ops)
        tf_s = _tf_function(name)
    out["tf_function_first_call_s"] = tf_s
    return out


def _spread(values: list) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("examples", nargs="*", default=["treernn", "treelstm"])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        name, tf_first, ops = args.worker
        print(json.dumps(worker(name, tf_first == "1", ops == "1")))
        return
    print("| example | tf.function first call (s) | Janus conversion (s) | conversion / tf.function | "
          "Janus time to first graph (s) | ops: Janus / hand-written |")
    print("|---|---|---|---|---|---|")
    for name in args.examples:
        rows = []
        for r in range(args.rounds):
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", name, str(r % 2), "1" if r == 0 else "0"]
            done = subprocess.run(cmd, capture_output=True, text=True, check=True)
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        tf_s = [r["tf_function_first_call_s"] for r in rows]
        conv = [r["conversion_s"] for r in rows]
        print(f"| {name} | {_spread(tf_s)} | {_spread(conv)} | {_spread([c / t for c, t in zip(conv, tf_s)])} | "
              f"{_spread([r['first_graph_s'] for r in rows])} | {rows[0]['janus_ops']:,} / "
              f"{rows[0]['handwritten_ops']:,} |", flush=True)


if __name__ == "__main__":
    main()
