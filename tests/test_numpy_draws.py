"""Draws from NumPy's global generator inside the graph, as Python islands
(janus/lowering/numpy_draws.py): epsilon-greedy exploration was a graph break at every
``np.random.rand()``.  Eager and Janus run the same calls from the same ``np.random.seed``,
with eager draws of the program's own between calls; results, state and the generator's
next numbers are compared after every call, bitwise."""
from __future__ import annotations

import types

import numpy as np
import tensorflow as tf

import janus
from harness import OwnGenerator, check

EXACT = {"rtol": 0.0, "atol": 0.0}
PROFILE_CALLS = 3  # janus.function's default


def _agent(jit, check_positive: bool = False):
    rng = OwnGenerator(7)

    class Agent:
        def __init__(self):
            self.epsilon = 1.0
            self.w = tf.Variable([[1.0, -1.0], [0.5, 0.2]])
            self.noise_scale = 0.5

        @jit
        def act(self, x):
            if check_positive:
                tf.debugging.assert_non_negative(x)  # fails on some calls: the run aborts after its draws
            noise = np.random.uniform(0.0, self.noise_scale, size=(2,))
            q = tf.matmul(x, self.w)[0] + tf.cast(noise, tf.float32) + np.random.randn()
            if np.random.rand() < self.epsilon:
                action = np.random.randint(2)
            else:
                action = tf.argmax(q)
            return action, q

    agent = Agent()

    def call(i):
        def run(p):
            agent.epsilon *= 0.8
            agent.noise_scale = 0.5 + 0.1 * i
            out = p.fn(tf.constant([[float(i % 5) - (3.0 if check_positive and i % 4 == 3 else 0.0), 1.0]]))
            return out, np.random.rand()  # the program's own draw, between steps
        return lambda p: rng.run(run, p)

    return types.SimpleNamespace(fn=agent.act, call=call,
                                 state=lambda: {"w": agent.w, "next": rng.run(lambda: np.random.rand())})


def test_epsilon_greedy_draws_run_inside_the_graph_with_eagers_numbers():
    calls = [lambda p, i=i: p.call(i)(p) for i in range(12)]
    stats = check(_agent, calls, min_graph_calls=len(calls) - PROFILE_CALLS - 1, **EXACT)
    assert stats["breaks"] == 0, stats  # every draw is in the graph: no split around it
    assert stats["conversions"] <= 2, stats  # epsilon fed; the branch's both sides once the profile saw both


def test_a_run_aborting_after_its_draws_puts_the_generator_back():
    """An op failing after the draws (``assert_non_negative``) aborts the run: the eager
    re-run draws the numbers eager draws, and the generator ends where eager's does."""
    calls = [lambda p, i=i: p.call(i)(p) for i in range(12)]
    stats = check(lambda jit: _agent(jit, check_positive=True), calls, min_graph_calls=4, **EXACT)
    assert stats["breaks"] == 0, stats
    assert stats["assertion_failures"] >= 1, stats  # runs did abort after drawing (calls 7 and 11)


def test_a_draw_used_as_numpy_is_a_graph_break_again():
    """``np.random.rand(2).sum()`` needs the array in Python: the next trace leaves the draw
    in Python (a graph break), with eager's numbers throughout."""
    def make(jit):
        rng = OwnGenerator(3)

        @jit
        def step(x):
            r = np.random.rand(2)
            return x * float(r.sum())

        return types.SimpleNamespace(fn=lambda x: rng.run(step, x), janus_fns=[step],
                                     state=lambda: {"next": rng.run(lambda: np.random.rand())})

    stats = check(make, [(tf.constant([float(i)]),) for i in range(8)], min_graph_calls=0, **EXACT)
    assert stats["breaks"] == 1, stats


def test_explain_names_the_global_generators_island():
    np.random.seed(0)

    @janus.function
    def step(x):
        return x * np.random.rand()

    janus.reset()
    for i in range(5):
        step(tf.constant(float(i)))
    text = str(janus.explain(step))
    assert "Python island: np.random.rand" in text and "numpy.random's global generator" in text, text
    assert janus.stats(step)["graph_calls"] >= 1, \
        f"np.random.rand is a Python island: the function still converts after the 3 profiled calls: {janus.stats(step)}"
