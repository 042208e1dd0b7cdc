"""Janus gives back what it borrows (issue #39 items 4 and 5).

``sys.stdout`` is Janus's router only while a trace captures what library code prints;
before and after, and around the user's own redirections, it is the user's object.
``janus.stats``/``janus.explain`` of a step the hook took over keep answering after
``janus.disable()`` (and after ``janus.enable()`` again)."""
import contextlib
import gc
import importlib
import io
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest
import tensorflow as tf

import janus
from janus.introspect import NOT_RUN
from janus.takeover import hook, redirect
from janus.trace import output

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _printing_step():
    """A step that prints a tensor and a Python number, and the state it writes."""
    state = {"n": 0}
    v = tf.Variable(1.0)

    def step(x):
        y = v * x + 1.0
        v.assign_add(0.5)
        state["n"] += 1
        print("step", y)
        print("n =", state["n"])
        return y
    return step, state, v


def _xs(n):
    return [tf.constant(0.25 * i) for i in range(n)]


def _eager_text(n):
    """What the printing step prints in eager, ``n`` calls."""
    step, _, _ = _printing_step()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        results = [float(step(x)) for x in _xs(n)]
    return buf.getvalue(), results


class _Recorder(io.StringIO):
    """A user's stream that also keeps what each thread wrote (threads' prints interleave
    write by write, in eager as in Janus)."""

    def __init__(self):
        super().__init__()
        self.by_thread: dict[str, str] = {}

    def write(self, text: str) -> int:
        name = threading.current_thread().name
        self.by_thread[name] = self.by_thread.get(name, "") + text
        return super().write(text)


@pytest.fixture
def own_stdout():
    """The user's own ``sys.stdout``, a ``StringIO``: ``mine = own_stdout()`` in the test's
    body (pytest's capture sets ``sys.stdout`` after the fixtures ran); put back after."""
    before = sys.stdout

    def take() -> _Recorder:
        sys.stdout = _Recorder()
        return sys.stdout

    yield take
    sys.stdout = before


# ------------------------------------------------------------------ sys.stdout given back
def test_stdout_is_the_users_object_after_conversions_and_graph_calls(own_stdout):
    mine = own_stdout()
    expected, expected_results = _eager_text(8)
    step, state, v = _printing_step()
    jstep = janus.function(step, profile_calls=2)
    results = []
    for x in _xs(8):
        results.append(float(jstep(x)))
        assert sys.stdout is mine
    s = janus.stats(jstep)
    assert s["conversions"] == 2 and s["graph_calls"] == 6 and s["eager_calls"] == 2, s   # n: a value, then fed
    assert mine.getvalue() == expected
    np.testing.assert_allclose(results, expected_results)
    assert state["n"] == 8 and float(v) == 5.0


def test_a_users_redirect_around_converting_calls_gets_eagers_output(own_stdout):
    mine = own_stdout()
    expected, _ = _eager_text(8)
    step, _, _ = _printing_step()
    jstep = janus.function(step, profile_calls=3)
    buf = io.StringIO()
    seen = []
    with contextlib.redirect_stdout(buf):
        for x in _xs(8):
            jstep(x)                          # the 4th call converts
            seen.append(sys.stdout is buf)
    assert seen == [True] * 8
    assert sys.stdout is mine and mine.getvalue() == ""
    assert buf.getvalue() == expected
    s = janus.stats(jstep)
    assert s["conversions"] == 2 and s["graph_calls"] == 5, s


def test_a_redirect_entered_between_calls_and_left_after_them(own_stdout):
    mine = own_stdout()
    """The user's redirection spans calls on both sides of a conversion, in pieces."""
    expected, _ = _eager_text(6)
    step, _, _ = _printing_step()
    jstep = janus.function(step, profile_calls=2)
    xs = _xs(6)
    first, second = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(first):
        jstep(xs[0])
        jstep(xs[1])
        jstep(xs[2])                           # converts
    assert sys.stdout is mine
    with contextlib.redirect_stdout(second):
        for x in xs[3:]:
            jstep(x)
    assert sys.stdout is mine and mine.getvalue() == ""
    assert first.getvalue() + second.getvalue() == expected
    assert janus.stats(jstep)["graph_calls"] == 4, "profile_calls=2: calls 3-6 run the graph built at call 3"


def test_two_threads_converting_at_once_leave_stdout_as_it_was(own_stdout, monkeypatch):
    mine = own_stdout()
    expected, _ = _eager_text(8)
    steps = [janus.function(_printing_step()[0], profile_calls=1) for _ in range(2)]
    barrier, together = threading.Barrier(2), threading.Barrier(2, timeout=120)
    enter, most = getattr(output, "_enter", lambda: None), []  # absent before the give-back

    def enter_together():                  # each trace waits, captured, for the other thread's
        enter()
        most.append(output._captures)
        together.wait()

    monkeypatch.setattr(output, "_enter", enter_together, raising=False)
    errors = []

    def run(jstep):
        try:
            jstep(_xs(1)[0])
            barrier.wait()
            for x in _xs(8)[1:]:               # the first of these converts, in both threads at once
                jstep(x)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(s,), name=f"trainer {i}") for i, s in enumerate(steps)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert sys.stdout is mine
    assert max(most) == 2 and len(most) == 4         # two traces each, the two threads' at once
    assert mine.by_thread == {"trainer 0": expected, "trainer 1": expected}
    for jstep in steps:
        s = janus.stats(jstep)
        assert s["conversions"] == 2 and s["graph_calls"] == 7, s


def test_overlapping_captures_install_the_router_once_and_give_back_what_was_there(own_stdout):
    """Two threads capture at once: one router while either does; what was there before, after."""
    mine = own_stdout()
    entered, leave_a = threading.Barrier(2), threading.Event()
    captured = {}

    def capture(name, wait):
        with output.captured() as buf:
            entered.wait(timeout=60)
            print(f"library {name}")
            wait.wait(timeout=60)
        captured[name] = buf.getvalue()

    a = threading.Thread(target=capture, args=("a", leave_a), daemon=True)
    a.start()
    try:
        with output.captured() as main_buf:
            entered.wait(timeout=60)
            router = sys.stdout
            assert router is not mine and isinstance(router, output._Router)
            print("library main")
        assert sys.stdout is router            # thread a still captures
        print("user line")                     # not a capturing thread: the user's stream
    finally:
        leave_a.set()
        a.join()
    assert sys.stdout is mine and not output.installed()
    assert captured == {"a": "library a\n"} and main_buf.getvalue() == "library main\n"
    assert mine.getvalue() == "user line\n"


def test_a_stdout_the_user_sets_during_a_capture_is_kept(own_stdout):
    own_stdout()
    other = io.StringIO()
    with output.captured():
        sys.stdout = other                     # the user's, meanwhile (another thread's, say)
    assert sys.stdout is other
    with output.captured():
        pass
    assert sys.stdout is other


RACE = """
import io, sys, threading
from janus.trace import output

out = io.StringIO()
sys.stdout = out
stop, count = threading.Event(), [0]


def chatter():
    while not stop.is_set():
        print("a", "b", "c")           # three writes and a newline through one borrowed sys.stdout
        count[0] += 1


talker = threading.Thread(target=chatter)
talker.start()
for _ in range(20000):
    with output.captured():
        pass
stop.set()
talker.join()
sys.stdout = sys.__stdout__
lines = out.getvalue().splitlines()
print(len(lines) == count[0] > 0, set(lines))
"""


def test_a_router_taken_away_while_another_thread_prints_through_it_is_not_freed_under_it():
    """``print()`` holds ``sys.stdout`` borrowed between its writes: the router taken away
    during one of them must outlive the print (it segfaulted in 4 runs of 4)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-c", RACE], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout == "True {'a b c'}\n"


def test_a_fresh_process_keeps_its_stdout_and_prints_what_eager_prints(tmp_path):
    script = tmp_path / "giveback_script.py"
    script.write_text(textwrap.dedent("""
        import contextlib, io, sys
        import tensorflow as tf
        import janus

        original = sys.stdout
        v = tf.Variable(1.0)

        @janus.function(profile_calls=2)
        def step(x):
            v.assign_add(x)
            print("v", v.read_value(), x * 2.0)
            return v.read_value()

        for i in range(5):
            step(tf.constant(float(i)))
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            for i in range(3):
                step(tf.constant(float(i)))
            inside = sys.stdout is buf
        print(buf.getvalue(), end="")
        print("original", sys.stdout is original, inside, sys.stdout is sys.__stdout__)
        print("stats", janus.stats(step)["graph_calls"])
    """))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=ROOT)
    env.pop("JANUS_DISABLE", None)
    jan = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=300)
    eager = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                           env=dict(env, JANUS_DISABLE="1"), timeout=300)
    assert jan.returncode == 0 and eager.returncode == 0, jan.stderr + eager.stderr
    jan_lines, eager_lines = jan.stdout.splitlines(), eager.stdout.splitlines()
    assert jan_lines[:-1] == eager_lines[:-1]
    assert jan_lines[-2] == "original True True True"
    assert jan_lines[-1] == "stats 6" and eager_lines[-1] == "stats 0"


# ------------------------------------------------------------------ introspection after disable()
CLOSURE_MODULE = """
import tensorflow as tf


def make_step(w, lr):
    def step(x):                       # a closure: only the running take-over finds it
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * x) ** 2
        w.assign_sub(lr * tape.gradient(loss, w))
        return loss
    return step


def fit(w, x):                         # module level: the enable() scan takes it over
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * w * x)
    w.assign_sub(0.01 * tape.gradient(loss, w))
    return loss
"""


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    """The module above, imported from a directory the hook scans (the cwd); the hook
    off and the module forgotten after the test."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("JANUS_TAKEOVER_SAMPLE_MS", "1")   # 3.11: the sampler finds short steps fast
    (tmp_path / "giveback_user.py").write_text(textwrap.dedent(CLOSURE_MODULE))
    importlib.invalidate_caches()
    yield importlib.import_module("giveback_user")
    hook.disable()
    sys.modules.pop("giveback_user", None)


def _inputs(n):
    return [tf.constant([1.0, 0.05 * i]) for i in range(n)]


def _eager_losses(mod, n):
    step = mod.make_step(tf.Variable([1.0, 2.0]), 0.01)
    return [float(step(x)) for x in _inputs(n)]


def _run_until_taken_over(step, xs, limit=40):
    losses = []
    while not any(f is step for f in redirect.redirected()):
        assert len(losses) < limit, "the hook did not take the closure step over"
        losses.append(float(step(next(xs))))
    return losses


def test_stats_and_explain_of_a_taken_over_closure_step_outlive_disable(user_module):
    expected = _eager_losses(user_module, 80)
    xs = iter(_inputs(80))
    step = user_module.make_step(tf.Variable([1.0, 2.0]), 0.01)
    janus.enable()
    losses = _run_until_taken_over(step, xs)
    losses += [float(step(next(xs))) for _ in range(30)]
    during = janus.stats(step)
    assert during["calls"] == 30 and during["graph_calls"] >= 26 and during["conversions"] == 1, during
    janus.disable()
    gc.collect()
    assert step.__code__.co_name == "step" and not redirect.redirected()
    assert janus.stats(step) == during
    text = str(janus.explain(step))
    assert janus.explain(step).reason is None and NOT_RUN not in text
    assert f"calls 30: {during['graph_calls']} as graphs" in text and "graph 0:" in text
    losses += [float(step(next(xs))) for _ in range(3)]           # runs as written: not counted
    assert janus.stats(step) == during

    janus.enable()                                               # again: the history is still there
    assert janus.stats(step) == during
    more = _run_until_taken_over(step, xs)
    losses += more
    losses += [float(step(next(xs))) for _ in range(6)]
    again = janus.stats(step)
    assert again["calls"] == 36 and again["graph_calls"] == during["graph_calls"] + 6, again
    assert again["conversions"] == 1                            # the same Janus function, its graphs reused
    janus.disable()
    assert janus.stats(step) == again
    np.testing.assert_allclose(losses, expected[:len(losses)], rtol=1e-5)


def test_stats_of_a_step_the_scan_took_over_outlive_disable(user_module):
    fit = user_module.fit                                        # the plain function, held by the user
    w, w_eager = tf.Variable([1.0, 2.0]), tf.Variable([1.0, 2.0])
    expected = [float(fit(w_eager, x)) for x in _inputs(10)]
    janus.enable()
    assert user_module.fit is not fit
    losses = [float(user_module.fit(w, x)) for x in _inputs(10)]
    during = janus.stats(fit)
    assert during["calls"] == 10 and during["graph_calls"] == 7, during
    janus.disable()
    gc.collect()
    assert user_module.fit is fit
    assert janus.stats(fit) == during and janus.explain(fit).reason is None
    np.testing.assert_allclose(losses, expected, rtol=1e-5)


# ------------------------------------------------------------------ what janus.stats accepts
def test_what_the_readme_promises_of_non_functions():
    """README: one Janus never ran has zero counts; what is not a Python function is a
    TypeError, a builtin such as ``len`` included (Janus never runs one: ``janus.function(len)``
    is a TypeError too)."""
    def never_called(x):
        return x

    assert all(v == 0 for v in janus.stats(never_called).values()), \
        "README: a function Janus never ran has every count zero"
    assert janus.explain(never_called).reason == NOT_RUN
    for thing in (3, int, object(), len):
        with pytest.raises(TypeError) as info:
            janus.stats(thing)
        message = str(info.value)
        assert "\n" not in message and message.startswith("janus: expected a function or method, got ")
