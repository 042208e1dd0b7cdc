"""TensorFlow is a dependency of the janus-tf distribution, not of every import of ``janus``.

``import janus`` and ``import janus.convert`` (the AST converter) need no TensorFlow; the
public names (``janus.function``, ``janus.stats``, ...) do. ``require_tensorflow()`` is
called where they are first resolved, so that a missing TensorFlow is one line saying how
to install it instead of a traceback from deep inside the driver.
"""
from __future__ import annotations

from types import ModuleType

# the range pyproject.toml's dependencies give; keep the two in step
TENSORFLOW_REQUIREMENT = "tensorflow>=2.21,<2.22"


def require_tensorflow() -> ModuleType:
    """Import and return ``tensorflow``; if it is not installed, raise ImportError saying how
    to install it. An ImportError raised inside an installed TensorFlow (a broken build, a
    missing shared library) propagates unchanged: that message is TensorFlow's to give."""
    try:
        import tensorflow
    except ModuleNotFoundError as exc:
        if exc.name != "tensorflow":
            raise
        raise ImportError(
            "Janus needs TensorFlow, which is not installed: `pip install janus-tf` brings it "
            f"(or `pip install '{TENSORFLOW_REQUIREMENT}'`)",
            name="tensorflow",
        ) from None
    return tensorflow
