"""The run's timeline as Chrome trace-event JSON (TensorBoard's trace viewer, Perfetto,
chrome://tracing): each recorded call a complete event ("X") named by its function and what
it did, a converting call's conversion as its own event, a split call's graph segments
nested in it and the Python between them as events of their own.  Bounded like the log it
is made from (``janus.reporting.events``); ``otherData`` says what was sampled."""
from __future__ import annotations

import json
import os
import sys
from typing import Any

from janus.reporting import events as _events


def trace_events(log: _events.EventLog) -> list[dict[str, Any]]:
    """The trace events of ``log``, in time order."""
    pid = os.getpid()
    out: list[dict[str, Any]] = [{"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "ts": 0,
                                  "args": {"name": "janus " + os.path.basename(sys.argv[0] or "python")}}]
    recorded = sorted(log.events, key=lambda e: e.start)
    for e in recorded:
        out += _call(e, log.started, pid)
    out += _between_segments(recorded, log.started, pid)
    return out


def _us(seconds: float) -> float:
    return round(seconds * 1e6, 3)


def _call(e: _events.Event, origin: float, pid: int) -> list[dict[str, Any]]:
    """One call: its event, and a converting call's conversion at its start."""
    args = {"function": e.function, "file": e.file, "line": e.line, "call": e.index, "kind": e.kind}
    if e.detail:
        args["detail"] = e.detail
    if e.code is not None:
        args["code"] = e.code.value
    if e.segment_of:
        args["segment_of"] = e.segment_of
    name = f"{e.function} ({_events.SEGMENT_WRITTEN if e.kind == _events.SEGMENT_WRITTEN else e.kind})"
    main = {"ph": "X", "name": name, "cat": e.kind, "ts": _us(e.start - origin), "dur": _us(e.seconds),
            "pid": pid, "tid": e.thread, "args": args}
    out = [main]
    if e.kind == _events.CONVERT and e.convert_seconds:
        out.append({"ph": "X", "name": f"{e.function} (conversion)", "cat": "conversion", "ts": main["ts"],
                    "dur": _us(e.convert_seconds), "pid": pid, "tid": e.thread,
                    "args": {"function": e.function, "line": e.line, "detail": e.detail}})
    return out


def _between_segments(recorded: list[_events.Event], origin: float, pid: int) -> list[dict[str, Any]]:
    """Inside each split call, the gaps between its segments' events: Python at the breaks."""
    out = []
    for parent in (e for e in recorded if e.kind == _events.SPLIT):
        end = parent.start + parent.seconds
        inside = [c for c in recorded if c.depth == parent.depth + 1 and c.thread == parent.thread
                  and parent.start <= c.start < end]
        cursor = parent.start
        for child in inside + [None]:
            stop = child.start if child is not None else end
            if stop - cursor > 2e-6:
                out.append({"ph": "X", "name": f"{parent.function} (Python between segments)", "cat": "python",
                            "ts": _us(cursor - origin), "dur": _us(stop - cursor), "pid": pid, "tid": parent.thread,
                            "args": {"function": parent.function, "file": parent.file, "line": parent.line}})
            if child is not None:
                cursor = max(cursor, child.start + child.seconds)
    return out


def document(log: _events.EventLog) -> dict[str, Any]:
    """The JSON object: ``traceEvents`` and, in ``otherData``, what the bound left out."""
    sampled = (f"every call of the first {log.full_calls}, then one in {log.sample_every}"
               if log.calls > log.full_calls else "every call")
    return {"traceEvents": trace_events(log), "displayTimeUnit": "ms",
            "otherData": {"producer": "janus", "calls": log.calls, "recorded": sampled,
                          "calls_not_recorded": log.unrecorded, "events_dropped_oldest": log.dropped,
                          "max_events": log.events.maxlen}}


def write(path: str, log: _events.EventLog | None) -> str:
    """Write the timeline of ``log`` (an empty one when nothing was recorded) to ``path``."""
    doc = document(log if log is not None else _events.EventLog())
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh)
    return path
