"""Symbolic dimensions: once a dimension varied, reading it yields a graph-computed
Python int, so one graph serves every size (eager is the oracle)."""
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

from harness import case, check


def batch(n, width=4, seed=0):
    return tf.constant(np.random.RandomState(seed + n).randn(n, width).astype(np.float32))


def test_zeros_shaped_by_a_varying_batch_size():
    def make(jit):
        class Model:
            def __init__(self):
                self.w = tf.Variable(tf.ones([4, 3]) * 0.1)

            @jit
            def step(self, x):
                h = tf.zeros([x.shape[0], 3]) + tf.matmul(x, self.w)
                noise_free = tf.ones([x.shape[0], 1]) * tf.reduce_mean(h)
                return h + noise_free, x.shape[0], len(x)

        m = Model()
        return SimpleNamespace(fn=m.step)

    sizes = [8, 5, 8, 3, 7, 1, 12, 8, 2, 6, 9, 5]
    total = check(make, [(batch(n),) for n in sizes], min_graph_calls=len(sizes) - 5)
    assert total["conversions"] <= 3, (
        "once the batch size varied, x.shape[0] and len(x) are graph-computed ints: one graph serves every size, a few"
        f" conversions, not one per size: {total}"
    )


def test_python_range_over_a_varying_length():
    @case
    def f(x):
        acc = tf.zeros([x.shape[1]])
        steps = 0
        for i in range(x.shape[0]):
            acc = acc * 0.5 + x[i]
            steps += 1
        return acc, steps

    lengths = [3, 5, 4, 9, 2, 7, 6, 11, 1, 8, 10, 13, 3, 15, 12, 14, 5]
    total = check(f, [(batch(n),) for n in lengths], min_graph_calls=len(lengths) - 5)
    assert total["conversions"] <= 3, (
        "once the length varied, range(x.shape[0]) runs over a graph-computed int: one graph serves every length, a "
        f"few conversions, not one per length: {total}"
    )


def test_reshape_from_products_of_symbolic_dims():
    @case
    def f(x):
        n, t, d = x.shape
        flat = tf.reshape(x, [n * t, d])
        back = tf.reshape(flat * 2.0, [n, t * d])
        parts = tf.split(back, [t * d // 2, t * d - t * d // 2], axis=1)
        return back, parts[0], x.shape.as_list(), n * t

    shapes = [(2, 3, 4), (3, 3, 4), (2, 5, 4), (4, 2, 4), (1, 6, 4), (5, 5, 4), (2, 7, 4), (3, 4, 4), (6, 1, 4)]
    calls = [(tf.constant(np.arange(np.prod(s), dtype=np.float32).reshape(s)),) for s in shapes]
    total = check(f, calls, min_graph_calls=len(shapes) - 5)
    assert total["conversions"] <= 3, (
        "once the dimensions varied, their products are graph-computed: one graph serves every shape, a few "
        f"conversions, not one per shape: {total}"
    )


def test_a_dimension_that_never_varied_stays_a_python_int():
    """Only the varying dimension is symbolic; the constant one keeps specializing code."""
    @case
    def f(x):
        out = x
        for _ in range(x.shape[1]):  # 4 every call: unrolled in Python
            out = tf.roll(out, 1, axis=1)
        return out, x.shape[1] * 2

    total = check(f, [(batch(n),) for n in [2, 3, 4, 5, 6, 7, 8, 9]], min_graph_calls=4)
    assert total["conversions"] <= 2, (
        "only the batch dimension is symbolic, the constant one (4) still unrolls: one conversion after the 3 profiled"
        f" calls, at most one more, not one per batch size: {total}"
    )


def test_a_whole_symbolic_shape_passed_to_tensorflow():
    @case
    def f(x, y):
        z = tf.zeros(x.shape) + tf.reduce_mean(x)
        return tf.reshape(y, x.shape) + z

    calls = [(batch(n), tf.range(4 * n, dtype=tf.float32)) for n in [2, 3, 5, 2, 7, 4, 6, 8]]
    total = check(f, calls, min_graph_calls=4)
    assert total["conversions"] <= 3, (
        "once the batch size varied, x.shape is symbolic: one graph serves every size, a few conversions, not one per "
        f"size: {total}"
    )
