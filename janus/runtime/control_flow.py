"""Control flow of converted code, decided while tracing.

The converter rewrites ``if``, ``while``, ``for``, conditional expressions,
``and``/``or``/``not`` and ``assert`` into calls of the functions below, with the
bodies turned into nested functions that take and return the variables they modify.
At trace time each operator looks at its condition:

* a Python value: the statement simply runs in Python (only the taken side is
  traced; the value it depended on was already guarded when it was read);
* a tensor: the statement becomes ``tf.cond`` / ``tf.while_loop`` (the conservative
  form).  Variables that must flow through the TF construct have to be tensors on
  every path; a Python value that would change kind (e.g. stay an ``int`` on one
  side and become a tensor on the other) makes the conversion fail, since eager
  would return different types.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import tensorflow as tf

from janus.commit import atomicity, branch_effects
from janus.commit.effects import When
from janus.convert.sites import SiteInfo
from janus.errors import ConversionError, UndefinedValueError
from janus.trace.active import current
from janus.trace.values import PY_SCALARS, UNDEF, PyScalar, is_symbolic


def _is_tensor(x: Any) -> bool:
    """A value the graph computes: a graph tensor or a Python scalar derived from one."""
    return is_symbolic(x) or isinstance(x, PyScalar)


def to_bool(cond: Any) -> tf.Tensor:
    """The truth value of a scalar tensor, as eager's ``bool(t)`` computes it."""
    if isinstance(cond, PyScalar):
        cond = cond.tensor
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
    return _cond(to_bool(cond), lambda: body(*args), lambda: orelse(*args), names, "if")


def ifexp(cond: Any, if_true: Callable[[], Any], if_false: Callable[[], Any], site: SiteInfo | None = None) -> Any:
    """``if_true() if cond else if_false()``."""
    if not _is_tensor(cond):
        return if_true() if cond else if_false()
    taken = _speculate_branch(cond, site)
    if taken is not None:
        return if_true() if taken else if_false()
    return _cond(to_bool(cond), lambda: (if_true(),), lambda: (if_false(),), ("<expr>",), "conditional expression")[0]


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


def _cond(pred: tf.Tensor, true_fn: Callable, false_fn: Callable, names: Sequence[str], what: str) -> tuple:
    """``tf.cond`` over two sides that return a tuple of values (one per name in ``names``).

    Each side is first *probed*: traced on its own into a throwaway concrete function,
    so no op of the probe can run.  The probe shows what each side produces: Python
    scalars that differ between the sides become :class:`PyScalar` values, a result
    only one side defines (``_jn_ret`` where the other has not returned) gets a
    placeholder, effects inside a side are carried out of the cond; a side that raises
    is speculated away.  Then the real ``tf.cond`` is built, once.
    """
    ctx = current()
    start = len(ctx.assertions)
    probe: dict = {}
    raised: dict[bool, BaseException] = {}
    ctx.dynamic_depth += 1
    try:
        for side, fn in ((True, true_fn), (False, false_fn)):
            try:
                tf.function(_side(fn, side, {}, probe, raised), autograph=False).get_concrete_function()
            except (ConversionError, UndefinedValueError):
                raise
            except Exception as e:  # noqa: BLE001 - a raising side is handled below
                if side not in raised:
                    raise ConversionError(f"{what}: {type(e).__name__}: {_first_line(e)}") from None
    finally:
        ctx.dynamic_depth -= 1
        del ctx.assertions[start:]
    if len(raised) == 1:
        return _speculate_not_raising(pred, raised, true_fn, false_fn, what)
    if raised:
        raise raised[True]
    probe.pop("writes", None)
    probed_effects = {side: probe.pop(("effects", side)) for side in (True, False)}
    fixes = _fixes(probe, names)
    if probed_effects[True][0] or probed_effects[False][0]:
        fixes["effects"] = (probed_effects[True][1], probed_effects[False][1])
    record: dict = {}
    ctx.dynamic_depth += 1
    try:
        outs = tf.cond(pred, _side(true_fn, True, fixes, record, raised), _side(false_fn, False, fixes, record, raised))
    except (ConversionError, UndefinedValueError):
        raise
    except Exception as e:  # noqa: BLE001
        raise ConversionError(f"{what}: the two sides do not agree ({type(e).__name__}: {_first_line(e)})") from None
    finally:
        ctx.dynamic_depth -= 1
    writes = record.pop("writes", False)
    side_effects = {side: record.pop(("effects", side)) for side in (True, False)}
    (t_out, t_kinds, t_leaves), (f_out, f_kinds, f_leaves) = record[True], record[False]
    try:
        tf.nest.assert_same_structure(t_out, f_out, expand_composites=False)
    except (TypeError, ValueError):
        raise ConversionError(f"{what}: the two sides produce different structures for {', '.join(names)}") from None
    if t_kinds != f_kinds:
        raise ConversionError(f"{what}: a variable has a different kind on each side ({', '.join(names)})")
    for kind, a, b in zip(t_kinds, t_leaves, f_leaves):
        if kind == "py" and not _same_python(a, b):
            raise ConversionError(f"{what}: a Python value differs between the two sides ({a!r} vs {b!r})")
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    construct = _op_of(outs)
    outs = outs[:-1]
    ctx.nested_assertions(start, lambda: construct)
    if writes:
        ctx.writer_constructs.add(construct)
    if "effects" in fixes:
        n_t, n_f = len(fixes["effects"][0]), len(fixes["effects"][1])
        extra = outs[len(outs) - n_t - n_f:]
        outs = outs[:len(outs) - n_t - n_f]
        for side, carried in ((True, extra[:n_t]), (False, extra[n_t:])):
            if side_effects[side][0]:
                ctx.effect(When(pred, side, branch_effects.rebind(side_effects[side][0], carried)),
                           f"{what} side with effects")
    return _join(t_out, t_leaves, t_kinds, iter(outs))


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
    if is_symbolic(leaf):
        return "tensor"
    if any(is_symbolic(t) for t in tf.nest.flatten(leaf, expand_composites=True)):
        raise ConversionError(f"a {type(leaf).__name__} the graph computes flows through tensor-dependent control flow")
    return "py"


def _split(values: Any) -> tuple[list, list, list]:
    """Leaves of ``values``, their kinds, and the tensors a TF construct must carry."""
    leaves = tf.nest.flatten(values, expand_composites=False)
    kinds = [_kind(x) for x in leaves]
    tensors = [x.tensor if isinstance(x, PyScalar) else x for x, k in zip(leaves, kinds) if k != "py"]
    return leaves, kinds, tensors


def _join(structure: Any, leaves: list, kinds: list, tensors) -> Any:
    """Rebuild ``structure`` with the carried tensors back in place (as PyScalars where they were)."""
    out = []
    for leaf, kind in zip(leaves, kinds):
        if kind == "py":
            out.append(leaf)
        elif kind == "tensor":
            out.append(next(tensors))
        else:
            out.append(PyScalar(next(tensors), kind))
    return tf.nest.pack_sequence_as(structure, out, expand_composites=False)


def _side(fn: Callable, side: bool, fixes: dict, record: dict, raised: dict) -> Callable:
    def run():
        ctx = current()
        ctx.effect_sinks.append([])
        try:
            out = list(fn())
        except (ConversionError, UndefinedValueError):
            raise
        except Exception as e:  # noqa: BLE001 - a raising side is speculated away by _cond
            raised[side] = e
            raise
        finally:
            side_effects = ctx.effect_sinks.pop()
        for i, fix in fixes.items():
            if i == "effects":
                continue
            if fix[0] == "scalar" and type(out[i]) in PY_SCALARS:
                out[i] = PyScalar.of(out[i], fix[1])
            elif fix[0] == "fill" and out[i] is UNDEF:
                out[i] = tf.nest.map_structure(
                    lambda spec: tf.zeros([d or 0 for d in spec.shape.as_list()], spec.dtype)
                    if isinstance(spec, tf.TensorSpec) else spec, fix[1])
        out = tuple(out)
        leaves, kinds, tensors = _split(out)
        record[side] = (out, kinds, leaves)
        record.setdefault("writes", False)
        record["writes"] |= _body_writes_state()
        carried = branch_effects.graph_values(side_effects)
        record[("effects", side)] = (side_effects, [tf.TensorSpec(t.shape, t.dtype) for t in carried])
        if "effects" in fixes:  # carry both sides' effect tensors out: ours, and zeros for the other's
            t_specs, f_specs = fixes["effects"]
            ours = list(carried)
            tensors += ours + branch_effects.zeros_like_specs(f_specs) if side else \
                branch_effects.zeros_like_specs(t_specs) + ours
        # One constant output more, so that the cond always has an op to gate state on.
        return tensors + [tf.constant(True)]
    return run


def _body_writes_state() -> bool:
    """Whether the cond/loop body being traced (the default graph) changes a variable."""
    ctx = current()
    return atomicity.graph_writes_state(tf.compat.v1.get_default_graph(), ctx.writer_constructs)


def _fixes(record: dict, names: Sequence[str]) -> dict[int, Any]:
    """Differences between the sides that a second trace can reconcile."""
    fixes: dict[int, Any] = {}
    (t_out, *_), (f_out, *_) = record[True], record[False]
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
    return fixes


def _scalar_kind(x: Any) -> type | None:
    if isinstance(x, PyScalar):
        return x.kind
    if type(x) in PY_SCALARS:
        return type(x)
    return None


def _speculate_not_raising(pred, raised, true_fn, false_fn, what):
    """One side of a tensor branch raises: assert it is not taken and trace the other."""
    side, exc = next(iter(raised.items()))
    message = f"janus: {what} side that raises {type(exc).__name__} was taken"
    assertion(tf.logical_not(pred) if side else pred, message)
    return tuple((false_fn if side else true_fn)())


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
    value = ctx.speculator.branch(site) if ctx is not None and ctx.speculator is not None else None
    if value is None:
        return None
    assumption = ctx.assume(site, "branch", value)
    pred = to_bool(cond)
    assertion(pred if value else tf.logical_not(pred), assumption.message, assumption)
    return value


def _speculate_trips(site: SiteInfo | None):
    """The assumed trip count of a tensor-dependent loop, or None."""
    ctx = current()
    n = ctx.speculator.trips(site) if ctx is not None and ctx.speculator is not None else None
    if n is None:
        return None
    return ctx.assume(site, "trips", n)


# -- assertions -------------------------------------------------------------------
def assertion(pred: tf.Tensor, message: str, assumption: Any = None) -> None:
    """An assertion op the graph run must pass; its failure makes Janus re-run eagerly.

    ``assumption`` is the speculation it checks (None for the user's own ``assert``).
    """
    current().assert_that(pred, message, assumption)


def assert_(cond: Any, message: Callable[[], Any] | None = None) -> None:
    """The ``assert`` statement."""
    if not _is_tensor(cond):
        if not cond:
            raise AssertionError(message()) if message is not None else AssertionError
        return
    assertion(to_bool(cond), "janus: assert statement failed")


# -- loops --------------------------------------------------------------------------
def while_stmt(test: Callable, body: Callable, args: tuple, names: Sequence[str],
               site: SiteInfo | None = None, cells: Sequence[str] = ()) -> tuple:
    """``while test(*vars): vars = body(*vars)``; unrolled when the trip count is assumed."""
    state = tuple(args)
    count, assumed = 0, None
    while True:
        cond = test(*state)
        if _is_tensor(cond):
            if assumed is None:
                assumed = _speculate_trips(site)
                if assumed is None:
                    _no_cells(cells, "while loop")
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
    assertion(tf.equal(tf.shape(iterable)[0], n), assumed.message, assumed)
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


def _as_bool_tensor(x: Any) -> tf.Tensor:
    return to_bool(x) if _is_tensor(x) else tf.constant(bool(x))


def _while_loop(test: Callable, body: Callable, state: tuple, names: Sequence[str], what: str) -> tuple:
    """Run the rest of a loop as ``tf.while_loop``.

    Carried values must be tensors or Python scalars (which become PyScalars, so a
    counter stays an ``int`` for Python); each keeps its kind across iterations.
    """
    ctx = current()
    init_values = []
    for name, value in zip(names, state):
        for leaf in tf.nest.flatten(value):
            if leaf is UNDEF:
                raise ConversionError(f"{what}: {name} is first assigned inside a tensor-dependent loop")
            if not _is_tensor(leaf) and type(leaf) not in PY_SCALARS:
                raise ConversionError(f"{what}: {name} holds a Python {type(leaf).__name__} across a tensor loop")
        init_values.append(tf.nest.map_structure(lambda v: PyScalar.of(v) if type(v) in PY_SCALARS else v, value))
    structure = tuple(init_values)
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
        _, new_kinds, tensors = _split(out)
        if new_kinds != kinds:
            raise ConversionError(f"{what}: a carried variable changes kind ({', '.join(names)})")
        writes[0] |= _body_writes_state()
        return tensors

    start = len(ctx.assertions)
    writes = [False]
    ctx.dynamic_depth += 1
    ctx.effect_sinks.append(None)
    try:
        flat = tf.while_loop(cond, loop_body, init)
    except (ConversionError, UndefinedValueError):
        raise
    except (TypeError, ValueError) as e:
        raise ConversionError(f"{what}: {_first_line(e)}") from None
    finally:
        ctx.dynamic_depth -= 1
        ctx.effect_sinks.pop()
    flat = list(flat) if isinstance(flat, (list, tuple)) else [flat]
    ctx.nested_assertions(start, lambda: _op_of(flat))
    if writes[0]:
        ctx.writer_constructs.add(_op_of(flat))
    return tuple(unpack(flat))
