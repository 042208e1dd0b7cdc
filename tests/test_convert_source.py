"""The converter's source: only the text the running code was compiled from is converted
(issue #24 item 6), and parsing and compiling are safe from several threads at once
(item 10)."""
import functools
import gc
import importlib.machinery
import importlib.util
import os
import sys
import textwrap
import threading
import time

import tensorflow as tf

import janus
from janus.convert import pipeline, support

from harness import assert_same


def _import_from(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module, path


def _edit(path, old, new):
    """Rewrite the file with ``old`` replaced, same line count, mtime clearly later."""
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))
    st = os.stat(path)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**10))


STALE = """
import tensorflow as tf


def scale(x):
    if tf.reduce_sum(x) > 0:
        return x * 2.0
    return x - 1.0


class Model:
    def __init__(self):
        self.w = tf.Variable(3.0)

    def step(self, x):
        y = x * self.w + 2.0
        self.w.assign_add(1.0)
        return y
"""


def test_function_edited_after_import_runs_the_loaded_code(tmp_path):
    mod, path = _import_from(tmp_path, "janus_stale_fn", STALE)
    _edit(path, "x * 2.0", "x * 7.0")
    f = janus.function(mod.scale)
    x = tf.constant([1.0, 2.0])
    for i in range(8):
        assert_same(mod.scale(x + i), f(x + i), f"call {i}")
        assert_same(mod.scale(-x - i), f(-x - i), f"call {i} (other branch)")
    assert janus.stats(f)["graph_calls"] == 0, \
        "the edited file is not the running code: Janus never converts it, every call runs eagerly"
    text = str(janus.explain(f))
    assert "is not the source of the code that runs" in text, text
    assert "janus_stale_fn.py:5" in text, text


def test_method_edited_after_import_runs_the_loaded_code(tmp_path):
    mod, path = _import_from(tmp_path, "janus_stale_method", STALE)
    _edit(path, "x * self.w + 2.0", "x * self.w + 5.0")
    eager, jan = mod.Model(), mod.Model()
    step = janus.function(mod.Model.step)
    for i in range(8):
        x = tf.constant([float(i), 1.0])
        assert_same(eager.step(x), step(jan, x), f"call {i}")
        assert_same(eager.w, jan.w, f"state after call {i}")
    assert "is not the source of the code that runs" in str(janus.explain(step))


class _HookLoader(importlib.machinery.SourceFileLoader):
    """An import hook's loader (as pytest's assertion rewriting is): its code may differ
    from the text, so only the outline (lines, numbers) is compared."""


def test_edited_function_of_an_import_hooks_module_is_not_converted(tmp_path):
    path = tmp_path / "janus_stale_hooked.py"
    path.write_text(textwrap.dedent(STALE))
    loader = _HookLoader("janus_stale_hooked", str(path))
    spec = importlib.util.spec_from_file_location("janus_stale_hooked", path, loader=loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    assert support.unsupported_reason(mod.scale) is None  # unedited: converts
    _edit(path, "x * 2.0", "x * 7.0")
    reason = support.unsupported_reason(mod.scale)
    assert reason is not None and "is not the source of the code that runs" in reason


def test_unedited_function_still_converts(tmp_path):
    mod, _ = _import_from(tmp_path, "janus_fresh_fn", STALE)
    f = janus.function(mod.scale)
    x = tf.constant([1.0, 2.0])
    for i in range(6):
        assert_same(mod.scale(x + i), f(x + i), f"call {i}")
    assert janus.stats(f)["graph_calls"] >= 2, \
        f"unedited: after the 3 default profiled calls, calls 4-6 may run the graph; at least 2 do: {janus.stats(f)}"


def test_wraps_wrapper_is_not_converted_from_the_wrapped_source():
    """``inspect`` follows ``__wrapped__``: the wrapper's code is not the wrapped text's."""
    def loud(fn):
        @functools.wraps(fn)
        def wrapper(x):
            return fn(x) + 100.0
        return wrapper

    @loud
    def f(x):
        return x * 2.0

    g = janus.function(f)
    for i in range(6):
        x = tf.constant([float(i)])
        assert_same(f(x), g(x), f"call {i}")
    assert support.unsupported_reason(f) is not None


def test_nested_scopes_and_mangled_names_match_their_code():
    """Closures, methods (``super()``, private names), lambdas in an indented def: the check
    recreates their scopes, so they still convert."""
    k = 3.0

    class Base:
        def out(self, x):
            return x

    class Leaf(Base):
        __private = 2.0

        def out(self, x):
            g = lambda v: v * k + self.__private  # noqa: E731
            return super().out(g(x))

        def plain(self, x):
            g = lambda v: v * k  # noqa: E731
            return super().out(g(x)) + 1.0

    for fn in (Leaf.out, Leaf.plain, Base.out):
        assert support.unsupported_reason(fn) is None, fn
        pipeline.convert_source(fn)
    eager, jan = Leaf().plain, janus.function(Leaf().plain)
    for i in range(5):
        x = tf.constant([float(i)])
        assert_same(eager(x), jan(x), f"call {i}")
    assert janus.stats(jan)["graph_calls"] >= 1, \
        f"the check recreates the scopes, so it converts: a graph runs after the 3 profiled calls: {janus.stats(jan)}"


def test_a_lambda_returned_by_its_line_converts():
    """``return (lambda x: ...), other``: the lambda's line is a return statement, which
    compiles only inside a def (it failed as "'return' outside function" when the lambda had
    no free variable to give its scope a def)."""
    def make():
        return (lambda x: x * 2.0 + 1.0), None

    class Maker:
        def make(self):
            return lambda x: x - 1.0

    for fn in (make()[0], Maker().make()):
        assert support.unsupported_reason(fn) is None, fn
        jan = janus.function(fn)
        for i in range(5):
            x = tf.constant([float(i)])
            assert_same(fn(x), jan(x), f"call {i}")
        assert janus.stats(jan)["graph_calls"] >= 2, (
            "the lambda converts: of its 5 calls, the ones after the 3 profiled ones run the graph: "
            f"{janus.explain(jan)}"
        )


def test_multiline_string_in_an_indented_def_keeps_its_indentation():
    """The source is parsed with its own indentation, not dedented: a string literal's
    continuation lines are the program's text (the dedented parse changed them)."""
    class Printer:
        def show(self, x):
            text = """first
            second"""
            print(text)
            return x * 2.0

    eager, jan = Printer().show, janus.function(Printer().show)
    for i in range(5):
        x = tf.constant([float(i)])
        assert_same(eager(x), jan(x), f"call {i}")
    assert "'first\\n            second'" in janus.explain(jan).code
    assert janus.stats(jan)["graph_calls"] >= 1, \
        f"it converts: a graph runs after the 3 default profiled calls: {janus.stats(jan)}"


# ---------------------------------------------------------------- item 10: threads
N_THREADS, PER_THREAD = 8, 25


def _many_functions(tmp_path, name, n):
    src = "".join(textwrap.dedent(f"""
        def f{i}(x, y):
            total = 0
            for k in range(3):
                if x > {i}:
                    total = total + (x * {i} + y) / (k + 1)
                else:
                    while y < {i}:
                        y = y + [1, 2, {{'a': (x, y, [k, {i}])}}][0]
            return total, [a + b for a in range(2) for b in range({i % 5})]
        """) for i in range(n))
    mod, _ = _import_from(tmp_path, name, src)
    return [getattr(mod, f"f{i}") for i in range(n)]


class _Litter:
    """Cyclic garbage whose finalizer yields the GIL: a collection inside one thread's
    parse hands the interpreter to another thread (as TensorFlow's objects' finalizers do)."""

    def __init__(self):
        self.me = self

    def __del__(self):
        time.sleep(0)
        _Litter()


def test_concurrent_conversions_raise_nothing(tmp_path):
    threshold = gc.get_threshold()
    errors = []

    def deep(n, f):
        return f() if n == 0 else deep(n - 1, f)

    def work(t, fns, barrier):
        barrier.wait()
        for j in range(PER_THREAD):
            fn = fns[t * PER_THREAD + j]
            try:  # threads at different stack depths: the depth the parser saves differs
                deep(5 * t, lambda: pipeline.convert_source(fn))
            except Exception as e:  # noqa: BLE001 - any exception is the failure
                errors.append(f"{type(e).__name__}: {e}")

    try:
        _Litter()
        gc.set_threshold(10, 1, 1)
        for round_ in range(3):
            fns = _many_functions(tmp_path, f"janus_many_{round_}", N_THREADS * PER_THREAD)
            barrier = threading.Barrier(N_THREADS)
            threads = [threading.Thread(target=work, args=(t, fns, barrier)) for t in range(N_THREADS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
    finally:
        gc.set_threshold(*threshold)
        _Litter.__del__ = lambda self: None
        gc.collect()
    assert not errors, errors[:3]


def test_the_support_check_returns_a_record_of_what_it_refuses():
    """``support.unsupported`` says what it refuses as a record (issue #41): the construct's
    node type, its line, whether a graph break can leave it to Python, and the coded reason;
    no caller finds the construct again from the reason's words."""
    import gast

    from janus.reporting.codes import Code

    def with_class(x):
        y = x * 2.0
        class Box:  # noqa: B903
            pass
        return y

    def generator(x):
        yield x

    def opens(path):
        return open(path)  # noqa: SIM115

    def plain(x):
        return x + 1

    first = with_class.__code__.co_firstlineno
    found = support.unsupported(with_class)
    assert (found.node_type, found.line, found.statement) == (gast.ClassDef, first + 2, True), found
    assert found.reason.code is Code.STATEMENT, found
    found = support.unsupported(generator)
    assert (found.node_type, found.line, found.statement) == (gast.Yield, None, False), found
    found = support.unsupported(opens)
    assert (found.node_type, found.line, found.statement) == (gast.Call, opens.__code__.co_firstlineno + 1, True)
    assert found.reason.code is Code.BUILTIN and "open()" in found.reason, found
    assert support.unsupported(plain) is None
