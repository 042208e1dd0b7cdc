"""Controls for the 3.13 crash of the concurrency sweep (issue #39 item 2), without Janus.

    python -X faulthandler tests/scripts/monitoring_control.py --mode eager|one|each [--iters N]
    python -X faulthandler tests/scripts/monitoring_control.py --mode ... --processes 200 [--jobs 2]

The second form runs one round in each of 200 fresh processes forked after the imports
(as ``concurrency_stress.py`` does) and prints the count of each exit status.

Four threads (the main one and three others) run the sweep's tape step eagerly, one
shared variable and one of their own each, under a 50 us switch interval:

* ``eager``: nothing else (TensorFlow alone);
* ``one``: thread 0 wraps each of its calls in a minimal ``sys.monitoring`` tool used the
  way ``janus_profiler`` uses it: take a tool id, register callbacks, ``set_events``
  (``PY_START | RAISE | PY_UNWIND``), ``restart_events``; the ``PY_START`` callback ignores
  other threads, puts local events (``INSTRUCTION | CALL | ...``) on the step's code and
  returns ``DISABLE`` for any other code; afterwards every event off, callbacks
  unregistered, the id freed, ``restart_events``;
* ``each``: every thread does so around its calls, each with its own tool id (as several
  Janus functions profiling their first calls at once do).

Exit status 0 when every gradient and variable is right; a crash is the process dying.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import threading

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

THREADS = 4
_tools = threading.Lock()


def make_train_step(w):
    def train_step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * x)
        g = tape.gradient(loss, w)
        w.assign_sub(0.5 * g)
        return g
    return train_step


class Tool:
    """A minimal profiler-like sys.monitoring tool for one thread."""

    def __init__(self, code):
        self.code, self.thread, self.tool, self.local = code, threading.get_ident(), None, set()

    def _callbacks(self):
        E = sys.monitoring.events
        start = self._start
        nothing = self._nothing
        return ((E.PY_START, start), (E.PY_RESUME, nothing), (E.PY_RETURN, nothing),
                (E.PY_YIELD, nothing), (E.PY_UNWIND, nothing), (E.RAISE, nothing),
                (E.INSTRUCTION, nothing), (E.CALL, nothing))

    def install(self):
        mon = sys.monitoring
        E = mon.events
        with _tools:
            tool = next(i for i in (2, 3, 4, 5) if mon.get_tool(i) is None)
            mon.use_tool_id(tool, "control")
            for ev, cb in self._callbacks():
                mon.register_callback(tool, ev, cb)
            mon.set_events(tool, E.PY_START | E.RAISE | E.PY_UNWIND)
            self.tool = tool
            mon.restart_events()

    def uninstall(self):
        mon = sys.monitoring
        with _tools:
            tool, self.tool = self.tool, None
            mon.set_events(tool, 0)
            for code in self.local:
                mon.set_local_events(tool, code, 0)
            for ev, _ in self._callbacks():
                mon.register_callback(tool, ev, None)
            mon.free_tool_id(tool)
            mon.restart_events()

    def _start(self, code, offset):
        if threading.get_ident() != self.thread:
            return None
        if code is not self.code:
            return sys.monitoring.DISABLE
        if code not in self.local:
            E = sys.monitoring.events
            sys.monitoring.set_local_events(
                self.tool, code, E.INSTRUCTION | E.CALL | E.PY_RESUME | E.PY_RETURN | E.PY_YIELD)
            self.local.add(code)
        return None

    def _nothing(self, *args):
        return None


def run(mode: str, iters: int) -> int:
    xs = [np.array([0.25 * (i % 4), -0.5], np.float32) for i in range(iters)]
    w0 = np.array([1.0, 2.0], np.float32)
    shared_w = tf.Variable(w0)
    own_w = [tf.Variable(w0) for _ in range(THREADS)]
    shared = make_train_step(shared_w)
    own = [make_train_step(v) for v in own_w]
    code = shared.__code__
    wrong: list[str] = []
    barrier = threading.Barrier(THREADS)

    def call(t, f, x):
        if mode == "eager" or (mode == "one" and t != 0):
            return f(tf.constant(x))
        tool = Tool(code)
        tool.install()
        try:
            return f(tf.constant(x))
        finally:
            tool.uninstall()

    def work(t):
        barrier.wait()
        for i, x in enumerate(xs):
            for f in (shared, own[t]):
                g = call(t, f, x).numpy()
                if not np.array_equal(g, x):
                    wrong.append(f"thread {t} call {i}: {g} for {x}")

    threads = [threading.Thread(target=work, args=(t,)) for t in range(1, THREADS)]
    for th in threads:
        th.start()
    work(0)
    for th in threads:
        th.join()
    if not np.array_equal(shared_w.numpy(), w0 - 0.5 * THREADS * sum(xs)):
        wrong.append(f"shared w {shared_w.numpy()}")
    for v in own_w:
        if not np.array_equal(v.numpy(), w0 - 0.5 * sum(xs)):
            wrong.append(f"own w {v.numpy()}")
    for line in wrong[:8]:
        sys.stderr.write(line + "\n")
    return 1 if wrong else 0


def sweep(processes: int, jobs: int, mode: str, iters: int) -> int:
    """One round in each of ``processes`` forked processes; prints the exit statuses."""
    statuses: collections.Counter = collections.Counter()
    running: set[int] = set()
    started = 0
    while started < processes or running:
        while started < processes and len(running) < jobs:
            pid = os.fork()
            if pid == 0:
                code = 70
                try:
                    sys.setswitchinterval(5e-5)
                    code = run(mode, iters)
                finally:
                    os._exit(code)
            running.add(pid)
            started += 1
        pid, status = os.wait()
        running.discard(pid)
        statuses[os.waitstatus_to_exitcode(status)] += 1
    print(f"Python {sys.version.split()[0]}, mode {mode}: {processes} runs, exit statuses {dict(statuses)}")
    return 0 if set(statuses) == {0} else 1


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=("eager", "one", "each"), required=True)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--processes", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=1)
    opts = ap.parse_args()
    if opts.mode != "eager" and not hasattr(sys, "monitoring"):
        sys.stderr.write("sys.monitoring needs Python 3.12+\n")
        return 2
    if opts.processes:
        return sweep(opts.processes, opts.jobs, opts.mode, opts.iters)
    sys.setswitchinterval(5e-5)
    return run(opts.mode, opts.iters)


if __name__ == "__main__":
    sys.exit(main())
