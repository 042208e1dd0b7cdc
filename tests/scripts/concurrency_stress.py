"""Janus under threads, for crashes and wrong answers (issue #39 item 2).

    python -X dev -X faulthandler tests/scripts/concurrency_stress.py [--rounds N] [--calls N]
    python -X dev -X faulthandler tests/scripts/concurrency_stress.py --processes 200 [--jobs 2]

The second form is the sweep: one round in each of 200 fresh processes, forked after the
imports (``sweep``), with the count of each exit status printed at the end; the stderr of
every failed run is kept in ``$TMPDIR/janus-stress-<pid>-<run>.txt``.

Each round runs, with 4 threads at once and a 50 us switch interval:

* ``cold``: one step (variable writes, a Python list append) called while it converts;
* ``warm``: the same once it has a graph;
* ``racing``: six functions converting at once, one per thread;
* ``xla``: a step under an XLA trial (``jit_compile=None``, every run long enough);
* ``takeover``: ``janus.enable()`` with 1 ms sampling; the main thread and three others run
  training steps that record a tape (the 3.11 sampler and the pending call it queues).

Before the round, each scenario's step runs once eagerly and once under ``tf.function``,
plain TensorFlow in one thread (``warm_tensorflow``), so that TensorFlow's own dispatch
race (``tests/scripts/tf_dispatch_race.py``: it crashes eager too) does not end a run:
each op of the round has checked its argument types once already.  ``--cold-tf`` skips
that (on 3.13.0, 3 runs of 200 then die of TensorFlow's race).  ``--only takeover`` (or any scenarios) runs just those.

Every thread's results are compared with eager's (computed by the same functions without
Janus), variables and Python state after the round too.  Exit status 1 and lines on
stderr if a result differs, a thread raised, Janus noted a failure of its own ("inside
Janus", "a Janus bug", an error on the ``janus`` logger, an unraisable exception), or a
counter of ``janus.stats`` is out of its bounds; nothing is printed otherwise.  A crash is
the process dying (``-X faulthandler`` prints every thread's stack).

``janus.stats`` counters are checked with bounds, not equalities: increments from several
threads can be lost until the counters are made thread-safe (a fix on main, issue #39).
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import faulthandler
import logging
import os
import sys
import tempfile
import threading
from typing import Callable

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ["JANUS_TAKEOVER_SAMPLE_MS"] = "1"

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import janus  # noqa: E402
from janus import config  # noqa: E402

THREADS = 4
problems: list[str] = []


# -- the threads -----------------------------------------------------------------------
def run_threads(work: Callable[[int], None], n: int = THREADS) -> None:
    """Run ``work(t)`` in ``n`` threads started together; an exception is a problem."""
    barrier = threading.Barrier(n)

    def body(t: int) -> None:
        try:
            barrier.wait()
            work(t)
        except BaseException as e:  # noqa: BLE001 - the thing looked for
            problems.append(f"thread {t}: {type(e).__name__}: {e}")

    workers = [threading.Thread(target=body, args=(t,)) for t in range(n)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def same(what: str, got, expected) -> None:
    if not np.array_equal(np.asarray(got), np.asarray(expected)):
        problems.append(f"{what}: {got!r} where eager gives {expected!r}")


def janus_own_failures(name: str, f) -> None:
    """Janus's notes of its own failures (the call then ran eagerly: right, but a bug)."""
    text = str(janus.explain(f))
    for mark in ("inside Janus", "a Janus bug"):
        if mark in text:
            problems.append(f"{name}: janus.explain says {mark!r}: {text[:600]}")


def bounded_stats(name: str, f, calls: int, converts: bool = True) -> None:
    """Counters within their bounds (lost increments allowed until they are thread-safe)."""
    s = janus.stats(f)
    if not 0 < s["calls"] <= calls or s["graph_calls"] > calls or s["eager_calls"] > calls:
        problems.append(f"{name}: stats out of bounds for {calls} calls: {s}")
    if converts and s["conversions"] < 1:
        problems.append(f"{name}: never converted: {s}")


# -- the scenarios ---------------------------------------------------------------------
class Counter:
    def __init__(self):
        self.count = tf.Variable(0.0)
        self.total = tf.Variable(0.0)
        self.history = []

    def step(self, x):
        self.count.assign_add(1.0)
        self.total.assign_add(tf.reduce_sum(x))
        self.history.append(tf.reduce_sum(x))
        return x * 2.0


def one_step(name: str, warm: bool, calls: int) -> None:
    """Four threads call one step (variables written, a list appended): every update lands."""
    c = Counter()
    c.step = janus.function(c.step)
    inputs = {(t, i): np.full([3], float(i % 5 + t), np.float32) for t in range(THREADS) for i in range(calls)}
    sums = [float(v.sum()) for v in inputs.values()]
    if warm:
        for i in range(4):
            c.step(tf.fill([3], float(i)))
        sums += [float(i) * 3 for i in range(4)]

    def work(t: int) -> None:
        for i in range(calls):
            x = inputs[t, i]
            same(f"{name} thread {t} call {i}", c.step(tf.constant(x)).numpy(), x * 2.0)

    run_threads(work)
    same(f"{name} count", c.count.numpy(), float(len(sums)))
    same(f"{name} total", c.total.numpy(), np.float32(sum(sums)))
    same(f"{name} history", sorted(float(h) for h in c.history), sorted(sums))
    janus_own_failures(name, c.step)
    bounded_stats(name, c.step, len(sums))


def racing_conversions(calls: int) -> None:
    """Six functions convert at once (a thread each); each result is eager's."""
    def make(k):
        def step(x):
            return tf.tanh(x) * float(k) + tf.reduce_mean(x)
        return step

    plain = [make(k) for k in range(6)]
    functions = [janus.function(p, profile_calls=0) for p in plain]
    inputs = [np.linspace(-1.0, 1.0, i % 4 + 2, dtype=np.float32) for i in range(calls)]
    expected = [[p(tf.constant(x)).numpy() for x in inputs] for p in plain]

    def work(t: int) -> None:
        for i, x in enumerate(inputs):
            same(f"racing {t} call {i}", functions[t](tf.constant(x)).numpy(), expected[t][i])

    run_threads(work, len(functions))
    for k, f in enumerate(functions):
        janus_own_failures(f"racing {k}", f)
        bounded_stats(f"racing {k}", f, calls)


class Heavy:
    def __init__(self):
        self.count = tf.Variable(0.0)
        self.w = tf.constant(np.random.RandomState(0).rand(64, 64).astype(np.float32) * 0.01)

    def step(self, x):
        y = x
        for _ in range(4):
            y = tf.nn.relu(tf.matmul(y, self.w) + 0.5)
        self.count.assign_add(1.0)
        return y


def xla_trial(calls: int) -> None:
    """A step under its XLA trial, called from four threads: no update lost, eager's numbers."""
    saved = config.LIMITS
    config.LIMITS = dataclasses.replace(saved, xla_min_run_ms=0.0)  # a trial however fast this machine runs the graph
    try:
        h, eager = Heavy(), Heavy()
        h.step = janus.function(h.step, jit_compile=None)
        inputs = [np.full([64, 64], float(i % 3), np.float32) for i in range(3)]
        expected = [eager.step(tf.constant(x)).numpy() for x in inputs]

        def work(t: int) -> None:
            for i in range(calls):
                got = h.step(tf.constant(inputs[i % 3])).numpy()
                np.testing.assert_allclose(got, expected[i % 3], rtol=1e-5, atol=1e-6)

        run_threads(work)
    finally:
        config.LIMITS = saved
    same("xla count", h.count.numpy(), float(THREADS * calls))
    janus_own_failures("xla", h.step)
    bounded_stats("xla", h.step, THREADS * calls)


def make_train_step(w):
    def train_step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * x)
        g = tape.gradient(loss, w)
        w.assign_sub(0.5 * g)   # exact in binary: the final value does not depend on the order
        return g
    return train_step


def taken_over(calls: int) -> None:
    """``janus.enable()``: the main thread and three others run tape steps (one shared, one
    each); gradients and final variables are eager's."""
    xs = [np.array([0.25 * (i % 4), -0.5], np.float32) for i in range(calls)]
    w0 = np.array([1.0, 2.0], np.float32)
    final = w0 - 0.5 * (THREADS * sum(xs))
    shared_w = tf.Variable(w0)
    own_w = [tf.Variable(w0) for _ in range(THREADS)]
    with janus.enabled():
        shared = make_train_step(shared_w)
        own = [make_train_step(v) for v in own_w]

        def work(t: int) -> None:
            for i, x in enumerate(xs):
                same(f"takeover shared {t} call {i}", shared(tf.constant(x)).numpy(), x)
                same(f"takeover own {t} call {i}", own[t](tf.constant(x)).numpy(), x)

        run_threads(work, THREADS - 1)
        work(THREADS - 1)   # the main thread's calls: its own stack is sampled
    same("takeover shared w", shared_w.numpy(), final)
    for t, v in enumerate(own_w):
        same(f"takeover own w {t}", v.numpy(), w0 - 0.5 * sum(xs))


def warm_tensorflow() -> None:
    """Plain TensorFlow, one thread: run each scenario's step once eagerly and once traced.

    TensorFlow's op dispatch has a race of its own: it type-checks an op's arguments from a
    buffer shared by every thread calling that op, and the first check of a type runs
    Python (``isinstance`` against its ``typing.Protocol`` classes), where another thread's
    call of the same op can overwrite the buffer; the checker then reads that call's freed
    arguments (SIGBUS in ``abc.__instancecheck__``; eager alone, without Janus:
    ``tests/scripts/tf_dispatch_race.py``).  Each checker caches its answer per type, so once
    the round's argument types (eager tensors, graph tensors, variables, lists) have been
    seen by its ops in one thread, the race is gone and the sweep tests Janus.  Janus itself
    is not run here: its conversions stay cold.  ``--cold-tf`` skips this."""
    w = tf.Variable(np.array([1.0, 2.0], np.float32))
    c, h = Counter(), Heavy()
    steps = [(make_train_step(w), [np.array([0.25, -0.5], np.float32)]),
             (c.step, [np.ones([3], np.float32)]),
             (h.step, [np.ones([64, 64], np.float32)])]
    for k in (0, 1):
        step = lambda x, k=k: tf.tanh(x) * float(k) + tf.reduce_mean(x)  # noqa: E731
        steps.append((step, [np.linspace(-1.0, 1.0, n, dtype=np.float32) for n in (2, 3)]))
    for fn, inputs in steps:
        traced = tf.function(fn, autograph=False)   # no generated files left in $TMPDIR
        for x in inputs:
            fn(tf.constant(x))
            traced(tf.constant(x))


SCENARIOS = {
    "cold": lambda calls: one_step("cold", False, calls),
    "warm": lambda calls: one_step("warm", True, calls),
    "racing": racing_conversions,
    "xla": xla_trial,
    "takeover": taken_over,
}


# -- Janus's own failures reported elsewhere -------------------------------------------
class _Errors(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        problems.append(f"janus logged {record.levelname}: {record.getMessage()[:300]}")


def watch_janus() -> None:
    """Errors on the ``janus`` logger and unraisable exceptions are problems."""
    handler = _Errors(level=logging.ERROR)
    logging.getLogger("janus").addHandler(handler)
    sys.unraisablehook = lambda u: problems.append(f"unraisable: {u.exc_type.__name__}: {u.exc_value}")


def _child(n: int, child_argv: list[str]) -> int:
    """Fork a child that runs one round with its stderr in a file; returns its pid."""
    path = os.path.join(tempfile.gettempdir(), f"janus-stress-{os.getpid()}-{n}.txt")
    pid = os.fork()
    if pid == 0:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 2)
        code = 70
        try:
            code = main(child_argv)
        finally:
            os._exit(code)
    return pid


def sweep(processes: int, jobs: int, child_argv: list[str]) -> int:
    """Run one round in each of ``processes`` fresh processes (``jobs`` at once), forked
    from this one after its imports (TensorFlow's runtime not started: no op has run), so
    that a run costs its round and not TensorFlow's import.  Prints the exit statuses
    seen (a negative one is the signal that ended the run) and keeps the stderr of
    every failed run."""
    if sys.flags.dev_mode is False or not faulthandler.is_enabled():
        sys.stderr.write("run the sweep under -X dev -X faulthandler (its runs inherit them)\n")
        return 2
    statuses: collections.Counter = collections.Counter()
    running: dict[int, int] = {}
    started = 0
    while started < processes or running:
        while started < processes and len(running) < jobs:
            running[_child(started, child_argv)] = started
            started += 1
        pid, status = os.wait()
        n = running.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        statuses[code] += 1
        path = os.path.join(tempfile.gettempdir(), f"janus-stress-{os.getpid()}-{n}.txt")
        if code != 0:
            sys.stdout.write(f"run {n}: exit {code}, stderr in {path}\n")
            sys.stdout.flush()
        elif os.path.exists(path):
            os.unlink(path)
    sys.stdout.write(f"Python {sys.version.split()[0]}: {processes} runs, exit statuses {dict(statuses)}\n")
    return 0 if set(statuses) == {0} else 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--only", nargs="*", choices=sorted(SCENARIOS), default=sorted(SCENARIOS))
    ap.add_argument("--processes", type=int, default=0, help="the sweep: this many fresh processes")
    ap.add_argument("--jobs", type=int, default=1, help="the sweep: processes at once")
    ap.add_argument("--cold-tf", action="store_true",
                    help="skip warm_tensorflow: TensorFlow's own dispatch race stays possible")
    opts = ap.parse_args(argv)
    if opts.processes:
        return sweep(opts.processes, opts.jobs,
                     ["--rounds", str(opts.rounds), "--calls", str(opts.calls), "--only"] + opts.only
                     + (["--cold-tf"] if opts.cold_tf else []))
    if not opts.cold_tf:
        warm_tensorflow()
    watch_janus()
    saved = sys.getswitchinterval()
    sys.setswitchinterval(5e-5)
    try:
        for n in range(opts.rounds):
            for name in opts.only:
                SCENARIOS[name](opts.calls)
                if problems:
                    sys.stderr.write(f"round {n}, {name}: " + "\n".join(problems[:8]) + "\n")
                    return 1
    finally:
        sys.setswitchinterval(saved)
    return 0


if __name__ == "__main__":
    sys.exit(main())
