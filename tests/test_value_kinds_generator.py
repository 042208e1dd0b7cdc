"""Random steps that read Python state of many *kinds* which the caller (and sometimes the
step itself) changes in place between calls, eagerly and through Janus: they must agree.

Janus's rule (``/work/shared/DESIGN.md``, "Values read: one model"): every value a trace
reads is guarded on what was read, fed, or read in Python at a break; an identity guard
alone never covers a read of a container's contents.  A graph that keeps a value frozen
after the caller changed it in place gives a wrong answer, and this generator hunts for it.

Each program is generated from a seed: two modules (a real file each, ``fresh_module``), a
``cfg`` module of settings and a main module with ``class Prog``, whose ``step(self, x)``
reads state and feeds what it read into TensorFlow arithmetic on ``x`` (``y = y + 0.5 *
(len(self.a0))``, ``y = y * cfg.LR`` ...), so that a stale value changes the result.  The
state is drawn from these kinds, nested at random (a list in an ``OrderedDict``, a
dataclass in a ``deque``, a ``@property`` over a ``ChainMap``, a module attribute holding a
``Counter`` ...): ``dict``, ``OrderedDict``, ``defaultdict``, ``Counter``, ``ChainMap``,
``deque`` (with and without ``maxlen``), ``MappingProxyType`` over a dict the caller
changes, ``array.array('d')``, ``os.environ`` (a key of the program's own,
``JANUS_GEN_LR_<seed>``, removed afterwards), ``UserDict``, ``UserList``, a ``dict``
subclass with ``__missing__``, ``Bag`` (a user class with ``__len__``, ``__getitem__``,
``__iter__``, ``__contains__``, ``__bool__`` and ``__float__`` that counts its calls), a
``@property`` (counting its calls), a dataclass, a namedtuple, a module attribute; the
leaves are Python floats and ints, NumPy float32 scalars and scalar tensors.  Each root
lives in an attribute of ``Prog``, a global of the main module or an attribute of ``cfg``.

Reads: ``x[k]``, ``x.get(k, d)``, ``len(x)``, ``k in x``, ``for v in x``, ``sum(x)``,
``float(x)``, ``if x:``, ``list(x.keys())`` order, attributes and properties.  The step
sometimes changes state itself (``setdefault``, ``d[k] += ...``, a ``defaultdict`` read of
a missing key, an append to a ``deque`` whose ``maxlen`` evicts, ``move_to_end``).  The
call sequence (``CALL_COUNT`` calls; Janus profiles one call, then converts) runs a
``between_<i>(p)`` function of the program before call ``i`` for most ``i``, at least
``MIN_LATE_CHANGES`` times after the conversion: it changes a value, adds or deletes a key,
reorders, appends or pops, reshuffles a list in place, sets or deletes the environment
variable, rebinds a module attribute.  The harness compares results, exceptions, printed
output and a plain-Python snapshot of all the state (container types, order, ``maxlen``,
the dunder and property call counters, the environment variable) after every call.

A program Janus runs eagerly is a gap and allowed here (a kind it does not model may rightly
fall back); a different answer is not.  Over each test, at least ``MIN_GRAPH_SHARE`` of the
programs must have run a graph, so that the test cannot pass by falling back everywhere.

Programs come in three modes.  ``plain`` (the first test, ``PLAIN_PROGRAMS`` of them): only
``dict``, ``list``, floats, NumPy scalars and tensors, the kinds Janus models today, so they
agree today.  ``focus <kind>`` (the even seeds of the second test): one kind of
``FOCUS_KINDS`` among dicts and lists, so that a disagreement names its kind.  ``mixed`` (the
odd seeds): every kind, nested at random.  A test runs all its programs and then reports
every disagreement, counted by mode, with the first ones in full (the seed, both sources,
the arguments, the call, what differed and Janus's counters).

The budget: a program is one tensor argument of a fixed shape, 2 to 5 reads and
``CALL_COUNT`` calls, so its cost is Janus's conversion and graph tracing, about 0.25 s; the
360 programs of a run take about 95 s on 2 cores.  ``JANUS_SWEEP_SEEDS=N`` adds N more
programs of the second test (and N/5 plain ones), in chunks of ``PER_TEST``: the longer
sweep, which the default run does not do.
"""
from __future__ import annotations

import array
import collections
import dataclasses
import os
import random
import types

import numpy as np
import pytest
import tensorflow as tf

import janus
from harness import check, fresh_module

PROGRAMS = 300          # programs over all the kinds, per suite run
PER_TEST = 50
PLAIN_PROGRAMS = 60     # programs over dict / list / numbers only, which Janus models today
CALL_COUNT = 7          # calls per program: 1 profiled, then converted, then graphs
MIN_LATE_CHANGES = 3    # caller changes before calls after the first conversion
# A kind Janus does not model may rightly fall back, so a program need not run a graph; but
# a test where few programs run graphs proves little.  Today nearly all run graphs; after the
# value-kind model lands the modeled kinds still do.  At least a third of them must.
MIN_GRAPH_SHARE = 1 / 3
SHOWN_FAILURES = 3      # disagreements shown in full in a failure message
SWEEP_SEEDS = int(os.environ.get("JANUS_SWEEP_SEEDS", "0") or 0)

VALUES = [0.25, 0.5, 0.75, 1.25, 1.5, 2.0]
PLAIN_CONTAINERS = {"dict", "list"}   # with float, int, NumPy float32 and tensor leaves
FOCUS_KINDS = ["OrderedDict", "defaultdict", "Counter", "ChainMap", "MappingProxyType", "UserDict", "Table",
               "deque", "deque(maxlen)", "array", "UserList", "Bag", "dataclass", "Hp", "property",
               "module attr", "os.environ"]
ALL_KINDS = sorted(PLAIN_CONTAINERS) + FOCUS_KINDS

PREAMBLE = '''\
import array
import collections
import dataclasses
import os
import types

import numpy as np


class Bag:
    """A sequence of the user's own that counts the calls of its dunders."""
    def __init__(self, items):
        self.items = list(items)
        self.calls = {"len": 0, "getitem": 0, "iter": 0, "contains": 0, "bool": 0, "float": 0}

    def __len__(self):
        self.calls["len"] += 1
        return len(self.items)

    def __getitem__(self, i):
        self.calls["getitem"] += 1
        return self.items[i]

    def __iter__(self):
        self.calls["iter"] += 1
        return iter(self.items)

    def __contains__(self, v):
        self.calls["contains"] += 1
        return v in self.items

    def __bool__(self):
        self.calls["bool"] += 1
        return len(self.items) > 2

    def __float__(self):
        self.calls["float"] += 1
        return float(sum(self.items))


class Table(dict):
    """A dict subclass: a missing key reads as 0.25."""
    def __missing__(self, key):
        return 0.25


@dataclasses.dataclass
class Opt:
    lr: object
    table: object = None
    steps: int = 2


Hp = collections.namedtuple("Hp", ["lr", "n"])
'''


# ---------------------------------------------------------------------------------------
# The generator
# ---------------------------------------------------------------------------------------

class _Leaf:
    """A number (or a namedtuple of numbers): read as it is, replaced by its parent."""

    def __init__(self, gen: "_Gen", kind: str):
        self.gen, self.kind = gen, kind
        self.numeric = kind != "Hp"
        gen.kinds.add(kind)

    def value(self) -> str:
        r = self.gen.r
        v = r.choice(VALUES)
        return {"float": repr(v), "int": str(r.randint(1, 3)), "np.float32": f"np.float32({v})",
                "tensor": f"tf.constant({v})", "Hp": f"Hp(lr={v}, n={r.randint(1, 3)})"}[self.kind]

    def init(self) -> str:
        return self.value()

    def reads(self, p: str) -> list[str]:
        if self.kind == "Hp":
            return [f"{p}.lr", f"{p}[1]", f"{p}.n * {p}.lr"]
        return [p]

    def children(self):
        return []

    def stmt_reads(self, p: str) -> list[list[str]]:
        return []

    def caller_changes(self, p: str) -> list[list[str]]:
        return []

    def step_changes(self, p: str) -> list[list[str]]:
        return []


class _Mapping:
    """A mapping with stable keys ``k0``, ``k1`` (``k1`` maybe a nested node) and a volatile
    leaf ``k2`` the caller adds and deletes."""

    KINDS = ["dict", "OrderedDict", "defaultdict", "Counter", "ChainMap", "MappingProxyType", "UserDict", "Table"]

    def __init__(self, gen: "_Gen", kind: str, module: str):
        self.gen, self.kind, self.module = gen, kind, module
        gen.kinds.add(kind)
        leaf_kinds = ["int"] if kind == "Counter" else gen.leaf_kinds
        self.leaf_kind = lambda: gen.r.choice(leaf_kinds)
        self.k0 = _Leaf(gen, self.leaf_kind())
        nest = kind not in ("Counter", "ChainMap") and gen.r.random() < 0.4
        self.k1 = gen.node(module) if nest else _Leaf(gen, self.leaf_kind())
        self.k2 = _Leaf(gen, "int" if kind == "Counter" else "float")
        self.has_k2 = gen.r.random() < 0.5
        self.src = None
        if kind == "MappingProxyType":
            self.src = gen.hidden(module, self.dict_source())

    def leaves(self) -> bool:
        return self.k0.numeric and isinstance(self.k1, _Leaf) and self.k1.numeric

    def dict_source(self) -> str:
        items = [f"'k0': {self.k0.init()}", f"'k1': {self.k1.init()}"]
        if self.has_k2:
            items.append(f"'k2': {self.k2.init()}")
        return "{" + ", ".join(items) + "}"

    def init(self) -> str:
        k = self.kind
        if k == "dict":
            return self.dict_source()
        if k == "ChainMap":
            first = f"{{'k0': {self.k0.init()}}}"
            rest = [f"'k0': {self.k0.init()}", f"'k1': {self.k1.init()}"] + ([f"'k2': {self.k2.init()}"] if self.has_k2 else [])
            return f"collections.ChainMap({first}, {{{', '.join(rest)}}})"
        if k == "MappingProxyType":
            return f"types.MappingProxyType({self.src})"
        if k == "defaultdict":
            return f"collections.defaultdict(float, {self.dict_source()})"
        if k in ("OrderedDict", "Counter", "UserDict"):
            return f"collections.{k}({self.dict_source()})"
        return f"Table({self.dict_source()})"

    def children(self):
        return [("['k1']", self.k1)]

    def reads(self, p: str) -> list[str]:
        zero = "0" if self.kind == "Counter" else "0.25"
        out = self.k0.reads(f"{p}['k0']") + [f"len({p})", f"{p}.get('k2', {zero})", f"(1.5 if 'k2' in {p} else -0.5)",
               f"list({p}.keys()).index('k0')", f"list({p}).index('k1')"]
        out += self.k1.reads(f"{p}['k1']") if isinstance(self.k1, _Leaf) else []
        if self.leaves():
            out += [f"sum({p}.values())", f"{p}[list({p}.keys())[0]]", f"next(iter({p}.values()))"]
        if self.kind == "Counter":
            out += [f"{p}['k9']", f"{p}.most_common(1)[0][1]", f"sum({p}.values())"]
        if self.kind == "Table":
            out += [f"{p}['k9']"]
        return out

    def stmt_reads(self, p: str) -> list[list[str]]:
        out = [[f"if 'k2' in {p}:", "    y = y * 1.5", "else:", "    y = y - 0.5"]]
        if self.leaves():
            out += [[f"for k in {p}:", f"    y = y + {p}[k] * 0.5"],
                    [f"for k, v in {p}.items():", "    if k != 'k1':", "        y = y + v"]]
        return out

    def _target(self, p: str) -> str:
        """The path the caller writes through (a proxy's own dict)."""
        return self.gen.caller_root(self.module, self.src) if self.src else p

    def caller_changes(self, p: str) -> list[list[str]]:
        t = self._target(p)
        out = [[f"{t}['k0'] = {self.k0.value()}"],
               [f"{t}['k2'] = {self.k2.value()}"], [f"{t}.pop('k2', None)"],
               [f"{t}['k0'] = {t}.pop('k0')"]]
        if isinstance(self.k1, _Leaf):
            out.append([f"{t}['k1'] = {self.k1.value()}"])
        if self.kind == "OrderedDict":
            out += [[f"{t}.move_to_end('k0')"], [f"{t}.move_to_end('k1', last=False)"]] * 2
        if self.kind == "ChainMap":
            out += [[f"{t}.maps[0].pop('k0', None)"], [f"{t}.maps[1]['k0'] = {self.k0.value()}"],
                    [f"{t}.maps[1]['k2'] = {self.k2.value()}"]]
        if self.kind == "Counter":
            out += [[f"{t}['k0'] += 1"], [f"{t}.update(['k1', 'k1'])"]]
        return out

    def step_changes(self, p: str) -> list[list[str]]:
        if self.kind == "MappingProxyType":
            return []
        k2 = "1" if self.kind == "Counter" else "0.75"
        out = [[f"{p}.setdefault('k2', {k2})"], [f"{p}.pop('k2', None)"]]
        if self.k0.kind in ("float", "int", "np.float32"):
            out.append([f"{p}['k0'] += {'1' if self.kind == 'Counter' else '0.5'}"])
        if self.kind == "defaultdict":
            out += [["y = y + " + f"{p}['k3']"], [f"{p}['k3'] += 0.5"]] * 2
        if self.kind == "OrderedDict":
            out.append([f"{p}.move_to_end('k0')"])
        return out


class _Sequence:
    """A sequence of leaves (the first maybe a nested node, then nothing moves it)."""

    KINDS = ["list", "deque", "deque(maxlen)", "array", "UserList", "Bag"]

    def __init__(self, gen: "_Gen", kind: str, module: str):
        self.gen, self.kind = gen, kind
        gen.kinds.add(kind)
        leaf_kinds = ["float"] if kind == "array" else gen.leaf_kinds
        self.leaf = _Leaf(gen, gen.r.choice(leaf_kinds))
        nest = kind in ("list", "deque", "UserList") and gen.r.random() < 0.3
        self.first = gen.node(module) if nest else None
        self.length = gen.r.randint(2, 4)
        self.maxlen = 4 if kind == "deque(maxlen)" else None
        if self.maxlen:
            self.length = min(self.length, self.maxlen)

    def items(self) -> str:
        items = [self.leaf.value() for _ in range(self.length)]
        if self.first is not None:
            items[0] = self.first.init()
        return "[" + ", ".join(items) + "]"

    def init(self) -> str:
        k = self.kind
        if k == "list":
            return self.items()
        if k == "deque":
            return f"collections.deque({self.items()})"
        if k == "deque(maxlen)":
            return f"collections.deque({self.items()}, maxlen={self.maxlen})"
        if k == "array":
            return f"array.array('d', {self.items()})"
        if k == "UserList":
            return f"collections.UserList({self.items()})"
        return f"Bag({self.items()})"

    def children(self):
        return [("[0]", self.first)] if self.first is not None else []

    def reads(self, p: str) -> list[str]:
        out = [f"len({p})", f"{p}[-1]" if self.leaf.numeric else f"{p}[-1].lr"]
        if self.first is None:
            out += self.leaf.reads(f"{p}[0]")
            if self.leaf.numeric:
                out += [f"sum({p})"]
            if self.leaf.kind != "tensor" and self.leaf.numeric:
                out += [f"(1.0 if 0.5 in {p} else 0.0)"]
        if self.kind == "Bag":
            out += [f"(2.0 if {p} else 0.5)"] * 2
            if self.leaf.kind in ("float", "int", "np.float32"):
                out += [f"float({p})"] * 2
        return out

    def stmt_reads(self, p: str) -> list[list[str]]:
        out = [[f"if len({p}) > 3:", "    y = y * 0.5", "else:", "    y = y + 1.0"]]
        if self.first is None and self.leaf.numeric:
            out += [[f"for v in {p}:", "    y = y + v * 0.25"], [f"if {p}:", f"    y = y + {p}[0]"]]
        return out

    def caller_changes(self, p: str) -> list[list[str]]:
        items = f"{p}.items" if self.kind == "Bag" else p
        out = [[f"{items}[-1] = {self.leaf.value()}"]]
        if self.first is not None:
            return out
        out += [[f"{items}[0] = {self.leaf.value()}"], [f"{items}.append({self.leaf.value()})"],
                [f"{items}.reverse()"]]
        if self.kind in ("list", "UserList", "Bag"):
            out += [[f"{items}[:] = {items}[1:] + {items}[:1]"]]
        if self.kind.startswith("deque"):
            out += [[f"{p}.rotate(1)"], [f"{p}.appendleft({self.leaf.value()})"]]
        # a pop comes with an append (a sliding window), so that no sequence ever empties
        out += [[f"{p}.popleft()" if self.kind.startswith("deque") else f"{items}.pop(0)",
                 f"{items}.append({self.leaf.value()})"]]
        return out

    def step_changes(self, p: str) -> list[list[str]]:
        if self.first is not None or not self.leaf.numeric or self.leaf.kind == "tensor" or self.kind == "Bag":
            return []
        grow = f"{p}.append({p}[-1] + 0.5)"
        return [[grow]] * (3 if self.kind == "deque(maxlen)" else 1)


class _Object:
    """A dataclass instance: a leaf ``lr``, an int ``steps`` and maybe a nested ``table``."""

    def __init__(self, gen: "_Gen", module: str):
        self.gen, self.kind = gen, "dataclass"
        gen.kinds.add("dataclass")
        self.lr = _Leaf(gen, gen.r.choice(gen.leaf_kinds))
        self.table = gen.node(module) if gen.r.random() < 0.5 else None

    def init(self) -> str:
        table = f", table={self.table.init()}" if self.table is not None else ""
        return f"Opt(lr={self.lr.init()}{table})"

    def children(self):
        return [(".table", self.table)] if self.table is not None else []

    def reads(self, p: str) -> list[str]:
        return self.lr.reads(f"{p}.lr") + [f"{p}.steps"]

    def stmt_reads(self, p: str) -> list[list[str]]:
        return [[f"if {p}.steps > 3:", "    y = y * 0.5"]]

    def caller_changes(self, p: str) -> list[list[str]]:
        return [[f"{p}.lr = {self.lr.value()}"], [f"{p}.steps += 1"], [f"{p}.steps = 1"]]

    def step_changes(self, p: str) -> list[list[str]]:
        return [[f"{p}.steps += 1"]]


class _Env:
    """``os.environ[<the program's key>]``, a string the step reads as a number."""

    def __init__(self, gen: "_Gen", key: str):
        self.gen, self.key, self.kind = gen, key, "os.environ"
        gen.kinds.add("os.environ")

    def reads(self, p: str) -> list[str]:
        k = repr(self.key)
        return [f"float(os.environ.get({k}, '1.0'))", f"(1.0 if {k} in os.environ else 0.0)",
                f"len(os.environ.get({k}, ''))"]

    def children(self):
        return []

    def stmt_reads(self, p: str) -> list[list[str]]:
        return [[f"if {self.key!r} in os.environ:", f"    y = y * float(os.environ[{self.key!r}])"]]

    def caller_changes(self, p: str) -> list[list[str]]:
        k = repr(self.key)
        return [[f"os.environ[{k}] = {str(self.gen.r.choice(VALUES))!r}"]] * 3 + [[f"os.environ.pop({k}, None)"]]

    def step_changes(self, p: str) -> list[list[str]]:
        return []


class _Gen:
    """A program over the kinds ``allowed`` (a set of names of ``ALL_KINDS``); ``first``, a
    container kind to draw for the first root."""

    def __init__(self, seed: int, allowed: set[str], first: str | None = None, focused: bool = False):
        self.seed = seed
        self.r = random.Random(seed * 7919 + len(allowed))
        self.allowed, self.first, self.focused = allowed, first, focused
        self.kinds: set[str] = set()
        self.leaf_kinds = ["float", "float", "np.float32", "tensor"] + (["Hp"] if "Hp" in allowed else [])
        self.mappings = [k for k in _Mapping.KINDS if k in allowed]
        self.sequences = [k for k in _Sequence.KINDS if k in allowed]
        self.depth = 0
        self.defs = {"main": [], "cfg": []}   # module-level definitions, in order
        self.fields: list[str] = []           # Prog.__init__
        self.props: list[list[str]] = []
        self.globals = {"main": [], "cfg": []}  # the names of the state each module holds
        self.counter = 0
        self.env_key = f"JANUS_GEN_LR_{seed}"

    # roots and paths ------------------------------------------------------------------
    def hidden(self, module: str, source: str) -> str:
        name = f"SRC{self.counter}"
        self.counter += 1
        self.defs[module].append(f"{name} = {source}")
        self.globals[module].append(name)
        return name

    @staticmethod
    def caller_root(module: str, name: str) -> str:
        return name if module == "main" else f"cfg.{name}"

    def node(self, module: str):
        self.depth += 1
        r = self.r
        if self.depth > 2:
            n = _Leaf(self, r.choice(self.leaf_kinds))
        elif self.first is not None:
            kind, self.first = self.first, None
            n = _Object(self, module) if kind == "dataclass" else \
                _Mapping(self, kind, module) if kind in _Mapping.KINDS else _Sequence(self, kind, module)
        else:
            roll = r.random()
            if roll < 0.9 or "dataclass" not in self.allowed:
                n = _Mapping(self, r.choice(self.mappings), module) if roll < 0.5 else \
                    _Sequence(self, r.choice(self.sequences), module)
            else:
                n = _Object(self, module)
        self.depth -= 1
        return n

    def roots(self) -> list[tuple[str, str, object]]:
        """(step path, caller path, node) of every root."""
        out = []
        count = self.r.randint(1, 3)
        for i in range(count):
            # a root in another module (cfg.C0) is a module attribute, a kind Janus does not model today
            where = self.r.choice(["attr", "attr", "global"] + (["cfg"] if "module attr" in self.allowed else []))
            if where == "cfg":
                self.kinds.add("module attr")
            module = "cfg" if where == "cfg" else "main"
            n = self.node(module)
            init = n.init()
            if where == "attr":
                self.fields.append(f"self.a{i} = {init}")
                out.append((f"self.a{i}", f"p.a{i}", n))
            elif where == "global":
                self.defs["main"].append(f"G{i} = {init}")
                self.globals["main"].append(f"G{i}")
                out.append((f"G{i}", f"G{i}", n))
            else:
                self.defs["cfg"].append(f"C{i} = {init}")
                self.globals["cfg"].append(f"C{i}")
                out.append((f"cfg.C{i}", f"cfg.C{i}", n))
        if "module attr" in self.allowed and self.r.random() < 0.35:  # a module attribute the caller rebinds
            self.kinds.add("module attr")
            self.defs["cfg"].append(f"LR = {self.r.choice(VALUES)}")
            self.globals["cfg"].append("LR")
            out.append(("cfg.LR", "cfg.LR", _Leaf(self, "float")))
        if "os.environ" in self.allowed and self.r.random() < (0.9 if self.focused else 0.25):
            out.append(("", "", _Env(self, self.env_key)))
        return out

    # the walk -------------------------------------------------------------------------
    def walk(self, roots):
        """A random (step path, caller path, node) below a random root."""
        sp, cp, n = self.r.choice(roots)
        while n.children() and self.r.random() < 0.5:
            suffix, n = self.r.choice(n.children())
            sp, cp = sp + suffix, cp + suffix
        return sp, cp, n

    def read(self, sp: str, n) -> list[str]:
        stmts = n.stmt_reads(sp)
        if stmts and self.r.random() < 0.25:
            return self.r.choice(stmts)
        e = self.r.choice(n.reads(sp))
        if self.r.random() < 0.1 and isinstance(n, (_Mapping, _Sequence)):
            return [f"print('len', len({sp}))"]
        # every read is >= -0.5, so a product never zeroes y (and hides the later reads)
        return [f"y = y * (1.0 + 0.25 * ({e}))"] if self.r.random() < 0.25 else [f"y = y + 0.5 * ({e})"]

    def program(self) -> tuple[str, str, list]:
        roots = self.roots()
        # properties over the state (on Prog)
        if "property" in self.allowed and self.r.random() < (0.9 if self.focused else 0.35):
            self.kinds.add("property")
            sp, _, n = self.walk(roots)
            expr = self.r.choice(n.reads(sp))
            self.fields.append("self.prop_calls = 0")
            self.props.append(["@property", "def rate(self):", "    self.prop_calls += 1", f"    return {expr}"])
            roots = roots + [("self.rate", "", _Leaf(self, "float"))]
        body = ["y = x * 1.0"]
        for _ in range(self.r.randint(2, 5)):
            sp, cp, n = self.walk(roots)
            changes = n.step_changes(sp)
            if changes and self.r.random() < 0.2:
                body += self.r.choice(changes)
            else:
                body += self.read(sp, n)
        # the calls: between_<i> before call i
        changeable = [(cp, n) for _, cp, n in self._all(roots) if cp]
        betweens: dict[int, list[str]] = {}
        late = set(self.r.sample(range(2, CALL_COUNT), MIN_LATE_CHANGES))  # after the conversion (call 1)
        for i in range(1, CALL_COUNT):
            if i in late or self.r.random() < 0.5:
                lines = []
                for _ in range(self.r.randint(1, 2)):
                    cp, n = self.r.choice(changeable)
                    lines += self.r.choice(n.caller_changes(cp) or self._rebind(cp, n))
                betweens[i] = lines
        main = [PREAMBLE, f"ENV_KEY = {self.env_key!r}", f"os.environ[ENV_KEY] = '0.5'"] + self.defs["main"] + [""]
        cls = ["class Prog:", "    def __init__(self):"] + ["        " + f for f in self.fields or ["pass"]]
        for prop in self.props:
            cls += [""] + ["    " + line for line in prop]
        cls += ["", "    def step(self, x):"] + ["        " + line for line in body] + ["        return y"]
        calls = []
        for i, lines in sorted(betweens.items()):  # changes in place (or of cfg's attributes): no `global`
            calls += ["", "", f"def between_{i}(p):"] + ["    " + line for line in lines]
        main_src = "\n".join(main + cls + calls) + "\n"
        cfg_src = "\n".join([PREAMBLE] + self.defs["cfg"]) + "\n"
        return main_src, cfg_src, sorted(betweens)

    def _all(self, roots):
        """Every root and every node below one but the leaves (their parents change them)."""
        out = []
        stack = list(roots)
        while stack:
            sp, cp, n = stack.pop()
            out.append((sp, cp, n))
            stack += [(sp + suffix, cp + suffix, c) for suffix, c in n.children() if not isinstance(c, _Leaf)]
        return out

    def _rebind(self, cp: str, n) -> list[list[str]]:
        """A leaf root (``cfg.LR``): the caller rebinds it."""
        if isinstance(n, _Leaf) and cp:
            return [[f"{cp} = {n.value()}"]]
        return [["pass"]]


# ---------------------------------------------------------------------------------------
# Running a program
# ---------------------------------------------------------------------------------------

def snapshot(v):
    """A plain-Python picture of ``v`` that keeps its type, order and ``maxlen`` and does not
    call the user's dunders (a ``Bag`` shows its items and its call counters).  Dicts with
    named fields, so that a difference reads ``state['self.a0']['calls']['len']: 3 != 2``."""
    if isinstance(v, (tf.Tensor, np.generic, int, float, str, bool, type(None))):
        return v
    name = type(v).__name__
    if isinstance(v, collections.ChainMap):
        return {"type": name, "maps": [snapshot(m) for m in v.maps]}
    if isinstance(v, collections.UserDict):
        return {"type": name, "data": snapshot(v.data)}
    if isinstance(v, (dict, types.MappingProxyType)):  # OrderedDict's order is its own: items(), not dict.items
        out = {"type": name, "items": {k: snapshot(x) for k, x in v.items()}}
        if isinstance(v, collections.defaultdict):
            out["default_factory"] = v.default_factory.__name__
        return out
    if isinstance(v, collections.deque):
        return {"type": name, "maxlen": v.maxlen, "items": [snapshot(x) for x in v]}
    if isinstance(v, array.array):
        return {"type": name, "typecode": v.typecode, "items": list(v)}
    if isinstance(v, collections.UserList):
        return {"type": name, "data": snapshot(v.data)}
    if isinstance(v, (tuple, list)):
        return {"type": name, "items": [snapshot(x) for x in v]}
    if hasattr(v, "__dict__"):  # a dataclass, a Bag, Prog
        return {"type": name, **{k: snapshot(x) for k, x in vars(v).items()}}
    return {"type": name, "repr": repr(v)}


def mode(seed: int, plain: bool = False) -> str:
    """``plain``; ``focus <kind>`` (even seeds: one kind of ``FOCUS_KINDS`` among dicts and
    lists, so that a disagreement names its kind); ``mixed`` (odd seeds: all the kinds)."""
    if plain:
        return "plain"
    return f"focus {FOCUS_KINDS[seed // 2 % len(FOCUS_KINDS)]}" if seed % 2 == 0 else "mixed"


def program(seed: int, plain: bool = False):
    m = mode(seed, plain)
    if m == "mixed":
        gen = _Gen(seed, set(ALL_KINDS))
    else:
        kind = m.split(" ", 1)[1] if m != "plain" else None
        containers = _Mapping.KINDS + _Sequence.KINDS + ["dataclass"]
        gen = _Gen(seed, PLAIN_CONTAINERS | ({kind} if kind else set()), first=kind if kind in containers else None,
                   focused=kind is not None)
    main_src, cfg_src, betweens = gen.program()
    return gen, main_src, cfg_src, betweens


def _args(seed: int) -> list:
    r = random.Random(seed * 31 + 3)
    return [tf.constant(np.array([r.uniform(-1.0, 1.5) for _ in range(3)], np.float32)) for _ in range(CALL_COUNT)]


def run_program(seed: int, plain: bool = False) -> tuple[str | None, int]:
    """Compare the program of ``seed`` with eager.  Returns ``(None, graph calls)`` when they
    agree, else ``(message, graph calls)``: the message names the seed, the mode, the kinds,
    the call and what differed, and shows both sources and the arguments."""
    gen, main_src, cfg_src, betweens = program(seed, plain)
    args = _args(seed)
    made = []

    def factory(jit):
        cfg = fresh_module(cfg_src, tf=tf)
        mod = fresh_module(main_src, tf=tf, cfg=cfg)
        cls = type("Prog", (mod.Prog,), {})
        cls.step = janus.function(mod.Prog.step, profile_calls=1) if jit is janus.function else jit(mod.Prog.step)
        prog = cls()

        def state():
            return {**{f"self.{k}": snapshot(x) for k, x in vars(prog).items()},
                    **{g: snapshot(getattr(mod, g)) for g in gen.globals["main"]},
                    **{f"cfg.{g}": snapshot(getattr(cfg, g)) for g in gen.globals["cfg"]},
                    f"os.environ[{gen.env_key!r}]": os.environ.get(gen.env_key)}

        made.append(prog)
        return types.SimpleNamespace(fn=prog.step, prog=prog, mod=mod, state=state)

    def call(i):
        def run(p):
            if i in betweens:
                getattr(p.mod, f"between_{i}")(p.prog)
            return p.fn(args[i])
        return run

    try:
        check(factory, [call(i) for i in range(CALL_COUNT)], min_graph_calls=0)
        failure = None
    except AssertionError as e:
        shown = "\n".join(f"  x{i} = {a.numpy().tolist()}" + (f"   (after between_{i})" if i in betweens else "")
                          for i, a in enumerate(args))
        failure = (f"program {seed} ({mode(seed, plain)}; kinds: {', '.join(sorted(gen.kinds))}): {e}\n"
                   f"--- main module (after PREAMBLE: classes Bag, Table, Opt, Hp) ---\n{main_src[len(PREAMBLE):]}"
                   f"--- cfg module (after PREAMBLE) ---\n{cfg_src[len(PREAMBLE):]}"
                   f"--- calls: step(x<i>); the Janus run: {janus.stats(made[-1].step)} ---\n"
                   f"{shown}")
    finally:
        os.environ.pop(gen.env_key, None)
    stats = janus.stats(made[-1].step)
    return failure, stats["graph_calls"] + stats["segment_graph_calls"]


def run_programs(seeds, plain: bool = False) -> None:
    """Run every program, then fail with every disagreement (counted by the programs' mode,
    the first ``SHOWN_FAILURES`` in full), or if too few programs ran graphs."""
    seeds = list(seeds)
    failures: list[tuple[int, str]] = []
    modes: collections.Counter = collections.Counter()
    graph_programs = 0
    for seed in seeds:
        failure, graph_calls = run_program(seed, plain)
        graph_programs += graph_calls > 0
        modes[mode(seed, plain)] += 1
        if failure is not None:
            failures.append((seed, failure))
    if failures:
        bad = collections.Counter(mode(seed, plain) for seed, _ in failures)
        lines = [f"{len(failures)} of {len(seeds)} programs disagree with eager ({graph_programs} ran graphs)",
                 "disagreeing / programs, by mode: " + ", ".join(f"{m} {bad[m]}/{modes[m]}" for m in sorted(bad)),
                 "seeds: " + ", ".join(str(seed) for seed, _ in failures)]
        lines += [f"\n===== {msg}" for _, msg in failures[:SHOWN_FAILURES]]
        raise AssertionError("\n".join(lines))
    assert graph_programs >= len(seeds) * MIN_GRAPH_SHARE, f"only {graph_programs} of {len(seeds)} programs ran graphs"


@pytest.mark.parametrize("first", range(0, PLAIN_PROGRAMS + SWEEP_SEEDS // 5, PER_TEST))
def test_random_steps_reading_plain_dicts_lists_and_numbers_changed_in_place_agree_with_eager(first):
    run_programs(range(first, min(first + PER_TEST, PLAIN_PROGRAMS + SWEEP_SEEDS // 5)), plain=True)


# JANUS_SWEEP_SEEDS=N adds N programs of every kind (and N/5 plain ones) in more chunks
@pytest.mark.parametrize("first", range(0, PROGRAMS + SWEEP_SEEDS, PER_TEST))
def test_random_steps_reading_state_of_every_kind_changed_in_place_agree_with_eager(first):
    run_programs(range(first, min(first + PER_TEST, PROGRAMS + SWEEP_SEEDS)))
