"""Eager's guarantee under threads and interrupts: nothing lost, nothing half-done.

* two or four threads calling one step: every update lands (as eagerly), the program's
  stdout stays its own, and lines other threads print while Janus traces are printed;
* the XLA trial never undoes another thread's variable update;
* Ctrl-C while a graph's effects are committed: the call has all of its effects or none;
* a failure of Janus's own machinery runs the call eagerly instead of reaching the user.
"""
import dataclasses
import io
import signal
import sys
import threading

import numpy as np
import pytest
import tensorflow as tf

import janus
from janus import config
from janus.graphs import entry as entry_module


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


def _hammer(fn, threads: int, calls: int, make_input) -> list:
    errors = []

    def work(t):
        try:
            for i in range(calls):
                out = fn(make_input(t, i))
                np.testing.assert_allclose(out.numpy(), make_input(t, i).numpy() * 2.0)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return errors


@pytest.fixture
def python_ctrl_c():
    """SIGINT raises KeyboardInterrupt, as in a program started from a terminal.  A process
    started in the background by a shell without job control (``make test &`` in a script)
    inherits SIGINT ignored, and Python then leaves it ignored: eager would not see a
    Ctrl-C either, and these tests would test nothing."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("warm", [False, True])
def test_threads_calling_one_step_lose_no_update(warm):
    """Four threads call one step, while it converts (cold) or once it has a graph (warm):
    every update lands and every history entry is there, as eagerly."""
    c = Counter()
    c.step = janus.function(c.step)
    sums = [float(i % 5 + t) * 3 for t in range(4) for i in range(40)]
    if warm:
        for i in range(4):
            c.step(tf.fill([3], float(i)))
        sums += [float(i) * 3 for i in range(4)]
    errors = _hammer(c.step, 4, 40, lambda t, i: tf.fill([3], float(i % 5 + t)))
    assert not errors, errors
    assert float(c.count.numpy()) == len(sums)
    assert float(c.total.numpy()) == sum(sums)
    assert sorted(float(h) for h in c.history) == sorted(sums)
    stats = janus.stats(c.step)
    assert stats["calls"] == len(sums) and stats["conversions"] == 1, stats
    assert stats["graph_calls"] >= (160 if warm else 1), (
        "warm: the 160 threaded calls all run the graph made before them; cold: the graph made while the threads call "
        f"runs at least once: {stats}"
    )


def test_lines_other_threads_print_while_janus_traces_are_kept():
    """Capturing what library code prints while tracing must not capture other threads'
    lines, nor leave a buffer as the program's stdout."""
    out = io.StringIO()
    saved = sys.stdout
    sys.stdout = out
    stop = threading.Event()
    printed = []

    def chatter():
        i = 0
        while not stop.is_set():
            print(f"line {i}")
            printed.append(i)
            i += 1

    try:
        talker = threading.Thread(target=chatter)
        talker.start()
        functions = []
        for k in range(4):
            def step(x, k=k):
                return tf.tanh(x) * float(k + 1) + tf.reduce_sum(x)
            f = janus.function(step, profile_calls=1)
            functions.append(f)
            errors = _hammer(lambda x, f=f: f(x) * 0 + x * 2.0, 2, 6, lambda t, i: tf.ones([2 + i % 3]))
            assert not errors, errors
        stop.set()
        talker.join()
    finally:
        stop.set()
        current, sys.stdout = sys.stdout, saved
    assert current is out or getattr(current, "_janus_stream", None) is out
    lines = out.getvalue().splitlines()
    assert lines == [f"line {i}" for i in printed]
    for f in functions:
        assert janus.stats(f)["graph_calls"] >= 1, (
            "with profile_calls=1 each function converts after its first call, then its 12 calls run the graph: "
            f"{janus.explain(f)}"
        )
        assert "printed" not in str(janus.explain(f))


def test_concurrent_conversions_keep_stdout():
    saved = sys.stdout
    functions = []
    for k in range(6):
        def step(x, k=k):
            return x * float(k) + tf.reduce_mean(x)
        functions.append(janus.function(step, profile_calls=0))
    errors = []

    def work(f):
        try:
            for i in range(5):
                f(tf.ones([i + 1]))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    workers = [threading.Thread(target=work, args=(f,)) for f in functions]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, errors
    assert sys.stdout is saved or getattr(sys.stdout, "_janus_stream", None) is saved
    assert not isinstance(sys.stdout, io.StringIO)


def test_the_xla_trial_loses_no_concurrent_update(monkeypatch):
    """The XLA trial runs a call twice, undoing the first run's writes in between; another
    thread's update made meanwhile must not be undone (eager never loses one)."""
    from janus.trace import xla as xla_marks
    monkeypatch.setattr(xla_marks, "rounds_differently", lambda *_: [])  # let the trial start despite tanh
    # and however fast this machine runs the graph
    monkeypatch.setattr(config, "LIMITS", dataclasses.replace(config.LIMITS, xla_min_run_ms=0.0))
    class Heavy:
        def __init__(self):
            self.count = tf.Variable(0.0)
            self.w = tf.constant(np.random.RandomState(0).rand(256, 256).astype(np.float32) * 0.01)

        def step(self, x):
            y = x
            for _ in range(8):
                y = tf.tanh(tf.matmul(y, self.w) + 0.5)
            self.count.assign_add(1.0)
            return y

    h = Heavy()
    h.step = janus.function(h.step, jit_compile=None)
    errors = []
    # the threads call in step: how many calls the others make as written while one thread
    # converts must not depend on how fast the machine is (the timeout is a safety net)
    together = threading.Barrier(4, timeout=900)

    def work():
        try:
            for i in range(60):
                together.wait()
                h.step(tf.ones([256, 256]) * (i % 3))
        except BaseException as e:  # noqa: BLE001
            errors.append(e)
            together.abort()

    workers = [threading.Thread(target=work) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, errors
    assert float(h.count.numpy()) == 240.0
    assert janus.stats(h.step)["graph_calls"] >= 100, \
        f"240 calls of one shape over 4 threads: most run the graph (the bound leaves room for profiled calls and the XLA trial): {janus.stats(h.step)}"


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals go to the main thread")
def test_ctrl_c_during_the_commit_leaves_all_effects_or_none(monkeypatch, python_ctrl_c):
    """SIGINT arriving after the graph wrote its variables, while Python commits the
    step's other effects: the call must end with all of its effects (then raise
    KeyboardInterrupt, as eager would at its next bytecode) or none."""
    c = Counter()
    c.step = janus.function(c.step, profile_calls=1)
    for _ in range(3):
        c.step(tf.ones([2]))
    assert janus.stats(c.step)["graph_calls"] == 2, "profile_calls=1: calls 2-3 run the graph built at call 2"
    finish = entry_module.Graph.finish

    def interrupted_finish(self, outs, a, k):
        signal.raise_signal(signal.SIGINT)  # delivered at the next bytecode boundary
        return finish(self, outs, a, k)

    monkeypatch.setattr(entry_module.Graph, "finish", interrupted_finish)
    for trial in range(12):
        with pytest.raises(KeyboardInterrupt):
            c.step(tf.ones([2]) * trial)
        assert float(c.count.numpy()) == len(c.history), (trial, float(c.count.numpy()), len(c.history))
    assert len(c.history) == 3 + 12
    assert janus.stats(c.step)["graph_calls"] == 2 + 12, \
        "the 2 graph calls before, plus the 12 interrupted ones: each ran its graph and committed, then raised KeyboardInterrupt"


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals go to the main thread")
def test_a_program_that_ignores_ctrl_c_keeps_ignoring_it(monkeypatch):
    """SIGINT ignored by the program (as a shell's background job inherits it): eager goes
    on, so the graph call does too, and the disposition is still "ignore" afterwards."""
    c = Counter()
    c.step = janus.function(c.step, profile_calls=1)
    for _ in range(3):
        c.step(tf.ones([2]))
    finish = entry_module.Graph.finish

    def interrupted_finish(self, outs, a, k):
        signal.raise_signal(signal.SIGINT)
        return finish(self, outs, a, k)

    monkeypatch.setattr(entry_module.Graph, "finish", interrupted_finish)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        for trial in range(3):
            np.testing.assert_allclose(c.step(tf.ones([2]) * trial).numpy(), [2.0 * trial] * 2)
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
    assert float(c.count.numpy()) == len(c.history) == 6
    assert janus.stats(c.step)["graph_calls"] == 2 + 3, \
        "the 2 graph calls before, plus the 3 that ignore SIGINT: they ran their graph through"


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals go to the main thread")
def test_ctrl_c_at_random_times_never_tears_a_graph_call(python_ctrl_c):
    """SIGINT from a timer at random moments while graph calls run: after each interrupt,
    the variable and the history agree (every graph call is all or nothing)."""
    c = Counter()
    c.step = janus.function(c.step, profile_calls=1)
    for _ in range(3):
        c.step(tf.ones([2]))
    rng = np.random.RandomState(1)
    interrupts = 0
    for trial in range(12):
        timer = threading.Timer(rng.uniform(0.0005, 0.01), lambda: signal.raise_signal(signal.SIGINT))
        try:
            # started inside the try: on a busy machine the timer may fire before start()
            # returns (start waits for the thread); then until the interrupt lands (a bound,
            # not a time): a timer thread scheduled late must not find the test past its try
            timer.start()
            for _ in range(200_000):
                c.step(tf.ones([2]))
        except KeyboardInterrupt:
            interrupts += 1
        timer.join()
        assert float(c.count.numpy()) == len(c.history), trial
    assert interrupts == 12
    assert janus.stats(c.step)["eager_calls"] == 1, \
        f"only the one profiled call (profile_calls=1) ran eagerly: no interrupted graph call fell back: {janus.stats(c.step)}"


def test_a_failure_inside_janus_runs_the_call_eagerly(monkeypatch):
    """Any failure of Janus's own machinery (here: converting raises SystemError, as
    concurrent parses did on CPython 3.11) means "run eagerly", never the user's exception."""
    from janus.driver import conversion as driver

    def broken(fn):
        raise SystemError("AST constructor recursion depth mismatch")

    monkeypatch.setattr(driver, "convert_source", broken)

    @janus.function(profile_calls=1)
    def step(x):
        return x + 1.0

    for i in range(4):
        assert float(step(tf.constant(float(i)))) == i + 1.0
    stats = janus.stats(step)
    assert stats["graph_calls"] == 0 and stats["eager_calls"] == 4, \
        f"converting always raises SystemError: all 4 calls run eagerly, none as a graph: {stats}"
    assert "SystemError" in str(janus.explain(step))
