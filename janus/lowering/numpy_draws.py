"""Draws from NumPy's global generator (``np.random.rand()``, ``np.random.choice(n)`` ...), or
from a generator the program holds, inside the graph, as Python islands.

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

A generator the program made (``rng = np.random.default_rng(7)``, a ``RandomState``) and the
function reads from Python state (a closure cell, a global, an attribute) draws the same
way (``rng.choice(n, p=...)``): the generator is found at every call where the trace found
it, its state saved and put back as the global one's.  One made in the function, or reached
otherwise (a bound method ``choose = rng.choice`` read as a value), keeps the draw a break.
Not the generators' other methods (``seed``, ``set_state``, ``shuffle``: it changes its
argument); a generator held by an object whose method draws from it runs in that method's
island (:mod:`janus.lowering.islands`).
"""
from __future__ import annotations

import copy
import types
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from janus.commit.island_copies import (
    RANDOM_GENERATORS, CommitIsland, IslandChanged, generator_state, plain, set_generator_state,
)
from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.lowering import islands
from janus.lowering.island_specs import ArraySpec, ScalarSpec
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


def is_generator_draw(f: Any) -> bool:
    """``f`` draws from a generator: ``np.random``'s functions, or the draws of a
    ``RandomState``/``Generator`` the program made (``rng.choice``)."""
    return is_global_draw(f) or isinstance(f, (types.MethodType, types.BuiltinMethodType)) \
        and isinstance(getattr(f, "__self__", None), RANDOM_GENERATORS) and f.__name__ in _DRAWS


@dataclass(eq=False)
class GlobalGenerator:
    """The island copy of a generator the graph's draws advance (NumPy's global one, or one
    the program holds, found by ``find`` at every call): its state saved before a run, put
    back if the run aborts (the draws themselves advance it)."""

    label: str = "numpy.random's global generator"
    find: Any = lambda a, k: _GLOBAL
    methods: list[str] = field(default_factory=list)  # the draws, for janus.explain
    saved: Any = None
    generator: Any = None

    def take(self, a: tuple, k: dict) -> None:
        generator = self.find(a, k)
        if not isinstance(generator, RANDOM_GENERATORS):
            raise IslandChanged(f"{self.label} is no longer a NumPy generator")
        self.generator, self.saved = generator, generator_state(generator)

    def abort(self) -> None:
        if self.saved is not None:
            set_generator_state(self.generator, self.saved)
        self.saved = self.generator = None

    def commit(self) -> None:
        self.saved = self.generator = None


def draw(f: Any, args: tuple, kwargs: dict) -> Any:
    """``f(*args, **kwargs)`` for a draw of a generator (NumPy's global one, or one the
    function reads from Python state), as an island of the graph; the error of a call Janus
    does not convert (a graph break) when it cannot be one."""
    ctx = current()
    speculator = ctx.checks.speculator
    generator = f.__self__
    source = None if generator is _GLOBAL else ctx.source_of(generator)
    why = _refusal(ctx, f, args, kwargs)
    if why is None and generator is not _GLOBAL and source is None:
        why = "the generator is not Python state the function reads"
    if why is not None:
        raise ConversionError(f"callee not allow-listed: {_shown(f)} ({why})", permanent=True, code=Code.NOT_ALLOWED)
    if speculator is not None and f in speculator.no_islands:  # bound methods of one generator compare equal
        raise ConversionError(f"callee not allow-listed: {_shown(f)} (its draw was used as NumPy)",
                              permanent=True, code=Code.NOT_ALLOWED)
    spec = _result_spec(f, args, kwargs)
    if isinstance(spec, str):
        raise ConversionError(f"callee not allow-listed: {_shown(f)} ({spec})", permanent=True, code=Code.NOT_ALLOWED)
    key = _KEY if generator is _GLOBAL else ("generator", id(generator))
    record = ctx.heap.islands.get(key)
    if record is None:
        copy_ = GlobalGenerator() if generator is _GLOBAL else GlobalGenerator(source.label, ctx.getter(source))
        record = ctx.heap.islands[key] = islands.Island(copy_, frozenset())
        ctx.log.effects.append(CommitIsland(record.copy))
    shown = f"np.random.{f.__name__}" if generator is _GLOBAL else f"{record.copy.label}.{f.__name__}"
    if shown not in record.copy.methods:
        record.copy.methods.append(shown)
    gen_copy = record.copy

    def run(*a: Any, **k: Any) -> Any:  # the generator found at this call (the same one the trace saw)
        return getattr(gen_copy.generator, f.__name__)(*a, **k)

    return islands.island_op(run, args, kwargs, spec, f"janus_np_random_{f.__name__}", f, ctx.heap.islands_misused)


def _shown(f: Any) -> str:
    if f.__self__ is _GLOBAL:
        return f"numpy.random.{f.__name__}"
    return f"{type(f.__self__).__module__}.{type(f.__self__).__qualname__}.{f.__name__}"


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
    clone = copy.deepcopy(f.__self__)
    def stand_in(v: Any) -> Any:
        if isinstance(v, PyScalar):
            return v.kind(1)
        return v.stand_in() if isinstance(v, FedArray) else v

    try:
        result = getattr(clone, f.__name__)(*map(stand_in, args), **{n: stand_in(v) for n, v in kwargs.items()})
    except Exception as error:  # noqa: BLE001 - eager raises (or another value would): left to Python
        return f"it raises {type(error).__name__} for such arguments"
    if type(result) in (float, int, bool):
        return ScalarSpec(type(result))
    if type(result) is np.ndarray and result.dtype in FED_DTYPES:
        return ArraySpec(result.dtype, result.shape)
    return f"it returns a {type(result).__name__}, which the graph cannot carry"
