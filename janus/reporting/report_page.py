"""The report page: one self-contained HTML file (inline CSS and SVG, no script, no network)
saying, per Janus function, which of its lines ran in a graph, in Python at a graph break or
eagerly, the share of time of each part, its graphs (guards in words, assumptions and how
often they failed), its breaks with their code and fix, its conversions and a chart of its
calls over the run.  Written by ``janus.report(path)``, ``JANUS_REPORT_HTML`` at exit and
``python -m janus --html``."""
from __future__ import annotations

import bisect
import html
import math
import os
import time
from typing import Any, Iterable

from janus.reporting import events as _events
from janus.reporting import model
from janus.reporting.breaks_page import ENTRIES
from janus.reporting.codes import code_of

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 12px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 6px;border-bottom:1px solid #ccc}
h3{font-size:14px;margin:14px 0 4px}.muted{color:#666}.small{font-size:12px}
table{border-collapse:collapse}td,th{padding:1px 8px;vertical-align:top;text-align:left}
table.src{font:12.5px/1.35 ui-monospace,Menlo,Consolas,monospace;width:100%}
table.src td.n{color:#888;text-align:right;user-select:none;width:3em}
table.src td.c{white-space:pre}table.src td.s{color:#555;width:17em;font-family:system-ui,sans-serif}
tr.graph td.c{background:#dcefdc}tr.python td.c{background:#ffe3b3}tr.eager td.c{background:#f7d4d4}
.key span{display:inline-block;padding:0 8px;margin-right:6px;border-radius:3px}
.graph{background:#dcefdc}.python{background:#ffe3b3}.eager{background:#f7d4d4}.convert{background:#cfe0f7}
.split{background:#e6dcf2}.code{font-family:ui-monospace,monospace;font-weight:600}
ul{margin:2px 0 6px 0;padding-left:20px}li{margin:1px 0}
table.list td,table.list th{border-top:1px solid #eee}
"""

# the chart's colour per call kind, and its words
KIND_COLOURS = {_events.GRAPH: "#4caf50", _events.SPLIT: "#9c7cc9", _events.EAGER: "#e57373",
                _events.CONVERT: "#5c8fd6", _events.RERUN: "#f0a030", _events.SEGMENT_WRITTEN: "#e57373"}
KIND_WORDS = {_events.GRAPH: "graph", _events.SPLIT: "split (segments + Python)", _events.EAGER: "eager",
              _events.CONVERT: "converting", _events.RERUN: "aborted, re-ran eagerly"}


def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def write(path: str, log: _events.EventLog | None = None, functions: Iterable[Any] | None = None) -> str:
    """Write the page of ``functions`` (default: those ``log`` saw called) to ``path``."""
    page = render(log, functions)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(page)
    return path


def render(log: _events.EventLog | None = None, functions: Iterable[Any] | None = None) -> str:
    """The page's text (``functions``: the Janus functions to show; default those ``log`` saw called)."""
    seen = functions if functions is not None else (log.functions if log is not None else ())
    fns = sorted((f for f in seen if f.segment_of is None and f.counts.get("calls", 0)),
                 key=lambda f: (f.python_function.__code__.co_filename, f.python_function.__code__.co_firstlineno))
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>Janus report</title>",
             f"<style>{CSS}</style></head><body>", _header(log, fns)]
    parts += [_function(jf, log) for jf in fns]
    if not fns:
        parts.append("<p>No Janus function was called.</p>")
    parts.append("</body></html>\n")
    return "".join(parts)


def _header(log: _events.EventLog | None, fns: list) -> str:
    calls = sum(f.counts.get("calls", 0) for f in fns)
    graph = sum(sum(g.counts.get("graph_calls", 0) for g in model.functions_of(f)) for f in fns)
    recorded = "every call's time was not recorded (set JANUS_REPORT_HTML or JANUS_TRACE before the run)" \
        if log is None else _sampling(log)
    return (f"<h1>Janus report</h1><p class='muted'>{esc(time.strftime('%Y-%m-%d %H:%M:%S'))} · "
            f"{len(fns)} functions · {calls} calls · {graph} graph runs (segments included) · {esc(recorded)}</p>"
            "<p class='key'>Lines: <span class='graph'>in a graph</span><span class='python'>in Python at a "
            "graph break</span><span class='eager'>eagerly</span> Codes are explained in docs/breaks.md.</p>")


def _sampling(log: _events.EventLog) -> str:
    text = f"{log.calls} calls timed"
    if log.unrecorded:
        text += (f"; after the first {log.full_calls} calls one in {log.sample_every} is charted "
                 f"({log.unrecorded} not charted)")
    if log.dropped:
        text += f"; the oldest {log.dropped} events were dropped (bound {log.events.maxlen})"
    return text


def _function(jf: Any, log: _events.EventLog | None) -> str:
    fn = jf.python_function
    where = f"{os.path.basename(fn.__code__.co_filename)}:{fn.__code__.co_firstlineno}"
    parts = [f"<h2>{esc(jf.__qualname__)} <span class='muted small'>{esc(where)}</span></h2>",
             f"<p>{_counts(jf)}{_time_split(jf, log)}.</p>"]
    if jf.permanent_reason:
        parts.append(f"<p><b>Runs eagerly from now on</b>: {_coded(jf.permanent_reason)}</p>")
    parts += [_chart(jf, log), _source(jf), _breaks(jf), _eager_reasons(jf), _graphs(jf), _conversions(jf, log)]
    return "".join(parts)


def _counts(jf: Any) -> str:
    """``60 calls: ...; split at 2 graph breaks into 3 segments: 100 segment runs as graphs, 20 eagerly``."""
    s = jf.counts
    text = (f"{s.get('calls', 0)} calls: {s.get('graph_calls', 0)} as one graph, {s.get('eager_calls', 0)} eagerly, "
            f"{s.get('conversions', 0)} conversions")
    segments = list(model.functions_of(jf))[1:]
    if segments:
        graphs = sum(f.counts.get("graph_calls", 0) for f in segments)
        eager = sum(f.counts.get("eager_calls", 0) for f in segments)
        breaks = len(model.breaks_of(jf))
        text += (f"; split at {breaks} graph break{'s' if breaks != 1 else ''} into {len(segments)} segments: "
                 f"{graphs} segment runs as graphs, {eager} eagerly")
    return text


def _time_split(jf: Any, log: _events.EventLog | None) -> str:
    """`` · time: 80% graph, 20% eager`` from the log's exact totals."""
    totals = log.totals.get(jf.__qualname__) if log is not None else None
    if not totals:
        return ""
    seconds = {k[:-2]: v for k, v in totals.items() if k.endswith("_s")}
    total = sum(seconds.values()) or 1.0
    shares = ", ".join(f"{v / total:.0%} {KIND_WORDS.get(k, k)}" for k, v in sorted(seconds.items(), key=lambda kv: -kv[1]))
    return f" · {total * 1e3:.1f} ms in all: {shares}"


def _coded(reason: Any) -> str:
    """A reason with its code and the code's fix."""
    code = code_of(reason)
    if code is None:
        return esc(reason)
    e = ENTRIES[code]
    return (f"{esc(reason)} <span class='code'>[{code.value}]</span> "
            f"<span class='muted small'>{esc(e.title)}. Fix: {esc(e.fix)}</span>")


def _source(jf: Any) -> str:
    view = model.source_view(jf)
    if view is None:
        return "<p class='muted'>Source not available.</p>"
    starts = {r.first: r for r in view.regions}
    rows = []
    for offset, text in enumerate(view.lines):
        line = view.first + offset
        mark = view.marks.get(line, "")
        region = starts.get(line)
        note = "" if region is None else region.label + ("" if region.share is None else f" · {region.share:.0%} of time")
        rows.append(f"<tr class='{mark}'><td class='n'>{line}</td><td class='c'>{esc(text)}</td>"
                    f"<td class='s'>{esc(note)}</td></tr>")
    return "<h3>Source</h3><table class='src'>" + "".join(rows) + "</table>"


def _breaks(jf: Any) -> str:
    breaks = model.breaks_of(jf)
    if not breaks:
        return ""
    rows = "".join(f"<tr><td>line {b.line}</td><td>{_coded(b.reason)}</td></tr>" for b in breaks)
    return f"<h3>Graph breaks</h3><table class='list'>{rows}</table>"


def _eager_reasons(jf: Any) -> str:
    items = [(f, r, n) for f in model.functions_of(jf) for r, n in f.reasons.items()]
    if not items:
        return ""
    rows = "".join(f"<li>{'' if f is jf else esc('[' + f.__qualname__.rsplit('.', 1)[-1] + '] ')}{_coded(r)} "
                   f"<span class='muted'>(×{n})</span></li>" for f, r, n in items)
    return f"<h3>Why calls ran eagerly or changed course</h3><ul>{rows}</ul>"


def _graphs(jf: Any) -> str:
    graphs = model.graphs_of(jf)
    if not graphs:
        return ""
    out = ["<h3>Graphs</h3>"]
    for i, g in enumerate(graphs):
        out.append(f"<p><b>{esc(g.owner)}, graph {i}</b>: {g.hits} runs, {g.aborted} aborted; converted in "
                   f"{g.seconds:.2f} s; inputs {esc(g.inputs)}</p><ul>")
        for kind, descriptions in g.guards.items():
            out.append(f"<li>guards, {esc(kind)}: {esc('; '.join(descriptions))}</li>")
        for description, held, failed in g.assumptions:
            out.append(f"<li>assumes {esc(description)} <span class='muted'>(held {held}, failed {failed})</span></li>")
        out.append("</ul>")
    return "".join(out)


def _conversions(jf: Any, log: _events.EventLog | None) -> str:
    names = {f.__qualname__ for f in model.functions_of(jf)}
    rows = [e for e in (log.events if log is not None else ()) if e.kind == _events.CONVERT and e.function in names]
    if not rows:
        return ""
    body = "".join(f"<tr><td>call {e.index}</td><td>{esc(e.function)}</td><td>{e.convert_seconds:.3f} s</td>"
                   f"<td>{esc(e.detail)}</td></tr>" for e in rows[:50])
    return ("<h3>Conversions</h3><table class='list'><tr><th>call</th><th>function</th><th>time</th><th>after</th>"
            f"</tr>{body}</table>")


def _chart(jf: Any, log: _events.EventLog | None, width: int = 1000, height: int = 110) -> str:
    """Each call a bar: its height the call's time (log scale), its colour what it did."""
    if log is None:
        return ""
    calls = [e for e in log.events if e.function == jf.__qualname__ and e.depth == 0]
    if not calls:
        return ""
    top = max(e.seconds for e in calls)
    low = max(min(e.seconds for e in calls), 1e-6)
    span = math.log10(top / low) if top > low else 1.0
    step = width / max(len(calls), 1)
    bars, inner = [], _Inner(log)
    for i, e in enumerate(calls):
        h = 12 + (height - 16) * (math.log10(max(e.seconds, low) / low) / span)
        title = f"<title>call {e.index}: {esc(KIND_WORDS.get(e.kind, e.kind))}, {e.seconds * 1e3:.2f} ms</title>"
        bottom = float(height)
        for colour, part in inner.parts(e):  # bottom up, fractions of the bar
            bars.append(f"<rect x='{i * step:.1f}' y='{bottom - h * part:.1f}' width='{max(step - 0.5, 0.6):.1f}' "
                        f"height='{h * part:.1f}' fill='{colour}'>{title}</rect>")
            bottom -= h * part
    legend = " ".join(f"<span style='color:{KIND_COLOURS[k]}'>■</span> {esc(w)}" for k, w in KIND_WORDS.items()
                      if any(e.kind == k for e in calls))
    if any(e.kind == _events.SPLIT for e in calls):
        legend = legend.replace(esc(KIND_WORDS[_events.SPLIT]), "split: its segments as graphs <span style='color:"
                                "#4caf50'>■</span>, as written <span style='color:#e57373'>■</span>, Python (at breaks, and "
                                "segments settled as written) <span style='color:#f0c060'>■</span>")
    return (f"<h3>Calls over the run</h3><svg width='{width}' height='{height}' viewBox='0 0 {width} {height}' "
            f"role='img' style='background:#fafafa;border:1px solid #eee'>{''.join(bars)}</svg>"
            f"<div class='small muted'>{len(calls)} calls charted, time per call from {low * 1e3:.2f} to "
            f"{top * 1e3:.2f} ms (log scale) · {legend}</div>")


class _Inner:
    """The segment runs inside split calls, per thread in time order, for the chart's bars."""

    def __init__(self, log: _events.EventLog):
        self.by_thread: dict[int, tuple[list[float], list[_events.Event]]] = {}
        for e in sorted((e for e in log.events if e.depth > 0 and e.kind != _events.SPLIT), key=lambda e: e.start):
            starts, items = self.by_thread.setdefault(e.thread, ([], []))
            starts.append(e.start)
            items.append(e)

    def parts(self, e: _events.Event) -> list[tuple[str, float]]:
        """A bar's coloured parts, bottom up, as fractions of the bar: one colour for a call; for a
        split call its segments' time as graphs, as written, and the Python between them."""
        if e.kind != _events.SPLIT or e.seconds <= 0:
            return [(KIND_COLOURS.get(e.kind, "#999"), 1.0)]
        starts, items = self.by_thread.get(e.thread, ([], []))
        lo, hi = bisect.bisect_left(starts, e.start), bisect.bisect_left(starts, e.start + e.seconds)
        inside = items[lo:hi]
        graph = min(1.0, sum(c.seconds for c in inside if c.kind in (_events.GRAPH, _events.CONVERT)) / e.seconds)
        written = min(1.0 - graph, sum(c.seconds for c in inside if c.kind not in (_events.GRAPH, _events.CONVERT))
                      / e.seconds)
        return [("#4caf50", graph), ("#e57373", written), ("#f0c060", 1.0 - graph - written)]


__all__ = ["render", "write"]
