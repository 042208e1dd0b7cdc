"""One kind for what a variable is on both sides of a tensor branch, or across a loop's trips.

A ``tf.cond`` or ``tf.while_loop`` carries tensors.  The values converted code hands it
are tensors, Python scalars the graph computes (:class:`PyScalar`), plain Python values
(which must be the same on every path) and numbers that are a tensor on some paths
(:class:`PyOrTensor`).  :func:`split` flattens values into the tensors to carry and the
kinds to rebuild them with (:func:`join`); :func:`fixes` / :func:`apply_fixes` make the
two sides of a conditional agree where ops added to a side can (a number becomes a
PyScalar or a PyOrTensor, a missing result zeros, an own list the sides leave at
different lengths a :class:`GraphList`).  A Python value that would change
kind where eager would not convert it fails the conversion.
"""
from __future__ import annotations

from typing import Any, Sequence

import tensorflow as tf

from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.runtime.graph_lists import GraphList, common_spec
from janus.trace.arrays import IslandArray, TensorValues
from janus.trace.values import UNDEF, PyScalar, is_symbolic
from janus.trace.scalars import DTYPES, PY_SCALARS, PyOrTensor


def _kind(leaf: Any) -> Any:
    if isinstance(leaf, GraphList):
        return ("graph list",) + leaf.spec()
    if isinstance(leaf, PyScalar):
        return leaf.kind
    if isinstance(leaf, PyOrTensor):
        return ("number or tensor", leaf.kind)
    if isinstance(leaf, (IslandArray, TensorValues)):  # an array the graph computes: carried as its tensor
        return ("graph array", type(leaf), leaf.dtype, leaf.dims)
    if is_symbolic(leaf):
        return "tensor"
    if any(is_symbolic(t) for t in tf.nest.flatten(leaf, expand_composites=True)):
        raise ConversionError(f"a {type(leaf).__name__} the graph computes flows through tensor-dependent control flow",
                              code=Code.TENSOR_BRANCH)
    return "py"


def split(values: Any) -> tuple[list, list, list]:
    """Leaves of ``values``, their kinds, and the tensors a TF construct must carry."""
    leaves = tf.nest.flatten(values, expand_composites=False)
    kinds = [_kind(x) for x in leaves]
    tensors = []
    for x, k in zip(leaves, kinds):
        if isinstance(x, PyOrTensor):
            tensors += x.parts()
        elif isinstance(x, GraphList):
            tensors.append(x.handle)
        elif isinstance(x, (IslandArray, TensorValues)):
            tensors.append(x.tensor)
        elif k != "py":
            tensors.append(x.tensor if isinstance(x, PyScalar) else x)
    return leaves, kinds, tensors


def join(structure: Any, leaves: list, kinds: list, tensors) -> Any:
    """Rebuild ``structure`` with the carried tensors back in place (as PyScalars where they were)."""
    out = []
    for leaf, kind in zip(leaves, kinds):
        if kind == "py":
            out.append(leaf)
        elif kind == "tensor":
            out.append(next(tensors))
        elif isinstance(kind, tuple) and kind[0] == "graph list":
            out.append(GraphList(next(tensors), kind[1], kind[2]))
        elif isinstance(kind, tuple) and kind[0] == "graph array":
            out.append(leaf.carried(next(tensors)))
        elif isinstance(kind, tuple):
            number, tensor, is_number = next(tensors), next(tensors), next(tensors)
            out.append(PyOrTensor(number, kind[1], tensor, is_number))
        else:
            out.append(PyScalar(next(tensors), kind))
    return tf.nest.pack_sequence_as(structure, out, expand_composites=False)


def fixes(t_out: tuple, f_out: tuple, names: Sequence[str], lists: Sequence[str] = ()) -> dict[int, Any]:
    """Differences between the sides that ops added to a side's graph can reconcile;
    ``lists``: the own lists among ``names``, which may become GraphLists."""
    found: dict[int, Any] = {}
    for i, name in enumerate(names):
        a, b = t_out[i], f_out[i]
        ka, kb = _scalar_kind(a), _scalar_kind(b)
        if name in lists and _list_like(a) and _list_like(b) and not (type(a) is list and type(b) is list
                                                                        and len(a) == len(b)):
            found[i] = ("graph list",) + common_spec((a, b), name)
        elif name == "_jn_ret" and (a is UNDEF) != (b is UNDEF):
            other = b if a is UNDEF else a
            found[i] = ("fill", tf.nest.map_structure(
                lambda x: tf.TensorSpec(x.shape, x.dtype) if is_symbolic(x) else x, other))
        elif ka is not None and ka == kb and (type(a) in PY_SCALARS or type(b) in PY_SCALARS) \
                and not (type(a) in PY_SCALARS and type(b) in PY_SCALARS and a == b):
            found[i] = ("scalar", ka)
        elif number_or_tensor(a) and number_or_tensor(b) and ((ka is None) != (kb is None) or _is_union(a, b)):
            found[i] = ("union",) + union_kind(a, b, name)
    return found


def joinable(a: Any, b: Any) -> bool:
    """Whether two values of one place, one per side of a conditional, can be one output of it
    (as :func:`fixes` reconciles variables): equal Python values, numbers of one kind (as
    PyScalars), a number and a tensor eager would convert it to, tensors of one dtype."""
    try:
        ka, kb = _kind(a), _kind(b)
    except ConversionError:
        return False
    if ka == "py" and kb == "py":
        return same_python(a, b) or type(a) in PY_SCALARS and type(a) is type(b)
    if not (number_or_tensor(a) and number_or_tensor(b)):
        return False
    sa, sb = _scalar_kind(a), _scalar_kind(b)
    if sa is not None and sb is not None:
        return sa is sb
    if sa is None and sb is None and not _is_union(a, b):
        return a.dtype == b.dtype
    try:
        union_kind(a, b, "")
    except ConversionError:
        return False
    return True


def number_or_tensor(x: Any) -> bool:
    """``x`` is a number (Python's or a PyScalar), a tensor, or already either."""
    return _scalar_kind(x) is not None or is_symbolic(x) or isinstance(x, PyOrTensor)


def _is_union(*values: Any) -> bool:
    return any(isinstance(x, PyOrTensor) for x in values)


def union_kind(a: Any, b: Any, name: str) -> tuple[type, tf.DType]:
    """The Python kind and the tensor dtype of a variable that is a number on one side of a
    conditional and a tensor on the other (or already either)."""
    kinds = {k for k in (_scalar_kind(a), _scalar_kind(b)) if k is not None}
    kinds |= {x.kind for x in (a, b) if isinstance(x, PyOrTensor)}
    dtypes = {x.dtype for x in (a, b) if is_symbolic(x) or isinstance(x, PyOrTensor)}
    if len(kinds) != 1 or len(dtypes) != 1:
        raise ConversionError(f"{name} is a Python number on one side of a tensor-dependent branch and a tensor "
                              f"on the other, of kinds that do not convert ({kinds}, {dtypes})",
                              code=Code.TENSOR_BRANCH)
    (kind,), (dtype,) = kinds, dtypes
    if (kind is bool) != (dtype == tf.bool) or kind is float and not dtype.is_floating \
            or not (dtype.is_floating or dtype.is_integer or dtype == tf.bool):
        raise ConversionError(f"{name} is a Python {kind.__name__} on one side of a tensor-dependent branch and a "
                              f"{dtype.name} tensor on the other (eager would not convert one to the other)",
                              code=Code.TENSOR_BRANCH)
    return kind, dtype


def as_union(x: Any, kind: type, dtype: tf.DType) -> PyOrTensor:
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


def apply_fixes(out: tuple, fixes: dict[int, Any]) -> tuple:
    """A side's values, reconciled (in the side's graph): a Python scalar where the other side
    has a PyScalar or another number becomes a PyScalar; a missing result becomes zeros."""
    out = list(out)
    for i, fix in fixes.items():
        if fix[0] == "scalar" and type(out[i]) in PY_SCALARS:
            out[i] = PyScalar.of(out[i], fix[1])
        elif fix[0] == "union":
            out[i] = as_union(out[i], fix[1], fix[2])
        elif fix[0] == "graph list" and type(out[i]) is list:
            out[i] = GraphList.of(out[i], fix[1], fix[2])
        elif fix[0] == "fill" and out[i] is UNDEF:
            out[i] = tf.nest.map_structure(
                lambda spec: tf.zeros([d or 0 for d in spec.shape.as_list()], spec.dtype)
                if isinstance(spec, tf.TensorSpec) else spec, fix[1])
    return tuple(out)


def _list_like(x: Any) -> bool:
    return type(x) is list or isinstance(x, GraphList)


def _scalar_kind(x: Any) -> type | None:
    if isinstance(x, PyScalar):
        return x.kind
    if type(x) in PY_SCALARS:
        return type(x)
    return None


def same_python(a: Any, b: Any) -> bool:
    """Two plain Python values are the same for eager: one object, or equal values of one type."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001
        return False
