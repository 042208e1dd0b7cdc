"""Conversion of loops (while/for, break/continue/return/else), checked against eager.

Trip counts change between calls: Python counts (guards / unrolling with a count
assertion) and data-dependent counts (tf.while_loop or a failed assertion + fallback).
"""
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

from harness import case, check


def rnd(shape, seed, dtype=np.float32):
    return tf.constant(np.random.RandomState(seed).randn(*shape).astype(dtype))


def pos(shape, seed, lo=0.1, hi=1.0):
    return tf.constant(np.random.RandomState(seed).uniform(lo, hi, size=shape).astype(np.float32))


# ---------------------------------------------------------------------------------------
def test_while_on_tensor_condition_data_dependent_trips():
    @case
    def f(x, limit):
        i = 0
        while tf.reduce_sum(x) < limit:
            x = x * 2.0
            i += 1
        return x, i

    calls = [(pos((3,), 0), 10.0), (pos((3,), 1), 10.0), (pos((3,), 2), 10.0),
             (pos((3,), 3), 10.0), (pos((3,), 4, 2.0, 3.0), 10.0), (pos((3,), 5), 10.0),
             (pos((3,), 6, 0.01, 0.02), 10.0), (pos((3,), 7), 100.0), (pos((4,), 8), 10.0),
             (pos((3,), 9, 5.0, 6.0), 10.0)]
    check(f, calls)


def test_while_on_tensor_with_tensor_counter():
    @case
    def f(x):
        i = tf.constant(0)
        acc = tf.zeros_like(x)
        while i < tf.shape(x)[0]:
            acc = acc + tf.roll(x, shift=1, axis=0)
            i += 1
        return acc, i

    calls = [(rnd((n,), i),) for i, n in enumerate([3, 3, 3, 3, 4, 2, 3, 5, 5])]
    check(f, calls)


def test_while_on_python_values_collatz():
    @case
    def f(x, n):
        steps = 0
        while n > 1:
            n = n // 2 if n % 2 == 0 else 3 * n + 1
            x = x + 1.0
            steps += 1
        return x, steps, n

    x = rnd((2,), 0)
    calls = [(x, 6), (x, 6), (x, 6), (x, 6), (x, 7), (x, 1), (x, 6), (x, 3), (x, 6), (x, 12)]
    check(f, calls)


def test_for_over_range_python_n():
    @case
    def f(x, n):
        for i in range(n):
            x = x * 0.5 + i
        for j in range(1, n, 2):
            x = x - j
        return x

    calls = [(rnd((3,), 0), 3), (rnd((3,), 1), 3), (rnd((3,), 2), 3), (rnd((3,), 3), 3),
             (rnd((3,), 4), 5), (rnd((3,), 5), 3), (rnd((3,), 6), 5), (rnd((3,), 7), 0),
             (rnd((4,), 8), 5), (rnd((3,), 9), 3)]
    check(f, calls)


def test_for_over_range_of_tensor_dimension():
    @case
    def f(x):
        acc = tf.zeros(x.shape[1:])
        for i in range(x.shape[0]):
            acc = acc * 0.5 + x[i]
        return acc

    calls = [(rnd((n, 3), i),) for i, n in enumerate([4, 4, 4, 4, 3, 2, 4, 3, 5])]
    check(f, calls)


def test_for_over_list_of_weight_tensors():
    @case
    def f(x, ws):
        for w in ws:
            x = tf.nn.relu(tf.matmul(x, w))
        return x

    def ws(seed, n):
        return [rnd((4, 4), seed + k) * 0.5 for k in range(n)]

    calls = [(rnd((2, 4), 0), ws(10, 2)), (rnd((2, 4), 1), ws(10, 2)), (rnd((2, 4), 2), ws(20, 2)),
             (rnd((2, 4), 3), ws(30, 2)), (rnd((3, 4), 4), ws(40, 3)), (rnd((2, 4), 5), ws(50, 2)),
             (rnd((2, 4), 6), ws(60, 1)), (rnd((2, 4), 7), ws(70, 2)), (rnd((2, 4), 8), [])]
    check(f, calls)


def test_for_over_tuple_with_enumerate():
    @case
    def f(ts, scale):
        acc = 0.0
        names = []
        for i, t in enumerate(ts):
            acc += t * (i * scale)
            names.append(f"t{i}")
        for k, t in enumerate(ts, start=10):
            acc = acc + k
        return acc, names

    def ts(seed, n):
        return tuple(rnd((2,), seed + k) for k in range(n))

    calls = [(ts(0, 3), 1.0), (ts(1, 3), 1.0), (ts(2, 3), 1.0), (ts(3, 3), 1.0), (ts(4, 3), 2.0),
             (ts(5, 4), 1.0), (ts(6, 2), 1.0), (ts(7, 3), 1.0), (ts(8, 3), 0.5)]
    check(f, calls)


def test_for_over_zip_of_lists():
    @case
    def f(xs, ys, coefs):
        acc = tf.zeros_like(xs[0])
        for a, b, c in zip(xs, ys, coefs):
            acc = acc + a * b * c
        pairs = list(zip(coefs, range(len(coefs))))
        return acc, pairs

    def args(seed, n, m):
        return ([rnd((3,), seed + k) for k in range(n)], [rnd((3,), seed + 20 + k) for k in range(n)],
                [float(k + 1) for k in range(m)])

    calls = [args(0, 3, 3), args(1, 3, 3), args(2, 3, 3), args(3, 3, 3), args(4, 3, 2),
             args(5, 4, 4), args(6, 2, 5), args(7, 3, 3), args(8, 3, 3)]
    check(f, calls)


def test_for_over_tensor_rows():
    @case
    def f(x, k):
        acc = tf.constant(0.0)
        rows = 0
        for row in x:
            acc += tf.reduce_sum(row) * k
            rows += 1
        return acc, rows

    calls = [(rnd((4, 8), 0), 1.0), (rnd((4, 8), 1), 1.0), (rnd((4, 8), 2), 1.0),
             (rnd((4, 8), 3), 1.0), (rnd((3, 8), 4), 1.0), (rnd((2, 8), 5), 1.0),
             (rnd((4, 8), 6), 2.0), (rnd((3, 8), 7), 1.0), (rnd((2, 8), 8), 1.0)]
    check(f, calls)


def test_break_and_continue_on_python_conditions():
    @case
    def f(x, n, skip, stop):
        visited = []
        for i in range(n):
            if i == skip:
                continue
            if i > stop:
                break
            x = x + i
            visited.append(i)
        return x, visited

    x = rnd((2,), 0)
    calls = [(x, 6, 2, 4), (x, 6, 2, 4), (x, 6, 2, 4), (x, 6, 2, 4), (x, 6, 1, 4), (x, 6, 2, 1),
             (x, 8, 7, 10), (x, 6, 2, 4), (x, 3, 0, 0), (x, 6, 2, 4)]
    check(f, calls)


def test_break_on_tensor_condition_inside_for():
    @case
    def f(x):
        i = 0
        for i in range(10):
            x = x * 1.5
            if tf.reduce_max(x) > 4.0:
                break
        return x, i

    calls = [(pos((3,), 0),), (pos((3,), 1),), (pos((3,), 2),), (pos((3,), 3),),
             (pos((3,), 4, 3.0, 3.5),), (pos((3,), 5, 0.01, 0.02),), (pos((3,), 6),),
             (pos((3,), 7, 1.0, 2.0),), (pos((3,), 8),)]
    check(f, calls)


def test_continue_on_tensor_condition():
    @case
    def f(xs):
        acc = tf.zeros_like(xs[0])
        used = 0
        for x in xs:
            if tf.reduce_sum(x) < 0:
                continue
            acc = acc + x
            used += 1
        return acc, used

    def xs(seed, n):
        return [rnd((3,), seed + k) for k in range(n)]

    calls = [(xs(0, 4),), (xs(0, 4),), (xs(0, 4),), (xs(0, 4),), (xs(10, 4),), (xs(20, 4),),
             (xs(30, 3),), (xs(0, 4),), (xs(40, 4),)]
    check(f, calls)


def test_return_inside_for_loop():
    @case
    def f(xs, target):
        for i, x in enumerate(xs):
            if i == target:
                return x * 100.0, i
        return xs[-1], -1

    def xs(seed, n):
        return [rnd((2,), seed + k) for k in range(n)]

    calls = [(xs(0, 4), 1), (xs(1, 4), 1), (xs(2, 4), 1), (xs(3, 4), 1), (xs(4, 4), 2),
             (xs(5, 4), 7), (xs(6, 3), 0), (xs(7, 4), 1), (xs(8, 4), 3)]
    check(f, calls)


def test_return_inside_if_inside_while_on_tensor():
    @case
    def f(x):
        n = 0
        while n < 8:
            x = x * 2.0
            n += 1
            if tf.reduce_sum(x) > 20.0:
                return x, n, "early"
        return x, n, "done"

    calls = [(pos((3,), 0),), (pos((3,), 1),), (pos((3,), 2),), (pos((3,), 3),),
             (pos((3,), 4, 3.0, 4.0),), (pos((3,), 5, 0.001, 0.002),), (pos((3,), 6),),
             (pos((3,), 7),), (pos((3,), 8, 0.001, 0.002),)]
    # Known gap, kept visible: a Python str chosen by a data-dependent loop exit cannot be a graph output. It must still match eager.
    check(f, calls, eager_only=True)


def test_nested_loops_python_and_tensor():
    @case
    def f(x, n, m):
        out = []
        for i in range(n):
            row = x
            for j in range(m):
                row = row + float(i * j)
            out.append(tf.reduce_sum(row))
        return tf.stack(out) if out else tf.zeros([0]), len(out)

    x = rnd((3,), 0)
    calls = [(x, 2, 3), (x, 2, 3), (x, 2, 3), (x, 2, 3), (x, 3, 2), (x, 2, 3), (x, 1, 1),
             (x, 0, 2), (x, 2, 3)]
    check(f, calls)


def test_rnn_style_loop_accumulating_list_of_tensors():
    def make(jit):
        W = rnd((4, 4), 100) * 0.3
        U = rnd((3, 4), 101) * 0.3

        @jit
        def f(xs, h):
            outs = []
            for t in range(len(xs)):
                h = tf.tanh(tf.matmul(h, W) + tf.matmul(xs[t], U))
                outs.append(h)
            return tf.stack(outs), h

        return SimpleNamespace(fn=f)

    def args(seed, T, B):
        return ([rnd((B, 3), seed + t) for t in range(T)], rnd((B, 4), seed + 50))

    calls = [args(0, 5, 2), args(1, 5, 2), args(2, 5, 2), args(3, 5, 2), args(4, 5, 3),
             args(5, 3, 2), args(6, 5, 2), args(7, 6, 1), args(8, 5, 2)]
    check(make, calls)


def test_for_else_and_while_else():
    @case
    def f(x, items, limit):
        for v in items:
            if v > limit:
                found = v
                break
        else:
            found = -1
        n = 0
        while n < 3:
            n += 1
            if n == limit:
                break
        else:
            n = 100
        return x * found, found, n

    x = rnd((2,), 0)
    calls = [(x, [1, 5, 2], 3), (x, [1, 5, 2], 3), (x, [1, 5, 2], 3), (x, [1, 5, 2], 3),
             (x, [1, 2, 2], 3), (x, [9, 5, 2], 2), (x, [1, 5, 2], 6), (x, [], 1),
             (x, [1, 5, 2], 3)]
    check(f, calls)


def test_while_on_tensor_with_break():
    @case
    def f(x, cap):
        it = 0
        while tf.reduce_max(x) < 100.0:
            x = x + 3.0
            it += 1
            if it >= cap:
                break
        return x, it

    calls = [(pos((2,), 0, 90.0, 91.0), 10), (pos((2,), 1, 90.0, 91.0), 10),
             (pos((2,), 2, 90.0, 91.0), 10), (pos((2,), 3, 90.0, 91.0), 10),
             (pos((2,), 4, 50.0, 51.0), 10), (pos((2,), 5, 99.0, 99.5), 10),
             (pos((2,), 6, 50.0, 51.0), 100), (pos((2,), 7, 120.0, 130.0), 10),
             (pos((2,), 8, 90.0, 91.0), 10)]
    check(f, calls)


def test_loop_over_dict_items_and_keys():
    @case
    def f(params, x):
        total = tf.zeros_like(x)
        for name, w in params.items():
            total = total + w * x
        keys = [k for k in params]
        for k in sorted(params.keys(), reverse=True):
            total = total - params[k] * 0.1
        return total, keys

    def params(seed, names):
        return {n: rnd((3,), seed + i) for i, n in enumerate(names)}

    calls = [(params(0, "abc"), rnd((3,), 90)), (params(1, "abc"), rnd((3,), 91)),
             (params(2, "abc"), rnd((3,), 92)), (params(3, "abc"), rnd((3,), 93)),
             (params(4, "ab"), rnd((3,), 94)), (params(5, "cab"), rnd((3,), 95)),
             (params(6, "abcd"), rnd((3,), 96)), (params(7, "abc"), rnd((3,), 97))]
    check(f, calls)


def test_python_loop_count_from_tensor_value():
    @case
    def f(x, mask):
        k = int(tf.reduce_sum(tf.cast(mask, tf.int32)))
        for _ in range(k):
            x = x * 0.5 + 1.0
        return x, k

    def m(bits):
        return tf.constant([b == "1" for b in bits])

    calls = [(rnd((3,), 0), m("110")), (rnd((3,), 1), m("011")), (rnd((3,), 2), m("101")),
             (rnd((3,), 3), m("110")), (rnd((3,), 4), m("111")), (rnd((3,), 5), m("100")),
             (rnd((3,), 6), m("011")), (rnd((3,), 7), m("000")), (rnd((3,), 8), m("101"))]
    check(f, calls)
