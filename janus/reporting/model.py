"""What the report page and the tests read of a Janus function: its codes, its lines by
where they ran, the time of each part, its graphs, breaks and conversions, as plain records
(the function objects hold what TensorFlow made; nothing here imports it)."""
from __future__ import annotations

import inspect
import os
from dataclasses import dataclass, field
from typing import Any, Iterator

from janus.reporting.codes import Code, code_of

# where a line ran
GRAPH, PYTHON, EAGER, NONE = "graph", "python", "eager", ""


def functions_of(jf: Any) -> Iterator[Any]:
    """``jf`` and, when split at graph breaks, its segments (theirs too), depth first."""
    yield jf
    split = getattr(jf, "split", None)
    if split is not None:
        for seg in split.segments:
            yield from functions_of(seg)


def reasons_of(jf: Any) -> list[tuple[Any, str]]:
    """Every reason ``jf`` (and its segments) gave, with whose it is: its notes, why it gave up,
    its graph breaks."""
    out: list[tuple[Any, str]] = []
    for f in functions_of(jf):
        out += [(f, r) for r in f.reasons]
        if f.permanent_reason:
            out.append((f, f.permanent_reason))
        if f.split is not None:
            out += [(f, site.reason) for site in f.split.breaks.values()]
    return out


def codes_seen(jf: Any) -> set[Code]:
    """The codes of every reason ``jf`` gave (a reason without a code counts as none)."""
    return {c for c in (code_of(r) for _, r in reasons_of(jf)) if c is not None}


@dataclass
class Region:
    """Consecutive lines that ran one way, with their share of the function's time (None: unknown)."""

    where: str
    first: int
    last: int
    label: str
    share: float | None = None


@dataclass
class SourceView:
    """The function's source lines, each with where it ran (``marks[line]``) and the regions."""

    file: str
    first: int
    lines: list[str]
    marks: dict[int, str] = field(default_factory=dict)
    regions: list[Region] = field(default_factory=list)


def source_view(jf: Any) -> SourceView | None:
    """``jf``'s lines marked by where they ran: in a graph, in Python at a break, eagerly."""
    fn = jf.python_function
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        return None
    view = SourceView(os.path.basename(fn.__code__.co_filename), first, [ln.rstrip("\n") for ln in lines])
    body = _body_lines(view)
    if jf.split is not None:
        view.regions = _split_regions(jf, body)
    else:
        where = EAGER if jf.policy.gave_up or not jf.counts.get("graph_calls", 0) else GRAPH
        label = "one graph" if where == GRAPH else "eagerly"
        view.regions = [Region(where, body[0], body[-1], label, 1.0)] if body else []
    for region in view.regions:
        for line in body:
            if region.first <= line <= region.last and not view.marks.get(line):
                view.marks[line] = region.where
    return view


def _body_lines(view: SourceView) -> list[int]:
    """Lines of code after the ``def`` line(s): not blank, not comments, not decorators."""
    out, started = [], False
    for offset, text in enumerate(view.lines):
        stripped = text.strip()
        if not started:
            started = stripped.endswith(":") and stripped.startswith(("def ", "async def "))
            continue
        if stripped and not stripped.startswith("#"):
            out.append(view.first + offset)
    return out


def _split_regions(jf: Any, body: list[int], scale: float = 1.0, prefix: str = "") -> list[Region]:
    """A split function: its segments (graph, or eager when run as written; a segment split in
    turn, its own regions) and Python between; shares of the function's time (``scale``: the
    split function's own share, for a segment)."""
    split = jf.split
    total = split.seconds or 0.0
    regions = []
    for call in split.calls:
        seg, f = call.segment, call.function
        share = call.seconds / total * scale if total else None
        name = f"{prefix}segment {seg.index}"
        if f.split is not None and not call.as_written:
            inner = [ln for ln in body if seg.lines[0] <= ln <= seg.lines[1]]
            regions += _split_regions(f, inner, share or 0.0, name + ".")
            continue
        ran_graph = f.counts.get("graph_calls", 0) and not call.as_written and not f.policy.gave_up
        where = GRAPH if ran_graph else EAGER
        regions.append(Region(where, seg.lines[0], seg.lines[1], name + ("" if ran_graph else " (as written)"), share))
    covered = {ln for r in regions for ln in range(r.first, r.last + 1)}
    python_share = max(0.0, scale - sum(call.seconds / total * scale for call in split.calls)) if total else None
    starts = sorted((set(split.python_lines) | set(split.breaks)) - covered)
    for line in starts:
        end = _statement_end(line, body, covered | set(starts))
        regions.append(Region(PYTHON, line, end, "Python at breaks" + (" (all)" if len(starts) > 1 else ""),
                              python_share))
    return sorted(regions, key=lambda r: r.first)


def _statement_end(line: int, body: list[int], taken: set[int]) -> int:
    """The last line of the statement starting at ``line``: before the next line another region starts."""
    end = line
    for ln in body:
        if ln <= line:
            continue
        if ln in taken:
            break
        end = ln
    return end


@dataclass
class GraphView:
    """One cached graph of a function (or of one of its segments)."""

    owner: str
    hits: int
    aborted: int
    seconds: float
    inputs: str
    guards: dict[str, list[str]]
    assumptions: list[tuple[str, int, int]]  # description, held, failed


def graphs_of(jf: Any) -> list[GraphView]:
    """Every graph ``jf`` and its segments hold, guards grouped by kind in words."""
    out = []
    for f in functions_of(jf):
        owner = f.__qualname__ if f is jf else f"segment {f.__qualname__.rsplit('.', 1)[-1]}"
        for entry in f.entries:
            report = entry.report
            guards: dict[str, list[str]] = {}
            for g in report.guards:
                guards.setdefault(g.kind.value, []).append(g.description)
            inputs = ", ".join(f"{name}: {spec.dtype.name}{spec.shape.as_list()}"
                               for name, (_, spec) in zip(report.input_names, report.input_specs))
            out.append(GraphView(owner, entry.counters.hits, entry.counters.failures, report.seconds, inputs or "none",
                                 guards, [(a.description, a.held, a.failed) for a in report.assumptions]))
    return out


@dataclass
class BreakView:
    line: int
    reason: str
    code: Code | None


def breaks_of(jf: Any) -> list[BreakView]:
    """The graph breaks of ``jf`` and of its segments, by line."""
    out = []
    for f in functions_of(jf):
        if f.split is not None:
            out += [BreakView(line, site.reason, code_of(site.reason)) for line, site in f.split.breaks.items()]
    return sorted(out, key=lambda b: b.line)
