"""What the report page's and the timeline's per-call log costs a graph call (issue #42).

One process, modes interleaved window by window (the machine is shared: compare only
within one run), per-call medians of the windows:

* ``bare``: the driver's call without the report hook (``JanusFunction._call``),
* ``off``: a call as the program makes it, recording off (the default),
* ``on``: recording every call (``JANUS_TRACE`` / ``JANUS_REPORT_HTML``, first calls),
* ``on, sampled``: recording past the first calls (one in 50 kept, the rest timed and totalled).

Two functions: a small graph (one matmul) and a step split at a graph break (a NumPy call).

Usage: ``python benchmarks/report_cost.py [--windows N] [--calls N]``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import janus  # noqa: E402
from janus.reporting import events  # noqa: E402

W = tf.Variable(tf.eye(8))


@janus.function
def small(x):
    return tf.matmul(x, W) + 1.0


@janus.function
def split(x):
    y = tf.matmul(x, W)
    s = np.sum(y.numpy())  # a graph break: Python between two graph segments
    return y * s


def _window(call, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        call()
    return (time.perf_counter() - start) / n


def _modes(jf, x) -> dict:
    full = events.EventLog(full_calls=10 ** 9)
    sampled = events.EventLog(full_calls=0, sample_every=50)

    def run(log, direct=False):
        def call():
            events.ACTIVE = log
            try:
                return jf._call(x) if direct else jf(x)
            finally:
                events.ACTIVE = None
        return call
    return {"bare": run(None, direct=True), "off": run(None), "on": run(full), "on, sampled": run(sampled)}


def measure(fn, x, calls: int, windows: int) -> dict:
    jf = fn.__janus_function__
    for _ in range(40):  # profile, convert, settle trials
        fn(x)
    modes = _modes(jf, x)
    times: dict = {m: [] for m in modes}
    for _ in range(windows):
        for name, call in modes.items():
            times[name].append(_window(call, calls))
    return {m: statistics.median(t) * 1e6 for m, t in times.items()}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--windows", type=int, default=15)
    p.add_argument("--calls", type=int, default=200)
    a = p.parse_args()
    x = tf.ones((4, 8))
    print(f"median µs per call over {a.windows} interleaved windows of {a.calls} calls")
    print(f"{'function':<10} {'bare':>9} {'off':>9} {'on':>9} {'on, sampled':>12}   off/bare  on/off")
    for name, fn in (("small", small), ("split", split)):
        r = measure(fn, x, a.calls, a.windows)
        print(f"{name:<10} {r['bare']:>9.1f} {r['off']:>9.1f} {r['on']:>9.1f} {r['on, sampled']:>12.1f}   "
              f"{r['off'] / r['bare']:>7.3f}  {r['on'] / r['off']:>6.3f}")
    print(f"graph calls of small: {janus.stats(small)['graph_calls']}, segment graph runs of split: "
          f"{janus.stats(split)['segment_graph_calls']}")


if __name__ == "__main__":
    main()
