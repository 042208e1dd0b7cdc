"""The take-over watcher on Python 3.12+: ``sys.monitoring`` limited to ``GradientTape.__init__``
(``janus/takeover/redirect.py``).  On 3.11 the hook samples stacks instead (tests/test_hook.py)."""
import importlib
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

import janus
from janus.driver.function import JanusFunction
from janus.takeover import hook, redirect

pytestmark = pytest.mark.skipif(not hasattr(sys, "monitoring"),
                                reason="sys.monitoring is Python 3.12+; on 3.11 the hook samples stacks "
                                       "(tests/test_hook.py covers that watcher)")

STEPS = """
import threading
import tensorflow as tf

W = tf.Variable([1.0, -0.5])


def make_step(w, lr):
    def step(x):                            # a closure: no namespace holds it
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * x) ** 2
        w.assign_sub(lr * tape.gradient(loss, w))
        return loss
    return step


def waiting_step(x, started, go):
    started.set()
    go.wait()                               # enable() is called while this call waits here
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(W * x) ** 2
    W.assign_sub(0.01 * tape.gradient(loss, W))
    return loss


def plain(x):
    return x * 2 + 1
"""

LATER = """
import tensorflow as tf

v = tf.Variable(3.0)


def fit(x):
    with tf.GradientTape() as tape:
        loss = (v * x - 1.0) ** 2
    v.assign_sub(0.01 * tape.gradient(loss, v))
    return loss
"""


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """Write a module in a directory that is the current directory (user code to the hook)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    names = []

    def write(name, source):
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        importlib.invalidate_caches()
        names.append(name)
        return importlib.import_module(name)

    yield write
    hook.disable()
    for n in names:
        sys.modules.pop(n, None)


def _janus_tools():
    return [i for i in range(6) if sys.monitoring.get_tool(i) == "janus takeover"]


def _eager_fit(n):
    v, out = tf.Variable(3.0), []
    for i in range(n):
        with tf.GradientTape() as tape:
            loss = (v * tf.constant(0.1 * i) - 1.0) ** 2
        v.assign_sub(0.01 * tape.gradient(loss, v))
        out.append(float(loss))
    return out


def test_a_step_defined_after_enable_is_taken_over_at_its_first_tape(user_module, tmp_path):
    with janus.enabled():
        path = tmp_path / "later_defs.py"
        path.write_text(LATER)
        namespace = {"__name__": "later_defs"}
        exec(compile(LATER, str(path), "exec"), namespace)     # defined after enable()
        fit = namespace["fit"]
        first = float(fit(tf.constant(0.0)))
        assert redirect.redirected() == [fit]                  # found by its first call's tape
        losses = [first] + [float(fit(tf.constant(0.1 * i))) for i in range(1, 10)]
        stats = janus.stats(fit.__wrapped__)
        assert stats["calls"] == 9 and stats["graph_calls"] >= 5, stats
    assert fit.__code__.co_name == "fit" and redirect.redirected() == []
    np.testing.assert_allclose(losses, _eager_fit(10), rtol=1e-5)


def test_closures_each_taken_over_once_and_early_references_follow(user_module):
    mod = user_module("mon_steps", STEPS)
    xs = [tf.constant([1.0, 0.1 * i]) for i in range(12)]
    eager = mod.make_step(tf.Variable([1.0, 2.0]), 0.01)
    expected = [float(eager(x)) for x in xs]
    with janus.enabled():
        a, b = mod.make_step(tf.Variable([1.0, 2.0]), 0.01), mod.make_step(tf.Variable([1.0, 2.0]), 0.01)
        early = a                                               # a reference taken before its take-over
        got_a = [float(early(x)) for x in xs]
        got_b = [float(b(x)) for x in xs]
        assert sorted(map(id, redirect.redirected())) == sorted([id(a), id(b)])
        assert hook.taken_over().count("make_step.<locals>.step") == 2
        assert janus.stats(a.__wrapped__)["calls"] == 11 and janus.stats(b.__wrapped__)["calls"] == 11, \
            "12 calls each: the first, whose tape triggered the take-over, ran as written; the 11 later ones went through Janus"
    np.testing.assert_allclose(got_a, expected, rtol=1e-5)
    np.testing.assert_allclose(got_b, expected, rtol=1e-5)


def test_a_step_already_running_when_enable_is_called(user_module):
    mod = user_module("mon_running", STEPS)
    started, go = threading.Event(), threading.Event()
    x = tf.constant([0.5, 1.0])
    result, original = {}, mod.waiting_step
    thread = threading.Thread(target=lambda: result.update(first=float(original(x, started, go))))
    thread.start()
    started.wait()
    janus.enable()                                              # while the step's first call waits
    go.set()
    thread.join()
    # the running call (of the function object the scan replaced in the module) finished
    # as written; its tape redirected that object to the scan's Janus function
    jf = mod.waiting_step
    assert isinstance(jf, JanusFunction) and redirect.redirected() == [original]
    seq = [float(original(x, threading.Event(), go)) for _ in range(5)]
    assert janus.stats(jf)["calls"] == 5, \
        f"the 5 calls after the take-over; the running first call finished as written: {janus.stats(jf)}"
    janus.disable()
    w = tf.Variable([1.0, -0.5])
    expected = []
    for _ in range(6):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * x) ** 2
        w.assign_sub(0.01 * tape.gradient(loss, w))
        expected.append(float(loss))
    np.testing.assert_allclose([result["first"]] + seq, expected, rtol=1e-5)


def test_disable_frees_the_monitoring_tool_id(user_module):
    before = [sys.monitoring.get_tool(i) for i in range(6)]
    janus.enable()
    tools = _janus_tools()
    assert len(tools) == 1
    tool = tools[0]
    assert sys.monitoring.get_events(tool) == 0                 # no global event
    assert sys.monitoring.get_local_events(tool, tf.GradientTape.__init__.__code__) == \
        sys.monitoring.events.PY_START
    janus.enable()                                              # a rescan takes no second id
    assert _janus_tools() == [tool]
    janus.disable()
    assert _janus_tools() == [] and [sys.monitoring.get_tool(i) for i in range(6)] == before
    with janus.enabled():
        assert len(_janus_tools()) == 1
    assert _janus_tools() == []


def test_code_without_a_tape_gets_no_event(user_module, monkeypatch):
    """The only code with an event is ``GradientTape.__init__``: plain Python and eager
    TensorFlow without a tape never reach the callback."""
    mod = user_module("mon_plain", STEPS)
    called = []
    original = redirect.take_over_frames
    monkeypatch.setattr(redirect, "take_over_frames", lambda frames: called.append(len(frames)) or original(frames))
    dense = tf.keras.layers.Dense(4)
    x = tf.ones([2, 3])
    with janus.enabled():
        tool = _janus_tools()[0]
        for code in (mod.plain.__code__, mod.make_step.__code__, tf.keras.layers.Dense.__call__.__code__):
            assert sys.monitoring.get_local_events(tool, code) == 0
        for i in range(2000):
            mod.plain(i)
        for _ in range(20):
            dense(x)
        assert called == []
        with tf.GradientTape():                                  # a tape outside any user step
            pass
        assert called == [0]


def test_per_call_cost_of_plain_python_is_unchanged(user_module):
    """A light measurement (medians of interleaved rounds, a generous bound): with the
    watcher on, plain Python calls are not slowed as a global hook would slow them."""
    mod = user_module("mon_cost", STEPS)

    def work():
        start = time.perf_counter()
        for i in range(20000):
            mod.plain(i)
        return time.perf_counter() - start

    off, on = [], []
    for _ in range(7):
        off.append(work())
        with janus.enabled():
            on.append(work())
    assert np.median(on) < 1.5 * np.median(off), (on, off)
