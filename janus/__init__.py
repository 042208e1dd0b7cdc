"""Janus: run imperative TensorFlow 2 programs as speculatively specialized graphs.

Public API::

    @janus.function            # profile, convert, cache, run as graphs, fall back to eager
    janus.stats(f)             # counters: calls, graph_calls, eager_calls, conversions, ...
    janus.explain(f)           # readable report; .code is the generated source
    janus.reset(f=None)        # forget graphs and profiles
    janus.enable() / janus.disable() / with janus.enabled():   # the GradientTape hook

The names are resolved on first use, so that ``import janus.convert`` (the AST
converter, which needs no TensorFlow) does not import TensorFlow.
"""
from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> the module that defines it
_LAZY = {
    "function": "janus.driver.function",
    "stats": "janus.introspect",
    "explain": "janus.introspect",
    "reset": "janus.introspect",
    "enable": "janus.takeover.hook",
    "disable": "janus.takeover.hook",
    "enabled": "janus.takeover.hook",
}
__all__ = list(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'janus' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
