"""NumPy arithmetic and comparisons on fed arrays, computed by the graph (janus/trace/array_ops.py).

A NumPy array argument that the step combines with numbers (PPO's ``advantage > 0`` and
``(1 + clip) * advantage``, a frame's ``obs / 255.0``) was read as NumPy and guarded by
value: a new array at every call, a graph never reused.  These tests run the same calls
eagerly and through Janus, with new arrays at every call, and compare results, their
types and dtypes, and state **bitwise** (tolerance 0) after every call.
"""
from __future__ import annotations

import types

import numpy as np
import pytest
import tensorflow as tf

import janus
from harness import case, check, fresh_module

EXACT = {"rtol": 0.0, "atol": 0.0}
PROFILE_CALLS = 3  # janus.function's default: the calls profiled eagerly before the first conversion


def _arrays(seed: int, count: int, shape=(6,), dtype=np.float32, scale: float = 1.0) -> list:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(shape) * scale).astype(dtype) for _ in range(count)]


def test_ppo_clipped_objective_on_a_new_advantage_array_each_call_runs_one_graph():
    """keras-io's PPO ``train_policy``: the advantage buffer is a new NumPy array at every
    call; one conversion serves every call (its dtype and shape never change)."""
    def make(jit):
        w = tf.Variable([[0.5, -0.2], [0.1, 0.3]])
        clip_ratio = 0.2

        @jit
        def train_policy(observations, advantages):
            with tf.GradientTape() as tape:
                ratio = tf.exp(tf.reduce_sum(tf.matmul(observations, w), axis=1) * 0.1)
                min_advantage = tf.where(advantages > 0, (1 + clip_ratio) * advantages,
                                         (1 - clip_ratio) * advantages)
                loss = -tf.reduce_mean(tf.minimum(ratio * advantages, min_advantage))
            w.assign_sub(0.01 * tape.gradient(loss, w))
            return loss

        return types.SimpleNamespace(fn=train_policy, state=lambda: {"w": w})

    observations = _arrays(1, 12, (6, 2))
    calls = [(o, a) for o, a in zip(observations, _arrays(2, 12))]
    stats = check(make, calls, min_graph_calls=len(calls) - PROFILE_CALLS, **EXACT)
    assert stats["conversions"] == 1, stats  # the arrays are fed: nothing the graph assumed changes


def test_results_are_numpys_arrays_and_scalars_with_numpys_dtypes():
    """Returned results are new NumPy arrays (or NumPy scalars for 0-d operands) of the
    dtype NumPy's promotion gives: float32 with a Python float, float64 for an integer
    array divided, bool for comparisons, the array's own integer dtype with a Python int."""
    @case
    def step(x, frame, counts, eps):
        return (x * 0.5 + 1.0, -x, abs(x), x > 0.1, 0.25 <= x, frame / 255.0, counts * 3 - 1, counts == 2,
                eps * 2.0, eps > 0.5, np.where(x > 0, x, 0.0), np.multiply(x, x), np.sqrt(np.square(x)),
                np.subtract(1, counts), x / 4.0, tf.reduce_sum(x * 2.0))

    rng = np.random.default_rng(3)
    calls = [(x, rng.integers(0, 256, (2, 3), dtype=np.uint8), rng.integers(-5, 5, 4).astype(np.int32),
              np.float32(rng.uniform())) for x in _arrays(4, 8)]
    stats = check(step, calls, min_graph_calls=len(calls) - PROFILE_CALLS, **EXACT)
    assert stats["conversions"] == 1, stats


def test_subnormal_zero_divisor_and_overflow_operands_re_run_eagerly_with_numpys_bits():
    """TensorFlow's kernels treat subnormal numbers as zero and NumPy warns on inf: a call
    whose operands leave the range where the bits agree aborts its run (a run-time check)
    and re-runs eagerly; the graph stays for the other calls while such calls are rare."""
    @case
    def step(x, d):
        return x * 3.0, x > 0, x / d

    xs, ds = _arrays(5, 10), _arrays(6, 10)
    xs[5][1] = 1e-40  # subnormal: x > 0 is True in NumPy, False under TensorFlow's kernels
    ds[7][2] = 0.0  # x / 0: NumPy's inf (and its warning)
    xs[8][0] = 3e38  # x * 3.0 overflows
    with np.errstate(all="ignore"):
        stats = check(step, list(zip(xs, ds)), min_graph_calls=4, **EXACT)
    assert stats["assertion_failures"] == 3, stats
    assert stats["conversions"] == 1, stats


def test_a_range_check_failing_more_often_than_it_holds_reads_the_arrays_as_numpy():
    """Operands that keep leaving the range: the check is banned, and the next conversion
    keeps the array a value (guarded by value), with eager's results throughout."""
    @case
    def step(x):
        return tf.reduce_sum(x * 1e-30)  # 1e-30 is below 2**-60: every run's check fails

    stats = check(step, [(x,) for x in _arrays(7, 9)], min_graph_calls=0, **EXACT)
    assert stats["assertion_failures"] >= 1, f"1e-30 is below 2**-60: the first graph's range check fails: {stats}"
    assert stats["conversions"] <= 3, stats  # the first graph, then the array read as NumPy (values change)


@pytest.mark.parametrize("body, reason", [
    ("return tf.constant(x.mean())", "a reduction: NumPy sums pairwise"),
    ("x *= 2.0\n    return tf.constant(1.0)", "in place: eager changes the caller's array"),
    ("y = x * 2.0\n    return tf.constant(float(y.sum()))", "a lowered array read as NumPy marks its fed array"),
    ("return tf.constant(np.exp(x))", "a transcendental function: NumPy's and TensorFlow's differ"),
])
def test_what_only_numpy_can_do_still_reads_the_array_as_numpy(body, reason):
    module = fresh_module(f"import numpy as np\nimport tensorflow as tf\n\ndef step(x):\n    {body}\n")

    def make(jit):
        arrays = _arrays(8, 1)
        fn = jit(module.step)
        return types.SimpleNamespace(fn=fn, arrays=arrays, state=lambda: {"x": arrays[0]})

    calls = [lambda p: p.fn(p.arrays[0])] * 6
    stats = check(make, calls, min_graph_calls=0, **EXACT)
    # the same array at each call: a graph guarded on its value, or (in place) a graph break
    assert stats["graph_calls"] + stats["segment_graph_calls"] >= 1, reason


def test_numpys_errors_are_eagers():
    """``np.int8`` array ``+ 300`` raises OverflowError in NumPy 2 (a Python int out of the
    array's range): the call raises eager's error."""
    @case
    def step(x, small):
        return x * 2.0, small + 300

    calls = [(x, np.arange(3, dtype=np.int8)) for x in _arrays(9, 5)]
    check(step, calls, min_graph_calls=0)


def test_a_lowered_array_stored_in_python_state_is_a_new_numpy_array():
    """``self.last = advantages * gamma``: the state holds eager's array after every call,
    written only when the run commits."""
    def make(jit):
        class Agent:
            def __init__(self):
                self.last = None
                self.v = tf.Variable(0.0)

            @jit
            def step(self, advantages):
                self.last = advantages * 0.99
                self.v.assign_add(tf.reduce_sum(tf.where(advantages > 0, self.last, 0.0)))
                return self.v

        agent = Agent()
        return types.SimpleNamespace(fn=agent.step, state=lambda: {"last": agent.last, "v": agent.v})

    stats = check(make, [(a,) for a in _arrays(10, 8)], min_graph_calls=5, **EXACT)
    assert stats["conversions"] == 1, stats


def test_explain_names_the_range_check():
    x = _arrays(11, 1)[0]

    @janus.function
    def step(a):  # named `a`: explain once wrote "argument an is"
        return tf.reduce_sum(a * 2.0)

    janus.reset()
    for _ in range(5):
        step(x)
    text = str(janus.explain(step))
    assert "the operands of a NumPy operation the graph computes" in text, text
    assert "argument a is a float32 NumPy array of shape (6,) (fed to the graph)" in text, text


def test_a_python_float_the_graph_carries_scales_a_fed_array_as_numpy_does():
    """A rate that changes at every call is fed as a number; NumPy takes it as a weak float
    with a float32 array (rounded to float32): ``adv * lr``, ``lr * adv`` and ``adv - lr``
    are float32 arrays, computed by one graph for every call."""
    @case
    def step(adv, lr):
        return adv * lr, lr * adv, adv - lr, tf.reduce_sum(adv * lr)

    rates = [0.1, 0.3, 1 / 3, 0.7, 2.0 / 7.0, 0.05, 0.9, 1e-3]
    calls = [(a, r) for a, r in zip(_arrays(12, len(rates)), rates)]
    stats = check(step, calls, min_graph_calls=len(calls) - PROFILE_CALLS, **EXACT)
    assert stats["conversions"] == 1, stats


def test_numpy_arithmetic_inside_tensor_conditionals_and_loops():
    """Lowered operations in a ``tf.cond`` side and a ``tf.while_loop`` body: their run-time
    checks are the construct's, and a subnormal operand in one call aborts that run only."""
    @case
    def step(x, adv):
        if tf.reduce_sum(x) > 0:
            y = tf.reduce_sum(tf.where(adv > 0, adv * 2.0, adv / 3.0))
        else:
            y = tf.reduce_sum(adv - 1.0)
        i, acc = tf.constant(0), tf.constant(0.0)
        while i < 3:
            acc += tf.reduce_sum(adv * 0.5)
            i += 1
        return y + acc

    rng = np.random.default_rng(13)
    calls = [(tf.constant(rng.standard_normal(3).astype(np.float32)), a) for a in _arrays(14, 10, (4,))]
    calls[6][1][0] = 1e-40
    stats = check(step, calls, min_graph_calls=len(calls) - PROFILE_CALLS - 1, **EXACT)
    assert stats["conversions"] == 1 and stats["assertion_failures"] == 1, stats
