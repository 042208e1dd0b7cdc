"""Conversion of calls: user functions, closures, methods, Janus-in-Janus, TensorFlow,
Keras, numpy, builtins, comprehensions, lambdas, print; and TF errors raised inside.
"""
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

from harness import case, check


def rnd(shape, seed, dtype=np.float32):
    return tf.constant(np.random.RandomState(seed).randn(*shape).astype(dtype))


def module_helper(x, k=2):
    """A plain (non-Janus) module-level helper."""
    return tf.nn.relu(x) * k + scale_helper(x)


def scale_helper(x):
    return x * 0.5


# ---------------------------------------------------------------------------------------
def test_nested_function_and_closure_reading_outer_locals():
    @case
    def f(x, a):
        b = a * 2.0

        def inner(y):
            return y * a + b

        def twice(g, y):
            return g(g(y))

        return twice(inner, x), inner(x)

    calls = [(rnd((3,), 0), 1.0), (rnd((3,), 1), 1.0), (rnd((3,), 2), 1.0), (rnd((3,), 3), 1.0),
             (rnd((3,), 4), 2.0), (rnd((4,), 5), 2.0), (rnd((3,), 6), 1.0), (rnd((3,), 7), -1.0)]
    check(f, calls)


def test_module_level_helper_functions():
    @case
    def f(x, k):
        return module_helper(x, k=k) + module_helper(-x)

    calls = [(rnd((2, 3), 0), 2), (rnd((2, 3), 1), 2), (rnd((2, 3), 2), 2), (rnd((2, 3), 3), 2),
             (rnd((2, 3), 4), 3), (rnd((4, 3), 5), 2), (rnd((2, 3), 6), 2), (rnd((2, 3), 7), 1)]
    check(f, calls)


def test_methods_calling_methods():
    def make(jit):
        class Model:
            def __init__(self):
                self.w1 = rnd((4, 5), 10) * 0.5
                self.w2 = rnd((5, 2), 11) * 0.5
                self.b = tf.constant([0.1, -0.1])

            def act(self, h):
                return tf.nn.relu(h)

            def layer(self, x, w):
                return self.act(tf.matmul(x, w))

            @jit
            def forward(self, x):
                h = self.layer(x, self.w1)
                return tf.matmul(h, self.w2) + self.b

        m = Model()
        return SimpleNamespace(fn=m.forward, m=m)

    calls = [(rnd((3, 4), i),) for i in range(4)] + [(rnd((2, 4), 4),), (rnd((5, 4), 5),),
                                                      (rnd((3, 4), 6),), (rnd((3, 4), 7),)]
    check(make, calls)


def test_janus_function_calling_janus_function():
    def make(jit):
        @jit
        def inner(x, s):
            return tf.tanh(x) * s

        @jit
        def outer(x, s):
            y = inner(x, s) + inner(x * 2.0, 1.0)
            return y, inner(y, s)

        return SimpleNamespace(fn=outer, janus_fns=[outer])

    calls = [(rnd((3,), 0), 1.0), (rnd((3,), 1), 1.0), (rnd((3,), 2), 1.0), (rnd((3,), 3), 1.0),
             (rnd((3,), 4), 2.0), (rnd((5,), 5), 2.0), (rnd((3,), 6), 1.0), (rnd((3,), 7), 1.0)]
    check(make, calls)


def test_janus_function_called_directly_and_from_another():
    def make(jit):
        @jit
        def norm(x):
            return x / (tf.norm(x) + 1e-3)

        @jit
        def step(x):
            return norm(x) * 3.0

        return SimpleNamespace(fn=step, norm=norm, janus_fns=[step, norm])

    calls = []
    for i in range(8):
        calls.append((rnd((3,), i),))
        calls.append(lambda p, i=i: p.norm(rnd((2,), 100 + i)))
    check(make, calls)


def test_tensorflow_op_zoo():
    @case
    def f(x, w, idx):
        h = tf.nn.relu(tf.matmul(x, w))
        s = tf.reduce_sum(h, axis=1)
        m = tf.reduce_mean(h)
        mx = tf.reduce_max(h, axis=0)
        mn = tf.reduce_min(x)
        c = tf.concat([h, x[:, :2]], axis=1)
        st = tf.stack([s, s * 2.0], axis=0)
        shp = tf.shape(c)
        ci = tf.cast(h > 0.5, tf.int32)
        wh = tf.where(h > 0.5, h, tf.zeros_like(h))
        r = tf.reshape(c, [-1])
        t = tf.transpose(h)
        e = tf.expand_dims(s, -1)
        sq = tf.squeeze(e, axis=-1)
        g = tf.gather(x, idx)
        oh = tf.one_hot(idx, depth=4)
        am = tf.argmax(x, axis=1)
        sm = tf.nn.softmax(x, axis=-1)
        sg = tf.sigmoid(x)
        cl = tf.clip_by_value(x, -0.5, 0.5)
        ex = tf.exp(-tf.square(x))
        ms = tf.math.maximum(x, 0.0) + tf.math.minimum(x, 0.0)
        cs = tf.cumsum(x, axis=1)
        return (h, s, m, mx, mn, c, st, shp, ci, wh, r, t, sq, g, oh, am, sm, sg, cl, ex, ms,
                cs, tf.size(x), tf.rank(x))

    w = rnd((4, 3), 50)
    calls = [(rnd((3, 4), 0), w, tf.constant([0, 2])), (rnd((3, 4), 1), w, tf.constant([0, 2])),
             (rnd((3, 4), 2), w, tf.constant([1, 2])), (rnd((3, 4), 3), w, tf.constant([1, 2])),
             (rnd((5, 4), 4), w, tf.constant([4, 0, 1])), (rnd((2, 4), 5), w, tf.constant([1])),
             (rnd((3, 4), 6), rnd((4, 3), 51), tf.constant([0, 2])),
             (rnd((3, 4), 7), w, tf.constant([0, 2]))]
    check(f, calls)


def test_tf_shape_dynamic_and_static():
    @case
    def f(x):
        n = tf.shape(x)[0]
        y = tf.reshape(x, [n, -1])
        static = x.shape.as_list()
        return y, tf.cast(n, tf.float32) * 2.0, static, x.shape[0] * 2

    calls = [(rnd((n, 2, 3), i),) for i, n in enumerate([4, 4, 4, 4, 3, 2, 4, 1, 5])]
    check(f, calls)


def test_keras_dense_layers_built_before_calls():
    def make(jit):
        d1 = tf.keras.layers.Dense(6, activation="relu",
                                   kernel_initializer=tf.keras.initializers.Constant(0.1),
                                   bias_initializer=tf.keras.initializers.Constant(0.05))
        d2 = tf.keras.layers.Dense(2, kernel_initializer=tf.keras.initializers.Constant(-0.2),
                                   bias_initializer="zeros")
        d1(tf.zeros((1, 4)))
        d2(tf.zeros((1, 6)))

        @jit
        def f(x):
            return d2(d1(x)) + 1.0

        return SimpleNamespace(fn=f, state=lambda: {"k1": tf.convert_to_tensor(d1.kernel),
                                                   "b1": tf.convert_to_tensor(d1.bias),
                                                   "k2": tf.convert_to_tensor(d2.kernel)})

    calls = [(rnd((3, 4), i),) for i in range(4)] + [(rnd((2, 4), 4),), (rnd((5, 4), 5),),
                                                      (rnd((3, 4), 6),), (rnd((3, 4), 7),)]
    check(make, calls)


def test_numpy_constants_and_python_side_numpy():
    def make(jit):
        half = np.float32(0.5)
        table = np.arange(6, dtype=np.float32)

        @jit
        def f(x, n):
            k = int(np.arange(n).sum())
            c = np.float32(1.5) * x + half
            t = tf.constant(table[:n])
            return c * k, t, k, float(np.sqrt(n))

        return SimpleNamespace(fn=f)

    calls = [(rnd((3,), 0), 3), (rnd((3,), 1), 3), (rnd((3,), 2), 3), (rnd((3,), 3), 3),
             (rnd((3,), 4), 4), (rnd((3,), 5), 2), (rnd((3,), 6), 3), (rnd((3,), 7), 6)]
    check(make, calls)


def test_builtins_on_python_values_and_tensor_lists():
    @case
    def f(xs, ns, d):
        n = len(xs)
        big = max(ns)
        small = min(ns[0], ns[-1], 3)
        tot = sum(ns)
        srt = sorted(ns, reverse=True)
        lst = list(range(n))
        tup = tuple(ns)
        dd = dict(d, extra=n)
        keys = sorted(dd)
        ok = isinstance(xs[0], tf.Tensor) and not isinstance(ns[0], float)
        fl = float(big) / 4
        it = int(fl * 3)
        bo = bool(n - 2)
        ab = abs(small - 10)
        acc = xs[0] * 0.0
        for i, (x, k) in enumerate(zip(xs, ns)):
            acc = acc + x * k * i
        return acc, n, big, small, tot, srt, lst, tup, dd, keys, ok, fl, it, bo, ab

    def args(seed, n, d):
        return ([rnd((2,), seed + k) for k in range(n)], [(seed + k * 3) % 7 for k in range(n)], d)

    calls = [args(0, 3, {"a": 1}), args(0, 3, {"a": 1}), args(0, 3, {"a": 1}),
             args(0, 3, {"a": 1}), args(1, 3, {"a": 1}), args(2, 2, {"b": 2}),
             args(3, 4, {"a": 1}), args(0, 3, {}), args(4, 3, {"a": 1})]
    check(f, calls)


def test_lambdas():
    def make(jit):
        sq = lambda t: t * t  # noqa: E731

        @jit
        def f(x, which, c):
            fns = [lambda t: t + 1.0, lambda t: t * 2.0, lambda t, c=c: t - c]
            g = fns[which]
            h = (lambda a, b=3.0: a * b)(x)
            key = sorted([3, 1, 2], key=lambda v: -v)
            late = [lambda t: t * i for i in range(3)]
            late_vals = [l(x) for l in late]
            return g(sq(x)), h, key, (lambda: c * 2)(), late_vals

        return SimpleNamespace(fn=f)

    calls = [(rnd((3,), 0), 0, 1.0), (rnd((3,), 1), 0, 1.0), (rnd((3,), 2), 0, 1.0),
             (rnd((3,), 3), 0, 1.0), (rnd((3,), 4), 1, 1.0), (rnd((3,), 5), 2, 1.0),
             (rnd((3,), 6), 2, 4.0), (rnd((3,), 7), 0, 1.0), (rnd((3,), 8), 1, 2.0)]
    check(make, calls)


def test_comprehensions_and_generator_expressions():
    @case
    def f(xs, n):
        sq = [x * x for x in xs]
        pos = [x for x in xs if tf.reduce_sum(x) > 0]
        d = {f"k{i}": x + i for i, x in enumerate(xs)}
        s = {i % 3 for i in range(n)}
        total = sum(tf.reduce_sum(x) for x in xs)
        tup = tuple(i * 2 for i in range(n) if i != 1)
        nested = [[i * j for j in range(i)] for i in range(n)]
        anyp = any(v > 3 for v in range(n))
        return sq, len(pos), d, s, total, tup, nested, anyp

    def xs(seed, k):
        return [rnd((2,), seed + i) for i in range(k)]

    calls = [(xs(0, 3), 3), (xs(0, 3), 3), (xs(0, 3), 3), (xs(0, 3), 3), (xs(10, 3), 4),
             (xs(20, 4), 2), (xs(30, 2), 5), (xs(0, 3), 3), (xs(40, 3), 3)]
    # Known gap, kept visible: a comprehension filtered by a tensor condition has a data-dependent length. It must still match eager.
    check(f, calls, eager_only=True)


def test_print_python_values():
    @case
    def f(x, n, name):
        print("step", n, name)
        print(f"[{name}] n={n}", [1, n], {"k": n}, sep=" | ", end=";\n")
        y = x * n
        print(len(x.shape), x.shape[0], x.dtype)
        if n > 2:
            print("big", n)
        return y

    calls = [(rnd((3,), 0), 1, "a"), (rnd((3,), 1), 1, "a"), (rnd((3,), 2), 1, "a"),
             (rnd((3,), 3), 1, "a"), (rnd((3,), 4), 3, "a"), (rnd((2,), 5), 1, "bb"),
             (rnd((3,), 6), 1, "a"), (rnd((4,), 7), 5, "c")]
    check(f, calls)


def test_print_tensors_matches_eager_repr():
    @case
    def f(x):
        y = x * 2.0
        print(y)
        print("sum:", tf.reduce_sum(y), "first", y[0])
        print(tf.cast(y > 0, tf.int32))
        return y + 1.0

    calls = [(tf.constant([1.0, 2.0]),), (tf.constant([3.0, -2.0]),), (tf.constant([0.5, 2.0]),),
             (tf.constant([1.5, 2.5]),), (tf.constant([-1.0, 7.0]),),
             (tf.constant([1.0, 2.0, 3.0]),), (tf.constant([4.0, 2.0]),),
             (tf.constant([[1.0, 2.0], [3.0, 4.0]]),)]
    check(f, calls)


def test_tf_error_incompatible_matmul_shapes():
    @case
    def f(x, w):
        return tf.nn.relu(tf.matmul(x, w))

    w = rnd((8, 3), 1)
    calls = [(rnd((4, 8), 0), w), (rnd((4, 8), 2), w), (rnd((4, 8), 3), w), (rnd((4, 8), 4), w),
             (rnd((3, 8), 5), w), (rnd((2, 8), 6), w), (rnd((2, 8), 7), rnd((7, 3), 8)),
             (rnd((3, 8), 9), w), (rnd((2, 5), 10), w), (rnd((4, 8), 11), w)]
    check(f, calls, check_message=False)


def test_tf_error_at_run_time_inside_relaxed_graph():
    @case
    def f(x, idx):
        g = tf.gather(x, idx)
        return tf.reshape(g, [-1, 4]) * 2.0

    calls = [(rnd((5, 4), 0), tf.constant([0, 1])), (rnd((5, 4), 1), tf.constant([2, 3])),
             (rnd((5, 4), 2), tf.constant([4, 0])), (rnd((5, 4), 3), tf.constant([1, 1])),
             (rnd((5, 4), 4), tf.constant([1, 7])), (rnd((5, 4), 5), tf.constant([3, 2])),
             (rnd((6, 4), 6), tf.constant([5, 6])), (rnd((5, 4), 7), tf.constant([0, 1]))]
    check(f, calls, check_message=False)


def test_python_exception_from_helper_called_with_bad_python_value():
    def lookup(table, key):
        return table[key]

    def make(jit):
        table = {"a": 1.0, "b": 2.0}

        @jit
        def f(x, key):
            return x * lookup(table, key)

        return SimpleNamespace(fn=f)

    x = rnd((3,), 0)
    calls = [(x, "a"), (x, "a"), (x, "a"), (x, "a"), (x, "b"), (x, "zz"), (x, "a"), (x, 3),
             (x, "b")]
    check(make, calls)


def test_keyword_arguments_defaults_and_bad_call_signatures():
    @case
    def f(x, scale=2.0, *, shift=0.0, **extra):
        y = x * scale + shift
        if "offset" in extra:
            y = y + extra["offset"]
        return y, sorted(extra)

    x = rnd((3,), 0)
    calls = [(x,), (x,), (x,), (x,), (x, 3.0), (lambda p: p.fn(x, shift=1.0)),
             (lambda p: p.fn(x=x, scale=0.5)), (lambda p: p.fn(x, offset=2.0, other=1)),
             (x, 1.0, 2.0), (lambda p: p.fn(scale=1.0)), (lambda p: p.fn(x, 2.0, scale=1.0)),
             (x,), (lambda p: p.fn(x, shift=1.0))]
    check(f, calls)


def test_print_inside_loops_interleaving_python_and_tensor_output():
    @case
    def f(x, n):
        for i in range(n):
            print("row", i)
            print(x[i])
            if tf.reduce_sum(x[i]) > 0:
                print("positive row", i)
        return tf.reduce_sum(x)

    calls = [(rnd((3, 2), 0), 2), (rnd((3, 2), 1), 2), (rnd((3, 2), 2), 2), (rnd((3, 2), 3), 2),
             (rnd((3, 2), 4), 3), (rnd((3, 2), 5), 2), (rnd((4, 2), 6), 4), (rnd((3, 2), 7), 2)]
    check(f, calls)


def test_zero_argument_super_in_janus_method():
    def make(jit):
        class Base:
            def __init__(self):
                self.w = tf.constant([[1.0, -1.0], [0.5, 2.0]])

            def forward(self, x):
                return tf.matmul(x, self.w)

            def describe(self):
                return "base"

        class Child(Base):
            def __init__(self, k):
                super().__init__()
                self.k = k

            def describe(self):
                return "child<" + super().describe() + ">"

            @jit
            def forward(self, x):
                return tf.nn.relu(super().forward(x)) * self.k, self.describe()

        c = Child(2.0)
        return SimpleNamespace(fn=c.forward, c=c)

    calls = [(rnd((3, 2), i),) for i in range(4)] + [(rnd((4, 2), 4),),
                                                     (lambda p: (setattr(p.c, "k", 3.0), p.fn(rnd((3, 2), 5)))[1]),
                                                     (rnd((3, 2), 6),), (rnd((1, 2), 7),)]
    check(make, calls)


def test_user_calls_tf_cond_and_tf_while_loop_explicitly():
    @case
    def f(x, k):
        y = tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x - 1.0)
        i0 = tf.constant(0)
        _, z = tf.while_loop(lambda i, acc: i < k, lambda i, acc: (i + 1, acc * 1.5),
                             (i0, y))
        return z

    calls = [(rnd((3,), i), k) for i, k in enumerate([2, 2, 2, 2, 3, 2, 0, 2, 4])]
    check(f, calls)


def test_inlined_helper_with_tensor_branch_that_flips():
    def normalise(t):
        m = tf.reduce_max(tf.abs(t))
        if m > 1.0:
            return t / m
        return t

    @case
    def f(x):
        return normalise(x) + normalise(x * 0.1)

    small = [tf.constant([0.1, -0.2, 0.3]) * (1 + 0.1 * i) for i in range(6)]
    big = [tf.constant([5.0, -2.0, 1.0]) * (1 + 0.1 * i) for i in range(3)]
    calls = [(small[0],), (small[1],), (small[2],), (small[3],), (big[0],), (small[4],),
             (big[1],), (big[2],), (small[5],)]
    check(f, calls)


def test_range_over_tf_shape_value():
    @case
    def f(x):
        acc = tf.zeros_like(x[0])
        for i in range(tf.shape(x)[0]):
            acc = acc + x[i] * 0.5
        return acc

    calls = [(rnd((n, 3), i),) for i, n in enumerate([4, 4, 4, 4, 3, 2, 4, 5, 4])]
    check(f, calls)


def test_gradient_tape_manual_sgd_step():
    def make(jit):
        w = tf.Variable([[0.5], [-0.3], [0.2]])
        b = tf.Variable([0.1])

        @jit
        def step(x, y, lr):
            with tf.GradientTape() as tape:
                pred = tf.matmul(x, w) + b
                loss = tf.reduce_mean(tf.square(pred - y))
            gw, gb = tape.gradient(loss, [w, b])
            w.assign_sub(lr * gw)
            b.assign_sub(lr * gb)
            return loss

        return SimpleNamespace(fn=step, state=lambda: {"w": w, "b": b})

    calls = [(rnd((4, 3), i), rnd((4, 1), 50 + i), 0.1) for i in range(7)]
    calls += [(rnd((2, 3), 8), rnd((2, 1), 58), 0.05), (rnd((4, 3), 9), rnd((4, 1), 59), 0.1)]
    check(make, calls)


def test_gradient_tape_with_keras_model_and_optimizer():
    def make(jit):
        layer = tf.keras.layers.Dense(2, kernel_initializer=tf.keras.initializers.Constant(0.2),
                                      bias_initializer="zeros")
        layer(tf.zeros((1, 3)))
        opt = tf.keras.optimizers.SGD(learning_rate=0.1)

        @jit
        def step(x, y):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(layer(x) - y))
            grads = tape.gradient(loss, layer.trainable_variables)
            opt.apply_gradients(zip(grads, layer.trainable_variables))
            return loss

        return SimpleNamespace(fn=step, state=lambda: {
            "k": tf.convert_to_tensor(layer.kernel), "b": tf.convert_to_tensor(layer.bias),
            "it": tf.convert_to_tensor(opt.iterations)})

    calls = [(rnd((4, 3), i), rnd((4, 2), 50 + i)) for i in range(8)]
    check(make, calls)


def test_local_nonlocal_counter_in_nested_function():
    @case
    def f(x, n):
        count = 0
        acc = x

        def inc(t):
            nonlocal count, acc
            count += 1
            acc = acc + t
            return count

        for _ in range(n):
            inc(x)
        last = inc(x * 0.0)
        return acc * count, count, last

    calls = [(rnd((2,), i), n) for i, n in enumerate([2, 2, 2, 2, 3, 2, 0, 2, 2])]
    # Known gap, kept visible: nonlocal writes are not converted yet. It must still match eager.
    check(f, calls, eager_only=True)
