"""``janus-profile --html path``: the page of what the profiler saw, one self-contained HTML
file (inline CSS, no script, no network): per profiled function its calls and time, whether
Janus would convert it (and why not, with the reason's code when the checker gives one), its
arguments and returns, and its source with each profiled site's observations (branch
outcomes, trip counts, callees) and forecast beside its line."""
from __future__ import annotations

import html
import inspect
import linecache
from collections import Counter, defaultdict
from typing import Any

from .data import FunctionRecord, ProfileData
from .report import _fmt_counter, _loc, arg_speculation, find_checker, speculation, unsupported

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 12px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:26px 0 6px;border-bottom:1px solid #ccc}
.muted{color:#666}.small{font-size:12px}.ok{color:#2e7d32}.no{color:#c62828}.code{font-family:ui-monospace,monospace}
table.src{border-collapse:collapse;font:12.5px/1.35 ui-monospace,Menlo,Consolas,monospace;width:100%}
table.src td{padding:0 8px;vertical-align:top}td.n{color:#888;text-align:right;width:3em}td.c{white-space:pre}
tr.site td.c{background:#eef3fb}td.s{font-family:system-ui,sans-serif;color:#333;font-size:12px}
"""


def esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def render(data: ProfileData, *, top: int = 10, root: str | None = None, title: str | None = None,
           verdicts: bool = True) -> str:
    """The page's text (the hottest ``top`` functions; 0: all)."""
    funcs = list(data.functions_by_time())
    shown = funcs[:top] if top > 0 else funcs
    checker = find_checker() if verdicts else None
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>janus-profile</title>",
             f"<style>{CSS}</style></head><body><h1>{esc(title or 'janus-profile report')}</h1>",
             f"<p class='muted'>{len(funcs)} functions profiled; the hottest {len(shown)} by total time.</p>"]
    parts += [_function(data, f, root, checker) for f in shown]
    if not funcs:
        parts.append("<p>No profiled function ran.</p>")
    parts.append("</body></html>\n")
    return "".join(parts)


def _function(data: ProfileData, f: FunctionRecord, root: str | None, checker: Any) -> str:
    per = 1000 * f.total_time / f.calls if f.calls else 0.0
    out = [f"<h2>{esc(f.name)} <span class='muted small'>{esc(_loc(f, root))}</span></h2>",
           f"<p>{f.calls} calls, {1000 * f.total_time:.1f} ms ({per:.2f} ms a call)"
           + (f", raised {esc(_fmt_counter(f.raised))}" if f.raised else "") + ". " + _verdict(f, checker) + "</p>"]
    if f.args:
        names = list(dict.fromkeys(n for a in f.args for n in a))
        seen = {n: [a[n] for a in f.args if n in a] for n in names}
        items = "".join(f"<li><b>{esc(n)}</b>: {esc(_fmt_counter(Counter(infos), limit=3))} → "
                        f"{esc(arg_speculation(infos))}</li>" for n, infos in seen.items())
        out.append(f"<ul class='small'>{items}</ul>")
    if f.returns:
        out.append(f"<p class='small'>returns: {esc(_fmt_counter(f.returns, limit=3))}</p>")
    out.append(_source(data, f))
    return "".join(out)


def _verdict(f: FunctionRecord, checker: Any) -> str:
    if checker is None:
        return ""
    kind, reason = unsupported(f, checker=checker)
    if kind == "ok":
        return "<span class='ok'>Janus would convert it.</span>"
    if kind == "no":
        code = getattr(reason, "code", None)
        tag = f" <span class='code'>[{esc(getattr(code, 'value', code))}]</span>" if code is not None else ""
        return f"<span class='no'>Janus would not convert it: {esc(reason)}</span>{tag}"
    return f"<span class='muted'>verdict: {esc(kind)} {esc(reason or '')}</span>"


def _source(data: ProfileData, f: FunctionRecord) -> str:
    """The function's lines, each profiled site's observation and forecast beside its line."""
    notes: dict[int, list[str]] = defaultdict(list)
    for key in f.sites:
        rec = data.sites.get(key)
        if rec is None:
            continue
        observed = (f"trips {_fmt_counter(rec.trips, limit=4)}" if rec.trips else
                    f"True {rec.branches.get(True, 0)} / False {rec.branches.get(False, 0)}" if rec.branches else
                    f"calls {_fmt_counter(rec.callees, limit=2)}")
        notes[rec.site.lineno].append(f"{rec.site.kind}: {observed} ⇒ {speculation(rec) or 'nothing to assume'}")
    lines = _lines(f)
    rows = "".join(f"<tr class='{'site' if n in notes else ''}'><td class='n'>{n}</td><td class='c'>{esc(text)}</td>"
                   f"<td class='s'>{'<br>'.join(esc(t) for t in notes.get(n, []))}</td></tr>" for n, text in lines)
    return f"<table class='src'>{rows}</table>" if rows else ""


def _lines(f: FunctionRecord) -> list[tuple[int, str]]:
    code = f.code
    if code is not None:
        try:
            source, first = inspect.getsourcelines(code)
            return [(first + i, t.rstrip("\n")) for i, t in enumerate(source)]
        except (OSError, TypeError):
            pass
    line = linecache.getline(f.filename, f.firstlineno)
    return [(f.firstlineno, line.rstrip("\n"))] if line else []
