"""``del`` in a step converts (issue #40): a local unbound, an item or slice of a list or
dict deleted (deferred on Python state, as a container method is), an attribute deleted.

Before, every ``del`` was a graph break: DQN's ``del history[:1]`` ran in Python between two
segments at every step.  Each program runs eagerly and through Janus with state changed by the
caller and by the step between calls, compared after every call.
"""
import collections
import types

import numpy as np
import tensorflow as tf

from harness import check


def _replay(jit):
    class Agent:
        def __init__(self):
            self.history = []
            self.scores = {"a": 1.0}
            self.buffer = collections.deque([1.0, 2.0, 3.0])

        @jit
        def step(self, x):
            y = tf.reduce_sum(x * 2.0)
            self.history.append(float(len(self.history)))
            if len(self.history) > 3:
                del self.history[:1]  # DQN's trim of its history
            del self.scores["a"]
            self.scores["a"] = 2.0
            scratch = x + 1.0
            del scratch
            return y

    agent = Agent()
    return types.SimpleNamespace(fn=agent.step, state=lambda: {"history": list(agent.history),
                                                               "scores": dict(agent.scores)})


def test_del_of_a_slice_an_item_and_a_local_runs_as_a_graph():
    total = check(_replay, [(tf.constant([float(i), 1.0]),) for i in range(8)], min_graph_calls=3)
    assert total["breaks"] == 0, total


def _attribute(jit):
    class Model:
        def __init__(self):
            self.cache = None
            self.calls = 0

        @jit
        def step(self, x):
            self.calls += 1
            if self.calls % 2:
                self.cache = x * 3.0
            else:
                del self.cache  # eager: the attribute is gone until the next odd call
            return x + 1.0

    m = Model()
    return types.SimpleNamespace(fn=m.step, state=lambda: {"calls": m.calls, "has_cache": hasattr(m, "cache")})


def test_del_of_an_attribute_is_a_deferred_effect():
    total = check(_attribute, [(tf.constant([float(i)]),) for i in range(10)], min_graph_calls=3)
    assert total["breaks"] == 0, total


def _unbound(jit):
    @jit
    def step(x, drop):
        y = x * 2.0
        if drop:
            del y
        return y  # eager: UnboundLocalError when drop

    return types.SimpleNamespace(fn=step)


def test_reading_a_deleted_local_raises_as_eager_does():
    drops = [False, False, False, True, False, False, False, False, True, False, False]
    calls = [(tf.constant([float(i)]), drop) for i, drop in enumerate(drops)]
    check(_unbound, calls, min_graph_calls=2)


def _numpy_buffer(jit):
    state = {"frames": [np.zeros(2, np.float32)]}

    @jit
    def step(x):
        state["frames"].append(x.numpy() if False else np.ones(2, np.float32))
        del state["frames"][0]
        return x * float(len(state["frames"]))

    return types.SimpleNamespace(fn=step, state=lambda: {"frames": [f.tolist() for f in state["frames"]]})


def test_del_of_an_item_of_a_global_container():
    check(_numpy_buffer, [(tf.constant([float(i)]),) for i in range(6)], min_graph_calls=3)
