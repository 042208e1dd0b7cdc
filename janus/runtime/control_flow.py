"""Control flow of converted code, decided while tracing.

The converter rewrites ``if``, ``while``, ``for``, conditional expressions,
``and``/``or``/``not`` and ``assert`` into calls of the functions below, with the
bodies turned into nested functions that take and return the variables they modify.
At trace time each operator looks at its condition:

* a Python value: the statement simply runs in Python (only the taken side is
  traced; the value it depended on was already guarded when it was read);
* a tensor: unless the profile lets it be speculated, the statement becomes a
  conditional (an ``If`` op, each side traced once: see :func:`_cond`) or a
  ``tf.while_loop`` (the conservative form).  Variables that must flow through the TF
  construct have to be tensors on every path; a Python value that would change kind
  (e.g. stay an ``int`` on one side and become a tensor on the other) makes the
  conversion fail, since eager would return different types.

Every assertion made here names an assumption (a speculation, or the run-time check
that a raising side is not taken), except the user's own ``assert``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import tensorflow as tf

from janus import _tf_private
from janus.commit import atomicity, branch_effects
from janus.commit.effects import When
from janus.convert.pipeline import is_converted_code
from janus.convert.sites import SiteInfo
from janus.errors import ConversionError, InternalSignal
from janus.trace.active import current
from janus.trace.seeds import DrawInLoop
from janus.trace.values import DTYPES, PY_SCALARS, UNDEF, PyOrTensor, PyScalar, is_symbolic
from janus_profiler import usercode


def _is_tensor(x: Any) -> bool:
    """A value the graph computes: a graph tensor or a Python scalar derived from one (or either)."""
    return is_symbolic(x) or isinstance(x, (PyScalar, PyOrTensor))


def to_bool(cond: Any) -> tf.Tensor:
    """The truth value of a scalar tensor, as eager's ``bool(t)`` computes it."""
    if isinstance(cond, PyScalar):
        cond = cond.tensor
    if isinstance(cond, PyOrTensor):  # the number's truth or the tensor's, as the path went
        number = tf.not_equal(cond.number, tf.zeros([], cond.number.dtype))
        return tf.where(cond.is_number, number, to_bool(cond.tensor))
    if cond.shape.rank is None or cond.shape.rank > 0 and cond.shape.num_elements() != 1:
        raise ConversionError("truth value of a non-scalar tensor")
    cond = tf.reshape(cond, [])
    if cond.dtype != tf.bool:
        cond = tf.not_equal(cond, tf.zeros([], cond.dtype))
    return cond


# -- branches ---------------------------------------------------------------------
def _no_cells(cells: Sequence[str], what: str) -> None:
    """A tensor-dependent construct cannot rebind a closure's cell: refuse the conversion."""
    if cells:
        raise ConversionError(f"{what}: {', '.join(cells)} is read by a closure and rebound inside "
                              f"tensor-dependent control flow")


def if_stmt(cond: Any, body: Callable, orelse: Callable, args: tuple, names: Sequence[str],
            site: SiteInfo | None = None, cells: Sequence[str] = ()) -> tuple:
    """``if cond: body else: orelse``; each side takes ``args`` and returns its outputs.

    ``cells``: variables closures read that the sides rebind (as ``nonlocal``).
    """
    if not _is_tensor(cond):
        return body(*args) if cond else orelse(*args)
    taken = _speculate_branch(cond, site)
    if taken is not None:
        return body(*args) if taken else orelse(*args)
    _no_cells(cells, "if")
    return _cond(to_bool(cond), lambda: body(*args), lambda: orelse(*args), names, "if", site)


def ifexp(cond: Any, if_true: Callable[[], Any], if_false: Callable[[], Any], site: SiteInfo | None = None) -> Any:
    """``if_true() if cond else if_false()``."""
    if not _is_tensor(cond):
        return if_true() if cond else if_false()
    taken = _speculate_branch(cond, site)
    if taken is not None:
        return if_true() if taken else if_false()
    return _cond(to_bool(cond), lambda: (if_true(),), lambda: (if_false(),), ("<expr>",), "conditional expression",
                 site)[0]


def and_(left: Any, right: Callable[[], Any]) -> Any:
    """``left and right()`` with Python's short circuit."""
    if not _is_tensor(left):
        return right() if left else left
    return _cond(to_bool(left), lambda: (right(),), lambda: (left,), ("<and>",), "and")[0]


def or_(left: Any, right: Callable[[], Any]) -> Any:
    """``left or right()`` with Python's short circuit."""
    if not _is_tensor(left):
        return left if left else right()
    return _cond(to_bool(left), lambda: (left,), lambda: (right(),), ("<or>",), "or")[0]


def test_and(left: Any, right: Callable[[], Any]) -> Any:
    """Truth of ``left and right()`` where only the truth is used (an ``if``/``while`` test)."""
    if not _is_tensor(left):
        return right() if left else False
    return _cond(to_bool(left), lambda: (_truth(right()),), lambda: (tf.constant(False),), ("<and>",), "and")[0]


def test_or(left: Any, right: Callable[[], Any]) -> Any:
    """Truth of ``left or right()`` where only the truth is used."""
    if not _is_tensor(left):
        return True if left else right()
    return _cond(to_bool(left), lambda: (tf.constant(True),), lambda: (_truth(right()),), ("<or>",), "or")[0]


def _truth(value: Any) -> tf.Tensor:
    return to_bool(value) if _is_tensor(value) else tf.constant(bool(value))


def not_(value: Any) -> Any:
    """``not value``; on a tensor, a boolean tensor that eager would have as a Python bool."""
    if not _is_tensor(value):
        return not value
    return PyScalar(tf.logical_not(to_bool(value)), bool)


@dataclass
class _Side:
    """One side of a tensor conditional, traced once into its own branch graph."""

    side: bool
    graph: Any = None
    out: tuple | None = None  # the side's values, one per name
    traced: list = field(default_factory=list)  # tensors the trace returned (the graph's outputs, in order)
    effects: list = field(default_factory=list)  # effects the side recorded
    writes: bool = False  # whether the side changes a variable
    fails: bool = False  # whether an op of the side may fail at run time
    raised: BaseException | None = None
    seed_position: Any = None  # the seed stream's position after the side (janus.trace.seeds)

    def carried(self) -> list[tf.Tensor]:
        """The graph values this side's effects need (carried out of the conditional)."""
        return branch_effects.graph_values(self.effects)


def _cond(pred: tf.Tensor, true_fn: Callable, false_fn: Callable, names: Sequence[str], what: str,
          site: SiteInfo | None = None) -> tuple:
    """``tf.cond`` over two sides that return a tuple of values (one per name in ``names``).

    Each side is traced exactly once, into its own branch graph, from the same trace
    context state (:meth:`TraceContext.checkpoint` / ``restore``).  Then the sides'
    outputs are matched by adding ops to the branch graphs: a Python scalar that differs
    between the sides becomes a :class:`PyScalar` (a constant on the side that had the
    number), a result only one side defines (``_jn_ret`` where the other has not
    returned) gets zeros of the other side's spec, effects inside a side are carried out
    of the conditional (zeros in their place on the other side).  The ``If`` op is built
    from the two graphs, as TensorFlow's ``cond_v2`` does.  A side that raises while
    tracing is speculated away: an assertion checks it is not taken.
    """
    ctx = current()
    start = len(ctx.checks.assertions)
    with _tf_private.cond_scope() as scope:
        ctx.log.dynamic_depth += 1
        try:
            before = ctx.checkpoint()
            t = _trace_side(true_fn, True, scope, what)
            if t.raised:
                ctx.rollback(before)  # a side that raised is thrown away: its checks too
            after_true = ctx.checkpoint()
            ctx.restore(before)  # the false side sees nothing the true side did
            f = _trace_side(false_fn, False, scope, what)
        finally:
            ctx.log.dynamic_depth -= 1
        if t.raised and f.raised:
            raise t.raised
        if f.raised:
            ctx.rollback(after_true)
        elif not t.raised:
            ctx.merge(after_true)  # what either side read (or changed by a deferred mutation)
        if t.raised or f.raised:
            return _not_raising(pred, t, f, scope, what, site, start)
        return _both_sides(pred, t, f, scope, names, what, start)


def _trace_side(fn: Callable, side: bool, scope: str, what: str) -> _Side:
    """Trace ``fn`` once into a branch graph; a side that raises is recorded, not traced further."""
    ctx = current()
    result = _Side(side)

    def body():
        ctx.log.sinks.append([])
        try:
            out = tuple(fn())
        except InternalSignal:  # Janus's own signals pass through
            raise
        except Exception as e:  # noqa: BLE001 - a raising side is speculated away by _cond
            result.raised = e
            raise
        finally:
            result.effects = ctx.log.sinks.pop()
        result.out = out
        result.seed_position = ctx.seeds.position
        result.writes = _body_writes_state()
        result.traced = _graph_tensors(out) + result.carried()
        return result.traced

    try:
        result.graph = _tf_private.branch_graph(body, scope, side)
    except InternalSignal:  # Janus's own signals pass through
        raise
    except Exception as e:  # noqa: BLE001
        if result.raised is None:
            raise ConversionError(f"{what}: {type(e).__name__}: {_first_line(e)}") from None
    return result


def _graph_tensors(out: tuple) -> list[tf.Tensor]:
    """The graph tensors among a side's values (also inside PyScalars)."""
    found = []
    for leaf in tf.nest.flatten(out, expand_composites=False):
        if isinstance(leaf, PyScalar):
            found.append(leaf.tensor)
        elif isinstance(leaf, PyOrTensor):
            found += leaf.parts()
        elif is_symbolic(leaf):
            found.append(leaf)
    return found


def _finish_side(s: _Side, fixes: dict, extra: Callable[[], list]) -> tuple[tuple, list, list]:
    """Make the side's values (reconciled by ``fixes``) and ``extra()`` the outputs of its
    branch graph, plus one constant (so the conditional always has an output to gate state
    on), computed only after every op of the side that may fail at run time.

    Runs in the branch graph, so the constants and zeros that reconciling creates are that
    side's ops.  Returns the reconciled values, their leaves and their kinds.
    """
    traced = {id(t): g for t, g in zip(s.traced, s.graph.outputs)}
    checks = current().checks
    with s.graph.as_default():
        out = _apply_fixes(s.out, fixes)
        leaves, kinds, tensors = _split(out)
        gate, s.fails = atomicity.seal_body([tf.constant(True)], checks)
        outputs = [traced.get(id(x), x) for x in tensors + extra()] + gate
    if any(getattr(x, "graph", None) is not s.graph for x in outputs):
        raise ConversionError("a value of one side of a tensor-dependent branch is not in its graph")
    _tf_private.set_branch_outputs(s.graph, outputs)
    return out, leaves, kinds


def _both_sides(pred, t: _Side, f: _Side, scope: str, names: Sequence[str], what: str, start: int) -> tuple:
    """Both sides traced: match their outputs and build the ``If`` op."""
    ctx = current()
    fixes = _fixes(t.out, f.out, names)
    carry = bool(t.effects or f.effects)
    specs = {s.side: [tf.TensorSpec(x.shape, x.dtype) for x in s.carried()] for s in (t, f)}
    draws_differ = not _same_position(t.seed_position, f.seed_position)

    def extra(s: _Side) -> Callable[[], list]:
        def make():  # the seed position if the sides draw differently; both sides' effect tensors
            position = [_position_tensor(s.seed_position)] if draws_differ else []
            if not carry:
                return position
            ours, theirs = s.carried(), branch_effects.zeros_like_specs(specs[not s.side])
            return position + (ours + theirs if s.side else theirs + ours)
        return make

    t_out, t_leaves, t_kinds = _finish_side(t, fixes, extra(t))
    f_out, f_leaves, f_kinds = _finish_side(f, fixes, extra(f))
    try:
        tf.nest.assert_same_structure(t_out, f_out, expand_composites=False)
    except (TypeError, ValueError):
        raise ConversionError(f"{what}: the two sides produce different structures for {', '.join(names)}") from None
    if t_kinds != f_kinds:
        raise ConversionError(f"{what}: a variable has a different kind on each side ({', '.join(names)})")
    for kind, a, b in zip(t_kinds, t_leaves, f_leaves):
        if kind == "py" and not _same_python(a, b):
            raise ConversionError(f"{what}: a Python value differs between the two sides ({a!r} vs {b!r})")
    outs = _build(pred, t, f, scope, what, start)
    if carry:
        n_t, n_f = len(specs[True]), len(specs[False])
        extra_outs = outs[len(outs) - n_t - n_f:]
        outs = outs[:len(outs) - n_t - n_f]
        for s, carried in ((t, extra_outs[:n_t]), (f, extra_outs[n_t:])):
            if s.effects:
                ctx.effect(When(pred, s.side, branch_effects.rebind(s.effects, carried)),
                           f"{what} side with effects")
    ctx.seeds.position = outs.pop() if draws_differ else t.seed_position
    return _join(t_out, t_leaves, t_kinds, iter(outs))


def _same_position(a: Any, b: Any) -> bool:
    """Both sides of a conditional leave the seed stream at the same position."""
    return a is b or isinstance(a, int) and isinstance(b, int) and a == b


def _position_tensor(position: Any) -> tf.Tensor:
    """A seed position as an int32 tensor of the graph being built (captured if outer)."""
    return tf.constant(position, tf.int32) if isinstance(position, int) else tf.identity(position)


def _not_raising(pred, t: _Side, f: _Side, scope: str, what: str, site: SiteInfo | None, start: int) -> tuple:
    """One side raised while tracing: assume (and assert) it is not taken; the other side's
    graph becomes the conditional with a side that only outputs zeros in its place."""
    ctx = current()
    live, dead = (f, t) if t.raised else (t, f)
    assumption = ctx.checks.check("not_raising", site, dead.side, where=what, detail=type(dead.raised).__name__)
    moved = not isinstance(live.seed_position, int)
    out, leaves, kinds = _finish_side(
        live, {}, lambda: ([_position_tensor(live.seed_position)] if moved else []) + live.carried())
    specs = [tf.TensorSpec(x.shape, x.dtype) for x in live.graph.outputs]
    dead.graph = _tf_private.branch_graph(lambda: branch_effects.zeros_like_specs(specs), scope, dead.side)
    assertion(tf.logical_not(pred) if dead.side else pred, assumption.message, assumption)
    n = sum(k != "py" for k in kinds)
    outs = _build(pred, t, f, scope, what, start)
    if moved:
        ctx.seeds.position = outs.pop(n)
    else:
        ctx.seeds.position = live.seed_position
    if live.effects:
        ctx.effect(When(pred, live.side, branch_effects.rebind(live.effects, outs[n:])),
                   f"{what} side with effects")
    return _join(out, leaves, kinds, iter(outs[:n]))


def _build(pred, t: _Side, f: _Side, scope: str, what: str, start: int) -> list:
    """The ``If`` op of the two finished sides: its outputs without the gating constant.

    Assertions made inside the sides since ``start`` are checked by the ``If`` op; it
    counts as a state writer when a side writes a variable.
    """
    ctx = current()
    try:
        outs = _tf_private.build_cond(pred, t.graph, f.graph, scope)
    except (TypeError, ValueError) as e:
        raise ConversionError(f"{what}: the two sides do not agree ({type(e).__name__}: {_first_line(e)})") from None
    construct = _op_of(outs)
    ctx.checks.nested_assertions(start, lambda: construct)
    if t.writes or f.writes:
        ctx.checks.writer_constructs.add(construct)
    if not (t.fails or f.fails):
        ctx.checks.safe_ops.add(construct)
    return outs[:-1]


def _op_of(outs: list) -> Any:
    """The op a TF construct's outputs come from (to gate state on assertions inside it)."""
    for t in outs:
        if isinstance(t, tf.Tensor):
            op = t.op
            while op.type == "Identity" and op.inputs:
                op = op.inputs[0].op
            return op
    if len(outs) == 1 and isinstance(outs[0], tf.Operation):
        return outs[0]
    raise ConversionError("a tensor-dependent construct without outputs")


def _kind(leaf: Any) -> Any:
    if isinstance(leaf, PyScalar):
        return leaf.kind
    if isinstance(leaf, PyOrTensor):
        return ("number or tensor", leaf.kind)
    if is_symbolic(leaf):
        return "tensor"
    if any(is_symbolic(t) for t in tf.nest.flatten(leaf, expand_composites=True)):
        raise ConversionError(f"a {type(leaf).__name__} the graph computes flows through tensor-dependent control flow")
    return "py"


def _split(values: Any) -> tuple[list, list, list]:
    """Leaves of ``values``, their kinds, and the tensors a TF construct must carry."""
    leaves = tf.nest.flatten(values, expand_composites=False)
    kinds = [_kind(x) for x in leaves]
    tensors = []
    for x, k in zip(leaves, kinds):
        if isinstance(x, PyOrTensor):
            tensors += x.parts()
        elif k != "py":
            tensors.append(x.tensor if isinstance(x, PyScalar) else x)
    return leaves, kinds, tensors


def _join(structure: Any, leaves: list, kinds: list, tensors) -> Any:
    """Rebuild ``structure`` with the carried tensors back in place (as PyScalars where they were)."""
    out = []
    for leaf, kind in zip(leaves, kinds):
        if kind == "py":
            out.append(leaf)
        elif kind == "tensor":
            out.append(next(tensors))
        elif isinstance(kind, tuple):
            number, tensor, is_number = next(tensors), next(tensors), next(tensors)
            out.append(PyOrTensor(number, kind[1], tensor, is_number))
        else:
            out.append(PyScalar(next(tensors), kind))
    return tf.nest.pack_sequence_as(structure, out, expand_composites=False)


def _body_writes_state() -> bool:
    """Whether the cond/loop body being traced (the default graph) changes a variable."""
    ctx = current()
    return atomicity.graph_writes_state(tf.compat.v1.get_default_graph(), ctx.checks.writer_constructs)


def _fixes(t_out: tuple, f_out: tuple, names: Sequence[str]) -> dict[int, Any]:
    """Differences between the sides that ops added to a side's graph can reconcile."""
    fixes: dict[int, Any] = {}
    for i, name in enumerate(names):
        a, b = t_out[i], f_out[i]
        ka, kb = _scalar_kind(a), _scalar_kind(b)
        if name == "_jn_ret" and (a is UNDEF) != (b is UNDEF):
            other = b if a is UNDEF else a
            fixes[i] = ("fill", tf.nest.map_structure(
                lambda x: tf.TensorSpec(x.shape, x.dtype) if is_symbolic(x) else x, other))
        elif ka is not None and ka == kb and (type(a) in PY_SCALARS or type(b) in PY_SCALARS) \
                and not (type(a) in PY_SCALARS and type(b) in PY_SCALARS and a == b):
            fixes[i] = ("scalar", ka)
        elif _number_or_tensor(a) and _number_or_tensor(b) and ((ka is None) != (kb is None) or _is_union(a, b)):
            fixes[i] = ("union",) + _union_kind(a, b, name)
    return fixes


def _number_or_tensor(x: Any) -> bool:
    return _scalar_kind(x) is not None or is_symbolic(x) or isinstance(x, PyOrTensor)


def _is_union(*values: Any) -> bool:
    return any(isinstance(x, PyOrTensor) for x in values)


def _union_kind(a: Any, b: Any, name: str) -> tuple[type, tf.DType]:
    """The Python kind and the tensor dtype of a variable that is a number on one side of a
    conditional and a tensor on the other (or already either)."""
    kinds = {k for k in (_scalar_kind(a), _scalar_kind(b)) if k is not None}
    kinds |= {x.kind for x in (a, b) if isinstance(x, PyOrTensor)}
    dtypes = {x.dtype for x in (a, b) if is_symbolic(x) or isinstance(x, PyOrTensor)}
    if len(kinds) != 1 or len(dtypes) != 1:
        raise ConversionError(f"{name} is a Python number on one side of a tensor-dependent branch and a tensor "
                              f"on the other, of kinds that do not convert ({kinds}, {dtypes})")
    (kind,), (dtype,) = kinds, dtypes
    if (kind is bool) != (dtype == tf.bool) or kind is float and not dtype.is_floating \
            or not (dtype.is_floating or dtype.is_integer or dtype == tf.bool):
        raise ConversionError(f"{name} is a Python {kind.__name__} on one side of a tensor-dependent branch and a "
                              f"{dtype.name} tensor on the other (eager would not convert one to the other)")
    return kind, dtype


def _as_union(x: Any, kind: type, dtype: tf.DType) -> PyOrTensor:
    """``x`` (a number, a tensor or already either) as a :class:`PyOrTensor`, in the current graph."""
    if isinstance(x, PyOrTensor):
        return x
    if is_symbolic(x):
        return PyOrTensor(tf.zeros([], DTYPES[kind]), kind, x, tf.constant(False))
    number = PyScalar.of(x, kind)
    if kind is int and dtype == tf.int32:
        tensor = number.__tf_tensor__()  # asserts the number fits, as eager's conversion needs
    else:
        tensor = tf.cast(number.tensor, dtype)
    return PyOrTensor(number.tensor, kind, tensor, tf.constant(True))


def _apply_fixes(out: tuple, fixes: dict[int, Any]) -> tuple:
    """A side's values, reconciled (in the side's graph): a Python scalar where the other side
    has a PyScalar or another number becomes a PyScalar; a missing result becomes zeros."""
    out = list(out)
    for i, fix in fixes.items():
        if fix[0] == "scalar" and type(out[i]) in PY_SCALARS:
            out[i] = PyScalar.of(out[i], fix[1])
        elif fix[0] == "union":
            out[i] = _as_union(out[i], fix[1], fix[2])
        elif fix[0] == "fill" and out[i] is UNDEF:
            out[i] = tf.nest.map_structure(
                lambda spec: tf.zeros([d or 0 for d in spec.shape.as_list()], spec.dtype)
                if isinstance(spec, tf.TensorSpec) else spec, fix[1])
    return tuple(out)


def _scalar_kind(x: Any) -> type | None:
    if isinstance(x, PyScalar):
        return x.kind
    if type(x) in PY_SCALARS:
        return type(x)
    return None


def _same_python(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return False


def _first_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return text[0][:200] if text else ""


# -- speculation ------------------------------------------------------------------
def _speculate_branch(cond: Any, site: SiteInfo | None) -> bool | None:
    """Assume the profiled outcome of a one-sided tensor branch, checked by an assertion."""
    ctx = current()
    value = ctx.checks.speculator.branch(site) if ctx is not None and ctx.checks.speculator is not None else None
    if value is None:
        return None
    assumption = ctx.checks.assume(site, "branch", value)
    pred = to_bool(cond)
    assertion(pred if value else tf.logical_not(pred), assumption.message, assumption)
    return value


def _speculate_trips(site: SiteInfo | None):
    """The assumed trip count of a tensor-dependent loop, or None."""
    ctx = current()
    n = ctx.checks.speculator.trips(site) if ctx is not None and ctx.checks.speculator is not None else None
    if n is None:
        return None
    return ctx.checks.assume(site, "trips", n)


# -- assertions -------------------------------------------------------------------
def assertion(pred: tf.Tensor, message: str, assumption: Any = None) -> Any:
    """An assertion op (returned) the graph run must pass; its failure makes Janus re-run eagerly.

    ``assumption`` is the speculation it checks (None for the user's own ``assert``).
    """
    return current().assert_that(pred, message, assumption)


USER_ASSERT_MESSAGE = "janus: assert statement failed"


def assert_(cond: Any, message: Callable[[], Any] | None = None) -> None:
    """The ``assert`` statement.

    On a tensor it is an assertion op without an assumption: when it fails, the run aborts
    (nothing is committed) and the eager re-run raises the ``AssertionError`` with the
    user's message.  Nothing was assumed, so the graph stays: it is right for every call
    whose assert holds.
    """
    if not _is_tensor(cond):
        if not cond:
            raise AssertionError(message()) if message is not None else AssertionError
        return
    assertion(to_bool(cond), USER_ASSERT_MESSAGE)


# -- exceptions -----------------------------------------------------------------------
_JANUS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def caught(error: BaseException) -> None:
    """At the top of every ``except`` handler of converted code: re-raise what it must not catch.

    Janus's own errors pass through (the conversion fails or retraces, as it would without
    the ``try``).  An exception raised inside library code while tracing (a shape error of a
    TF op, a Keras check) is a graph-construction error: eager raises another one, or
    none, at run time, so the conversion fails and the call runs eagerly.
    """
    if isinstance(error, InternalSignal):
        raise error
    tb = error.__traceback__
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not (is_converted_code(tb.tb_frame.f_code) or usercode.is_user_file(filename)
                or os.path.realpath(filename).startswith(_JANUS_DIR + os.sep)):
            raise ConversionError(f"an except clause catches {type(error).__name__} raised by library code while "
                                  f"the graph was built ({os.path.basename(filename)}); eager may raise another error")
        tb = tb.tb_next


# -- loops --------------------------------------------------------------------------
def while_stmt(test: Callable, body: Callable, args: tuple, names: Sequence[str],
               site: SiteInfo | None = None, cells: Sequence[str] = ()) -> tuple:
    """``while test(*vars): vars = body(*vars)``; unrolled when the trip count is assumed."""
    state = tuple(args)
    count, assumed = 0, None
    seeds = current().seeds
    while True:
        before = seeds.position
        cond = test(*state)
        if _is_tensor(cond):
            if assumed is None:
                assumed = _speculate_trips(site)
                if assumed is None:
                    _no_cells(cells, "while loop")
                    if not _same_position(before, seeds.position):
                        raise ConversionError(_DRAW_IN_TEST)
                    return _while_loop(test, body, state, names, "while loop")
            pred = to_bool(cond)
            if count >= assumed.value:
                assertion(tf.logical_not(pred), assumed.message, assumed)
                return state
            assertion(pred, assumed.message, assumed)
        elif not cond:
            return state
        state = tuple(body(*state))
        count += 1


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
        if any(_is_tensor(b) and not b.dtype.is_integer for b in tensors):
            raise ConversionError("range() of a non-integer tensor")
        self.bounds = bounds
        self.start, self.stop, self.step = (tf.cast(b, tf.int64) for b in tensors)

    def __iter__(self):
        raise ConversionError("range() over a value the graph computes, iterated in Python")

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
        assumed = _speculate_trips(site)
        if assumed is not None:
            iterable = _unrolled(iterable, assumed)
    if isinstance(iterable, TensorRange) or _is_tensor(iterable):
        _no_cells(cells, "for loop")
        return _tensor_for(iterable, extra_test, body, tuple(args), names)
    if isinstance(iterable, (tf.data.Dataset, tf.data.Iterator, EnumeratedDataset)):
        _no_cells(cells, "for loop over a dataset")
        return _dataset_for(iterable, extra_test, body, tuple(args), names)
    state = tuple(args)
    for item in iterable:
        if extra_test is not None:
            go = extra_test(*state)
            if _is_tensor(go):
                state = if_stmt(go, lambda *s, item=item: tuple(body(item, *s)), lambda *s: s, state, names,
                                cells=cells)
                continue
            if not go:
                break
        state = tuple(body(item, *state))
    return state


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
        return tf.logical_and(more, _as_bool_tensor(extra_test(*s)))

    def step_body(i, *s):
        return (i + step,) + tuple(body(item_at(i), *s))

    out = _while_loop(test, step_body, (start,) + state, ("<index>",) + tuple(names), "for loop")
    return out[1:]


class EnumeratedDataset:
    """``enumerate(dataset, start)`` in converted code: the index stays a Python int."""

    def __init__(self, dataset: Any, start: int = 0):
        self.dataset, self.start = dataset, start

    def __iter__(self):
        raise ConversionError("a dataset iterated other than by a for loop")


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
        return tf.logical_and(more, _as_bool_tensor(extra_test(*s)))

    def step(more, index, *s):
        element = iterator.get_next_as_optional()
        present = element.has_value()

        def run(*v):
            value = element.get_value()
            return tuple(body((index, value) if enumerated else value, *v))

        out = if_stmt(present, run, lambda *v: v, s, names)
        return (present, index + 1) + tuple(out)

    out = _while_loop(test, step, (tf.constant(True), start) + state, ("<more>", "<index>") + tuple(names),
                      "for loop over a dataset")
    return out[2:]


def _as_bool_tensor(x: Any) -> tf.Tensor:
    return to_bool(x) if _is_tensor(x) else tf.constant(bool(x))


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

    ctx.log.dynamic_depth += 1
    ctx.log.sinks.append(None)
    try:
        tf.function(probe, autograph=False).get_concrete_function()
    except InternalSignal:  # Janus's own signals pass through
        raise
    except Exception as e:  # noqa: BLE001 - eager raises it (or not) for real
        raise ConversionError(f"{what}: {type(e).__name__}: {_first_line(e)}") from None
    finally:
        ctx.log.dynamic_depth -= 1
        ctx.log.sinks.pop()
        ctx.rollback(checkpoint)

    def zeros(spec):
        if isinstance(spec, _ScalarKind):
            return PyScalar.of(spec.kind(0), spec.kind)
        if isinstance(spec, tf.TensorSpec):
            if spec.shape.rank is None:
                raise ConversionError(f"{what}: a value returned from the loop has an unknown rank")
            return tf.zeros([d or 0 for d in spec.shape.as_list()], spec.dtype)
        if spec is UNDEF:
            raise ConversionError(f"{what}: _jn_ret is first assigned inside a tensor-dependent loop")
        return PyScalar.of(type(spec)(0), type(spec)) if type(spec) in PY_SCALARS else spec

    filled = list(state)
    filled[i] = tf.nest.map_structure(zeros, found["spec"])
    return tuple(filled)


class _ScalarKind:
    """The Python kind of a returned value the graph computes (a leaf for ``tf.nest``)."""

    __slots__ = ("kind",)

    def __init__(self, kind: type):
        self.kind = kind


_DRAW_IN_TEST = "the condition of a tensor-dependent loop draws random numbers"


def _traced_while(cond: Callable, body: Callable, init: list, what: str, carry_seeds: bool) -> list:
    """``tf.while_loop(cond, body, init)`` as the loop's flat outputs.

    With ``carry_seeds`` the seed stream's position is one more loop variable, so each
    iteration's draws use the next seeds; without it a draw in the body raises
    :class:`DrawInLoop` (the caller retraces, carrying it).
    """
    ctx = current()
    seeds = ctx.seeds
    checks = ctx.checks
    fails = [False, False]  # may an op of the test, of the body fail at run time?

    def test(*flat):
        with seeds.forbidden(_DRAW_IN_TEST):
            pred = cond(*(flat[:-1] if carry_seeds else flat))
        (pred,), fails[0] = atomicity.seal_body([pred], checks)
        return pred

    def step(*flat):
        if carry_seeds:
            seeds.position = flat[-1]
            out = list(body(*flat[:-1])) + [seeds.position_tensor()]
        else:
            out = list(body(*flat))
        writes = _body_writes_state()
        if writes and fails[0]:
            checks.late_failures.append(f"{what}: its condition may fail at run time after a state update")
        out, fails[1] = atomicity.seal_body(out, checks, loop_writes=writes)
        return out

    if carry_seeds:
        init = list(init) + [seeds.position_tensor()]
    else:
        seeds.uncarried_loops += 1
    ctx.log.dynamic_depth += 1
    ctx.log.sinks.append(None)
    try:
        flat = tf.while_loop(test, step, init)
    except InternalSignal:  # Janus's own signals pass through
        raise
    except (TypeError, ValueError) as e:
        raise ConversionError(f"{what}: {_first_line(e)}") from None
    finally:
        ctx.log.dynamic_depth -= 1
        ctx.log.sinks.pop()
        if not carry_seeds:
            seeds.uncarried_loops -= 1
    flat = list(flat) if isinstance(flat, (list, tuple)) else [flat]
    if not any(fails):
        checks.safe_ops.add(_op_of(flat))
    if carry_seeds:
        seeds.position = flat.pop()
    return flat


def _while_loop(test: Callable, body: Callable, state: tuple, names: Sequence[str], what: str) -> tuple:
    """Run the rest of a loop as ``tf.while_loop``.

    Carried values must be tensors or Python scalars (which become PyScalars, so a
    counter stays an ``int`` for Python); each keeps its kind across iterations.  A
    Python number that the body turns into a tensor (``s = 0`` then ``s += x`` on some
    iterations) is carried as a :class:`PyOrTensor` from the start: the loop is traced
    again with it widened.  So is a body that draws random numbers, carrying the seeds'
    position.
    """
    ctx = current()
    state = _undefined_result_filled(body, tuple(state), names, what)
    init_values = []
    for name, value in zip(names, state):
        for leaf in tf.nest.flatten(value):
            if leaf is UNDEF:
                raise ConversionError(f"{what}: {name} is first assigned inside a tensor-dependent loop")
            if not _is_tensor(leaf) and type(leaf) not in PY_SCALARS:
                raise ConversionError(f"{what}: {name} holds a Python {type(leaf).__name__} across a tensor loop")
        init_values.append(tf.nest.map_structure(lambda v: PyScalar.of(v) if type(v) in PY_SCALARS else v, value))
    structure = tuple(init_values)
    start = len(ctx.checks.assertions)
    checkpoint = ctx.checkpoint()
    carry_seeds = False
    for _ in range(len(tf.nest.flatten(structure)) + 2):
        try:
            flat, writes = _loop_attempt(test, body, structure, names, what, carry_seeds)
            break
        except DrawInLoop:  # the body draws random numbers: trace it again, carrying the seed position
            if carry_seeds:
                raise
            ctx.rollback(checkpoint)
            carry_seeds = True
        except _Widen as widen:
            ctx.rollback(checkpoint)
            leaves = tf.nest.flatten(structure)
            for j, dtype in widen.dtypes.items():
                leaves[j] = _as_union(leaves[j], leaves[j].kind, dtype)
            structure = tf.nest.pack_sequence_as(structure, leaves)
    else:
        raise ConversionError(f"{what}: the carried variables do not settle")
    ctx.checks.nested_assertions(start, lambda: _op_of(flat))
    if writes:
        ctx.checks.writer_constructs.add(_op_of(flat))
    leaves, kinds, _ = _split(structure)
    return tuple(_join(structure, leaves, kinds, iter(flat)))


class _Widen(ConversionError):
    """A carried Python number (flat index -> the tensor's dtype) became a tensor in the body."""

    def __init__(self, dtypes: dict[int, tf.DType]):
        super().__init__("a carried Python number becomes a tensor in the loop")
        self.dtypes = dtypes


def _loop_attempt(test: Callable, body: Callable, structure: tuple, names: Sequence[str], what: str,
                  carry_seeds: bool) -> tuple[list, bool]:
    """One trace of the loop with the carried values ``structure``: its flat outputs, and
    whether the body changes a variable."""
    leaves, kinds, init = _split(structure)

    def unpack(flat):
        return _join(structure, leaves, kinds, iter(flat))

    def cond(*flat):
        return _as_bool_tensor(test(*unpack(flat)))

    def loop_body(*flat):
        out = tuple(tf.nest.map_structure(lambda v: PyScalar.of(v) if type(v) in PY_SCALARS else v,
                                          tuple(body(*unpack(flat)))))
        try:
            tf.nest.assert_same_structure(out, structure)
        except (TypeError, ValueError):
            raise ConversionError(f"{what}: a carried variable changes structure") from None
        new = [_as_union(o, leaf.kind, leaf.dtype) if isinstance(leaf, PyOrTensor) and _number_or_tensor(o) else o
               for o, leaf in zip(tf.nest.flatten(out), leaves)]
        _, new_kinds, tensors = _split(new)
        if new_kinds != kinds:
            widen = {j: o.dtype for j, (o, k) in enumerate(zip(new, kinds))
                     if k in PY_SCALARS and (is_symbolic(o) or isinstance(o, PyOrTensor))}
            if widen:
                for j in widen:
                    _union_kind(leaves[j], new[j], what)  # only conversions eager makes
                raise _Widen(widen)
            raise ConversionError(f"{what}: a carried variable changes kind ({', '.join(names)})")
        writes[0] |= _body_writes_state()
        return tensors

    writes = [False]
    flat = _traced_while(cond, loop_body, init, what, carry_seeds=carry_seeds)
    return flat, writes[0]
