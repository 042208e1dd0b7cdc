"""The roots of a recursion over trees in one forest (``janus.lowering.trees.recursion``): a trace
that predicts them from the list they are items of is the only trace when the prediction
holds; when it does not, the roots are found and computed by a second trace, or each is
a forest of its own -- eager's results every time (``docs/recursion.md``, step 5)."""
from types import SimpleNamespace

import numpy as np
import pytest
import tensorflow as tf

import janus
from harness import check
from janus.driver import conversion
from test_recursion import DIM, VOCAB, _weights, random_tree


class Node:
    def __init__(self, word=None, left=None, right=None):
        self.word, self.left, self.right = word, left, right


def batch(seed, size=3):
    rng = np.random.default_rng(seed)
    return ([_as_node(random_tree(rng, int(rng.integers(2, 6)))) for _ in range(size)],)  # 2 cases in each


def _as_node(t):
    return Node(word=t.word) if t.left is None else Node(left=_as_node(t.left), right=_as_node(t.right))


def model(roots):
    """A step encoding the trees ``roots(encode, trees)`` picks, under a tape."""
    def make(jit):
        emb, w = _weights(21, VOCAB, DIM), _weights(22, 2 * DIM, DIM)
        opt = tf.keras.optimizers.SGD(0.1)

        def encode(node):
            if node.left is None:
                return tf.gather(emb, [node.word])
            return tf.tanh(tf.concat([encode(node.left), encode(node.right)], axis=1) @ w)

        @jit
        def step(trees):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.square(tf.concat(roots(encode, trees, tape), axis=0)))
            opt.apply_gradients(zip(tape.gradient(loss, [emb, w]), [emb, w]))
            return loss

        return SimpleNamespace(fn=step, state=lambda: {"emb": emb, "w": w})
    return make


@pytest.fixture
def traces(monkeypatch):
    """Counts the traces of each conversion."""
    counted = []
    build = conversion.build_entry

    def counting(*args, **kwargs):
        counted.append(1)
        return build(*args, **kwargs)

    monkeypatch.setattr(conversion, "build_entry", counting)
    return counted


def in_order(encode, trees, tape):
    return [encode(t) for t in trees]


def reversed_order(encode, trees, tape):
    return [encode(t) for t in reversed(trees)]


def fewer(encode, trees, tape):
    return [encode(trees[0]), encode(trees[1])]


def one_more(encode, trees, tape):
    return [encode(t) for t in trees] + [encode(trees[0])]


def watched_between(encode, trees, tape):
    first = encode(trees[0])
    tape.watch(first)
    return [first] + [encode(t) for t in trees[1:]]


@pytest.mark.parametrize("roots, traced", [(in_order, 1), (reversed_order, 2), (fewer, 2), (one_more, 2),
                                           (watched_between, 2)])
def test_roots_predicted_or_found_give_eager_results(roots, traced, traces):
    stats = check(model(roots), [batch(s) for s in range(8)], min_graph_calls=5)
    assert stats["conversions"] == 1, stats
    assert len(traces) == traced, (roots.__name__, len(traces))


def test_predicted_roots_are_one_forest():
    step = model(in_order)(janus.function).fn
    for s in range(5):
        step(*batch(s))
    text = str(janus.explain(step))
    assert "over trees[0], trees[1], trees[2]: batched by height" in text, text
