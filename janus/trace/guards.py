"""Generate the guard check and the input gathering of a cache entry.

Guards are recorded during the trace as Python expressions over ``a`` (positional
arguments), ``k`` (keyword arguments) and constants of the entry's namespace.  They
are compiled once into a single function, so checking a cache entry costs one call
and a chain of comparisons, not a walk over generic structures.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np
import tensorflow as tf

from janus.trace.sources import Source
from janus.trace.scalars import EAGER_TENSOR, fed_scalar


class GuardKind(enum.Enum):
    """What a guard pins; ``janus.explain`` groups guards by kind."""

    TENSOR = "tensor dtype and shape"
    SPEC = "type spec (datasets, composite tensors)"
    VALUE = "Python value"
    TYPE = "type"
    STRUCTURE = "container structure"
    IDENTITY = "object identity"
    ALIAS = "aliasing"
    ABSENT = "name not rebound or attribute not set"
    FOREST = "recursive structures (each node fits a traced case)"


@dataclass
class Guard:
    """A condition over ``a``, ``k`` and namespace constants that must hold to reuse a graph.

    ``source`` is the value it is about (None for conditions on a namespace, such as a
    builtin not being shadowed).  When a ``VALUE`` guard on a Python number fails, the
    next graph feeds the number; when a ``TENSOR`` guard fails, the shape is relaxed.
    """

    expr: str
    description: str
    kind: GuardKind
    source: Source | None = None


def compile_guard(guards: list[Guard], n_args: int, kw_names: tuple[str, ...], namespace: dict[str, Any]) -> tuple[Callable, str]:
    """``check(a, k) -> bool`` and its source."""
    conditions = [f"len(a) == {n_args}", f"k.keys() == {set(kw_names)!r}" if kw_names else "not k"]
    conditions += [f"({g.expr})" for g in guards]
    body = "\n            and ".join(conditions)
    source = f"def check(a, k):\n    try:\n        return ({body})\n    except Exception:\n        return False\n"
    scope = dict(namespace)
    exec(compile(source, "<janus guard>", "exec"), scope)  # noqa: S102 - generated from recorded guards
    return scope["check"], source


def compile_inputs(sources: list[Source], fed_scalars: dict[Source, type], namespace: dict[str, Any]) -> Callable:
    """``inputs(a, k) -> list`` of the argument tensors the graph takes, in order.

    Python scalars fed to the graph (``fed_scalars``: source -> int/float) are converted here.
    """
    items = [f"_scalar({s.expr}, {fed_scalars[s].__name__})" if s in fed_scalars else s.expr for s in sources]
    source = f"def inputs(a, k):\n    return [{', '.join(items)}]\n"
    scope = dict(namespace)
    scope["_scalar"] = fed_scalar
    exec(compile(source, "<janus inputs>", "exec"), scope)  # noqa: S102
    return scope["inputs"]


def guard_namespace_base() -> dict[str, Any]:
    """Helpers every generated guard function may use."""
    return {"_EagerTensor": EAGER_TENSOR, "_Dataset": tf.data.Dataset, "_fits": fits_spec, "_np_equal": _np_equal,
            "_shape_ok": _shape_ok}


def _shape_ok(shape, dims: tuple) -> bool:
    actual = shape.as_list()
    return len(actual) == len(dims) and all(d is None or d == s for d, s in zip(dims, actual))


def fits_spec(value: Any, spec: tf.TypeSpec) -> bool:
    """``value`` is a composite tensor of ``spec`` (whose sizes may be relaxed)."""
    return type(value) is spec.value_type and spec.is_compatible_with(value)


def _np_equal(a, b) -> bool:
    return isinstance(a, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
