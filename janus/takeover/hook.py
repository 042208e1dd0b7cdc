"""The transparent hook: take over training steps (and hot TensorFlow functions) without touching user code.

While the hook is enabled, a Python function or method whose own body records a
``tf.GradientTape`` (``with tf.GradientTape() as tape:``, ``tape = GradientTape()`` ...)
is replaced, in its module's or class's namespace, by ``janus.function(fn)``.  From
its next call on it runs through Janus (profiled, converted, cached graphs, eager
fallback).  A ``JanusFunction`` is a descriptor, so methods stay methods and all
instances share one cache.

TensorFlow is not patched.  The hook is a static scan, done once per module, and a
watcher for the steps a scan cannot see:

* ``enable()`` scans the user's already-imported modules: ``__main__`` and modules
  whose file lies under the main script's directory or the current directory (never
  the standard library, site-packages or Janus itself).  A function qualifies when
  its code object names ``GradientTape`` (``co_names``: the same test as finding a
  ``tf.GradientTape`` / ``GradientTape`` reference in its AST, but without parsing;
  nested functions have their own code objects and are not counted).
* A meta-path finder gives modules imported later the same treatment right after
  they executed (the module keeps its original loader).
* Steps defined as closures, in classes made at run time, after ``enable()``, or
  called through references taken before it are found when they run and redirected
  to Janus by a trampoline code object (``redirect.py``).
* Functions of the user's modules that use TensorFlow without a tape (PPO's
  ``sample_action``, DDPG's ``update_target``) are counted by a trampoline and taken over
  the same way at their ``config.LIMITS.hot_calls``-th call (``hot.py``; ``enable(hot_functions=False)``
  or ``JANUS_HOT_FUNCTIONS=0`` turns that off).
* ``disable()`` removes the finder and the watcher and puts every original function
  and code object back (unless the user rebound the name meanwhile).  ``taken_over()``
  lists what is wrapped.  What was taken over is remembered (``roster.history``, for
  as long as the user's function lives): ``janus.stats``/``janus.explain`` of it still
  answer after ``disable()``, and ``enable()`` again takes it over with the same Janus
  function, its graphs and counts.

``python -m janus script.py`` (``janus.__main__``) cannot scan the script after it ran,
so it rewrites the script's AST in memory before executing it as ``__main__``
(``prepare_script``): tape-recording functions get ``janus.function`` as their
innermost decorator, and a module-level training loop (a ``for``/``while`` loop whose
body records a tape) has its body moved into a Janus function called once per
iteration.  The file on disk is never modified.

The pieces: ``detect.py`` (the static test), ``importer.py`` (the namespace scan and the
import hook), ``hot.py`` (functions without a tape), ``script.py`` (the script rewrite),
``roster.py`` (what was taken over);
this module is the public face (``enable``, ``disable``, ``enabled``, ``taken_over``).
"""
from __future__ import annotations

import contextlib
import gc
import sys
from typing import Any, Iterator

from janus import config
from janus.driver.api import function as janus_function
from janus.driver.logs import configure_logging
from janus.takeover import hot, importer, redirect, roster
from janus.takeover.detect import TAPE_NAME, records_tape
from janus.takeover.importer import HookFinder, is_user_file, scan_module, scan_user_modules
from janus.takeover.script import loop_body, prepare_script

_finder: HookFinder | None = None


def take_over(fn: Any) -> Any:
    """``janus.function(fn)``, recorded in ``taken_over()`` (the script rewrite's decorator)."""
    if isinstance(fn, (staticmethod, classmethod)):
        return type(fn)(take_over(fn.__func__))
    wrapped = janus_function(fn)
    if wrapped is not fn:
        roster.record(getattr(fn, "__qualname__", repr(fn)), wrapped)
        roster.remember(fn, wrapped)
    return wrapped


_collected = False


def enable(hot_functions: bool | None = None) -> None:
    """Take over tape-recording functions of the user's modules, now and on later imports,
    and (``hot_functions``, default ``JANUS_HOT_FUNCTIONS``, on) TensorFlow functions without
    a tape once they are called in a hot loop (``hot.py``).

    Calling it again rescans (picking up functions defined since); ``hot_functions=False``
    then stops counting (functions already taken over stay so until ``disable()``).

    The first call ends with one full garbage collection (if automatic collection is on).
    Importing Janus's machinery (converter, profiler, driver) allocates enough long-lived
    objects to bring the program's next full collection forward, and it then fell into
    the first call of the step the hook was about to find: in
    ``benchmarks/takeover_first_call.py`` (3.11) a full collection of 100-200 ms ran inside
    that call in 7 of 7 runs, never in the eager runs' first call, and the call took 2.6x
    eager's (up to 3.5x).  Collected here, it is paid once by ``enable()``, outside any step.
    """
    global _finder, _collected
    configure_logging()   # JANUS_LOG: what the hook decides is logged before any Janus function exists
    hot_on = config.hot_functions() if hot_functions is None else bool(hot_functions)
    with roster.lock:
        roster.state.enabled = True
        roster.state.hot = hot_on
        if not hot_on:
            hot.stop()
        if hot.scan_module not in importer.after_scan:
            importer.after_scan.append(hot.scan_module)
        if _finder is None:
            _finder = HookFinder()
            sys.meta_path.insert(0, _finder)
        scan_user_modules()
        redirect.start()
        if not _collected:
            _collected = True
            if gc.isenabled():
                gc.collect()


def disable() -> None:
    """Remove the import hook and put back every function the scan replaced."""
    global _finder
    with roster.lock:
        roster.state.enabled = roster.state.hot = False
        hot.stop()
        redirect.stop()
        if _finder is not None:
            with contextlib.suppress(ValueError):
                sys.meta_path.remove(_finder)
            _finder = None
        for container, name, original, new, jf in reversed(roster.installed):
            current = container.get(name) if isinstance(container, dict) else vars(container).get(name)
            if current is new:
                if isinstance(container, dict):
                    container[name] = original
                else:
                    setattr(container, name, original)
            roster.untake(lambda taken, jf=jf: taken is jf)
        roster.installed.clear()


def is_enabled() -> bool:
    return roster.state.enabled


@contextlib.contextmanager
def enabled(hot_functions: bool | None = None) -> Iterator[None]:
    """``with janus.enabled():`` — the hook is on inside the block (restored after)."""
    was = roster.state.enabled
    enable(hot_functions)
    try:
        yield
    finally:
        if not was:
            disable()


def taken_over() -> list[str]:
    """Qualified names of the functions currently taken over by the hook."""
    with roster.lock:
        return [q for q, _ in roster.taken_now()]


def counting() -> list[Any]:
    """The functions without a tape whose calls are being counted (taken over when hot)."""
    return hot.counting()


def taken_over_functions() -> list[Any]:
    """The Janus functions the hook installed, in the order they were taken over."""
    with roster.lock:
        return [jf for _, jf in roster.taken_now()]




__all__ = ["enable", "disable", "enabled", "is_enabled", "taken_over", "taken_over_functions", "take_over", "counting",
           "records_tape", "scan_module", "prepare_script", "loop_body", "is_user_file", "TAPE_NAME"]
