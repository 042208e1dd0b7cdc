"""Branches of converted code: ``if``, conditional expressions, ``and``/``or``/``not``.

The converter rewrites them into calls of the functions below, with the sides turned
into nested functions that take and return the variables they modify.  At trace time
each looks at its condition:

* a Python value: only the taken side runs, in Python (the value it depended on was
  already guarded when it was read);
* a tensor: unless the profile lets it be speculated (``checks.speculate_branch``),
  the branch becomes a conditional, an ``If`` op with each side traced once
  (:func:`_cond`).  What the sides give must agree (``janus.lowering.reconcile``),
  Python state they write included (``janus.lowering.branch_stores``); a side that raises
  while tracing is assumed not taken, and checked.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import tensorflow as tf

from janus import _tf_private
from janus.lowering import branch_effects
from janus.trace import atomicity, speculation
from janus.lowering.branch_effects import BranchSink
from janus.commit.effects import When
from janus.convert.sites import SiteInfo
from janus.errors import ConversionError, InternalSignal
from janus.reporting.codes import Code
from janus.lowering import branch_stores, escapes
from janus.lowering.dunders import truth_operand
from janus.lowering.checks import assertion, speculate_branch
from janus.lowering.constructs import body_writes_state, no_cells, op_of, same_position
from janus.lowering.graph_lists import GraphList
from janus.lowering.reconcile import Plain, apply_fixes, fixes, join, same_python, split
from janus.lowering.truth import is_tensor, known_truth, to_bool, truth
from janus.trace.aborts import first_line
from janus.trace.active import current
from janus.trace.scalars import PyOrTensor
from janus.trace.values import PyScalar, is_symbolic


def if_stmt(cond: Any, body: Callable, orelse: Callable, args: tuple, names: Sequence[str],
            site: SiteInfo | None = None, cells: Sequence[str] = (), lists: Sequence[str] = ()) -> tuple:
    """``if cond: body else: orelse``; each side takes ``args`` and returns its outputs.

    ``cells``: variables closures read that the sides rebind (as ``nonlocal``); ``lists``:
    the outputs that are own lists (``janus.lowering.graph_lists``).
    """
    cond = truth_operand(cond)
    if not is_tensor(cond):
        return body(*args) if cond else orelse(*args)
    taken = _decided(cond, site)
    if taken is not None:
        return body(*args) if taken else orelse(*args)
    no_cells(cells, "if")
    return escapes.in_graph(_cond, to_bool(cond), lambda: body(*args), lambda: orelse(*args), names, "if", site,
                            lists)


def _decided(cond: Any, site: SiteInfo | None) -> bool | None:
    """The side of a tensor test the trace takes in Python: the test's known value, else the
    profile's only outcome (checked by an assertion); None: a conditional in the graph."""
    known = known_truth(cond)
    return known if known is not None else speculate_branch(cond, site)


def ifexp(cond: Any, if_true: Callable[[], Any], if_false: Callable[[], Any], site: SiteInfo | None = None) -> Any:
    """``if_true() if cond else if_false()``."""
    cond = truth_operand(cond)
    if not is_tensor(cond):
        return if_true() if cond else if_false()
    taken = _decided(cond, site)
    if taken is not None:
        return if_true() if taken else if_false()
    return _cond(to_bool(cond), lambda: (if_true(),), lambda: (if_false(),), ("<expr>",), "conditional expression",
                 site)[0]


def and_(left: Any, right: Callable[[], Any]) -> Any:
    """``left and right()`` with Python's short circuit."""
    test = truth_operand(left)
    if not is_tensor(test):
        return right() if test else left
    if test is not left:
        raise ConversionError("`and` of an object whose truth the graph computes", code=Code.TENSOR_BRANCH)
    known = known_truth(left)
    if known is not None:
        return right() if known else left
    return _cond(to_bool(left), lambda: (right(),), lambda: (left,), ("<and>",), "and")[0]


def or_(left: Any, right: Callable[[], Any]) -> Any:
    """``left or right()`` with Python's short circuit."""
    test = truth_operand(left)
    if not is_tensor(test):
        return left if test else right()
    if test is not left:
        raise ConversionError("`or` of an object whose truth the graph computes", code=Code.TENSOR_BRANCH)
    known = known_truth(left)
    if known is not None:
        return left if known else right()
    return _cond(to_bool(left), lambda: (left,), lambda: (right(),), ("<or>",), "or")[0]


def test_and(left: Any, right: Callable[[], Any]) -> Any:
    """Truth of ``left and right()`` where only the truth is used (an ``if``/``while`` test)."""
    left = truth_operand(left)
    if not is_tensor(left):
        return right() if left else False
    known = known_truth(left)
    if known is not None:
        return right() if known else False
    return _cond(to_bool(left), lambda: (truth(right()),), lambda: (tf.constant(False),), ("<and>",), "and")[0]


def test_or(left: Any, right: Callable[[], Any]) -> Any:
    """Truth of ``left or right()`` where only the truth is used."""
    left = truth_operand(left)
    if not is_tensor(left):
        return True if left else right()
    known = known_truth(left)
    if known is not None:
        return True if known else right()
    return _cond(to_bool(left), lambda: (tf.constant(True),), lambda: (truth(right()),), ("<or>",), "or")[0]


def not_(value: Any) -> Any:
    """``not value``; on a tensor, a boolean tensor that eager would have as a Python bool."""
    value = truth_operand(value)
    if not is_tensor(value):
        return not value
    known = known_truth(value)
    if known is not None:
        return not known
    return PyScalar(tf.logical_not(to_bool(value)), bool)


@dataclass
class _Side:
    """One side of a tensor conditional, traced once into its own branch graph."""

    side: bool
    graph: Any = None
    out: tuple | None = None  # the side's values, one per name
    traced: list = field(default_factory=list)  # tensors the trace returned (the graph's outputs, in order)
    effects: BranchSink = field(default_factory=BranchSink)  # effects and writes of state the side recorded
    writes: bool = False  # whether the side changes a variable
    fails: bool = False  # whether an op of the side may fail at run time
    raised: BaseException | None = None
    seed_position: Any = None  # the seed stream's position after the side (janus.trace.seeds)

    def carried(self) -> list[tf.Tensor]:
        """The graph values this side's effects need (carried out of the conditional)."""
        return branch_effects.graph_values(self.effects)


def _cond(pred: tf.Tensor, true_fn: Callable, false_fn: Callable, names: Sequence[str], what: str,
          site: SiteInfo | None = None, lists: Sequence[str] = ()) -> tuple:
    """``tf.cond`` over two sides that return a tuple of values (one per name in ``names``).

    Each side is traced exactly once, into its own branch graph, from the same trace
    context state (:meth:`TraceContext.checkpoint` / ``restore``).  Then the sides'
    outputs are matched by adding ops to the branch graphs: a Python scalar that differs
    between the sides becomes a :class:`PyScalar` (a constant on the side that had the
    number), a result only one side defines (``_jn_ret`` where the other has not
    returned) gets zeros of the other side's spec, effects inside a side are carried out
    of the conditional (zeros in their place on the other side).  The ``If`` op is built
    from the two graphs, as TensorFlow's ``cond_v2`` does.  A side that raises while
    tracing is speculated away: an assertion checks it is not taken.  Places of Python
    state a side wrote are outputs too, and hold them after the conditional (``branch_stores``).
    """
    ctx = current()
    start = len(ctx.checks.assertions)
    with _tf_private.cond_scope() as scope, ctx.bounds.deciding(pred):
        before = ctx.checkpoint()
        t = _trace_side(true_fn, True, scope, what)
        if t.raised:
            ctx.rollback(before)  # a side that raised is thrown away: its checks too
        after_true = ctx.checkpoint()
        ctx.restore(before)  # the false side sees nothing the true side did
        f = _trace_side(false_fn, False, scope, what)
        if t.raised and f.raised:
            raise t.raised
        if f.raised:
            ctx.rollback(after_true)
        elif not t.raised:
            ctx.merge(after_true)  # what either side read (or changed by a deferred mutation)
        sides = [s for s in (t, f) if not s.raised]
        joined = branch_stores.pair({s.side: s.effects for s in sides})
        for s in sides:
            s.out += joined.values[s.side]
        if t.raised or f.raised:
            out = _not_raising(pred, t, f, scope, what, site, start)
        else:
            out = _both_sides(pred, t, f, scope, tuple(names) + joined.labels, what, start, lists)
        joined.settle(ctx, out[len(out) - len(joined.places):])
        out = out[:len(out) - len(joined.places)]
        for name, value in zip(names, out):
            if name in lists:  # a new list the join made: the body around may change it
                ctx.log.own(value)
        return out


def _trace_side(fn: Callable, side: bool, scope: str, what: str) -> _Side:
    """Trace ``fn`` once into a branch graph; a side that raises is recorded, not traced further."""
    ctx = current()
    result = _Side(side)

    def body():
        with branch_effects.tensor_dependent(ctx.log, result.effects):
            try:
                out = tuple(fn())
            except InternalSignal:  # Janus's own signals pass through
                raise
            except Exception as e:  # noqa: BLE001 - a raising side is speculated away by _cond
                result.raised = e
                raise
        result.out = out
        branch_stores.close(result.effects)
        result.seed_position = ctx.seeds.position
        result.writes = body_writes_state()
        result.traced = _graph_tensors(out) + result.carried()
        return result.traced

    try:
        result.graph = _tf_private.branch_graph(body, scope, side)
    except InternalSignal:  # Janus's own signals pass through
        raise
    except Exception as e:  # noqa: BLE001
        if result.raised is None:
            raise ConversionError(f"{what}: {type(e).__name__}: {first_line(e, 200)}",
                                  code=Code.TENSOR_BRANCH) from None
    finally:
        branch_stores.undo(result.effects)
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


def _finish_side(s: _Side, side_fixes: dict, extra: Callable[[], list]) -> tuple[tuple, list, list]:
    """Make the side's values (reconciled by ``side_fixes``) and ``extra()`` the outputs of its
    branch graph, plus one constant (so the conditional always has an output to gate state
    on), computed only after every op of the side that may fail at run time.

    Runs in the branch graph, so the constants and zeros that reconciling creates are that
    side's ops.  Returns the reconciled values, their leaves and their kinds.
    """
    traced = {id(t): g for t, g in zip(s.traced, s.graph.outputs)}
    checks = current().checks
    with s.graph.as_default():
        out = apply_fixes(s.out, side_fixes)
        leaves, kinds, tensors = split(out)
        gate, s.fails = atomicity.seal_body([tf.constant(True)], checks)
        outputs = [traced[id(x)] if id(x) in traced else _captured(s.graph, x) for x in tensors + extra()] + gate
    if any(getattr(x, "graph", None) is not s.graph for x in outputs):
        raise ConversionError("a value of one side of a tensor-dependent branch is not in its graph",
                              code=Code.TENSOR_BRANCH)
    _tf_private.set_branch_outputs(s.graph, outputs)
    return out, leaves, kinds


def _captured(graph: Any, x: Any) -> Any:
    """``x`` as a value of the branch graph ``graph``: a tensor of an enclosing graph (the value a
    place of Python state had before the branch, on the side that did not write it) is captured."""
    outer = getattr(graph, "outer_graph", None)
    while outer is not None and getattr(x, "graph", None) is not outer:
        outer = getattr(outer, "outer_graph", None)
    return graph.capture(x) if outer is not None else x


def _both_sides(pred, t: _Side, f: _Side, scope: str, names: Sequence[str], what: str, start: int,
                lists: Sequence[str]) -> tuple:
    """Both sides traced: match their outputs and build the ``If`` op."""
    ctx = current()
    side_fixes = fixes(t.out, f.out, names, lists)
    carry = bool(t.effects or f.effects)
    specs = {s.side: [tf.TensorSpec(x.shape, x.dtype) for x in s.carried()] for s in (t, f)}
    draws_differ = not same_position(t.seed_position, f.seed_position)

    def extra(s: _Side) -> Callable[[], list]:
        def make():  # the seed position if the sides draw differently; both sides' effect tensors
            position = [_position_tensor(s.seed_position)] if draws_differ else []
            if not carry:
                return position
            ours, theirs = s.carried(), branch_effects.zeros_like_specs(specs[not s.side])
            return position + (ours + theirs if s.side else theirs + ours)
        return make

    t_out, t_leaves, t_kinds = _finish_side(t, side_fixes, extra(t))
    f_out, f_leaves, f_kinds = _finish_side(f, side_fixes, extra(f))
    try:
        tf.nest.assert_same_structure(t_out, f_out, expand_composites=False)
    except (TypeError, ValueError):
        raise ConversionError(f"{what}: the two sides produce different structures for {', '.join(names)}",
                              code=Code.TENSOR_BRANCH) from None
    if t_kinds != f_kinds:
        raise ConversionError(f"{what}: a variable has a different kind on each side ({', '.join(names)})",
                              code=Code.TENSOR_BRANCH)
    for kind, a, b in zip(t_kinds, t_leaves, f_leaves):
        if kind is Plain.PYTHON and not same_python(a, b):
            raise ConversionError(f"{what}: a Python value differs between the two sides ({a!r} vs {b!r})",
                                  code=Code.TENSOR_BRANCH)
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
    return join(t_out, t_leaves, t_kinds, iter(outs))


def _position_tensor(position: Any) -> tf.Tensor:
    """A seed position as an int32 tensor of the graph being built (captured if outer)."""
    return tf.constant(position, tf.int32) if isinstance(position, int) else tf.identity(position)


def _not_raising(pred, t: _Side, f: _Side, scope: str, what: str, site: SiteInfo | None, start: int) -> tuple:
    """One side raised while tracing: assume (and assert) it is not taken; the other side's
    graph becomes the conditional with a side that only outputs zeros in its place."""
    ctx = current()
    live, dead = (f, t) if t.raised else (t, f)
    assumption = ctx.checks.check(speculation.NOT_RAISING, site, dead.side, where=what, detail=type(dead.raised).__name__)
    moved = not isinstance(live.seed_position, int)
    out, leaves, kinds = _finish_side(
        live, {}, lambda: ([_position_tensor(live.seed_position)] if moved else []) + live.carried())
    specs = [tf.TensorSpec(x.shape, x.dtype) for x in live.graph.outputs]
    dead.graph = _tf_private.branch_graph(lambda: _never_taken(specs, leaves), scope, dead.side)
    assertion(tf.logical_not(pred) if dead.side else pred, assumption.message, assumption)
    n = len(split(out)[2])
    outs = _build(pred, t, f, scope, what, start)
    if moved:
        ctx.seeds.position = outs.pop(n)
    else:
        ctx.seeds.position = live.seed_position
    if live.effects:
        ctx.effect(When(pred, live.side, branch_effects.rebind(live.effects, outs[n:])),
                   f"{what} side with effects")
    return join(out, leaves, kinds, iter(outs[:n]))


def _never_taken(specs: list[tf.TensorSpec], leaves: list) -> list[tf.Tensor]:
    """Outputs of a side asserted not taken: zeros of the live side's, and an empty list for
    each list whose length the graph computes among its values (``leaves``)."""
    lists = iter([leaf for leaf in leaves if isinstance(leaf, GraphList)])

    def placeholder(spec: tf.TensorSpec) -> tf.Tensor:
        if spec.dtype != tf.variant:
            return branch_effects.zeros_like_specs([spec])[0]
        graph_list = next(lists, None)
        if graph_list is None:
            raise ConversionError("a side that raises beside one that gives a variant value of its own",
                                  code=Code.TENSOR_BRANCH)
        return GraphList.of([], *graph_list.spec()).handle

    return [placeholder(s) for s in specs]


def _build(pred, t: _Side, f: _Side, scope: str, what: str, start: int) -> list:
    """The ``If`` op of the two finished sides: its outputs without the gating constant.

    Assertions made inside the sides since ``start`` are checked by the ``If`` op; it
    counts as a state writer when a side writes a variable.
    """
    ctx = current()
    try:
        outs = _tf_private.build_cond(pred, t.graph, f.graph, scope)
    except (TypeError, ValueError) as e:
        raise ConversionError(f"{what}: the two sides do not agree ({type(e).__name__}: {first_line(e, 200)})",
                              code=Code.TENSOR_BRANCH) from None
    construct = op_of(outs)
    ctx.bounds.built_cond(construct, t.graph, f.graph)
    ctx.checks.nested_assertions(start, lambda: construct)
    if t.writes or f.writes:
        ctx.checks.writer_constructs.add(construct)
    if not (t.fails or f.fails):
        ctx.checks.safe_ops.add(construct)
    return outs[:-1]
