"""Bugs that burned the conversion budget (issue #28 item 5), each checked against eager.

* A Janus method calling another Janus method on ``self`` (decorated, or both taken over
  by ``janus.enable()``: a WGAN-GP ``train_step`` calling ``self.gradient_penalty``) lost
  ``self``: the class attribute, a ``JanusFunction``, was returned unbound.
* Writes made to wait for an op TensorFlow's automatic control dependencies order after
  them (stateful ops without resource inputs run in program order) closed a cycle, and the
  graph failed on every run; a graph that fails on each of its runs is now retired.
* A function-local ``import`` made the function eager for good.
"""
import importlib
import io
import os
import sys
import textwrap
import types
from contextlib import redirect_stdout

import numpy as np
import pytest
import tensorflow as tf

import janus
from janus.trace import atomicity
from janus.takeover import hook, redirect

from harness import assert_same, check, check_seeded


# ------------------------------------------------------------------ self kept between Janus methods
def test_a_janus_method_calling_another_janus_method_on_self_keeps_self():
    def make(jit):
        class Model:
            def __init__(self):
                self.w = tf.Variable([1.0, -2.0])

            @jit
            def penalty(self, n, a, b):
                return tf.reduce_sum((a - b) * self.w) / tf.cast(n, tf.float32)

            @jit
            def step(self, a, b):
                loss = self.penalty(tf.shape(a)[0], a, b)
                self.w.assign_sub(0.1 * loss * self.w)
                return loss
        m = Model()
        return types.SimpleNamespace(fn=m.step, janus_fns=[m.step], state=lambda: {"w": m.w})

    calls = [(tf.constant([[1.0, 2.0]]) * i, tf.constant([[0.5, 0.5]])) for i in range(6)]
    check(make, calls, graph_calls=3)


def _wgan(jit):
    import keras

    class WGAN(keras.Model):
        def __init__(self):
            super().__init__()
            keras.utils.set_random_seed(1)
            self.critic = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                                            keras.layers.Dense(1)])
            self.gen = keras.Sequential([keras.Input((2,)), keras.layers.Dense(8, activation="relu"),
                                         keras.layers.Dense(4)])
            self.c_opt = keras.optimizers.Adam(1e-2)
            self.g_opt = keras.optimizers.Adam(1e-2)

        @jit
        def gradient_penalty(self, batch_size, real_images, fake_images):
            alpha = tf.random.uniform([batch_size, 1], 0.0, 1.0)
            interpolated = real_images + alpha * (fake_images - real_images)
            with tf.GradientTape() as gp_tape:
                gp_tape.watch(interpolated)
                pred = self.critic(interpolated, training=True)
            grads = gp_tape.gradient(pred, [interpolated])[0]
            norm = tf.sqrt(tf.reduce_sum(tf.square(grads), axis=[1]))
            return tf.reduce_mean((norm - 1.0) ** 2)

        @jit
        def train_step(self, real_images):
            batch_size = tf.shape(real_images)[0]
            z = tf.random.normal([batch_size, 2])
            with tf.GradientTape() as tape:
                fake = self.gen(z, training=True)
                cost = tf.reduce_mean(self.critic(fake, training=True)) - \
                    tf.reduce_mean(self.critic(real_images, training=True))
                gp = self.gradient_penalty(batch_size, real_images, fake)
                c_loss = cost + gp * 10.0
            grads = tape.gradient(c_loss, self.critic.trainable_variables)
            self.c_opt.apply_gradients(zip(grads, self.critic.trainable_variables))
            with tf.GradientTape() as tape:
                g_loss = -tf.reduce_mean(self.critic(self.gen(tf.random.normal([batch_size, 2]), training=True)))
            grads = tape.gradient(g_loss, self.gen.trainable_variables)
            self.g_opt.apply_gradients(zip(grads, self.gen.trainable_variables))
            return {"c_loss": c_loss, "g_loss": g_loss}

    m = WGAN()
    return types.SimpleNamespace(fn=m.train_step, janus_fns=[m.train_step],
                                 state=lambda: {"weights": [w.numpy() for w in m.weights]})


def test_wgan_gp_train_step_calling_gradient_penalty_on_self_runs_as_one_graph():
    rs = np.random.RandomState(0)
    calls = [(tf.constant(rs.randn(8, 4).astype(np.float32)),) for _ in range(6)]
    stats = check_seeded(_wgan, calls, seed=3, graph_calls=3, rtol=1e-4, atol=1e-5)
    assert stats["conversions"] == 1 and stats["fallbacks"] == 0, stats


WGAN_MODULE = '''
import numpy as np
import tensorflow as tf
import keras


class WGAN(keras.Model):
    def __init__(self):
        super().__init__()
        self.critic = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="relu"),
                                        keras.layers.Dense(1)])
        self.gen = keras.Sequential([keras.Input((2,)), keras.layers.Dense(8, activation="relu"),
                                     keras.layers.Dense(4)])

    def compile(self, c_opt, g_opt):
        super().compile()
        self.c_opt, self.g_opt = c_opt, g_opt

    def gradient_penalty(self, batch_size, real_images, fake_images):
        alpha = tf.random.uniform([batch_size, 1], 0.0, 1.0)
        interpolated = real_images + alpha * (fake_images - real_images)
        with tf.GradientTape() as gp_tape:
            gp_tape.watch(interpolated)
            pred = self.critic(interpolated, training=True)
        grads = gp_tape.gradient(pred, [interpolated])[0]
        norm = tf.sqrt(tf.reduce_sum(tf.square(grads), axis=[1]))
        return tf.reduce_mean((norm - 1.0) ** 2)

    def train_step(self, real_images):
        batch_size = tf.shape(real_images)[0]
        for _ in range(2):
            z = tf.random.normal([batch_size, 2])
            with tf.GradientTape() as tape:
                fake = self.gen(z, training=True)
                cost = tf.reduce_mean(self.critic(fake, training=True)) - \\
                    tf.reduce_mean(self.critic(real_images, training=True))
                gp = self.gradient_penalty(batch_size, real_images, fake)
                c_loss = cost + gp * 10.0
            grads = tape.gradient(c_loss, self.critic.trainable_variables)
            self.c_opt.apply_gradients(zip(grads, self.critic.trainable_variables))
        with tf.GradientTape() as tape:
            g_loss = -tf.reduce_mean(self.critic(self.gen(tf.random.normal([batch_size, 2]), training=True)))
        grads = tape.gradient(g_loss, self.gen.trainable_variables)
        self.g_opt.apply_gradients(zip(grads, self.gen.trainable_variables))
        return {"c_loss": c_loss, "g_loss": g_loss}


def train(epochs):
    keras.utils.set_random_seed(0)
    model = WGAN()
    model.compile(keras.optimizers.Adam(1e-2), keras.optimizers.Adam(1e-2))
    model.run_eagerly = True
    x = np.random.RandomState(0).randn(40, 4).astype("float32")   # batches of 16, 16 and 8
    history = model.fit(x, batch_size=16, epochs=epochs, verbose=0, shuffle=False)
    return model, history.history
'''


def test_wgan_gp_under_enable_fit_run_eagerly_matches_eager(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "wgan_user.py").write_text(WGAN_MODULE)
    importlib.invalidate_caches()
    mod = importlib.import_module("wgan_user")
    try:
        eager_model, eager_history = mod.train(4)
        janus.enable()
        model, history = mod.train(4)
        step = type(model).__dict__["train_step"]
        stats = janus.stats(step)
        text = str(janus.explain(step))
    finally:
        hook.disable()
        sys.modules.pop("wgan_user", None)
    assert_same(eager_history, history, "history", rtol=1e-4, atol=1e-5)
    assert_same([w.numpy() for w in eager_model.weights], [w.numpy() for w in model.weights], "weights",
                rtol=1e-4, atol=1e-5)
    assert "missing 1 required positional argument" not in text, text
    assert stats["graph_calls"] >= 6 and stats["conversions"] <= 2, text


LATE_MODULE = """
import tensorflow as tf


class Model:
    def __init__(self):
        self.w = tf.Variable([1.0, -2.0])

    def penalty(self, n, a, b):
        with tf.GradientTape() as t:
            t.watch(a)
            y = tf.reduce_sum(a * self.w)
        return tf.reduce_sum(t.gradient(y, a) * b) / tf.cast(n, tf.float32)

    def step(self, a, b):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(self.w * a) + self.penalty(tf.shape(a)[0], a, b)
        self.w.assign_sub(0.1 * tape.gradient(loss, self.w))
        return loss
"""


def test_methods_taken_over_while_running_call_each_other_on_self(tmp_path, monkeypatch):
    """Defined after ``janus.enable()``, both methods are found running and get trampoline
    code (``janus.takeover.redirect``): the step's trace inlines the penalty as written."""
    monkeypatch.setenv("JANUS_TAKEOVER_SAMPLE_MS", "1")
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "late_model.py"
    path.write_text(LATE_MODULE)
    data = [(tf.constant([[1.0, 2.0], [0.5, -1.0]]) * (i % 5), tf.constant([[0.5, 0.5], [1.0, 0.0]])) for i in range(80)]

    def run(model, n):
        return [model.step(a, b).numpy() for a, b in data[:n]], model.w.numpy()

    with janus.enabled():
        namespace = {"__name__": "late_model"}
        exec(compile(path.read_text(), str(path), "exec"), namespace)   # defined after enable()
        model = namespace["Model"]()
        calls = 0
        while calls < 60 and not {"Model.step", "Model.penalty"} <= {f.__qualname__ for f in redirect.redirected()}:
            model.step(*data[calls])
            calls += 1
        for a, b in data[calls:calls + 10]:
            model.step(a, b)
        step = next(f for f in hook.taken_over_functions() if f.__qualname__ == "Model.step")
        stats, text = janus.stats(step), str(janus.explain(step))
    eager_ns = {"__name__": "late_model_eager"}
    exec(compile(path.read_text(), str(path), "exec"), eager_ns)
    _, eager_w = run(eager_ns["Model"](), calls + 10)
    np.testing.assert_allclose(model.w.numpy(), eager_w, rtol=1e-5)
    assert "is not the source of the code that runs" not in text, text
    assert stats["graph_calls"] >= 5, (
        "of the 10 steps after both methods are taken over, all but the profiled ones and a conversion run the step's "
        f"graph: {text}"
    )


# ------------------------------------------------------------------ writes and TF's own ordering
def _checked_step(jit):
    v = tf.Variable(1.0)

    def step(x):
        v.assign_add(1.0)
        y = tf.debugging.check_numerics(v * x, "y")   # reads the write: runs after it
        tf.debugging.assert_non_negative(x)            # TF runs it after check_numerics
        return y
    return types.SimpleNamespace(fn=jit(step), state=lambda: {"v": v})


def test_writes_do_not_wait_for_ops_tensorflow_orders_after_them():
    calls = [(tf.constant(2.0),), (tf.constant(3.0),), (tf.constant(1.0),), (tf.constant(-1.0),),
             (tf.constant(4.0),), (tf.constant(np.inf),), (tf.constant(0.5),), (tf.constant(6.0),)]
    stats = check(_checked_step, calls, min_graph_calls=3)
    assert stats["conversions"] == 1, stats


def test_a_graph_that_fails_on_every_run_is_retired(monkeypatch):
    # the ordering bug back: every write waits for everything, which closes a cycle
    monkeypatch.setattr(atomicity, "_descendants", lambda ops, graph: set())
    calls = [(tf.constant(float(i + 1)),) for i in range(8)]
    stats = check(_checked_step, calls, eager_only=True)
    assert stats["assertion_failures"] == 3 and stats["conversions"] == 1, stats
    f = janus.function(_checked_step(lambda fn: fn).fn, profile_calls=1)
    for (x,) in calls:
        f(x)
    text = str(janus.explain(f))
    assert "runs eagerly: its graph failed on each of its 3 runs (InvalidArgumentError" in text, text
    assert janus.stats(f)["cache_entries"] == 0, \
        "its graph failed on each of its 3 runs and was retired: no graph is held"


# ------------------------------------------------------------------ function-local imports
def test_function_local_imports_convert():
    def make(jit):
        def helper(x):
            from tensorflow import nn as tf_nn
            return tf_nn.relu(x)

        def step(x):
            import math
            import os.path as osp
            import tensorflow.math
            from collections import OrderedDict as OD, namedtuple
            y = helper(x) * math.pi + tensorflow.math.abs(x)
            return y, osp.sep, OD.__name__, namedtuple.__name__
        return types.SimpleNamespace(fn=jit(step))

    calls = [(tf.constant([-1.0, 2.0]) * i,) for i in range(6)]
    stats = check(make, calls, graph_calls=3)
    assert stats["conversions"] == 1, stats


def test_relative_import_in_a_package_function(tmp_path, monkeypatch):
    pkg = tmp_path / "jn_rel_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "consts.py").write_text("SCALE = 3.0\n")
    (pkg / "steps.py").write_text(textwrap.dedent("""
        import tensorflow as tf

        def step(x):
            from .consts import SCALE
            from . import consts
            return x * SCALE + consts.SCALE
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    steps = importlib.import_module("jn_rel_pkg.steps")
    try:
        check(lambda jit: types.SimpleNamespace(fn=jit(steps.step)),
              [(tf.constant([float(i)]),) for i in range(5)], graph_calls=2)
    finally:
        for name in ("jn_rel_pkg", "jn_rel_pkg.steps", "jn_rel_pkg.consts"):
            sys.modules.pop(name, None)


def test_an_import_of_a_module_not_loaded_yet_loads_it_when_eager_would(tmp_path, monkeypatch):
    """The first call imports a module that prints as it loads: its output comes where
    eager's does (after the step's own print), once; later calls run as graphs."""
    monkeypatch.syspath_prepend(str(tmp_path))
    outputs = {}
    for kind, jit in (("eager", lambda f: f), ("janus", janus.function(profile_calls=0))):
        name = f"jn_noisy_{kind}"
        (tmp_path / f"{name}.py").write_text("print('loading')\nFACTOR = 2.0\n")
        importlib.invalidate_caches()
        source = f"def step(x):\n    print('step')\n    import {name}\n    return x * {name}.FACTOR\n"
        (tmp_path / f"step_{kind}.py").write_text(source)
        namespace = {}
        exec(compile(source, str(tmp_path / f"step_{kind}.py"), "exec"), namespace)
        step = jit(namespace["step"])
        seen = []
        for i in range(4):
            out = io.StringIO()
            with redirect_stdout(out):
                result = step(tf.constant(float(i)))
            seen.append((float(result), out.getvalue()))
        outputs[kind] = seen
        sys.modules.pop(name, None)
    assert outputs["eager"] == outputs["janus"]
    assert outputs["eager"][0][1] == "step\nloading\n"
    assert janus.stats(step)["graph_calls"] >= 2, (
        "with profile_calls=0 the first call converts (importing as eager would): the later calls run the graph: "
        f"{janus.explain(step)}"
    )
