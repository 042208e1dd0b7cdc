"""Which ops of a traced graph XLA may compile without changing what the program means.

XLA drops ``tf.debugging.Assert`` and cannot order a variable write after an assertion
(``../shared/TF-NOTES.md``), so Janus never compiles a whole graph.  It marks for XLA
clusters only ops that

* run before any state change (``janus.trace.atomicity`` orders every write after the
  ops that can still abort the run, and returns them),
* are not assertions, and
* are on an allowlist of dense computations whose XLA kernels raise no error that
  eager would not, and fail on nothing eager would raise on: a ``gather`` out of range,
  an integer division by zero, a ``Cholesky`` of a matrix that is not positive definite
  all raise in eager but give some number under XLA, so they stay outside.  Random ops
  stay outside too (their XLA kernels draw other numbers than eager's), as do loops,
  conditionals and calls (their bodies may hold assertions).

What XLA changes is float round-off: fused kernels sum in another order than eager's.

Two rules keep the marks from costing more than XLA can give (``docs/xla.md``: the tree
examples ran 4-25x slower without them): an operand XLA compiles into the program (a
``Reshape``'s shape, a ``ConcatOffset``'s shapes) must have the same value on every run, or
each new value compiles the cluster again; and a group of marked ops with fewer than
``config.LIMITS.min_cluster_work`` ops that compute is not marked, since every cluster costs a launch
on every run (a lone constant was a cluster of its own).
"""
from __future__ import annotations

from typing import Any, Iterable

import tensorflow as tf

from janus import _tf_private, config

# Dense ops whose XLA kernels compute what eager computes, up to float round-off.
_COMPILABLE = frozenset("""
    Abs Acos Acosh AddN AddV2 All Any ArgMax ArgMin Asin Asinh Atan Atan2 Atanh AvgPool AvgPoolGrad
    BatchMatMul BatchMatMulV2 BatchMatMulV3 BiasAdd BiasAddGrad BroadcastArgs BroadcastGradientArgs BroadcastTo
    Cast Ceil ClipByValue ConcatOffset ConcatV2 Const Conv2D Conv2DBackpropFilter Conv2DBackpropInput Cos Cosh Cumprod Cumsum
    DepthwiseConv2dNative DepthwiseConv2dNativeBackpropFilter DepthwiseConv2dNativeBackpropInput DivNoNan
    Einsum Elu EluGrad Equal Erf Erfc Exp ExpandDims Expm1 Fill Floor FusedBatchNormGradV3 FusedBatchNormV3
    FloorDiv FloorMod Greater GreaterEqual Identity IdentityN InvertPermutation IsFinite IsInf IsNan L2Loss LeakyRelu LeakyReluGrad
    Less LessEqual Log Log1p LogSoftmax LogicalAnd LogicalNot LogicalOr MatMul Max MaxPool MaxPoolGrad Maximum
    Mean Min Minimum MirrorPad Mul MulNoNan Neg NotEqual OneHot OnesLike Pack Pad PadV2 Pow Prod ReadVariableOp
    RealDiv Reciprocal ReciprocalGrad Relu Relu6 Relu6Grad ReluGrad Reshape Reverse ReverseV2 Round Rsqrt
    RsqrtGrad Select SelectV2 Selu SeluGrad Shape ShapeN Sigmoid SigmoidGrad Sign Sin Sinh Size Slice Snapshot
    Softmax SoftmaxCrossEntropyWithLogits Softplus SoftplusGrad Softsign SoftsignGrad Split SplitV Sqrt SqrtGrad
    Square SquaredDifference Squeeze StopGradient StridedSlice StridedSliceGrad Sub Sum Tan Tanh TanhGrad Tile
    Transpose TruncateDiv TruncateMod Unpack Xdivy Xlog1py Xlogy ZerosLike
""".split())

# Ops of the allowlist that divide: fine for floats; for integers (eager raises on / 0)
# only by a constant without zeros (the gradient of a concat computes ``axis % rank``).
_DIVIDING = frozenset({"RealDiv", "Reciprocal", "Pow", "FloorDiv", "FloorMod", "TruncateDiv", "TruncateMod"})


def compilable(op: Any) -> bool:
    """May ``op`` be compiled by XLA without changing what eager would do (but round-off)?
    Only with static shapes in and out: a cluster fed a symbolic dimension would be compiled
    again for every size (``tf.shape`` of a tree batch has a static shape, its input has not)."""
    if op.type not in _COMPILABLE:
        return False
    if op.type in _DIVIDING and any(t.dtype.is_integer for t in op.inputs) and not nonzero_constant(op.inputs[-1]):
        return False
    return all(t.shape.is_fully_defined() for t in list(op.inputs) + list(op.outputs))


# Ops whose XLA kernels round differently from TensorFlow's on CPU (measured on TF 2.21:
# tanh, exp, reduce_sum differ bit-wise; other transcendentals use approximations of their
# own, reductions another summation order).
_OTHER_ROUNDING = frozenset("""
    Acos Acosh Asin Asinh Atan Atan2 Atanh AvgPool AvgPoolGrad BiasAddGrad Conv2DBackpropFilter Cos Cosh
    Cumprod Cumsum DepthwiseConv2dNativeBackpropFilter Elu EluGrad Erf Erfc Exp Expm1 FusedBatchNormGradV3
    FusedBatchNormV3 L2Loss Log Log1p LogSoftmax Mean Pow Prod Rsqrt RsqrtGrad Selu SeluGrad Sigmoid
    SigmoidGrad Sin Sinh Softmax SoftmaxCrossEntropyWithLogits Softplus SoftplusGrad Softsign SoftsignGrad
    Sum Tan Tanh TanhGrad Xlog1py Xlogy
""".split())
# A product that is added to something: XLA fuses it into one fused multiply-add (one
# rounding instead of two; measured: ``x * 3.0 + 1.0``).
_PRODUCTS = frozenset({"Mul", "MulNoNan"})
_SUMS = frozenset({"Add", "AddV2", "Sub", "BiasAdd", "AddN"})


def candidates(before_writes: Iterable[Any], checks: Iterable[Any]) -> list[Any]:
    """The ops to compile with XLA: the compilable ones among ``before_writes`` but
    ``checks``, whose compile-time operands have one value (:func:`fixed_constant_operands`),
    in groups worth a cluster (:func:`worthwhile`)."""
    excluded = set(checks)
    fixed: dict = {}
    return worthwhile([op for op in before_writes
                       if op not in excluded and compilable(op) and fixed_constant_operands(op, fixed)])


# The operands XLA needs as compile-time constants (``CompileTimeConstantInput`` of the
# tf2xla kernels) by position, None for all: their values are part of the compiled program
# and of the compilation cache's key.
_CONSTANT_OPERANDS = {
    "ArgMax": (1,), "ArgMin": (1,), "AvgPoolGrad": (0,), "BroadcastArgs": (0, 1), "BroadcastGradientArgs": (0, 1),
    "BroadcastTo": (1,), "ConcatOffset": None, "ConcatV2": (-1,), "Conv2DBackpropFilter": (1,),
    "Conv2DBackpropInput": (0,), "Cumprod": (1,), "Cumsum": (1,), "DepthwiseConv2dNativeBackpropFilter": (1,),
    "DepthwiseConv2dNativeBackpropInput": (0,), "ExpandDims": (1,), "Fill": (0,), "InvertPermutation": (0,),
    "All": (1,), "Any": (1,), "Max": (1,), "Mean": (1,), "Min": (1,), "Prod": (1,), "Sum": (1,),
    "MirrorPad": (1,), "OneHot": (1,), "Pad": (1,), "PadV2": (1,), "Reshape": (1,), "Reverse": (1,),
    "ReverseV2": (1,), "Slice": (1, 2), "Split": (0,), "SplitV": (1, 2), "StridedSlice": (1, 2, 3),
    "StridedSliceGrad": (0, 1, 2, 3), "Tile": (1,), "Transpose": (1,),
}


def fixed_constant_operands(op: Any, memo: dict) -> bool:
    """Have the operands XLA compiles into ``op``'s program one value for every run?  A
    static shape is not enough: ``ConcatOffset`` of two ``[3]`` shape vectors compiled again
    for every tree batch, its values being the batch's node counts (``memo``: for
    :func:`fixed_value`)."""
    which = _CONSTANT_OPERANDS.get(op.type, ())
    inputs = list(op.inputs)
    return all(fixed_value(inputs[i], memo) for i in (range(len(inputs)) if which is None else which))


_SHAPE_QUERIES = frozenset({"Shape", "ShapeN", "Size", "Rank"})


def fixed_value(tensor: Any, memo: dict) -> bool:
    """Has ``tensor`` the same value on every run of its graph?  Yes if pure ops
    (:data:`_COMPILABLE` but variable reads) compute it from constants and static shapes, or
    if it is a shape whose dimensions are all known (``tf.shape(x)[1:]`` of ``[None, 4, 4]``)."""
    stack = [tensor.op]
    while stack:
        op = stack[-1]
        if op in memo:
            stack.pop()
            continue
        if op.type == "Const":
            memo[op] = True
        elif op.type in _SHAPE_QUERIES:
            memo[op] = all(t.shape.is_fully_defined() for t in op.inputs)
        elif op.type not in _COMPILABLE or op.type == "ReadVariableOp":
            memo[op] = False
        else:
            pending = [t.op for t in op.inputs if t.op not in memo]
            if pending:
                stack.extend(pending)
                continue
            memo[op] = all(memo[t.op] for t in op.inputs)
        stack.pop()
    return memo[tensor.op] or _tf_private.known_shape_value(tensor)


# Ops that move or name values and compute nothing: they do not count towards a cluster's work.
_NO_WORK = frozenset({"Const", "Identity", "IdentityN", "Snapshot", "StopGradient", "ReadVariableOp",
                      "Shape", "ShapeN", "Size"})


def worthwhile(ops: list[Any]) -> list[Any]:
    """``ops`` but those in groups (connected through edges between them, as TensorFlow's
    clustering merges them) with fewer than ``config.LIMITS.min_cluster_work`` ops that compute.
    Every cluster costs an ``_XlaCompile`` and an ``_XlaRun`` op and a cache lookup on
    every run: the treernn graph had 289 clusters, 201 of them a lone constant."""
    marked = set(ops)
    parent = {op: op for op in ops}

    def root(op: Any) -> Any:
        while parent[op] is not op:
            parent[op] = parent[parent[op]]
            op = parent[op]
        return op

    for op in ops:
        for source in [t.op for t in op.inputs] + list(op.control_inputs):
            if source in marked:
                parent[root(source)] = root(op)
    work: dict = {}
    least = config.LIMITS.min_cluster_work
    for op in ops:
        if op.type not in _NO_WORK:
            work[root(op)] = work.get(root(op), 0) + 1
    return [op for op in ops if work.get(root(op), 0) >= least]


def rounds_differently(ops: list[Any]) -> list[str]:
    """Op types among ``ops`` (:func:`candidates`) that XLA computes with other round-off
    than TensorFlow's kernels (a multiply-add counts as ``Mul+Add``)."""
    marked = set(ops)
    found = {op.type for op in ops if op.type in _OTHER_ROUNDING}
    for op in ops:
        if op.type in _SUMS and any(t.op.type in _PRODUCTS and t.op in marked for t in op.inputs):
            found.add("Mul+Add")
    return sorted(found)


def nonzero_constant(tensor: Any) -> bool:
    """``tensor`` is a constant without a zero (an integer divisor that cannot fail)."""
    if tensor.op.type != "Const":
        return False
    return bool((tf.make_ndarray(tensor.op.get_attr("value")) != 0).all())


def mark(ops: list[Any]) -> int:
    """Mark ``ops`` (:func:`candidates`) for XLA clusters; returns how many."""
    for op in ops:
        _tf_private.mark_for_xla(op)
    return len(ops)
