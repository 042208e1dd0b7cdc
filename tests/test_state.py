"""Python state carried across training steps: every form, matched against eager after every call.

Each program is run over several calls with its state carried from one call to the
next; the harness compares results, printed output and the state after every call,
and checks that graphs really ran (a test cannot pass by running everything eagerly).
"""
from types import SimpleNamespace

import numpy as np
import pytest
import tensorflow as tf

import janus
from harness import assert_same, check as _check, fresh_module


def check(factory, calls, max_conversions=2, **kw):
    """The harness's ``check``, plus: the graphs are *reused*.

    A graph built for one call and thrown away at the next (a guard pinned to a value
    that changes every call) would pass "graphs ran" while converting at every call;
    state carried across steps must not cost a conversion per step.
    """
    total = _check(factory, calls, **kw)
    assert total["conversions"] <= max_conversions, \
        f"graphs were rebuilt instead of reused ({total['conversions']} conversions for {total['calls']} calls): {total}"
    return total



def rnd(shape, seed, scale=1.0):
    return tf.constant((np.random.RandomState(seed).randn(*shape) * scale).astype(np.float32))


def dense_model(units=4, inputs=3, seed=0):
    tf.keras.utils.set_random_seed(seed)
    model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="tanh"), tf.keras.layers.Dense(units)])
    model.build((None, inputs))
    return model


# ------------------------------------------------------------------ self.state = h (RNN state passing)
def test_rnn_state_passing_across_batches():
    """``self.state`` is read at the start of the step and written at the end, over 10 steps."""
    def make(jit):
        class StatefulRNN:
            def __init__(self):
                rs = np.random.RandomState(0)
                self.W = tf.Variable(rs.randn(3, 5).astype(np.float32) * 0.3)
                self.U = tf.Variable(rs.randn(5, 5).astype(np.float32) * 0.3)
                self.V = tf.Variable(rs.randn(5, 1).astype(np.float32) * 0.3)
                self.state = tf.zeros((2, 5))
                self.lr = 0.05

            @jit
            def train_step(self, xs, y):
                h = self.state
                with tf.GradientTape() as tape:
                    for t in range(3):
                        h = tf.tanh(tf.matmul(xs[:, t], self.W) + tf.matmul(h, self.U))
                    loss = tf.reduce_mean(tf.square(tf.matmul(h, self.V) - y))
                grads = tape.gradient(loss, [self.W, self.U, self.V])
                for v, g in zip([self.W, self.U, self.V], grads):
                    v.assign_sub(self.lr * g)
                self.state = tf.stop_gradient(h)
                return loss

        m = StatefulRNN()
        return SimpleNamespace(fn=m.train_step, m=m,
                               state=lambda: {"state": m.state, "W": m.W, "U": m.U, "V": m.V})

    calls = [(rnd((2, 3, 3), i), rnd((2, 1), 100 + i)) for i in range(10)]
    total = check(make, calls, min_graph_calls=6)
    assert total["graph_calls"] >= 6, \
        f"10 calls of fixed shapes: calls 4-10 may run the graph after 3 profiled calls; at least 6 do: {total}"


# ------------------------------------------------------------------ self.step += 1
def test_step_counter_attribute():
    def make(jit):
        class Trainer:
            def __init__(self):
                self.step = 0
                self.w = tf.Variable([1.0, -2.0, 0.5])

            @jit
            def train_step(self, x):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_sum(tf.square(self.w * x))
                self.w.assign_sub(0.1 * tape.gradient(loss, self.w))
                self.step += 1
                return loss

        t = Trainer()
        return SimpleNamespace(fn=t.train_step, t=t, state=lambda: {"step": t.step, "w": t.w})

    calls = [(rnd((3,), i),) for i in range(12)]
    check(make, calls, min_graph_calls=6)


# ------------------------------------------------------------------ self.history.append(loss)
def test_history_list_append():
    def make(jit):
        class Trainer:
            def __init__(self):
                self.history = []
                self.w = tf.Variable([0.5, 0.25])

            @jit
            def train_step(self, x):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_sum(tf.square(self.w - x))
                self.w.assign_sub(0.2 * tape.gradient(loss, self.w))
                self.history.append(loss)
                return loss

        t = Trainer()
        return SimpleNamespace(fn=t.train_step, t=t, state=lambda: {"history": list(t.history), "w": t.w})

    calls = [(rnd((2,), i),) for i in range(12)]
    check(make, calls, min_graph_calls=6)


GLOBAL_HISTORY_SRC = """
import tensorflow as tf
LOSSES = []
W = tf.Variable([0.5, 0.25])

@jit
def train_step(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(W - x))
    W.assign_sub(0.2 * tape.gradient(loss, W))
    LOSSES.append(loss)
    return loss
"""


def test_global_history_list_append():
    """The module-level form of the history list (what a script's training loop does)."""
    def make(jit):
        mod = fresh_module(GLOBAL_HISTORY_SRC, jit=jit)
        return SimpleNamespace(fn=mod.train_step, state=lambda: {"LOSSES": list(mod.LOSSES), "W": mod.W})

    calls = [(rnd((2,), i),) for i in range(12)]
    check(make, calls, min_graph_calls=6)


# ------------------------------------------------------------------ self.metrics["loss"] = loss
def test_metrics_dict_updates():
    def make(jit):
        class Trainer:
            def __init__(self):
                self.metrics = {"loss": tf.constant(0.0), "best": tf.constant(np.inf, tf.float32)}
                self.w = tf.Variable([[0.3], [-0.7]])

            @jit
            def train_step(self, x, y):
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean(tf.square(tf.matmul(x, self.w) - y))
                self.w.assign_sub(0.1 * tape.gradient(loss, self.w))
                self.metrics["loss"] = loss
                self.metrics["best"] = tf.minimum(self.metrics["best"], loss)
                return self.metrics["best"]

        t = Trainer()
        return SimpleNamespace(fn=t.train_step, t=t, state=lambda: {"metrics": dict(t.metrics), "w": t.w})

    calls = [(rnd((4, 2), i), rnd((4, 1), 50 + i)) for i in range(12)]
    check(make, calls, min_graph_calls=6)


# ------------------------------------------------------------------ globals
GLOBAL_CONTAINER_SRC = """
import tensorflow as tf
STATE = {"n": 0, "last": tf.constant(0.0)}
W = tf.Variable([1.0, 2.0])

@jit
def train_step(x):
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(W * x)
    W.assign_sub(0.1 * tape.gradient(loss, W))
    STATE["n"] += 1
    STATE["last"] = loss
    return loss
"""


def test_global_counter_in_mutable_container():
    def make(jit):
        mod = fresh_module(GLOBAL_CONTAINER_SRC, jit=jit)
        return SimpleNamespace(fn=mod.train_step, state=lambda: {"STATE": dict(mod.STATE), "W": mod.W})

    calls = [(rnd((2,), i),) for i in range(12)]
    check(make, calls, min_graph_calls=6)


GLOBAL_STATEMENT_SRC = """
import tensorflow as tf
COUNT = 0
LAST = None
W = tf.Variable([1.0, 2.0])

@jit
def train_step(x):
    global COUNT, LAST
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(W * x)
    W.assign_sub(0.1 * tape.gradient(loss, W))
    COUNT = COUNT + 1
    LAST = loss
    return loss
"""


def test_global_statement_converts_and_matches_eager():
    def make(jit):
        mod = fresh_module(GLOBAL_STATEMENT_SRC, jit=jit)
        return SimpleNamespace(fn=mod.train_step, mod=mod,
                               state=lambda: {"COUNT": mod.COUNT, "LAST": mod.LAST, "W": mod.W})

    calls = [(rnd((2,), i),) for i in range(8)]
    check(make, calls, min_graph_calls=4)


# ------------------------------------------------------------------ if self.training: (batch norm)
class _BatchNormNet:
    """A hand-written batch-norm layer whose branch depends on the Python attribute ``training``."""

    def __init__(self, jit):
        self.training = False
        self.moving_mean = tf.Variable(tf.zeros((3,)))
        self.moving_var = tf.Variable(tf.ones((3,)))
        self.scale = tf.Variable([1.0, 0.5, 2.0])
        self.step = jit(self._step)

    def _step(self, x):
        if self.training:
            mean = tf.reduce_mean(x, axis=0)
            var = tf.math.reduce_variance(x, axis=0)
            self.moving_mean.assign(0.9 * self.moving_mean + 0.1 * mean)
            self.moving_var.assign(0.9 * self.moving_var + 0.1 * var)
        else:
            mean, var = self.moving_mean, self.moving_var
        return tf.reduce_sum(self.scale * tf.square((x - mean) / tf.sqrt(var + 1e-3)))


def _bn_calls():
    """Evaluate (training=False) x3, train x6, evaluate again x3; the flag is flipped by the user."""
    xs = [rnd((8, 3), 200 + i, scale=2.0) + 1.5 for i in range(12)]

    def call(i, training):
        def c(p):
            p.net.training = training
            return p.fn(xs[i])
        return c

    return [call(i, i >= 3 and i < 9) for i in range(12)]


def _bn_factory(jit):
    net = _BatchNormNet(jit)
    return SimpleNamespace(fn=net.step, net=net, janus_fns=[net.step],
                           state=lambda: {"training": net.training, "moving_mean": net.moving_mean,
                                          "moving_var": net.moving_var})


def _bn_run(jit):
    """Run the call sequence; returns (results, final moving mean)."""
    p = _bn_factory(jit)
    out = [float(c(p)) for c in _bn_calls()]
    return out, p.net.moving_mean.numpy().copy()


def test_training_flag_matches_eager_where_tf_function_does_not():
    total = check(_bn_factory, _bn_calls(), min_graph_calls=3)

    eager, eager_mean = _bn_run(lambda f: f)
    jan, jan_mean = _bn_run(janus.function)
    tff, tff_mean = _bn_run(tf.function)
    np.testing.assert_allclose(jan, eager, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(jan_mean, eager_mean, rtol=1e-5, atol=1e-5)
    # tf.function traced the training=False branch on the first call and keeps it: the
    # attribute is not part of its cache key, so training never updates the statistics.
    assert not np.allclose(tff, eager, rtol=1e-3, atol=1e-3)
    assert not np.allclose(tff_mean, eager_mean, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(tff_mean, np.zeros(3))
    print("\nbatch-norm training flag (eval x3, train x6, eval x3):")
    print("  eager        ", np.round(eager, 4).tolist(), "moving_mean", np.round(eager_mean, 4).tolist())
    print("  janus        ", np.round(jan, 4).tolist(), "moving_mean", np.round(jan_mean, 4).tolist())
    print("  tf.function  ", np.round(tff, 4).tolist(), "moving_mean", np.round(tff_mean, 4).tolist())
    print("  janus stats  ", total)


# ------------------------------------------------------------------ Keras 3 optimizers
def _optimizer_program(make_optimizer):
    def make(jit):
        model = dense_model(units=2, inputs=3)
        opt = make_optimizer()

        @jit
        def train_step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(model(x) - y))
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            return loss

        def state():
            # Keras 3 variables are compared as tensors (their dtype is a string); the optimizer's
            # variables (iterations, momentums / Adam moments) exist once it was built
            return {"weights": [tf.convert_to_tensor(v) for v in model.weights],
                    "opt": [tf.convert_to_tensor(v) for v in opt.variables]}

        return SimpleNamespace(fn=train_step, state=state)

    return make


@pytest.mark.parametrize("name,make_optimizer", [
    ("sgd_momentum", lambda: tf.keras.optimizers.SGD(0.05, momentum=0.9)),
    ("adam", lambda: tf.keras.optimizers.Adam(0.01)),
])
def test_keras_optimizer_updates_inside_step(name, make_optimizer):
    calls = [(rnd((6, 3), i), rnd((6, 2), 300 + i)) for i in range(10)]
    check(_optimizer_program(make_optimizer), calls, min_graph_calls=5, rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------ print inside the step
def test_print_tensor_inside_step():
    def make(jit):
        w = tf.Variable([0.5, -0.5])

        @jit
        def train_step(x):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.square(w * x))
            w.assign_sub(0.1 * tape.gradient(loss, w))
            print("loss:", loss, "w:", w.read_value())
            return loss

        return SimpleNamespace(fn=train_step, state=lambda: {"w": w})

    calls = [(rnd((2,), i),) for i in range(8)]
    check(make, calls, min_graph_calls=4)


def test_print_formatted_loss_inside_step():
    """The usual logging line: ``print(f"loss {float(loss):.4f}")`` inside the training step."""
    def make(jit):
        w = tf.Variable([0.5, -0.5])

        @jit
        def train_step(x):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.square(w * x))
            w.assign_sub(0.1 * tape.gradient(loss, w))
            print(f"loss {float(loss):.4f}")
            return loss

        return SimpleNamespace(fn=train_step, state=lambda: {"w": w})

    calls = [(rnd((2,), i),) for i in range(8)]
    check(make, calls, min_graph_calls=4)


# ------------------------------------------------------------------ all-or-nothing
class _Guarded:
    """A step that mutates every kind of state, with a tensor assert before or after the mutations."""

    def __init__(self, jit, assert_first):
        self.w = tf.Variable([1.0, 2.0, 3.0])
        self.calls = 0
        self.last = tf.zeros((3,))
        self.history = []
        self.metrics = {"loss": tf.constant(0.0)}
        self.assert_first = assert_first
        self.step = jit(self._step_first if assert_first else self._step_middle)

    def _step_first(self, x):
        assert tf.reduce_all(x > 0)
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(self.w * tf.math.log(x))
        self.w.assign_sub(0.1 * tape.gradient(loss, self.w))
        self.last = x
        self.history.append(loss)
        self.metrics["loss"] = loss
        return loss

    def _step_middle(self, x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(self.w * x)
        self.w.assign_sub(0.1 * tape.gradient(loss, self.w))
        self.last = x
        self.history.append(loss)
        assert tf.reduce_all(x > 0)
        self.metrics["loss"] = loss
        self.w.assign_add(tf.fill((3,), 0.01))
        return loss

    def snapshot(self):
        return {"w": self.w, "last": self.last, "history": list(self.history), "metrics": dict(self.metrics)}


def _guarded_calls():
    pos = [tf.abs(rnd((3,), i)) + 0.1 for i in range(10)]
    neg = [rnd((3,), 77) * 0 - 1.0, tf.constant([1.0, -0.5, 2.0])]
    return [(pos[0],), (pos[1],), (pos[2],), (pos[3],), (pos[4],), (neg[0],), (pos[5],), (neg[1],),
            (pos[6],), (pos[7],)]


@pytest.mark.parametrize("assert_first", [True, False], ids=["assert_first", "assert_after_writes"])
def test_aborted_graph_changes_nothing_and_eager_raises(assert_first):
    def make(jit):
        g = _Guarded(jit, assert_first)
        return SimpleNamespace(fn=g.step, g=g, janus_fns=[g.step], state=g.snapshot)

    total = check(make, _guarded_calls(), min_graph_calls=4)
    assert total["assertion_failures"] >= 1, total


def test_aborted_graph_run_itself_leaves_state_untouched():
    """Run the cached graph directly on a failing input: it raises and commits nothing."""
    janus.reset()
    g = _Guarded(janus.function, assert_first=False)
    for x, in _guarded_calls()[:5]:
        g.step(x)
    jf = g.step.__janus_function__
    assert jf.entries, janus.explain(g.step)
    before = g.snapshot()
    before_w = g.w.numpy().copy()
    bad = tf.constant([1.0, -0.5, 2.0])
    with pytest.raises(Exception):
        jf.entries[0].graph.execute((g, bad), {})
    assert_same(before, g.snapshot(), "state after the aborted graph run")
    np.testing.assert_array_equal(g.w.numpy(), before_w)
    assert len(g.history) == 5
    # through the normal path: the eager re-run raises eager's AssertionError
    with pytest.raises(AssertionError):
        g.step(bad)
    assert len(g.history) == 6            # eager appended before its assert, once
