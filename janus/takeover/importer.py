"""Taking over the user's modules: the namespace scan (``enable()`` scans the modules
already imported) and the import hook (a meta-path finder gives modules imported later
the same treatment right after they executed, keeping their original loader).

A module is the user's when its file is user code (``janus_profiler.usercode``) under
the main script's directory or the current directory.
"""
from __future__ import annotations

import importlib.abc
import os
import sys
import threading
import types
from typing import Any, Callable

from janus.driver.function import BoundJanusFunction, JanusFunction
from janus.driver.api import function as janus_function
from janus.takeover import roster
from janus.takeover.detect import records_tape
from janus_profiler import usercode


def _user_roots() -> list[str]:
    roots = {os.path.realpath(os.getcwd())}
    main = sys.modules.get("__main__")
    main_file = getattr(main, "__file__", None)
    if main_file:
        roots.add(os.path.dirname(os.path.realpath(main_file)))
    return sorted(roots)


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def is_user_file(path: str | None) -> bool:
    """A ``.py`` file of the user's program: user code (``janus_profiler.usercode``) under
    the script's directory or the cwd."""
    if not path or not path.endswith(".py") or not usercode.is_user_file(path):
        return False
    real = os.path.realpath(path)
    return any(_under(real, r) for r in _user_roots())


def _is_user_module(mod: Any) -> bool:
    if not isinstance(mod, types.ModuleType):
        return False
    if mod.__name__ == "janus" or mod.__name__.startswith(("janus.", "janus_profiler")):
        return False
    return is_user_file(getattr(mod, "__file__", None))


def _wrap_candidate(obj: Any, module_name: str) -> Any | None:
    """The Janus replacement for a namespace entry, or None to leave it alone."""
    if isinstance(obj, (JanusFunction, BoundJanusFunction)):
        return None
    inner, kind = obj, None
    if isinstance(obj, (staticmethod, classmethod)):
        inner, kind = obj.__func__, type(obj)
    if not isinstance(inner, types.FunctionType) or inner.__module__ != module_name:
        return None
    if "<locals>" in inner.__qualname__ or not records_tape(inner):
        return None
    # taken over before a disable(): the same Janus function, its graphs and counts
    wrapped = roster.earlier(inner) or janus_function(inner)
    if wrapped is inner:  # JANUS_DISABLE
        return None
    roster.remember(inner, wrapped)
    with roster.lock:
        if not any(jf is wrapped for jf in roster.scanned):
            roster.scanned.append(wrapped)  # runs ``inner``: history holds it weakly (see registry)
    return kind(wrapped) if kind is not None else wrapped


def _scan_namespace(container: Any, names: dict, module_name: str, seen: set) -> None:
    for name, obj in list(names.items()):
        if isinstance(obj, type) and obj.__module__ == module_name and id(obj) not in seen \
                and "<locals>" not in obj.__qualname__:
            seen.add(id(obj))
            _scan_namespace(obj, dict(vars(obj)), module_name, seen)
            continue
        new = _wrap_candidate(obj, module_name)
        if new is None:
            continue
        inner = obj.__func__ if isinstance(obj, (staticmethod, classmethod)) else obj
        if isinstance(container, dict):
            container[name] = new
        else:
            setattr(container, name, new)
        jf = new.__func__ if isinstance(new, (staticmethod, classmethod)) else new
        with roster.lock:
            roster.installed.append((container, name, obj, new, jf))
        roster.record(inner.__qualname__, jf)


# Further scans of each user module, after the tape scan: hook.py registers the hot-function
# scan (janus.takeover.hot imports redirect.py, which imports this module).
after_scan: list[Callable[[types.ModuleType], None]] = []


def scan_module(mod: types.ModuleType) -> None:
    """Take over the tape-recording functions and methods defined in ``mod`` (then run
    ``after_scan``)."""
    _scan_namespace(mod.__dict__, mod.__dict__, mod.__name__, set())
    for scan in after_scan:
        scan(mod)


def scan_user_modules() -> None:
    for mod in list(sys.modules.values()):
        if _is_user_module(mod) or (mod is sys.modules.get("__main__") and isinstance(mod, types.ModuleType)
                                    and not getattr(mod, "__file__", None)):
            scan_module(mod)


class _ScanAfterExec(importlib.abc.Loader):
    """Loader proxy: run the original loader, scan the module, restore the original loader."""

    def __init__(self, loader: Any):
        self.loader = loader

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        if roster.state.enabled:
            scan_module(module)

    def __getattr__(self, name):
        return getattr(self.loader, name)


class HookFinder(importlib.abc.MetaPathFinder):
    """Finds nothing itself; wraps the loader of user modules found by the other finders."""

    def __init__(self):
        self._busy = threading.local()

    def find_spec(self, fullname, path, target=None):
        if getattr(self._busy, "on", False) or fullname.startswith(("janus.", "janus_profiler")):
            return None
        self._busy.on = True
        try:
            for finder in sys.meta_path:
                if finder is self or not hasattr(finder, "find_spec"):
                    continue
                spec = finder.find_spec(fullname, path, target)
                if spec is not None:
                    break
            else:
                return None
        finally:
            self._busy.on = False
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module") or not is_user_file(spec.origin):
            return spec
        spec.loader = _ScanAfterExec(loader)
        return spec
