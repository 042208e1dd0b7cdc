"""Draws from NumPy's global generator (``np.random.rand()``, ``np.random.choice(n)`` ...)
inside the graph, as Python islands.

Epsilon-greedy exploration (``if np.random.rand() < epsilon:``) draws from the generator
behind ``np.random``'s functions.  No TensorFlow op reproduces its numbers, so the draw was
a graph break: the function split around it.  Here the graph calls the draw itself, in
Python, through ``tf.numpy_function`` where the call stood (a stateful op: TensorFlow
runs it in program order with the graph's other islands), and the function stays one
graph with eager's numbers:

* **The generator's state.**  The draws advance the global generator as eager's do.  Before
  each run its state is saved (:class:`GlobalGenerator`, an island copy of the generator
  alone); a run that aborts puts it back, so the eager re-run draws eager's numbers.  No
  other Python thread runs meanwhile (``janus.commit.island_copies.take_all``).
* **The result's type.**  The graph must know what the draw returns: the same call on a
  clone of the generator while tracing tells it (a Python ``float``/``int``/``bool``, or a
  numeric array of a fixed dtype and shape); every run checks the result against it and
  aborts where it differs.  An array drawn is a tensor only TensorFlow may use, as an
  island's is; used as NumPy, the next trace leaves the draw a graph break.
* **Arguments**: Python numbers the graph carries, plain constants (``size=(2, 3)``,
  ``p=[0.1, 0.9]``) and NumPy arrays of a fixed shape the graph computes
  (``p=np.squeeze(action_probs)``: :class:`janus.trace.arrays.TensorValues`), handed to the
  draw as eager's code hands them: Python numbers, new arrays.  A tensor itself
  (``p=probs``: NumPy would read its values) keeps the draw a graph break.

Not the generator's other methods (``seed``, ``set_state``, ``shuffle``: it changes its
argument), nor generators the program made (``np.random.default_rng()``, a
``RandomState``): those held by an object run in their method's island
(:mod:`janus.runtime.islands`).
"""
from __future__ import annotations

import copy
import types
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from janus.commit.island_copies import CommitIsland, generator_state, plain, set_generator_state
from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.runtime import islands
from janus.trace.active import current
from janus.trace.arrays import FED_DTYPES, FedArray
from janus.trace.scalars import PyScalar

# the generator behind np.random.rand, np.random.choice ...: its bound methods are those functions
_GLOBAL = np.random.mtrand._rand  # noqa: SLF001 - NumPy's own name for it; np.random.get_state reads it
_DRAWS = islands.DRAWS  # np.random.shuffle is not among them: it changes its argument
_KEY = "numpy.random"


def is_global_draw(f: Any) -> bool:
    """``f`` is one of ``np.random``'s drawing functions (a method of the global generator)."""
    return isinstance(f, (types.MethodType, types.BuiltinMethodType)) and getattr(f, "__self__", None) is _GLOBAL \
        and f.__name__ in _DRAWS


@dataclass(eq=False)
class GlobalGenerator:
    """The island copy of NumPy's global generator: its state saved before a run, put back
    if the run aborts (the draws themselves advance it)."""

    label: str = "numpy.random's global generator"
    methods: list[str] = field(default_factory=list)  # the draws, for janus.explain
    saved: Any = None

    def take(self, a: tuple, k: dict) -> None:
        self.saved = generator_state(_GLOBAL)

    def abort(self) -> None:
        if self.saved is not None:
            set_generator_state(_GLOBAL, self.saved)
        self.saved = None

    def commit(self) -> None:
        self.saved = None


def draw(f: Any, args: tuple, kwargs: dict) -> Any:
    """``f(*args, **kwargs)`` for a draw of the global generator, as an island of the graph;
    the error of a call Janus does not convert (a graph break) when it cannot be one."""
    ctx = current()
    speculator = ctx.checks.speculator
    why = _refusal(ctx, f, args, kwargs)
    if why is not None:
        raise ConversionError(f"callee not allow-listed: numpy.random.{f.__name__} ({why})", permanent=True,
                              code=Code.NOT_ALLOWED)
    if speculator is not None and f in speculator.no_islands:
        raise ConversionError(f"callee not allow-listed: numpy.random.{f.__name__} (its draw was used as NumPy)",
                              permanent=True, code=Code.NOT_ALLOWED)
    spec = _result_spec(f, args, kwargs)
    if isinstance(spec, str):
        raise ConversionError(f"callee not allow-listed: numpy.random.{f.__name__} ({spec})", permanent=True,
                              code=Code.NOT_ALLOWED)
    record = ctx.heap.islands.get(_KEY)
    if record is None:
        record = ctx.heap.islands[_KEY] = islands.Island(GlobalGenerator(), frozenset())
        ctx.log.effects.append(CommitIsland(record.copy))
    if f"np.random.{f.__name__}" not in record.copy.methods:
        record.copy.methods.append(f"np.random.{f.__name__}")
    return islands.island_op(f, args, kwargs, spec, f"janus_np_random_{f.__name__}", f, ctx.heap.islands_misused)


def _refusal(ctx: Any, f: Any, args: tuple, kwargs: dict) -> str | None:
    if ctx.recursion is not None and ctx.recursion.active is not None:
        return "called during a recursion over trees"
    if ctx.log.dynamic_depth and (not ctx.log.sinks or ctx.log.sinks[-1] is None):
        return "called inside a graph a library builds around the user's function"
    if not all(isinstance(v, PyScalar) or plain(v) or _plain_list(v) or isinstance(v, FedArray) and None not in v.dims
               for v in (*args, *kwargs.values())):
        return "an argument is neither a Python number, an array of a fixed shape nor a plain constant"
    return None


def _plain_list(value: Any) -> bool:
    return type(value) is list and all(plain(v) for v in value)


def _result_spec(f: Any, args: tuple, kwargs: dict) -> Any:
    """What ``f`` returns for these arguments (numbers the graph carries stood in for by
    ``1``, arrays by a uniform ``p``): the island's spec, or why the graph cannot carry it."""
    clone = copy.deepcopy(_GLOBAL)
    def stand_in(v: Any) -> Any:
        if isinstance(v, PyScalar):
            return v.kind(1)
        return v.stand_in() if isinstance(v, FedArray) else v

    try:
        result = getattr(clone, f.__name__)(*map(stand_in, args), **{n: stand_in(v) for n, v in kwargs.items()})
    except Exception as error:  # noqa: BLE001 - eager raises (or another value would): left to Python
        return f"it raises {type(error).__name__} for such arguments"
    if type(result) in (float, int, bool):
        return ("scalar", type(result))
    if type(result) is np.ndarray and result.dtype in FED_DTYPES:
        return ("array", result.dtype, result.shape)
    return f"it returns a {type(result).__name__}, which the graph cannot carry"
