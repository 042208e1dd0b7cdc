"""Python state written inside one side of a tensor conditional: an output of the conditional.

Both sides of a ``tf.cond`` are traced, so a write there (``self.lr = self.lr * 0.7``,
``self.hist["n"] += 1``, a ``global`` or ``nonlocal`` rebinding) may only change what
converted code sees while that side is traced.  Each write in a side records a
:class:`Store` (the place, and what was there before), undone when the side ends; the value
each side leaves at the place (its own, or the one from before) becomes one more output of
the conditional, reconciled like a variable (a number on one side and a PyScalar or tensor on
the other, ``janus.lowering.reconcile``), and the place holds that output after the ``If`` op:
a read later in the trace sees the side that ran.  The deferred effect of the write itself is
committed only if its side ran (a ``When`` effect, ``janus.lowering.branch_effects``).

A place whose two values no output can carry (a string that differs, a list, an attribute
set on one side and absent before) holds an :class:`Unjoined` marker instead: the commit is
still exact, and only reading the place again in the same trace fails the conversion.  An
item of a container cannot hold a marker (the container is iterated and measured as a
whole), so there it fails the conversion at once.

In the body of a tensor-dependent loop (a :class:`LoopSink`) a place holding a Python number
is carried through the ``tf.while_loop`` instead (``janus.lowering.while_loops``): the loop is
traced again with the places its body writes as loop variables, and each is committed once,
after the run, with its final value.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from janus.lowering.branch_effects import BranchSink
from janus.commit.effects import Effect, SetAttr, SetCell, SetGlobal, SetItem, When
from janus.errors import ConversionError
from janus.reporting.codes import Code
from janus.lowering.reconcile import joinable
from janus.trace.scalars import PY_SCALARS, PyOrTensor
from janus.trace.values import SCALARS, PyScalar, is_symbolic

MISSING = object()


class Unjoined:
    """What a place holds after a conditional whose sides left values there that no output
    can carry: reading it fails the conversion, with the reason."""

    __slots__ = ("reason", "code")

    def __init__(self, reason: str, code: Code = Code.STATE_IN_TENSOR_FLOW) -> None:
        self.reason, self.code = reason, code


def readable(value: Any) -> Any:
    """``value`` read from a place, unless it is an :class:`Unjoined` marker."""
    if isinstance(value, Unjoined):
        raise ConversionError(value.reason, code=value.code)
    return value


class Place:
    """Somewhere converted code writes and reads again within one trace."""

    key: Any  # the same for every way of reaching the place
    label: str  # as the user's code names it
    effect: Callable[[Any], Effect]  # the deferred effect of writing a value there
    holds_marker = True  # whether an Unjoined marker may be left there

    def raw(self) -> Any:
        """What is stored there now (MISSING: nothing)."""
        raise NotImplementedError

    def put(self, raw: Any) -> None:
        """Store ``raw`` there (MISSING: remove what is there)."""
        raise NotImplementedError

    def before(self) -> Any:
        """The value converted code reads there now; an Unjoined marker if it reads none."""
        raise NotImplementedError


@dataclass(eq=False)
class Overlaid(Place):
    """An attribute, global or closure variable of Python state: the heap model's overlay
    shows the trace's writes (``janus.lowering.state``)."""

    heap: Any
    key: tuple
    label: str
    read: Callable[[], Any]  # the value from Python state, with its guard or graph input
    effect: Callable[[Any], Effect]

    def raw(self) -> Any:
        return self.heap.overlay.get(self.key, MISSING)

    def put(self, raw: Any) -> None:
        if raw is MISSING:
            self.heap.overlay.pop(self.key, None)
        else:
            self.heap.overlay[self.key] = raw

    def before(self) -> Any:
        raw = self.raw()
        if raw is not MISSING:
            return raw
        try:
            return self.read()
        except (AttributeError, NameError, ConversionError) as e:
            return Unjoined(f"{self.label} is read after a tensor-dependent branch that sets it on one side "
                            f"only, and it had no value before ({type(e).__name__}: {e})")


@dataclass(eq=False)
class Item(Place):
    """An item of a list or dict of Python state, in the trace's own copy of the container."""

    container: Any
    index: Any
    key: tuple
    label: str
    effect: Callable[[Any], Effect]
    holds_marker = False

    def raw(self) -> Any:
        return self.container[self.index]

    def put(self, raw: Any) -> None:
        self.container[self.index] = raw

    def before(self) -> Any:
        return self.container[self.index]


def item(heap: Any, container: list | dict, index: Any, label: str, effect: Callable[[Any], Effect]) -> Item:
    """The place ``container[index]`` (an existing item) written inside a branch side or loop
    body; the heap model keeps the container's copy the one every side and later code reads."""
    if type(index) not in SCALARS:
        raise ConversionError(f"write of {label}[...] with an index the graph computes, inside tensor-dependent "
                              f"control flow", code=Code.STATE_IN_TENSOR_FLOW)
    if isinstance(container, dict) and index not in container:
        raise ConversionError(f"{label}[{index!r}] is added inside tensor-dependent control flow (its keys would "
                              f"depend on the run)", code=Code.STATE_IN_TENSOR_FLOW)
    container[index]  # noqa: B018 - a list index out of range raises as eager's assignment would
    heap.pin(container)
    slot = index % len(container) if not isinstance(container, dict) else index
    return Item(container, slot, ("item", id(container), slot), f"{label}[{index!r}]", effect)


@dataclass
class Store:
    """A place a side wrote: what was stored there and what converted code read there
    before the side wrote it."""

    place: Place
    raw_before: Any
    before: Any


def side_stores(ctx: Any, what: str) -> dict | None:
    """The stores of the side of a tensor conditional or the loop body being traced (None
    outside any tensor-dependent body); inside a graph a library builds around the user's
    function a write is refused, as it could not be committed."""
    log = ctx.log
    if not log.dynamic_depth:
        return None
    sink = log.sinks[-1] if log.sinks else None
    if not isinstance(sink, BranchSink):
        raise ConversionError(f"{what} inside a graph a library builds", code=Code.LIBRARY_EFFECT)
    if isinstance(sink, LoopSink) and sink.testing:
        raise ConversionError(f"{what} in the condition of a tensor-dependent loop", code=Code.STATE_IN_TENSOR_FLOW)
    return sink.stores


def write(ctx: Any, place: Place, value: Any, what: str) -> None:
    """Store ``value`` at ``place`` as converted code sees it; inside a side of a tensor
    conditional, what was there is remembered, to be undone when the side ends."""
    stores = side_stores(ctx, what)
    if stores is not None and place.key not in stores:
        stores[place.key] = Store(place, place.raw(), place.before())
    place.put(value)


class LoopSink(BranchSink):
    """What the body of a tensor-dependent loop records: the places of Python state it writes
    (those in ``carried`` are loop variables of this trace of the loop), and no effect: a
    write's effect is replaced by one commit of the place's final value after the loop, and
    any other effect (a print, an append) is refused, its count being known only at run time."""

    def __init__(self, carried: Sequence[Place] = ()) -> None:
        super().__init__()
        self.carried = {place.key for place in carried}
        self.testing = False  # while the loop's condition is traced

    def append(self, effect: Effect) -> None:
        if not _is_write(effect):
            raise ConversionError(f"{effect.describe()} inside a tensor-dependent loop", code=Code.STATE_IN_TENSOR_FLOW)

    def hold(self, place: Place, value: Any) -> None:
        """``place`` holds ``value`` (a loop variable) while the body or condition is traced."""
        self.stores.setdefault(place.key, Store(place, place.raw(), MISSING))
        place.put(value)

    def new_places(self) -> list[Place]:
        """Places the body wrote that this trace of the loop does not carry."""
        return [store.place for key, store in self.stores.items() if key not in self.carried]


class Carry(ConversionError):
    """The body of a tensor-dependent loop writes places of Python state the loop does not
    carry yet: it is traced again carrying them."""

    code = Code.STATE_IN_TENSOR_FLOW

    def __init__(self, places: list[Place]) -> None:
        super().__init__(f"the loop body writes {', '.join(p.label for p in places)}")
        self.places = places


def loop_initial(place: Place, what: str) -> Any:
    """The value ``place`` holds before a tensor-dependent loop whose body writes it, as the
    loop variable's initial value: only a Python number (or one the graph computes) is carried."""
    value = place.before()
    if isinstance(value, Unjoined):
        raise ConversionError(f"{what}: {place.label} is set inside a tensor-dependent loop and has no value "
                              f"before it", code=Code.STATE_IN_TENSOR_FLOW)
    if type(value) in PY_SCALARS:
        return PyScalar.of(value)
    if isinstance(value, PyScalar):
        return value
    kind = "tensor" if is_symbolic(value) or isinstance(value, PyOrTensor) else type(value).__name__
    raise ConversionError(f"{what}: {place.label} (a {kind}) is set inside a tensor-dependent loop; only a "
                          f"Python number there is carried through the loop", code=Code.STATE_IN_TENSOR_FLOW)


def _is_write(effect: Effect) -> bool:
    if isinstance(effect, When):
        return all(_is_write(e) for e in effect.effects)
    return isinstance(effect, (SetAttr, SetItem, SetGlobal, SetCell))


def close(sink: BranchSink) -> None:
    """At the end of a traced side: the values it leaves at the places it wrote."""
    sink.final = {key: store.place.raw() for key, store in sink.stores.items()}


def undo(sink: BranchSink) -> None:
    """After a side was traced: every place it wrote holds what it held before the side."""
    for store in reversed(list(sink.stores.values())):
        store.place.put(store.raw_before)


@dataclass
class Joined:
    """The places the sides of one conditional wrote: those that become outputs of the
    conditional (with each side's values, in order), and those that cannot, with why."""

    places: list[Place] = field(default_factory=list)
    values: dict[bool, tuple] = field(default_factory=dict)
    unjoined: list[tuple[Place, str]] = field(default_factory=list)

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(p.label for p in self.places)

    def settle(self, ctx: Any, outputs: tuple) -> None:
        """After the ``If`` op: each place holds its output (``outputs``, in order) or a marker."""
        for place, value in zip(self.places, outputs):
            write(ctx, place, value, f"write of {place.label}")
        for place, reason in self.unjoined:
            if not place.holds_marker:
                raise ConversionError(reason, code=Code.STATE_IN_TENSOR_FLOW)
            write(ctx, place, Unjoined(reason), f"write of {place.label}")


def pair(sinks: dict[bool, BranchSink]) -> Joined:
    """The places written by the sides in ``sinks`` (both, or the one that did not raise),
    each side's value at each, and which of them one output can carry."""
    stores: dict[Any, Store] = {}
    for sink in sinks.values():
        for key, store in sink.stores.items():
            stores.setdefault(key, store)
    joined = Joined(values={side: () for side in sinks})
    for key, store in stores.items():
        values = {side: sink.final.get(key, store.before) for side, sink in sinks.items()}
        first, *rest = values.values()
        second = rest[0] if rest else first
        if joinable(first, second):
            joined.places.append(store.place)
            for side, value in values.items():
                joined.values[side] += (value,)
        else:
            joined.unjoined.append((store.place, _why(store.place, first, second)))
    return joined


def _why(place: Place, a: Any, b: Any) -> str:
    for value in (a, b):
        if isinstance(value, Unjoined):
            return value.reason
    kinds = " or ".join(dict.fromkeys(type(v).__name__ for v in (a, b)))
    done = "is read after a tensor-dependent branch whose sides set it" if place.holds_marker \
        else "is set inside a tensor-dependent branch"
    return f"{place.label} {done} to values one output of the branch cannot carry ({kinds})"
