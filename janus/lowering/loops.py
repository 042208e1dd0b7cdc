"""Loops of converted code: the ``while`` and ``for`` statements, decided while tracing.

The converter rewrites each loop into :func:`while_stmt` / :func:`for_stmt` over nested
functions that take and return the variables the body modifies.  A loop runs in Python
while its test is a Python value (a ``for`` over a tensor of known length is unstacked);
on a tensor test it is unrolled when the profile lets its trip count be assumed
(asserted), else the rest of it becomes a ``tf.while_loop`` (``janus.lowering.while_loops``).
A ``for`` over a dataset becomes the dataset's own loop.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import tensorflow as tf

from janus import config
from janus.convert.sites import SiteInfo
from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.lowering import escapes
from janus.lowering.dunders import iterate, truth_operand
from janus.lowering.branches import if_stmt
from janus.lowering.checks import assertion, speculate_trips
from janus.lowering.constructs import no_cells, same_position
from janus.lowering.truth import is_tensor, to_bool, truth
from janus.lowering.while_loops import DRAW_IN_TEST, while_loop
from janus.trace.active import current
from janus.trace.values import PyScalar, is_symbolic


def _counted(count: int) -> int:
    """``count + 1``, failing the conversion past ``config.LIMITS.max_traced_iterations`` (the
    call then runs eagerly rather than unroll without end a loop that eager leaves by an
    exception the trace assumes away, or build a graph that large)."""
    if count >= config.LIMITS.max_traced_iterations:
        raise ConversionError(f"a loop ran {config.LIMITS.max_traced_iterations} iterations while tracing: "
                              "too many to unroll into a graph", code=Code.TRACE_TOO_LARGE)
    current().bounds.check_ops()
    return count + 1


def while_stmt(test: Callable, body: Callable, args: tuple, names: Sequence[str],
               site: SiteInfo | None = None, cells: Sequence[str] = ()) -> tuple:
    """``while test(*vars): vars = body(*vars)``; unrolled when the trip count is assumed."""
    state = tuple(args)
    count, assumed = 0, None
    seeds = current().seeds
    while True:
        before = seeds.position
        cond = truth_operand(test(*state))
        if is_tensor(cond):
            if assumed is None:
                assumed = speculate_trips(site)
                if assumed is None:
                    no_cells(cells, "while loop")
                    if not same_position(before, seeds.position):
                        raise ConversionError(DRAW_IN_TEST, code=Code.RANDOM)
                    with current().bounds.deciding(cond):
                        return escapes.in_graph(while_loop, lambda *s: truth_operand(test(*s)), body, state, names,
                                                "while loop")
            pred = to_bool(cond)
            if count >= assumed.value:
                assertion(tf.logical_not(pred), assumed.message, assumed)
                return state
            assertion(pred, assumed.message, assumed)
        elif not cond:
            return state
        state = tuple(body(*state))
        count = _counted(count)


def _unrolled(iterable: Any, assumed) -> list:
    """The items of a tensor-length iterable whose length is assumed (and asserted)."""
    n = assumed.value
    if isinstance(iterable, TensorRange):
        length = iterable.length()
        assertion(tf.equal(length, n), assumed.message, assumed)
        return [iterable.item(i) for i in range(n)]
    check = assertion(tf.equal(tf.shape(iterable)[0], n), assumed.message, assumed)
    # Indexing past a shorter length would fail too: only after the check, so that the run
    # aborts naming the assumption (and the graph that made it is retired).
    with tf.control_dependencies([check]):
        return [iterable[i] for i in range(n)]


class TensorRange:
    """``range(...)`` whose bounds are tensors: iterated by ``tf.while_loop``."""

    def __init__(self, *bounds: Any):
        if len(bounds) == 1:
            bounds = (0, bounds[0], 1)
        elif len(bounds) == 2:
            bounds = (bounds[0], bounds[1], 1)
        tensors = [b.tensor if isinstance(b, PyScalar) else b for b in bounds]
        if any(is_tensor(b) and not b.dtype.is_integer for b in tensors):
            raise ConversionError("range() of a non-integer tensor", code=Code.TENSOR_LOOP)
        self.bounds = bounds
        self.start, self.stop, self.step = (tf.cast(b, tf.int64) for b in tensors)

    def __iter__(self):
        raise ConversionError("range() over a value the graph computes, iterated in Python", code=Code.TENSOR_LOOP)

    def length(self) -> tf.Tensor:
        """``len(range(start, stop, step))``."""
        span = tf.where(self.step > 0, self.stop - self.start, self.start - self.stop)
        step = tf.abs(self.step)
        return tf.maximum(tf.constant(0, tf.int64), (span + step - 1) // step)

    def item(self, i: int) -> Any:
        """Item ``i``: a Python int when start and step are Python ints (then it is exact)."""
        start, _, step = self.bounds
        if type(start) is int and type(step) is int:
            return start + i * step
        return PyScalar(self.start + i * self.step, int)


def for_stmt(iterable: Any, extra_test: Callable | None, body: Callable, args: tuple, names: Sequence[str],
             site: SiteInfo | None = None, cells: Sequence[str] = ()) -> tuple:
    """``for item in iterable: vars = body(item, *vars)``, stopping when ``extra_test`` fails."""
    if is_symbolic(iterable) and iterable.shape.rank and iterable.shape[0] is not None:
        iterable = tf.unstack(iterable)  # its length is fixed by the shape guard: iterate in Python
    elif isinstance(iterable, TensorRange) or is_symbolic(iterable):
        assumed = speculate_trips(site)
        if assumed is not None:
            iterable = _unrolled(iterable, assumed)
    if isinstance(iterable, TensorRange) or is_tensor(iterable):
        no_cells(cells, "for loop")
        deciding = (iterable.start, iterable.stop, iterable.step) if isinstance(iterable, TensorRange) else ()
        with current().bounds.deciding(*deciding):
            return escapes.in_graph(_tensor_for, iterable, extra_test, body, tuple(args), names)
    if isinstance(iterable, (tf.data.Dataset, tf.data.Iterator, EnumeratedDataset)):
        no_cells(cells, "for loop over a dataset")
        return escapes.in_graph(_dataset_for, iterable, extra_test, body, tuple(args), names)
    state, count = tuple(args), 0
    for item in _items(iterable, names, lambda: state):
        count = _counted(count)
        if extra_test is not None:
            go = extra_test(*state)
            rest = _rest_of_range(iterable, item) if is_tensor(go) else None
            if rest is not None:
                no_cells(cells, "for loop")
                return escapes.in_graph(_tensor_for, rest, extra_test, body, state, names)
            if is_tensor(go):
                state = if_stmt(go, lambda *s, item=item: tuple(body(item, *s)), lambda *s: s, state, names,
                                cells=cells)
                continue
            if not go:
                break
        state = tuple(body(item, *state))
    return state


def _rest_of_range(iterable: Any, item: Any) -> "TensorRange | None":
    """The items of Python range ``iterable`` from ``item`` on, as a range a
    ``tf.while_loop`` iterates, when there are more than ``config.LIMITS.unrolled_break_items``."""
    if type(iterable) is not range or type(item) is not int:
        return None
    rest = range(item, iterable.stop, iterable.step)
    return TensorRange(rest.start, rest.stop, rest.step) if len(rest) > config.LIMITS.unrolled_break_items else None


def _items(iterable: Any, names: Sequence[str], state: Callable[[], tuple]):
    """The items of a Python iterable; an exception of the iteration itself (a generator
    raising) leaves the loop with its variables as the last block left them."""
    try:
        it = iterate(iterable)
    except BaseException as e:
        escapes.loop_left(e, names, state())
        raise
    while True:
        try:
            item = next(it)
        except StopIteration:
            return
        except BaseException as e:
            escapes.loop_left(e, names, state())
            raise
        yield item


def _tensor_for(iterable, extra_test, body, state, names):
    if isinstance(iterable, TensorRange):
        start, stop, step = iterable.start, iterable.stop, iterable.step

        def item_at(i):
            return PyScalar.of(i, int)
    else:
        if iterable.shape.rank == 0:
            raise TypeError("iteration over a 0-d tensor")
        start, stop, step = tf.constant(0, tf.int64), tf.cast(tf.shape(iterable)[0], tf.int64), tf.constant(1, tf.int64)

        def item_at(i):
            return tf.gather(iterable, i)

    def test(i, *s):
        more = tf.logical_or(tf.logical_and(step > 0, i < stop), tf.logical_and(step < 0, i > stop))
        if extra_test is None:
            return more
        return tf.logical_and(more, truth(extra_test(*s)))

    def step_body(i, *s):
        return (i + step,) + tuple(body(item_at(i), *s))

    out = while_loop(test, step_body, (start,) + state, ("<index>",) + tuple(names), "for loop")
    return out[1:]


class EnumeratedDataset:
    """``enumerate(dataset, start)`` in converted code: the index stays a Python int."""

    def __init__(self, dataset: Any, start: int = 0):
        self.dataset, self.start = dataset, start

    def __iter__(self):
        raise ConversionError("a dataset iterated other than by a for loop", code=Code.DATASET)


def _dataset_for(iterable, extra_test, body, state, names):
    """``for item in dataset`` as the dataset's own loop: one iterator, a ``tf.while_loop``
    that takes the next element while there is one and the loop did not break.

    As in eager, a new iterator is made for a dataset (an iterator made in the function is
    continued), and no element is taken after a ``break`` or ``return``.
    """
    enumerated = isinstance(iterable, EnumeratedDataset)
    start = iterable.start if enumerated else 0
    if enumerated:
        iterable = iterable.dataset
    iterator = iterable if isinstance(iterable, tf.data.Iterator) else iter(iterable)

    def test(more, index, *s):
        if extra_test is None:
            return more
        return tf.logical_and(more, truth(extra_test(*s)))

    def step(more, index, *s):
        element = iterator.get_next_as_optional()
        present = element.has_value()

        def run(*v):
            value = element.get_value()
            # taken only when present: it cannot fail (nor make the loop one that may fail after a write)
            current().checks.safe_ops.update(t.op for t in tf.nest.flatten(value, expand_composites=True))
            return tuple(body((index, value) if enumerated else value, *v))

        out = if_stmt(present, run, lambda *v: v, s, names)
        return (present, index + 1) + tuple(out)

    out = while_loop(test, step, (tf.constant(True), start) + state, ("<more>", "<index>") + tuple(names),
                     "for loop over a dataset")
    return out[2:]
