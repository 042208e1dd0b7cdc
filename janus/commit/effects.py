"""Commit the deferred effects of a successful graph run, in program order.

Converted code never changes Python state or prints while the graph runs: writes
(PySetAttr / PySetSubscr, mutating container methods) and ``print`` are recorded at
trace time with packed arguments, and replayed here only after every assertion of
the run held.  A failed run therefore changes nothing.
"""
from __future__ import annotations

from janus.commit.packing import Packer, unpack
from janus.trace.context import TraceContext


def pack_effects(ctx: TraceContext, packer: Packer, recorded: list | None = None) -> list[tuple]:
    """Turn the effects a trace recorded into replayable recipes."""
    out = []
    for kind, payload in ctx.effects if recorded is None else recorded:
        if kind == "print":
            args, sep, end = payload
            out.append(("print", packer.pack(tuple(args), "print arguments"), sep, end))
        elif kind == "setattr":
            path, name, value = payload
            out.append(("setattr", ctx.getter(path), name, packer.pack(value, f"the value written to .{name}")))
        elif kind == "call":
            path, method, args = payload
            out.append(("call", ctx.getter(path), method, packer.pack(tuple(args), f"the arguments of .{method}")))
        elif kind == "when":
            pred, side, nested = payload
            out.append(("when", packer.pack(pred, "a branch condition"), side, pack_effects(ctx, packer, nested)))
    return out


def commit(effects: list[tuple], outputs: list, a: tuple, k: dict) -> None:
    """Replay ``effects`` against the heap of the current call."""
    for effect in effects:
        kind = effect[0]
        if kind == "print":
            _, args, sep, end = effect
            print(*unpack(args, outputs, a, k), sep=sep, end=end)  # noqa: T201 - the user's own print
        elif kind == "setattr":
            _, target, name, value = effect
            setattr(target(a, k), name, unpack(value, outputs, a, k))
        elif kind == "when":
            _, pred, side, nested = effect
            if bool(unpack(pred, outputs, a, k)) == side:
                commit(nested, outputs, a, k)
        else:
            _, target, method, args = effect
            getattr(target(a, k), method)(*unpack(args, outputs, a, k))


def describe(effects: list[tuple]) -> list[str]:
    text = []
    for effect in effects:
        if effect[0] == "print":
            text.append("print(...)")
        elif effect[0] == "setattr":
            text.append(f"set attribute .{effect[2]}")
        elif effect[0] == "when":
            text.append(f"if the branch was {effect[2]}: ({', '.join(describe(effect[3]))})")
        else:
            text.append(f"call .{effect[2]}(...)")
    return text


