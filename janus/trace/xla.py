"""Which ops of a traced graph XLA may compile without changing what the program means.

XLA drops ``tf.debugging.Assert`` and cannot order a variable write after an assertion
(``../shared/TF-NOTES.md``), so Janus never compiles a whole graph.  It marks for XLA
clusters only ops that

* run before any state change (``janus.commit.atomicity`` orders every write after the
  ops that can still abort the run, and returns them),
* are not assertions, and
* are on an allowlist of dense computations whose XLA kernels raise no error that
  eager would not, and fail on nothing eager would raise on: a ``gather`` out of range,
  an integer division by zero, a ``Cholesky`` of a matrix that is not positive definite
  all raise in eager but give some number under XLA, so they stay outside.  Random ops
  stay outside too (their XLA kernels draw other numbers than eager's), as do loops,
  conditionals and calls (their bodies may hold assertions).

What XLA changes is float round-off: fused kernels sum in another order than eager's.
"""
from __future__ import annotations

from typing import Any, Iterable

import tensorflow as tf

from janus import _tf_private

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
    """The ops XLA may compile: the compilable ones among ``before_writes`` but ``checks``."""
    excluded = set(checks)
    return [op for op in before_writes if op not in excluded and compilable(op)]


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
