"""What counts as the user's code: one predicate for the profiler, ``janus-profile`` and Janus.

A file is library code when it lies in the standard library, in an installed package
(site- or dist-packages, the interpreter's prefixes), in ``janus_profiler`` or in
``janus`` (found without importing it), or when it is generated (``<frozen ...>``,
``<janus ...>``).  Everything else — the user's script, the modules beside it, code
typed at a prompt or in a notebook cell — is user code.  Callers that need more (the
``janus-profile`` root, the GradientTape hook's "modules of this program") build on it.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import sys
import sysconfig

_GENERATED = ("<frozen", "<janus")


@functools.lru_cache(maxsize=1)
def library_dirs() -> tuple[str, ...]:
    """Directories whose files are never user code."""
    dirs = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.add(path)
    for prefix in {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}:
        dirs.add(os.path.join(prefix, "lib"))
    dirs.add(os.path.dirname(os.path.abspath(__file__)))  # janus_profiler
    spec = importlib.util.find_spec("janus")  # and Janus, without importing it
    dirs.update(spec.submodule_search_locations or [] if spec else [])
    return tuple(sorted(os.path.realpath(d) for d in dirs))


@functools.lru_cache(maxsize=8192)
def is_user_file(filename: str | None) -> bool:
    """Whether code from ``filename`` is the user's (see the module docstring)."""
    if not filename or filename.startswith(_GENERATED):
        return False
    if filename.startswith("<"):
        return True
    path = os.path.realpath(filename)
    parts = path.split(os.sep)
    if "site-packages" in parts or "dist-packages" in parts:
        return False
    return not any(path == d or path.startswith(d + os.sep) for d in library_dirs())
