"""A case's code on a block of nodes, batched op by op (what ``tf.vectorized_map`` does,
for the ops tree models use, with fewer ops).

The code is traced once on the block's *loop index* (a placeholder standing for any node
of the block): every op that depends on it computes something per node.  Each such op
is then emitted once for the whole block, on tensors whose first dimension is the node:
a per-node tensor of shape ``S`` is held either *stacked* (``[n, *S]``) or, when
``S[0] == 1`` (a row, the usual ``[1, units]`` of a Keras layer), *rowed*
(``[n, *S[1:]]``: the nodes' rows one under another).  Rowed tensors feed a ``MatMul``,
a ``ConcatV2`` or ``Split`` along a later axis, elementwise ops and ``BiasAdd`` as they
are: the block is what a hand-written level-by-level graph computes, without the
reshapes ``tf.vectorized_map`` puts around each op, and with the same kernels on the
same shapes (a ``MatMul`` of the block's rows is ``tf.vectorized_map``'s too).

An op is emitted only where the rule for its type is exact for every node (each node's
values are computed from that node's inputs alone, with the op's own kernel); the
emitted tensor's static shape is checked against the rule's claim.  Anything else (an
op type without a rule, a dynamic per-node shape, an op with a custom gradient or
control inputs, a result that does not depend on the node) raises :class:`Unbatchable`
and the caller uses ``tf.vectorized_map``.  Ops emitted through ``tf.raw_ops`` record
their gradients like any op.
"""
from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, Callable

import tensorflow as tf

UNARY = frozenset({
    "Abs", "Acos", "Asin", "Atan", "Cast", "Ceil", "Cos", "Cosh", "Elu", "Erf", "Exp", "Expm1", "Floor", "Identity",
    "IsFinite", "IsInf", "IsNan", "Log", "Log1p", "LogicalNot", "Neg", "Reciprocal", "Relu", "Relu6", "Rint", "Round",
    "Rsqrt", "Selu", "Sigmoid", "Sign", "Sin", "Sinh", "Softplus", "Softsign", "Sqrt", "Square", "StopGradient",
    "Tan", "Tanh"})
BROADCASTING = frozenset({
    "Add", "AddV2", "Atan2", "Div", "DivNoNan", "Equal", "FloorDiv", "FloorMod", "Greater", "GreaterEqual", "Less",
    "LessEqual", "LogicalAnd", "LogicalOr", "Maximum", "Minimum", "Mod", "Mul", "MulNoNan", "NotEqual", "Pow",
    "RealDiv", "SelectV2", "SquaredDifference", "Sub", "TruncateDiv", "TruncateMod", "Xdivy", "Xlogy"})
RESHAPES = frozenset({"Reshape", "Squeeze", "ExpandDims"})
STATIC = frozenset({"Shape", "Size", "Rank"})


class Unbatchable(Exception):
    """This code is not batched here (the caller uses ``tf.vectorized_map``)."""


@dataclass
class PerNode:
    """A case's code traced once on a loop index (for every height of the case): the ops
    its results need, in creation order, and the placeholders of the tables it read."""

    index: tf.Tensor
    tables: list[tf.Tensor]
    out: Any
    ops: list


def trace(body: Callable[[tf.Tensor, Any], Any], tables: Any) -> PerNode:
    """Trace ``body`` (per node: called with the node's index and the tables) on a
    placeholder index and placeholders of ``tables``."""
    graph = tf.compat.v1.get_default_graph()
    start = len(graph.get_operations())
    index = tf.compat.v1.placeholder_with_default(tf.constant(0, tf.int32), [])
    holders = tf.nest.map_structure(
        lambda t: tf.compat.v1.placeholder_with_default(tf.zeros([0, *t.shape[1:]], t.dtype), [None, *t.shape[1:]]),
        tables)
    out = body(index, holders)
    return PerNode(index, tf.nest.flatten(holders), out, _needed(graph.get_operations()[start:], tf.nest.flatten(out)))


def batch(per_node: PerNode, nodes: tf.Tensor, tables: Any, rowed: list[bool]) -> Any:
    """The traced code on every index of ``nodes`` reading ``tables``: its results'
    leaves batched, the ``j``-th rowed if ``rowed[j]`` (else stacked).  Raises
    :class:`Unbatchable` if an op has no exact rule."""
    rows = _Rows(per_node, nodes, tables)
    try:
        for op in per_node.ops:
            rows.convert(op)
        flat = tf.nest.flatten(per_node.out)
        return tf.nest.pack_sequence_as(per_node.out, [rows.result(t, r) for t, r in zip(flat, rowed)])
    except Unbatchable:
        raise
    except Exception as e:  # noqa: BLE001 - an emitted op refused its operands: no user code runs here
        raise Unbatchable(f"{type(e).__name__}: {str(e).splitlines()[0][:120] if str(e) else ''}") from None


def _needed(created: list, outputs: list) -> list:
    """The ops among ``created`` the outputs depend on, in creation order."""
    ids = {id(op) for op in created}
    keep: set[int] = set()
    stack = [t.op for t in outputs if id(t.op) in ids]
    while stack:
        op = stack.pop()
        if id(op) in keep:
            continue
        keep.add(id(op))
        stack.extend(t.op for t in op.inputs if id(t.op) in ids)
        stack.extend(c for c in op.control_inputs if id(c) in ids)
    return [op for op in created if id(op) in keep]


def _shape(t: tf.Tensor) -> list[int]:
    if not t.shape.is_fully_defined():
        raise Unbatchable(f"{t.op.type} has no static per-node shape")
    return t.shape.as_list()


def _constant(t: tf.Tensor) -> Any:
    value = tf.get_static_value(t)
    if value is None:
        raise Unbatchable(f"a non-constant {t.op.type} operand")
    return value


class _Rows:
    """The block's tensors of the per-node tensors that depend on the index."""

    def __init__(self, per_node: PerNode, nodes: tf.Tensor, tables: Any):
        self.batched: dict[int, tuple[tf.Tensor, bool]] = {id(per_node.index): (nodes, False)}  # id -> (tensor, rowed)
        # per-node tensors the same for every node, given anew: the tables, what is computed from them
        self.replaced: dict[int, tf.Tensor] = {id(h): t for h, t in zip(per_node.tables, tf.nest.flatten(tables))}
        self.keep: list[tf.Tensor] = [per_node.index]

    # -- forms ---------------------------------------------------------------------
    def varies(self, t: tf.Tensor) -> bool:
        return id(t) in self.batched

    def plain(self, t: tf.Tensor) -> tf.Tensor:
        t = self.replaced.get(id(t), t)
        if tf.is_symbolic_tensor(t) and t.op.type == "Const" and t.graph is not tf.compat.v1.get_default_graph():
            # a constant of another graph (traced at a lower height, outside a conditional) is
            # made here anew: captured, it would be an input, and not known to shape functions
            t = self.replaced[id(t)] = tf.constant(tf.get_static_value(t), t.dtype)
        return t

    def stacked(self, t: tf.Tensor) -> tf.Tensor:
        b, rowed = self.batched[id(t)]
        return tf.expand_dims(b, 1) if rowed else b

    def rowed(self, t: tf.Tensor) -> tf.Tensor:
        b, rowed = self.batched[id(t)]
        return b if rowed else tf.squeeze(b, [1])

    def is_row(self, t: tf.Tensor) -> bool:
        s = _shape(t)
        return len(s) >= 1 and s[0] == 1

    def set(self, t: tf.Tensor, b: tf.Tensor, rowed: bool) -> None:
        s = _shape(t)
        want = s[1:] if rowed else s
        if b.dtype != t.dtype or b.shape.rank != len(want) + 1 or not b.shape[1:].is_compatible_with(want):
            raise Unbatchable(f"{t.op.type}: batched shape {b.shape} is not that of {s} per node")
        self.batched[id(t)] = (b, rowed)
        self.keep.append(t)

    def result(self, t: tf.Tensor, rowed: bool) -> tf.Tensor:
        if not self.varies(t):
            raise Unbatchable("a result is the same for every node")
        if rowed and not self.is_row(t):
            raise Unbatchable("a result is not a row")
        return self.rowed(t) if rowed else self.stacked(t)

    # -- one op ----------------------------------------------------------------------
    def convert(self, op: Any) -> None:
        inputs = list(op.inputs)
        varies = any(self.varies(t) for t in inputs)
        if not varies and not any(id(t) in self.replaced for t in inputs):
            return  # the same for every node: computed once, as traced
        if op.control_inputs:
            raise Unbatchable(f"{op.type} has control inputs")
        if "_gradient_op_type" in op.node_def.attr or op.op_def.is_stateful:
            raise Unbatchable(f"{op.type} has a gradient of its own or state")
        if not varies:  # computed from a per-node shape: again, from the shape
            for y, b in zip(op.outputs, self.emit(op, [self.plain(t) for t in inputs])):
                self.replaced[id(y)] = b
            return
        rule = _RULES.get(op.type)
        if rule is None:
            for group, grouped in ((UNARY, _unary), (BROADCASTING, _broadcasting), (RESHAPES, _reshape),
                                   (STATIC, _static)):
                if op.type in group:
                    rule = grouped
        if rule is None:
            raise Unbatchable(f"no rule for {op.type}")
        rule(self, op, inputs)

    def emit(self, op: Any, inputs: list, **attrs: Any) -> list[tf.Tensor]:
        """``op``'s type on ``inputs`` (flat, in ``op.inputs`` order), with its attributes
        except those ``attrs`` replace, through ``tf.raw_ops``."""
        kwargs: dict[str, Any] = {}
        inferred: set[str] = set()
        at = 0
        for arg in op.op_def.input_arg:
            inferred.update(a for a in (arg.type_attr, arg.number_attr, arg.type_list_attr) if a)
            if arg.number_attr or arg.type_list_attr:
                count = op.get_attr(arg.number_attr) if arg.number_attr else len(op.get_attr(arg.type_list_attr))
                kwargs[arg.name] = inputs[at:at + count]
                at += count
            else:
                kwargs[arg.name] = inputs[at]
                at += 1
        for attr in op.op_def.attr:
            if attr.name not in inferred:
                kwargs[attr.name] = attrs.get(attr.name, op.get_attr(attr.name))
        raw = getattr(tf.raw_ops, op.type)
        names = [p for p in inspect.signature(raw).parameters if p != "name"]
        if len(names) != len(kwargs):
            raise Unbatchable(f"tf.raw_ops.{op.type} takes other arguments than the op")
        out = raw(**{python: value for python, value in zip(names, kwargs.values())})  # the same order, renamed
        return list(out) if isinstance(out, (list, tuple)) else [out]


def _axis(value: Any, rank: int) -> int:
    axis = int(value)
    if not -rank <= axis < rank:
        raise Unbatchable("an axis out of range")
    return axis % rank


def _unary(rows: _Rows, op: Any, inputs: list) -> None:
    (x,), (y,) = inputs, op.outputs
    if _shape(x) != _shape(y):
        raise Unbatchable(f"{op.type} changes the shape")
    b, rowed = rows.batched[id(x)]
    if op.type == "Identity":
        rows.set(y, b, rowed)
        return
    rows.set(y, rows.emit(op, [b])[0], rowed)


def _broadcasting(rows: _Rows, op: Any, inputs: list) -> None:
    (y,) = op.outputs
    so = _shape(y)
    shapes = [_shape(t) if rows.varies(t) else rows.plain(t).shape.as_list() if rows.plain(t).shape.rank is not None
              else None for t in inputs]
    if any(s is None or len(s) > len(so) for s in shapes):
        raise Unbatchable(f"{op.type} broadcasts over the node")
    row = rows.is_row(y) and all(
        (len(s) == len(so) and s[0] == 1) if rows.varies(t) else (len(s) < len(so) or s[0] == 1)
        for t, s in zip(inputs, shapes))
    args = []
    for t, s in zip(inputs, shapes):
        if not rows.varies(t):
            args.append(rows.plain(t))
        elif row:
            args.append(rows.rowed(t))
        else:
            b = rows.stacked(t)
            for _ in range(len(so) - len(s)):
                b = tf.expand_dims(b, 1)
            args.append(b)
    rows.set(y, rows.emit(op, args)[0], row)


def _bias_add(rows: _Rows, op: Any, inputs: list) -> None:
    x, bias = inputs
    if rows.varies(bias) or op.get_attr("data_format") not in (b"NHWC", "NHWC"):
        raise Unbatchable("BiasAdd of a per-node bias or channels first")
    row = rows.is_row(x) and len(_shape(x)) >= 2
    rows.set(op.outputs[0], rows.emit(op, [rows.rowed(x) if row else rows.stacked(x), rows.plain(bias)])[0], row)


def _matmul(rows: _Rows, op: Any, inputs: list) -> None:
    a, b = inputs
    if rows.varies(b) or op.get_attr("transpose_a") or _shape(a)[0] != 1:
        raise Unbatchable("MatMul of a per-node right operand, or of more than one row")
    rows.set(op.outputs[0], rows.emit(op, [rows.rowed(a), rows.plain(b)])[0], True)


def _concat(rows: _Rows, op: Any, inputs: list) -> None:
    values, axis = inputs[:-1], inputs[-1]
    if rows.varies(axis) or not all(rows.varies(t) for t in values):
        raise Unbatchable("ConcatV2 of a per-node axis or of a value the same for every node")
    a = _axis(_constant(rows.plain(axis)), len(_shape(values[0])))
    row = a >= 1 and all(rows.is_row(t) for t in values)
    parts = [rows.rowed(t) if row else rows.stacked(t) for t in values]
    rows.set(op.outputs[0], rows.emit(op, [*parts, tf.constant(a if row else a + 1, axis.dtype)])[0], row)


def _split(rows: _Rows, op: Any, inputs: list) -> None:
    dim, x = inputs
    if rows.varies(dim):
        raise Unbatchable("Split along a per-node axis")
    a = _axis(_constant(rows.plain(dim)), len(_shape(x)))
    row = a >= 1 and rows.is_row(x)
    outs = rows.emit(op, [tf.constant(a if row else a + 1, dim.dtype), rows.rowed(x) if row else rows.stacked(x)])
    for y, b in zip(op.outputs, outs):
        rows.set(y, b, row)


def _split_v(rows: _Rows, op: Any, inputs: list) -> None:
    x, sizes, dim = inputs
    if rows.varies(sizes) or rows.varies(dim):
        raise Unbatchable("SplitV with per-node sizes or axis")
    a = _axis(_constant(rows.plain(dim)), len(_shape(x)))
    row = a >= 1 and rows.is_row(x)
    outs = rows.emit(op, [rows.rowed(x) if row else rows.stacked(x), rows.plain(sizes),
                          tf.constant(a if row else a + 1, dim.dtype)])
    for y, b in zip(op.outputs, outs):
        rows.set(y, b, row)


def _pack(rows: _Rows, op: Any, inputs: list) -> None:
    if not all(rows.varies(t) for t in inputs):
        raise Unbatchable("Pack of a value the same for every node")
    a = _axis(op.get_attr("axis"), len(_shape(inputs[0])) + 1)
    (y,) = op.outputs
    if len(inputs) == 1 and a == 0:  # [x]: a row of one node's x, the stacked x of the block
        rows.set(y, rows.stacked(inputs[0]), True)
        return
    rows.set(y, rows.emit(op, [rows.stacked(t) for t in inputs], axis=a + 1)[0], False)


def _reshape(rows: _Rows, op: Any, inputs: list) -> None:
    x, (y,) = inputs[0], op.outputs
    if any(rows.varies(t) for t in inputs[1:]):
        raise Unbatchable(f"{op.type} to a per-node shape")
    so = _shape(y)
    row = rows.is_row(y)
    want = so[1:] if row else so
    b, _ = rows.batched[id(x)]
    if b.shape[1:].is_fully_defined() and b.shape[1:].as_list() == want:
        rows.set(y, b, row)  # each node's values, row-major, already in that shape
        return
    if 0 in want:
        raise Unbatchable(f"{op.type} to an empty per-node shape")
    rows.set(y, tf.reshape(b, [-1, *want]), row)


def _static(rows: _Rows, op: Any, inputs: list) -> None:
    (y,) = op.outputs
    rows.replaced[id(y)] = tf.constant(_constant_of_shape(op, inputs[0]), y.dtype)


def _constant_of_shape(op: Any, x: tf.Tensor) -> Any:
    s = _shape(x)
    if op.type == "Shape":
        return s
    if op.type == "Rank":
        return len(s)
    size = 1
    for d in s:
        size *= d
    return size


def _gather(rows: _Rows, op: Any, inputs: list) -> None:
    params, indices, axis = inputs
    if rows.varies(params) or rows.varies(axis) or op.get_attr("batch_dims") != 0 or _constant(rows.plain(axis)) != 0:
        raise Unbatchable("GatherV2 from per-node values or along another axis")
    b, rowed = rows.batched[id(indices)]
    rows.set(op.outputs[0], rows.emit(op, [rows.plain(params), b, rows.plain(axis)])[0], rowed)


def _strided_slice(rows: _Rows, op: Any, inputs: list) -> None:
    x, *bounds = inputs
    if any(rows.varies(t) for t in bounds):
        raise Unbatchable("StridedSlice with per-node bounds")
    begin, end, strides = ([0 if i < 2 else 1, *_constant(rows.plain(t)).tolist()] for i, t in enumerate(bounds))
    masks = {m: op.get_attr(m) << 1 for m in ("begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask",
                                              "shrink_axis_mask")}
    masks["begin_mask"] |= 1
    masks["end_mask"] |= 1  # and the whole block along the new first axis
    consts = [tf.constant(v, t.dtype) for v, t in zip((begin, end, strides), bounds)]
    rows.set(op.outputs[0], rows.emit(op, [rows.stacked(x), *consts], **masks)[0], False)


_RULES: dict[str, Callable[[_Rows, Any, list], None]] = {
    "BiasAdd": _bias_add, "MatMul": _matmul, "ConcatV2": _concat, "Split": _split, "SplitV": _split_v,
    "Pack": _pack, "GatherV2": _gather, "StridedSlice": _strided_slice}
