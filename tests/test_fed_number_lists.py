"""Lists of Python numbers passed as arguments that change between calls (a replay buffer's
sampled rewards and actions): fed to the graph as tensors while only TensorFlow reads them,
one graph for every value (``janus.trace.number_lists``); specialized by value as soon as
Python needs their items.  Every program is compared with eager after every call."""
import numpy as np
import tensorflow as tf

from harness import case, check

RS = np.random.RandomState(0)
FUTURE = [tf.constant(RS.rand(6, 4).astype(np.float32)) for _ in range(12)]
ACTIONS = [[int(v) for v in RS.randint(0, 4, 6)] for _ in range(12)]
REWARDS = [[float(v) for v in RS.rand(6)] for _ in range(12)]


def test_sampled_rewards_and_actions_are_fed():
    @case
    def targets(action_sample, rewards_sample, future):  # keras-io's DQN update targets
        updated = rewards_sample + 0.99 * tf.reduce_max(future, axis=1)
        masks = tf.one_hot(action_sample, 4)
        return updated * float(len(rewards_sample)), masks

    calls = list(zip(ACTIONS, REWARDS, FUTURE))
    stats = check(targets, calls, min_graph_calls=9, rtol=0, atol=0)
    assert stats["conversions"] == 1, f"the profile saw three samples: both lists fed, one graph for all: {stats}"


def test_a_list_python_reads_stays_specialized():
    @case
    def f(rewards, x):
        total = 0.0
        for r in rewards:  # Python iterates it: its values are needed
            total += r
        return x * total, rewards[0], sorted(rewards)[-1]

    calls = [(r, tf.constant(2.0)) for r in REWARDS[:4]] + [(REWARDS[0], tf.constant(2.0))] * 4
    stats = check(f, calls, min_graph_calls=3, rtol=0, atol=0)
    assert stats["conversions"] <= 2, (f"the trace that fed the list restarted specialized on it (one conversion), "
                                       f"and the repeated list's graph serves it: {stats}")


def test_python_list_operations_on_a_fed_list_give_eagers_results():
    @case
    def f(xs, t):
        doubled = xs * 2  # repetition, not multiplication
        joined = xs + [0.5]  # concatenation
        return tf.constant(doubled) + 0.0, tf.reduce_sum(t + xs), len(joined), xs == [1.0, 2.0]

    calls = [([float(i), 2.0], tf.constant([1.0, 1.0])) for i in range(6)] + [([1.0, 2.0], tf.constant([1.0, 1.0]))]
    check(f, calls, min_graph_calls=1, rtol=0, atol=0)


def test_a_returned_list_is_the_callers_values():
    @case
    def f(xs, t):
        return xs, t + tf.reduce_sum(tf.constant(xs))

    calls = [([float(i), -1.0, 3.5], tf.constant(1.0)) for i in range(8)]
    check(f, calls, min_graph_calls=2, rtol=0, atol=0)


def test_an_int_outside_int32_leaves_the_graph_as_eager_converts_it():
    @case
    def f(ids, t):
        return tf.convert_to_tensor(ids), t + 1

    big = 2 ** 40  # eager makes an int64 tensor of it
    calls = [([i, 2, 3], tf.constant(1)) for i in range(6)] + [([big, 2, 3], tf.constant(1))] + \
        [([i, 5, 6], tf.constant(1)) for i in range(4)]
    stats = check(f, calls, min_graph_calls=4, rtol=0, atol=0)
    assert stats["assertion_failures"] >= 1, (f"the int32 check failed on 2**40: that call ran eagerly (and, the "
                                              f"assumption given up, the list is specialized after it): {stats}")


def test_lists_of_another_length_or_of_mixed_numbers():
    @case
    def f(xs, t):
        return t * tf.reduce_sum(tf.constant(xs, tf.float32))

    calls = [([1.0, float(i)], tf.constant(2.0)) for i in range(5)] + \
        [([1.0, 2.0, float(i)], tf.constant(2.0)) for i in range(4)] + \
        [([1, 2.5], tf.constant(2.0)), ([1, 3.5], tf.constant(2.0))]  # mixed: never fed, by value
    stats = check(f, calls, min_graph_calls=5, rtol=0, atol=0)
    assert stats["conversions"] <= 4, (f"one graph per length fed, and a graph per mixed list (two), within "
                                       f"four conversions: {stats}")


def test_lists_of_numpy_numbers_convert_as_eager_converts_them():
    @case
    def f(actions, scores, t):  # replay-buffer lists of np.random.choice and np.float32 items
        return tf.one_hot(actions, 4) * t, tf.convert_to_tensor(scores) + 1.0

    rs = np.random.RandomState(1)
    calls = [([np.int64(v) for v in rs.randint(0, 4, 5)], [np.float32(v) for v in rs.rand(5)], tf.constant(2.0))
             for _ in range(10)]
    stats = check(f, calls, min_graph_calls=6, rtol=0, atol=0)
    assert stats["conversions"] <= 2, (f"the first graph specializes on the profiled lists' items, the miss feeds "
                                       f"both lists, and that graph serves the rest: {stats}")


def test_a_list_mixing_python_and_numpy_ints_is_fed():
    @case
    def f(actions, t):  # random actions are ints, greedy ones np.int64 (from .numpy())
        return tf.one_hot(actions, 4) * t, tf.convert_to_tensor(actions)

    rs = np.random.RandomState(2)
    calls = [([int(v) if i % 2 else np.int64(v) for i, v in enumerate(rs.randint(0, 4, 5))], tf.constant(2.0))
             for _ in range(8)]
    stats = check(f, calls, min_graph_calls=4, rtol=0, atol=0)
    assert stats["conversions"] <= 2, f"specialized on the profiled items, then fed after the miss: {stats}"
