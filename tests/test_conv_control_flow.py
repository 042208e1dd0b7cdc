"""Conversion of branches, boolean operators, assert and raise, checked against eager.

Inputs flip branches between calls, both on Python values (guards) and on tensor values
(speculated assertions or tf.cond), so graphs must notice and fall back or branch.

PYTEST_DONT_REWRITE: the user programs here use ``assert``; pytest must not rewrite them
(eager would then raise pytest's decorated messages, which are not the program's).
"""

import numpy as np
import tensorflow as tf

from harness import case, check


def rnd(shape, seed, dtype=np.float32):
    return tf.constant(np.random.RandomState(seed).randn(*shape).astype(dtype))


def pos(shape, seed):
    return tf.constant(np.random.RandomState(seed).uniform(0.1, 1.0, size=shape).astype(np.float32))


def neg(shape, seed):
    return -pos(shape, seed)


# ---------------------------------------------------------------------------------------
def test_if_on_python_flag_argument():
    @case
    def f(x, flag):
        if flag:
            y = tf.nn.relu(x)
        else:
            y = -x
        return y * 2.0

    x = rnd((3, 4), 0)
    calls = [(x, True), (x, True), (x, True), (x, True), (x, False), (rnd((2, 4), 1), True),
             (x, False), (x, False), (x, True), (rnd((3, 4), 2), False)]
    check(f, calls)


def test_if_elif_else_on_python_int():
    @case
    def f(x, mode):
        if mode == 0:
            y = x + 1.0
        elif mode == 1:
            y = x * x
        elif mode > 5:
            y = tf.zeros_like(x)
        else:
            y = tf.tanh(x)
        return y, mode

    x = rnd((4,), 0)
    calls = [(x, 0), (x, 0), (x, 0), (x, 0), (x, 1), (x, 2), (x, 7), (x, 0), (x, 1), (x, 1),
             (x, 7)]
    check(f, calls)


def test_if_on_tensor_value_flipping():
    @case
    def f(x):
        if tf.reduce_sum(x) > 0:
            y = x * 2.0
        else:
            y = -x
        return y + 1.0

    calls = [(pos((4,), 0),), (pos((4,), 1),), (pos((4,), 2),), (pos((4,), 3),),
             (neg((4,), 4),), (pos((4,), 5),), (neg((4,), 6),), (neg((4,), 7),),
             (pos((3,), 8),), (neg((3,), 9),)]
    check(f, calls)


def test_if_on_tensor_value_always_one_side_then_other():
    @case
    def f(x, w):
        h = tf.matmul(x, w)
        if tf.reduce_mean(h) > -100.0:
            out = tf.nn.relu(h)
        else:
            out = tf.zeros_like(h)
        return out

    w = rnd((4, 2), 9)
    big = tf.fill((2, 4), -1000.0)
    calls = [(rnd((2, 4), i), w) for i in range(7)] + [(big, tf.ones((4, 2))), (rnd((2, 4), 8), w)]
    check(f, calls)


def test_if_elif_else_on_tensor_values():
    @case
    def f(x):
        s = tf.reduce_sum(x)
        if s > 2.0:
            r = x - 2.0
        elif s < -2.0:
            r = x + 2.0
        else:
            r = x * 0.0
        return r, s

    a = tf.constant([3.0, 1.0])
    b = tf.constant([-3.0, -1.0])
    c = tf.constant([0.5, 0.5])
    calls = [(a,), (a,), (a,), (a,), (b,), (c,), (a,), (c,), (b,), (b,)]
    check(f, calls)


def test_conditional_expressions_python_and_tensor():
    @case
    def f(x, flag, n):
        y = x * 2.0 if flag else x * 3.0
        z = x if tf.reduce_mean(x) > 0 else -x
        k = n if n > 2 else -n
        name = "big" if n >= 5 else "small"
        return y + z, k, name

    calls = [(pos((3,), 0), True, 1), (pos((3,), 1), True, 1), (pos((3,), 2), True, 1),
             (pos((3,), 3), True, 1), (neg((3,), 4), True, 1), (pos((3,), 5), False, 1),
             (pos((3,), 6), True, 6), (neg((3,), 7), False, 3), (pos((3,), 8), True, 1)]
    check(f, calls)


def test_and_or_not_on_python_values():
    @case
    def f(x, flag, n, other):
        if flag and n > 2 or not other:
            y = x + 1.0
        else:
            y = x - 1.0
        v = n or 5
        w = flag and n
        u = other or None
        neg_ = not n
        return y, v, w, u, neg_

    x = rnd((2,), 0)
    calls = [(x, True, 3, "a"), (x, True, 3, "a"), (x, True, 3, "a"), (x, True, 3, "a"),
             (x, False, 3, "a"), (x, True, 0, "a"), (x, True, 1, ""), (x, False, 0, ""),
             (x, True, 3, "a"), (x, False, 7, "b")]
    check(f, calls)


def test_and_or_not_on_tensors():
    @case
    def f(x):
        s = tf.reduce_sum(x)
        if (s > 0) and (s < 10.0):
            y = x * 2.0
        else:
            y = x
        t = (s > 0) or (s < -5.0)
        u = not (s > 0)
        if not tf.reduce_any(x > 3.0):
            y = y + 1.0
        return y, t, u

    a = tf.constant([1.0, 2.0])
    b = tf.constant([10.0, 2.0])
    c = tf.constant([-1.0, -2.0])
    d = tf.constant([-10.0, -2.0])
    calls = [(a,), (a,), (a,), (a,), (b,), (c,), (d,), (a,), (b,), (a,)]
    check(f, calls)


def test_logical_ops_tf_functions_on_bool_tensors():
    @case
    def f(x, y):
        m = tf.logical_and(x > 0, y > 0)
        n = tf.logical_or(x > 1, tf.logical_not(y < 0))
        both = m & n
        return tf.where(both, x, y), tf.reduce_any(m), tf.reduce_all(n)

    calls = [(rnd((5,), i), rnd((5,), 100 + i)) for i in range(8)]
    check(f, calls)


def test_return_inside_if_python_and_tensor():
    @case
    def f(x, early):
        if early:
            return x * 10.0
        s = tf.reduce_sum(x)
        if s < 0:
            return -x
        y = x + s
        return y

    calls = [(pos((3,), 0), False), (pos((3,), 1), False), (pos((3,), 2), False),
             (pos((3,), 3), False), (neg((3,), 4), False), (pos((3,), 5), True),
             (pos((3,), 6), False), (neg((3,), 7), False), (pos((3,), 8), True),
             (pos((3,), 9), False)]
    check(f, calls)


def test_nested_if_tensor_inside_python():
    @case
    def f(x, use_abs, thresh):
        if use_abs:
            y = tf.abs(x)
            if tf.reduce_max(y) > thresh:
                y = y / tf.reduce_max(y)
        else:
            if thresh > 1.0:
                y = x * thresh
            else:
                y = x
        return y

    calls = [(rnd((4,), 0), True, 5.0), (rnd((4,), 1), True, 5.0), (rnd((4,), 2), True, 5.0),
             (rnd((4,), 3), True, 5.0), (rnd((4,), 4) * 10.0, True, 5.0),
             (rnd((4,), 5), False, 2.0), (rnd((4,), 6), False, 0.5), (rnd((4,), 7), True, 0.1),
             (rnd((4,), 8), True, 5.0)]
    check(f, calls)


def test_assert_on_python_value_pass_and_fail():
    @case
    def f(x, n):
        assert n > 0, f"n must be positive, got {n}"
        assert isinstance(n, int)
        return x * n

    x = rnd((3,), 0)
    calls = [(x, 1), (x, 1), (x, 1), (x, 1), (x, -2), (x, 1), (x, 0), (x, 2), (x, 1.5),
             (x, 1)]
    check(f, calls)


def test_assert_on_tensor_value_pass_and_fail():
    @case
    def f(x):
        y = x * 2.0
        assert tf.reduce_all(y > 0), "all values must be positive"
        return tf.math.log(y)

    calls = [(pos((4,), 0),), (pos((4,), 1),), (pos((4,), 2),), (pos((4,), 3),),
             (rnd((4,), 4),), (pos((4,), 5),), (neg((4,), 6),), (pos((3,), 7),),
             (pos((4,), 8),)]
    check(f, calls)


def test_raise_value_error_on_python_condition():
    @case
    def f(x, n):
        if n > 3:
            raise ValueError(f"n too large: {n}")
        y = x
        for _ in range(n):
            y = y * 2.0
        return y

    x = rnd((2,), 0)
    calls = [(x, 2), (x, 2), (x, 2), (x, 2), (x, 5), (x, 2), (x, 4), (x, 2), (x, 9)]
    check(f, calls)


def test_raise_value_error_on_tensor_condition():
    @case
    def f(x):
        m = tf.reduce_max(x)
        if m > 5.0:
            raise ValueError("max too large")
        return x / (m + 10.0)

    big = tf.constant([1.0, 9.0, 2.0])
    calls = [(rnd((3,), 0),), (rnd((3,), 1),), (rnd((3,), 2),), (rnd((3,), 3),), (big,),
             (rnd((3,), 4),), (big,), (rnd((5,), 5),), (rnd((3,), 6),)]
    check(f, calls)


def test_raise_other_exception_types():
    @case
    def f(x, key):
        table = {"a": 1.0, "b": 2.0}
        if key not in table:
            raise KeyError(key)
        if key == "b" and tf.reduce_sum(x) < 0:
            raise RuntimeError("negative input for b")
        return x * table[key]

    calls = [(pos((2,), 0), "a"), (pos((2,), 1), "a"), (pos((2,), 2), "a"), (pos((2,), 3), "a"),
             (pos((2,), 4), "z"), (pos((2,), 5), "b"), (neg((2,), 6), "b"), (neg((2,), 7), "a"),
             (pos((2,), 8), "b")]
    check(f, calls)


def test_tensor_branch_assigning_different_variables_per_side():
    @case
    def f(x):
        a = x
        b = x * 0.0
        if tf.reduce_sum(x) > 0:
            a = a * 3.0
        else:
            b = b - 1.0
        return a + b

    calls = [(pos((3,), 0),), (pos((3,), 1),), (pos((3,), 2),), (neg((3,), 3),),
             (neg((3,), 4),), (neg((3,), 5),), (neg((3,), 6),), (pos((3,), 7),),
             (neg((3,), 8),), (pos((3,), 9),)]
    check(f, calls)


def test_optional_none_argument_and_is_checks():
    @case
    def f(x, mask=None, bias=None):
        if mask is not None:
            x = x * mask
        if bias is None:
            return x, None
        return x + bias, bias is x

    x = rnd((3,), 0)
    m = tf.constant([1.0, 0.0, 1.0])
    b = tf.constant([0.5, 0.5, 0.5])
    calls = [(x,), (x,), (x,), (x,), (x, m), (x, None, b), (x, m, b), (x,),
             (lambda p: p.fn(x, bias=b)), (lambda p: p.fn(x, mask=m)), (x,)]
    check(f, calls)


def test_python_runtime_errors_zero_division_and_index():
    @case
    def f(xs, n, i):
        k = 12 // n
        return xs[i] * k

    xs = [rnd((2,), k) for k in range(3)]
    calls = [(xs, 3, 1), (xs, 3, 1), (xs, 3, 1), (xs, 3, 1), (xs, 0, 1), (xs, 3, 5), (xs, 4, 2),
             (xs, 3, -4), (xs, 3, 1), (xs, 6, 0)]
    check(f, calls)


def test_print_before_failed_speculation_is_not_duplicated():
    @case
    def f(x):
        print("enter", x.shape[0])
        print(x)
        if tf.reduce_sum(x) > 0:
            y = x * 2.0
            print("positive")
        else:
            y = -x
            print("negative")
        print("exit")
        return y

    a = tf.constant([1.0, 2.0])
    b = tf.constant([-1.0, -2.0])
    calls = [(a,), (a,), (a,), (a,), (b,), (a,), (b,), (tf.constant([3.0, 1.0, 1.0]),), (a,)]
    check(f, calls)


def test_raise_with_message_formatting_a_tensor():
    @case
    def f(x):
        s = tf.reduce_sum(x)
        if s < 0:
            raise ValueError(f"negative sum {s:.2f} for {x.shape[0]} values")
        return x / (s + 1.0)

    calls = [(pos((3,), i),) for i in range(4)] + [(neg((3,), 4),), (pos((3,), 5),),
                                                   (neg((2,), 6),), (pos((3,), 7),)]
    check(f, calls)


def test_an_augmented_assignment_of_a_local_dead_after_a_tensor_branch_reads_it_there():
    """``k += 1`` reads ``k``: the side takes it in even though nothing reads it afterwards
    (the side used to raise ``UnboundLocalError`` while tracing and be assumed away)."""
    @case
    def f(x):
        k = 0
        if tf.reduce_sum(x) > 0:
            k += 1
            x = x * k
        return x

    calls = [(tf.constant([float(i) - 1.5]),) for i in [0, 3, 1, 2, 0, 3, 2, 1]]
    stats = check(f, calls, min_graph_calls=5)
    assert stats["conversions"] == 1 and stats["assumptions_failed"] == 0, stats
