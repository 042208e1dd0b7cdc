"""``import`` statements inside converted code: run at trace time, read as guarded values.

Eager runs a function-local ``import`` at every call, and after the first time it only
looks the module up in ``sys.modules``.  A trace does that lookup once: the module (or
the name taken from it) is read from ``sys.modules`` like a global, so a graph is used
only while ``sys.modules`` still holds the same module object and the module still binds
the same value (guards), and a tensor or number taken from a module is read like any
module global.  A module not loaded yet is not loaded by a trace (its top-level code
would run at trace time, out of the call's order): the conversion fails, the call runs
eagerly and loads it, and a later conversion finds it loaded.
"""
from __future__ import annotations

import importlib.util
import sys
from typing import Any

from janus.errors import ConversionError, NotYet
from janus.reporting.codes import Code
from janus.lowering import state


def import_name(name: str, as_module: bool) -> Any:
    """``import a.b.c`` (binds package ``a``; ``as_module``: ``import a.b.c as x``, binds
    module ``a.b.c``, found as Python finds it: attribute by attribute from ``a``)."""
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        _loaded(".".join(parts[:i]))
    value = state.ld_global(sys.modules, parts[0])
    if not as_module:
        return value
    for i in range(1, len(parts)):
        value = _attribute(value, ".".join(parts[:i]), parts[i])
    return value


def import_from(module: str, g: dict, level: int, names: tuple) -> tuple:
    """``from module import names`` (``level`` dots before ``module``): the bound values."""
    absolute = _resolve(module, g, level)
    _loaded(absolute)
    found = state.ld_global(sys.modules, absolute)
    return tuple(_attribute(found, absolute, n) for n in names)


def _attribute(module: Any, module_name: str, name: str) -> Any:
    """``module.name`` as ``IMPORT_FROM`` finds it: the attribute, else the submodule."""
    if name in getattr(module, "__dict__", {}):
        return state.ld_attr(module, name)
    full = f"{module_name}.{name}"
    if full in sys.modules:
        return state.ld_global(sys.modules, full)
    if hasattr(module, name):  # a module's __getattr__: eager calls it at every call
        raise ConversionError(f"imports {name} from {module_name}, which makes it on demand (module __getattr__)",
                              code=Code.NOT_LOADED)
    raise NotYet(f"imports {full}, which is not loaded yet (eager loads it at this call)")


def _loaded(name: str) -> None:
    if name not in sys.modules:
        raise NotYet(f"imports {name}, which is not loaded yet (eager loads it at this call)")


def _resolve(module: str, g: dict, level: int) -> str:
    """The absolute name of a relative import, from the importing module's globals (as
    ``importlib`` computes its package)."""
    if level == 0:
        return module
    package = g.get("__package__")
    if package is None:
        spec = g.get("__spec__")
        package = spec.parent if spec is not None else g.get("__name__", "")
        if spec is None and "__path__" not in g:
            package = package.rpartition(".")[0]
    try:
        return importlib.util.resolve_name("." * level + module, package)
    except (ImportError, ValueError) as e:
        raise ConversionError(f"relative import of {module!r}: {e}", code=Code.NOT_LOADED) from None
