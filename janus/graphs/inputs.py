"""The inputs of a call that a graph takes as inputs: eager tensors, composite tensors and
numeric NumPy arrays among the arguments (in tuples, lists and dicts a few levels deep)."""
from __future__ import annotations

from typing import Any

from janus import config
from janus.graphs.plan import Arrays, TracePlan
from janus.trace.arrays import is_fed_array
from janus.trace.scalars import is_eager_tensor
from janus.trace.sources import Arg, KwArg, Source
from janus.trace.values import is_eager_composite


def input_leaves(args: tuple, kwargs: dict) -> list[tuple[Source, Any]]:
    """Sources of the eager tensors, composite tensors and numeric NumPy arrays among the arguments."""
    found: list[tuple[Source, Any]] = []
    for i, v in enumerate(args):
        _walk_inputs(v, Arg(i), 0, found)
    for name, v in kwargs.items():
        _walk_inputs(v, KwArg(name), 0, found)
    return found


def _walk_inputs(value: Any, source: Source, depth: int, found: list) -> None:
    """Adds the leaves of ``value`` to ``found``.  A module function, not a closure that calls
    itself: that closure was a cycle holding ``found``, so each call's input tensors waited
    for Python's next full collection.  Containers deeper or longer than ``config.LIMITS``'
    ``input_walk_depth`` and ``input_walk_items`` are not looked into."""
    limits = config.LIMITS
    if is_eager_tensor(value) or is_fed_array(value) or is_eager_composite(value):
        found.append((source, value))
    elif depth < limits.input_walk_depth \
            and (type(value) in (tuple, list) or isinstance(value, tuple) and hasattr(value, "_fields")) \
            and len(value) <= limits.input_walk_items:
        for i, v in enumerate(value):
            _walk_inputs(v, source.item(i), depth + 1, found)
    elif depth < limits.input_walk_depth and type(value) is dict and len(value) <= limits.input_walk_items:
        for key, v in value.items():
            _walk_inputs(v, source.item(key), depth + 1, found)


def fed_arrays(args: tuple, kwargs: dict, plan: TracePlan) -> frozenset[Source]:
    """The NumPy array arguments a trace under ``plan`` feeds as graph inputs."""
    if plan.arrays is Arrays.VALUES:
        return frozenset()
    return frozenset(s for s, v in input_leaves(args, kwargs) if is_fed_array(v) and s not in plan.numpy_values)
