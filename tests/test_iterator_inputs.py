"""A ``tf.data`` iterator the function is given (an argument, or state such as ``self.it``):
fed to the graph through its type spec, its ``get_next`` in the graph taking the caller's
elements, in eager's order on every call, also when a run aborts.

Every program is run eagerly and through Janus on its own iterator over the same data;
after every call the harness compares results, exceptions, printed output and state, the
state including the element each iterator would give next (:func:`peek`, which puts the
iterator back).  Plain Python iterators and generators still run eagerly.
"""
import threading
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

import janus
from harness import check


def rows(n: int, width: int = 3) -> np.ndarray:
    return (np.arange(n * width, dtype=np.float32).reshape(n, width) % 7.0) - 2.0


def batches(n: int, batch: int = 2) -> tf.data.Dataset:
    return tf.data.Dataset.from_tensor_slices(rows(n)).batch(batch)


def numbers(values: list) -> tf.data.Dataset:
    return tf.data.Dataset.from_tensor_slices(tf.constant(values, tf.float32))


def peek(it) -> object:
    """The element ``it`` gives next (``"end"`` once it is exhausted), without taking it."""
    handle = tf.nest.flatten(it, expand_composites=True)[0]
    saved = tf.raw_ops.SerializeIterator(resource_handle=handle)
    try:
        return next(it)
    except StopIteration:
        return "end"
    finally:
        tf.raw_ops.DeserializeIterator(resource_handle=handle, serialized=saved)


def _explained(fn) -> str:
    return str(janus.explain(fn))


# -- fed, not consumed by a trace ---------------------------------------------------------
def test_an_iterator_argument_read_with_next_runs_one_graph():
    def make(jit):
        @jit
        def head(it, k):
            out = []
            for _ in range(k):
                out.append(next(it) * 2.0)
            return out

        p = SimpleNamespace(fn=head, it=iter(batches(60)))
        p.state = lambda: {"next": peek(p.it)}
        return p

    def fresh(n):
        def call(p):
            p.it = iter(batches(n))  # another epoch: a new iterator of the same element spec
            return p.fn(p.it, 2)
        return call

    calls = [lambda p: p.fn(p.it, 2) for _ in range(12)] + [fresh(12)] + [lambda p: p.fn(p.it, 2)] * 2
    total = check(make, calls, min_graph_calls=10)
    assert total["conversions"] == 1, total
    assert total["assertion_failures"] == 0, total


def test_an_iterator_in_state_feeds_a_training_step():
    features = rows(24) / 7.0
    labels = features @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.25
    data = tf.data.Dataset.from_tensor_slices((features, labels)).batch(4)

    def make(jit):
        class Trainer:
            def __init__(self):
                self.it = iter(data)
                self.w = tf.Variable(tf.zeros([3, 1]))
                self.opt = tf.keras.optimizers.SGD(0.1)
                self.losses = []

            @jit
            def step(self, scale):
                x, y = next(self.it)
                with tf.GradientTape() as tape:
                    loss = tf.reduce_mean((x @ self.w - y) ** 2)
                grads = tape.gradient(loss, [self.w])
                self.opt.apply_gradients(zip([g * scale for g in grads], [self.w]))
                self.losses.append(loss)
                return loss

        t = Trainer()

        def epoch(scale):
            t.it = iter(data)
            return t.step(scale)

        return SimpleNamespace(fn=t.step, epoch=epoch,
                               state=lambda: {"w": t.w, "losses": list(t.losses), "next": peek(t.it)})

    calls = [(tf.constant(s),) for s in [1.0, 0.5, 1.0, 0.8, 0.3, 1.0]]
    calls += [lambda p: p.epoch(tf.constant(0.7))] + [(tf.constant(s),) for s in [1.0, 0.9, 0.4]]
    total = check(make, calls, min_graph_calls=6)
    assert total["conversions"] == 1, total


def test_a_for_loop_consumes_the_iterator_up_to_its_break():
    def make(jit):
        @jit
        def until(it, limit):
            s = tf.zeros([3])
            seen = 0
            for x in it:
                if tf.reduce_sum(x) > limit:
                    break
                s += tf.reduce_sum(x, axis=0)
                seen += 1
            return s, seen

        p = SimpleNamespace(fn=until, it=iter(batches(30)))
        p.state = lambda: {"next": peek(p.it)}
        return p

    def fresh(n, limit):
        def call(p):
            p.it = iter(batches(n))
            next(p.it)  # the caller takes one element first
            return p.fn(p.it, tf.constant(limit))
        return call

    limits = [8.0, 9.0, 12.0, 7.0, 10.0, 100.0, 9.0]  # 100: to the end; then an exhausted iterator
    calls = [lambda p, lim=lim: p.fn(p.it, tf.constant(lim)) for lim in limits]
    calls += [fresh(12, 10.0), lambda p: p.fn(p.it, tf.constant(100.0)), fresh(9, 11.0)]
    total = check(make, calls, min_graph_calls=5)
    assert total["conversions"] == 1, total


# -- the end of the iterator ---------------------------------------------------------------
def test_reaching_the_end_raises_stop_iteration_after_the_writes_before_it():
    """``self.x = next(it); y = next(it)`` with one element left: eager sets ``self.x``, takes
    the element and raises StopIteration.  The graph's second ``get_next`` fails at run time,
    after the first took the element: the run is undone, and the eager re-run sees it again."""
    def make(jit):
        class Pairs:
            def __init__(self):
                self.it = iter(numbers([1.0, 2.0]))
                self.x = None

            @jit
            def take_two(self):
                self.x = next(self.it)
                y = next(self.it)
                return self.x + y

        p = Pairs()

        def restart(n):
            p.it = iter(numbers([float(i * i) for i in range(n)]))

        return SimpleNamespace(fn=p.take_two, restart=restart, state=lambda: {"x": p.x, "next": peek(p.it)})

    calls = []
    for n in [11, 7, 10, 5, 9]:
        calls += [lambda p, n=n: p.restart(n)] + [()] * (n // 2 + 2)
    total = check(make, calls, min_graph_calls=12)
    assert total["assertion_failures"] >= 4, total  # the graph met the end, and was undone where it took one


def test_one_next_and_variable_writes_need_no_undoing():
    """The only ``get_next`` of a graph runs before its variable writes (they wait for it):
    at the iterator's end it fails before any write, and the eager re-run makes eager's
    write before ``next`` raises.  Nothing may fail after it, so runs are not undone."""
    def make(jit):
        class Accumulator:
            def __init__(self):
                self.v = tf.Variable(0.0)
                self.it = iter(numbers([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]))

            @jit
            def add(self):
                self.v.assign_add(0.5)
                x = next(self.it)
                self.v.assign_add(x)
                return x * 2.0

        a = Accumulator()

        def restart(n):
            a.it = iter(numbers([float(i) for i in range(n)]))

        return SimpleNamespace(fn=a.add, restart=restart, state=lambda: {"v": a.v, "next": peek(a.it)})

    calls = [()] * 8 + [lambda p: p.restart(5)] + [()] * 7
    total = check(make, calls, min_graph_calls=6)
    assert total["assertion_failures"] >= 3, total  # the graph met the end
    prog = make(janus.function)
    for _ in range(6):
        prog.fn()
    assert "runs undoing" not in _explained(prog.fn)


def test_get_next_and_get_next_as_optional():
    """``it.get_next()`` past the end raises OutOfRangeError in eager; ``get_next_as_optional``
    never raises, a branch on its presence is a conditional (never assumed: it follows a
    state change)."""
    def make(jit):
        @jit
        def plain(it):
            return it.get_next() * 3.0

        @jit
        def optional(it, default):
            element = it.get_next_as_optional()
            if element.has_value():
                return element.get_value() * 2.0
            return default

        p = SimpleNamespace(fn=plain, optional=optional, it=iter(numbers([1.0, 2.0, 3.0, 4.0, 5.0])),
                            janus_fns=[plain, optional])
        p.state = lambda: {"next": peek(p.it)}
        return p

    def restart(values):
        def call(p):
            p.it = iter(numbers(values))
        return call

    calls = [lambda p: p.fn(p.it)] * 7 + [restart([6.0, 7.0, 8.0, 9.0, 10.0, 11.0])] + [lambda p: p.fn(p.it)] * 7
    calls += [restart([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])]
    calls += [lambda p: p.optional(p.it, tf.constant(-1.0))] * 9
    total = check(make, calls, min_graph_calls=8)
    assert total["assertion_failures"] >= 1, total


# -- aborted runs keep eager's element order ----------------------------------------------
def test_a_branch_on_an_element_is_not_speculated():
    """Profiled calls only take small elements; a large one comes later.  An assumption on
    an element's value would be checked after the element was taken (a state change): it is
    not made, the branch is a conditional, and no run aborts."""
    def make(jit):
        class Stream:
            def __init__(self):
                self.it = iter(numbers([1.0, 2.0, 3.0, 4.0, 2.0, 7.0, 1.0, 9.0, 2.0, 3.0, 8.0, 1.0]))
                self.log = []

            @jit
            def step(self, w):
                x = next(self.it)
                if x > 5.0:
                    self.log.append("big")
                    return x * w
                return x + w

        s = Stream()
        return SimpleNamespace(fn=s.step, state=lambda: {"log": list(s.log), "next": peek(s.it)})

    total = check(make, [(tf.constant(2.0),)] * 12, min_graph_calls=8)
    assert total["conversions"] == 1 and total["assertion_failures"] == 0, total
    prog = make(janus.function)
    for _ in range(5):
        prog.fn(tf.constant(2.0))
    assert "not speculated, checked after a state update" in _explained(prog.fn)


def test_a_failed_assumption_takes_no_element():
    """A branch on an argument is speculated; its assertion runs before the element is
    taken, so the run that fails it leaves the iterator where it was for the eager re-run."""
    def make(jit):
        @jit
        def scaled(it, w):
            x = next(it)
            if w > 0.0:
                return x * w
            return -x

        p = SimpleNamespace(fn=scaled, it=iter(batches(40)))
        p.state = lambda: {"next": peek(p.it)}
        return p

    weights = [1.0, 2.0, 0.5, 1.5, 3.0, -1.0, 2.0, 1.0, -2.0, 4.0, 1.0, 0.5]
    total = check(make, [lambda p, w=w: p.fn(p.it, tf.constant(w)) for w in weights], min_graph_calls=6)
    assert total["assumptions_failed"] >= 1, total


def test_an_op_failing_after_get_next_puts_the_element_back():
    """``check_numerics`` of ``t / x`` fails where an element is 0: the graph took the element
    before it failed; the iterator is put back, and the eager re-run takes the same element
    and raises."""
    def make(jit):
        @jit
        def inverse(it, t):
            x = next(it)
            return tf.debugging.check_numerics(t / x, "division by zero")

        values = [1.0, 2.0, 4.0, 0.0, 5.0, 8.0, 0.0, 0.0, 10.0, 2.0, 0.5, 0.0, 4.0]
        p = SimpleNamespace(fn=inverse, it=iter(numbers(values)))
        p.state = lambda: {"next": peek(p.it)}
        return p

    total = check(make, [lambda p: p.fn(p.it, tf.constant(1.0))] * 13, min_graph_calls=5)
    assert total["assertion_failures"] >= 3, total
    prog = make(janus.function)
    for _ in range(5):
        try:
            prog.fn(prog.it, tf.constant(1.0))
        except tf.errors.InvalidArgumentError:
            pass
    assert "runs undoing (CheckNumerics" in _explained(prog.fn)


def test_a_gather_out_of_range_after_a_variable_write_and_get_next():
    """An index taken from the iterator out of the table's range: eager raises after the
    counter's update; the graph's run is undone, the counter and the iterator put back."""
    def make(jit):
        class Lookup:
            def __init__(self):
                self.table = tf.constant([10.0, 20.0, 30.0, 40.0])
                self.count = tf.Variable(0)
                self.it = iter(tf.data.Dataset.from_tensor_slices([0, 3, 1, 2, 7, 2, 0, 9, 5, 1, 3]))

            @jit
            def look(self):
                self.count.assign_add(1)
                return tf.gather(self.table, next(self.it))

        t = Lookup()
        return SimpleNamespace(fn=t.look, state=lambda: {"count": t.count, "next": peek(t.it)})

    total = check(make, [()] * 11, min_graph_calls=4)
    assert total["assertion_failures"] >= 2, total


# -- which iterators share a graph ----------------------------------------------------------
def test_iterators_of_different_element_specs_get_their_own_graphs():
    def make(jit):
        @jit
        def doubled(it):
            return next(it) * 2

        p = SimpleNamespace(fn=doubled, ints=iter(tf.data.Dataset.range(100)), rows=iter(batches(60)))
        p.state = lambda: {"ints": peek(p.ints), "rows": peek(p.rows)}
        return p

    calls = [lambda p: p.fn(p.ints)] * 4 + [lambda p: p.fn(p.rows)] * 4
    calls += [lambda p: p.fn(p.ints), lambda p: p.fn(p.rows)] * 4
    calls += [lambda p: p.fn(iter(tf.data.Dataset.range(5, 10)))] * 2  # a new iterator, the same spec
    total = check(make, calls, min_graph_calls=8)
    assert total["conversions"] == 2, total


def test_one_iterator_given_twice_is_not_two():
    """``pair(a, b)`` traced with two iterators takes one element of each; given the same
    iterator twice, eager takes two elements of it in order: another graph."""
    def make(jit):
        @jit
        def pair(a, b):
            return next(a), next(b)

        p = SimpleNamespace(fn=pair, a=iter(tf.data.Dataset.range(100)), b=iter(tf.data.Dataset.range(100, 200)))
        p.state = lambda: {"a": peek(p.a), "b": peek(p.b)}
        return p

    calls = [lambda p: p.fn(p.a, p.b)] * 5 + [lambda p: p.fn(p.a, p.a)] * 5 + [lambda p: p.fn(p.b, p.a)] * 2
    total = check(make, calls, min_graph_calls=6)
    assert total["conversions"] == 2, total


# -- what still runs eagerly ------------------------------------------------------------------
def test_python_iterators_and_generators_run_eagerly():
    def make(jit):
        @jit
        def head(it):
            return next(it) * 2.0, next(it)

        def gen(n):
            for i in range(n):
                yield tf.constant(float(i))

        return SimpleNamespace(fn=head, gen=gen)

    calls = [lambda p, n=n: p.fn(iter([tf.constant(1.0 * n), tf.constant(2.0)])) for n in range(4)]
    calls += [lambda p, n=n: p.fn(p.gen(n + 2)) for n in range(4)]
    check(make, calls, eager_only=True)


def test_an_iterator_whose_position_cannot_be_saved_runs_eagerly_where_a_run_would_be_undone():
    """A ``map`` reading a variable: the iterator's state cannot be saved, so a graph that
    may fail after taking an element is not built; taking one element only needs no undo."""
    def make(jit):
        scale = tf.Variable(2.0)
        data = numbers([float(i) for i in range(40)]).map(lambda x: x * scale)

        @jit
        def two(it):
            return next(it) + next(it)

        @jit
        def one(it):
            return next(it) * 10.0

        p = SimpleNamespace(fn=two, one=one, it=iter(data), janus_fns=[two, one])
        p.state = lambda: {"next": peek(p.it)}
        return p

    check(make, [lambda p: p.fn(p.it)] * 6, eager_only=True)
    prog = make(janus.function)
    for _ in range(4):
        prog.fn(prog.it)
    assert "cannot be saved (ReadVariableOp is stateful.)" in _explained(prog.fn)
    total = check(make, [lambda p: p.one(p.it)] * 6, min_graph_calls=3)
    assert total["conversions"] == 1, total


def test_a_run_that_would_be_undone_waits_for_other_threads():
    """Undoing a run puts the iterator back: another thread could take an element meanwhile,
    so with another thread running such a graph's calls run eagerly (and say why)."""
    def make(jit):
        @jit
        def two(it):
            return next(it) - next(it)

        p = SimpleNamespace(fn=two, it=iter(numbers([float(i * i) for i in range(30)])))
        p.state = lambda: {"next": peek(p.it)}
        return p

    stop = threading.Event()
    other = threading.Thread(target=stop.wait)

    def start_other(p):
        if not other.is_alive():
            other.start()

    calls = [lambda p: p.fn(p.it)] * 6 + [start_other] + [lambda p: p.fn(p.it)] * 4
    try:
        total = check(make, calls, min_graph_calls=3)
    finally:
        stop.set()
        other.join()
    assert total["graph_calls"] == 3, total
