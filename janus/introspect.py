"""``janus.stats``, ``janus.explain``, ``janus.reset`` and ``janus.concrete_function``: what
Janus did and why.

Each accepts the function the user holds, however Janus reached it: the Janus function
itself (``@janus.function``, ``python -m janus``'s rewrite), a bound method of it, or the
plain function object Janus made a Janus function of (the ``janus.enable()`` scan and
import hook replace the name in its module or class, the running take-over redirects the
function object itself), or a bound method of that.  A function Janus never ran (or runs
plainly: ``JANUS_DISABLE``, ``janus.do_not_convert``) has zero counts and an explanation
saying so; only what is not a Python function at all (a number, a class, a builtin such as
``len``, which Janus never runs) is a ``TypeError``.
"""
from __future__ import annotations

import functools
import os
import re
import types
from typing import Any

from janus import config
from janus.commit import effects as _effects
from janus.commit.object_trees import TreeSnapshot
from janus.convert.support import marked_do_not_convert
from janus.driver.function import BoundJanusFunction, JanusFunction, registry, wrapping
from janus.reporting import events as _events, report_page as _html
from janus.reporting.codes import Code, reason as _reason, tagged
from janus.takeover import roster as _takeover
from janus.trace.guards import GuardKind
from janus.trace.speculation import Assumption

STAT_KEYS = ("calls", "graph_calls", "eager_calls", "conversions", "fallbacks", "cache_entries",
             "failed_conversions", "assertion_failures", "assumptions_failed", "graph_breaks")
SEGMENT_STAT_KEYS = ("breaks", "segments", "segment_graph_calls", "segment_eager_calls")
# seconds, from the function's ledger (janus.driver.ledger): the whole run against eager's estimate
TIME_STAT_KEYS = ("seconds", "eager_estimate_seconds", "conversion_seconds", "graph_seconds", "eager_seconds",
                  "trial_seconds", "aborted_seconds")
ALL_STAT_KEYS = STAT_KEYS + ("cache_constant_bytes", "tree_nodes", "tree_nodes_computed", "xla_graphs") + \
    SEGMENT_STAT_KEYS + TIME_STAT_KEYS

DISABLED = _reason(Code.DISABLED, "Janus is disabled (JANUS_DISABLE)")
DO_NOT_CONVERT = _reason(Code.DO_NOT_CONVERT, "marked janus.do_not_convert: Janus never converts it")
NOT_RUN = _reason(Code.NOT_RUN, "Janus has not run it (not decorated with @janus.function, not taken over by "
                                "janus.enable() or python -m janus, or not called since)")


def janus_function_of(f: Any, _depth: int = 0) -> JanusFunction | None:
    """The Janus function made of ``f`` (see the module docstring), None if there is none;
    a ``TypeError`` if ``f`` is not a function or method at all."""
    jf = _own(f)
    if jf is not None:
        return jf
    if isinstance(f, (staticmethod, classmethod, types.MethodType)):
        return janus_function_of(f.__func__, _depth + 1)
    if isinstance(f, functools.partial):
        return janus_function_of(f.func, _depth + 1)
    if isinstance(f, types.FunctionType):
        jf = wrapping(f) or _trampoline_target(f) or _takeover.janus_function_of(f)
        if jf is None and _depth < 8 and "__wrapped__" in vars(f):  # a functools.wraps decorator around it
            return janus_function_of(vars(f)["__wrapped__"], _depth + 1)
        return jf
    if _depth:  # a method, partial or wrapper around something Janus never runs
        return None
    raise TypeError(f"janus: expected a function or method, got {_a(type(f).__name__)} object")


def _own(f: Any) -> JanusFunction | None:
    try:
        jf = getattr(f, "__janus_function__", None)
    except Exception:  # noqa: BLE001 - an object whose __getattr__ raises: not Janus's
        return None
    return jf if isinstance(jf, JanusFunction) else None


def _trampoline_target(fn: types.FunctionType) -> JanusFunction | None:
    """The running take-over gives a function object a trampoline as its code, which holds
    the Janus function it calls among its constants (``janus.takeover.redirect``)."""
    for const in fn.__code__.co_consts:
        jf = _own(const)
        if jf is not None:
            return jf
    return None


def _resolve(f: Any) -> JanusFunction:
    """The Janus function of ``f`` (for ``reset``)."""
    jf = janus_function_of(f)
    if jf is None:
        raise TypeError(f"{f!r} is not a Janus function: {_why_not(f)}")
    return jf


def _why_not(f: Any) -> str:
    if config.disabled():
        return DISABLED
    if marked_do_not_convert(getattr(f, "__func__", f)):
        return DO_NOT_CONVERT
    return NOT_RUN


def _name(f: Any) -> str:
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or repr(f)


# "a" then a word starting with a vowel sound; not a name followed by a verb or a
# conjunction ("argument a is ...", "a and b")
_VOWEL_WORD = re.compile(r"(?<![\w.])([Aa]) (?!(?:is|in|and|or|as|if|equals)\b)"
                         r"(?=(?:[aeio]|u(?!int|ni|s[eu]|[^aeiou\W][aeiou])|[AEIOU](?![A-Z]))\w)")


def _articles(text: str) -> str:
    """``a int32 tensor`` -> ``an int32 tensor`` (descriptions are built as ``a {type}``)."""
    return _VOWEL_WORD.sub(lambda m: m.group(1) + "n ", text)


def _a(word: str) -> str:
    return _articles(f"a {word}")


def stats(f: Any) -> dict[str, int | float]:
    """Counters of a Janus function: calls, graph_calls, eager_calls, conversions, fallbacks, cache_entries
    (graphs held) and cache_constant_bytes (the tensors they captured as constants), tree_nodes
    and tree_nodes_computed (nodes its cached graphs' recursions over trees walked, and
    computed: fewer with common-subtree reuse), xla_graphs (cached graphs that run with XLA
    clusters), graph_breaks (calls a strict function refused to run eagerly); for a function
    split at graph breaks: breaks (its statements that run in Python for a reason), segments
    (its graph segments, those of segments split in turn included), segment_graph_calls and
    segment_eager_calls (their runs as graphs and eagerly, summed); and where the calls' time
    went, in seconds (``janus.driver.ledger``): seconds (all of it), eager_estimate_seconds
    (what eager would have taken for the same calls: calls times the median eager run),
    conversion_seconds (misses, traces, failed ones included, and new graphs' first runs),
    graph_seconds (warm graph runs), eager_seconds (eager runs, profiled or not),
    trial_seconds (calls running an XLA trial) and aborted_seconds (graph runs that aborted) ...

    ``f``: the function as the user holds it (module docstring); one Janus never ran has
    every count zero."""
    jf = janus_function_of(f)
    if jf is None:
        return dict.fromkeys(ALL_STAT_KEYS, 0)
    out = {k: jf.counts.get(k, 0) for k in STAT_KEYS}
    out["cache_entries"] = len(jf.entries)
    out["cache_constant_bytes"] = sum(e.report.constant_bytes for e in jf.entries)
    out["failed_conversions"] = jf.policy.failed_attempts
    out["assumptions_failed"] = sum(a.failed for a in jf.policy.assumptions.values())
    out["tree_nodes"] = sum(p.nodes for e in jf.entries for p in e.report.forests)
    out["tree_nodes_computed"] = sum(p.unique for e in jf.entries for p in e.report.forests)
    out["xla_graphs"] = sum(1 for e in jf.entries if e.graph.xla_ops and e.xla is not None and e.xla.chosen)
    out.update(_segment_stats(jf))
    out.update(_time_stats(jf))
    return out


def _time_stats(jf: JanusFunction) -> dict[str, float]:
    """The seconds of ``jf``'s ledger (a split function's segments have their own)."""
    ledger = jf.ledger
    return {"seconds": ledger.total, "eager_estimate_seconds": ledger.eager_estimate() or 0.0,
            "conversion_seconds": ledger.conversion_seconds, "graph_seconds": ledger.graph_seconds,
            "eager_seconds": ledger.eager_seconds, "trial_seconds": ledger.trial_seconds,
            "aborted_seconds": ledger.aborted_seconds}


def _segment_stats(jf: JanusFunction) -> dict[str, int]:
    """Breaks and segment runs of a split function, its segments' own splits included."""
    out = dict.fromkeys(SEGMENT_STAT_KEYS, 0)
    if jf.split is None:
        return out
    out["breaks"] = len(jf.split.breaks)
    for seg in jf.split.segments:
        inner = _segment_stats(seg)
        out["breaks"] += inner["breaks"]
        out["segments"] += 1 + inner["segments"]
        out["segment_graph_calls"] += seg.counts.get("graph_calls", 0) + inner["segment_graph_calls"]
        out["segment_eager_calls"] += seg.counts.get("eager_calls", 0) + inner["segment_eager_calls"]
    return out


class Explanation:
    """Readable report of a Janus function: its graphs, their guards, the generated code, and why calls ran eagerly."""

    def __init__(self, jf: JanusFunction | None, name: str | None = None, why_not: str | None = None):
        self.function = jf
        self.name = jf.__qualname__ if jf is not None else name
        # the generated code that runs: a split function's driver, else the last conversion's
        self.code: str | None = (jf.split.source if jf.split is not None else jf.source) if jf is not None else None
        self.stats = stats(jf) if jf is not None else dict.fromkeys(ALL_STAT_KEYS, 0)
        self.reasons = dict(jf.reasons) if jf is not None else {}
        self.entries = list(jf.entries) if jf is not None else []
        # why it runs eagerly for good (or why Janus does not run it at all), None otherwise
        self.reason: str | None = jf.permanent_reason if jf is not None else why_not
        self.last_graph = jf.last_entry if jf is not None else None

    @property
    def given_up(self) -> list[Assumption]:
        """The assumptions that failed and that no graph in the cache makes any more."""
        if self.function is None:
            return []
        return [a for a in self.function.policy.assumptions.values()
                if a.failed and not any(a in e.report.assumptions for e in self.entries)]

    @property
    def concrete_function_reason(self) -> str | None:
        """Why ``janus.concrete_function`` gives None (None when it gives a function)."""
        jf = self.function
        if jf is None:
            return self.reason
        if jf.last_entry is not None:
            return None
        s = self.stats
        if jf.permanent_reason:
            return f"no call ran as a graph: it runs eagerly ({jf.permanent_reason})"
        return (f"no call ran as a graph yet ({s['calls']} calls, {s['eager_calls']} eagerly; the first graph is "
                f"built after {jf.options.profile_calls} profiled calls)")

    def __str__(self) -> str:
        text, marker, code = self._text().partition("\n  generated code:\n")
        return _articles(text) + marker + code  # the generated code is shown as it is

    def _text(self) -> str:
        jf = self.function
        s = self.stats
        if jf is None:
            return f"{self.name}: no graphs, 0 calls: {tagged(self.reason)}"
        lines = [f"Janus function {jf.__qualname__}",
                 f"  calls {s['calls']}: {s['graph_calls']} as graphs, {s['eager_calls']} eagerly "
                 f"({s['fallbacks']} fallbacks); {s['conversions']} conversions, {len(self.entries)} cached graphs"]
        lines += _describe_time(jf, "  ")
        if jf.permanent_reason:
            lines.append(f"  runs eagerly: {tagged(jf.permanent_reason)}")
        if jf.split is not None:
            lines += _describe_split(jf, "  ")
        if jf.options.strict:
            lines.append("  strict: a call that cannot run as a graph raises janus.GraphBreakError")
        if jf.last_entry is not None:
            which = next((f"graph {i}" for i, e in enumerate(self.entries) if e is jf.last_entry),
                         "a graph since dropped from the cache")
            lines.append(f"  last graph call: {which} (janus.concrete_function)")
        for i, entry in enumerate(self.entries):
            lines += _describe_entry(i, entry)
        dropped = self.given_up
        if dropped:
            lines.append("  assumptions given up:")
            lines += [f"    - #{a.id} {a.description} (held {a.held}, failed {a.failed})" for a in dropped]
        if self.reasons:
            lines.append("  why calls ran eagerly:")
            lines += [f"    - {tagged(r)} (x{n})" for r, n in self.reasons.items()]
        if self.code:
            lines.append("  generated code:")
            lines += ["    " + line for line in self.code.rstrip().splitlines()]
        return "\n".join(lines)

    __repr__ = __str__


def _describe_entry(i: int, entry: Any) -> list[str]:
    """One cached graph: its hits, inputs, what it feeds, runs in Python, assumes and guards."""
    shapes = ", ".join(f"{name}: {spec.dtype.name}{spec.shape.as_list()}"
                       for name, (_, spec) in zip(entry.report.input_names, entry.report.input_specs))
    lines = [f"  graph {i}: {entry.counters.hits} hits, {entry.counters.failures} aborted runs"
             f"{' (relaxed shapes)' if entry.report.relaxed else ''}; converted in {entry.report.seconds:.2f} s",
             f"    inputs: {shapes or 'none'}"]
    if entry.report.heap_inputs:
        lines.append(f"    fed at each call: {', '.join(entry.report.heap_inputs)}")
    lines.append(f"    assertions in graph: {entry.report.assertions}")
    if entry.graph.undo is not None:
        lines.append(f"    runs undoing ({entry.report.late_failure}): {_undone(entry)} put back "
                     f"if a run fails; with another thread running, calls run eagerly")
    for c in entry.graph.islands:
        how = f"on {c.label}'s objects themselves, saved before the run and put back if it aborts" \
            if isinstance(c, TreeSnapshot) else f"on a copy of {c.label}, committed after the run"
        lines.append(f"    Python island: {', '.join(c.methods)} runs in Python inside the graph {how}; "
                     "with another thread running, calls run eagerly")
    if entry.xla is not None:
        lines.append(f"    XLA: {entry.xla.describe(entry.graph.xla_ops)}")
    for title, group in (("assumptions", [a for a in entry.report.assumptions if a.kind.speculative]),
                         ("run-time checks", [a for a in entry.report.assumptions if not a.kind.speculative])):
        if group:
            lines.append(f"    {title}:")
            lines += [f"      - #{a.id} {a.description} (held {a.held}, failed {a.failed})" for a in group]
    if entry.graph.effects:
        lines.append(f"    deferred effects: {', '.join(_effects.describe(entry.graph.effects))}")
    for plan in entry.report.forests:
        lines.append("    recursion over trees: " + "\n      ".join(plan.describe()))
    for name, why in entry.report.unbatched.items():
        lines.append(f"    recursion of {name} inlined for these structures only, not batched: {why}")
    lines.append("    guards:")
    return lines + (_guards_by_kind(entry.report.guards) or ["      (none)"])


def _describe_split(jf: JanusFunction, indent: str) -> list[str]:
    """The breaks of a split function, its segments (each as a graph would be summarized)
    and where a call's time goes."""
    split = jf.split
    filename = os.path.basename(jf.python_function.__code__.co_filename)
    lines = [f"{indent}graph breaks: {len(split.breaks)}; the function runs as Python around them and "
             f"{len(split.calls)} graph segments"]
    for line, site in sorted(split.breaks.items()):
        lines.append(f"{indent}  - break at {filename}:{line}: {tagged(site.reason)}")
    python = split.python_lines
    lines.append(f"{indent}in Python: line{'s' if len(python) > 1 else ''} {', '.join(map(str, python))}")
    if split.runs:
        total, in_segments = split.seconds / split.runs, split.seconds_in_segments() / split.runs
        settled = ", then every segment ran as written: the function as the user wrote it" if split.settled else ""
        lines.append(f"{indent}per call: {total * 1e3:.3f} ms, {in_segments * 1e3:.3f} ms in segments, "
                     f"{(total - in_segments) * 1e3:.3f} ms in Python between them ({split.runs} calls{settled})")
    if split.confirmation is not None:
        lines.append(f"{indent}{split.confirmation}")
    for call in split.calls:
        seg, s = call.segment, call.function.counts
        lines.append(f"{indent}segment {seg.index} ({filename}:{seg.lines[0]}-{seg.lines[1]}): "
                     f"{s.get('graph_calls', 0)} as graphs, {s.get('eager_calls', 0)} eagerly, "
                     f"{s.get('conversions', 0)} conversions, {len(call.function.entries)} cached graphs")
        lines.append(f"{indent}  inputs: {', '.join(seg.inputs) or 'none'}; outputs: {', '.join(seg.outputs) or 'none'}")
        if call.function.permanent_reason:
            lines.append(f"{indent}  runs eagerly: {tagged(call.function.permanent_reason)}")
        lines += _describe_time(call.function, indent + "  ")
        trial = call.describe()
        if trial is not None:
            lines.append(f"{indent}  {trial}")
        if call.function.split is not None:
            lines += _describe_split(call.function, indent + "  ")
    return lines


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _describe_time(jf: JanusFunction, indent: str) -> list[str]:
    """Where ``jf``'s time went (its ledger): converting, graph runs against eager's estimate."""
    ledger, policy = jf.ledger, jf.policy
    if not ledger.calls and not ledger.conversion_seconds:
        return []
    per_call = ledger.eager_per_call()
    estimate = (f"eager's estimated {ledger.eager_estimate():.3f} s (its eager runs, and {per_call * 1e3:.3f} ms, "
                f"the median eager run, for each other call)") if per_call is not None \
        else "no eager run timed to compare with"
    attempts = policy.conversions + policy.failed_attempts
    lines = [f"{indent}time: {ledger.total:.3f} s in {_n(ledger.calls, 'call')}, against {estimate}",
             f"{indent}  converting: {ledger.conversion_seconds:.3f} s, {_n(attempts, 'conversion')} "
             f"({policy.failed_attempts} failed)"]
    graph = ledger.graph_per_call()
    if graph is not None:
        versus = f" against eager's {per_call * 1e3:.3f} ms" if per_call is not None else ""
        lines.append(f"{indent}  graph runs: {ledger.graph_seconds:.3f} s in {_n(ledger.graph_calls, 'call')}, "
                     f"{graph * 1e3:.3f} ms a call{versus}")
    lines.append(f"{indent}  eager runs: {ledger.eager_seconds:.3f} s in {_n(ledger.eager_calls, 'call')} (profiled or not)")
    if ledger.trial_seconds or ledger.aborted_seconds:
        lines.append(f"{indent}  XLA trials {ledger.trial_seconds:.3f} s, aborted graph runs "
                     f"{ledger.aborted_seconds:.3f} s")
    return lines


def _undone(entry: Any) -> str:
    """What an undoing graph puts back: ``its 2 variables and the position of self.it``."""
    parts = [f"its {len(entry.graph.undo.variables)} variables"] if entry.graph.undo.variables else []
    if entry.report.iterators:
        parts.append(f"the position of {', '.join(entry.report.iterators)}")
    return " and ".join(parts) or "nothing"


def _guards_by_kind(guards: list) -> list[str]:
    """Guard descriptions grouped under their kind, kinds in declaration order."""
    lines = []
    for kind in GuardKind:
        group = [g for g in guards if g.kind is kind]
        if group:
            lines.append(f"      {kind.value}:")
            lines += [f"        - {g.description}" for g in group]
    return lines


def explain(f: Any) -> Explanation:
    """What Janus did with ``f`` and why (``str()`` it; ``.code`` is the generated source).
    ``f``: the function as the user holds it (module docstring); one Janus never ran, runs
    plainly under ``JANUS_DISABLE`` or never converts (``janus.do_not_convert``) is
    explained as such."""
    jf = janus_function_of(f)
    if jf is None:
        return Explanation(None, _name(f), _why_not(f))
    return Explanation(jf)


def concrete_function(f: Any) -> Any:
    """The TensorFlow ``ConcreteFunction`` of the graph that served ``f``'s last graph call,
    or None if no call ran as a graph (``janus.explain(f).concrete_function_reason`` says why).

    Its inputs are flat tensors, in the order ``janus.explain(f)`` lists them: the tensors
    among the arguments (inside tuples, lists and dicts too), then the Python numbers Janus
    feeds as scalar tensors; ``tf.Variable``s and the tensors it reads from Python state are
    captures (fed at each call by Janus).  Its outputs are a flat list: the tensors of the
    result first, in the order of the result's structure, then the values of the deferred
    effects (the writes to Python state, the printed values, the random-seed advance) that
    Janus commits after the run.  ``docs/state.md`` shows how to export it with
    ``tf.saved_model.save`` and look at it in TensorBoard."""
    jf = janus_function_of(f)
    entry = jf.last_entry if jf is not None else None
    return entry.graph.concrete if entry is not None else None


def reset(f: Any = None) -> None:
    """Clear one function's graphs, profile and counters, or every function's (a function
    Janus never ran has nothing to clear)."""
    if f is None:
        for jf in registry():
            jf.reset()
        return
    jf = janus_function_of(f)
    if jf is not None:
        jf.reset()


def report(path: str) -> str:
    """Write the report page (one self-contained HTML file) of every Janus function called so
    far to ``path``: where each line ran, the graphs, breaks with their codes, conversions,
    and, when the per-call log records (``JANUS_REPORT_HTML``/``JANUS_TRACE`` set, or
    ``janus.reporting.events.start()`` called before the run), a chart of the calls.
    Returns ``path``."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"janus.report: expected a file path, got {type(path).__name__}")
    return _html.write(os.fspath(path), _events.ACTIVE, registry())


__all__ = ["stats", "explain", "reset", "report", "concrete_function", "janus_function_of", "Explanation",
           "BoundJanusFunction"]
