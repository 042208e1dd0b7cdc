"""The human-readable report of ``janus-profile``: what ran, and what Janus would speculate.

The speculation wording lives here (not in the converter) because it is a forecast
from the profile alone: "this branch only ever went one way, so Janus would keep
that side and assert the test".  The conversion verdict comes from a *checker* the
profiler is given: a callable ``fn -> reason or None``.  By default it is looked up as
an entry point of the group ``janus_profiler.checkers`` (Janus registers its converter's
static check there), so the profiler imports nothing from Janus and works without it.
"""
from __future__ import annotations

import importlib.metadata
import linecache
import os
import sys
import types
from collections import Counter
from typing import Any, Callable, Iterable

from .data import FunctionRecord, ProfileData, SiteRecord
from .heap import functions_with
from .source import Site
from .values import TypeInfo

__all__ = ["render", "verdict", "unsupported", "speculation", "find_function"]

#: Longest loop Janus would unroll in this forecast.
MAX_UNROLL = 100
_BRANCH_KINDS = ("If", "IfExp", "Assert")
_TF_PREFIXES = ("tensorflow.", "keras.", "tf.", "tf_keras.")


# --- speculation wording -------------------------------------------------------------------
def _short(text: str, width: int = 90) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _fmt_counter(c: Counter, key: Callable[[Any], str] = str, limit: int = 6) -> str:
    items = sorted(c.items(), key=lambda kv: -kv[1])
    s = ", ".join(f"{_short(key(k))}: {n}" for k, n in items[:limit])
    return s + (f", ... ({len(items) - limit} more)" if len(items) > limit else "")


def branch_speculation(rec: SiteRecord) -> str:
    b = rec.branches
    kind = rec.site.kind
    if kind == "BoolOp":
        if len(b) == 1:
            return ("prune: always short-circuits, later operands dropped (assert)" if True in b
                    else "prune: never short-circuits, all operands evaluated (assert)")
        return "keep dynamic short-circuit"
    if len(b) == 1:
        side = "true" if True in b else "false"
        if kind == "Assert":
            return "assertion always held: keep as a graph assertion"
        return f"prune: always {side.capitalize()}, keep the {side} side only (assert the test)"
    return "keep dynamic control flow (tf.cond if the test is a tensor)"


def loop_speculation(rec: SiteRecord) -> str:
    t = rec.trips
    total = sum(t.values())
    brk = rec.breaks
    if len(t) == 1:
        (n,) = t
        if brk not in (0, total):
            return f"keep dynamic loop (break fired in {brk} of {total} runs)"
        via = " ending in break" if brk else ""
        if n > MAX_UNROLL:
            return f"keep loop: always {n} iterations{via}, too long to unroll (assert the count)"
        return f"unroll {n} iteration{'s' if n != 1 else ''}{via} (assert the trip count)"
    return "keep dynamic loop (tf.while_loop): trip count varies"


def call_speculation(rec: SiteRecord, profiled: set[str] | dict[str, str | None]) -> str:
    """``profiled``: names of profiled functions, or a map name -> reason it won't convert (or None)."""
    c = rec.callees
    if rec.recursive:
        return "keep call: recursive (not inlined)"
    if len(c) > 1:
        return f"keep dynamic call: {len(c)} different callees"
    (key,) = c
    target = key
    if key.endswith(".__call__") and key[: -len("__call__")] + "call" in profiled:
        target = key[: -len("__call__")] + "call"  # a Keras layer: __call__ runs the user's call()
    if target in profiled:
        why = profiled.get(target) if isinstance(profiled, dict) else None
        if why:
            return f"keep call: callee {target} runs eagerly ({why})"
        return f"inline callee {target} (guard on callee identity)"
    if key.startswith(_TF_PREFIXES) or ".tensorflow." in key:
        return "TensorFlow/Keras call: traced into the graph"
    return f"call {key}: fixed callee (guard on identity)"


def speculation(rec: SiteRecord, profiled: Iterable[str] | dict[str, str | None] = ()) -> str | None:
    """What Janus would assume at this site, in words (None if nothing was recorded).

    ``profiled``: the profiled functions' names, or a map from name to the reason the
    function would not convert (None if it would), so callees that cannot convert are
    not forecast as inlined.
    """
    if rec.trips:
        return loop_speculation(rec)
    if rec.branches:
        return branch_speculation(rec)
    if rec.callees:
        return call_speculation(rec, profiled if isinstance(profiled, dict) else set(profiled))
    return None


def is_library_callee(key: str) -> bool:
    """Builtins and standard-library callees: not interesting for a Janus forecast."""
    head = key.split(".", 1)[0]
    return "." not in key or head in ("builtins",) or head in sys.stdlib_module_names \
        or head in ("str", "list", "dict", "tuple", "set", "int", "float", "bytes", "object", "type")


def _relaxed(shapes: list[tuple]) -> tuple | None:
    if len({len(s) for s in shapes}) != 1:
        return None
    return tuple(dims[0] if len(set(dims)) == 1 else None for dims in zip(*shapes))


def _shape_str(s: tuple | None) -> str:
    if s is None:
        return "<unknown rank>"
    return "(" + ", ".join("None" if d is None else str(d) for d in s) + ("," if len(s) == 1 else "") + ")"


def arg_speculation(infos: list[TypeInfo]) -> str:
    """Wording for one parameter's history of summaries."""
    distinct = list(dict.fromkeys(infos))
    if len(distinct) == 1:
        t = distinct[0]
        return "specialize on value (guard)" if t.has_value and t.type not in ("function", "type", "module") \
            else "stable type and shape (guard)"
    types_ = {(t.type, t.dtype) for t in distinct}
    if len(types_) > 1:
        return f"type varies ({len(types_)} kinds): one graph per kind"
    if all(t.shape is not None and t.dtype is not None for t in distinct):
        r = _relaxed([t.shape for t in distinct])
        if r is None:
            return "rank varies: keep unknown shape"
        shapes = " + ".join(_shape_str(s) for s in list(dict.fromkeys(t.shape for t in distinct))[:3])
        return f"relax shape {shapes} -> {_shape_str(r)}"
    if all(t.has_value for t in distinct):
        return "value changes every few calls: feed as a tensor, not a constant"
    return "varies: guard per variant"


# --- verdicts -----------------------------------------------------------------------------------
def find_function(code: types.CodeType | None) -> types.FunctionType | None:
    """A live function object whose code is ``code`` (a heap walk: :mod:`janus_profiler.heap`)."""
    if code is None:
        return None
    found = functions_with(code)
    return found[0] if found else None


CHECKERS = "janus_profiler.checkers"


def find_checker() -> Callable | None:
    """The conversion checker registered under the ``janus_profiler.checkers`` entry points."""
    for entry in importlib.metadata.entry_points(group=CHECKERS):
        try:
            return entry.load()
        except Exception:  # noqa: BLE001 - a broken plugin must not break the report
            continue
    return None


def unsupported(frec: FunctionRecord, fn: Any = None, checker: Callable | None = None) -> tuple[str, str | None]:
    """(kind, reason): kind is "ok", "no" (reason says why), "part" or "unknown" (reason says why)."""
    if frec.qualname.split(".")[-1].startswith("<") and frec.qualname.split(".")[-1] != "<lambda>":
        return "part", None
    support = checker or find_checker()
    if support is None:
        return "unknown", "no conversion checker installed"
    fn = fn if fn is not None else find_function(frec.code)
    if fn is None:
        return "unknown", "function object not found"
    try:
        reason = support(fn)
    except Exception as e:  # noqa: BLE001 - the report must not crash on a converter bug
        return "unknown", f"{type(e).__name__}: {e}"
    return ("ok", None) if reason is None else ("no", reason)


def verdict(frec: FunctionRecord, fn: Any = None, checker: Callable | None = None) -> str:
    """"convertible", "not convertible: <reason>" or "unknown (...)" for one function.

    The reason comes from ``checker`` (default: the registered one, see :func:`find_checker`).
    """
    kind, reason = unsupported(frec, fn, checker)
    return {"ok": "convertible", "no": f"not convertible: {reason}",
            "part": "part of its enclosing function"}.get(kind, f"unknown ({reason})")


# --- rendering ------------------------------------------------------------------------------------
def _snippet(site: Site, width: int = 44) -> str:
    """The source text of the site's node (its first line for statements)."""
    line = linecache.getline(site.filename, site.lineno)
    if not line:
        return ""
    if site.kind in ("Attribute", "Subscript", "Name", "Call", "BoolOp", "IfExp") \
            and site.end_lineno == site.lineno:
        raw = line.encode("utf-8")[site.col_offset:site.end_col_offset].decode("utf-8", "replace")
        text = raw.strip()
    else:
        text = line.strip()
    return (text[: width - 3] + "...") if len(text) > width else text


def _loc(frec: FunctionRecord, root: str | None) -> str:
    fn = frec.filename
    if root and fn.startswith(root + os.sep):
        fn = os.path.relpath(fn, root)
    else:
        fn = os.path.basename(fn)
    return f"{fn}:{frec.firstlineno}"


def render(data: ProfileData, *, top: int = 10, root: str | None = None, verdicts: bool = True,
           title: str | None = None) -> str:
    """The text report: hottest functions, then per function its sites and forecasts."""
    funcs = list(data.functions_by_time())
    checks = _verdicts(data) if verdicts else None
    profiled_names: set[str] | dict[str, str | None] = {f.name for f in data.functions.values()} if checks is None \
        else {n: (r if k == "no" else None) for n, (k, r) in checks.items()}
    out: list[str] = []
    w = out.append
    w(title or "janus-profile report")
    w("=" * len(out[0]))
    if not funcs:
        w("no profiled function ran.")
        return "\n".join(out) + "\n"
    shown = funcs[:top] if top > 0 else funcs
    w(f"{len(funcs)} functions profiled; hottest {len(shown)} by total time (inclusive):")
    w("")
    w(f"  {'calls':>7}  {'total ms':>10}  {'ms/call':>8}  function")
    for f in shown:
        per = 1000 * f.total_time / f.calls if f.calls else 0.0
        w(f"  {f.calls:>7}  {1000 * f.total_time:>10.1f}  {per:>8.2f}  {f.name}  ({_loc(f, root)})")
    for f in shown:
        w("")
        _render_function(data, f, w, root, checks[f.name] if checks is not None else None, profiled_names)
    if len(funcs) > len(shown):
        w("")
        w(f"({len(funcs) - len(shown)} more functions not shown; use --top 0 for all)")
    return "\n".join(out) + "\n"


def _verdicts(data: ProfileData) -> dict[str, tuple[str, str | None]]:
    """Whether each profiled function converts, by the installed checker (Janus's)."""
    checker = find_checker()
    return {f.name: unsupported(f, checker=checker) for f in data.functions.values()}


_VERDICT_TEXT = {"ok": "convertible", "part": "part of its enclosing function"}


def _render_function(data: ProfileData, f: FunctionRecord, w: Callable[[str], None], root: str | None,
                     verdict: tuple[str, str | None] | None, profiled: set[str] | dict[str, str | None]) -> None:
    """One function's section: its calls, verdict, arguments, returns, sites and heap reads."""
    w(f"-- {f.name}  ({_loc(f, root)})")
    w(f"   calls {f.calls}, total {1000 * f.total_time:.1f} ms"
      + (f", yields {f.yields}" if f.yields else "")
      + (f", raised {_fmt_counter(f.raised)}" if f.raised else "")
      + (f", caught {_fmt_counter(f.caught)}" if f.caught else ""))
    if verdict is not None:
        kind, reason = verdict
        text = f"not convertible: {reason}" if kind == "no" else _VERDICT_TEXT.get(kind, f"unknown ({reason})")
        w("   verdict: " + text)
    _render_args(f, w)
    if f.returns:
        w(f"   returns: {_fmt_counter(f.returns, limit=3)}")
    recs = [data.sites[s] for s in f.sites if s in data.sites]
    recs.sort(key=lambda r: (r.site.lineno, r.site.col_offset))
    _render_sites(recs, w, profiled)
    _render_heap(recs, w)


_SITE_SECTIONS = (("branches", lambda r: r.branches and not r.trips), ("loops", lambda r: r.trips),
                  ("calls", lambda r: r.callees))


def _render_sites(recs: list[SiteRecord], w: Callable[[str], None], profiled: set[str] | dict[str, str | None]) -> None:
    """Branches, loops and calls; call sites of only builtins or the standard library are counted, not shown."""
    for title, pick in _SITE_SECTIONS:
        rows = [r for r in recs if pick(r)]
        hidden = 0
        if title == "calls":
            keep = [r for r in rows if r.recursive or len(r.callees) > 1
                    or not all(is_library_callee(k) for k in r.callees)]
            hidden, rows = len(rows) - len(keep), keep
        if not rows and not hidden:
            continue
        w(f"   {title}:")
        for r in rows:
            w(_site_line(r, profiled))
        if hidden:
            w(f"     (+{hidden} call site{'s' if hidden != 1 else ''} of builtins/standard library)")


def _render_heap(recs: list[SiteRecord], w: Callable[[str], None]) -> None:
    """Values read from the heap (not functions, methods, types or modules), 8 at most."""
    heap = [r for r in recs if r.heap and r.site.kind in ("Attribute", "Subscript", "Name")
            and not all(t.type in ("function", "method", "type", "module") for t in r.heap)]
    if not heap:
        return
    w("   heap reads:")
    for r in heap[:8]:
        st = "stable" if len(r.heap) == 1 else f"{len(r.heap)} variants"
        w(f"     line {r.site.lineno:<4} {_snippet(r.site, 30):<30}  {_fmt_counter(r.heap, limit=2)}  [{st}]")
    if len(heap) > 8:
        w(f"     ... {len(heap) - 8} more")


def _render_args(f: FunctionRecord, w: Callable[[str], None]) -> None:
    if not f.args:
        return
    names = list(dict.fromkeys(n for a in f.args for n in a))
    w(f"   arguments ({len(f.args)} calls recorded):")
    for n in names:
        infos = [a[n] for a in f.args if n in a]
        c = Counter(infos)
        w(f"     {n}: {_fmt_counter(c, limit=3)}  -> {arg_speculation(infos)}")


def _site_line(r: SiteRecord, profiled: set[str] | dict[str, str | None]) -> str:
    s = r.site
    if r.trips:
        hist = sorted(r.trips.items())
        data = "trips " + ", ".join(f"{k}: {n}" for k, n in hist[:10]) \
            + (f", ... ({len(hist) - 10} more)" if len(hist) > 10 else "") \
            + (f"; break {r.breaks}x" if r.breaks else "")
    elif r.branches:
        if s.kind == "BoolOp":
            data = f"short-circuit {r.branches.get(True, 0)} / full {r.branches.get(False, 0)}"
        else:
            data = f"True {r.branches.get(True, 0)} / False {r.branches.get(False, 0)}"
    else:
        data = _fmt_counter(r.callees, limit=3) + (f"; recursive {r.recursive}x" if r.recursive else "")
    spec = speculation(r, profiled) or ""
    return f"     line {s.lineno:<4} {s.kind:<8} {_snippet(s, 34):<34}  {data}\n" \
           f"          => {spec}"
