"""A case's code batched op by op (``janus.lowering.trees.rows``) computes what
``tf.vectorized_map`` computes, bitwise, with its gradients; what it has no exact rule
for is refused (the forest then uses ``tf.vectorized_map``)."""
import numpy as np
import pytest
import tensorflow as tf

from janus.lowering.trees import rows

N, UNITS = 5, 4
COLUMN = tf.constant(np.arange(N, dtype=np.int64) % 3)
FLOATS = tf.constant(np.linspace(-1.0, 1.0, N), tf.float32)
TABLE = tf.constant(np.random.default_rng(0).normal(size=(N + 2, UNITS)), tf.float32)  # rowed: [1, UNITS] per node
CHILD = tf.constant(np.array([2, 0, 6, 1, 3], np.int32))  # each node's child in the table
W = tf.Variable(np.random.default_rng(1).normal(size=(2 * UNITS, 3 * UNITS)), dtype=tf.float32)
B = tf.Variable(np.random.default_rng(2).normal(size=(3 * UNITS,)), dtype=tf.float32)
EMB = tf.Variable(np.random.default_rng(3).normal(size=(3, UNITS)), dtype=tf.float32)


def child(index, table):
    return tf.expand_dims(tf.gather(table, tf.gather(CHILD, index)), 0)


def lstm_like(index, table):
    x = tf.gather(EMB.read_value(), tf.constant([0]) + tf.cast(tf.gather(COLUMN, index), tf.int32))
    h = tf.concat([x, child(index, table)], axis=1)
    i, f, u = tf.split(tf.matmul(h, W) + B, 3, axis=1)
    c = tf.sigmoid(i) * tf.tanh(u) + tf.sigmoid(f) * child(index, table)
    return tf.sigmoid(c) * tf.tanh(c), c


def stacked_shapes(index, table):
    """Per-node values that are not rows: scalars, vectors, a Pack along axis 1, a
    Split along axis 0, broadcasting against a rank-2 constant, reshapes."""
    s = tf.gather(FLOATS, index)
    v = tf.reshape(child(index, table), [UNITS])
    pair = tf.stack([v, v * s], axis=1)  # [UNITS, 2]
    top, bottom = tf.split(pair, 2, axis=0)
    grid = tf.reshape(top, [1, UNITS]) + tf.ones([3, UNITS]) * s  # [3, UNITS]
    return tf.squeeze(tf.reshape(bottom, [1, UNITS]) * 2.0, 0) + tf.reshape(grid, [3 * UNITS])[:UNITS] * 0.0 + grid[0]


def scalar_ops(index, table):
    s = tf.gather(FLOATS, index)
    w = tf.cast(tf.gather(COLUMN, index), tf.float32)
    row = tf.constant([[1.0, 2.0, 3.0, 4.0]])
    out = tf.maximum(row * s, w) - tf.where(tf.constant([[True, False, True, False]]), row, s)
    return tf.expand_dims(tf.stop_gradient(s) * out[0], 0) + child(index, table)


def both(body, rowed):
    """``body`` on every node, through ``janus.lowering.trees.rows`` and through ``tf.vectorized_map``
    (in the forest's form), with the gradients of a sum of squares to the variables and
    the table; and whether ``janus.lowering.trees.rows`` batched it."""
    variables = [W, B, EMB]

    @tf.function(autograph=False)
    def run():
        nodes = tf.range(0, N)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(TABLE)
            try:
                per_node = rows.trace(body, TABLE)
                ours = rows.batch(per_node, nodes, TABLE, rowed)
                batched = True
            except rows.Unbatchable:
                ours, batched = tf.nest.map_structure(tf.zeros_like, body(0, TABLE)), False
            theirs = tf.vectorized_map(lambda i: body(i, TABLE), nodes, fallback_to_while_loop=False)
            theirs = [tf.squeeze(t, [1]) if r else t for t, r in zip(tf.nest.flatten(theirs), rowed)]
            loss_ours = sum(tf.reduce_sum(tf.square(t)) for t in tf.nest.flatten(ours))
            loss_theirs = sum(tf.reduce_sum(tf.square(t)) for t in theirs)
        return (tf.nest.flatten(ours), theirs, tape.gradient(loss_ours, variables + [TABLE]),
                tape.gradient(loss_theirs, variables + [TABLE]), batched)

    ours, theirs, g_ours, g_theirs, batched = run()
    return ours, theirs, g_ours, g_theirs, bool(batched)


@pytest.mark.parametrize("body, rowed", [(lstm_like, [True, True]), (stacked_shapes, [False]),
                                         (scalar_ops, [True])])
def test_batched_op_by_op_equals_vectorized_map_bitwise(body, rowed):
    ours, theirs, g_ours, g_theirs, batched = both(body, rowed)
    assert batched
    for a, b in zip(ours, theirs):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    for a, b in zip(g_ours, g_theirs):
        if a is None or b is None:
            assert a is None and b is None
        else:
            np.testing.assert_allclose(tf.convert_to_tensor(a).numpy(), tf.convert_to_tensor(b).numpy(), rtol=1e-6)


def test_the_block_has_no_reshape_around_matmul():
    @tf.function(autograph=False)
    def run():
        per_node = rows.trace(lstm_like, TABLE)
        graph = tf.compat.v1.get_default_graph()
        start = len(graph.get_operations())
        rows.batch(per_node, tf.range(0, N), TABLE, [True, True])
        return tf.constant([op.type for op in graph.get_operations()[start:]])

    types = [t.decode() for t in run().numpy()]
    assert types.count("MatMul") == 1 and "Reshape" not in types and "Transpose" not in types, types


@pytest.mark.parametrize("body", [
    lambda index, table: tf.fill([1, UNITS], tf.gather(FLOATS, index)),  # no rule for Fill
    lambda index, table: tf.matmul(W[:UNITS, :UNITS], tf.transpose(child(index, table))),  # per-node right operand
    lambda index, table: tf.ones([1, UNITS]),  # the same for every node
    lambda index, table: tf.concat([child(index, table), tf.ones([1, UNITS])], axis=1),  # with a constant part
])
def test_what_has_no_exact_rule_is_refused(body):
    @tf.function(autograph=False)
    def run():
        per_node = rows.trace(body, TABLE)
        rows.batch(per_node, tf.range(0, N), TABLE, [True])

    with pytest.raises(rows.Unbatchable):
        run.get_concrete_function()
