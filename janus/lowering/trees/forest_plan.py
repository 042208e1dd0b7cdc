"""Recursive structures as data: the node cases a recursive function was traced for, and
the flattening of each call's structures into the tensors one graph takes.

A function that recurses over Python objects (``encode(node)`` calling
``encode(node.left)``) is traced once per *case* of node, not once per tree: a case is
what the function's Python code decided about a node (``node.left is None``, the type of
``node.word``) -- its *tests* -- with the nodes it recursed on (its *children*) and the
Python numbers it computed with (its *columns*).  At every call, :meth:`ForestPlan.fits`
walks the call's structures in Python: each node must pass the tests of a case; the
walk gives each node an index, ordered by height (leaves first) so that the graph can
compute one height of every tree at once, and gathers the children's indices and the
columns into arrays (:class:`Flat`) the graph is fed.  A node whose whole subtree (cases,
columns, children) equals another's is given the same index: the graph computes it once
(common-subtree reuse).  Paths in tests are Python expressions over the node ``_n``.
"""
from __future__ import annotations

import enum
import itertools
import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import tensorflow as tf

from janus import config
from janus.errors import InternalSignal


INT32 = (-2 ** 31, 2 ** 31 - 1)


@dataclass(frozen=True)
class CaseTest:
    """A condition on the node ``_n`` that one case's trace relied on."""

    expr: str
    description: str


@dataclass
class Case:
    """One way the recursive function's Python code goes for a node."""

    index: int
    tests: list[CaseTest] = field(default_factory=list)
    children: list[str] = field(default_factory=list)  # paths of the nodes it recursed on, in call order
    columns: list[tuple[str, type]] = field(default_factory=list)  # paths of the Python numbers it computed with
    spec: Any = None  # the per-node result: a nest of tf.TensorSpec
    exemplar: Any = None  # the node it was discovered on (dropped once the graph is built)
    label: str = ""  # the exemplar's repr, for explain
    # per recursive call, per component of the child's result (tf.nest.flatten order): the mask
    # of this case's result components a gradient reaches it from (None: not yet traced)
    flows: tuple[tuple[int, ...], ...] | None = None
    # per component of the result: what a gradient reaching it reaches directly (the refs of the
    # variables' handles and outer tensors the code captured), children's blocks not included
    reaches: tuple[frozenset, ...] | None = None

    def signature(self) -> tuple:
        return tuple(self.tests), tuple(self.children), tuple(self.columns)


class NodeView:
    """A node of a recursive structure as converted code sees it while one case is traced:
    every read of it becomes a test, a child or a column of the case (see
    ``janus.lowering.trees.recursion``).  Anything else done with it (hashing, comparing, passing
    it to a library) would make the graph depend on this one node, and is refused."""

    __slots__ = ("obj", "path", "trace")

    def __init__(self, obj: Any, path: str, trace: Any):
        self.obj = obj
        self.path = path
        self.trace = trace

    @property  # isinstance(view, Node) sees the node's class (its case tests the type)
    def __class__(self):
        return self.trace.typed(self)

    def read(self, name: str) -> Any:
        return self.trace.read(self, name)

    def _refuse(self, *_: Any) -> Any:
        self.trace.refuse(f"uses the tree node {self.path} as a value (hashing, comparing, converting)")

    __eq__ = __ne__ = __hash__ = __len__ = __iter__ = __getitem__ = __contains__ = __repr__ = __str__ = _refuse

    def __bool__(self) -> bool:
        cls = self.trace.typed(self)
        if hasattr(cls, "__bool__") or hasattr(cls, "__len__"):
            self._refuse()
        return True


def is_tree_part(ctx: Any, obj: Any) -> bool:
    """Whether ``obj`` is a node of a recursion being traced, or a list read from one."""
    rec = getattr(ctx, "recursion", None)
    return isinstance(obj, NodeView) or rec is not None and id(obj) in rec.containers


class MissKind(enum.Enum):
    """What a plan that does not fit a call's structures could do about it."""

    NEW_CASE = "``node`` needs a case of its own (traced on it)"
    TOO_HIGH = "more levels would fit"
    NOTHING = "nothing: the call runs as written"


@dataclass
class Miss:
    """Why a call's structures do not fit a plan (``node``: the first node without a case)."""

    reason: str
    node: Any = None
    kind: MissKind = MissKind.NOTHING


class _Missed(InternalSignal):
    def __init__(self, miss: Miss):
        super().__init__(miss.reason)
        self.miss = miss


@dataclass
class Flat:
    """A call's structures as three arrays (the graph's inputs; :meth:`ForestPlan.unpack`).

    ``ints`` (int32): the block offsets (block ``height * cases + case`` holds the node
    indices ``offsets[b]:offsets[b + 1]``, indices sorted by height, then case), the
    roots' indices, then per case and recursive call the child's index of every node (0
    for nodes of other cases); ``longs`` (int64) and ``floats`` (float64): per case and
    column, every node's value."""

    ints: np.ndarray
    longs: np.ndarray
    floats: np.ndarray
    nodes: int  # nodes walked (a node reached twice counts twice)
    unique: int  # nodes the graph computes
    height: int  # the highest node's height
    # the structure in walk order (a child before its parents), for :meth:`ForestPlan.liveness`
    case_of: list[int] = field(default_factory=list, repr=False)
    kids: list[tuple[int, ...]] = field(default_factory=list, repr=False)
    root_ids: list[int] = field(default_factory=list, repr=False)

    def tensors(self) -> tuple:
        return tf.constant(self.ints), tf.constant(self.longs), tf.constant(self.floats)


class ForestPlan:
    """The cases of one recursive function in one graph, and the flattening of the
    structures passed to it at each call (the graph's ``fits`` guard and its inputs)."""

    def __init__(self, label: str, reuse: bool):
        self.label = label
        self.reuse = reuse
        self.cases: list[Case] = []
        self.levels = 8
        self.reached = 0  # the height the structures of the traced call reached
        self.namespace: dict[str, Any] = {}
        self.root_labels: list[str] = []
        self.roots_of: Callable[[tuple, dict], tuple] | None = None
        self.calls = self.nodes = self.unique = 0
        self._match: Callable[[Any], int] = lambda node: -1
        self._children: list[Callable] = []
        self._columns: list[Callable] = []
        self._memo = threading.local()
        self.traced: Flat | None = None  # the traced call's structures: the gradient gates decide on them
        # per backward pass traced through the graph: (per root, the mask of its result's components
        # the pass reached; what the traced call's trees bring a gradient to; per case, the mask
        # of the components its blocks pass on)
        self.passes: list[tuple[tuple[int, ...], frozenset, tuple[int, ...]]] = []
        self._pass: list[int] | None = None
        self._decided: tuple[int, ...] | None = None
        self._spreads: dict[tuple[int, int, int], int] = {}
        self._reached: dict[tuple[int, int], frozenset] = {}

    # -- building ----------------------------------------------------------------
    def const(self, obj: Any, hint: str) -> str:
        for name, value in self.namespace.items():
            if value is obj:
                return name
        name = f"_{hint}{len(self.namespace)}"
        self.namespace[name] = obj
        return name

    def add(self, case: Case) -> None:
        """Add a traced case (its tests, children and columns compiled to Python functions)."""
        def compiled(body: str) -> Callable:
            return eval(f"lambda _n: {body}", dict(self.namespace))  # noqa: S307 - generated from recorded paths

        self.cases.append(case)
        self._children.append(compiled(f"({''.join(c + ', ' for c in case.children)})"))
        self._columns.append(compiled(f"({''.join(c + ', ' for c, _ in case.columns)})"))
        lines = ["def match(_n):"]
        for c in self.cases:  # one function: a path that does not exist is not that case
            test = " and ".join(f"({t.expr})" for t in c.tests) or "True"
            lines += ["    try:", f"        if {test}:", f"            return {c.index}",
                      "    except Exception:", "        pass"]
        scope = dict(self.namespace)
        exec(compile("\n".join(lines + ["    return -1"]), "<janus forest>", "exec"), scope)  # noqa: S102
        self._match = scope.pop("match")  # not left in its own globals (as guards.compile_guard)

    def match(self, node: Any) -> int:
        """The index of the first case whose tests ``node`` passes, or -1."""
        return self._match(node)

    def spec(self) -> tuple:
        """The TensorSpecs of the flattened inputs (the graph's call-time capture)."""
        return tuple(tf.TensorSpec([None], dtype) for dtype in (tf.int32, tf.int64, tf.float64))

    def unpack(self, packed: tuple) -> tuple:
        """In the graph: (offsets, roots, children[case][call], columns[case][column]) of the
        three arrays of :class:`Flat`."""
        ints, longs, floats = packed
        k = self.levels * len(self.cases) + 1
        r = len(self.root_labels)
        offsets, roots = ints[:k], ints[k:k + r]
        n = offsets[-1]
        children, columns, at, at_long, at_float = [], [], 0, 0, 0
        for case in self.cases:
            slots = []
            for _ in case.children:
                slots.append(ints[k + r + at * n:k + r + (at + 1) * n])
                at += 1
            children.append(tuple(slots))
            values = []
            for _, kind in case.columns:
                if kind is int:
                    values.append(longs[at_long * n:(at_long + 1) * n])
                    at_long += 1
                else:
                    values.append(floats[at_float * n:(at_float + 1) * n])
                    at_float += 1
            columns.append(tuple(values))
        return offsets, roots, tuple(children), tuple(columns)

    def describe(self) -> list[str]:
        """Lines for ``janus.explain``: the roots, the cases and what the calls walked."""
        reuse = f", {self.unique} computed (common-subtree reuse)" if self.reuse else ""
        lines = [f"{self.label} over {', '.join(self.root_labels)}: batched by height, {len(self.cases)} node "
                 f"cases, below {self.levels} levels; {self.calls} calls walked {self.nodes} nodes{reuse}"]
        for case in self.cases:
            what = "; ".join(t.description for t in case.tests)
            recursed = f"; recurses on {', '.join(case.children)}" if case.children else "; a leaf"
            fed = f"; fed per node: {', '.join(p for p, _ in case.columns)}" if case.columns else ""
            lines.append(f"  case {case.index} (first seen on {case.label}): {what}{recursed}{fed}")
        return lines

    # -- gradients -----------------------------------------------------------------
    # Eager gives a variable no gradient (None) when no node that used it brings its result
    # to the target; the graph computes every case's block at every call, on zero rows if need
    # be, and a zero-row block still differentiates (to zeros).  So the blocks' outputs and the
    # roots' results go through gates (``janus.lowering.trees.recursion``): while a backward pass is
    # traced, the roots' gates say which components of which root the target reached; from
    # the traced call's trees follows which components of which case are live (some node of
    # the case brings it to a reached root: :meth:`liveness`) and what they reach (variables,
    # outer tensors: :meth:`reached`).  A block's gate passes a component's gradient if what
    # the component reaches is reached anyway (a live one always is; a dead one then adds only
    # zeros, and no None turns into a tensor).  The guard admits a call only if, pass by pass,
    # its trees reach the same and its live components all pass the gates.
    def reached_root(self, k: int, j: int) -> None:
        """A backward pass reached component ``j`` of root ``k``'s result (roots come before
        every block in a pass: they consume the final table)."""
        if self._pass is None or self._decided is not None:
            self._pass, self._decided = [0] * len(self.root_labels), None
        self._pass[k] |= 1 << j

    def block_passes(self, case: int, j: int) -> bool:
        """Whether the backward pass being traced passes component ``j`` of ``case``'s blocks."""
        if self._decided is None:
            used = tuple(self._pass or [0] * len(self.root_labels))
            reached = self.reaching(self.liveness(self.traced, used))
            self._decided = tuple(sum(1 << j for j, r in enumerate(c.reaches) if r <= reached) for c in self.cases)
            if (used, reached, self._decided) not in self.passes:
                self.passes.append((used, reached, self._decided))
        return bool(self._decided[case] >> j & 1)

    def same_gradients(self, flat: Flat) -> bool:
        """The guard's part: every traced backward pass gives ``flat``'s trees the gradients
        eager gives them (see above)."""
        for used, reached, gates in self.passes:
            live = self.liveness(flat, used)
            if any(m & ~g for m, g in zip(live, gates)) or self.reaching(live) != reached:
                return False
        return True

    def reaching(self, live: tuple[int, ...]) -> frozenset:
        """What the live components of each case reach (``Case.reaches``)."""
        out: frozenset = frozenset()
        for c, mask in enumerate(live):
            if mask:
                got = self._reached.get((c, mask))
                if got is None:
                    got = self._reached[(c, mask)] = frozenset().union(
                        *(r for j, r in enumerate(self.cases[c].reaches) if mask >> j & 1))
                out |= got
        return out

    def liveness(self, flat: Flat, used: tuple[int, ...]) -> tuple[int, ...]:
        """Per case, the mask of result components that some node of that case in ``flat``
        brings to the target: root ``k``'s components in ``used[k]``, and a child's components
        that its parent's case turns into a live component of its own (``Case.flows``)."""
        live = [0] * len(flat.case_of)
        for node, mask in zip(flat.root_ids, used):
            live[node] |= mask
        per_case = [0] * len(self.cases)
        case_of, kids, spread = flat.case_of, flat.kids, self._spread
        for i in range(len(live) - 1, -1, -1):  # parents after their children in walk order
            mask = live[i]
            if mask:
                c = case_of[i]
                per_case[c] |= mask
                for slot, child in enumerate(kids[i]):
                    live[child] |= spread(c, slot, mask)
        return tuple(per_case)

    def _spread(self, case: int, slot: int, mask: int) -> int:
        key = (case, slot, mask)
        out = self._spreads.get(key)
        if out is None:
            out = 0
            for j, reaches in enumerate(self.cases[case].flows[slot]):
                if reaches & mask:
                    out |= 1 << j
            self._spreads[key] = out
        return out

    # -- at each call ------------------------------------------------------------
    def fits(self, a: tuple, k: dict) -> bool:
        """The guard: this call's structures flatten under this plan (kept for :meth:`inputs`)."""
        flat = self.flatten(self.roots_of(a, k))
        self._memo.value = (a, flat)
        if not isinstance(flat, Flat):
            return False
        return self.same_gradients(flat)

    def inputs(self, a: tuple, k: dict) -> tuple:
        """The tensors of this call's structures (flattened by the guard just before)."""
        memo = getattr(self._memo, "value", None)
        flat = memo[1] if memo is not None and memo[0] is a else self.flatten(self.roots_of(a, k))
        self._memo.value = None
        self.calls += 1
        self.nodes += flat.nodes
        self.unique += flat.unique
        return flat.tensors()

    def flatten(self, roots: tuple, exemplars: dict[int, Any] | None = None) -> Flat | Miss:
        """Walk ``roots`` (post-order) into a :class:`Flat`, or say why not.  ``exemplars``
        (while tracing): filled with the first node found of each case."""
        done: dict[int, int] = {}  # id(node) -> its provisional index
        on_path: set[int] = set()
        case_of: list[int] = []
        level: list[int] = []
        kids: list[tuple] = []
        cols: list[tuple] = []
        shared: dict[tuple, int] = {}
        keep: list[Any] = []  # nodes stay alive while their ids are compared
        walked = 0
        match, children_of, columns_of, levels = self._match, self._children, self._columns, self.levels
        int_columns = [[j for j, (_, kind) in enumerate(c.columns) if kind is int] for c in self.cases]
        reuse = self.reuse

        def visit(node: Any, depth: int) -> int:
            nonlocal walked
            walked += 1
            key = id(node)
            index = done.get(key)
            if index is not None:
                return index
            if key in on_path:
                raise _Missed(Miss("a node is its own descendant (a cycle)"))
            if depth >= config.LIMITS.max_tree_levels:
                raise _Missed(Miss(f"deeper than {config.LIMITS.max_tree_levels}"))
            c = match(node)
            if c < 0:
                raise _Missed(Miss("a node fits none of the cases traced", node, MissKind.NEW_CASE))
            if exemplars is not None:
                exemplars.setdefault(c, node)
            on_path.add(key)
            keep.append(node)
            children = tuple([visit(child, depth + 1) for child in children_of[c](node)])
            on_path.discard(key)
            height = 1 + max([level[i] for i in children]) if children else 0
            if height >= levels:
                raise _Missed(Miss(f"higher than {levels} levels", node, MissKind.TOO_HIGH))
            values = columns_of[c](node)
            for j in int_columns[c]:
                if not INT32[0] <= values[j] <= INT32[1]:
                    raise _Missed(Miss("a number the recursion computes with does not fit int32"))
            if reuse:
                index = shared.get((c, values, children))
                if index is not None:
                    done[key] = index
                    return index
                shared[(c, values, children)] = len(case_of)
            index = done[key] = len(case_of)
            case_of.append(c)
            level.append(height)
            kids.append(children)
            cols.append(values)
            return index

        try:
            root_ids = [visit(root, 0) for root in roots]
        except _Missed as missed:
            return missed.miss
        return self._arrays(case_of, level, kids, cols, root_ids, walked)

    def _arrays(self, case_of: list, level: list, kids: list, cols: list, root_ids: list, walked: int) -> Flat:
        n_cases, n = len(self.cases), len(case_of)
        blocks = [h * n_cases + c for h, c in zip(level, case_of)]
        final = [0] * n
        for at, i in enumerate(sorted(range(n), key=blocks.__getitem__)):
            final[i] = at
        counts = [0] * (self.levels * n_cases)
        for b in blocks:
            counts[b] += 1
        ints = [0, *itertools.accumulate(counts)] + [final[i] for i in root_ids]
        children = [[[0] * n for _ in case.children] for case in self.cases]
        columns = [[[0] * n for _ in case.columns] for case in self.cases]
        for i in range(n):
            c, at = case_of[i], final[i]
            for slot, child in enumerate(kids[i]):
                children[c][slot][at] = final[child]
            for j, value in enumerate(cols[i]):
                columns[c][j][at] = value
        longs, floats = [], []
        for case, values in zip(self.cases, columns):
            for (_, kind), column in zip(case.columns, values):
                (longs if kind is int else floats).extend(column)
        ints += [index for slots in children for slot in slots for index in slot]
        return Flat(np.array(ints, np.int32), np.array(longs, np.int64), np.array(floats, np.float64), walked, n,
                    max(level, default=0), case_of, kids, root_ids)
