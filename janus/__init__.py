"""Janus: run imperative TensorFlow 2 programs as speculatively specialized graphs.

Public API::

    @janus.function            # profile, convert, cache, run as graphs, fall back to eager
    janus.stats(f)             # counters: calls, graph_calls, eager_calls, conversions, ...
    janus.explain(f)           # readable report; .code is the generated source
    janus.reset(f=None)        # forget graphs and profiles
"""
from janus.function import function
from janus.introspect import explain, reset, stats

__all__ = ["function", "stats", "explain", "reset"]
__version__ = "0.1.0"
from janus.hook import disable, enable, enabled  # noqa: E402 - the GradientTape hook
__all__ += ["enable", "disable", "enabled"]
