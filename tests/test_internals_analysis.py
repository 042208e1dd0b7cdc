"""The converter's analyses on small functions: scopes, liveness, definedness and
structural recursion, read straight from the annotations they leave (no TensorFlow)."""
import textwrap

import gast

from janus.convert.analysis import (
    annotate_liveness, assigned, cell_vars, declared, local_names, possibly_unbound, used,
)
from janus.convert.analysis.structural_recursion import StructuralRecursion, analyze
from janus.convert.anno import Anno, getanno


def fn_ast(src: str) -> gast.FunctionDef:
    """The first function of ``src``."""
    return gast.parse(textwrap.dedent(src)).body[0]


def compound(fn: gast.FunctionDef, kind: type, index: int = 0) -> gast.AST:
    """The ``index``-th statement of type ``kind`` in ``fn`` (in walk order)."""
    return [n for n in gast.walk(fn) if isinstance(n, kind)][index]


def live(node: gast.AST) -> dict[str, set]:
    names = {"out": Anno.LIVE_OUT, "body": Anno.LIVE_BODY, "orelse": Anno.LIVE_ORELSE, "head": Anno.LIVE_HEAD}
    return {k: getanno(node, a) for k, a in names.items() if getanno(node, a) is not None}


# -- scopes ---------------------------------------------------------------------------
def test_assigned_is_the_block_s_own_bindings_not_nested_scopes():
    fn = fn_ast("""
        def f(x):
            a = 1
            b, (c, *d) = x
            import os.path as p, json
            def g():
                inner = 2
            [e for e in x]
            if (w := x):
                del a
    """)
    assert assigned(fn.body) == {"a", "b", "c", "d", "p", "json", "g", "w"}


def test_used_includes_reads_of_nested_scopes_and_no_stores():
    fn = fn_ast("""
        def f(x):
            y = x + z
            h = lambda: free_in_lambda
            return [k for k in ys]
    """)
    assert used(fn.body) == {"x", "z", "free_in_lambda", "k", "ys"}
    assert used(None) == set()
    assert used(fn.body[0].value) == {"x", "z"}


def test_cells_are_locals_a_closure_reads():
    fn = fn_ast("""
        def f(x, unused):
            k = 1
            m = 2
            def g():
                return k + x
            h = lambda: m
            return g
    """)
    assert cell_vars(fn) == {"k", "x", "m"}


def test_local_names_leave_out_global_and_nonlocal_declarations():
    fn = fn_ast("""
        def f(x, *args, flag=True, **kw):
            global counter
            counter = counter + 1
            y = x
            def g():
                nonlocal y
                y = 2
    """)
    assert declared(fn) == {"global": {"counter"}, "nonlocal": set()}
    assert local_names(fn) == {"x", "args", "flag", "kw", "y", "g"}
    inner = compound(fn, gast.FunctionDef, 1)
    assert declared(inner) == {"global": set(), "nonlocal": {"y"}}
    assert local_names(inner) == set()


# -- liveness -------------------------------------------------------------------------
def test_if_liveness_per_block():
    fn = fn_ast("""
        def f(x, c):
            y = 1
            z = 2
            if c:
                y = x + 1
            else:
                w = 3
            return y
    """)
    annotate_liveness(fn)
    assert live(compound(fn, gast.If)) == {"out": {"y"}, "body": {"x"}, "orelse": {"y"}}


def test_while_loop_carries_what_its_test_and_body_read():
    fn = fn_ast("""
        def f(n):
            i = 0
            total = 0
            unused = 5
            while i < n:
                total = total + i
                i = i + 1
            return total
    """)
    annotate_liveness(fn)
    assert live(compound(fn, gast.While)) == {"out": {"total"}, "body": {"total", "i", "n"},
                                               "head": {"total", "i", "n"}}


def test_for_target_is_live_in_the_body_not_at_the_head():
    fn = fn_ast("""
        def f(xs):
            acc = 0
            last = None
            for v in xs:
                acc = acc + v
            return acc
    """)
    annotate_liveness(fn)
    assert live(compound(fn, gast.For)) == {"out": {"acc"}, "body": {"acc", "v"}, "head": {"acc"}}


def test_a_variable_an_except_handler_reads_is_live_all_through_the_try():
    fn = fn_ast("""
        def f(x, c):
            y = 0
            try:
                if c:
                    y = 1
                x = x / 0
            except ZeroDivisionError:
                return y
            return x
    """)
    annotate_liveness(fn)
    assert live(compound(fn, gast.If)) == {"out": {"x", "y", "ZeroDivisionError"}, "body": {"x", "ZeroDivisionError"},
                                            "orelse": {"x", "y", "ZeroDivisionError"}}
    plain = fn_ast("""
        def f(x, c):
            y = 0
            if c:
                y = 1
            x = x / 0
            return x
    """)
    annotate_liveness(plain)
    assert getanno(compound(plain, gast.If), Anno.LIVE_OUT) == {"x"}  # without the handler, y is dead


def test_a_nested_function_keeps_the_variables_it_reads_live():
    fn = fn_ast("""
        def f(x, c):
            k = 1
            if c:
                k = 2
            def g():
                return k
            return g()
    """)
    annotate_liveness(fn)
    assert getanno(compound(fn, gast.If), Anno.LIVE_OUT) == {"k"}


def test_liveness_does_not_annotate_nested_functions():
    fn = fn_ast("""
        def f(x):
            def g(c):
                if c:
                    return 1
                return 2
            return g(x)
    """)
    annotate_liveness(fn)
    assert live(compound(fn, gast.If)) == {}


# -- definedness (on code after the control-flow pass) ------------------------------------
def test_a_local_first_bound_inside_a_block_is_possibly_unbound():
    fn = fn_ast("""
        def f(x, c):
            (y,) = _jn.if_stmt(c, _if, _else, (y,), ('y',), s)
            return y
    """)
    assert possibly_unbound(fn) == {"y"}


def test_bound_before_the_block_or_not_local_is_never_reported():
    fn = fn_ast("""
        def f(x, c):
            y = 0
            (y, x) = _jn.if_stmt(c, _if, _else, (y, x, outer), ('y', 'x', 'outer'), s)
            return y
    """)
    assert possibly_unbound(fn) == set()


def test_each_block_operation_passes_its_variables_at_its_own_position():
    fn = fn_ast("""
        def f(xs):
            (i, total) = _jn.while_stmt(test, body, (i, total), ('i', 'total'), s)
            (acc,) = _jn.for_stmt(xs, None, body, (acc,), ('acc',), s)
            _jn.if_stmt(c, _if, _else, (flag,), ('flag',), s)
            flag = True
    """)
    assert possibly_unbound(fn) == {"i", "total", "acc", "flag"}


def test_a_try_body_binds_nothing_surely_but_a_finally_does():
    fn = fn_ast("""
        def f(x):
            try:
                y = g(x)
                z = 1
            except ValueError:
                pass
            finally:
                z = 2
            (y, z) = _jn.if_stmt(c, _if, _else, (y, z), ('y', 'z'), s)
    """)
    assert possibly_unbound(fn) == {"y"}


def test_with_targets_are_bound_and_nothing_after_a_return_is_scanned():
    fn = fn_ast("""
        def f(x):
            with cm() as m:
                (m,) = _jn.if_stmt(c, _if, _else, (m,), ('m',), s)
            return x
            (late,) = _jn.if_stmt(c, _if, _else, (late,), ('late',), s)
    """)
    assert possibly_unbound(fn) == set()


# -- structural recursion ------------------------------------------------------------------
def test_a_method_recursing_on_parts_of_a_node():
    fn = fn_ast("""
        def encode(self, node):
            if node.left is None:
                return node.value
            return self.encode(node.left) + self.encode(node.right)
    """)
    assert analyze(fn) == StructuralRecursion("encode", "node", 1, 2)


def test_recursion_through_unpacking_and_a_loop_over_children():
    fn = fn_ast("""
        def walk(tree, depth):
            left, right = tree.kids
            total = walk(left, depth + 1)
            for child in right.children:
                total += walk(child, depth)
            return total
    """)
    assert analyze(fn) == StructuralRecursion("walk", "tree", 0, 2)


def test_recursion_on_a_computed_value_or_the_whole_parameter_is_not_structural():
    assert analyze(fn_ast("""
        def fact(n):
            return 1 if n == 0 else n * fact(n - 1)
    """)) is None
    assert analyze(fn_ast("""
        def loop(node):
            return loop(node)
    """)) is None
    assert analyze(fn_ast("""
        def two(a, b):
            return two(a.left, b) + two(a, b.left)
    """)) is None
