"""Composite and structured inputs — ``RaggedTensor``, ``SparseTensor``, ``ExtensionType``
and nests of them — are fed to the graph through their ``TypeSpec``s, never captured as
constants: sizes that change from call to call widen the spec (as a tensor's shape is
relaxed), so a few conversions serve every call."""
import collections
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

from harness import case, check

VOCAB, DIM = 20, 4


def ragged_ids(seed: int, rows: int | None = None) -> tf.RaggedTensor:
    r = np.random.RandomState(seed)
    lengths = r.randint(1, 6, size=rows or r.randint(2, 6))
    return tf.RaggedTensor.from_row_lengths(tf.constant(r.randint(0, VOCAB, size=lengths.sum()), tf.int32),
                                            tf.constant(lengths, tf.int64))


def sparse(seed: int) -> tf.SparseTensor:
    r = np.random.RandomState(seed)
    dense = r.randint(0, 3, size=(r.randint(2, 5), r.randint(2, 7))).astype(np.float32) * (r.uniform(size=1) > 0.1)
    return tf.sparse.from_dense(tf.constant(dense))


def test_ragged_token_ids_train_one_graph():
    def make(jit):
        class Classifier:
            def __init__(self):
                self.emb = tf.Variable(tf.reshape(tf.range(VOCAB * DIM, dtype=tf.float32), [VOCAB, DIM]) / 80.0)
                self.w = tf.Variable(tf.ones([DIM, 1]) * 0.1)
                self.opt = tf.keras.optimizers.SGD(0.05)
                self.losses = []

            @jit
            def step(self, ids, labels):
                with tf.GradientTape() as tape:
                    vectors = tf.gather(self.emb, ids)  # [batch, (words), DIM]
                    pooled = tf.reduce_mean(vectors, axis=1)
                    logits = tf.squeeze(pooled @ self.w, 1)
                    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels, logits))
                grads = tape.gradient(loss, [self.emb, self.w])
                self.opt.apply_gradients(zip(grads, [self.emb, self.w]))
                self.losses.append(loss)
                return loss, ids.shape[0], ids.row_lengths()

        c = Classifier()
        return SimpleNamespace(fn=c.step, state=lambda: {"emb": c.emb, "w": c.w, "losses": list(c.losses)})

    def call(seed):
        ids = ragged_ids(seed)
        labels = tf.constant(np.random.RandomState(seed).randint(0, 2, size=int(ids.nrows())).astype(np.float32))
        return ids, labels

    stats = check(make, [call(s) for s in range(12)], min_graph_calls=8)
    assert stats["conversions"] <= 2, (
        "the ragged ids' row lengths change every call and widen the spec: one conversion after the 3 profiled calls, "
        f"at most one more, not one per call: {stats}"
    )


def test_sparse_inputs_of_changing_dense_shape_and_count():
    @case
    def summary(sp, scale):
        dense = tf.sparse.to_dense(sp)
        rows, cols = sp.shape
        return tf.sparse.reduce_sum(sp, axis=1) * scale, rows * cols, tf.reduce_max(dense), sp.values.shape[0]

    stats = check(summary, [(sparse(s), tf.constant(0.5 * s)) for s in range(10)], min_graph_calls=6)
    assert stats["conversions"] <= 2, (
        "the sparse inputs' dense shape and value count change and widen the spec: one conversion after the 3 profiled"
        f" calls, at most one more, not one per call: {stats}"
    )


def test_nested_structures_of_composites():
    Batch = collections.namedtuple("Batch", "ids dense")

    @case
    def f(features, batch, extra):
        total = tf.reduce_sum(tf.cast(features["ids"], tf.float32)) + tf.sparse.reduce_sum(features["mask"])
        total += tf.reduce_sum(batch.dense) + tf.cast(batch.ids.flat_values[0], tf.float32)
        left, right = extra
        return total, tf.concat([left, right], axis=0), {"n": features["ids"].nrows()}

    def call(s):
        features = {"ids": ragged_ids(s), "mask": sparse(s + 100)}
        batch = Batch(ragged_ids(s + 7), tf.ones([1 + s % 3, 2]) * s)
        extra = (ragged_ids(s + 3, rows=2), ragged_ids(s + 4, rows=1 + s % 2))
        return features, batch, extra

    stats = check(f, [call(s) for s in range(10)], min_graph_calls=6)
    assert stats["conversions"] <= 3, (
        "several composites in the nest change sizes and their specs widen: one conversion after the 3 profiled calls,"
        f" at most two more, not one per call: {stats}"
    )


class Masked(tf.experimental.ExtensionType):
    values: tf.Tensor
    mask: tf.Tensor

    def total(self):
        return tf.reduce_sum(tf.where(self.mask, self.values, tf.zeros_like(self.values)))


def test_extension_type_inputs_and_results():
    @case
    def f(m, k):
        doubled = Masked(m.values * 2.0, m.mask)
        return doubled.total() + k, doubled

    def call(s):
        r = np.random.RandomState(s)
        n = r.randint(2, 7)
        return Masked(tf.constant(r.randn(n).astype(np.float32)), tf.constant(r.uniform(size=n) > 0.5)), tf.constant(1.0)

    stats = check(f, [call(s) for s in range(9)], min_graph_calls=5)
    assert stats["conversions"] <= 2, (
        "the masked values' length (2 to 6) widens the extension type's spec: one conversion after the 3 profiled "
        f"calls, at most one more, not one per call: {stats}"
    )


def test_a_ragged_tensor_in_state_is_fed_and_written_back():
    def make(jit):
        class Memory:
            def __init__(self):
                self.items = ragged_ids(0, rows=2)

            @jit
            def add(self, new):
                merged = tf.concat([self.items, new], axis=0)
                self.items = merged[-3:]
                return tf.reduce_sum(merged.flat_values), merged.shape[0]

        m = Memory()
        return SimpleNamespace(fn=m.add, state=lambda: {"items": m.items})

    stats = check(make, [(ragged_ids(s, rows=1 + s % 2),) for s in range(1, 11)], min_graph_calls=5)
    assert stats["conversions"] <= 3, (
        "the ragged argument and the ragged state fed and written back change row counts: one conversion after the 3 "
        f"profiled calls, at most two more as their specs widen, not one per call: {stats}"
    )


@__import__("dataclasses").dataclass
class Features:
    ids: tf.RaggedTensor
    weights: tf.Tensor
    note: str = "batch"


def test_a_dataclass_of_composites_and_tensors_as_argument():
    @case
    def pooled(features, bias):
        vectors = tf.cast(features.ids, tf.float32) * 0.5 + bias
        return tf.reduce_sum(vectors, axis=1) * features.weights, features.note

    def call(s):
        ids = ragged_ids(s)
        weights = tf.constant(np.random.RandomState(s).uniform(size=int(ids.nrows())).astype(np.float32))
        return Features(ids, weights), tf.constant(0.1 * s)

    stats = check(pooled, [call(s) for s in range(10)], min_graph_calls=5)
    assert stats["conversions"] <= 3, (
        "the dataclass's ragged ids and weights change sizes: one conversion after the 3 profiled calls, at most two "
        f"more as the specs widen, not one per call: {stats}"
    )
