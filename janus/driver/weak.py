"""Callbacks that do not keep their object alive.

What a Janus function hands to the objects it holds (its conversion's note, an entry's XLA
rebuild, its segments' calls back into its split) must not refer back to it: the cycle
would keep its graphs, and their functions in TensorFlow's context, until Python's next
full collection instead of freeing them when the user lets go of it (``docs/memory.md``).
"""
from __future__ import annotations

import types
import weakref
from typing import Any, Callable


def weak_method(method: types.MethodType) -> Callable[..., Any]:
    """``method``, called while its object lives (a call after it died does nothing, None)."""
    ref = weakref.WeakMethod(method)

    def call(*args: Any, **kwargs: Any) -> Any:
        bound = ref()
        return None if bound is None else bound(*args, **kwargs)
    return call
