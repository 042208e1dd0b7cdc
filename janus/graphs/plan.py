"""What one trace is specialized with: a frozen :class:`TracePlan`, revised between traces.

The conversion loop (``janus.driver.conversion``) starts from the plan the function's
policy makes of what it learned so far, and each failed trace revises it: a restart signal
(``janus.errors.Restart``) returns the plan it asks for (``revise``), and a trace that
fed NumPy arrays and failed otherwise tries them with this call's shapes, then as values
(:meth:`TracePlan.arrays_fallback`).  The policy then learns from the last plan.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Any


class Arrays(enum.Enum):
    """How a trace takes the NumPy array arguments it does not keep as values."""

    FED = "fed"  # graph inputs, with relaxed shapes where the plan relaxes them
    FED_STATIC = "fed with this call's shapes"  # graph inputs of fixed shape (len(x) needs the size)
    VALUES = "values"  # every array a Python value (kept so only if the trace succeeds)


@dataclass(frozen=True)
class TracePlan:
    """A trace's specialization.

    ``relaxed``: a relaxed shape (or widened ``TypeSpec``) per source that varied;
    ``fed``: Python numbers fed as inputs instead of specialized on; ``grouping`` and
    ``refused``: which recursive calls on trees compute in one forest, and which are
    inlined instead (``Regroup``); ``xla``: mark XLA clusters.  What the trace must not
    assume or make: ``banned`` speculations (their sites or checked values),
    ``numpy_values`` (NumPy arrays kept as values, guarded by value), ``tensor_values``
    (small tensors specialized by value) and ``never_values`` (no longer), ``no_islands``
    (methods not run as Python islands).  ``arrays`` and ``numpy_rereads``: where this
    conversion is in trying its fed NumPy arrays."""

    relaxed: dict = field(default_factory=dict)
    fed: dict = field(default_factory=dict)
    grouping: dict | bool | None = None
    refused: dict = field(default_factory=dict)
    xla: bool = False
    banned: frozenset = frozenset()
    numpy_values: frozenset = frozenset()
    tensor_values: frozenset = frozenset()
    never_values: frozenset = frozenset()
    no_islands: frozenset = frozenset()
    arrays: Arrays = Arrays.FED
    numpy_rereads: int = 0

    def restarted(self, **changes: Any) -> "TracePlan":
        """The plan with ``changes``, trying fed arrays from the start again."""
        return replace(self, arrays=Arrays.FED, numpy_rereads=0, **changes)

    def specialized(self) -> "TracePlan":
        """Once more on this call's values: no relaxed shape, no fed number, trees planned
        anew; what the trace must not assume stays."""
        return self.restarted(relaxed={}, fed={}, grouping=None, refused={})

    def arrays_fallback(self, fed: frozenset) -> "TracePlan | None":
        """After a trace that fed the NumPy arrays at ``fed`` failed (not a restart, not for
        good): with this call's shapes of them if they were relaxed, then with every array a
        value (eager's NumPy casts where a tensor input raises).  None: nothing left to try."""
        if not fed:
            return None
        if self.arrays is Arrays.FED and fed & self.relaxed.keys():
            return replace(self, arrays=Arrays.FED_STATIC)
        if self.arrays is not Arrays.VALUES:
            return replace(self, arrays=Arrays.VALUES)
        return None

    def shapes_for(self, fed: frozenset) -> dict:
        """The relaxed shapes a trace uses: without those of ``fed`` arrays in ``FED_STATIC``."""
        if self.arrays is Arrays.FED_STATIC:
            return {s: r for s, r in self.relaxed.items() if s not in fed}
        return self.relaxed
