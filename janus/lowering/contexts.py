"""``with`` statements of converted code: only TensorFlow's own context managers.

A ``with`` statement stays a ``with`` in converted code, so its ``__enter__`` and
``__exit__`` run in Python while tracing, once, and never when the graph runs.  That is
eager's behaviour only for the framework's context managers, which act on the graph
being built (``tf.GradientTape``, ``tf.name_scope``, ``tf.device``,
``tf.control_dependencies``, ``tf.init_scope``, a strategy's ``scope()``), and for
``contextlib.nullcontext``, which does nothing.  Any other one (a ``threading.Lock``,
a class or ``@contextmanager`` generator of the user's) would be entered only while
tracing: a graph run would go on without the lock held, without the side effects of
its ``__enter__``/``__exit__``.  Those make the conversion fail for good and the
function runs eagerly.
"""
from __future__ import annotations

import contextlib
from typing import Any, TypeVar

from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.trace.active import current

FRAMEWORK_ROOTS = frozenset({"tensorflow", "keras", "tf_keras"})

M = TypeVar("M")


def _from_framework(module: str | None) -> bool:
    return bool(module) and module.split(".", 1)[0] in FRAMEWORK_ROOTS


def _is_framework_context(manager: Any) -> bool:
    cls = type(manager)
    if cls is contextlib.nullcontext or _from_framework(cls.__module__):
        return True
    # TensorFlow's own ``@contextmanager`` functions (``tf.init_scope``, ``tf.device`` in a graph).
    return (isinstance(manager, contextlib._GeneratorContextManager)  # noqa: SLF001 - contextlib's public result type
            and _from_framework(getattr(getattr(manager, "func", None), "__module__", None)))


def context_manager(manager: M) -> M:
    """``manager`` (a ``with`` item's context expression) unchanged if it is TensorFlow's own.

    Raises a permanent ``ConversionError`` naming its type otherwise: its ``__enter__`` and
    ``__exit__`` would run only while tracing, not at each call as eager runs them.
    """
    if _is_framework_context(manager):
        if type(manager).__name__ == "GradientTape":
            current().tapes.add(manager)
        return manager
    cls = type(manager)
    what = cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    if isinstance(manager, contextlib._GeneratorContextManager):  # noqa: SLF001
        func = getattr(manager, "func", None)
        what = f"@contextmanager {getattr(func, '__module__', '?')}.{getattr(func, '__qualname__', '?')}"
    raise ConversionError(f"with {what}: a context manager that is not TensorFlow's would be entered "
                          "only while tracing", permanent=True, code=Code.CONTEXT_MANAGER)
