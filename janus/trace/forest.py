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

import threading
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import tensorflow as tf

from janus.trace.values import DTYPES

MAX_LEVELS = 64  # heights beyond this run eagerly (a graph unrolls one block per height)
MAX_CASES = 16
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

    def signature(self) -> tuple:
        return tuple(self.tests), tuple(self.children), tuple(self.columns)


class NodeView:
    """A node of a recursive structure as converted code sees it while one case is traced:
    every read of it becomes a test, a child or a column of the case (see
    ``janus.runtime.recursion``).  Anything else done with it (hashing, comparing, passing
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


@dataclass
class Miss:
    """Why a call's structures do not fit a plan (``node``: the first node without a case)."""

    reason: str
    node: Any = None
    kind: str = "other"  # "case": ``node`` needs a new case; "height": more levels would fit


@dataclass
class Flat:
    """A call's structures as arrays: node indices sorted by (height, case)."""

    offsets: np.ndarray  # block b = height * cases + case holds nodes offsets[b]:offsets[b + 1]
    children: list[list[np.ndarray]]  # [case][slot]: index of that child, per node (0 for other cases)
    columns: list[list[np.ndarray]]  # [case][column]: its value, per node
    roots: np.ndarray
    nodes: int  # nodes walked (a node reached twice counts twice)
    unique: int  # nodes the graph computes

    def tensors(self) -> tuple:
        return (tf.constant(self.offsets), tf.constant(self.roots),
                tuple(tuple(tf.constant(a) for a in slots) for slots in self.children),
                tuple(tuple(tf.constant(a) for a in cols) for cols in self.columns))


class ForestPlan:
    """The cases of one recursive function in one graph, and the flattening of the
    structures passed to it at each call (the graph's ``fits`` guard and its inputs)."""

    def __init__(self, label: str, reuse: bool):
        self.label = label
        self.reuse = reuse
        self.cases: list[Case] = []
        self.levels = 8
        self.namespace: dict[str, Any] = {}
        self.root_labels: list[str] = []
        self.roots_of: Callable[[tuple, dict], tuple] | None = None
        self.calls = self.nodes = self.unique = 0
        self._tests: list[Callable] = []
        self._children: list[Callable] = []
        self._columns: list[Callable] = []
        self._memo = threading.local()

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
        self._tests.append(compiled(" and ".join(f"({t.expr})" for t in case.tests) or "True"))
        self._children.append(compiled(f"({''.join(c + ', ' for c in case.children)})"))
        self._columns.append(compiled(f"({''.join(c + ', ' for c, _ in case.columns)})"))

    def match(self, node: Any) -> int:
        """The index of the first case whose tests ``node`` passes, or -1."""
        for i, test in enumerate(self._tests):
            try:
                if test(node):
                    return i
            except Exception:  # noqa: BLE001 - a path that does not exist: not this case
                pass
        return -1

    def spec(self) -> tuple:
        """The nest of TensorSpecs of the flattened inputs (the graph's call-time capture)."""
        index = tf.TensorSpec([None], tf.int32)
        return (tf.TensorSpec([self.levels * len(self.cases) + 1], tf.int32),
                tf.TensorSpec([len(self.root_labels)], tf.int32),
                tuple(tuple(index for _ in c.children) for c in self.cases),
                tuple(tuple(tf.TensorSpec([None], DTYPES[kind]) for _, kind in c.columns) for c in self.cases))

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

    # -- at each call ------------------------------------------------------------
    def fits(self, a: tuple, k: dict) -> bool:
        """The guard: this call's structures flatten under this plan (kept for :meth:`inputs`)."""
        flat = self.flatten(self.roots_of(a, k))
        self._memo.value = (a, flat)
        return isinstance(flat, Flat)

    def inputs(self, a: tuple, k: dict) -> tuple:
        """The tensors of this call's structures (flattened by the guard just before)."""
        memo = getattr(self._memo, "value", None)
        flat = memo[1] if memo is not None and memo[0] is a else self.flatten(self.roots_of(a, k))
        self._memo.value = None
        self.calls += 1
        self.nodes += flat.nodes
        self.unique += flat.unique
        return flat.tensors()

    def flatten(self, roots: tuple) -> Flat | Miss:
        """Walk ``roots`` (post-order, without recursion) into a :class:`Flat`, or say why not."""
        done: dict[int, int] = {}  # id(node) -> its provisional index
        on_path: set[int] = set()
        case_of: list[int] = []
        level: list[int] = []
        kids: list[tuple] = []
        cols: list[tuple] = []
        shared: dict[tuple, int] = {}
        walked = 0
        root_ids = []
        keep = []  # nodes stay alive while ids are compared
        for root in roots:
            if id(root) in done:
                root_ids.append(done[id(root)])
                continue
            stack = [[root, -1, (), 0, []]]  # node, case, children, next child, children's indices
            while stack:
                frame = stack[-1]
                node = frame[0]
                if frame[1] < 0:
                    c = self.match(node)
                    if c < 0:
                        return Miss("a node fits none of the cases traced", node, "case")
                    frame[1], frame[2] = c, self._children[c](node)
                    on_path.add(id(node))
                    keep.append(node)
                if frame[3] < len(frame[2]):
                    child = frame[2][frame[3]]
                    frame[3] += 1
                    if id(child) in done:
                        frame[4].append(done[id(child)])
                        walked += 1
                        continue
                    if id(child) in on_path:
                        return Miss("a node is its own descendant (a cycle)")
                    if len(stack) >= MAX_LEVELS:
                        return Miss(f"deeper than {MAX_LEVELS}")
                    stack.append([child, -1, (), 0, []])
                    continue
                stack.pop()
                on_path.discard(id(node))
                walked += 1
                c, children = frame[1], tuple(frame[4])
                height = 1 + max(level[i] for i in children) if children else 0
                if height >= self.levels:
                    return Miss(f"higher than {self.levels} levels", node, "height")
                values = self._columns[c](node)
                for value, (_, kind) in zip(values, self.cases[c].columns):
                    if kind is int and not INT32[0] <= value <= INT32[1]:
                        return Miss("a number the recursion computes with does not fit int32")
                key = (c, values, children)
                index = shared.get(key) if self.reuse else None
                if index is None:
                    index = len(case_of)
                    case_of.append(c)
                    level.append(height)
                    kids.append(children)
                    cols.append(values)
                    shared[key] = index
                done[id(node)] = index
                if stack:
                    stack[-1][4].append(index)
            root_ids.append(done[id(root)])
        return self._arrays(case_of, level, kids, cols, root_ids, walked)

    def _arrays(self, case_of: list, level: list, kids: list, cols: list, root_ids: list, walked: int) -> Flat:
        n_cases, n = len(self.cases), len(case_of)
        block = np.array([h * n_cases + c for h, c in zip(level, case_of)], np.int64)
        order = np.argsort(block, kind="stable")
        final = np.empty(n, np.int32)
        final[order] = np.arange(n, dtype=np.int32)
        offsets = np.zeros(self.levels * n_cases + 1, np.int32)
        np.cumsum(np.bincount(block, minlength=self.levels * n_cases), out=offsets[1:])
        children = [[np.zeros(n, np.int32) for _ in case.children] for case in self.cases]
        columns = [[np.zeros(n, DTYPES[kind].as_numpy_dtype) for _, kind in case.columns] for case in self.cases]
        for i in range(n):
            c, at = case_of[i], final[i]
            for slot, child in enumerate(kids[i]):
                children[c][slot][at] = final[child]
            for j, value in enumerate(cols[i]):
                columns[c][j][at] = value
        return Flat(offsets, children, columns, final[np.array(root_ids, np.int64)], walked, n)
