"""The Python state of TensorFlow and Keras objects that library code reads while tracing
(a layer's ``negative_slope``, a kernel replaced by a tensor, ``trainable``, a sublayer):
guarded unchanged (``janus.trace.library_state``), so that a change between calls, by the
caller or by the step, is a guard miss and never a graph run on the old value.  Every
program is compared with eager after every call."""
from types import SimpleNamespace

import keras
import numpy as np
import tensorflow as tf

from harness import check
from janus.trace import library_state

X = tf.constant([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])


def _dense(seed: int, units: int = 2, **kwargs) -> keras.layers.Dense:
    keras.utils.set_random_seed(seed)
    layer = keras.layers.Dense(units, **kwargs)
    layer(X)
    return layer


def _setter(obj_of, name, value):
    """A call that sets attribute ``name`` of the program's object ``obj_of(p)``, eagerly."""
    def call(p):
        setattr(obj_of(p), name, value(p) if callable(value) else value)
    return call


def _kernel_step(jit):
    layer = _dense(0)

    @jit
    def step(x):
        return layer(x) * 2.0

    return SimpleNamespace(fn=step, layer=layer, state=lambda: {"kernel": tf.convert_to_tensor(layer.kernel)})


def test_a_kernel_replaced_by_a_tensor_between_calls_is_never_the_old_one():
    calls = [(X,)] * 5
    for i in range(4):  # MAML's functional weights, set by the caller
        calls += [_setter(lambda p: p.layer, "_kernel", tf.fill([3, 2], float(i))), (X,), (X,)]
    stats = check(_kernel_step, calls, min_graph_calls=3, rtol=0, atol=0)
    assert stats["conversions"] >= 2, f"the first kernel's graph, then a new trace after a replacement: {stats}"


def _slope_step(jit):
    layer = _dense(1)
    act = keras.layers.LeakyReLU(negative_slope=0.1)

    @jit
    def step(x):
        return act(layer(x) - 1.0)

    return SimpleNamespace(fn=step, act=act)


def test_a_number_a_layer_reads_is_guarded_by_its_value():
    calls = [(X,)] * 4 + [_setter(lambda p: p.act, "negative_slope", 0.5), (X,), (X,),
                         _setter(lambda p: p.act, "negative_slope", 0.1), (X,), (X,), (X,)]
    stats = check(_slope_step, calls, min_graph_calls=5, rtol=0, atol=0)
    assert stats["conversions"] <= 3, (f"one graph per slope (0.1 and 0.5; 0.1's serves again after the second "
                                       f"change), a third conversion at most for the profile after a miss: {stats}")


def _model_step(jit):
    keras.utils.set_random_seed(2)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="relu"),
                              keras.layers.BatchNormalization(), keras.layers.Dense(1)])
    opt = keras.optimizers.SGD(0.1)

    @jit
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True)))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    return SimpleNamespace(fn=step, model=model, state=lambda: {"w": [v.numpy() for v in model.variables]})


def test_an_unchanged_keras_training_step_converts_once():
    stats = check(_model_step, [(X + float(i),) for i in range(10)], min_graph_calls=7, rtol=1e-5, atol=1e-6)
    assert stats["conversions"] == 1, f"nothing the layers read changed between calls: one graph serves them: {stats}"


def test_freezing_a_layer_between_calls_is_seen():
    # Keras runs a frozen BatchNormalization in inference mode, and takes its variables out of
    # trainable_variables
    calls = [(X,)] * 4 + [_setter(lambda p: p.model.layers[1], "trainable", False)] + [(X,)] * 3 \
        + [_setter(lambda p: p.model.layers[1], "trainable", True)] + [(X,)] * 3
    check(_model_step, calls, min_graph_calls=5, rtol=1e-5, atol=1e-6)


def test_a_sublayer_replaced_between_calls_is_seen():
    def make(jit):
        keras.utils.set_random_seed(3)
        holder = keras.layers.Layer()
        holder.inner = keras.layers.Dense(2)
        holder.inner(X)

        @jit
        def step(x):
            return holder.inner(x) + 1.0

        return SimpleNamespace(fn=step, holder=holder)

    calls = [(X,)] * 4 + [_setter(lambda p: p.holder, "inner", lambda p: _dense(7))] + [(X,)] * 4
    stats = check(make, calls, min_graph_calls=3, rtol=0, atol=0)
    assert stats["conversions"] == 2, f"a graph for each sublayer: {stats}"


def test_the_guard_compares_attributes_and_items_and_fails_on_a_new_tensor():
    layer = _dense(4)
    holder = keras.layers.Layer()
    holder.parts = [layer]
    state = library_state.LibraryState(library_state._reachable([holder]))
    assert layer in state.objects and holder in state.objects and state.unchanged()
    layer.units = 3
    assert not state.unchanged(), "a number changed"
    layer.units = 2
    assert state.unchanged()
    layer._kernel = tf.identity(layer._kernel)  # equal values, another tensor: ambiguous, so a change
    assert not state.unchanged()
    state = library_state.LibraryState(library_state._reachable([holder]))
    holder.parts.append(np.zeros(2))
    assert not state.unchanged(), "an item added to a list of a layer"


def test_a_step_that_sets_what_a_layer_reads_matches_eager():
    def make(jit):
        layer = _dense(5)
        act = keras.layers.LeakyReLU(negative_slope=0.1)

        @jit
        def step(x, slope):
            act.negative_slope = slope  # the step changes it: the call after must see it
            return act(layer(x) - 1.0)

        return SimpleNamespace(fn=step, state=lambda: {"slope": act.negative_slope})

    calls = [(X, s) for s in (0.1, 0.1, 0.2, 0.2, 0.2, 0.3, 0.1, 0.1, 0.1)]
    stats = check(make, calls, min_graph_calls=0, rtol=0, atol=0)
    assert stats["breaks"] == 1 and stats["segment_graph_calls"] >= 2, (
        f"the write is a break (LeakyReLU's code reads negative_slope), the layer call after it a segment whose "
        f"graphs serve each slope while it repeats: {stats}")


def test_the_attributes_library_code_reads_are_found_in_its_bytecode():
    class Recurrent(keras.Model):  # a user's model: its own attributes are not the library's
        def call(self, x):
            return x + self.state

    assert "negative_slope" in library_state.library_reads(keras.layers.LeakyReLU)
    assert "_kernel" in library_state.library_reads(keras.layers.Dense)  # through the kernel property
    assert "rate" in library_state.library_reads(keras.layers.Dropout)
    assert "state" not in library_state.library_reads(Recurrent), "self.state = h stays a deferred write"


SCALE = [1.0]
WEIGHTS = np.array([1.0, 2.0], np.float32)


def test_what_a_lambda_layers_function_reads_is_guarded():
    """Keras calls a Lambda's function itself, so Janus never converts it: the globals and
    closure cells it reads (rebound, or changed in place) are part of the guarded state."""
    def make(jit):
        offset = {"value": 0.5}
        scale_layer = keras.layers.Lambda(lambda t: t * SCALE[0] * WEIGHTS + offset["value"])

        @jit
        def step(x):
            return scale_layer(x) + 1.0

        return SimpleNamespace(fn=step, offset=offset)

    x = tf.constant([1.0, -1.0])

    def rebind(p):
        global SCALE
        SCALE = [SCALE[0] + 1.0]

    def in_place(p):
        SCALE[0] = SCALE[0] * 2.0

    def array_in_place(p):
        WEIGHTS[1] = WEIGHTS[1] + 1.0

    def cell(p):
        p.offset["value"] += 1.0

    calls = [(x,)] * 6
    for change in (rebind, in_place, array_in_place, cell):
        calls += [change, (x,), (x,)]
    stats = check(make, calls, min_graph_calls=3, rtol=0, atol=0)
    assert stats["conversions"] >= 2, (f"the unchanged function's graph serves the first calls; each change is a "
                                       f"miss (and, changing at every other call, the graphs go unused): {stats}")
