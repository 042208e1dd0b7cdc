"""Janus against tf.function where both run graphs: per-step time, interleaved in one process.

    .venv/bin/python benchmarks/janus_vs_tf_function.py lenet resnet inception lstm

For each example, one trainer runs ``train_step`` through Janus and another through
``tf.function`` (the examples where tf.function gives eager's numbers: lenet, resnet,
inception, lstm); after a warm-up, windows of 10 steps alternate between the two, and
the median window of each is reported.  Also timed: Janus with Grappler's dependency
optimizer back on (``janus._tf_private._exact_call_options`` turns it off so that state
writes keep waiting for the ops that may fail), to see what that ordering costs.
"""
import argparse
import importlib
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))

import tensorflow as tf  # noqa: E402
from tensorflow.core.protobuf import config_pb2  # noqa: E402

import janus  # noqa: E402
from janus import _tf_private  # noqa: E402


def _with_dependency_optimizer(exact):
    """``_exact_call_options`` with the dependency optimizer on again."""
    def options(base, remapping=True):
        chosen = exact(base, remapping)
        config = config_pb2.ConfigProto()
        config.ParseFromString(chosen.config_proto_serialized)
        config.graph_options.rewrite_options.dependency_optimization = 0  # DEFAULT (on)
        return type(chosen)(executor_type=chosen.executor_type, config_proto=config)
    return options


def measure(name: str, rounds: int = 6, steps: int = 10) -> dict:
    module = importlib.import_module(name)
    via_janus, via_tf = module.build(0), module.build(0)
    via_janus.train_step = janus.function(via_janus.train_step)
    via_tf.train_step = tf.function(via_tf.train_step)
    batches = [via_janus.next_batch() for _ in range(steps)]
    exact = _tf_private._exact_call_options
    modes = {"janus": (via_janus, exact), "janus, dependency optimizer on": (via_janus, _with_dependency_optimizer(exact)),
             "tf.function": (via_tf, exact)}

    def window(trainer) -> float:
        start = time.perf_counter()
        for batch in batches:
            float(trainer.train_step(*batch))
        return (time.perf_counter() - start) / steps

    times: dict = {m: [] for m in modes}
    try:
        for r in range(rounds + 1):
            for mode, (trainer, options) in modes.items():
                _tf_private._exact_call_options = options
                _tf_private._EXACT_ATTRS.clear()
                seconds = window(trainer)
                if r:  # the first round warms up (conversion, traces, each setting's Grappler run)
                    times[mode].append(seconds)
    finally:
        _tf_private._exact_call_options = exact
        _tf_private._EXACT_ATTRS.clear()
    assert janus.stats(via_janus.train_step)["graph_calls"] > 0
    return {m: statistics.median(t) for m, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("examples", nargs="+")
    args = parser.parse_args()
    for name in args.examples:
        t = measure(name)
        print(f"{name}: " + ", ".join(f"{m} {s * 1e3:.2f} ms" for m, s in t.items()) +
              f"; tf.function / Janus time {t['tf.function'] / t['janus']:.2f}")


if __name__ == "__main__":
    main()
