"""Programs Janus must not run as graphs: they fall back to eager and still match it.

(generators, coroutines, file I/O, unknown C extensions,
materialising tensors with .numpy(), custom __setattr__).
"""
import asyncio
import os
import tempfile
import zlib
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

from harness import case, check


def rnd(shape, seed, dtype=np.float32):
    return tf.constant(np.random.RandomState(seed).randn(*shape).astype(dtype))


# ---------------------------------------------------------------------------------------
def test_generator_function_falls_back():
    @case
    def gen(x, n):
        for i in range(n):
            yield x * float(i)
        yield tf.reduce_sum(x)

    def consume(x, n):
        return lambda p: list(p.fn(x, n))

    calls = [consume(rnd((3,), i), n) for i, n in enumerate([2, 2, 2, 2, 3, 2, 1, 2, 2])]
    calls.append(lambda p: type(p.fn(rnd((2,), 0), 1)).__name__)
    check(gen, calls, eager_only=True)


def test_generator_method_with_yield_from_falls_back():
    def make(jit):
        class Chunks:
            def __init__(self):
                self.size = 2

            @jit
            def chunks(self, x):
                n = int(x.shape[0])
                yield from (x[i:i + self.size] for i in range(0, n, self.size))

        c = Chunks()
        return SimpleNamespace(fn=c.chunks, c=c)

    calls = [(lambda p, i=i, n=n: list(p.fn(rnd((n,), i))))
             for i, n in enumerate([4, 4, 4, 4, 5, 3, 4, 6])]
    check(make, calls, eager_only=True)


def test_coroutine_function_falls_back():
    def make(jit):
        @jit
        async def f(x, k):
            await asyncio.sleep(0)
            return x * k

        return SimpleNamespace(fn=f)

    calls = [(lambda p, i=i, k=k: asyncio.run(p.fn(rnd((2,), i), k)))
             for i, k in enumerate([1.0, 1.0, 1.0, 1.0, 2.0, 1.0, 3.0])]
    check(make, calls, eager_only=True)


def test_try_except_converts_where_it_catches_python_errors():
    """The KeyError is caught while tracing, as eager catches it; the shape error of the matmul
    would be TensorFlow's graph-construction error, so those calls run eagerly."""
    @case
    def f(x, w, table, key):
        try:
            y = tf.matmul(x, w)
        except tf.errors.InvalidArgumentError:
            y = tf.zeros((x.shape[0], 1))
        try:
            k = table[key]
        except KeyError as e:
            k = len(str(e))
        return y * k

    table = {"a": 2.0}
    w = rnd((3, 2), 9)
    calls = [(rnd((2, 3), 0), w, table, "a"), (rnd((2, 3), 1), w, table, "a"),
             (rnd((2, 3), 2), w, table, "a"), (rnd((2, 3), 3), w, table, "a"),
             (rnd((2, 3), 4), rnd((4, 2), 5), table, "a"), (rnd((2, 3), 6), w, table, "zz"),
             (rnd((2, 3), 7), w, table, "a"), (rnd((2, 3), 8), rnd((5, 2), 9), table, "q")]
    check(f, calls, min_graph_calls=3)


def test_with_open_reading_a_file_rewritten_between_calls():
    def make(jit):
        fd, path = tempfile.mkstemp(prefix="janus_conv_fb_", suffix=".txt")
        os.close(fd)
        with open(path, "w") as fh:
            fh.write("2.0")

        @jit
        def f(x):
            with open(path) as fh:
                scale = float(fh.read())
            return x * scale

        return SimpleNamespace(fn=f, path=path)

    def write(val, x):
        def call(p):
            with open(p.path, "w") as fh:
                fh.write(val)
            return p.fn(x)
        return call

    x = rnd((3,), 0)
    calls = [(x,), (x,), (x,), (x,), write("3.5", x), (x,), write("-1", rnd((2,), 1)), (x,),
             write("2.0", x)]
    check(make, calls, eager_only=True)


def test_unknown_c_extension_on_tensor_bytes_falls_back():
    @case
    def f(x):
        h = zlib.crc32(x.numpy().tobytes()) % 97
        return x + float(h), h

    x = rnd((3,), 0)
    calls = [(x,), (x,), (x,), (x,), (rnd((3,), 1),), (x,), (rnd((4,), 2),), (x,)]
    check(f, calls, eager_only=True)


def test_numpy_materialisation_of_tensors_falls_back():
    @case
    def f(x):
        a = x.numpy()
        order = np.argsort(a)
        m = float(np.median(a))
        return tf.gather(x, order) - m, order.tolist()

    calls = [(rnd((5,), i),) for i in range(4)] + [(rnd((3,), 4),), (rnd((5,), 5),),
                                                   (rnd((6,), 6),), (rnd((5,), 7),)]
    check(f, calls, eager_only=True)


def test_custom_setattr_falls_back():
    def make(jit):
        class Logged:
            def __init__(self):
                object.__setattr__(self, "log", [])
                object.__setattr__(self, "value", tf.zeros((2,)))

            def __setattr__(self, name, val):
                self.log.append(name)
                object.__setattr__(self, name, val)

            @jit
            def step(self, x):
                self.value = self.value + x
                return self.value * 2.0

        o = Logged()
        return SimpleNamespace(fn=o.step, o=o,
                               state=lambda: {"log": list(o.log), "value": o.value})

    calls = [(rnd((2,), i),) for i in range(8)]
    check(make, calls, eager_only=True)


def test_seeded_keras_dropout_converts_and_matches_eager():
    """Keras 3 draws dropout masks from a seeded generator kept in a variable: graphs match eager."""
    def make(jit):
        layer = tf.keras.layers.Dropout(0.5, seed=7)

        @jit
        def drop(x):
            return layer(x, training=True)

        return SimpleNamespace(fn=drop)

    calls = [(rnd((4,), i),) for i in range(8)]
    check(make, calls, min_graph_calls=4)


def test_property_getter_gets_the_support_check():
    """A property read by the step whose getter uses a construct Janus does not convert
    makes the step run eagerly, with the reason (it used to skip the check)."""
    def make(jit):
        class Box:
            def __init__(self):
                self.values = [1.0, 2.0]

            @property
            def total(self):
                rest = list(self.values)
                if (first := rest[0]) is not None:  # := : a construct Janus does not convert
                    rest.remove(first)
                self.values.append(0.0)
                return sum(rest)

            @jit
            def step(self, x):
                return x * self.total

        b = Box()
        return SimpleNamespace(fn=b.step, state=lambda: {"values": list(b.values)})

    check(make, [(tf.constant([float(i)]),) for i in range(6)], eager_only=True)
