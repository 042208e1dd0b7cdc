"""Source of a user function as a gast ``FunctionDef`` with file positions."""
from __future__ import annotations

import inspect
import textwrap
import types

import gast

from janus.errors import ConversionError


def function_ast(fn: types.FunctionType) -> tuple[gast.FunctionDef, str, int, int]:
    """Parse ``fn``'s source; returns (node, filename, line offset, column offset).

    Node positions are relative to the dedented source; add the offsets to get the
    file's positions (what the profiler's sites use).
    """
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError) as e:
        raise ConversionError(f"source of {fn.__qualname__} is not available ({e})") from None
    source = "".join(lines)
    dedented = textwrap.dedent(source)
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    try:
        module = gast.parse(dedented)
    except SyntaxError as e:
        raise ConversionError(f"source of {fn.__qualname__} does not parse on its own ({e.msg})") from None
    if fn.__name__ == "<lambda>":
        return _lambda_as_def(fn, module, indent), fn.__code__.co_filename, first - 1, indent
    defs = [n for n in module.body if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef))]
    if len(defs) != 1 or defs[0].name != fn.__name__:
        raise ConversionError(f"source of {fn.__qualname__} is not a single def")
    return defs[0], fn.__code__.co_filename, first - 1, indent


LAMBDA_NAME = "_jn_lambda"


def _lambda_as_def(fn: types.FunctionType, module: gast.Module, indent: int) -> gast.FunctionDef:
    """The lambda ``fn`` among the lambdas of its source lines, as ``def _jn_lambda(...): return ...``."""
    lambdas = [n for n in gast.walk(module) if isinstance(n, gast.Lambda)]
    if len(lambdas) > 1:
        col = next((p[2] for p in fn.__code__.co_positions() if p[2] is not None), None)
        lambdas = [n for n in lambdas if n.body.col_offset + indent == col]
    if len(lambdas) != 1:
        raise ConversionError("cannot tell which lambda of its source line this is")
    node = lambdas[0]
    return gast.FunctionDef(name=LAMBDA_NAME, args=node.args, body=[gast.Return(value=node.body)],
                            decorator_list=[], returns=None, type_comment=None, type_params=[])
