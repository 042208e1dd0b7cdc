"""The rest of a loop as one ``tf.while_loop``, traced again until its carried values settle.

Used by the ``while`` and ``for`` statements (``janus.lowering.loops``) when a loop's
test depends on a tensor and no trip count is assumed.  The loop is traced again when
a carried number becomes a tensor in the body, or when the body draws random numbers;
a ``return`` value the loop would be the first to set is carried as zeros of what a
thrown-away trace of the body returned.  Python numbers of state the body writes (an
attribute, item, global or closure variable) are carried too, found by a first trace
(``janus.lowering.branch_stores``), and committed once after the run with their final value.
"""
from __future__ import annotations

from typing import Callable, Sequence

import tensorflow as tf

from janus.lowering import branch_effects
from janus.trace import atomicity
from janus.errors import ConversionError, InternalSignal
from janus.reporting.codes import Code
from janus.lowering import branch_stores
from janus.lowering.branch_stores import LoopSink
from janus.lowering.constructs import body_writes_state, op_of
from janus.lowering.graph_lists import GraphList
from janus.lowering.reconcile import Number, as_union, join, number_or_tensor, split, union_kind
from janus.lowering.truth import is_tensor, truth
from janus.trace.aborts import first_line
from janus.trace.arrays import IslandArray, TensorValues
from janus.trace.active import current
from janus.trace.seeds import DrawInLoop
from janus.trace.values import UNDEF, PyScalar, is_symbolic
from janus.trace.scalars import PY_SCALARS, PyOrTensor

DRAW_IN_TEST = "the condition of a tensor-dependent loop draws random numbers"


def while_loop(test: Callable, body: Callable, state: tuple, names: Sequence[str], what: str) -> tuple:
    """Run the rest of a loop as ``tf.while_loop``.

    Carried values must be tensors, Python scalars (which become PyScalars, so a
    counter stays an ``int`` for Python) or lists whose length the graph computes
    (``janus.lowering.graph_lists``); each keeps its kind across iterations.  A
    Python number that the body turns into a tensor (``s = 0`` then ``s += x`` on some
    iterations) is carried as a :class:`PyOrTensor` from the start: the loop is traced
    again with it widened.  So is a body that draws random numbers, carrying the seeds'
    position, and one that writes Python state: the places it writes are carried.
    """
    ctx = current()
    state = _undefined_result_filled(body, tuple(state), names, what)
    init_values = []
    for name, value in zip(names, state):
        for leaf in tf.nest.flatten(value):
            if leaf is UNDEF:
                raise ConversionError(f"{what}: {name} is first assigned inside a tensor-dependent loop",
                                      code=Code.TENSOR_LOOP)
            if not is_tensor(leaf) and type(leaf) not in PY_SCALARS \
                    and not isinstance(leaf, (GraphList, IslandArray, TensorValues)):  # arrays: carried as tensors
                raise ConversionError(f"{what}: {name} holds a Python {type(leaf).__name__} across a tensor loop",
                                      code=Code.TENSOR_LOOP)
        init_values.append(tf.nest.map_structure(lambda v: PyScalar.of(v) if type(v) in PY_SCALARS else v, value))
    structure = tuple(init_values)
    start = len(ctx.checks.assertions)
    checkpoint = ctx.checkpoint()
    carry_seeds = False
    places: list = []
    attempts = 0
    while attempts < len(tf.nest.flatten(structure)) + 2:
        attempts += 1
        try:
            flat, writes = _loop_attempt(test, body, structure, names, what, carry_seeds, places)
            break
        except branch_stores.Carry as carry:  # the body writes state: trace it again, carrying it
            ctx.rollback(checkpoint)
            structure += tuple(branch_stores.loop_initial(place, what) for place in carry.places)
            places += carry.places
        except DrawInLoop:  # the body draws random numbers: trace it again, carrying the seed position
            if carry_seeds:
                raise
            ctx.rollback(checkpoint)
            carry_seeds = True
        except _Widen as widen:
            ctx.rollback(checkpoint)
            leaves = tf.nest.flatten(structure)
            for j, dtype in widen.dtypes.items():
                leaves[j] = as_union(leaves[j], leaves[j].kind, dtype)
            structure = tf.nest.pack_sequence_as(structure, leaves)
    else:
        raise ConversionError(f"{what}: the carried variables do not settle", code=Code.TENSOR_LOOP)
    ctx.checks.nested_assertions(start, lambda: op_of(flat))
    if writes:
        ctx.checks.writer_constructs.add(op_of(flat))
    leaves, kinds, _ = split(structure)
    values = tuple(join(structure, leaves, kinds, iter(flat)))
    n = len(values) - len(places)
    for place, value in zip(places, values[n:]):
        branch_stores.write(ctx, place, value, f"write of {place.label}")
        ctx.effect(place.effect(value), f"write of {place.label}")
    return values[:n]


class _Widen(ConversionError):
    """A carried Python number (flat index -> the tensor's dtype) became a tensor in the body."""

    code = Code.TENSOR_LOOP

    def __init__(self, dtypes: dict[int, tf.DType]):
        super().__init__("a carried Python number becomes a tensor in the loop")
        self.dtypes = dtypes


def _loop_attempt(test: Callable, body: Callable, structure: tuple, names: Sequence[str], what: str,
                  carry_seeds: bool, places: list) -> tuple[list, bool]:
    """One trace of the loop with the carried values ``structure`` (the variables, then the
    values of the ``places`` of Python state carried): its flat outputs, and whether the body
    changes a variable.  :class:`branch_stores.Carry` if the body writes other places."""
    leaves, kinds, init = split(structure)
    sink = LoopSink(places)
    n = len(structure) - len(places)

    def unpack(flat):
        values = join(structure, leaves, kinds, iter(flat))
        for place, value in zip(places, values[n:]):
            sink.hold(place, value)
        return values[:n]

    def cond(*flat):
        values = unpack(flat)
        sink.testing = True
        try:
            return truth(test(*values))
        finally:
            sink.testing = False

    def loop_body(*flat):
        out = tuple(body(*unpack(flat))) + tuple(place.raw() for place in places)
        if sink.new_places():
            raise branch_stores.Carry(sink.new_places())
        out = tuple(tf.nest.map_structure(lambda v: PyScalar.of(v) if type(v) in PY_SCALARS else v, out))
        try:
            tf.nest.assert_same_structure(out, structure)
        except (TypeError, ValueError):
            raise ConversionError(f"{what}: a carried variable changes structure", code=Code.TENSOR_LOOP) from None
        new = [as_union(o, leaf.kind, leaf.dtype) if isinstance(leaf, PyOrTensor) and number_or_tensor(o) else o
               for o, leaf in zip(tf.nest.flatten(out), leaves)]
        _, new_kinds, tensors = split(new)
        if new_kinds != kinds:
            widen = {j: o.dtype for j, (o, k) in enumerate(zip(new, kinds))
                     if isinstance(k, Number) and (is_symbolic(o) or isinstance(o, PyOrTensor))}
            if widen:
                for j in widen:
                    union_kind(leaves[j], new[j], what)  # only conversions eager makes
                raise _Widen(widen)
            raise ConversionError(f"{what}: a carried variable changes kind ({', '.join(names)})",
                                  code=Code.TENSOR_LOOP)
        writes[0] |= body_writes_state()
        return tensors

    writes = [False]
    flat = _traced_while(cond, loop_body, init, what, carry_seeds=carry_seeds, sink=sink)
    return flat, writes[0]


def _traced_while(cond: Callable, body: Callable, init: list, what: str, carry_seeds: bool,
                  sink: LoopSink) -> list:
    """``tf.while_loop(cond, body, init)`` as the loop's flat outputs.

    With ``carry_seeds`` the seed stream's position is one more loop variable, so each
    iteration's draws use the next seeds; without it a draw in the body raises
    :class:`DrawInLoop` (the caller retraces, carrying it).  ``sink`` takes the body's writes
    of Python state, undone after the trace.
    """
    ctx = current()
    seeds = ctx.seeds
    checks = ctx.checks
    fails = [False, False]  # may an op of the test, of the body fail at run time?

    def test(*flat):
        with seeds.forbidden(DRAW_IN_TEST):
            pred = cond(*(flat[:-1] if carry_seeds else flat))
        (pred,), fails[0] = atomicity.seal_body([pred], checks)
        return pred

    def step(*flat):
        if carry_seeds:
            seeds.position = flat[-1]
            out = list(body(*flat[:-1])) + [seeds.position_tensor()]
        else:
            out = list(body(*flat))
        writes = body_writes_state()
        if writes and fails[0]:
            checks.late_failures.append(f"{what}: its condition may fail at run time after a state update")
        out, fails[1] = atomicity.seal_body(out, checks, loop_writes=writes)
        return out

    if carry_seeds:
        init = list(init) + [seeds.position_tensor()]
    else:
        seeds.uncarried_loops += 1
    try:
        with branch_effects.tensor_dependent(ctx.log, sink):
            flat = tf.while_loop(test, step, init)
    except InternalSignal:  # Janus's own signals pass through
        raise
    except (TypeError, ValueError) as e:
        raise ConversionError(f"{what}: {first_line(e, 200)}", code=Code.TENSOR_LOOP) from None
    finally:
        branch_stores.undo(sink)
        if not carry_seeds:
            seeds.uncarried_loops -= 1
    flat = list(flat) if isinstance(flat, (list, tuple)) else [flat]
    if not any(fails):
        checks.safe_ops.add(op_of(flat))
    if carry_seeds:
        seeds.position = flat.pop()
    return flat


def _undefined_result_filled(body: Callable, state: tuple, names: Sequence[str], what: str) -> tuple:
    """``state`` with a ``return`` value the loop would be the first to set (``_jn_ret``
    still undefined) replaced by zeros of what the body returns.

    A ``tf.while_loop`` must carry a value from the start; the body is traced once on its
    own (into a graph that is thrown away, the trace context rolled back after it) to
    learn that value's kind and spec.  The zeros are never observed: the lowered code
    reads ``_jn_ret`` only where its ``_jn_done`` flag says a ``return`` ran.
    """
    names = list(names)
    if "_jn_ret" not in names or state[names.index("_jn_ret")] is not UNDEF:
        return state
    i = names.index("_jn_ret")
    ctx = current()
    checkpoint = ctx.checkpoint()
    found: dict = {}

    def probe():
        found["value"] = tuple(body(*state))[i]
        found["spec"] = tf.nest.map_structure(
            lambda v: _ScalarKind(v.kind) if isinstance(v, PyScalar)
            else tf.TensorSpec(v.shape, v.dtype) if is_symbolic(v) else v, found["value"])
        return []

    sink = LoopSink()
    try:
        with branch_effects.tensor_dependent(ctx.log, sink):
            tf.function(probe, autograph=False).get_concrete_function()
    except InternalSignal:  # Janus's own signals pass through
        raise
    except Exception as e:  # noqa: BLE001 - eager raises it (or not) for real
        raise ConversionError(f"{what}: {type(e).__name__}: {first_line(e, 200)}", code=Code.TENSOR_LOOP) from None
    finally:
        branch_stores.undo(sink)
        ctx.rollback(checkpoint)

    def zeros(spec):
        if isinstance(spec, _ScalarKind):
            return PyScalar.of(spec.kind(0), spec.kind)
        if isinstance(spec, tf.TensorSpec):
            if spec.shape.rank is None:
                raise ConversionError(f"{what}: a value returned from the loop has an unknown rank",
                                      code=Code.TENSOR_LOOP)
            return tf.zeros([d or 0 for d in spec.shape.as_list()], spec.dtype)
        if spec is UNDEF:
            raise ConversionError(f"{what}: _jn_ret is first assigned inside a tensor-dependent loop",
                                  code=Code.TENSOR_LOOP)
        return PyScalar.of(type(spec)(0), type(spec)) if type(spec) in PY_SCALARS else spec

    filled = list(state)
    filled[i] = tf.nest.map_structure(zeros, found["spec"])
    return tuple(filled)


class _ScalarKind:
    """The Python kind of a returned value the graph computes (a leaf for ``tf.nest``)."""

    __slots__ = ("kind",)

    def __init__(self, kind: type):
        self.kind = kind
