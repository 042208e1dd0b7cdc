"""``janus.stats``, ``janus.explain`` and ``janus.reset``: what Janus did and why."""
from __future__ import annotations

from typing import Any

from janus.commit import effects as _effects
from janus.driver.function import BoundJanusFunction, JanusFunction, registry
from janus.trace.guards import GuardKind

STAT_KEYS = ("calls", "graph_calls", "eager_calls", "conversions", "fallbacks", "cache_entries",
             "failed_conversions", "assertion_failures", "assumptions_failed")


def _resolve(f: Any) -> JanusFunction:
    jf = getattr(f, "__janus_function__", None)
    if isinstance(jf, JanusFunction):
        return jf
    raise TypeError(f"{f!r} is not a Janus function (decorate it with @janus.function)")


def stats(f: Any) -> dict[str, int]:
    """Counters of a Janus function: calls, graph_calls, eager_calls, conversions, fallbacks, cache_entries
    (graphs held) and cache_constant_bytes (the tensors they captured as constants), tree_nodes
    and tree_nodes_computed (nodes its cached graphs' recursions over trees walked, and
    computed: fewer with common-subtree reuse), xla_graphs (cached graphs that run with XLA
    clusters), ..."""
    jf = _resolve(f)
    out = {k: jf.counts.get(k, 0) for k in STAT_KEYS}
    out["cache_entries"] = len(jf.entries)
    out["cache_constant_bytes"] = sum(e.constant_bytes for e in jf.entries)
    out["failed_conversions"] = jf.policy.failed_attempts
    out["assumptions_failed"] = sum(a.failed for a in jf.policy.assumptions.values())
    out["tree_nodes"] = sum(p.nodes for e in jf.entries for p in e.forests)
    out["tree_nodes_computed"] = sum(p.unique for e in jf.entries for p in e.forests)
    out["xla_graphs"] = sum(1 for e in jf.entries if e.xla_ops and e.xla is not None and e.xla.chosen)
    return out


class Explanation:
    """Readable report of a Janus function: its graphs, their guards, the generated code, and why calls ran eagerly."""

    def __init__(self, jf: JanusFunction):
        self.function = jf
        self.code: str | None = jf.source
        self.stats = stats(jf)
        self.reasons = dict(jf.reasons)
        self.entries = list(jf.entries)

    def __str__(self) -> str:
        jf = self.function
        s = self.stats
        lines = [f"Janus function {jf.__qualname__}",
                 f"  calls {s['calls']}: {s['graph_calls']} as graphs, {s['eager_calls']} eagerly "
                 f"({s['fallbacks']} fallbacks); {s['conversions']} conversions, {len(self.entries)} cached graphs"]
        if jf.permanent_reason:
            lines.append(f"  runs eagerly: {jf.permanent_reason}")
        for i, entry in enumerate(self.entries):
            shapes = ", ".join(f"{name}: {spec.dtype.name}{spec.shape.as_list()}"
                               for name, (_, spec) in zip(entry.input_names, entry.input_specs))
            lines.append(f"  graph {i}: {entry.hits} hits, {entry.failures} aborted runs"
                         f"{' (relaxed shapes)' if entry.relaxed else ''}")
            lines.append(f"    inputs: {shapes or 'none'}")
            if entry.heap_inputs:
                lines.append(f"    fed at each call: {', '.join(entry.heap_inputs)}")
            lines.append(f"    assertions in graph: {entry.assertions}")
            if entry.undo is not None:
                lines.append(f"    runs undoing ({entry.late_failure}): its {len(entry.undo)} variables are put back "
                             f"if a run fails; with another thread running, calls run eagerly")
            if entry.xla is not None:
                lines.append(f"    XLA: {entry.xla.describe(entry.xla_ops)}")
            for title, group in (("assumptions", [a for a in entry.assumptions if a.speculative]),
                                 ("run-time checks", [a for a in entry.assumptions if not a.speculative])):
                if group:
                    lines.append(f"    {title}:")
                    lines += [f"      - #{a.id} {a.description} (held {a.held}, failed {a.failed})" for a in group]
            if entry.effects:
                lines.append(f"    deferred effects: {', '.join(_effects.describe(entry.effects))}")
            for plan in entry.forests:
                lines.append("    recursion over trees: " + "\n      ".join(plan.describe()))
            for name, why in entry.unbatched.items():
                lines.append(f"    recursion of {name} inlined for these structures only, not batched: {why}")
            lines.append("    guards:")
            lines += _guards_by_kind(entry.guards) or ["      (none)"]
        dropped = [a for a in jf.policy.assumptions.values() if a.failed and not any(a in e.assumptions for e in self.entries)]
        if dropped:
            lines.append("  assumptions given up:")
            lines += [f"    - #{a.id} {a.description} (held {a.held}, failed {a.failed})" for a in dropped]
        if self.reasons:
            lines.append("  why calls ran eagerly:")
            lines += [f"    - {r} (x{n})" for r, n in self.reasons.items()]
        if self.code:
            lines.append("  generated code:")
            lines += ["    " + line for line in self.code.rstrip().splitlines()]
        return "\n".join(lines)

    __repr__ = __str__


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
    return Explanation(_resolve(f))


def reset(f: Any = None) -> None:
    """Clear one function's graphs, profile and counters, or every function's."""
    if f is None:
        for jf in registry():
            jf.reset()
        return
    _resolve(f).reset()


__all__ = ["stats", "explain", "reset", "Explanation", "BoundJanusFunction"]
