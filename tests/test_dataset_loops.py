"""``for x in dataset`` inside a converted function: the dataset's own loop (an iterator
and a ``tf.while_loop``), with ``break``, ``return`` and carried state as in any loop.

A dataset read from an argument or from Python state is fed to the graph through its
``DatasetSpec``, so a new dataset of the same element structure needs no new graph.
"""
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

import janus
from harness import case, check, check_seeded


def rows(n: int, width: int = 3, scale: float = 1.0) -> np.ndarray:
    return (np.arange(n * width, dtype=np.float32).reshape(n, width) * scale) % 7.0


def batched(n: int, batch: int = 2, scale: float = 1.0) -> tf.data.Dataset:
    return tf.data.Dataset.from_tensor_slices(rows(n, scale=scale)).batch(batch)


def test_a_new_dataset_every_call_runs_one_graph():
    @case
    def total(ds):
        s = tf.constant(0.0)
        count = 0
        for x in ds:
            s += tf.reduce_sum(x)
            count += 1
        return s, count

    sizes = [4, 5, 7, 3, 9, 1, 6, 8, 2]
    stats = check(total, [(batched(n, scale=0.5 + n),) for n in sizes], min_graph_calls=5)
    assert stats["conversions"] == 1, stats


def test_an_empty_dataset_leaves_the_variables_as_they_were():
    @case
    def last_or_default(ds, default):
        last = default
        for x in ds:
            last = x * 2.0
        return last

    def ds(n):
        return tf.data.Dataset.from_tensor_slices(tf.range(n, dtype=tf.float32) + 1.0)

    calls = [(ds(n), tf.constant(-1.0)) for n in [3, 0, 5, 2, 0, 4, 1]]
    stats = check(last_or_default, calls, min_graph_calls=3)
    assert stats["conversions"] == 1, stats


def test_break_on_a_tensor_condition():
    @case
    def until(ds, limit):
        s = tf.zeros([3])
        seen = 0
        for x in ds:
            if tf.reduce_sum(x) > limit:
                break
            s += tf.reduce_sum(x, axis=0)
            seen += 1
        return s, seen

    calls = [(batched(n, scale=s), tf.constant(lim)) for n, s, lim in
             [(6, 1.0, 20.0), (8, 0.5, 12.0), (5, 2.0, 100.0), (7, 1.5, 9.0), (9, 1.0, 15.0), (4, 3.0, 0.0)]]
    stats = check(until, calls, min_graph_calls=3)
    assert stats["conversions"] == 1, stats


def test_return_from_inside_the_loop():
    @case
    def first_above(ds, threshold):
        for x in ds:
            if x > threshold:
                return x * 10.0
        return tf.constant(-1.0)

    data = tf.data.Dataset.from_tensor_slices(tf.constant([1.0, 4.0, 2.0, 8.0, 3.0]))
    calls = [(data, tf.constant(t)) for t in [3.0, 0.0, 9.0, 5.0, 1.5, 7.9]]
    stats = check(first_above, calls, min_graph_calls=3)
    assert stats["conversions"] == 1, stats


def test_an_epoch_of_training_over_a_global_dataset_is_one_graph():
    def make(jit):
        features = rows(10, 3) / 7.0
        labels = features @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.25
        train = tf.data.Dataset.from_tensor_slices((features, labels)).batch(4)

        class Trainer:
            def __init__(self):
                self.w = tf.Variable(tf.zeros([3, 1]))
                self.b = tf.Variable(0.0)
                self.opt = tf.keras.optimizers.SGD(0.1)
                self.history = []

            @jit
            def epoch(self, lr_scale):
                total, batches = 0.0, 0
                for x, y in train:
                    with tf.GradientTape() as tape:
                        loss = tf.reduce_mean((x @ self.w + self.b - y) ** 2)
                    grads = tape.gradient(loss, [self.w, self.b])
                    self.opt.apply_gradients(zip([g * lr_scale for g in grads], [self.w, self.b]))
                    total += loss
                    batches += 1
                self.history.append(total)
                return batches, total / 2

        t = Trainer()
        return SimpleNamespace(fn=t.epoch, state=lambda: {"w": t.w, "b": t.b, "history": list(t.history),
                                                          "iterations": int(t.opt.iterations.numpy())})

    calls = [(tf.constant(s),) for s in [1.0, 0.5, 1.0, 0.8, 0.3, 1.0, 0.9]]
    stats = check(make, calls, min_graph_calls=3)
    assert stats["conversions"] == 1, stats


def test_a_dataset_built_inside_the_function():
    @case
    def doubled_max(x):
        best = tf.constant(-1e9)
        for v in tf.data.Dataset.from_tensor_slices(x).map(lambda t: t * 2.0):
            best = tf.maximum(best, tf.reduce_max(v))
        return best

    calls = [(tf.constant(rows(n)),) for n in [4, 6, 3, 5, 8, 2]]
    stats = check(doubled_max, calls, min_graph_calls=2)
    assert stats["conversions"] <= 2, (
        "the dataset built inside is a tensor loop whatever the row count: one conversion after the 3 profiled calls, "
        f"at most one more as the shape is relaxed, not one per length: {stats}"
    )


def test_enumerate_gives_python_ints():
    @case
    def weighted(ds):
        s = tf.constant(0.0)
        last = -1
        for i, x in enumerate(ds, 1):
            s += float(i) * x
            last = i
        return s, last

    def ds(n):
        return tf.data.Dataset.from_tensor_slices(tf.range(n, dtype=tf.float32) * 0.5)

    stats = check(weighted, [(ds(n),) for n in [3, 5, 0, 4, 6, 2]], min_graph_calls=3)
    assert stats["conversions"] == 1, stats


def test_dropout_inside_a_dataset_loop_draws_eagers_numbers():
    @case
    def noisy_sum(ds):
        s = tf.zeros([3])
        for x in ds:
            s += tf.reduce_sum(tf.nn.dropout(x, rate=0.5), axis=0)
        return s

    stats = check_seeded(noisy_sum, [(batched(n),) for n in [5, 6, 4, 7, 3, 8]], seed=11, min_graph_calls=3)
    assert stats["conversions"] == 1, stats


def test_an_iterator_argument_is_fed_not_consumed_by_a_trace():
    """A ``tf.data`` iterator is fed to the graph (``tests/test_iterator_inputs.py``)."""
    @case
    def head(it, k):
        out = []
        for _ in range(k):
            out.append(next(it))
        return out

    def call(n):
        return lambda p: p.fn(iter(batched(n)), 2)

    stats = check(head, [call(n) for n in [5, 6, 7, 8, 5]], min_graph_calls=2)
    assert stats["conversions"] == 1, stats


def shuffled(seed: int) -> tf.data.Dataset:
    return tf.data.Dataset.from_tensor_slices(rows(9)).shuffle(9, seed=seed).batch(4)


def test_a_reshuffling_dataset_gives_eagers_order_every_epoch():
    def make(jit):
        data = shuffled(7)  # each program its own dataset with the same seed: the same orders

        @jit
        def epoch(w):
            digits = tf.constant(0.0)
            for x in data:
                digits = digits * 10.0 + x[0, 0] * w  # depends on the order of the batches
            return digits

        return SimpleNamespace(fn=epoch)

    stats = check(make, [(tf.constant(float(w)),) for w in [1, 2, 3, 1, 5, 4, 2]], min_graph_calls=3)
    assert stats["conversions"] == 1, stats


def test_a_reshuffling_dataset_in_a_graph_with_assertions_runs_eagerly():
    def make(jit):
        data = shuffled(3)

        @jit
        def checked_sum(limit):
            s = tf.constant(0.0)
            for x in data:
                s += tf.reduce_sum(x)
            assert s < limit, "too large"  # a failed run would have reshuffled: eager must run it
            return s

        return SimpleNamespace(fn=checked_sum)

    check(make, [(tf.constant(v),) for v in [500.0, 10.0, 400.0, 300.0, 5.0, 600.0]], eager_only=True)
    fn = make(janus.function).fn
    for v in [500.0, 10.0, 400.0, 300.0]:
        try:
            fn(tf.constant(v))
        except AssertionError:
            pass
    assert "whose order or elements are random" in str(janus.explain(fn))


def test_a_shuffled_dataset_built_inside_the_step_runs_eagerly():
    @case
    def first(x):
        for v in tf.data.Dataset.from_tensor_slices(x).shuffle(8):
            return v
        return tf.constant(-1.0)

    check_seeded(first, [(tf.range(float(n)),) for n in [4, 5, 6, 7, 8]], seed=4, eager_only=True)


def test_a_shuffle_in_the_same_order_every_epoch_converts_with_assertions():
    def make(jit):
        data = tf.data.Dataset.from_tensor_slices(rows(9)).shuffle(9, seed=5, reshuffle_each_iteration=False).batch(4)

        @jit
        def checked(limit):
            digits = tf.constant(0.0)
            for x in data:
                digits = digits * 10.0 + x[0, 0]
            assert digits < limit, "too large"
            return digits

        return SimpleNamespace(fn=checked)

    calls = [(tf.constant(v),) for v in [1e9, 1e9, 1e9, 5.0, 1e9, 1e9, 1e9]]
    stats = check(make, calls, min_graph_calls=3)  # the failing assert aborts one run: eager raises
    assert stats["conversions"] == 1 and stats["assertion_failures"] == 1, stats
