"""Wrong answers found on programs written by others, each pinned against eager.

Closures that read a variable the function rebinds (cells), composite values leaving
a graph, traces that must not touch real Python objects (iterators, sets), and
library calls that print from Python.
"""
import collections
import copy
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

import janus
from harness import case, check


COPY = copy.copy


def vec(values, dtype=tf.int32):
    return tf.constant(values, dtype)


# -- closures over rebound variables ----------------------------------------------------
def test_lambda_reads_the_loop_variable_it_closes_over():
    @case
    def scale_all(values):
        factor = 1
        bump = lambda: factor * 10  # noqa: E731 - the pattern under test
        out = 0
        for factor in values:
            out += bump()
        return out

    calls = [(vec([1, 2]),), (vec([3, 4]),), (vec([1, 2]),), (vec([5, 6]),), (vec([0, 7]),), (vec([2, 2]),)]
    total = check(scale_all, calls, min_graph_calls=3)
    assert total["conversions"] == 1, \
        f"values is always a length-2 tensor: the graph built at call 4 serves calls 4-6: {total}"


def test_nested_def_reads_a_variable_a_python_while_rebinds():
    @case
    def f(x, n):
        k = 0

        def scaled():
            return x * float(k)

        acc = tf.zeros_like(x)
        while k < n:
            k += 1
            acc = acc + scaled()
        return acc, k

    x = tf.constant([1.0, 2.0])
    calls = [(x, 3), (x * 2, 3), (x, 3), (x * 3, 3), (x, 3), (x + 1, 3)]
    total = check(f, calls, min_graph_calls=3)
    assert total["conversions"] == 1, \
        f"x keeps its shape and n stays 3: the graph built at call 4 serves calls 4-6: {total}"


def test_closures_made_in_a_loop_share_the_last_binding():
    @case
    def f(x):
        fns = []
        for i in range(3):
            fns.append(lambda: x * float(i))
        return [g() for g in fns]

    calls = [(tf.constant([float(i)]),) for i in range(6)]
    check(f, calls, min_graph_calls=3)


def test_closure_read_after_a_branch_rebinds_it():
    @case
    def f(x, flag):
        scale = 2.0
        get = lambda: scale  # noqa: E731
        if flag:
            scale = 3.0
        return x * get()

    x = tf.constant([1.0, 2.0])
    calls = [(x, True), (x, False), (x, True), (x + 1, True), (x, False), (x * 2, False)]
    check(f, calls, min_graph_calls=2)


def test_closure_rebound_inside_a_tensor_loop_runs_eagerly():
    """A tf.while_loop cannot rebind a cell: the function runs eagerly, with eager's result."""
    @case
    def f(x):
        factor = tf.constant(1)
        bump = lambda: factor * 10  # noqa: E731
        out = tf.constant(0)
        while tf.reduce_sum(x) > out:
            factor = factor + 1
            out = out + bump()
        return out, factor

    calls = [(vec([n, 3]),) for n in (5, 40, 2, 90, 17, 1, 33)]
    check(f, calls, eager_only=True)


# -- composite values leave the graph as values -----------------------------------------
def test_sparse_tensor_built_in_a_loop_is_returned_as_values():
    @case
    def f(x):
        s = tf.sparse.from_dense(tf.reshape(x, [2, 2]))
        for _ in tf.range(2):
            s = tf.sparse.add(s, tf.sparse.from_dense(tf.eye(2) * 2.0))
        return s

    calls = [(tf.constant([1.0, 0.0, 0.0, float(i)]),) for i in range(6)]
    total = check(f, calls, min_graph_calls=3)
    assert total["conversions"] == 1, f"x is always a 4-vector: the graph built at call 4 serves calls 4-6: {total}"


def test_ragged_tensor_result_and_state():
    def make(jit):
        class Model:
            def __init__(self):
                self.last = None

            @jit
            def step(self, values, lengths):
                r = tf.RaggedTensor.from_row_lengths(values * 2.0, lengths)
                self.last = r
                return r, tf.reduce_sum(r, axis=1)

        m = Model()
        return SimpleNamespace(fn=m.step, state=lambda: {"last": m.last})

    calls = [(tf.constant([1.0, 2.0, 3.0, float(i)]), tf.constant([1, 3], tf.int64)) for i in range(6)]
    total = check(make, calls, min_graph_calls=3)
    assert total["conversions"] == 1, \
        f"values and lengths keep their shapes: the graph built at call 4 serves calls 4-6: {total}"


# -- a trace never touches real Python objects ------------------------------------------
def test_iterator_arguments_are_not_consumed_by_a_conversion():
    @case
    def f(l1, l2):
        s = 0
        for i in l1:
            s = s * 10 + i
        for i in l2:
            s = s * 10 + i
        return s

    calls = [lambda p: p.fn(iter([1]), iter(tf.data.Dataset.range(0))) for _ in range(6)]
    calls += [lambda p: p.fn(iter([1, 2]), iter([3])) for _ in range(3)]
    check(f, calls, eager_only=True)


def test_set_in_state_is_not_mutated_by_a_failed_trace():
    """The trace mutates its copy of the set; the real one changes once, in the eager re-run."""
    def make(jit):
        class Tracker:
            def __init__(self):
                self.seen = {0}

            @jit
            def step(self, x, key):
                seen = self.seen
                seen.add(key + 1)
                seen.remove(key)
                _ = COPY(seen)  # copy.copy is not allow-listed: every trace fails after the mutation
                return x * float(len(seen))

        t = Tracker()
        return SimpleNamespace(fn=t.step, state=lambda: {"seen": sorted(t.seen)})

    x = tf.constant([1.0])
    check(make, [(x, key) for key in range(8)], eager_only=True)


def test_set_in_state_is_guarded_by_value():
    def make(jit):
        class Tracker:
            def __init__(self):
                self.seen = {0}

            @jit
            def step(self, x, key):
                seen = self.seen
                seen.add(key)
                return x * float(len(seen))

        t = Tracker()
        return SimpleNamespace(fn=t.step, state=lambda: {"seen": sorted(t.seen)})

    x = tf.constant([1.0])
    calls = [(x, 1), (x, 2), (x, 2), (x, 2), (x, 2), (x * 2, 2), (x, 3), (x, 3), (x, 3), (x, 4), (x * 3, 4)]
    check(make, calls, min_graph_calls=1)


# -- library code that prints from Python -----------------------------------------------
def test_autograph_trace_prints_at_every_call():
    @case
    def f(x):
        tf.autograph.trace(x)
        return x + 1

    calls = [(tf.constant(i),) for i in range(6)]
    check(f, calls, min_graph_calls=3)


def test_library_print_at_trace_time_makes_the_call_eager():
    """A library function that prints from Python would print once, while tracing."""
    def make(jit):
        model = tf.keras.Sequential([tf.keras.Input((2,)), tf.keras.layers.Dense(1, kernel_initializer="ones", name="out")],
                                    name="net")

        @jit
        def f(x):
            model.summary(print_fn=print)
            return model(x)

        return SimpleNamespace(fn=f)

    calls = [(tf.constant([[float(i), 1.0]]),) for i in range(5)]
    check(make, calls, eager_only=True)


def test_stats_and_code_of_a_cell_rebinding_function():
    def scale_all(values):
        factor = 1
        bump = lambda: factor * 10  # noqa: E731
        out = 0
        for factor in values:
            out += bump()
        return out

    jf = janus.function(scale_all)
    for _ in range(5):
        assert int(jf(vec([1, 2]))) == 30
    assert janus.stats(jf)["graph_calls"] == 2, \
        f"5 calls: 3 profiled (default profile_calls), calls 4-5 run the graph: {janus.stats(jf)}"
    assert "nonlocal factor" in janus.explain(jf).code
    assert np.array_equal(jf(vec([4, 1])).numpy(), scale_all(vec([4, 1])).numpy())


# -- writes to objects the trace does not track ------------------------------------------
def test_class_attribute_counter_is_not_written_while_tracing():
    """A class attribute write would outlive a failed run: the function runs eagerly."""
    def make(jit):
        class Counter:
            n = 0

        @jit
        def f(x):
            Counter.n += 1
            return x * float(Counter.n)

        return SimpleNamespace(fn=f, state=lambda: {"n": Counter.n})

    check(make, [(tf.constant([1.0, float(i)]),) for i in range(7)], eager_only=True)


# -- objects built inside the step ------------------------------------------------------
class Affine:
    def __init__(self, scale, shift=0.0):
        self.scale = scale
        self.shift = shift
        self.calls = 0

    def __call__(self, x):
        self.calls += 1
        return x * self.scale + self.shift

    @property
    def doubled(self):
        return self.scale * 2.0


@__import__("dataclasses").dataclass
class Stats:
    mean: tf.Tensor
    count: int = 0


def test_user_objects_built_and_used_inside_the_step():
    def make(jit):
        class Model:
            def __init__(self):
                self.last = None

            @jit
            def step(self, x, shift):
                layer = Affine(tf.reduce_mean(x), shift)
                y = layer(x) + layer.doubled
                y = layer(y)
                s = Stats(tf.reduce_mean(y), layer.calls)
                self.last = s
                return y, s, layer.calls

        m = Model()
        return SimpleNamespace(fn=m.step, state=lambda: {"last": None if m.last is None else vars(m.last)})

    calls = [(tf.constant([1.0, float(i), 2.0]), 0.5) for i in range(7)] + [(tf.constant([3.0, 1.0, 0.0]), 1.5)]
    total = check(make, calls, min_graph_calls=3)
    assert total["conversions"] <= 2, \
        f"shift is 0.5 until the last call: the graph built at call 4, and at most one more when shift becomes 1.5: {total}"


def test_returned_object_is_a_fresh_object_every_call():
    @case
    def f(x):
        return Affine(x, 1.0)

    jf = f(janus.function).fn
    objs = [jf(tf.constant([float(i)])) for i in range(6)]
    assert len({id(o) for o in objs}) == 6
    assert [float(o.scale[0]) for o in objs] == [float(i) for i in range(6)]
    assert janus.stats(jf)["graph_calls"] == 3, \
        f"6 calls: 3 profiled (default profile_calls), calls 4-6 run the graph: {janus.stats(jf)}"
    check(f, [(tf.constant([float(i)]),) for i in range(6)], min_graph_calls=3)


Pair = collections.namedtuple("Pair", ["low", "high"])


def test_named_tuples_built_inside_the_step():
    def make(jit):
        class Tracker:
            def __init__(self):
                self.best = None

            @jit
            def step(self, x, margin):
                Bounds = collections.namedtuple("Bounds", "low high")  # a new class at every call
                b = Bounds(tf.reduce_min(x) - margin, tf.reduce_max(x) + margin)
                width = b.high - b.low
                low, high = b
                self.best = Pair(low, high)  # a module-level named tuple leaves the step
                return Pair(width, b._replace(low=low * 2.0).low), len(b), b._fields

        t = Tracker()
        return SimpleNamespace(fn=t.step, state=lambda: {"best": t.best})

    calls = [(tf.constant([1.0, float(i), -2.0]), 0.5 * i) for i in range(6)]
    total = check(make, calls, min_graph_calls=3)
    assert total["conversions"] == 1, total  # the margin, a Python float that changed while profiling, is fed


def test_an_instance_of_a_class_made_inside_the_step_does_not_leave_a_graph():
    @case
    def f(x):
        Point = collections.namedtuple("Point", "x y")
        return Point(x, x + 1.0)

    janus.reset()
    jf = f(janus.function).fn
    results = [jf(tf.constant(float(i))) for i in range(5)]
    assert len({type(r) for r in results}) == 5  # eager's: a new class at every call
    assert [(float(r.x), float(r.y)) for r in results] == [(float(i), i + 1.0) for i in range(5)]
    assert janus.stats(jf)["graph_calls"] == 0, \
        f"a class made inside the function cannot leave a graph: every call runs eagerly: {janus.stats(jf)}"
    assert "made inside the function" in str(janus.explain(jf))


# -- the user's functions called by library code ----------------------------------------
class Tally:
    def __init__(self):
        self.calls = 0

    def double(self, x):
        self.calls += 1  # eager: once per element
        return x * 2.0


def scaled(x):
    return x * 3.0 + 1.0


def test_a_function_passed_to_the_library_keeps_its_effects_eager():
    """``tf.map_fn(tally.double, xs)``: the library calls the function in a graph of its
    own, as often as the graph decides; its state change must not happen once, at trace
    time (a wrong answer before). Such calls run eagerly; pure functions convert."""
    def make(jit):
        tally = Tally()

        @jit
        def counted(xs):
            return tf.map_fn(tally.double, xs)

        @jit
        def pure(xs, flag):
            ys = tf.map_fn(scaled, xs)
            return tf.cond(flag, lambda: ys * 2.0, lambda: ys - 1.0)

        return SimpleNamespace(fn=counted, pure=pure, janus_fns=[counted, pure], state=lambda: {"calls": tally.calls})

    counted_calls = [(tf.ones([n]) * n,) for n in range(1, 7)]
    check(make, counted_calls, eager_only=True)
    pure_calls = [lambda p, n=n: p.pure(tf.ones([n]) * n, tf.constant(n % 2 == 0)) for n in range(1, 8)]
    stats = check(make, pure_calls, min_graph_calls=3)
    assert stats["conversions"] <= 2, (
        "the pure function converts: one conversion after the 3 profiled calls, at most one more as the length of xs "
        f"changes, not one per call: {stats}"
    )


def test_effects_inside_an_explicit_tf_cond_branch_run_eagerly():
    def make(jit):
        log = []

        @jit
        def f(x):
            return tf.cond(x > 0, lambda: log.append(1) or x, lambda: -x)

        return SimpleNamespace(fn=f, state=lambda: {"log": list(log)})

    check(make, [(tf.constant(v),) for v in [1.0, -2.0, 3.0, -1.0, 2.0]], eager_only=True)
