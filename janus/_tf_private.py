"""The only place Janus touches TensorFlow internals, each use with the reason.

Everything else in Janus uses public TensorFlow APIs.
"""
from __future__ import annotations

import itertools
import weakref
from typing import Any, Callable, Sequence

import tensorflow as tf
from tensorflow.python import pywrap_tfe as _pywrap_tfe
from tensorflow.python.eager import cancellation as _cancellation
from tensorflow.python.eager import context as _eager_context
from tensorflow.python.eager import execute as _execute
from tensorflow.python.eager.polymorphic_function import atomic_function as _atomic_function
from tensorflow.python.ops import handle_data_util as _handle_data_util
from tensorflow.python.framework import func_graph
from tensorflow.python.framework import ops as tf_ops
from tensorflow.python.ops import cond_v2
from tensorflow.python.ops import control_flow_util_v2 as cf_util


def call_time_input(graph: Any, closure: Callable[[], Any], spec: tf.TensorSpec, key: str):
    """A placeholder of ``graph`` whose value is ``closure()`` at each call.

    Why: heap tensors (``self.h``, a global) must be graph inputs fed fresh at every
    call, never constants captured at trace time, and which ones exist is only known
    while tracing.  ``FuncGraph.capture_call_time_value`` is the FuncGraph method that
    does exactly this (it is how ``tf.function`` implements late-bound captures); it is
    a method of TF's internal ``FuncGraph`` class, hence it lives here.  The capture is
    made on the outermost graph so that branch and loop bodies capture it normally.
    """
    with graph.as_default():
        return graph.capture_call_time_value(closure, spec, key=key)


def call_flat(concrete: Any, inputs: Sequence[Any], xla: bool = False) -> Any:
    """Call a concrete function with already-flat tensor inputs.

    Why: ``ConcreteFunction.__call__`` re-validates and re-flattens structured
    arguments on every call (tens of microseconds); Janus has already checked the
    inputs with its own generated guard, so it calls the flat entry point.  ``xla``: the
    graph has XLA cluster marks; Grappler's remapper is off for it, since the ops it
    fuses (``MatMul`` + ``BiasAdd`` into ``_FusedMatMul``) lose the marks and cut the
    clusters apart (the LSTM example: 121 clusters, one per time step and more).

    When no gradient tape (nor forward accumulator) is active, the call goes straight to
    the function-call op, as ``ConcreteFunction._call_flat`` does itself in that case
    (``AtomicFunction.call_flat`` -> ``Context.call_function`` -> ``execute``), minus the
    per-call work Janus does once per graph: the call's attributes (the exact-arithmetic
    options), the function's name and output count, and swapping the thread's options in
    and out.  A failed run's error goes through TensorFlow's own ``InterpolateRuntimeError``
    (the creation stack of the op that failed).  Under a tape, ``_call_flat`` records the
    call for the gradient.
    """
    ctx = _eager_context.context()
    base = ctx.function_call_options
    if _pywrap_tfe.TFE_Py_TapeSetIsEmpty() and ctx.executing_eagerly() and _cancellation.context() is None:
        call = _FLAT_CALLS.get(concrete)
        if call is None:
            call = _FLAT_CALLS[concrete] = _FlatCall(concrete)
        return call(ctx, base, list(inputs), xla)
    ctx.function_call_options = _exact_call_options(base, remapping=not xla)
    try:
        return concrete._call_flat(list(inputs), concrete.captured_inputs)  # noqa: SLF001
    finally:
        ctx.function_call_options = base


class _FlatCall:
    """What a tape-free call of one concrete function needs, computed once.

    It refers to its concrete function weakly: ``_FLAT_CALLS`` is keyed weakly on it, and
    a value that held its key would keep every graph Janus ever built (its ``FuncGraph``,
    and the function TensorFlow's context holds until the ``AtomicFunction`` dies).  Nor
    does it hold the ``AtomicFunction``: kept past its concrete function, a new Janus
    function per epoch grew by 0.27 MB of resident memory per epoch against 0.09 MB
    without (``benchmarks/memory.py``'s program, 50 epochs; read from the concrete function
    at each call instead)."""

    def __init__(self, concrete: Any):
        atomic = concrete._inference_function  # noqa: SLF001 - the function _call_flat runs without a tape
        self.concrete = weakref.ref(concrete)
        self.name = atomic.name.decode("utf-8")
        outputs = atomic.function_type.flat_outputs
        self.count = len(outputs)
        self.handle_data = [(i, t.dtype._handle_data.shape_inference)  # noqa: SLF001
                            for i, t in enumerate(outputs) if t.dtype._handle_data]  # noqa: SLF001
        captured = concrete._captured_inputs  # noqa: SLF001
        late = any(callable(c) for c in captured)  # call-time captures: read at each call
        self.captured = None if late else concrete.captured_inputs

    def __call__(self, ctx: Any, base: Any, inputs: list, xla: bool) -> Any:
        concrete = self.concrete()
        args = inputs + (concrete.captured_inputs if self.captured is None else self.captured)
        with _atomic_function.InterpolateRuntimeError(concrete._inference_function):  # noqa: SLF001
            outputs = _execute.execute(self.name, num_outputs=self.count, inputs=args,
                                       attrs=_exact_call_attrs(base, remapping=not xla), ctx=ctx)
        for i, shape_inference in self.handle_data:
            _handle_data_util.set_handle_data(outputs[i], shape_inference)
        return outputs or None


_FLAT_CALLS: "weakref.WeakKeyDictionary[Any, _FlatCall]" = weakref.WeakKeyDictionary()
_EXACT_ATTRS: dict = {}


def _exact_call_attrs(base: Any, remapping: bool) -> tuple:
    """The function-call op's attributes for :func:`_exact_call_options`, flattened as
    ``Context.call_function`` flattens them."""
    key = (base.config_proto_serialized, base.executor_type, remapping)
    attrs = _EXACT_ATTRS.get(key)
    if attrs is None:
        attrs = _EXACT_ATTRS[key] = tuple(itertools.chain(*_exact_call_options(base, remapping).as_attrs().items()))
    return attrs


_EXACT_OPTIONS: dict = {}


def _exact_call_options(base: Any, remapping: bool = True) -> Any:
    """The thread's function-call options with Grappler's arithmetic optimizer, constant
    folding and dependency optimizer off.

    Why: those passes reassociate float arithmetic (``a + b + c`` becomes one ``AddN``;
    ``(x + c1) + c2`` becomes ``x + (c1 + c2)``), so a graph's results differ from eager's
    in the last bit, and eager is the oracle (random numbers drawn from fed seeds must
    give eager's losses bitwise).  The dependency optimizer removes control edges from
    stateless ops, among them those that make state writes wait for ops that may fail at
    run time (``janus.trace.atomicity``): with it, a graph wrote a variable and then
    failed a ``reshape``.  The Grappler config
    of a function call comes from the eager context's thread-local ``FunctionCallOptions``
    (``tf.config.optimizer.set_experimental_options`` would change it for every function
    of the program); Janus sets its own around its calls only.
    """
    key = (base.config_proto_serialized, remapping)
    options = _EXACT_OPTIONS.get(key)
    if options is None:
        from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2
        config = config_pb2.ConfigProto()
        config.ParseFromString(key[0])
        rewrites = config.graph_options.rewrite_options
        rewrites.arithmetic_optimization = rewriter_config_pb2.RewriterConfig.OFF
        rewrites.constant_folding = rewriter_config_pb2.RewriterConfig.OFF
        rewrites.dependency_optimization = rewriter_config_pb2.RewriterConfig.OFF
        if not remapping:
            rewrites.remapping = rewriter_config_pb2.RewriterConfig.OFF
        options = _EXACT_OPTIONS[key] = _eager_context.FunctionCallOptions(
            executor_type=base.executor_type, config_proto=config)
    return options


def add_control_inputs(op: Any, deps: Sequence[Any]) -> None:
    """Make ``op`` run only after ``deps``.

    Why: stateful ops (variable assignments, optimizer updates) are created deep inside
    user and Keras code, before Janus knows every assertion the trace will emit; the
    all-or-nothing rule needs each of them to wait for every assertion, so the edges
    are added once the trace is complete.  ``Operation._add_control_inputs`` is the
    graph-construction method TF itself uses for this.
    """
    op._add_control_inputs(list(deps))  # noqa: SLF001


def barrier(ops: Sequence[Any]) -> Any:
    """A no-op that runs after all of ``ops`` (their control-dependency sink)."""
    op = tf.no_op(name="janus_barrier")
    add_control_inputs(op, ops)
    return op


# -- conditionals traced once (``janus.lowering.branches._cond``) ---------------------
# Why: ``tf.cond`` traces both sides and requires them to return the same structure
# right away.  Janus must first see what each side produces (a Python number on one side
# and a tensor on the other, a result only one side defines, effects each side records)
# before it knows the outputs, and tracing each side twice (a probe, then ``tf.cond``)
# makes k nested conditionals trace the innermost body 2**k times.  TensorFlow's own
# ``cond_v2`` builds a conditional in three steps: trace each side into a branch
# ``FuncGraph``, match their outputs afterwards, build the ``If`` op from the graphs.
# These helpers expose those steps (``cond_v2`` has no public entry point for them).

def cond_scope() -> Any:
    """A name scope for one conditional; entering it gives the scope name ``build_cond`` needs."""
    return tf_ops.name_scope("cond")


def branch_graph(fn: Callable[[], list], scope: str, side: bool) -> Any:
    """Trace ``fn`` (returning a list of tensors) once into a new branch graph of a conditional,
    exactly as ``cond_v2`` traces a side (automatic control dependencies included)."""
    outer = tf_ops.get_default_graph()
    name = cf_util.unique_fn_name(scope, "true" if side else "false")
    graph = cf_util.CondBranchFuncGraph(name, collections=outer._collections)  # noqa: SLF001
    return func_graph.func_graph_from_py_func(
        name, fn, [], {}, func_graph=graph,
        add_control_dependencies=outer._add_control_dependencies)  # noqa: SLF001


def set_branch_outputs(graph: Any, outputs: list) -> None:
    """Make ``outputs`` (tensors of ``graph``, traced or added after the trace) its outputs,
    as ``cond_v2`` does when it matches the sides' outputs after tracing them."""
    graph.outputs = list(outputs)
    graph.structured_outputs = list(outputs)


def build_cond(pred: Any, true_graph: Any, false_graph: Any, scope: str) -> list:
    """The ``If`` op of two branch graphs with matching outputs; returns its outputs."""
    cond_v2.verify_captures(cond_v2._COND, [true_graph, false_graph])  # noqa: SLF001
    outs = cond_v2._build_cond(  # noqa: SLF001
        pred, true_graph, false_graph, true_graph.external_captures, false_graph.external_captures,
        building_gradient=False, name=scope)
    return list(outs) if isinstance(outs, (list, tuple)) else [outs]


# -- random numbers (``janus.trace.seeds``, ``janus.lowering.random_ops``) -----------------
# Why: an eager random op without an op seed takes its seed pair from the context's
# global seed and its op-seed generator (a ``random.Random``, advanced by each op).
# To feed a graph the pairs eager would use, Janus peeks at that generator (copies its
# state) and advances it after a successful run; neither is public API.  TensorFlow's
# dropout and random-flip implementations take the sampler as a parameter: Janus passes
# samplers that draw from fed seeds and keeps TF's exact arithmetic.

def global_seed() -> int | None:
    """The global seed of eager execution (``tf.random.set_seed``), or None."""
    return _eager_context.global_seed()


def op_determinism_enabled() -> bool:
    """Whether ``tf.config.experimental.enable_op_determinism()`` is in effect (eager then
    refuses to draw without a seed)."""
    from tensorflow.python.framework import config
    return config.is_op_determinism_enabled()


def op_seed_generator() -> Any:
    """The ``random.Random`` from which eager random ops draw their op seeds."""
    return _eager_context.context()._rng  # noqa: SLF001


def dropout(x: Any, rate: Any, noise_shape: Any, uniform_sampler: Callable, dummy_rng_step: Callable,
            name: Any) -> Any:
    """``tf.nn.dropout`` with the uniform sampler (and the draw of the rate-0 fast path) given."""
    from tensorflow.python.ops import nn_ops
    return nn_ops._dropout(x=x, rate=rate, noise_shape=noise_shape, uniform_sampler=uniform_sampler,  # noqa: SLF001
                           dummy_rng_step=dummy_rng_step, name=name, default_name="dropout")


def random_flip(image: Any, flip_index: int, random_func: Callable, scope_name: str) -> Any:
    """``tf.image.random_flip_*`` with the uniform sampler given."""
    from tensorflow.python.ops import image_ops_impl
    return image_ops_impl._random_flip(image, flip_index, random_func, scope_name)  # noqa: SLF001


def dataset_op_types(dataset: tf.data.Dataset) -> set[str]:
    """The op types of an eager dataset's pipeline, including those in its functions.

    Why: whether iterating a dataset draws random numbers (a reshuffling ``shuffle``, a
    ``map`` that draws) is only visible in the dataset's graph; ``_as_serialized_graph`` is
    the ``DatasetV2`` method that serializes it (the one ``tf.data`` snapshots use).
    """
    from tensorflow.python.data.ops import options as options_lib

    with tf.init_scope():  # eagerly, also while a graph is traced
        serialized = dataset._as_serialized_graph(  # noqa: SLF001
            external_state_policy=options_lib.ExternalStatePolicy.IGNORE)
    graph_def = tf.compat.v1.GraphDef.FromString(serialized.numpy())
    nodes = list(graph_def.node) + [n for f in graph_def.library.function for n in f.node_def]

    def same_order_every_time(node: Any) -> bool:  # shuffle(..., reshuffle_each_iteration=False)
        return "reshuffle_each_iteration" in node.attr and not node.attr["reshuffle_each_iteration"].b

    return {n.op for n in nodes if not same_order_every_time(n)}


def captured_constant_bytes(concrete: Any) -> int:
    """Bytes of the constants a concrete function holds: the eager tensors it captured by
    value and its ``Const`` ops (a NumPy array read while tracing, say).

    Why: ``FuncGraph.captures`` lists the by-value captures without evaluating the call-time
    ones (``ConcreteFunction.captured_inputs`` would call their closures); ``FuncGraph`` is
    TensorFlow's internal graph class.
    """
    tensors = [external for external, _ in concrete.graph.captures if hasattr(external, "numpy")]
    tensors += [op.outputs[0] for op in concrete.graph.get_operations() if op.type == "Const"]
    return sum(t.shape.num_elements() * t.dtype.size for t in tensors
               if t.dtype not in (tf.resource, tf.variant, tf.string) and t.shape.is_fully_defined())


def captured_external(tensor: Any) -> Any:
    """The tensor of an enclosing graph that ``tensor``, a placeholder of a branch or loop
    body graph, stands for (None: it captures nothing).

    Why: ``janus.trace.known_values`` follows a value from a nested graph back to the inputs
    it is made of; ``FuncGraph.captures`` (TensorFlow's internal graph class) is the only
    record of which outer tensor each such placeholder captured.
    """
    for external, internal in getattr(tensor.graph, "captures", ()):
        if internal is tensor:
            return external
    return None


def graph_chain(graph: Any, outermost: Any) -> list:
    """``graph``, then the graphs it is nested in (a branch's, a loop body's enclosing
    graph), up to ``outermost`` included.

    Why: ``FuncGraph.outer_graph`` (an attribute of TensorFlow's internal graph class) is
    the only link from a branch or loop body graph to the graph it is built in;
    ``janus.trace.bounds`` counts the ops of all of them.
    """
    chain = []
    while graph is not None:
        chain.append(graph)
        if graph is outermost:
            break
        graph = getattr(graph, "outer_graph", None)
    return chain


def known_shape_value(tensor: Any) -> bool:
    """Is ``tensor`` (an integer vector) a shape whose dimensions are all known while tracing,
    e.g. ``tf.shape(x)[1:]`` for ``x`` of shape ``[None, 4, 4]``?

    Why: ``janus.trace.xla`` marks an op whose operand XLA compiles into the program only if
    that operand has one value for every run.  ``tensor_util.constant_value_as_shape`` is
    the function TensorFlow's own shape inference uses to read a shape from the ops that
    compute it (``Shape``, ``StridedSlice``, ``Pack``, ``ConcatV2``); TensorFlow exports
    only ``tf.get_static_value``, which gives up on partly known shapes.
    """
    from tensorflow.python.framework import tensor_util
    if tensor.shape.rank != 1 or not tensor.dtype.is_integer:
        return False
    try:
        return tensor_util.constant_value_as_shape(tensor).is_fully_defined()
    except (ValueError, TypeError):
        return False


def mark_for_xla(op: Any) -> None:
    """Ask TensorFlow to compile ``op`` with XLA, clustered with the other marked ops.

    Why: ``tf.function(jit_compile=True)`` compiles a whole function and drops its
    ``tf.debugging.Assert`` ops (``../shared/TF-NOTES.md``), which would let state change
    after a failed assumption.  Marking only the pure ops that run before the first state
    write keeps assertions and writes outside the compiled clusters.  The attributes are
    the ones ``tf.xla.experimental.jit_scope`` sets while ops are created; Janus knows
    which ops qualify only once the trace is complete, so it sets them on existing ops
    with ``Operation._set_attr``.
    """
    from tensorflow.core.framework import attr_value_pb2
    op._set_attr("_XlaCompile", attr_value_pb2.AttrValue(b=True))  # noqa: SLF001
    op._set_attr("_XlaScope", attr_value_pb2.AttrValue(s=b"janus"))  # noqa: SLF001


def run_op_eagerly(op: Any, inputs: Sequence[Any]) -> list | None:
    """The values of graph op ``op``'s outputs, computed eagerly by its own kernel on
    ``inputs`` (NumPy values of its inputs); None if its attributes are not plain values.

    Why: ``janus.trace.known_values`` gives converted code the Python number of a tensor
    the trace knows (``int(transitions[i])`` of a tensor specialized by value); eager
    computes that number with the op's kernel.  ``tf.get_static_value`` folds only a fixed
    handful of op types (not ``StridedSlice``), and no public API runs a graph op eagerly;
    ``execute.execute`` runs an op by type and attributes, as TensorFlow's generated op
    wrappers do.
    """
    attrs: list = []
    try:
        for name in op.node_def.attr:
            if name.startswith("_"):
                continue
            value = op.get_attr(name)
            if isinstance(value, tf.DType):
                value = value.as_datatype_enum
            elif isinstance(value, list) and all(isinstance(v, tf.DType) for v in value):
                value = [v.as_datatype_enum for v in value]
            elif not isinstance(value, (bool, int, float, bytes, list)):
                return None  # a shape, a function, a tensor: not folded
            attrs += [name, value]
        with tf.init_scope():
            tensors = [tf.constant(v) for v in inputs]
            outputs = _execute.execute(op.type, len(op.outputs), tensors, tuple(attrs), _eager_context.context())
            return [o.numpy() for o in outputs]
    except (tf.errors.OpError, TypeError, ValueError):
        return None


def tape_recording() -> bool:
    """Is a ``tf.GradientTape`` (or another tape) recording on this thread now?

    Why: a graph segment called under a recording tape costs more than its own run — the
    tape's gradient later runs the graph's backward function — so the driver confirms such
    a segment's graph on whole calls (``janus.driver.segments``); one never called under a
    tape is judged by its own timing.  TensorFlow's ``record.could_possibly_record`` asks
    the tape set this; it has no public name.
    """
    return not _pywrap_tfe.TFE_Py_TapeSetIsEmpty()


def set_tensor_array_flow(array: tf.TensorArray, flow: Any) -> None:
    """Point the graph ``TensorArray`` ``array`` at the ``TensorList`` ``flow``.

    Eager's ``write``/``unstack``/``scatter``/``split`` change the array in place and return
    it; a graph ``TensorArray`` returns a new object and leaves the old one's ``flow`` as it
    was.  Converted code keeps eager's meaning by moving every handle of one array to the
    newest flow; the wrapper has no public setter (its ``_implementation._flow`` is what
    ``flow``, ``read``, ``stack`` ... use)."""
    array._implementation._flow = flow  # noqa: SLF001


def repeats_in_loop(graph: Any, outermost: Any) -> bool:
    """Whether code traced into ``graph`` may run more than once per run of ``outermost``:
    some graph between them is a ``tf.while_loop``'s body or condition.

    Why: the loop's function graphs are TensorFlow's internal classes
    (``control_flow_v2_func_graphs``); a conditional's branch runs at most once and is not one.
    """
    from tensorflow.python.ops import control_flow_v2_func_graphs as cf_graphs

    repeated = (cf_graphs.WhileBodyFuncGraph, cf_graphs.WhileCondFuncGraph)
    return any(isinstance(g, repeated) for g in graph_chain(graph, outermost)[:-1])
