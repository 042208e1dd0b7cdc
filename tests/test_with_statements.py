"""``with`` statements: TensorFlow's context managers act on the graph; any other would be
entered only while tracing, so the function runs eagerly (issue #24, item 9)."""
import contextlib
import threading
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

import janus
from harness import check


def rnd(shape, seed):
    return tf.constant(np.random.RandomState(seed).randn(*shape).astype(np.float32))


class Counter:
    def __init__(self, jit):
        self.lock = threading.Lock()
        self.total = tf.Variable(0.0)
        self.calls = 0
        self.step = jit(self._step)

    def _step(self, x):
        with self.lock:
            self.total.assign_add(tf.reduce_sum(x))
            self.calls += 1
            return self.calls


def _returns_while_locked(counter: Counter, x) -> bool:
    """Whether ``counter.step(x)`` returns while another thread holds its lock."""
    done = threading.Event()
    counter.lock.acquire()
    try:
        worker = threading.Thread(target=lambda: (counter.step(x), done.set()))
        worker.start()
        returned = done.wait(0.5)
    finally:
        counter.lock.release()
    worker.join()
    return returned


def test_a_lock_taken_in_the_step_is_held_at_every_call_and_the_step_runs_eagerly():
    observed = {}
    for name, jit in (("eager", lambda f: f), ("janus", janus.function)):
        janus.reset()
        counter = Counter(jit)
        for i in range(8):
            counter.step(rnd((3,), i))
        blocked = not _returns_while_locked(counter, rnd((3,), 9))
        threads = [threading.Thread(target=lambda k=k: [counter.step(tf.ones([3]) * k) for _ in range(10)])
                   for k in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        observed[name] = (blocked, counter.calls, float(counter.total.numpy()))
    assert observed["eager"][0], "eager's call did not wait for the lock"
    assert observed["janus"][:2] == observed["eager"][:2], observed
    np.testing.assert_allclose(observed["janus"][2], observed["eager"][2], rtol=1e-5)
    stats = janus.stats(counter.step)
    assert stats["graph_calls"] == 0, stats
    explained = str(janus.explain(counter.step))
    assert "_thread.lock" in explained and "would be entered only while tracing" in explained, explained


class Timer:
    """A context manager of the user's: its ``__enter__``/``__exit__`` have effects at every call."""

    def __init__(self):
        self.entered = 0
        self.log = []

    def __enter__(self):
        self.entered += 1
        return self

    def __exit__(self, *exc):
        self.log.append(self.entered)
        return False


def test_a_context_manager_of_the_users_runs_eagerly_and_explain_says_why():
    made = []

    def make(jit):
        timer = Timer()

        @jit
        def f(x):
            with timer as t:
                y = x * 2.0 + t.entered
            return y

        made.append(f)
        return SimpleNamespace(fn=f, state=lambda: {"entered": timer.entered, "log": list(timer.log)})

    stats = check(make, [(rnd((2,), i),) for i in range(6)], eager_only=True)
    assert stats["failed_conversions"] == 1, stats
    explained = str(janus.explain(made[-1]))
    assert "with test_with_statements.Timer: a context manager that is not TensorFlow's" in explained, explained


def test_tensorflows_context_managers_still_convert():
    def make(jit):
        w = tf.Variable(tf.ones([2]))
        nothing = contextlib.nullcontext()

        @jit
        def f(x):
            with tf.name_scope("block"), tf.device("/cpu:0"):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_sum(w * x)
                g = tape.gradient(loss, w)
            with tf.control_dependencies([g]), nothing:
                with tf.init_scope():
                    pass
                w.assign_sub(0.1 * g)
            return loss

        return SimpleNamespace(fn=f, state=lambda: {"w": w})

    check(make, [(rnd((2,), i),) for i in range(8)], min_graph_calls=4)
