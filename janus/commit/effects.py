"""Typed effects: changes of Python state (and prints) a trace recorded, committed after
a successful graph run, in program order.

Converted code never changes Python state or prints while the graph runs: writes
(PySetAttr / PySetSubscr, mutating container methods) and ``print`` are recorded at
trace time as effects.  Each effect knows how it is packed into graph outputs
(:meth:`Effect.pack`: graph values become outputs, the object it changes is found
again through its source at call time), how it is committed from a run's outputs
(:meth:`Effect.commit`), and how it is described to a user.  A failed run commits
nothing.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from janus.commit.packing import Constant, Packer, Run
from janus.trace.sources import Source

if TYPE_CHECKING:
    from janus.trace.context import TraceContext
    from janus.trace.seeds import SeedReservation

Finder = Callable[[tuple, dict], Any]


class Effect:
    """One deferred change.  Before packing its values are what the trace computed;
    after :meth:`pack` they are recipes over the graph's outputs."""

    def pack(self, ctx: TraceContext, packer: Packer) -> "Effect":
        raise NotImplementedError

    def commit(self, run: Run) -> None:
        raise NotImplementedError

    def describe(self) -> str:
        raise NotImplementedError

    def map_values(self, fn: Callable[[Any], Any]) -> "Effect":
        """The same effect with ``fn`` applied to the values it carries (not to its target)."""
        raise NotImplementedError


@dataclass
class SetAttr(Effect):
    """``obj.name = value`` on an object of Python state."""

    target: Source
    name: str
    value: Any
    find: Finder | None = None

    def pack(self, ctx: TraceContext, packer: Packer) -> "SetAttr":
        return dataclasses.replace(self, value=packer.pack(self.value, f"the value written to .{self.name}"),
                                   find=ctx.getter(self.target))

    def commit(self, run: Run) -> None:
        setattr(self.find(run.a, run.k), self.name, self.value.unpack(run))

    def describe(self) -> str:
        return f"set {self.target.label}.{self.name}"

    def map_values(self, fn):
        return dataclasses.replace(self, value=fn(self.value))


@dataclass
class DelAttr(Effect):
    """``del obj.name`` on an object of Python state."""

    target: Source
    name: str
    find: Finder | None = None

    def pack(self, ctx: TraceContext, packer: Packer) -> "DelAttr":
        return dataclasses.replace(self, find=ctx.getter(self.target))

    def commit(self, run: Run) -> None:
        delattr(self.find(run.a, run.k), self.name)

    def describe(self) -> str:
        return f"delete {self.target.label}.{self.name}"

    def map_values(self, fn):
        return self


@dataclass
class SetGlobal(Effect):
    """``name = value`` on a module's globals (under a ``global`` statement)."""

    module: str  # the guard-namespace name of the module's globals dict
    name: str
    value: Any
    namespace: dict | None = None

    def pack(self, ctx: TraceContext, packer: Packer) -> "SetGlobal":
        return dataclasses.replace(self, value=packer.pack(self.value, f"the value written to global {self.name}"),
                                   namespace=ctx.guard_set.namespace[self.module])

    def commit(self, run: Run) -> None:
        self.namespace[self.name] = self.value.unpack(run)

    def describe(self) -> str:
        return f"set global {self.name}"

    def map_values(self, fn):
        return dataclasses.replace(self, value=fn(self.value))


@dataclass
class SetCell(Effect):
    """``name = value`` on a closure cell (under a ``nonlocal`` statement)."""

    target: Source  # the cell's contents (a ``Cell`` source)
    value: Any
    cell: Any = None

    def pack(self, ctx: TraceContext, packer: Packer) -> "SetCell":
        return dataclasses.replace(self, value=packer.pack(self.value, f"the value written to {self.target.label}"),
                                   cell=ctx.guard_set.namespace[self.target.cell])

    def commit(self, run: Run) -> None:
        self.cell.cell_contents = self.value.unpack(run)

    def describe(self) -> str:
        return f"set closure variable {self.target.label}"

    def map_values(self, fn):
        return dataclasses.replace(self, value=fn(self.value))


@dataclass
class SetItem(Effect):
    """``container[key] = value`` on a list or dict of Python state."""

    target: Source
    key: Any
    value: Any
    find: Finder | None = None

    def pack(self, ctx: TraceContext, packer: Packer) -> "SetItem":
        return dataclasses.replace(self, key=packer.pack(self.key, "an item key"),
                                   value=packer.pack(self.value, "the value written to an item"),
                                   find=ctx.getter(self.target))

    def commit(self, run: Run) -> None:
        self.find(run.a, run.k)[self.key.unpack(run)] = self.value.unpack(run)

    def describe(self) -> str:
        return f"set {self.target.label}[...]"

    def map_values(self, fn):
        return dataclasses.replace(self, key=fn(self.key), value=fn(self.value))


@dataclass
class CallMethod(Effect):
    """``container.method(*args)``: a mutating method of a list, dict or set of Python state."""

    target: Source
    method: str
    args: tuple
    find: Finder | None = None

    def pack(self, ctx: TraceContext, packer: Packer) -> "CallMethod":
        return dataclasses.replace(self, args=packer.pack(tuple(self.args), f"the arguments of .{self.method}"),
                                   find=ctx.getter(self.target))

    def commit(self, run: Run) -> None:
        getattr(self.find(run.a, run.k), self.method)(*self.args.unpack(run))

    def describe(self) -> str:
        return f"call {self.target.label}.{self.method}(...)"

    def map_values(self, fn):
        return dataclasses.replace(self, args=fn(self.args))


@dataclass
class Print(Effect):
    """The user's ``print``, with the values the graph computed."""

    args: Any
    sep: str | None
    end: str | None

    def pack(self, ctx: TraceContext, packer: Packer) -> "Print":
        return dataclasses.replace(self, args=packer.pack(tuple(self.args), "print arguments"))

    def commit(self, run: Run) -> None:
        print(*self.args.unpack(run), sep=self.sep, end=self.end)  # noqa: T201 - the user's own print

    def describe(self) -> str:
        return "print(...)"

    def map_values(self, fn):
        return dataclasses.replace(self, args=fn(self.args))


@dataclass
class When(Effect):
    """Effects of one side of a ``tf.cond``: committed only if the predicate had value ``side``."""

    pred: Any
    side: bool
    effects: list[Effect]

    def pack(self, ctx: TraceContext, packer: Packer) -> "When":
        return When(packer.pack(self.pred, "a branch condition"), self.side, pack_effects(ctx, packer, self.effects))

    def commit(self, run: Run) -> None:
        if bool(self.pred.unpack(run)) == self.side:
            commit(self.effects, run)

    def describe(self) -> str:
        return f"if the branch was {self.side}: ({', '.join(e.describe() for e in self.effects)})"

    def map_values(self, fn):
        return When(fn(self.pred), self.side, [e.map_values(fn) for e in self.effects])


@dataclass
class ConsumeSeeds(Effect):
    """Advance TensorFlow's op-seed generator past the random draws the run made (a count,
    or the graph's count of them), as eager's draws would have (``janus.trace.seeds``)."""

    count: Any  # a number of draws (or the graph's count), a recipe once packed
    reservation: SeedReservation

    def pack(self, ctx: TraceContext, packer: Packer) -> "ConsumeSeeds":
        return dataclasses.replace(self, count=packer.pack(self.count, "the number of random draws"))

    def commit(self, run: Run) -> None:
        self.reservation.consume(int(self.count.unpack(run)))

    def describe(self) -> str:
        if isinstance(self.count, Constant):
            return f"consume {self.count.value} op seeds (the random draws, as eager would)"
        return "consume the op seeds of the random draws that ran (counted by the graph)"

    def map_values(self, fn):
        return dataclasses.replace(self, count=fn(self.count))


def pack_effects(ctx: TraceContext, packer: Packer, recorded: list[Effect] | None = None) -> list[Effect]:
    """The effects a trace recorded, packed against the graph's outputs."""
    return [e.pack(ctx, packer) for e in (ctx.log.effects if recorded is None else recorded)]


def commit(effects: list[Effect], run: Run) -> None:
    """Replay packed ``effects`` against the heap of the current call, in program order."""
    for effect in effects:
        effect.commit(run)


def describe(effects: list[Effect]) -> list[str]:
    return [e.describe() for e in effects]


__all__ = ["Effect", "SetAttr", "SetGlobal", "SetCell", "SetItem", "CallMethod", "Print", "When", "ConsumeSeeds", "pack_effects", "commit", "describe"]
