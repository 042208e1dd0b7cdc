"""janus.stats / janus.explain / janus.reset / janus.concrete_function answer for the
function the user holds, however Janus reached it (issue #27 item 4): the decorator,
the janus.enable() scan, the running take-over, python -m janus; a bound method of it;
JANUS_DISABLE; a function Janus never ran; something that is not a function at all."""
from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest
import tensorflow as tf

import janus
from janus.driver.function import JanusFunction
from janus.introspect import DISABLED, NOT_RUN
from janus.takeover import hook, redirect

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ZERO = {"calls": 0, "graph_calls": 0, "eager_calls": 0, "conversions": 0}


def _x(i=0):
    return tf.constant(np.random.RandomState(i).randn(4, 2).astype(np.float32))


def _sub(stats):
    return {k: stats[k] for k in ZERO}


# ------------------------------------------------------------------ the decorator
def test_decorated_function_its_plain_function_and_bound_methods_answer_alike():
    def step(x):
        return tf.reduce_sum(x * 2.0)

    plain = step
    jf = janus.function(step)
    for i in range(5):
        jf(_x(i))

    class Model:
        def __init__(self):
            self.v = tf.Variable(1.0)

        @janus.function
        def predict(self, x):
            return self.v * x

    m = Model()
    for i in range(5):
        m.predict(_x(i))
    for held, owner in ((jf, jf), (plain, jf), (m.predict, Model.predict), (Model.predict, Model.predict),
                        (Model.predict.python_function, Model.predict),
                        (types.MethodType(Model.predict.python_function, m), Model.predict)):
        s = janus.stats(held)
        assert s == janus.stats(owner) and s["graph_calls"] >= 2, (held, s)
        assert str(janus.explain(held)) == str(janus.explain(owner))
    janus.reset(plain)
    assert janus.stats(jf)["calls"] == 0, "janus.reset(plain) resets jf: the same function"


# ------------------------------------------------------------------ janus.enable(): scan and running take-over
MODULE = """
import tensorflow as tf
W = tf.Variable([[0.5], [-0.25]])

def step(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.matmul(x, W) ** 2)
    W.assign_sub(0.1 * tape.gradient(loss, W))
    return loss

class Model:
    def __init__(self):
        self.v = tf.Variable(2.0)

    def train_step(self, x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(self.v * x)
        self.v.assign_sub(0.01 * tape.gradient(loss, self.v))
        return loss

def make_step(v):
    def closure_step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(v * x)
        v.assign_sub(0.01 * tape.gradient(loss, v))
        return loss
    return closure_step
"""


@pytest.fixture
def user_module(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("JANUS_TAKEOVER_SAMPLE_MS", "1")
    (tmp_path / "intro_user.py").write_text(textwrap.dedent(MODULE))
    importlib.invalidate_caches()
    yield importlib.import_module("intro_user")
    hook.disable()
    sys.modules.pop("intro_user", None)


def test_the_scan_answers_for_the_original_function_and_method_the_user_holds(user_module):
    mod = user_module
    orig_step, orig_train = mod.step, mod.Model.train_step
    m = mod.Model()
    early_bound = m.train_step                       # a bound method of the original function
    with janus.enabled():
        assert isinstance(mod.step, JanusFunction) and mod.step is not orig_step
        for i in range(6):
            mod.step(_x(i))
            m.train_step(_x(i))
        for held, owner in ((orig_step, mod.step), (orig_train, mod.Model.train_step),
                            (early_bound, mod.Model.train_step), (m.train_step, mod.Model.train_step)):
            s = janus.stats(held)
            assert s == janus.stats(owner) and s["graph_calls"] >= 2, (held, s)
            assert "as graphs" in str(janus.explain(held))


def test_the_running_take_over_answers_for_the_closure_the_user_holds(user_module):
    step = user_module.make_step(tf.Variable(1.0))
    with janus.enabled():
        for i in range(40):
            step(_x(i))
            if "make_step.<locals>.closure_step" in {f.__qualname__ for f in redirect.redirected()}:
                break
        for i in range(6):
            step(_x(i))
        s = janus.stats(step)                        # the user's own function object
        assert s["graph_calls"] >= 3, (
            f"once taken over, the 6 calls run the closure's graph, all but the profiled ones: {s} "
            f"{janus.explain(step)}"
        )
        assert s == janus.stats(hook.taken_over_functions()[-1])
        assert janus.concrete_function(step) is not None


# ------------------------------------------------------------------ python -m janus
SCRIPT = """
import sys
import tensorflow as tf
import janus

W = tf.Variable(1.0)

def step(x):
    with tf.GradientTape() as tape:
        loss = W * x
    W.assign_sub(0.1 * tape.gradient(loss, W))
    return loss

early = step
for i in range(6):
    step(tf.constant(float(i)))
s = janus.stats(early)
print("graph_calls", s["graph_calls"], s == janus.stats(step))
print(str(janus.explain(early)).splitlines()[0])
"""


def test_python_m_janus_answers_for_the_scripts_functions(tmp_path):
    (tmp_path / "train.py").write_text(textwrap.dedent(SCRIPT))
    env = {k: v for k, v in os.environ.items() if not k.startswith("JANUS_")}
    env.update(TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-m", "janus", "train.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "graph_calls 3 True", done.stdout
    assert lines[1] == "Janus function step"


# ------------------------------------------------------------------ disabled, never seen, not a function
def test_under_janus_disable_stats_and_explain_answer_zero_graphs(monkeypatch):
    monkeypatch.setenv("JANUS_DISABLE", "1")

    def f(x):
        return x + 1

    g = janus.function(f)
    assert g is f
    for _ in range(4):
        g(tf.constant(1.0))
    assert all(v == 0 for v in janus.stats(g).values()), \
        "JANUS_DISABLE=1: janus.function returned f itself, Janus counted nothing"
    e = janus.explain(g)
    assert e.reason == DISABLED and DISABLED in str(e) and e.code is None
    assert janus.concrete_function(g) is None and e.concrete_function_reason == DISABLED
    janus.reset(g)                                   # nothing to reset: no error


def test_a_function_janus_never_ran_has_zero_counts_and_says_so():
    def f(x):
        return x

    assert _sub(janus.stats(f)) == ZERO and janus.stats(f)["graph_calls"] == 0, "never run: every count is zero"
    e = janus.explain(f)
    assert e.reason == NOT_RUN and "has not run it" in str(e) and str(e).startswith("test_a_function")
    assert janus.concrete_function(f) is None
    assert "has not run it" in janus.explain(f).concrete_function_reason


@pytest.mark.parametrize("thing", [3, "step", tf.constant(1.0), int, object(), len, [].append])
def test_what_is_not_a_function_is_a_one_line_type_error(thing):
    for ask in (janus.stats, janus.explain, janus.concrete_function):
        with pytest.raises(TypeError) as info:
            ask(thing)
        assert "expected a function or method" in str(info.value) and "\n" not in str(info.value)
    assert str(info.value).endswith(("an int object", "a str object", "an EagerTensor object", "a type object",
                                     "an object object", "a builtin_function_or_method object"))


def test_concrete_function_before_any_graph_call_says_why():
    @janus.function(profile_calls=3)
    def f(x):
        return x * 3.0

    f(tf.constant(1.0))
    assert janus.concrete_function(f) is None
    assert "no call ran as a graph yet" in janus.explain(f).concrete_function_reason
    for _ in range(4):
        f(tf.constant(1.0))
    assert janus.concrete_function(f) is janus.explain(f).last_graph.graph.concrete
    assert "last graph call: graph 0" in str(janus.explain(f))


# ------------------------------------------------------------------ the namespace and grammar
def test_dir_of_janus_lists_only_the_public_api():
    public = [n for n in dir(janus) if not n.startswith("_")]
    assert public == sorted(janus.__all__)
    assert set(public) == {"function", "do_not_convert", "allow", "GraphBreakError", "stats", "explain", "reset",
                           "concrete_function", "enable", "disable", "enabled", "report"}
    for name in ("Any", "annotations", "importlib"):
        assert not hasattr(janus, name), name
    assert isinstance(janus.__version__, str) and janus.__version__


def test_explain_says_an_int32_tensor():
    @janus.function(profile_calls=1)
    def f(x, n):
        return x * 2, n

    for _ in range(3):
        f(tf.constant([1, 2], tf.int32), 1)
    text = str(janus.explain(f))
    assert "an int32 tensor" in text and "a int32" not in text, text
    assert "an int" in text or "is 1" in text


def test_the_article_fix_leaves_the_generated_code_alone():
    @janus.function(profile_calls=1)
    def f(x):
        a = x * 2
        return a if a is not None else x   # the generated code says "(a is not None)"

    for _ in range(3):
        f(tf.constant([1, 2], tf.int32))
    text = str(janus.explain(f))
    assert "an int32 tensor" in text and "(a is not None)" in text and "an is" not in text, text
