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

from janus.errors import ConversionError, UndefinedValueError
from janus.tracing import current, is_symbolic


class Undefined:
    """Value of a local that eager Python would not have bound yet."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<undefined>"

    def _fail(self, *args, **kwargs):
        raise UndefinedValueError("a variable is read before it is assigned")

    __bool__ = __call__ = __getattr__ = __getitem__ = __iter__ = __len__ = _fail
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _fail
    __lt__ = __le__ = __gt__ = __ge__ = __neg__ = __str__ = __format__ = __index__ = _fail


UNDEF = Undefined()


def _is_tensor(x: Any) -> bool:
    return is_symbolic(x)


def to_bool(cond: Any) -> tf.Tensor:
    """The truth value of a scalar tensor, as eager's ``bool(t)`` computes it."""
    if cond.shape.rank is None or cond.shape.rank > 0 and cond.shape.num_elements() != 1:
        raise ConversionError("truth value of a non-scalar tensor")
    cond = tf.reshape(cond, [])
    if cond.dtype != tf.bool:
        cond = tf.not_equal(cond, tf.zeros([], cond.dtype))
    return cond


def _mark_python(t: tf.Tensor, kind: type) -> tf.Tensor:
    """Remember that eager would have produced a Python ``kind`` here, not a tensor."""
    ctx = current()
    if ctx is not None:
        ctx.py_kinds[id(t)] = kind
        ctx._keep.append(t)
    return t


# -- branches ---------------------------------------------------------------------
def if_stmt(cond: Any, body: Callable, orelse: Callable, args: tuple, names: Sequence[str]) -> tuple:
    """``if cond: body else: orelse``; each side takes ``args`` and returns its outputs."""
    if not _is_tensor(cond):
        return body(*args) if cond else orelse(*args)
    return _cond(to_bool(cond), lambda: body(*args), lambda: orelse(*args), names, "if")


def ifexp(cond: Any, if_true: Callable[[], Any], if_false: Callable[[], Any]) -> Any:
    """``if_true() if cond else if_false()``."""
    if not _is_tensor(cond):
        return if_true() if cond else if_false()
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


def not_(value: Any) -> Any:
    """``not value``; on a tensor, a boolean tensor that eager would have as a Python bool."""
    if not _is_tensor(value):
        return not value
    return _mark_python(tf.logical_not(to_bool(value)), bool)


def _cond(pred: tf.Tensor, true_fn: Callable, false_fn: Callable, names: Sequence[str], what: str) -> tuple:
    """``tf.cond`` over two sides that return a tuple of values (one per name in ``names``).

    Python values must agree on both sides.  Janus's own flags (``_jn_*``) that differ
    become tensors, and a result that only one side defines (``_jn_ret`` where the
    other side has not returned) is given a placeholder value; both need a second
    trace, once the first has shown what each side produces.
    """
    ctx = current()
    fixes: dict[int, Any] = {}
    for attempt in (0, 1):
        record: dict[bool, tuple] = {}
        raised: dict[bool, BaseException] = {}
        ctx.dynamic_depth += 1
        try:
            outs = tf.cond(pred, _side(true_fn, True, names, fixes, record, raised),
                           _side(false_fn, False, names, fixes, record, raised))
            error = None
        except ConversionError:
            raise
        except Exception as e:  # noqa: BLE001 - classified below
            error = e
        finally:
            ctx.dynamic_depth -= 1
        if error is not None and len(raised) == 1:
            return _speculate_not_raising(pred, raised, true_fn, false_fn, what)
        if raised:
            raise next(iter(raised.values()))
        new_fixes = _fixes(record, names) if len(record) == 2 else {}
        if attempt == 0 and new_fixes:
            fixes = new_fixes
            continue
        if error is not None:
            raise ConversionError(f"{what}: the two sides do not agree ({type(error).__name__}: {_first_line(error)})")
        break
    (t_out, t_mask, t_leaves), (f_out, f_mask, f_leaves) = record[True], record[False]
    try:
        tf.nest.assert_same_structure(t_out, f_out, expand_composites=False)
    except (TypeError, ValueError):
        raise ConversionError(f"{what}: the two sides produce different structures for {', '.join(names)}") from None
    if t_mask != f_mask:
        raise ConversionError(f"{what}: a variable is a tensor on one side and a Python value on the other")
    for is_t, a, b in zip(t_mask, t_leaves, f_leaves):
        if not is_t and not _same_python(a, b):
            raise ConversionError(f"{what}: a Python value differs between the two sides ({a!r} vs {b!r})")
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    it = iter(outs)
    merged = [next(it) if is_t else leaf for is_t, leaf in zip(t_mask, t_leaves)]
    return tf.nest.pack_sequence_as(t_out, merged, expand_composites=False)


def _side(fn: Callable, side: bool, names, fixes: dict, record: dict, raised: dict) -> Callable:
    def run():
        try:
            out = list(fn())
        except ConversionError:
            raise
        except Exception as e:  # noqa: BLE001 - a raising side is speculated away by _cond
            raised[side] = e
            raise
        for i, fix in fixes.items():
            if fix[0] == "tensor" and not _is_tensor(out[i]):
                out[i] = tf.constant(out[i], fix[1])
            elif fix[0] == "fill" and out[i] is UNDEF:
                out[i] = tf.nest.map_structure(lambda spec: tf.zeros([d or 0 for d in spec.shape.as_list()], spec.dtype)
                                               if isinstance(spec, tf.TensorSpec) else spec, fix[1])
        out = tuple(out)
        leaves = tf.nest.flatten(out, expand_composites=False)
        record[side] = (out, [_is_tensor(x) for x in leaves], leaves)
        return [x for x in leaves if _is_tensor(x)]
    return run


def _fixes(record: dict, names: Sequence[str]) -> dict[int, Any]:
    """Differences between the sides that Janus's own variables may resolve by a second trace."""
    fixes: dict[int, Any] = {}
    (t_out, *_), (f_out, *_) = record[True], record[False]
    for i, name in enumerate(names):
        if not name.startswith("_jn_"):
            continue
        a, b = t_out[i], f_out[i]
        if name == "_jn_ret" and (a is UNDEF) != (b is UNDEF):
            other = b if a is UNDEF else a
            fixes[i] = ("fill", tf.nest.map_structure(
                lambda x: tf.TensorSpec(x.shape, x.dtype) if _is_tensor(x) else x, other))
        elif type(a) in (bool, int) and type(b) in (bool, int) and a != b:
            fixes[i] = ("tensor", tf.bool if type(a) is bool else tf.int32)
        elif _is_tensor(a) != _is_tensor(b) and type(a if not _is_tensor(a) else b) in (bool, int):
            fixes[i] = ("tensor", (a if _is_tensor(a) else b).dtype)
    return fixes


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


# -- assertions -------------------------------------------------------------------
def assertion(pred: tf.Tensor, message: str) -> None:
    """An assertion op the graph run must pass; its failure makes Janus re-run eagerly."""
    ctx = current()
    op = tf.debugging.Assert(pred, [tf.constant(message)])
    if ctx is not None and op is not None:
        ctx.assertions.append(op)


def assert_(cond: Any, message: Callable[[], Any] | None = None) -> None:
    """The ``assert`` statement."""
    if not _is_tensor(cond):
        if not cond:
            raise AssertionError(message()) if message is not None else AssertionError
        return
    assertion(to_bool(cond), "janus: assert statement failed")


# -- loops --------------------------------------------------------------------------
def while_stmt(test: Callable, body: Callable, args: tuple, names: Sequence[str]) -> tuple:
    """``while test(*vars): vars = body(*vars)``."""
    state = tuple(args)
    while True:
        cond = test(*state)
        if _is_tensor(cond):
            return _while_loop(test, body, state, names, "while loop")
        if not cond:
            return state
        state = tuple(body(*state))


class TensorRange:
    """``range(...)`` whose bounds are tensors: iterated by ``tf.while_loop``."""

    def __init__(self, *bounds: Any):
        if len(bounds) == 1:
            bounds = (0, bounds[0], 1)
        elif len(bounds) == 2:
            bounds = (bounds[0], bounds[1], 1)
        dtype = next(b.dtype for b in bounds if _is_tensor(b))
        if not dtype.is_integer:
            raise ConversionError("range() of a non-integer tensor")
        self.start, self.stop, self.step = (tf.cast(b, dtype) for b in bounds)


def for_stmt(iterable: Any, extra_test: Callable | None, body: Callable, args: tuple, names: Sequence[str]) -> tuple:
    """``for item in iterable: vars = body(item, *vars)``, stopping when ``extra_test`` fails."""
    if isinstance(iterable, TensorRange) or _is_tensor(iterable):
        return _tensor_for(iterable, extra_test, body, tuple(args), names)
    state = tuple(args)
    for item in iterable:
        if extra_test is not None:
            go = extra_test(*state)
            if _is_tensor(go):
                state = if_stmt(go, lambda *s, item=item: tuple(body(item, *s)), lambda *s: s, state, names)
                continue
            if not go:
                break
        state = tuple(body(item, *state))
    return state


def _tensor_for(iterable, extra_test, body, state, names):
    if isinstance(iterable, TensorRange):
        start, stop, step = iterable.start, iterable.stop, iterable.step

        def item_at(i):
            return i
        dtype = start.dtype
    else:
        if iterable.shape.rank == 0:
            raise TypeError("iteration over a 0-d tensor")
        start, stop, step = tf.constant(0), tf.shape(iterable)[0], tf.constant(1)

        def item_at(i):
            return tf.gather(iterable, i)
        dtype = tf.int32

    def test(i, *s):
        more = tf.logical_or(tf.logical_and(step > 0, i < stop), tf.logical_and(step < 0, i > stop))
        if extra_test is None:
            return more
        return tf.logical_and(more, _as_bool_tensor(extra_test(*s)))

    def step_body(i, *s):
        return (i + step,) + tuple(body(item_at(i), *s))

    out = _while_loop(test, step_body, (tf.cast(start, dtype),) + state, ("<index>",) + tuple(names), "for loop")
    return out[1:]


def _as_bool_tensor(x: Any) -> tf.Tensor:
    return to_bool(x) if _is_tensor(x) else tf.constant(bool(x))


def _while_loop(test: Callable, body: Callable, state: tuple, names: Sequence[str], what: str) -> tuple:
    """Run the rest of a loop as ``tf.while_loop``; every carried value must be a tensor."""
    ctx = current()
    init = []
    for name, value in zip(names, state):
        leaves = tf.nest.flatten(value)
        for leaf in leaves:
            if leaf is UNDEF:
                raise ConversionError(f"{what}: {name} is first assigned inside a tensor-dependent loop")
            if not _is_tensor(leaf) and not (name.startswith("_jn_") or name == "<index>"):
                raise ConversionError(f"{what}: {name} is a Python {type(leaf).__name__} carried by a tensor loop")
        init.append(tf.nest.map_structure(lambda v: v if _is_tensor(v) else tf.constant(v), value))

    def cond(*s):
        return _as_bool_tensor(test(*s))

    def loop_body(*s):
        out = tuple(body(*s))
        return tuple(tf.nest.map_structure(
            lambda new, old: new if _is_tensor(new) else tf.constant(new, old.dtype), o, i)
            for o, i in zip(out, s))

    ctx.dynamic_depth += 1
    try:
        return tuple(tf.while_loop(cond, loop_body, tuple(init)))
    except (ConversionError, UndefinedValueError):
        raise
    except (TypeError, ValueError) as e:
        raise ConversionError(f"{what}: {_first_line(e)}") from None
    finally:
        ctx.dynamic_depth -= 1
