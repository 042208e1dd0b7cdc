"""Sources: where a value the trace read comes from, as typed access paths.

A source renders the three things Janus needs of an access path:

* ``expr``: a Python expression over ``a`` (positional arguments), ``k`` (keyword
  arguments) and names of the cache entry's namespace — compiled into the entry's
  guard function and into the getters that feed heap values to a graph and find the
  objects deferred effects change;
* ``label``: how the user's code names it (``self.state``, ``xs[0]``, ``LR``);
* ``what``: the phrase guard descriptions and reasons use (``argument x``,
  ``global LR``, ``self.state``).

Sources are immutable and hashable, so they key the per-function records of shapes
seen and Python numbers fed.  Nothing parses an expression back.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Source:
    """An access path to a value (the base of every kind of source)."""

    @property
    def expr(self) -> str:
        raise NotImplementedError

    @property
    def label(self) -> str:
        raise NotImplementedError

    @property
    def what(self) -> str:
        return self.label

    @property
    def is_argument(self) -> bool:
        """An argument, or an item of an argument's tuples/lists/dicts (not state reached from one)."""
        return False

    def item(self, key: Any) -> "Item":
        return Item(self, key)

    def attr(self, name: str) -> "Attr":
        return Attr(self, name)

    def __str__(self) -> str:
        return self.expr


@dataclass(frozen=True)
class Arg(Source):
    """Positional argument ``index`` (named ``name`` in the signature, if it has one)."""

    index: int
    name: str | None = field(default=None, compare=False)

    @property
    def expr(self) -> str:
        return f"a[{self.index}]"

    @property
    def label(self) -> str:
        return self.name if self.name is not None else f"argument {self.index}"

    @property
    def what(self) -> str:
        return f"argument {self.name if self.name is not None else self.index}"

    @property
    def is_argument(self) -> bool:
        return True


@dataclass(frozen=True)
class KwArg(Source):
    """Keyword argument ``name``."""

    name: str

    @property
    def expr(self) -> str:
        return f"k[{self.name!r}]"

    @property
    def label(self) -> str:
        return self.name

    @property
    def what(self) -> str:
        return f"argument {self.name}"

    @property
    def is_argument(self) -> bool:
        return True


@dataclass(frozen=True)
class Item(Source):
    """``parent[key]`` of a tuple, list or dict."""

    parent: Source
    key: Any

    @property
    def expr(self) -> str:
        return f"{self.parent.expr}[{self.key!r}]"

    @property
    def label(self) -> str:
        return f"{self.parent.label}[{self.key!r}]"

    @property
    def what(self) -> str:
        return f"{self.parent.what}[{self.key!r}]"

    @property
    def is_argument(self) -> bool:
        return self.parent.is_argument


@dataclass(frozen=True)
class Entry(Item):
    """``parent[key]`` of a mapping whose missing keys it makes (a ``defaultdict``), read so
    that it never makes one: a guard or getter evaluated on a later call must not insert
    ``key`` into the caller's mapping (a missing key raises KeyError instead)."""

    @property
    def expr(self) -> str:
        parent, key = self.parent.expr, repr(self.key)
        return f"({parent}[{key}] if {key} in {parent} else {{}}[{key}])"


@dataclass(frozen=True)
class Attr(Source):
    """Attribute ``name`` of an object, read from its instance ``__dict__``."""

    parent: Source
    name: str

    @property
    def expr(self) -> str:
        return f"{self.parent.expr}.__dict__[{self.name!r}]"

    @property
    def label(self) -> str:
        return f"{self.parent.label}.{self.name}"


@dataclass(frozen=True)
class Global(Source):
    """Global ``name`` of the module whose globals dict is namespace entry ``module``."""

    module: str
    name: str

    @property
    def expr(self) -> str:
        return f"{self.module}[{self.name!r}]"

    @property
    def label(self) -> str:
        return self.name

    @property
    def what(self) -> str:
        return f"global {self.name}"


@dataclass(frozen=True)
class ModuleAttr(Global):
    """Attribute ``name`` of module ``qualname`` read as ``module.name``: a global of that
    module (its globals dict is namespace entry ``module``), named as the user's code names it."""

    qualname: str = ""

    @property
    def label(self) -> str:
        return f"{self.qualname}.{self.name}"

    @property
    def what(self) -> str:
        return self.label


@dataclass(frozen=True)
class Cell(Source):
    """Closure variable ``name``: the contents of the cell held as namespace entry ``cell``."""

    cell: str
    name: str

    @property
    def expr(self) -> str:
        return f"{self.cell}.cell_contents"

    @property
    def label(self) -> str:
        return self.name

    @property
    def what(self) -> str:
        return f"closure variable {self.name}"


@dataclass(frozen=True)
class ClassAttr(Source):
    """Attribute ``name`` defined on a user class (namespace entry ``cls``, named ``qualname``)."""

    cls: str
    qualname: str
    name: str

    @property
    def expr(self) -> str:
        return f"{self.cls}.__dict__[{self.name!r}]"

    @property
    def label(self) -> str:
        return f"{self.qualname}.{self.name}"


@dataclass(frozen=True)
class Default(Source):
    """The default value of parameter ``name`` (namespace entry ``function``).

    ``position`` is its index in ``__defaults__``, or None for a keyword-only default.
    """

    function: str
    name: str
    position: int | None = None

    @property
    def expr(self) -> str:
        if self.position is None:
            return f"{self.function}.__kwdefaults__[{self.name!r}]"
        return f"{self.function}.__defaults__[{self.position}]"

    @property
    def label(self) -> str:
        return self.name

    @property
    def what(self) -> str:
        return f"default of {self.name}"
