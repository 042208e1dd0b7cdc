"""A statement whose trace raises where eager does not is a graph break from the next call on
(issue #40: breaks that do not cost a conversion each time).

Reptile's step reads ``model.get_weights()`` (a library call that needs eager values: traced,
it raises "numpy() is only available when eager execution is enabled"); its learning rate
changes every call, so no two failed attempts looked alike and Janus traced it again on every
call until its budget was spent (18 failed traces in 30 calls).  Now eager's run of the first
such call shows the statement, not the call's values, is at fault: the function is split there
once, its inner loop runs as a graph, and every call still gives eager's weights.
"""
import types

import keras
import numpy as np
import tensorflow as tf

import janus
from harness import check


def _reptile(jit):
    tf.keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.layers.Dense(8, activation="relu"), keras.layers.Dense(1)])
    model.build((None, 1))
    opt = keras.optimizers.SGD(0.01)

    @jit
    def reptile_step(x, y, eps):
        old = model.get_weights()
        for _ in range(2):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((model(x) - y) ** 2)
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
        new = model.get_weights()
        model.set_weights([o + (n - o) * eps for o, n in zip(old, new)])
        return loss

    return types.SimpleNamespace(fn=reptile_step, state=lambda: {"weights": [w.numpy() for w in model.weights]})


def _calls(n: int) -> list[tuple]:
    r = np.random.default_rng(0)
    out = []
    for i in range(n):
        x = r.uniform(-3, 3, (6, 1)).astype(np.float32)
        out.append((x, np.sin(x), 0.5 * (1 - i / n)))
    return out


def test_a_library_call_that_needs_eager_breaks_at_first_sight():
    total = check(_reptile, _calls(14), graph_calls=0, rtol=1e-5, atol=1e-6)
    # the first conversion's trace raises at get_weights() and eager does not: one failed
    # conversion, then a break there; the segment after it fails once more (the second
    # get_weights()) and is split in turn
    assert total["failed_conversions"] <= 2, total
    assert total["breaks"] >= 1 and total["segment_graph_calls"] >= 5, total
    prog = _reptile(janus.function)
    for args in _calls(14):
        prog.fn(*args)
    assert "where eager does not" in str(janus.explain(prog.fn))
