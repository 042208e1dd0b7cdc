"""Recursion over Python trees runs as one batched graph for every tree
(``janus.lowering.trees.recursion``, ``docs/recursion.md``).

Each program recurses over Python objects built anew for every call (new shapes, new
words, new batch sizes); the harness runs the same calls eagerly and through Janus and
compares results and state after every call (float tolerance: the batched graph sums
in other orders only where ``JANUS_SUBTREE_REUSE`` is on) and asserts how many calls
ran as graphs and that a few conversions served them all.
"""
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

import janus
from harness import check

VOCAB, DIM = 12, 6


class Node:
    def __init__(self, word=None, left=None, right=None):
        self.word, self.left, self.right = word, left, right

    def is_leaf(self):
        return self.left is None


def random_tree(rng, leaves):
    if leaves == 1:
        return Node(word=int(rng.integers(0, VOCAB)))
    split = int(rng.integers(1, leaves))
    return Node(left=random_tree(rng, split), right=random_tree(rng, leaves - split))


def tree_batch(seed, size=None):
    rng = np.random.default_rng(seed)
    size = size or int(rng.integers(2, 5))
    trees = [random_tree(rng, int(rng.integers(1, 8))) for _ in range(size)]
    return trees, tf.constant(rng.integers(0, 2, size=size).astype(np.int32))


def _weights(seed, *shape):
    return tf.Variable(tf.random.stateless_normal(shape, [seed, 1]) * 0.3)


def _treernn(jit):
    class TreeRNN:
        def __init__(self):
            self.emb = _weights(1, VOCAB, DIM)
            self.w = _weights(2, 2 * DIM, DIM)
            self.out = _weights(3, DIM, 2)
            self.opt = tf.keras.optimizers.SGD(0.1)
            self.losses = []

        def encode(self, node):
            if node.is_leaf():
                return tf.nn.embedding_lookup(self.emb, tf.constant([node.word]))
            left = self.encode(node.left)
            right = self.encode(node.right)
            return tf.tanh(tf.concat([left, right], axis=1) @ self.w)

        @jit
        def step(self, trees, labels):
            variables = [self.emb, self.w, self.out]
            with tf.GradientTape() as tape:
                logits = tf.concat([self.encode(t) for t in trees], axis=0) @ self.out
                loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
            self.opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
            self.losses.append(loss)
            return loss

    m = TreeRNN()
    return SimpleNamespace(fn=m.step, state=lambda: {"emb": m.emb, "w": m.w, "out": m.out, "losses": list(m.losses)})


def test_treernn_training_step_over_new_trees_every_call():
    stats = check(_treernn, [tree_batch(s, size=3) for s in range(14)], min_graph_calls=11)
    assert stats["conversions"] == 1, stats
    assert stats["tree_nodes_computed"] == stats["tree_nodes"] > 0, (
        "the graph calls computed the trees' nodes in the batched graph, and without JANUS_SUBTREE_REUSE every node is"
        f" computed, none shared: {stats}"
    )


def test_trees_higher_than_the_traced_ones_train_in_the_same_graph():
    """The graph is traced on trees at most one level high; later trees reach heights the
    trace never saw (run only when a call has nodes that high), then shallow ones again."""
    def shallow(seed):
        rng = np.random.default_rng(seed)
        return [random_tree(rng, 1), random_tree(rng, 2)], tf.constant([0, 1], tf.int32)

    tall = [([_chain(h, word=h % VOCAB), random_tree(np.random.default_rng(h), 3)], tf.constant([1, 0], tf.int32))
            for h in (2, 7, 4)]
    calls = [shallow(s) for s in range(4)] + tall + [shallow(9), tall[1], shallow(10)]
    stats = check(_treernn, calls, min_graph_calls=7)
    assert stats["conversions"] == 1, stats


def test_explain_shows_the_cases_of_the_recursion():
    step = _treernn(janus.function).fn
    for s in range(5):
        step(*tree_batch(s, size=3))
    text = str(janus.explain(step))
    assert "recursion over trees: " in text and "TreeRNN.encode over trees[0], trees[1], trees[2]" in text, text
    assert "2 node cases" in text and "recurses on _n.left, _n.right" in text and "fed per node: _n.word" in text, text
    assert "argument trees[0] is a Node" not in text, text  # a root may be any node: its case tests its class


def test_treelstm_pairs_and_batches_of_changing_size():
    """An (h, c) pair per node; the two cases define the gates differently."""
    def make(jit):
        class TreeLSTM:
            def __init__(self):
                self.emb = _weights(4, VOCAB, DIM)
                self.leaf = _weights(5, DIM, 3 * DIM)
                self.node = _weights(6, 2 * DIM, 5 * DIM)
                self.opt = tf.keras.optimizers.SGD(0.05)

            def encode(self, node):
                if node.is_leaf():
                    x = tf.nn.embedding_lookup(self.emb, tf.constant([node.word]))
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
                variables = [self.emb, self.leaf, self.node]
                with tf.GradientTape() as tape:
                    hs = []
                    for tree in trees:
                        h, _ = self.encode(tree)
                        hs.append(h)
                    logits = tf.concat(hs, axis=0)[:, :2]
                    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits))
                self.opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
                return loss

        m = TreeLSTM()
        return SimpleNamespace(fn=m.step, state=lambda: {"emb": m.emb, "leaf": m.leaf, "node": m.node})

    # batch sizes 2..4: a new list length is a new guard, so at most three conversions
    stats = check(make, [tree_batch(s, size=2 + s % 2) for s in range(14)], min_graph_calls=8)
    assert stats["conversions"] <= 3, (
        f"a new list length (2 or 3 trees) is a new guard: at most three conversions, not one per new tree: {stats}"
    )


@dataclass
class NaryNode:
    value: float
    children: list = field(default_factory=list)


def random_nary(rng, depth):
    kids = int(rng.integers(0, 4)) if depth < 4 else 0
    return NaryNode(float(rng.normal()), [random_nary(rng, depth + 1) for _ in range(kids)])


def test_nary_trees_with_a_children_list():
    """Children in a list of any length up to 3 (a case per length), a float per node."""
    def make(jit):
        class Encoder:
            def __init__(self):
                self.w = _weights(7, 1, DIM)
                self.u = _weights(8, DIM, DIM)

            def encode(self, node):
                total = tf.zeros([1, DIM])
                for child in node.children:
                    total = total + self.encode(child)
                return tf.tanh(tf.constant([[node.value]]) @ self.w + total @ self.u)

            @jit
            def forward(self, roots):
                return tf.concat([self.encode(r) for r in roots], axis=0)

        e = Encoder()
        return SimpleNamespace(fn=e.forward)

    rng = np.random.default_rng(3)
    calls = [([random_nary(rng, 0) for _ in range(3)],) for _ in range(12)]
    stats = check(make, calls, min_graph_calls=7)
    assert stats["conversions"] <= 3, (
        "a case per children count is learned as new trees show it: at most 3 conversions, not one per new tree: "
        f"{stats}"
    )


class Word:
    def __init__(self, index):
        self.index = index


class Number:
    def __init__(self, value):
        self.value = value


class Op:
    def __init__(self, op, args):
        self.op, self.args = op, args


def random_expr(rng, depth=0):
    if depth >= 3 or rng.uniform() < 0.3:
        return Word(int(rng.integers(0, VOCAB))) if rng.uniform() < 0.5 else Number(float(rng.normal()))
    return Op(["add", "mul"][int(rng.integers(0, 2))], (random_expr(rng, depth + 1), random_expr(rng, depth + 1)))


def test_leaves_of_different_classes_and_fields():
    """Leaves are Words (an int id) or Numbers (a float); inner nodes' op strings choose
    the code (a case per class and per string)."""
    def make(jit):
        emb = _weights(9, VOCAB, DIM)

        def evaluate(node):
            if isinstance(node, Word):
                return tf.gather(emb, node.index)
            if type(node) is Number:
                return tf.fill([DIM], node.value)
            a, b = node.args
            if node.op == "add":
                return evaluate(a) + evaluate(b)
            return evaluate(a) * evaluate(b)

        @jit
        def run(exprs):
            return [evaluate(e) for e in exprs]

        return SimpleNamespace(fn=run)

    rng = np.random.default_rng(5)
    calls = [([random_expr(rng) for _ in range(4)],) for _ in range(12)]
    stats = check(make, calls, min_graph_calls=7)
    assert stats["conversions"] <= 3, (
        "a case per leaf class and per op string is learned as new expressions show it: at most 3 conversions, not one"
        f" per new expression: {stats}"
    )


def test_a_shared_node_is_computed_as_eager_computes_it():
    def make(jit):
        w = _weights(10, 2 * DIM, DIM)
        emb = _weights(11, VOCAB, DIM)

        def encode(node):
            if node.is_leaf():
                return tf.nn.embedding_lookup(emb, tf.constant([node.word]))
            return tf.tanh(tf.concat([encode(node.left), encode(node.right)], axis=1) @ w)

        @jit
        def run(tree):
            with tf.GradientTape() as tape:
                out = tf.reduce_sum(encode(tree))
            return out, tape.gradient(out, w)

        return SimpleNamespace(fn=run)

    calls = []
    for s in range(10):
        shared = random_tree(np.random.default_rng(s), 3)
        calls.append((Node(left=shared, right=Node(left=shared, right=Node(word=s % VOCAB))),))
    stats = check(make, calls, min_graph_calls=6)
    assert stats["conversions"] <= 3, (
        "the trees are new every call and one batched graph serves any shape: at most 3 conversions, not one per tree:"
        f" {stats}"
    )


def _chain(height, word=1):
    node = Node(word=word)
    for _ in range(height):
        node = Node(left=node, right=Node(word=word))
    return node


def test_a_tree_deeper_than_the_bound_runs_as_eager_runs_it():
    """A tree deeper than the graph's bound (64 levels) fails the guard and does not fit a
    batched recursion: that call runs eagerly, and the trees after it reuse the graph."""
    def make(jit):
        w = _weights(13, DIM, DIM)

        def encode(node):
            if node.is_leaf():
                return tf.ones([1, DIM]) * node.word
            return tf.tanh((encode(node.left) + encode(node.right)) @ w)

        @jit
        def run(tree):
            return encode(tree)

        return SimpleNamespace(fn=run)

    trees = [random_tree(np.random.default_rng(s), 2 + s % 5) for s in range(7)]
    calls = [(t,) for t in trees[:4]] + [(_chain(70),)] + [(t,) for t in trees[4:]]
    stats = check(make, calls, graph_calls=4)  # the 4 trees after three profiled calls
    assert stats["conversions"] == 1 and stats["fallbacks"] == 1, stats
    assert "no cached graph's guards held (tree fit the 2 node cases" in _explained(make, calls)


def _explained(make, calls) -> str:
    fn = make(janus.function).fn
    for c in calls:
        fn(*c)
    return str(janus.explain(fn))


def test_what_does_not_fit_is_inlined_per_tree_with_a_reason():
    """Changing the tree while recursing over it cannot be batched: the recursion is inlined
    for the trees of one call, as before batching (graphs specialized per tree)."""
    def make(jit):
        w = _weights(12, DIM, DIM)

        def visit(node):
            node.seen = True  # changes the tree during the recursion
            if node.is_leaf():
                return tf.ones([1, DIM]) * node.word
            return tf.tanh((visit(node.left) + visit(node.right)) @ w)

        @jit
        def run(tree):
            return visit(tree)

        return SimpleNamespace(fn=run)

    calls = [(random_tree(np.random.default_rng(s), 2 + s % 4),) for s in range(6)]
    check(make, calls, min_graph_calls=0)
    text = _explained(make, calls)
    assert "not batched: sets .seen of a tree node during the recursion" in text, text


def test_a_recursive_call_under_a_tensor_condition_is_not_batched():
    def make(jit):
        def total(node, x):
            if node.is_leaf():
                return x * node.word
            if tf.reduce_sum(x) > 0:
                return total(node.left, x) + total(node.right, x)
            return x

        @jit
        def run(tree, x):
            return total(tree, x)

        return SimpleNamespace(fn=run)

    calls = [(random_tree(np.random.default_rng(s), 2 + s % 4), tf.constant([1.0, float(s % 3) - 1.0]))
             for s in range(8)]
    check(make, calls, min_graph_calls=0)
    assert "calls itself under a tensor-dependent condition" in _explained(make, calls)


def test_recursion_on_numbers_stays_specialized_by_value():
    def make(jit):
        def fib(n):
            return n if n < 2 else fib(n - 1) + fib(n - 2)

        @jit
        def run(x):
            return x * fib(7)

        return SimpleNamespace(fn=run)

    check(make, [(tf.constant(float(i)),) for i in range(6)], graph_calls=3)


def test_subtree_reuse_computes_identical_subtrees_once(monkeypatch):
    """Leaves of one word (and equal subtrees) are computed once per call; the gradient sums
    their uses in another order than eager, so results agree to round-off."""
    monkeypatch.setenv("JANUS_SUBTREE_REUSE", "1")
    stats = check(_treernn, [tree_batch(s, size=4) for s in range(14)], min_graph_calls=11, rtol=1e-5, atol=1e-6)
    assert stats["conversions"] == 1, stats
    assert 0 < stats["tree_nodes_computed"] < stats["tree_nodes"], (
        "with JANUS_SUBTREE_REUSE leaves of one word and equal subtrees are computed once: some nodes are computed, "
        f"fewer than the trees hold: {stats}"
    )


def test_a_try_except_exception_around_a_recursion_does_not_swallow_janus_signals():
    """Janus retraces a recursion it cannot batch (a print per leaf) by raising its own
    signal; a user's ``except Exception`` around the call must not catch it (it did: the
    trace went on in the handler and the graph could not run)."""
    def make(jit):
        class Encoder:
            def __init__(self):
                self.emb = _weights(1, VOCAB, DIM)
                self.w = _weights(2, 2 * DIM, DIM)

            def encode(self, node):
                if node.is_leaf():
                    print("leaf", node.word)
                    return tf.nn.embedding_lookup(self.emb, tf.constant([node.word]))
                return tf.tanh(tf.concat([self.encode(node.left), self.encode(node.right)], 1) @ self.w)

            def step(self, trees, labels):
                try:
                    total = tf.add_n([self.encode(t) for t in trees])
                except Exception:
                    total = tf.zeros([1, DIM])
                return total

        Encoder.step = jit(Encoder.step)
        return SimpleNamespace(fn=Encoder().step)

    same = tree_batch(3, size=2)
    stats = check(make, [same] * 6 + [tree_batch(s, size=2) for s in range(3)], min_graph_calls=3)
    assert stats["assertion_failures"] == 0, stats
