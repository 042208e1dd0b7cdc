"""Sites: AST nodes named by their absolute source position, and the per-file AST index
that finds the node an instruction was compiled from.

The converter and the profiler parse the same function separately; a :class:`Site` is the
name both give a node, so the converter can look the profile's records up by node.
"""
from __future__ import annotations

import ast
import functools
import linecache
import logging
import os
from typing import Any, NamedTuple

log = logging.getLogger("janus.profiler")

__all__ = ["Site", "site_of", "norm_filename", "normalize_site", "FileIndex", "file_index"]


class Site(NamedTuple):
    """A stable name of an AST node: absolute position and node class name.

    Lines are 1-based, columns 0-based UTF-8 byte offsets, exactly as in ``ast`` and
    ``co_positions()``.  ``filename`` is normalised with :func:`norm_filename`.
    """

    filename: str
    lineno: int
    col_offset: int
    end_lineno: int
    end_col_offset: int
    kind: str

    def __str__(self) -> str:
        return f"{os.path.basename(self.filename)}:{self.lineno}:{self.col_offset} {self.kind}"

    @property
    def span(self) -> tuple[int, int, int, int]:
        return (self.lineno, self.col_offset, self.end_lineno, self.end_col_offset)


@functools.lru_cache(maxsize=4096)
def norm_filename(filename: str) -> str:
    """Absolute, case-normalised path, so that "x.py" and "/abs/x.py" name the same file."""
    if not filename or filename.startswith("<"):
        return filename
    return os.path.normcase(os.path.abspath(filename))


def site_of(filename: str, node: Any, kind: str | None = None) -> Site:
    """The :class:`Site` of an ``ast``/``gast`` node with absolute positions.

    ``kind`` defaults to the node's class name (gast and ast use the same names).
    """
    return Site(norm_filename(filename), node.lineno, node.col_offset,
                node.end_lineno, node.end_col_offset, kind or type(node).__name__)


def normalize_site(site: Site) -> Site:
    nf = norm_filename(site.filename)
    return site if nf == site.filename else site._replace(filename=nf)


# --- per-file AST index ------------------------------------------------------------------
class FileIndex:
    """Parent links and a span -> nodes index of one parsed source file."""

    def __init__(self, tree: ast.AST, filename: str):
        self.filename = filename
        self.parent: dict[ast.AST, ast.AST] = {}
        self.field: dict[ast.AST, str] = {}
        self.by_span: dict[tuple, list[ast.AST]] = {}
        for node in ast.walk(tree):  # breadth first: outer nodes come first in by_span
            for fname, val in ast.iter_fields(node):
                if isinstance(val, list):
                    for item in val:
                        if isinstance(item, ast.AST):
                            self.parent[item] = node
                            self.field[item] = fname
                elif isinstance(val, ast.AST):
                    self.parent[val] = node
                    self.field[val] = fname
            span = node_span(node)
            if span is not None:
                self.by_span.setdefault(span, []).append(node)

    def find(self, span: tuple | None, kinds: tuple) -> ast.AST | None:
        if span is None:
            return None
        for n in self.by_span.get(span, ()):
            if isinstance(n, kinds):
                return n
        return None

    def site(self, node: ast.AST, kind: str | None = None) -> Site:
        return Site(self.filename, node.lineno, node.col_offset, node.end_lineno,
                    node.end_col_offset, kind or type(node).__name__)


_file_cache: dict[str, tuple[str, FileIndex | None]] = {}


def file_index(filename: str) -> FileIndex | None:
    """Parse ``filename`` (through linecache, so notebooks and zipped files work too)."""
    lines = linecache.getlines(filename)
    if not lines:
        return None
    source = "".join(lines)
    hit = _file_cache.get(filename)
    if hit is not None and hit[0] == source:
        return hit[1]
    try:
        idx: FileIndex | None = FileIndex(ast.parse(source, filename), norm_filename(filename))
    except (SyntaxError, ValueError) as e:
        log.debug("cannot parse %s: %s", filename, e)
        idx = None
    _file_cache[filename] = (source, idx)
    return idx


def node_span(node: ast.AST) -> tuple | None:
    if getattr(node, "end_col_offset", None) is None or getattr(node, "lineno", None) is None:
        return None
    return (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)


def encloses(outer: tuple, inner: tuple) -> bool:
    return (outer[0], outer[1]) <= (inner[0], inner[1]) and (inner[2], inner[3]) <= (outer[2], outer[3])


def stmts_span(stmts: list) -> tuple | None:
    if not stmts:
        return None
    a, b = node_span(stmts[0]), node_span(stmts[-1])
    return (a[0], a[1], b[2], b[3]) if a and b else None
