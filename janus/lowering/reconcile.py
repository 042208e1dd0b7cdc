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

import enum
from dataclasses import dataclass
from typing import Any, Sequence, Union

import tensorflow as tf

from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.lowering.graph_lists import GraphList, common_spec
from janus.trace.arrays import IslandArray, TensorValues
from janus.trace.values import UNDEF, PyScalar, is_symbolic
from janus.trace.scalars import DTYPES, PY_SCALARS, PyOrTensor


class Plain(enum.Enum):
    """The kinds of a leaf that carry no parameter."""

    PYTHON = "a Python value, the same on every path (not carried)"
    TENSOR = "a tensor"


@dataclass(frozen=True)
class Number:
    """A Python number the graph computes (a :class:`PyScalar` of ``kind``)."""

    kind: type


@dataclass(frozen=True)
class NumberOrTensorKind:
    """A Python number of ``kind`` on some paths, a tensor on others (a :class:`PyOrTensor`)."""

    kind: type


@dataclass(frozen=True)
class ListKind:
    """An own list of tensors of one dtype and shape, carried as a :class:`GraphList`."""

    dtype: tf.DType
    shape: tuple


@dataclass(frozen=True)
class ArrayKind:
    """A NumPy array the graph computes (an island's, or NumPy's of a tensor), carried as its tensor."""

    cls: type
    dtype: Any
    dims: tuple


Kind = Union[Plain, Number, NumberOrTensorKind, ListKind, ArrayKind]


def _kind(leaf: Any) -> Kind:
    if isinstance(leaf, GraphList):
        return ListKind(*leaf.spec())
    if isinstance(leaf, PyScalar):
        return Number(leaf.kind)
    if isinstance(leaf, PyOrTensor):
        return NumberOrTensorKind(leaf.kind)
    if isinstance(leaf, (IslandArray, TensorValues)):  # an array the graph computes: carried as its tensor
        return ArrayKind(type(leaf), leaf.dtype, leaf.dims)
    if is_symbolic(leaf):
        return Plain.TENSOR
    if any(is_symbolic(t) for t in tf.nest.flatten(leaf, expand_composites=True)):
        raise ConversionError(f"a {type(leaf).__name__} the graph computes flows through tensor-dependent control flow",
                              code=Code.TENSOR_BRANCH)
    return Plain.PYTHON


def split(values: Any) -> tuple[list, list[Kind], list]:
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
        elif k is not Plain.PYTHON:
            tensors.append(x.tensor if isinstance(x, PyScalar) else x)
    return leaves, kinds, tensors


def join(structure: Any, leaves: list, kinds: list[Kind], tensors) -> Any:
    """Rebuild ``structure`` with the carried tensors back in place (as PyScalars where they were)."""
    out = []
    for leaf, kind in zip(leaves, kinds):
        if kind is Plain.PYTHON:
            out.append(leaf)
        elif kind is Plain.TENSOR:
            out.append(next(tensors))
        elif isinstance(kind, ListKind):
            out.append(GraphList(next(tensors), kind.dtype, kind.shape))
        elif isinstance(kind, ArrayKind):
            out.append(leaf.carried(next(tensors)))
        elif isinstance(kind, NumberOrTensorKind):
            number, tensor, is_number = next(tensors), next(tensors), next(tensors)
            out.append(PyOrTensor(number, kind.kind, tensor, is_number))
        else:
            out.append(PyScalar(next(tensors), kind.kind))
    return tf.nest.pack_sequence_as(structure, out, expand_composites=False)


@dataclass(frozen=True)
class ToGraphList:
    """An own list the sides leave at different lengths becomes a GraphList of this spec."""

    dtype: tf.DType
    shape: tuple

    def apply(self, value: Any) -> Any:
        return GraphList.of(value, self.dtype, self.shape) if type(value) is list else value


@dataclass(frozen=True)
class FillMissing:
    """The function's result, unassigned on this side: zeros of the other side's structure."""

    structure: Any  # of TensorSpecs (zeros) and Python values (as they are)

    def apply(self, value: Any) -> Any:
        if value is not UNDEF:
            return value
        return tf.nest.map_structure(lambda spec: tf.zeros([d or 0 for d in spec.shape.as_list()], spec.dtype)
                                     if isinstance(spec, tf.TensorSpec) else spec, self.structure)


@dataclass(frozen=True)
class ToNumber:
    """A Python number where the other side has a PyScalar or another number: a PyScalar."""

    kind: type

    def apply(self, value: Any) -> Any:
        return PyScalar.of(value, self.kind) if type(value) in PY_SCALARS else value


@dataclass(frozen=True)
class ToUnion:
    """A number on one side, a tensor on the other: a PyOrTensor on both."""

    kind: type
    dtype: tf.DType

    def apply(self, value: Any) -> Any:
        return as_union(value, self.kind, self.dtype)


Fix = Union[ToGraphList, FillMissing, ToNumber, ToUnion]


def fixes(t_out: tuple, f_out: tuple, names: Sequence[str], lists: Sequence[str] = ()) -> dict[int, Fix]:
    """Differences between the sides that ops added to a side's graph can reconcile;
    ``lists``: the own lists among ``names``, which may become GraphLists."""
    found = {i: _fix(name, t_out[i], f_out[i], name in lists) for i, name in enumerate(names)}
    return {i: fix for i, fix in found.items() if fix is not None}


def _fix(name: str, a: Any, b: Any, own_list: bool) -> Fix | None:
    """How the sides' values ``a`` and ``b`` of variable ``name`` are made one, if they differ
    in a way ops can mend."""
    if own_list and _list_like(a) and _list_like(b) and not _lists_alike(a, b):
        return ToGraphList(*common_spec((a, b), name))
    if name == "_jn_ret" and (a is UNDEF) != (b is UNDEF):
        other = b if a is UNDEF else a
        return FillMissing(tf.nest.map_structure(lambda x: tf.TensorSpec(x.shape, x.dtype) if is_symbolic(x) else x,
                                                 other))
    ka, kb = _scalar_kind(a), _scalar_kind(b)
    if ka is not None and ka == kb and not _same_python_number(a, b) and (type(a) in PY_SCALARS
                                                                          or type(b) in PY_SCALARS):
        return ToNumber(ka)
    if number_or_tensor(a) and number_or_tensor(b) and ((ka is None) != (kb is None) or _is_union(a, b)):
        return ToUnion(*union_kind(a, b, name))
    return None


def joinable(a: Any, b: Any) -> bool:
    """Whether two values of one place, one per side of a conditional, can be one output of it
    (as :func:`fixes` reconciles variables): equal Python values, numbers of one kind (as
    PyScalars), a number and a tensor eager would convert it to, tensors of one dtype."""
    try:
        ka, kb = _kind(a), _kind(b)
    except ConversionError:
        return False
    if ka is Plain.PYTHON and kb is Plain.PYTHON:
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


def apply_fixes(out: tuple, fixes: dict[int, Fix]) -> tuple:
    """A side's values, reconciled (in the side's graph): a Python scalar where the other side
    has a PyScalar or another number becomes a PyScalar; a missing result becomes zeros."""
    out = list(out)
    for i, fix in fixes.items():
        out[i] = fix.apply(out[i])
    return tuple(out)


def _list_like(x: Any) -> bool:
    return type(x) is list or isinstance(x, GraphList)


def _lists_alike(a: Any, b: Any) -> bool:
    """Two Python lists of one length: a tensor branch carries their items as they are."""
    return type(a) is list and type(b) is list and len(a) == len(b)


def _same_python_number(a: Any, b: Any) -> bool:
    return type(a) in PY_SCALARS and type(b) in PY_SCALARS and a == b


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
