"""All-or-nothing graphs: every op that can fail decides the run, before any state changes.

Two rules, applied to the function's graph after the trace and to every branch and loop
body as it is traced:

* **Writes wait.**  Every stateful op (variable assignments, optimizer updates, cond/loop
  ops whose bodies write) gets a control dependency, through one barrier, on every op
  that does not depend on a write: assertions, and ops that may fail at run time such
  as a ``gather`` out of range or a ``reshape`` to a wrong size.  A control edge from a
  conditional, loop or function call only waits for it to *start* once TensorFlow lowers
  or inlines it, so such an op is stood for by its outputs as well, and a body's outputs
  wait for every op in it that may fail.
* **Failing ops are not pruned.**  TensorFlow drops an op whose value is unused; a
  failing op must still abort the run, as eager raises.  The graph gets one more output
  that is computed only after every op that may fail (Janus discards its value).

Grappler's dependency optimizer, which removes control edges from stateless ops, is off
for Janus's graphs (``janus._tf_private``).  An assertion that depends on a state change
cannot be ordered before it: :class:`StateBeforeAssertion`, and the caller retraces
without that assumption.  Nor can an op that may fail and runs only after a write (it
reads what was written, or is in a later iteration of a loop that writes): such a graph
is run undoing — the variables it may write are read before the run, the position of
each ``tf.data`` iterator it is fed is saved, and both are put back if it fails
(:mod:`janus.commit.undo`), only while no other Python thread runs, which could write one
of them meanwhile; a graph holding other state (a resource other than a variable), or
advancing an iterator whose position cannot be saved, is not built
(:class:`FailureAfterWrite`).

Taking the next element of an iterator the graph is given (not one it makes from a
dataset) is a state write like a variable's: assertions run before it, so an assumption
about an element's value is not made (:class:`StateBeforeAssertion`).
"""
from __future__ import annotations

from typing import Any, Iterable, Sequence

import tensorflow as tf

from janus import _tf_private
from janus.errors import ConversionError, StateBeforeAssertion
from janus.reporting.codes import Code
from janus.trace.xla import nonzero_constant
from janus_profiler import usercode

_WRITER_PREFIXES = ("Assign", "ResourceApply", "ResourceScatter", "ResourceSparseApply", "ResourceStridedSliceAssign",
                    # tf.random.Generator advances its state variable with these:
                    "RngReadAndSkip", "RngSkip", "StatefulStandardNormal", "StatefulUniform", "StatefulTruncatedNormal",
                    "StatefulRandomBinomial", "NonDeterministicInts")

# Ops that take the next element of an iterator: a write when the iterator is given to the graph.
_GET_NEXT = frozenset({"IteratorGetNext", "IteratorGetNextSync", "IteratorGetNextAsOptional"})

# Ops TensorFlow runs as functions of their own: a control edge from one waits for it to start.
_CONSTRUCTS = frozenset({"If", "StatelessIf", "While", "StatelessWhile", "Case", "StatelessCase",
                         "PartitionedCall", "StatefulPartitionedCall"})

# Ops that cannot fail at run time (writes whose operands the trace checked included).
_NEVER_FAIL = frozenset({
    "Const", "Identity", "IdentityN", "NoOp", "Placeholder", "VarHandleOp", "ReadVariableOp", "Shape", "ShapeN",
    "Size", "Rank", "StopGradient", "PreventGradient", "ZerosLike", "OnesLike", "VarIsInitializedOp",
    "AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp", "OptionalHasValue",
})
_NEVER_FAIL_PREFIXES = ("ResourceApply",)
# Ops that cannot fail when every input and output shape is known as the graph is built
# (TensorFlow's shape inference checked them then) and no input is an index into a tensor.
_FAIL_FREE_WITH_STATIC_SHAPES = frozenset({
    "Abs", "Acos", "Acosh", "Add", "AddN", "AddV2", "All", "Any", "ArgMax", "ArgMin", "Asin", "Asinh", "Atan",
    "Atan2", "Atanh", "AvgPool", "AvgPoolGrad", "BatchMatMul", "BatchMatMulV2", "BatchMatMulV3", "BiasAdd",
    "BiasAddGrad", "BroadcastGradientArgs", "BroadcastTo", "Cast", "Ceil", "ClipByValue", "ConcatV2", "Conv2D",
    "Conv2DBackpropFilter", "Conv2DBackpropInput", "Cos", "Cosh", "Cumsum", "DepthwiseConv2dNative", "DivNoNan",
    "Einsum", "Elu", "EluGrad", "Equal", "Erf", "Erfc", "Exp", "ExpandDims", "Expm1", "Fill", "Floor",
    "FusedBatchNormGradV3", "FusedBatchNormV3", "Greater", "GreaterEqual", "Inv", "IsFinite", "IsInf", "IsNan",
    "L2Loss", "LeakyRelu", "LeakyReluGrad", "Less", "LessEqual", "Lgamma", "Log", "Log1p", "LogSoftmax",
    "LogicalAnd", "LogicalNot", "LogicalOr", "MatMul", "Max", "MaxPool", "MaxPoolGrad", "Maximum", "Mean", "Min",
    "Minimum", "Mul", "MulNoNan", "Neg", "NotEqual", "OneHot", "Pack", "Pow", "Prod", "RealDiv", "Reciprocal",
    "ReciprocalGrad", "Relu", "Relu6", "Relu6Grad", "ReluGrad", "Reshape", "Rint", "Round", "Rsqrt", "RsqrtGrad",
    "Select", "SelectV2", "Selu", "SeluGrad", "Sigmoid", "SigmoidGrad", "Sign", "Sin", "Sinh", "Softmax",
    "SoftmaxCrossEntropyWithLogits", "Softplus", "SoftplusGrad", "Softsign", "SoftsignGrad", "Split", "Sqrt",
    "SqrtGrad", "Square", "SquaredDifference", "Squeeze", "Sub", "Sum", "Tan", "Tanh", "TanhGrad", "Tile",
    "Transpose", "Unpack", "Xdivy", "Xlogy", "Bitcast", "Div", "FloorDiv", "FloorMod", "TruncateDiv", "TruncateMod", "Mod",
    # random numbers from explicit seeds (Janus's draws of eager's numbers, Keras's dropout)
    "StatelessRandomGetKeyCounter", "StatelessRandomGetKeyCounterAlg", "StatelessRandomGetAlg",
    "StatelessRandomUniformV2", "StatelessRandomNormalV2", "StatelessTruncatedNormalV2",
    "StatelessRandomUniformFullIntV2", "StatelessRandomUniform", "StatelessRandomNormal",
    "StatelessTruncatedNormal",
})
# Of those, ops whose only shape failure is operands that do not broadcast, and reductions
# (over constant axes of a tensor of known rank): unknown dimensions are safe where they
# cannot meet another unknown or known size.
_ELEMENTWISE = frozenset({
    "Abs", "Acos", "Acosh", "Add", "AddV2", "Asin", "Asinh", "Atan", "Atan2", "Atanh", "Cast", "Ceil", "Cos", "Cosh",
    "DivNoNan", "Elu", "Equal", "Erf", "Erfc", "Exp", "Expm1", "Floor", "Greater", "GreaterEqual", "Inv", "IsFinite",
    "IsInf", "IsNan", "LeakyRelu", "Less", "LessEqual", "Lgamma", "Log", "Log1p", "LogicalAnd", "LogicalNot",
    "LogicalOr", "Maximum", "Minimum", "Mul", "MulNoNan", "Neg", "NotEqual", "Pow", "RealDiv", "Reciprocal", "Relu",
    "Relu6", "Rint", "Round", "Rsqrt", "Selu", "Sigmoid", "Sign", "Sin", "Sinh", "Softplus", "Softsign", "Sqrt",
    "Square", "SquaredDifference", "Sub", "Tan", "Tanh", "Xdivy", "Xlogy", "Div", "FloorDiv", "FloorMod",
    "TruncateDiv", "TruncateMod", "Mod", "SelectV2",
})
_REDUCTIONS = frozenset({"Sum", "Mean", "Max", "Min", "Prod", "All", "Any"})
# Slices cannot fail with constant bounds of a tensor whose shape is known.
_SLICES = frozenset({"StridedSlice", "Slice"})
# Division of integers by zero raises: only float division is free of failure.
_DIVISIONS = frozenset({"RealDiv", "Div", "FloorDiv", "FloorMod", "TruncateDiv", "TruncateMod", "Mod"})

class FailureAfterWrite(ConversionError):
    """An op that may fail at run time runs only after a state update, and the graph holds
    state it cannot put back: a run it aborted could not be undone."""

    code = Code.STATE_IN_TENSOR_FLOW


def writes_state(op: Any, constructs: set) -> bool:
    """Does ``op`` change state: a variable, or the position of an iterator the graph is
    given?  ``constructs``: cond/loop ops whose bodies do."""
    return op.type.startswith(_WRITER_PREFIXES) or op.type == "StatefulPartitionedCall" or op in constructs \
        or op.type in _GET_NEXT and _given(op.inputs[0])


def _given(resource: Any) -> bool:
    """Is ``resource`` an input of the function's graph (a caller's iterator, fed at each
    call) rather than made by it (``iter(dataset)`` in the function)?  Followed through
    identities and the captures of branch and loop bodies to where it comes from."""
    t = resource
    while True:
        while t.op.type == "Identity" and t.op.inputs:
            t = t.op.inputs[0]
        if t.op.type != "Placeholder":
            return False
        outer = next((external for external, internal in getattr(t.graph, "captures", ()) if internal is t), None)
        if outer is None:
            return True
        t = outer


def graph_writes_state(graph: Any, constructs: set) -> bool:
    return any(writes_state(op, constructs) for op in graph.get_operations())


# Ops TensorFlow's automatic control dependencies count as reading, not writing, the
# resources they are given (``register_read_only_resource_op``); any other op given a
# resource writes it, unless it lists its read-only inputs (function calls do).
_RESOURCE_READS = frozenset({"ReadVariableOp", "VariableShape", "ResourceGather", "ResourceGatherNd",
                             "_ReadVariablesOp"})


def _descendants(ops: list, graph: Any) -> set:
    """Ops that run after any of ``ops``, counting the edges TensorFlow's automatic
    control dependencies will add when the trace ends, as it adds them: every use of a
    resource after a write of it, every write after the reads before it (an ``Identity``
    of a resource is that resource), and every stateful op without resource inputs after
    the one before it (TF runs them in program order: a library's ``Assert`` after a
    ``CheckNumerics`` that reads a written variable runs after the write, and a barrier
    making the write wait for it would close a cycle)."""
    consumers: dict = {}
    last_write: dict = {}
    reads_since: dict = {}
    last_unresourced = None
    for op in graph.get_operations():
        for t in op.inputs:
            consumers.setdefault(t.op, []).append(op)
        for c in op.control_inputs:
            consumers.setdefault(c, []).append(op)
        resources = _resource_uses(op)
        for key, reads in resources.items():
            if key in last_write:
                consumers.setdefault(last_write[key], []).append(op)
            if reads:
                reads_since.setdefault(key, []).append(op)
            else:
                for r in reads_since.pop(key, ()):
                    consumers.setdefault(r, []).append(op)
                last_write[key] = op
        if op.op_def.is_stateful and not resources:
            if last_unresourced is not None:
                consumers.setdefault(last_unresourced, []).append(op)
            last_unresourced = op
    seen: set = set()
    stack = list(ops)
    while stack:
        for nxt in consumers.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def _resource_uses(op: Any) -> dict:
    """The resources ``op`` is given (keyed by the tensor an ``Identity`` chain starts
    from), each True where the op only reads it."""
    positions = [i for i, t in enumerate(op.inputs) if t.dtype == tf.resource]
    if not positions:
        return {}
    if op.type in _RESOURCE_READS:
        read_only = set(positions)
    else:
        try:
            read_only = set(op.get_attr("_read_only_resource_inputs"))
        except ValueError:
            read_only = set()
    uses: dict = {}
    for i in positions:
        t = op.inputs[i]
        while t.op.type == "Identity" and t.op.inputs:
            t = t.op.inputs[0]
        uses[id(t)] = uses.get(id(t), True) and i in read_only
    return uses


def may_fail(op: Any, safe: set) -> bool:
    """Can ``op`` raise when the graph runs as eager would have run it?  Conservative: an op
    not known to be free of failure may fail.  ``safe``: ops known not to (conditionals and
    loops Janus built whose bodies cannot fail, ops a library builds that eager never runs)."""
    kind = op.type
    if op in safe or kind in _NEVER_FAIL or kind.startswith(_NEVER_FAIL_PREFIXES):
        return False
    if kind in _CONSTRUCTS:
        return True
    if kind in _SLICES and all(t.op.type == "Const" for t in op.inputs[1:]):
        return not op.inputs[0].shape.is_fully_defined()
    if kind not in _FAIL_FREE_WITH_STATIC_SHAPES:
        return True
    if kind in _DIVISIONS and not all(t.dtype.is_floating or t.dtype.is_complex for t in op.outputs) \
            and not nonzero_constant(op.inputs[1]):
        return True
    if all(t.shape.is_fully_defined() for t in list(op.inputs) + list(op.outputs)):
        return False
    if kind in _ELEMENTWISE:
        return not _broadcastable([t.shape for t in op.inputs])
    if kind in _REDUCTIONS:
        return op.inputs[0].shape.rank is None or op.inputs[1].op.type != "Const"
    return True


def _broadcastable(shapes: list) -> bool:
    """Shapes that broadcast whatever their unknown dimensions turn out to be: an unknown
    dimension only meets a 1 or nothing (known ones TensorFlow checked already)."""
    if any(s.rank is None for s in shapes):
        return False
    width = max(s.rank for s in shapes)
    for i in range(1, width + 1):
        dims = [s[-i] for s in shapes if s.rank >= i]
        if any(d is None for d in dims) and any(d != 1 for d in dims if d is not None) or \
                sum(d is None for d in dims) > 1:
            return False
    return True


def _completion(ops: Sequence[Any]) -> list:
    """``ops`` as control inputs that mean each of them ran in full: a conditional, loop or
    function call is stood for by its outputs too (a control edge from it waits only for
    it to start once TensorFlow lowers or inlines it)."""
    deps = list(ops)
    for op in ops:
        if op.type in _CONSTRUCTS:
            deps += [tf.identity(t).op for t in op.outputs]
    return deps


def _order_writes(graph: Any, checks: Any, assertions: Sequence = ()) -> list:
    """Make every write of ``graph`` wait for the ops that may fail and do not depend on a
    write; returns the ops that do not depend on a write (all of them in a graph without
    writes).  Edges only go into writers from ops upstream-independent of every writer, so
    no cycle can form.  An op that may fail after a write is noted in ``checks``; one of
    ``assertions`` (op, assumptions) that runs after a write raises :class:`StateBeforeAssertion`."""
    operations = graph.get_operations()
    writers = [op for op in operations if writes_state(op, checks.writer_constructs)]
    if not writers:
        return operations
    downstream = _descendants(writers, graph)
    for op, assumptions in assertions:  # the first only: TF orders later assertions after it
        if op in downstream:
            raise StateBeforeAssertion(assumptions)
    first = _first_take(writers, downstream)
    late = _late_failure(operations, writers, downstream, first, checks.safe_ops)
    if late is not None:
        checks.late_failures.append(f"{_describe(late)} may fail at run time after a state update")
    after_writes = downstream | set(writers)
    before = [op for op in operations if op not in after_writes]
    check_ops = {op for op, _ in assertions}
    _wait_for(graph, writers, [op for op in before if op in check_ops or may_fail(op, checks.safe_ops)])
    if first is not None:
        after_first = _descendants([first], graph)
        for op in writers:
            if op is not first and op not in after_first:
                _tf_private.add_control_inputs(op, [first])
    return before


def _late_failure(operations: list, writers: list, downstream: set, first: Any, safe_ops: Any) -> Any:
    """An op that may fail after a write, or None: one downstream of a write, else a writer
    that may fail itself (a conditional writing on one side, failing on the other), which
    cannot wait for the other writers, nor they for it if it waits for them."""
    late = next((op for op in operations if op in downstream and may_fail(op, safe_ops)), None)
    if late is None and len(writers) > 1:
        late = next((op for op in writers if op is not first and may_fail(op, safe_ops)), None)
    return late


def _wait_for(graph: Any, writers: list, gated: list) -> None:
    """Every writer waits for every op of ``gated`` to have run in full (one barrier)."""
    if not gated:
        return
    with graph.as_default(), graph.control_dependencies(None):
        barrier = _tf_private.barrier(_completion(gated))
    for op in writers:
        _tf_private.add_control_inputs(op, [barrier])


def _first_take(writers: list, downstream: set) -> Any:
    """The one ``get_next`` of a given iterator that no write precedes, if there is one: the
    other writes wait for it, so that its failure (the iterator's end) changes nothing and
    needs no undoing.  With two, either could fail after the other took an element."""
    takes = [op for op in writers if op.type in _GET_NEXT and op not in downstream]
    return takes[0] if len(takes) == 1 else None


def _describe(op: Any) -> str:
    """``Reshape (model.py:12)``: an op and the user's line that created it, where known."""
    for frame in reversed(op.traceback or ()):
        if usercode.is_user_file(frame.filename):
            return f"{op.type} ({frame.filename.rsplit('/', 1)[-1]}:{frame.lineno})"
    return op.type


def gate_state_on_assertions(graph: Any, checks: Any) -> list:
    """The function's graph, once traced: every state change waits for everything that can
    still abort the run; returns the ops that run before any state change.

    An assertion (a speculation's check or the user's ``assert``) that depends on a state
    change cannot be ordered before it: :class:`StateBeforeAssertion`.
    """
    return _order_writes(graph, checks, checks.assertions)


def completion(graph: Any, safe: set, outputs: list) -> tf.Tensor | None:
    """A tensor of ``graph`` computed only after every op of it that may fail and that
    ``outputs`` do not already wait for: one more output of the function, so that no
    failing op is pruned for being unused (None when there is none)."""
    needed = _upstream(_ops_of(outputs), into_constructs=False)
    failing = [op for op in graph.get_operations()
               if (op not in needed or op.type in _CONSTRUCTS) and may_fail(op, safe)]
    if not failing:
        return None
    with graph.as_default(), graph.control_dependencies(None):
        with graph.control_dependencies([_tf_private.barrier(_completion(failing))]):
            return tf.constant(True, name="janus_completed")


def _upstream(ops: Iterable[Any], into_constructs: bool = True) -> set:
    """``ops`` and every op they depend on, through data and control edges.  Without
    ``into_constructs``, not through a conditional's or loop's data inputs: TensorFlow
    lowers them and prunes what feeds only outputs nobody uses, so running the construct
    does not run them all."""
    found: set = set()
    stack = list(ops)
    while stack:
        op = stack.pop()
        if op not in found:
            found.add(op)
            inputs = op.inputs if into_constructs or op.type not in _CONSTRUCTS else ()
            stack += [t.op for t in inputs] + list(op.control_inputs)
    return found


def _ops_of(tensors: Any) -> list:
    return [t.op for t in tf.nest.flatten(tensors, expand_composites=True) if hasattr(t, "op")]


def seal_body(outputs: list, checks: Any, loop_writes: bool = False) -> tuple[list, bool]:
    """In the body of a branch or loop being traced (the default graph): order its writes
    as the function's are, and make ``outputs`` wait for every op of it that may fail.
    Returns the outputs and whether the body may fail.  ``loop_writes``: the body belongs
    to a loop that changes state, where an op that may fail runs after an earlier
    iteration's write (noted in ``checks``)."""
    graph = tf.compat.v1.get_default_graph()
    _order_writes(graph, checks)
    failing = [op for op in graph.get_operations() if may_fail(op, checks.safe_ops)]
    if not failing:
        return list(outputs), False
    if loop_writes:
        checks.late_failures.append(f"{_describe(failing[0])} may fail at run time in a loop that changes state")
    with graph.control_dependencies([_tf_private.barrier(_completion(failing))]):
        return [tf.identity(t) for t in outputs], True


def unused_since(graph: Any, start: int, outputs: Any) -> set:
    """Ops created in ``graph`` since its ``start``-th that ``outputs`` do not need: what a
    library built on the way (``tf.vectorized_map`` traces the loop body once before it
    vectorizes it), which no run executes as eager would."""
    needed = _upstream(_ops_of(outputs))
    return {op for op in graph.get_operations()[start:] if op not in needed}
