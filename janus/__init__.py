"""Janus: run imperative TensorFlow 2 programs as speculatively specialized graphs.

Public API::

    @janus.function            # profile, convert, cache, run as graphs, fall back to eager
    janus.function(strict=True)  # raise janus.GraphBreakError instead of falling back
    janus.do_not_convert(f)    # Janus never converts f (a caller that reaches it runs eagerly)
    janus.allow(module_or_f)   # convert a library's Python (a module and its submodules, or one function)
    janus.stats(f)             # counters: calls, graph_calls, eager_calls, conversions, ...
    janus.explain(f)           # readable report; .code is the generated source
    janus.concrete_function(f) # the tf ConcreteFunction of f's last graph call (export, TensorBoard)
    janus.reset(f=None)        # forget graphs and profiles
    janus.report(path)         # write the report page (HTML): where each line ran, breaks with codes, calls
    janus.enable() / janus.disable() / with janus.enabled():   # the hook: tape steps, hot TF functions
    janus.__version__

The names are resolved on first use, so that ``import janus.convert`` (the AST
converter, which needs no TensorFlow) does not import TensorFlow; the first one that
needs TensorFlow says how to install it if it is missing.
"""

# public name -> the module that defines it
_LAZY = {
    "function": "janus.driver.api",
    "do_not_convert": "janus.driver.api",
    "allow": "janus.driver.api",
    "GraphBreakError": "janus.errors",
    "stats": "janus.introspect",
    "explain": "janus.introspect",
    "reset": "janus.introspect",
    "concrete_function": "janus.introspect",
    "report": "janus.introspect",
    "enable": "janus.takeover.hook",
    "disable": "janus.takeover.hook",
    "enabled": "janus.takeover.hook",
}
__all__ = sorted(_LAZY)

# The version when no distribution metadata is found (a checkout run without installing);
# pyproject.toml holds the version of record.
_FALLBACK_VERSION = "0.2.0"
_DISTRIBUTION = "janus-tf"


def _version() -> str:
    from importlib import metadata
    try:
        return metadata.version(_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return _FALLBACK_VERSION


def __getattr__(name: str):
    if name == "__version__":
        value = globals()["__version__"] = _version()
        return value
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'janus' has no attribute {name!r}")
    _require_tensorflow()
    from importlib import import_module
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def _require_tensorflow() -> None:
    """A missing TensorFlow is one line saying how to install it (``janus._requirements``)."""
    try:
        from janus._requirements import require_tensorflow
    except ImportError:  # an older tree without the module: importing the driver says it
        return
    require_tensorflow()


def __dir__() -> list:
    return sorted(set(__all__) | {"__version__"} | {n for n in globals() if n.startswith("__") and n.endswith("__")})
