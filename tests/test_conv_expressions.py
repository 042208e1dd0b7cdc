"""Conversion of expression forms, checked against eager (the oracle).

Every program is built twice by the harness (eager and Janus) and run through a call
sequence whose inputs change: new shapes, new Python values, values that flip results.
"""
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

from harness import case, check


def rnd(shape, seed, dtype=np.float32, lo=None, hi=None):
    r = np.random.RandomState(seed)
    if lo is not None:
        v = r.uniform(lo, hi, size=shape)
    else:
        v = r.randn(*shape)
    return tf.constant(v.astype(dtype))


def ints(shape, seed, lo=0, hi=16, dtype=np.int32):
    return tf.constant(np.random.RandomState(seed).randint(lo, hi, size=shape).astype(dtype))


# ---------------------------------------------------------------------------------------
def test_arith_tensor_and_python_scalars():
    @case
    def f(x, a):
        y = x * a + 1.0 - x / 2.0
        z = y ** 2 % 3.0
        w = -z + abs(x) - (+a) * y
        q = w // 1.5
        return q, y * (a - 0.25), 2.0 / (1.0 + x * x)

    x4, x3, x2 = rnd((4, 8), 0), rnd((3, 8), 1), rnd((2, 8), 2)
    check(f, [(x4, 2.0), (x4, 2.0), (x4, 2.0), (x4, 2.0), (x4, 3.0), (x3, 3.0),
                 (x3, 3.0), (x2, 0.5), (x4, 2.0), (x2, 3.0)])


def test_python_int_arithmetic_returns_python_values():
    @case
    def f(x, n):
        m = n * 3 + 1
        k = m // 2
        r = m % 5
        p = 2 ** n
        b = (n & 6) | (1 ^ 3)
        s = (n << 2) >> 1
        t = n / 4
        return x * float(k), (m, k, r, p, -n, b, s, ~n, t)

    x = rnd((3,), 3)
    check(f, [(x, 2), (x, 2), (x, 2), (x, 2), (x, 5), (x, 5), (x, 2), (x, 7), (x, 7), (x, 0),
                 (x, -3), (x, -3)])


def test_bitwise_and_logical_tensor_ops():
    @case
    def f(a, b, m):
        x = (a & 3) | (b ^ 5)
        y = ~a + x
        bm = m & (a > b)
        cm = ~m | (a == b)
        dm = m ^ (b > 7)
        return x, y, bm, cm, dm

    calls = []
    for i, n in enumerate([5, 5, 5, 5, 4, 4, 6, 5]):
        m = tf.constant(np.random.RandomState(i).rand(n) > 0.5)
        calls.append((ints((n,), 10 + i), ints((n,), 20 + i), m))
    check(f, calls)


def test_unary_ops_on_tensors_and_python():
    @case
    def f(x, c, k):
        return -x, +c, abs(x), -c, abs(k), -k, +k, not k, ~tf.cast(x > 0, tf.bool)

    calls = [(rnd((4,), 0), 1.5, 3), (rnd((4,), 0), 1.5, 3), (rnd((4,), 1), 1.5, 3),
             (rnd((4,), 2), 1.5, 3), (rnd((4,), 3), -2.5, 3), (rnd((6,), 4), -2.5, 0),
             (rnd((6,), 5), -2.5, 0), (rnd((4,), 6), 1.5, -7)]
    check(f, calls)


def test_comparisons_python_and_chained():
    @case
    def f(x, n, lo, hi):
        inside = lo <= n < hi
        eq = n == 3
        ne = n != 3
        chain = 0 < n <= 10 != hi
        if lo < n < hi:
            y = x * n
        else:
            y = x - n
        return y, inside, eq, ne, chain, x > 0.0, x <= 0.5, x == x, x != 1.0

    x = rnd((5,), 7)
    calls = [(x, 3, 0, 5), (x, 3, 0, 5), (x, 3, 0, 5), (x, 3, 0, 5), (x, 7, 0, 5), (x, 4, 0, 5),
             (x, 7, 0, 10), (x, 0, 0, 5), (x, 3, 0, 5), (x, 11, 0, 10)]
    check(f, calls)


def test_chained_comparison_on_scalar_tensors():
    @case
    def f(x):
        s = tf.reduce_sum(x)
        r = 0.0 < s < 10.0
        if -1.0 < s < 1.0:
            y = x * 100.0
        else:
            y = x
        return y, r

    a = tf.constant([0.1, 0.2, 0.3])
    b = tf.constant([5.0, 2.0, 1.0])
    c = tf.constant([-5.0, -2.0, 1.0])
    d = tf.constant([50.0, 2.0, 1.0])
    check(f, [(a,), (a,), (a,), (a,), (b,), (a,), (c,), (d,), (a,), (b,)])


def test_tensor_subscripts_and_slices():
    @case
    def f(x, i, j):
        return (x[0], x[-1], x[1:3], x[:, ::2], x[..., 0], x[None, :2], x[i], x[i:j],
                x[:, j - 1], x[::-1], x[1:, 1:-1])

    calls = [(rnd((4, 6), 0), 1, 3), (rnd((4, 6), 1), 1, 3), (rnd((4, 6), 2), 1, 3),
             (rnd((4, 6), 3), 1, 3), (rnd((4, 6), 4), 2, 4), (rnd((5, 6), 5), 2, 4),
             (rnd((3, 6), 6), 0, 2), (rnd((3, 6), 7), 0, 2), (rnd((4, 6), 8), 1, 3)]
    check(f, calls)


def test_list_tuple_dict_subscripts():
    @case
    def f(xs, d, t, key, i):
        a = xs[0] + xs[-1]
        rest = xs[1:]
        b = d[key] * t[1][0]
        c = xs[i] - d["base"]
        return a, len(rest), b, c, t[0], t[-1][1:]

    def args(seed, n, key, i):
        xs = [rnd((3,), seed + k) for k in range(n)]
        d = {"base": rnd((3,), seed + 50), "w": rnd((3,), seed + 51), "v": rnd((3,), seed + 52)}
        t = (7, (2.0, 3, "z"), ("p", "q"))
        return (xs, d, t, key, i)

    calls = [args(0, 3, "w", 1), args(0, 3, "w", 1), args(1, 3, "w", 1), args(2, 3, "w", 1),
             args(3, 3, "v", 1), args(4, 4, "v", 2), args(5, 2, "w", 0), args(6, 3, "w", 1)]
    check(f, calls)


def test_attribute_access_shape_dtype_and_objects():
    @case
    def f(x, cfg):
        n = x.shape[0]
        m = x.shape[-1]
        y = x * n + cfg.scale
        if x.dtype == tf.float64:
            y = y * 2.0
        return y, n, m, x.ndim, len(x.shape), cfg.name, tuple(x.shape)

    c1 = SimpleNamespace(scale=1.0, name="a")
    c2 = SimpleNamespace(scale=2.0, name="b")
    calls = [(rnd((4, 8), 0), c1), (rnd((4, 8), 1), c1), (rnd((4, 8), 2), c1),
             (rnd((4, 8), 3), c1), (rnd((3, 8), 4), c1), (rnd((2, 8), 5), c1),
             (rnd((2, 8), 6), c2), (rnd((4, 8), 7, np.float64), c1), (rnd((3, 8), 8), c1),
             (rnd((5, 8), 9), c2)]
    check(f, calls)


def test_calls_with_star_args_and_kwargs():
    def helper(a, *rest, scale=1.0, shift=0.0, **kw):
        total = a
        for r in rest:
            total = total + r
        extra = kw.get("extra", 0.0)
        return total * scale + shift + extra, len(rest), sorted(kw)

    @case
    def f(xs, s, opts):
        y, nrest, keys = helper(*xs, scale=s, **opts)
        z = tf.add_n(list(xs))
        w = tf.reduce_sum(tf.stack(xs, *[0]), axis=0)
        return y, nrest, keys, z, w

    def args(seed, n, s, opts):
        return ([rnd((2, 3), seed + k) for k in range(n)], s, opts)

    calls = [args(0, 3, 2.0, {}), args(0, 3, 2.0, {}), args(1, 3, 2.0, {}),
             args(2, 3, 2.0, {}), args(3, 3, 2.0, {"shift": 1.0}),
             args(4, 2, 0.5, {"shift": 1.0, "extra": 3.0}), args(5, 3, 2.0, {}),
             args(6, 3, 2.0, {"extra": -1.0})]
    check(f, calls)


def test_fstrings_on_python_values():
    @case
    def f(x, n, name):
        tag = f"{name}-{n:03d}-{len(name)!r}-{n * 2.5:.2f}"
        info = f"shape={tuple(x.shape)} {name!s:>6}|"
        print(f"tag {tag}")
        return x + n, tag, info

    calls = [(rnd((3,), 0), 1, "ab"), (rnd((3,), 1), 1, "ab"), (rnd((3,), 2), 1, "ab"),
             (rnd((3,), 3), 1, "ab"), (rnd((3,), 4), 12, "ab"), (rnd((4,), 5), 12, "xyz"),
             (rnd((4,), 6), 1, "ab"), (rnd((3,), 7), 7, "q")]
    check(f, calls)


def test_tuple_list_dict_set_displays():
    @case
    def f(x, n, d):
        t = (x, x + 1.0, n)
        l = [x * 2.0, n, "s"]
        dd = {"a": x, "b": n + 1, **d}
        s = {n, n + 1, 2}
        fs = frozenset([n % 3, 1])
        l2 = [*l[:1], x, *t[2:]]
        return t, l, dd, s, fs, l2, ()

    x = rnd((2, 2), 0)
    calls = [(x, 1, {"c": 3}), (x, 1, {"c": 3}), (x, 1, {"c": 3}), (x, 1, {"c": 3}),
             (x, 2, {"c": 3}), (rnd((3, 2), 1), 2, {"c": 4, "e": 5.0}), (x, 1, {}),
             (x, 1, {"c": 3})]
    check(f, calls)


def test_tuple_unpacking_nested_and_starred():
    @case
    def f(x, xs):
        (a, (b, c)), d = (x, (x * 2.0, x * 3.0)), x * 4.0
        first, *middle, last = xs
        p, q = a, b
        p, q = q, p
        (u, v), w = divmod(len(xs), 2), len(middle)
        for i, (k, val) in enumerate([("k0", first), ("k1", last)]):
            d = d + val * (i + 1)
        return a + b + c, d, p - q, u, v, w, len(middle), k

    def args(seed, n, shape=(3,)):
        return (rnd(shape, seed), [rnd(shape, seed + 1 + k) for k in range(n)])

    calls = [args(0, 3), args(0, 3), args(1, 3), args(2, 3), args(3, 4), args(4, 4),
             args(5, 2), args(6, 3, (2, 2)), args(7, 3)]
    check(f, calls)


def test_augmented_assignment_tensors_and_python():
    @case
    def f(x, n, name):
        y = x
        y += 1.0
        y *= x
        y -= 0.5
        y /= 2.0
        y **= 2
        m = n
        m += 1
        m *= 3
        m -= 2
        m //= 2
        m %= 7
        s = "p"
        s += name
        lst = [x]
        alias = lst
        lst += [y]
        lst *= 2
        i = tf.constant(n)
        i += 3
        i *= 2
        return y, x, m, s, len(alias), alias[-1], i

    calls = [(rnd((3,), 0), 2, "a"), (rnd((3,), 1), 2, "a"), (rnd((3,), 2), 2, "a"),
             (rnd((3,), 3), 2, "a"), (rnd((3,), 4), 5, "a"), (rnd((2, 3), 5), 5, "bb"),
             (rnd((3,), 6), 2, "a"), (rnd((3,), 7), 9, "a")]
    check(f, calls)


def test_multiple_assignment_targets():
    @case
    def f(x, n):
        a = b = x * 2.0
        c = d = n + 1
        a = a + 1.0
        e = g = [x]
        e.append(b)
        return a, b, c, d, len(g), g[1]

    calls = [(rnd((2,), i), n) for i, n in enumerate([1, 1, 1, 1, 2, 2, 3, 1])]
    check(f, calls)


def test_dtype_changes_float32_float64_int():
    @case
    def f(x):
        y = x * 2 + tf.cast(1, x.dtype)
        z = tf.reduce_sum(y * y)
        return y, z, y.dtype.name

    calls = [(rnd((4,), 0),), (rnd((4,), 1),), (rnd((4,), 2),), (rnd((4,), 3),),
             (rnd((4,), 4, np.float64),), (rnd((4,), 5, np.float64),), (rnd((4,), 6),),
             (ints((4,), 7),), (rnd((4,), 8, np.float64),), (rnd((4,), 9),)]
    check(f, calls)


def test_shape_changes_first_dimension():
    def make(jit):
        w = rnd((8, 3), 99)

        @jit
        def f(x):
            h = tf.matmul(x, w)
            return tf.nn.relu(h) + tf.reduce_mean(x, axis=1, keepdims=True), tf.shape(h)

        return SimpleNamespace(fn=f)

    calls = [(rnd((4, 8), 0),), (rnd((4, 8), 1),), (rnd((4, 8), 2),), (rnd((3, 8), 3),),
             (rnd((2, 8), 4),), (rnd((4, 8), 5),), (rnd((3, 8), 6),), (rnd((1, 8), 7),),
             (rnd((6, 8), 8),)]
    check(make, calls)


def test_large_python_ints_and_precise_floats_not_truncated():
    @case
    def f(x, n, a):
        big = n * 1000003 + 7
        q = big // 3
        frac = a * 3.0
        return x + 1.0, big, q, frac, frac == 0.30000000000000004, n > 2 ** 31

    x = rnd((2,), 0)
    calls = [(x, 5, 0.5), (x, 6, 0.25), (x, 7, 0.75), (x, 8, 0.5), (x, 2 ** 40, 0.1),
             (x, 3 * 10 ** 9, 0.1), (x, 9, 0.2), (x, 2 ** 40 + 1, 0.1), (x, 10, 0.5)]
    check(f, calls)


def test_python_scalars_changing_every_call_with_float64_and_int_tensors():
    @case
    def f(x64, xi, a, n):
        return x64 * a + a, xi * n + n, a * n, xi // n

    calls = [(rnd((3,), i, np.float64), ints((3,), 100 + i, 1, 50), 0.1 * (i + 1), i + 1)
             for i in range(9)]
    check(f, calls)


def test_python_only_function_without_tensor_arguments():
    @case
    def f(n, words):
        squares = [i * i for i in range(n)]
        lengths = {w: len(w) for w in words}
        return squares, lengths, " ".join(sorted(words)), sum(squares) / max(n, 1)

    calls = [(3, ["b", "a"]), (3, ["b", "a"]), (3, ["b", "a"]), (3, ["b", "a"]),
             (4, ["b", "a"]), (3, ["cc", "a", "bbb"]), (0, []), (3, ["b", "a"])]
    check(f, calls)


def test_python_scalars_computed_from_tensors_keep_python_semantics():
    @case
    def f(x):
        s = float(tf.reduce_sum(x))
        n = int(tf.reduce_sum(tf.cast(x > 0, tf.int32)))
        b = bool(tf.reduce_any(x > 1.0))
        r = round(s, 2)
        label = "pos" if s > 0 else "neg"
        print(f"s={s:.3f} n={n} b={b}")
        return x * s, s, n, b, r, label, n // 2, s / 3

    calls = [(rnd((4,), i),) for i in range(9)]
    # Known gap, kept visible: round(x, ndigits) of a value the graph computes has no exact graph form. It must still match eager.
    check(f, calls, eager_only=True)


def test_len_and_static_shape_branches_under_shape_changes():
    @case
    def f(x):
        n = len(x)
        if x.shape[0] > 3:
            y = x[:3]
        else:
            y = x
        idx = list(range(n))
        return y * n, n, idx, y.shape[0]

    calls = [(rnd((n, 8), i),) for i, n in enumerate([4, 4, 4, 4, 3, 2, 5, 3, 2, 4, 6])]
    check(f, calls)


def test_identity_is_and_is_not():
    @case
    def f(x, y):
        a = x
        same = a is x
        other = y is x
        ident = tf.identity(x) is x
        return x + y, same, other, ident, y is not None

    x = rnd((2,), 0)
    calls = [(x, rnd((2,), 1)), (x, rnd((2,), 2)), (x, rnd((2,), 3)), (x, rnd((2,), 4)),
             (x, x), (x, rnd((2,), 5)), (x, x), (rnd((3,), 6), rnd((3,), 7))]
    check(f, calls)


def test_python_float_changing_every_call_controls_branch_and_formatting():
    @case
    def f(x, a):
        print(f"a={a} a*3={a * 3}", a, round(a, 1))
        if a > 0.45:
            y = x * a
        else:
            y = x - a
        return y, a, repr(a), a * 10 // 1

    x = rnd((3,), 0)
    calls = [(x, 0.1 * (i + 1)) for i in range(9)]
    check(f, calls)


def test_python_int_used_as_tensor_shape():
    @case
    def f(n, fill):
        z = tf.zeros([n, 2]) + fill
        r = tf.reshape(tf.range(n * 2), [n, 2])
        return z, r, tf.ones(n)

    calls = [(n, 1.5) for n in [2, 2, 2, 2, 3, 1, 4, 2, 5]]
    check(f, calls)


def test_returning_python_objects_built_inside():
    @case
    def f(x, n):
        out = SimpleNamespace(loss=tf.reduce_sum(x * x), n=n, tags=[f"t{i}" for i in range(n)])
        return out, {"pair": (out.n, x[0])}

    calls = [(rnd((3,), i), n) for i, n in enumerate([2, 2, 2, 2, 3, 2, 1, 2])]
    # Known gap, kept visible: constructing Python objects inside a converted function is not supported. It must still match eager.
    check(f, calls, eager_only=True)
