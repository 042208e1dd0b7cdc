"""``global`` and ``nonlocal`` statements: rebinding a module global or a closure cell is a
deferred write like an attribute's, and numbers that change every call are fed."""
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

import janus
from harness import check, fresh_module


def rnd(shape, seed):
    return tf.constant(np.random.RandomState(seed).randn(*shape).astype(np.float32))


SCHEDULE_SRC = """
import tensorflow as tf
LR = 0.5
STEP = 0
W = tf.Variable([1.0, -2.0])
HISTORY = []

@jit
def train_step(x):
    global LR, STEP
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(W * x - 1.0))
    W.assign_sub(LR * tape.gradient(loss, W))
    STEP += 1
    LR *= 0.9
    if STEP % 3 == 0:
        HISTORY.append((STEP, loss))
    return loss
"""


def test_a_global_learning_rate_schedule_and_step_counter():
    def make(jit):
        mod = fresh_module(SCHEDULE_SRC, jit=jit)
        return SimpleNamespace(fn=mod.train_step, state=lambda: {
            "LR": mod.LR, "STEP": mod.STEP, "W": mod.W, "HISTORY": list(mod.HISTORY)})

    stats = check(make, [(rnd((2,), i),) for i in range(16)], min_graph_calls=10)
    assert stats["conversions"] <= 3, (
        "LR and STEP change every call and are fed after a guard miss each: at most 3 conversions over the 16 calls, "
        f"not one per call: {stats}"
    )


def test_nonlocal_counters_next_to_tensor_state():
    def make(jit):
        count = 0
        total = tf.constant(0.0)
        best = None

        @jit
        def step(x):
            nonlocal count, total, best
            count += 1
            total = total + tf.reduce_sum(x)
            if best is None:
                best = tf.reduce_max(x)
            else:
                best = tf.maximum(best, tf.reduce_max(x))
            return total / count

        def state():
            return {"count": count, "total": total, "best": best}

        return SimpleNamespace(fn=step, state=state)

    stats = check(make, [(rnd((3,), i),) for i in range(14)], min_graph_calls=8)
    assert stats["conversions"] <= 3, (
        "count changes every call (fed after a guard miss) and best turns from None into a tensor once: at most 3 "
        f"conversions, not one per call: {stats}"
    )


SWAP_SRC = """
import tensorflow as tf
A = tf.constant([1.0])
B = tf.constant([2.0])
NEW = None

@jit
def swap(x):
    global A, B, NEW
    A, B = B + x, A
    NEW = A * 2.0
    return A + B
"""


def test_tuple_assignment_to_globals_and_a_global_created_by_the_call():
    def make(jit):
        mod = fresh_module(SWAP_SRC, jit=jit)
        del mod.NEW  # the first call creates it
        return SimpleNamespace(fn=mod.swap, state=lambda: {"A": mod.A, "B": mod.B, "NEW": getattr(mod, "NEW", None)})

    check(make, [(rnd((1,), i),) for i in range(10)], min_graph_calls=5)


BRANCH_SRC = """
import tensorflow as tf
FLAG = 0
ITEMS = []

@jit
def f(x):
    global FLAG, ITEMS
    if tf.reduce_sum(x) > 0:
        FLAG = 1
    ITEMS += [x]
    return x
"""


def test_writes_janus_cannot_defer_run_eagerly_and_match():
    """A global rebound inside a tensor branch; a global list extended in place by ``+=``."""
    def make(jit):
        mod = fresh_module(BRANCH_SRC, jit=jit)
        return SimpleNamespace(fn=mod.f, state=lambda: {"FLAG": mod.FLAG, "ITEMS": list(mod.ITEMS)})

    check(make, [(rnd((2,), i),) for i in range(8)], eager_only=True)


def test_nonlocal_in_a_nested_function_runs_eagerly_with_a_reason():
    def make(jit):
        @jit
        def f(x):
            acc = x

            def add(y):
                nonlocal acc
                acc = acc + y
            add(x)
            return acc

        return SimpleNamespace(fn=f)

    check(make, [(rnd((2,), i),) for i in range(6)], eager_only=True)
    f = make(janus.function).fn
    for i in range(4):
        f(rnd((2,), i))
    assert "nested function" in str(janus.explain(f))
