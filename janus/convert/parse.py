"""Source of a user function as a gast ``FunctionDef`` with file positions, checked to be
the source of the code that runs; and the converter's one lock around parsing and compiling.

Two things can make a function's source text lie about what it runs:

* the file was edited after the module was imported (``inspect`` reads the file anew), so
  the text is a program the interpreter never loaded;
* the function object's code came from elsewhere (a decorator's ``functools.wraps``
  wrapper, whose source ``inspect`` follows to the wrapped function; a replaced ``__code__``).

The text is therefore compiled again, in the scopes its qualified name and free variables
describe, and the code object it gives must be the running one (bytecode, constants,
names, line table); otherwise the function is not converted (a permanent
``ConversionError``, which ``janus.explain`` shows).

``ast.parse`` and ``compile`` are not thread-safe on CPython 3.11 before 3.11.8 (the AST
constructor's recursion depth is interpreter-wide state: CPython gh-106905); a garbage
collection inside one thread's parse can hand the GIL to another thread that parses, and
the first raises ``SystemError: AST constructor recursion depth mismatch``.  Every parse
and compile of the converter runs under :data:`AST_LOCK`, with collection paused for the
C call itself.
"""
from __future__ import annotations

import __future__
import ast
import contextlib
import copy
import functools
import gc
import inspect
import linecache
import os
import threading
import types
from typing import Callable, Iterator, TypeVar

import gast

from janus.convert import registry
from janus.errors import ConversionError
from janus.reporting.codes import Code

AST_LOCK = threading.RLock()
"""Held while the converter parses, transforms or compiles (reentrant)."""

_T = TypeVar("_T")

_FUTURE_FLAGS = functools.reduce(lambda a, b: a | b,
                                 (getattr(__future__, f).compiler_flag for f in __future__.all_feature_names))
_CO_NESTED = 0x10  # informational: set when the enclosing scope is a function; no effect on the code


@contextlib.contextmanager
def _exclusive() -> Iterator[None]:
    """The lock, and no garbage collection (whose finalizers could switch threads) meanwhile."""
    with AST_LOCK:
        collecting = gc.isenabled()
        gc.disable()
        try:
            yield
        finally:
            if collecting:
                gc.enable()


def exclusive(fn: Callable[..., _T]) -> Callable[..., _T]:
    """Decorator: run ``fn`` under :data:`AST_LOCK` (for code that parses, e.g. through templates)."""
    @functools.wraps(fn)
    def locked(*args, **kwargs):
        with AST_LOCK:
            return fn(*args, **kwargs)
    return locked


def source_tree(text: str, filename: str = "<unknown>") -> ast.Module:
    """``ast.parse(text)``, safe from other threads' parses."""
    with _exclusive():
        return ast.parse(text, filename)


def compile_tree(tree: ast.AST, filename: str, flags: int | None = None) -> types.CodeType:
    """``compile(tree, filename, "exec")``, safe from other threads' parses.  ``flags``: the
    future features to compile with (None: this module's, i.e. ``annotations``)."""
    with _exclusive():
        if flags is None:
            return compile(tree, filename, "exec")
        return compile(tree, filename, "exec", flags, dont_inherit=True)


def function_ast(fn: types.FunctionType) -> tuple[gast.FunctionDef, str, int, int]:
    """Parse ``fn``'s source; returns (node, filename, line offset, column offset).

    Node positions are the file's (the offsets are 0, kept for the callers' sake).  Raises
    ``ConversionError`` when the source is unavailable, does not parse, or is not the
    source of ``fn``'s running code (permanent then).
    """
    code = fn.__code__
    generated = registry.definition_of(code)
    if generated is not None:
        return copy.deepcopy(generated), code.co_filename, 0, 0
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise ConversionError(f"source of {fn.__qualname__} is not available ({e})", code=Code.NO_SOURCE) from None
    if not lines:
        raise ConversionError(f"source of {fn.__qualname__} is not available (no lines)", code=Code.NO_SOURCE)
    with AST_LOCK:
        tree, body = _parse_in_scope(fn, lines, first)
        _check_same_code(fn, tree, first)
        module = gast.ast_to_gast(ast.Module(body=body, type_ignores=[]))
    if fn.__name__ == "<lambda>":
        return _lambda_as_def(fn, module), code.co_filename, 0, 0
    defs = [n for n in module.body if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef))]
    if len(defs) != 1 or defs[0].name != fn.__name__:
        raise ConversionError(f"source of {fn.__qualname__} is not a single def", code=Code.NO_SOURCE)
    return defs[0], code.co_filename, 0, 0


def _enclosing(code: types.CodeType) -> tuple[str | None, list[str]]:
    """The innermost class around ``code``'s function (its names are mangled with it, its
    ``__class__`` cell is the class's) and the free variables an enclosing function binds."""
    parts = getattr(code, "co_qualname", code.co_name).split(".")[:-1]
    cls = None
    for i, part in enumerate(parts):
        if part != "<locals>" and (i + 1 == len(parts) or parts[i + 1] != "<locals>"):
            cls = part
    free = [v for v in code.co_freevars if not (v == "__class__" and cls is not None)]
    return cls, free


def _parse_in_scope(fn: types.FunctionType, lines: list[str], first: int) -> tuple[ast.Module, list[ast.stmt]]:
    """The statements of ``lines`` (the file's lines ``first``...), parsed with their own
    indentation inside headers that recreate the function's scopes (an enclosing function
    binding its free variables, its class), at the file's positions; and the whole tree."""
    cls, free = _enclosing(fn.__code__)
    indent = lines[0][:len(lines[0]) - len(lines[0].lstrip())]
    headers = []
    if free:
        headers.append(f"def _jn_scope({', '.join(free)}):")
    if cls is not None:
        headers.append(f"class {cls}:")
    if fn.__name__ == "<lambda>" and indent and (not headers or cls is not None) and len(headers) < len(indent):
        headers.append("def _jn_scope():")  # its line may be a return, yield or await statement
    if indent and not headers:
        headers.append("if 1:")
    if len(headers) > len(indent):
        raise ConversionError(f"source of {fn.__qualname__} cannot be checked against its code "
                              f"(indented too little for its scopes)", permanent=True, code=Code.NO_SOURCE)
    text = "".join(indent[:i] + h + "\n" for i, h in enumerate(headers)) + "".join(lines)
    if not text.endswith("\n"):
        text += "\n"
    try:
        tree = source_tree(text, fn.__code__.co_filename)
    except (SyntaxError, ValueError) as e:
        msg = getattr(e, "msg", None) or str(e)
        raise ConversionError(f"source of {fn.__qualname__} does not parse on its own ({msg})",
                              code=Code.NO_SOURCE) from None
    body = tree.body
    for _ in headers:
        body = body[0].body
    for stmt in body:
        ast.increment_lineno(stmt, first - 1 - len(headers))
    return tree, body


def _check_same_code(fn: types.FunctionType, tree: ast.Module, first: int) -> None:
    """Raise (permanent) unless compiling ``tree`` (the source in ``fn``'s scopes) gives
    ``fn``'s running code."""
    code = fn.__code__
    where = f"{os.path.basename(code.co_filename)}:{first}"
    imported = _module_imports(code.co_filename, fn.__globals__)
    if imported:  # ``m.f(x)`` compiles as a method call unless ``m`` is a module-level import
        header = ast.Import(names=[ast.alias(name="_jn_absent", asname=name) for name in sorted(imported)])
        tree = ast.Module(body=[ast.fix_missing_locations(ast.copy_location(header, tree.body[0]))] + tree.body,
                          type_ignores=[])
    try:
        compiled = compile_tree(tree, code.co_filename, code.co_flags & _FUTURE_FLAGS)
    except (SyntaxError, ValueError) as e:
        msg = getattr(e, "msg", None) or str(e)
        raise ConversionError(f"source of {fn.__qualname__} at {where} does not compile on its own ({msg})",
                              permanent=True, code=Code.NO_SOURCE) from None
    candidates = [c for c in registry.code_objects(compiled)
                  if c.co_name == code.co_name and c.co_firstlineno == code.co_firstlineno]
    if any(_same_code(c, code) for c in candidates):
        return
    if _rewritten_on_import(fn.__globals__) and any(_same_outline(c, code) for c in candidates):
        return
    raise ConversionError(f"source of {fn.__qualname__} at {where} is not the source of the code that "
                          f"runs (the file was edited after it was loaded, or the function's code "
                          f"comes from elsewhere)", permanent=True, code=Code.NO_SOURCE)


_imports: dict[str, tuple[list[str], frozenset[str]]] = {}


def _module_imports(filename: str, module_globals: dict) -> frozenset[str]:
    """Names an import statement binds in the module's own scope (CPython 3.11 compiles
    ``name.attr(...)`` differently when ``name`` is one); from the file's current text."""
    lines = linecache.getlines(filename, module_globals)
    known = _imports.get(filename)
    if known is not None and known[0] is lines:
        return known[1]
    try:
        tree = source_tree("".join(lines), filename)
    except (SyntaxError, ValueError):
        return frozenset()
    names = set()
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update(a.asname or a.name.split(".")[0] for a in node.names if a.name != "*")
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            todo.extend(c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt) or hasattr(c, "body"))
    _imports[filename] = (lines, frozenset(names))
    return _imports[filename][1]


def _rewritten_on_import(module_globals: dict) -> bool:
    """The module was loaded by an import hook that may transform its code (pytest's
    assertion rewriting, a type-checking hook), not by importlib's own source loader."""
    loader = module_globals.get("__loader__")
    return loader is not None and type(loader).__module__ not in ("importlib._bootstrap_external",
                                                                   "_frozen_importlib_external")


def _same_outline(a: types.CodeType, b: types.CodeType) -> bool:
    """What an import hook's rewriting keeps (it adds code and strings around the user's):
    the lines that have code, and the numbers among the constants, nested functions included."""
    return _outline(a) == _outline(b)


def _outline(code: types.CodeType) -> tuple:
    lines = sorted({line for _, _, line in code.co_lines() if line is not None})
    numbers = sorted(repr(c) for c in code.co_consts
                     if isinstance(c, (int, float, complex)) and not isinstance(c, bool))
    nested = sorted((c.co_name, c.co_firstlineno, _outline(c)) for c in code.co_consts if isinstance(c, types.CodeType))
    return code.co_name, code.co_firstlineno, code.co_varnames[:code.co_argcount], tuple(lines), tuple(numbers), \
        tuple(nested)


_SAME_ATTRS = ("co_code", "co_names", "co_varnames", "co_freevars", "co_cellvars", "co_argcount",
               "co_posonlyargcount", "co_kwonlyargcount", "co_nlocals", "co_stacksize", "co_firstlineno",
               "co_linetable", "co_exceptiontable", "co_name")


def _same_code(a: types.CodeType, b: types.CodeType) -> bool:
    """The same program: bytecode, names, constants, line table (not the qualified name,
    which names the scopes' headers)."""
    if any(getattr(a, attr, None) != getattr(b, attr, None) for attr in _SAME_ATTRS):
        return False
    if (a.co_flags | _CO_NESTED) != (b.co_flags | _CO_NESTED) or len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if isinstance(x, types.CodeType) and isinstance(y, types.CodeType):
            if not _same_code(x, y):
                return False
        elif type(x) is not type(y) or repr(x) != repr(y):
            return False
    return True


LAMBDA_NAME = "_jn_lambda"


def _lambda_as_def(fn: types.FunctionType, module: gast.Module) -> gast.FunctionDef:
    """The lambda ``fn`` among the lambdas of its source lines, as ``def _jn_lambda(...): return ...``."""
    lambdas = [n for n in gast.walk(module) if isinstance(n, gast.Lambda)]
    if len(lambdas) > 1:
        line, col = next(((p[0], p[2]) for p in fn.__code__.co_positions() if p[2] is not None), (None, None))
        lambdas = [n for n in lambdas if n.body.lineno == line and n.body.col_offset == col]
    if len(lambdas) != 1:
        raise ConversionError("cannot tell which lambda of its source line this is", code=Code.NO_SOURCE)
    node = lambdas[0]
    return gast.FunctionDef(name=LAMBDA_NAME, args=node.args, body=[gast.Return(value=node.body)],
                            decorator_list=[], returns=None, type_comment=None, type_params=[])
