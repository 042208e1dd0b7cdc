"""What the side-by-side benchmarks of Python-heavy programs share (``maml.py``,
``greedy_decoder.py``, ``dqn.py``): the four modes, one timed run of a mode, and the
columns of their tables.

A run calls the program once per input, timed; the first exception ends it (``tf.function``
on eager code may not run it) and its last line is kept for the table; for the Janus
modes, ``janus.stats`` and ``janus.explain`` are read before ``janus.disable()``.
"""
from __future__ import annotations

import contextlib
import os
import platform
import statistics
import time
from typing import Any, Callable, Iterable, Iterator

import keras
import tensorflow as tf

import janus


def _as_written(f: Any) -> Any:
    return f


# name, and what wraps the program's step (janus.enable() takes the plain step over)
MODES = (("eager", _as_written), ("janus", janus.function), ("janus.enable()", _as_written),
         ("tf.function", tf.function))


@contextlib.contextmanager
def hooked(name: str) -> Iterator[None]:
    """The hook on while the mode ``janus.enable()`` builds and runs its program."""
    if name != "janus.enable()":
        yield
        return
    janus.enable()
    try:
        yield
    finally:
        janus.disable()


def raised(e: BaseException) -> str:
    """``raises ValueError: ...``: the exception's last line, short enough for a table cell."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    return f"raises {last[:130]}" if last.startswith(type(e).__name__) else f"raises {type(e).__name__}: {last[:110]}"


def timed(name: str, program: Any, inputs: Iterable, call: Callable[[Any], Any]) -> dict:
    """``call(x)`` for every input, each timed: the results, the median of the second half
    (ms), the whole run (s, first call included), the error that ended it, and for the Janus
    modes ``(janus.stats, janus.explain)`` of ``program``."""
    times: list[float] = []
    results: list = []
    error = None
    start = time.perf_counter()
    for x in inputs:
        t0 = time.perf_counter()
        try:
            results.append(call(x))
        except Exception as e:  # noqa: BLE001 - tf.function on eager code may not run it
            error = raised(e)
            break
        times.append(time.perf_counter() - t0)
    total = time.perf_counter() - start
    info = None
    if name.startswith("janus"):
        try:
            info = (janus.stats(program), str(janus.explain(program)))
        except Exception as e:  # noqa: BLE001 - the hook may not have taken it over
            info = (None, f"explain raises {type(e).__name__}: {e}")
    second = times[len(times) // 2:]
    return {"name": name, "median_ms": 1000 * statistics.median(second) if second else float("nan"),
            "total_s": total, "results": results, "error": error, "info": info}


def speed(run: dict, eager: dict) -> float:
    """Eager's median over the run's (NaN when the run made no call)."""
    return eager["median_ms"] / run["median_ms"] if run["median_ms"] == run["median_ms"] else float("nan")


def note(run: dict) -> str:
    """The table's last column: the error, or how many calls and segment runs were graphs."""
    stats = run["info"][0] if run["info"] else None
    if run["error"] or not stats:
        return run["error"] or (run["info"][1][:120] if run["info"] else "")
    segment_runs = stats["segment_graph_calls"] + stats["segment_eager_calls"]
    return (f"{stats['graph_calls']}/{stats['calls']} whole calls as graphs; {stats['breaks']} breaks, "
            f"{stats['segments']} segments, {stats['segment_graph_calls']}/{segment_runs} segment runs as graphs")


def machine() -> str:
    return (f"machine: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, "
            f"TensorFlow {tf.__version__}, Keras {keras.__version__}")


def print_explanations(runs: list[dict]) -> None:
    for r in runs:
        if r["info"]:
            print(f"\n== {r['name']}: janus.stats\n{r['info'][0]}\n== janus.explain\n{r['info'][1]}")
