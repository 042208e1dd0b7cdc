"""Gradients through batched tree recursion have eager's structure: a variable that a
call's trees never bring to the loss gets ``None`` (issue #24, item 3).

The graph computes every case's block for every call, on zero rows when the call has no
node of that case, and a zero-row block still differentiates to a zero gradient; eager
never ran that code and gives ``None``.  Keras skips ``None`` gradients, plain SGD raises
on them: either way the difference is observable.  Each program here is run eagerly and
through Janus with the same calls (``harness.check``), compared after every call; the
step also records which gradients were ``None``.
"""
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

from harness import check

VOCAB, DIM = 12, 4


class Node:
    def __init__(self, word=None, left=None, right=None):
        self.word, self.left, self.right = word, left, right


def _weights(seed, *shape):
    return tf.Variable(tf.random.stateless_normal(shape, [seed, 7]) * 0.3)


def _embed(emb, word):
    """A dense lookup (a gather's IndexedSlices gradient would make ``0.1 * g`` raise always)."""
    return tf.one_hot([word], VOCAB) @ emb


def _tree(rng, leaves):
    if leaves == 1:
        return Node(word=int(rng.integers(0, VOCAB)))
    split = int(rng.integers(1, leaves))
    return Node(left=_tree(rng, split), right=_tree(rng, leaves - split))


def _batch(seed, leaves, size=3):
    """``size`` trees of ``leaves`` leaves each (1: the batch holds only leaves)."""
    rng = np.random.default_rng(seed)
    return [_tree(rng, leaves) for _ in range(size)], tf.constant(rng.integers(0, 2, size).astype(np.int32))


# leaf-only batches between deeper ones, enough of each kind for graphs to be reused
MIXED = [_batch(s, leaves) for s, leaves in enumerate([3, 4, 2, 3, 1, 1, 3, 1, 1, 1, 4, 2, 1, 3, 1, 2, 1, 1])]


def _treelstm(optimizer):
    """A Tree-LSTM step: ``node`` (composition) is read only by internal nodes."""
    def make(jit):
        class TreeLSTM:
            def __init__(self):
                self.emb = _weights(1, VOCAB, DIM)
                self.leaf = _weights(2, DIM, 3 * DIM)
                self.node = _weights(3, 2 * DIM, 5 * DIM)
                self.out = _weights(4, DIM, 2)
                self.opt = tf.keras.optimizers.Adam(0.05) if optimizer == "adam" else None
                self.none = []

            def encode(self, node):
                if node.left is None:
                    x = _embed(self.emb, node.word)
                    i, o, u = tf.split(x @ self.leaf, 3, axis=1)
                    c = tf.sigmoid(i) * tf.tanh(u)
                else:
                    hl, cl = self.encode(node.left)
                    hr, cr = self.encode(node.right)
                    i, fl, fr, o, u = tf.split(tf.concat([hl, hr], axis=1) @ self.node, 5, axis=1)
                    c = tf.sigmoid(i) * tf.tanh(u) + tf.sigmoid(fl) * cl + tf.sigmoid(fr) * cr
                return tf.sigmoid(o) * tf.tanh(c), c

            @jit
            def step(self, trees, labels):
                variables = [self.emb, self.leaf, self.node, self.out]
                with tf.GradientTape() as tape:
                    hs = [self.encode(t)[0] for t in trees]
                    logits = tf.concat(hs, axis=0) @ self.out
                    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
                grads = tape.gradient(loss, variables)
                self.none.append(tuple(g is None for g in grads))
                if self.opt is not None:
                    self.opt.apply_gradients(zip(grads, variables))
                else:
                    for v, g in zip(variables, grads):
                        v.assign_sub(0.1 * g)
                return loss

        m = TreeLSTM()
        return SimpleNamespace(fn=m.step, state=lambda: {
            "emb": m.emb, "leaf": m.leaf, "node": m.node, "out": m.out, "none": list(m.none)})
    return make


def test_leaf_only_batches_give_none_to_composition_weights_under_adam():
    stats = check(_treelstm("adam"), MIXED, min_graph_calls=10)
    assert stats["conversions"] == 2, stats  # one graph with internal nodes, one of leaves only


def test_plain_sgd_raises_on_a_none_gradient_as_eager_does():
    """``0.1 * None`` raises TypeError in eager at every leaf-only batch (after the updates
    of the variables before ``node``): Janus must not return a loss there."""
    stats = check(_treelstm("sgd"), MIXED, min_graph_calls=6)
    assert stats["conversions"] == 1, stats


def test_leaves_of_one_kind_and_empty_batches():
    """Leaves choose their embedding by ``kind``: a call whose leaves are all of kind "a"
    gives ``None`` for kind "b"'s table though the graph has a block for those leaves.  An
    empty batch (no tree at all) leaves every weight but the bias without a gradient."""
    def make(jit):
        class Model:
            def __init__(self):
                self.emb_a = _weights(5, VOCAB, DIM)
                self.emb_b = _weights(6, VOCAB, DIM)
                self.w = _weights(7, 2 * DIM, DIM)
                self.bias = _weights(8, 1, DIM)
                self.opt = tf.keras.optimizers.Adam(0.05)
                self.none = []

            def encode(self, node):
                if node.left is None:
                    if node.kind == "a":
                        return _embed(self.emb_a, node.word)
                    return _embed(self.emb_b, node.word)
                x = tf.concat([self.encode(node.left), self.encode(node.right)], axis=1)
                return tf.tanh(x @ self.w)

            @jit
            def step(self, trees):
                variables = [self.emb_a, self.emb_b, self.w, self.bias]
                with tf.GradientTape() as tape:
                    loss = tf.reduce_sum(self.bias ** 2)
                    for t in trees:
                        loss = loss + tf.reduce_sum(self.encode(t) + self.bias)
                grads = tape.gradient(loss, variables)
                self.none.append(tuple(g is None for g in grads))
                self.opt.apply_gradients(zip(grads, variables))
                return loss

        m = Model()
        return SimpleNamespace(fn=m.step, state=lambda: {
            "emb_a": m.emb_a, "emb_b": m.emb_b, "w": m.w, "bias": m.bias, "none": list(m.none)})

    def tree(rng, leaves, kinds):
        if leaves == 1:
            node = Node(word=int(rng.integers(0, VOCAB)))
            node.kind = kinds[int(rng.integers(0, len(kinds)))]
            return node
        split = int(rng.integers(1, leaves))
        return Node(left=tree(rng, split, kinds), right=tree(rng, leaves - split, kinds))

    rng = np.random.default_rng(11)
    both, a = "ab", "a"
    kinds = [both, both, a, both, a, a, None, both, a, None, a, both, None, a, both]
    calls = [([tree(rng, 3, k) for _ in range(2)],) if k is not None else ([],) for k in kinds]
    stats = check(make, calls, min_graph_calls=9)
    assert stats["conversions"] == 3, stats  # both kinds, kind "a" only, no tree


def test_a_component_the_root_does_not_use_counts_only_below_the_root():
    """Nodes return ``(h, a)``; the loss uses the roots' ``h`` only, and ``a`` (the only
    user of ``v``) reaches ``h`` only in a parent.  A batch of one-level trees (every
    internal node a root) gives ``v`` no gradient in eager; two-level trees give it one.
    Which cases a call holds is the same for both: only following what reaches the loss
    tells them apart."""
    def make(jit):
        class Model:
            def __init__(self):
                self.emb = _weights(9, VOCAB, DIM)
                self.w = _weights(10, 2 * DIM, DIM)
                self.v = _weights(11, 2 * DIM, DIM)
                self.opt = tf.keras.optimizers.Adam(0.05)
                self.none = []

            def encode(self, node):
                if node.left is None:
                    x = _embed(self.emb, node.word)
                    return x, x
                hl, al = self.encode(node.left)
                hr, ar = self.encode(node.right)
                h = tf.tanh(tf.concat([hl + al, hr + ar], axis=1) @ self.w)
                a = tf.tanh(tf.concat([al, ar], axis=1) @ self.v)
                return h, a

            @jit
            def step(self, trees):
                variables = [self.emb, self.w, self.v]
                with tf.GradientTape() as tape:
                    loss = tf.add_n([tf.reduce_sum(self.encode(t)[0]) for t in trees])
                grads = tape.gradient(loss, variables)
                self.none.append(tuple(g is None for g in grads))
                self.opt.apply_gradients(zip(grads, variables))
                return loss

        m = Model()
        return SimpleNamespace(fn=m.step, state=lambda: {"emb": m.emb, "w": m.w, "v": m.v, "none": list(m.none)})

    rng = np.random.default_rng(12)
    leaf = lambda: Node(word=int(rng.integers(VOCAB)))  # noqa: E731
    one = lambda: Node(left=leaf(), right=leaf())  # noqa: E731
    two = lambda: Node(left=one(), right=leaf())  # noqa: E731
    calls = [([two(), one()],) if k else ([one(), one()],) for k in [1, 1, 1, 1, 0, 0, 1, 0, 0, 0, 1, 0, 1]]
    stats = check(make, calls, min_graph_calls=6)
    assert stats["conversions"] <= 3, (
        "the calls hold batches of two kinds (one-level or two-level trees): a conversion per kind and at most one "
        f"more, not one per new tree: {stats}"
    )


def test_a_child_whose_result_the_parent_stops_reaches_nothing():
    """The parent stops the gradient of its left child: leaves of class ``Word`` that are only
    ever left children give ``emb`` no gradient, though the call holds them."""
    class Word:
        def __init__(self, index):
            self.index = index

    class Pair:
        def __init__(self, left, right):
            self.left, self.right = left, right

    def make(jit):
        class Model:
            def __init__(self):
                self.emb = _weights(12, VOCAB, DIM)
                self.num = _weights(13, 1, DIM)
                self.w = _weights(14, 2 * DIM, DIM)
                self.opt = tf.keras.optimizers.Adam(0.05)
                self.none = []

            def encode(self, node):
                if isinstance(node, Word):
                    return _embed(self.emb, node.index)
                if isinstance(node, Node):
                    return self.num * float(node.word)
                left = tf.stop_gradient(self.encode(node.left))
                return tf.tanh(tf.concat([left, self.encode(node.right)], axis=1) @ self.w)

            @jit
            def step(self, trees):
                variables = [self.emb, self.num, self.w]
                with tf.GradientTape() as tape:
                    loss = tf.add_n([tf.reduce_sum(self.encode(t)) for t in trees])
                grads = tape.gradient(loss, variables)
                self.none.append(tuple(g is None for g in grads))
                self.opt.apply_gradients(zip(grads, variables))
                return loss

        m = Model()
        return SimpleNamespace(fn=m.step, state=lambda: {"emb": m.emb, "num": m.num, "w": m.w, "none": list(m.none)})

    def tree(k, words_right):
        right = Word(k % VOCAB) if words_right else Node(word=k % 5)
        return Pair(Node(word=k % 3), Pair(Word((k + 1) % VOCAB), right))

    calls = [([tree(k, right), tree(k + 1, False)],) for k, right in enumerate([1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1, 0])]
    stats = check(make, calls, min_graph_calls=6)
    assert stats["conversions"] <= 3, (
        "the right leaves are Words or Nodes: a conversion per kind and at most one more, not one per new tree: "
        f"{stats}"
    )
