"""``@janus.function``: the per-function driver of profiling, conversion and caching.

Per call: the guards of the cached graphs are checked, most recently built first; on
a hit the graph runs and its deferred effects are committed (an aborted run commits
nothing and the call re-runs eagerly).  Otherwise the call runs eagerly, under the
profiler.  After ``profile_calls`` eager calls the function is converted and traced
on the current call's arguments; after a guard miss the next miss re-converts; a
failed attempt is recorded and retried only after another round of profiling, up to
a bound.  A re-conversion relaxes what changed: tensor shapes to the most specific
shape covering every shape seen, Python numbers whose guard failed to graph inputs.
"""
from __future__ import annotations

import functools
import logging
import re
import types
import weakref
from collections import Counter
from typing import Any, Callable

import tensorflow as tf

from janus import config
from janus.commit.atomicity import StateBeforeAssertion
from janus.convert import support
from janus.convert.pipeline import convert_source
from janus.driver.entry import CacheEntry, build_entry, convert, is_argument_path, tensor_leaves
from janus.errors import ConversionError
from janus.runtime.calls import is_user_code
from janus.runtime.control_flow import USER_ASSERT_MESSAGE
from janus.trace.active import current
from janus.trace.speculation import Speculator
from janus_profiler import Profiler

_ASSUMPTION_ID = re.compile(r"janus assumption #(\d+)")

log = logging.getLogger("janus")

_REGISTRY: "weakref.WeakSet[JanusFunction]" = weakref.WeakSet()


class JanusFunction:
    """A Python function that Janus runs as specialized graphs whenever it safely can."""

    def __init__(self, fn: types.FunctionType, profile_calls: int | None = None, speculate: bool = True):
        functools.update_wrapper(self, fn)
        self.python_function = fn
        self._profile_calls = profile_calls
        self.speculate = speculate
        self.last_attempt_failed = False
        self.entries: list[CacheEntry] = []
        self.reasons: Counter[str] = Counter()
        self.counts: Counter[str] = Counter()
        self.permanent_reason: str | None = None
        self.eager_since_attempt = 0
        self.failed_attempts = 0
        self.shapes: dict[str, tf.TensorShape] = {}
        self.source: str | None = None
        self.profiler = Profiler(include=is_user_code)
        self.assumptions: dict = {}
        self.banned_sites: set = set()
        self.varying: dict[str, type] = {}
        _REGISTRY.add(self)

    @property
    def __janus_function__(self) -> "JanusFunction":
        return self

    @property
    def profile_calls(self) -> int:
        return config.profile_calls() if self._profile_calls is None else self._profile_calls

    # -- descriptor protocol: methods share one cache, with guards on ``self`` ---------
    def __get__(self, obj: Any, objtype: type | None = None):
        if obj is None:
            return self
        return BoundJanusFunction(self, obj)

    # -- calls ------------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        ctx = current()
        if ctx is not None:  # reached from library code while another function is traced: inline
            return ctx.convert(self.python_function)(*args, **kwargs)
        self.counts["calls"] += 1
        for entry in self.entries:
            if entry.check(args, kwargs):
                return self._run(entry, args, kwargs)
        miss = self._failed_guard(args, kwargs) if self.entries else None
        entry = self._maybe_convert(args, kwargs)
        if entry is not None:
            if entry.check(args, kwargs):
                return self._run(entry, args, kwargs)
            self._note("a new graph's guards did not hold on the call that built it")
        elif miss is not None:
            self._note(f"no cached graph's guards held ({miss})")
        return self._eager(args, kwargs)

    def _run(self, entry: CacheEntry, args: tuple, kwargs: dict) -> Any:
        """Run a graph; if it aborts (an assertion failed), nothing was committed: run eagerly."""
        try:
            outputs = entry.execute(args, kwargs)
        except (tf.errors.OpError, ValueError, TypeError) as e:
            entry.failures += 1
            self.counts["assertion_failures"] += 1
            self._aborted(entry, e)
            outputs = None
        if outputs is None:  # outside the except block: eager's exception must not chain to the graph's
            return self._eager(args, kwargs)
        result = entry.finish(outputs, args, kwargs)
        entry.hits += 1
        for assumption in entry.assumptions:
            assumption.held += 1
        self.counts["graph_calls"] += 1
        return result

    def _aborted(self, entry: CacheEntry, error: BaseException) -> None:
        """A failed assumption (speculation or run-time check, named by its id in the failed
        assertion's message): drop every graph that made it, never assume it again.

        The user's own ``assert`` failing is no failed assumption: the eager re-run raises
        its AssertionError, and the graph stays (it is right whenever the assert holds).
        """
        text = str(error)
        match = _ASSUMPTION_ID.search(text)
        failed = next((a for a in entry.assumptions if match and a.id == int(match.group(1))), None)
        if failed is None:
            if USER_ASSERT_MESSAGE in text:
                self._note("an assert statement failed in the graph; re-ran eagerly (graph kept)")
            else:
                self._note(f"graph run aborted, re-ran eagerly: {_first_line(error)}")
            return
        failed.failed += 1
        self.banned_sites.add(failed.ban)
        self.entries[:] = [e for e in self.entries if not any(a.ban == failed.ban for a in e.assumptions)]
        self.eager_since_attempt = self.profile_calls  # re-convert on the next call, without it
        self._note(f"assumption failed, re-ran eagerly: {failed.description}")

    def _budget_exhausted(self) -> bool:
        return self.counts["conversions"] + self.failed_attempts >= config.MAX_CONVERSIONS

    def _eager(self, args: tuple, kwargs: dict) -> Any:
        self.counts["eager_calls"] += 1
        if self.counts["conversions"] or self.failed_attempts or self.permanent_reason:
            self.counts["fallbacks"] += 1
        self.eager_since_attempt += 1
        self._observe_shapes(args, kwargs)
        if config.profiling() and self.permanent_reason is None and not self._budget_exhausted():
            return self.profiler.call(self.python_function, *args, **kwargs)
        return self.python_function(*args, **kwargs)

    def _observe_shapes(self, args: tuple, kwargs: dict) -> None:
        for path, value in tensor_leaves(args, kwargs):
            self._observe_shape(path, value.shape)

    def _observe_shape(self, path: str, shape: tf.TensorShape, before: tf.TensorShape | None = None) -> None:
        """Widen the shape known at ``path`` (an argument, or a heap tensor whose guard failed)."""
        seen = self.shapes.get(path, before)
        self.shapes[path] = shape if seen is None else _common_shape(seen, shape)

    # -- conversion -------------------------------------------------------------------
    def _maybe_convert(self, args: tuple, kwargs: dict) -> CacheEntry | None:
        if self.permanent_reason is not None or config.disabled():
            return None
        # After a successful conversion, a guard miss runs eagerly (profiled) and the next
        # miss re-converts, relaxing what changed; a failed attempt waits for a full round
        # of profiling.
        needed = 1 if self.entries and not self.last_attempt_failed else self.profile_calls
        if self.eager_since_attempt < needed:
            return None
        if self._budget_exhausted():
            self._note("conversion budget exhausted; running eagerly")
            return None
        self.eager_since_attempt = 0
        fn = self.python_function
        reason = support.unsupported_reason(fn)
        if reason is not None:
            self.permanent_reason = reason
            self._note(f"cannot convert: {reason}")
            return None
        try:
            self.source = convert_source(fn)
            converted = convert(fn)
        except ConversionError as e:
            self.permanent_reason = str(e)
            self._note(f"cannot convert: {e}")
            return None
        self._observe_shapes(args, kwargs)
        relaxed = {p: s for p, s in self.shapes.items() if s.is_fully_defined() is False}
        fed = self._varying_scalars(args, kwargs)
        entry = self._trace(converted, args, kwargs, relaxed, fed)
        if entry is None and (relaxed or fed):
            entry = self._trace(converted, args, kwargs, None, None)
        self.last_attempt_failed = entry is None
        if entry is None:
            self.failed_attempts += 1
            return None
        self.counts["conversions"] += 1
        self.entries.insert(0, entry)
        del self.entries[config.MAX_CACHE_ENTRIES:]
        log.info("janus: converted %s (%d guards)", self.__qualname__, len(entry.guards))
        return entry

    def _failed_guard(self, args: tuple, kwargs: dict) -> str:
        """The first guard of the newest graph that fails now; every Python int/float a
        failing guard pinned is fed to the next graph instead of being specialized again."""
        entry = self.entries[0]
        first = None
        for guard in entry.guards:
            if not entry.holds(guard, args, kwargs):
                first = first or guard.description
                value = entry.value_at(guard.path, args, kwargs) if guard.path else None
                if guard.kind == "scalar" and type(value) in (int, float):
                    self.varying[guard.path] = type(value)
                elif guard.kind == "tensor" and tf.is_tensor(value) and not is_argument_path(guard.path):
                    self._observe_shape(guard.path, value.shape, entry.value_shape(guard.path))
        return first or "argument structure"

    def _varying_scalars(self, args: tuple, kwargs: dict) -> dict[str, type]:
        """Python ints/floats to feed to the graph as tensors rather than specialize on
        (one graph, not one per value): state whose value guard failed, and arguments that
        had several values while profiling — or every numeric argument when not speculating."""
        fed = dict(self.varying)
        history = self.profiler.data.arg_history(self.python_function) if self.speculate else []
        code = self.python_function.__code__
        names = code.co_varnames[:code.co_argcount]
        items = [(f"a[{i}]", names[i] if i < len(names) else None, v) for i, v in enumerate(args)]
        items += [(f"k[{n!r}]", n, v) for n, v in kwargs.items()]
        for path, name, value in items:
            if type(value) not in (int, float):
                continue
            seen = {(h[name].type, h[name].value) for h in history if name in h}
            if not self.speculate or len(seen) > 1 and all(t == type(value).__name__ for t, _ in seen):
                fed[path] = type(value)
        return fed

    def _trace(self, converted: Callable, args: tuple, kwargs: dict, relaxed: dict | None,
               fed: dict | None) -> CacheEntry | None:
        for _ in range(3):
            speculator = Speculator(self.profiler.data if self.speculate else None, self.banned_sites, self.assumptions)
            try:
                return build_entry(self.python_function, converted, args, kwargs, relaxed, speculator, fed)
            except StateBeforeAssertion as e:
                if not e.assumptions:
                    self._note(f"trace failed: {e} (an assert in the code)")
                    return None
                for a in e.assumptions:
                    self.banned_sites.add(a.ban)
                self._note(f"not speculated, checked after a state update: "
                           f"{'; '.join(a.description for a in e.assumptions)}")
                continue
            except ConversionError as e:
                self._note(f"trace failed: {e}")
                return None
            except Exception as e:  # noqa: BLE001 - eager will raise it (or not) for real
                self._note(f"trace raised {_first_line(e)}")
                return None
        return None

    def _note(self, reason: str) -> None:
        self.reasons[reason] += 1
        log.debug("janus: %s: %s", self.__qualname__, reason)

    def reset(self) -> None:
        """Forget every graph, profile and count."""
        self.entries.clear()
        self.reasons.clear()
        self.counts.clear()
        self.permanent_reason = None
        self.eager_since_attempt = 0
        self.failed_attempts = 0
        self.last_attempt_failed = False
        self.shapes.clear()
        self.source = None
        self.profiler.reset()
        self.assumptions.clear()
        self.banned_sites.clear()
        self.varying.clear()


class BoundJanusFunction:
    """A Janus method bound to an instance (the cache stays on the function)."""

    __slots__ = ("__janus_function__", "__self__")

    def __init__(self, jf: JanusFunction, obj: Any):
        self.__janus_function__ = jf
        self.__self__ = obj

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__janus_function__(self.__self__, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.__janus_function__, name)

    def __repr__(self) -> str:
        return f"<janus bound method {self.__janus_function__.__qualname__} of {self.__self__!r}>"


def _common_shape(a: tf.TensorShape, b: tf.TensorShape) -> tf.TensorShape:
    if a.rank != b.rank:
        return tf.TensorShape(None)
    return tf.TensorShape([x if x == y else None for x, y in zip(a.as_list(), b.as_list())])


def _first_line(e: BaseException) -> str:
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0][:300]}" if lines else type(e).__name__


def function(fn: Callable | None = None, *, profile_calls: int | None = None, speculate: bool = True):
    """Decorator: run ``fn`` through Janus (``JANUS_DISABLE=1`` leaves it untouched).

    ``profile_calls``: eager, profiled calls before the first conversion (default 3, or
    ``JANUS_PROFILE_CALLS``).  ``speculate=False`` keeps every tensor-dependent branch
    and loop dynamic (``tf.cond`` / ``tf.while_loop``): the conservative conversion.
    """
    def wrap(f: Callable):
        if config.disabled():
            return f
        if isinstance(f, (JanusFunction, BoundJanusFunction)):
            return f
        if isinstance(f, types.MethodType):
            return JanusFunction(f.__func__, profile_calls, speculate).__get__(f.__self__)
        if not isinstance(f, types.FunctionType):
            raise TypeError(f"janus.function expects a Python function or method, got {type(f).__name__}")
        return JanusFunction(f, profile_calls, speculate)
    return wrap(fn) if fn is not None else wrap


def registry() -> list[JanusFunction]:
    return list(_REGISTRY)
