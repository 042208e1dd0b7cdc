"""Unit tests of janus_profiler: every kind of record on small programs, and the JSON round trip.

Sites are found the way the converter finds them: parse this file, find the node,
``site_of(__file__, node)``.
"""
import ast
import sys
from collections import Counter

import pytest

from janus_profiler import Profiler, ProfileData, Site, TypeInfo, site_of

_TREE = ast.parse(open(__file__, encoding="utf-8").read())
_SRC = open(__file__, encoding="utf-8").read()


def site(fn_name, kind, text=None, nth=0):
    """The site of the ``nth`` node of class ``kind`` in function ``fn_name`` whose source starts with ``text``."""
    fdef = next(n for n in ast.walk(_TREE)
                if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == fn_name)
    hits = [n for n in ast.walk(fdef) if type(n).__name__ == kind
            and (text is None or ast.get_source_segment(_SRC, n).startswith(text))]
    hits.sort(key=lambda n: (n.lineno, n.col_offset))
    return site_of(__file__, hits[nth])


# --- programs under test ---------------------------------------------------------------------
G_SCALE = 3


def branches(a, b, c):
    out = []
    if a > 0:
        out.append(1)
    if not b:
        out.append(2)
    y = "pos" if c else "neg"
    z = a or b
    if a > 0 and b > 0:
        out.append(3)
    return out, y, z


def loops(xs, limit):
    total = 0
    for x in xs:
        if x > limit:
            break
        total += x
    n = 0
    while n < len(xs):
        n += 1
    for i in range(2):
        for j in range(i + 1):
            total += j
    return total


class Acc:
    def __init__(self):
        self.k = 2
        self.items = [10, 20]
        self.table = {"a": 1}

    def add(self, x):
        return x + self.k

    def run(self, x):
        y = self.add(x)
        return y + self.items[1] + self.table["a"] + G_SCALE


def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)


def closure(k):
    def inner(v):
        return v + k
    squares = [inner(i) * i for i in range(k)]
    return sum(squares), (lambda q: q * 2)(k)


def gen(n):
    for i in range(n):
        yield i


def tricky_tests(a, b, c, xs):
    r = []
    if a < b < c:
        r.append(1)
    if a is not None:
        r.append(2)
    ys = [x for x in xs if x > 1]
    if not (a and not b):
        r.append(3)
    while a < 3 or b:
        a += 1
        b = 0
    return r, ys


def failing(x):
    try:
        if x > 1:
            raise ValueError("big")
    except ValueError:
        x = 0
    if x < 0:
        raise KeyError("negative")
    return x


def helper(x):
    return x + 1


def calls_helper(x):
    return helper(x) * 2


class Sneaky:
    def __init__(self):
        self.touched = 0

    @property
    def prop(self):
        self.touched += 1
        return 5

    def __getattr__(self, name):
        self.__dict__["touched"] = self.__dict__.get("touched", 0) + 100
        return 7


def reads_sneaky(s):
    return s.prop + s.dyn


# --- tests -------------------------------------------------------------------------------------------
def test_call_returns_result_and_restores_trace():
    p = Profiler()
    assert p.call(branches, 1, 0, True) == ([1, 2, 3 - 3 + 0][:2], "pos", 1)
    assert sys.gettrace() is None
    assert p.data.calls(branches) == 1


def test_if_outcomes_one_sided_and_both():
    p = Profiler()
    for a in (1, 2, -1):
        p.call(branches, a, 0, True)
    d = p.data
    assert d.branch_outcomes(site("branches", "If", "if a > 0:")) == Counter({True: 2, False: 1})
    assert d.branch_outcomes(site("branches", "If", "if not b")) == Counter({True: 3})
    assert d.is_stable(site("branches", "If", "if not b"))
    assert not d.is_stable(site("branches", "If", "if a > 0:"))


def test_ifexp_and_boolop_short_circuit():
    p = Profiler()
    p.call(branches, 1, 0, True)
    p.call(branches, 0, 5, False)
    d = p.data
    assert d.branch_outcomes(site("branches", "IfExp")) == Counter({True: 1, False: 1})
    # z = a or b: short-circuits when a is truthy
    assert d.branch_outcomes(site("branches", "BoolOp", "a or b")) == Counter({True: 1, False: 1})
    # if a > 0 and b > 0: short-circuits when a > 0 is false (call 2); call 1 evaluates b > 0 (False)
    assert d.branch_outcomes(site("branches", "BoolOp", "a > 0 and")) == Counter({True: 1, False: 1})
    assert d.branch_outcomes(site("branches", "If", "if a > 0 and")) == Counter({False: 2})


def test_loop_trip_histograms_and_break():
    p = Profiler()
    p.call(loops, [1, 2, 3], 10)
    p.call(loops, [1, 20, 3], 10)
    p.call(loops, [], 10)
    d = p.data
    s_for = site("loops", "For", "for x in xs")
    assert d.trip_counts(s_for) == Counter({3: 1, 2: 1, 0: 1})
    assert d.break_count(s_for) == 1
    s_while = site("loops", "While")
    assert d.trip_counts(s_while) == Counter({3: 2, 0: 1})
    assert d.branch_outcomes(s_while) == Counter({True: 6, False: 3})
    # the inner loop runs i + 1 times for i in range(2), in each of the 3 calls
    assert d.trip_counts(site("loops", "For", "for j")) == Counter({1: 3, 2: 3})
    assert d.trip_counts(site("loops", "For", "for i")) == Counter({2: 3})
    assert d.is_stable(site("loops", "For", "for i"))
    assert not d.is_stable(s_for)


def test_callees_methods_and_heap_reads():
    p = Profiler()
    acc = Acc()
    assert p.call(acc.run, 1) == 1 + 2 + 20 + 1 + G_SCALE
    d = p.data
    s_call = site("run", "Call", "self.add")
    assert d.callees(s_call) == Counter({f"{__name__}.Acc.add": 1})
    assert d.callee_objects(s_call) == [Acc.add]
    assert d.recursive_calls(s_call) == 0
    assert d.heap_reads(site("add", "Attribute", "self.k")) == Counter()  # add is not profiled
    assert d.heap_reads(site("run", "Subscript", "self.items[1]")) == Counter({TypeInfo("int", value=20, has_value=True): 1})
    assert d.heap_reads(site("run", "Subscript", 'self.table["a"]')) == Counter({TypeInfo("int", value=1, has_value=True): 1})
    assert d.heap_reads(site("run", "Name", "G_SCALE")) == Counter({TypeInfo("int", value=3, has_value=True): 1})
    [items] = d.heap_reads(site("run", "Attribute", "self.items"))
    assert items.type == "list" and items.shape == (2,)
    args = d.arg_history(acc.run)
    assert args[0]["x"] == TypeInfo("int", value=1, has_value=True)
    assert args[0]["self"].type == f"{__name__}.Acc"


def test_values_false_records_control_flow_but_no_heap_values():
    """Janus's driver profiles with values=False: what the converter reads (callees,
    arguments) is recorded, the report-only heap values and local types are not."""
    p = Profiler(values=False)
    acc = Acc()
    assert p.call(acc.run, 1) == 1 + 2 + 20 + 1 + G_SCALE
    d = p.data
    assert d.callees(site("run", "Call", "self.add")) == Counter({f"{__name__}.Acc.add": 1})
    assert d.heap_reads(site("run", "Name", "G_SCALE")) == Counter()
    assert d.heap_reads(site("run", "Subscript", "self.items[1]")) == Counter()
    assert d.arg_history(acc.run)[0]["x"] == TypeInfo("int", value=1, has_value=True)


def test_recursion_is_flagged():
    p = Profiler()
    assert p.call(fact, 4) == 24
    d = p.data
    s = site("fact", "Call", "fact(n - 1)")
    assert d.callees(s) == Counter({f"{__name__}.fact": 3})
    assert d.recursive_calls(s) == 3
    assert d.calls(fact) == 4
    assert d.branch_outcomes(site("fact", "If")) == Counter({False: 3, True: 1})
    assert d.return_types(fact) == Counter({TypeInfo("int", value=v, has_value=True): 1 for v in (1, 2, 6, 24)})


def test_nested_functions_lambdas_comprehensions_are_profiled():
    p = Profiler()
    assert p.call(closure, 3) == (0 * 0 + 4 * 1 + 5 * 2, 6)
    d = p.data
    inner = [f for f in d.functions.values() if f.qualname == "closure.<locals>.inner"]
    assert inner and inner[0].calls == 3
    assert any(f.qualname.endswith("<lambda>") for f in d.functions.values())
    assert d.trip_counts(site("closure", "ListComp")) == Counter({3: 1})
    assert d.heap_reads(site("inner", "Name", "k")) == Counter({TypeInfo("int", value=3, has_value=True): 3})
    s = site("closure", "Call", "inner(i)")
    assert d.callees(s) == Counter({f"{__name__}.closure.<locals>.inner": 3})


def test_only_chosen_code_is_traced_unless_included():
    p = Profiler()
    p.call(calls_helper, 1)
    assert p.data.calls(helper) == 0
    assert p.data.callees(site("calls_helper", "Call", "helper(x)")) == Counter({f"{__name__}.helper": 1})
    p2 = Profiler(include=lambda code: code.co_name == "helper")
    p2.call(calls_helper, 1)
    assert p2.data.calls(helper) == 1


def test_generators_count_yields_and_keep_loop_state():
    p = Profiler()
    p.add(gen)
    with p:
        assert list(gen(4)) == [0, 1, 2, 3]
    d = p.data
    assert d.calls(gen) == 1
    assert d.function(gen).yields == 4
    assert d.trip_counts(site("gen", "For")) == Counter({4: 1})


def test_exceptions_propagate_unchanged_and_are_recorded():
    p = Profiler()
    assert p.call(failing, 5) == 0
    with pytest.raises(KeyError) as info:
        p.call(failing, -1)
    assert info.value.args == ("negative",)
    assert sys.gettrace() is None
    f = p.data.function(failing)
    assert f.raised == Counter({"KeyError": 1})
    assert f.caught == Counter({"ValueError": 1})
    assert f.calls == 2


def test_heap_reads_never_run_properties_or_getattr():
    s = Sneaky()
    p = Profiler()
    assert p.call(reads_sneaky, s) == 12
    assert s.touched == 1 + 100  # exactly the program's own accesses
    d = p.data
    assert [t.type for t in d.heap_reads(site("reads_sneaky", "Attribute", "s.prop"))] == ["<property, not evaluated>"]
    assert [t.type for t in d.heap_reads(site("reads_sneaky", "Attribute", "s.dyn"))] == ["<dynamic attribute, not evaluated>"]


def test_locals_at_statement_boundaries():
    p = Profiler()
    p.call(loops, [1, 2], 10)
    d = p.data
    lt = d.local_types(site("loops", "AugAssign", "total += x"))
    assert set(lt) == {"total", "x"}
    assert Counter({TypeInfo("int", value=1, has_value=True): 1, TypeInfo("int", value=2, has_value=True): 1}) == lt["x"]


def test_tensor_summaries_record_dtype_and_shape():
    tf = pytest.importorskip("tensorflow")
    import numpy as np

    def f(x, v, a):
        return x * 2

    p = Profiler()
    p.call(f, tf.zeros([4, 8]), tf.Variable(tf.ones([3], tf.int32)), np.zeros((2, 2), np.float64))
    p.call(f, tf.zeros([3, 8]), tf.Variable(tf.ones([3], tf.int32)), np.zeros((2, 2), np.float64))
    hist = p.data.arg_history(f)
    assert hist[0]["x"] == TypeInfo("tf.Tensor", "float32", (4, 8))
    assert hist[1]["x"] == TypeInfo("tf.Tensor", "float32", (3, 8))
    assert hist[0]["v"] == TypeInfo("tf.Variable", "int32", (3,))
    assert hist[0]["a"] == TypeInfo("np.ndarray", "float64", (2, 2))
    assert p.data.return_types(f) == Counter({TypeInfo("tf.Tensor", "float32", (4, 8)): 1,
                                               TypeInfo("tf.Tensor", "float32", (3, 8)): 1})
    assert not p.data.is_stable(f)


def test_small_values_only():
    from janus_profiler.values import summarize
    assert summarize(None) == TypeInfo("NoneType", value=None, has_value=True)
    assert summarize("x" * 100) == TypeInfo("str", shape=(100,))
    assert summarize(True).value is True
    assert summarize((1, "a")).items == (summarize(1), summarize("a"))
    assert summarize(helper) == TypeInfo("function", value=f"{__name__}.helper", has_value=True)


def test_json_round_trip_and_merge():
    p = Profiler()
    for a in (1, -1):
        p.call(branches, a, 0, True)
    p.call(loops, [1, 20], 10)
    p.call(Acc().run, 2)
    p.call(fact, 3)
    d = p.data
    back = ProfileData.from_json(d.to_json())
    assert back == d
    s_if = site("branches", "If", "if a > 0:")
    assert back.branch_outcomes(s_if) == d.branch_outcomes(s_if)
    s_for = site("loops", "For", "for x in xs")
    assert back.trip_counts(s_for) == Counter({2: 1}) and back.break_count(s_for) == 1
    assert back.arg_history(branches) == d.arg_history(branches)
    assert back.recursive_calls(site("fact", "Call", "fact(n - 1)")) == 2
    assert back.callee_objects(site("run", "Call", "self.add")) == []  # live objects are not serialised
    merged = ProfileData.from_json(d.to_json()).merge(back)
    assert merged.branch_outcomes(s_if) == Counter({True: 2, False: 2})
    assert merged.calls(branches) == 4
    assert len(merged.arg_history(branches)) == 4
    with pytest.raises(ValueError):
        ProfileData.from_json('{"functions": []}')


def test_site_of_normalises_filenames_and_kinds():
    import os
    node = ast.parse("if x:\n    pass\n").body[0]
    s = site_of("rel/file.py", node)
    assert s == Site(os.path.abspath("rel/file.py"), 1, 0, 2, 8, "If")
    assert site_of("rel/file.py", node, kind="Other").kind == "Other"


def test_chains_with_an_existing_trace_function():
    seen = []

    def outer_tracer(frame, event, arg):
        if event == "call":
            seen.append(frame.f_code.co_name)
        return None

    sys.settrace(outer_tracer)
    try:
        p = Profiler()
        p.call(calls_helper, 1)
        assert sys.gettrace() is outer_tracer
    finally:
        sys.settrace(None)
    assert "calls_helper" in seen and "helper" in seen
    assert p.data.calls(calls_helper) == 1


def test_nested_profilers():
    outer, inner = Profiler(), Profiler()

    def runs_inner(x):
        return inner.call(helper, x) + 1

    assert outer.call(runs_inner, 1) == 3
    assert sys.gettrace() is None
    assert inner.data.calls(helper) == 1
    assert outer.data.calls(runs_inner) == 1


class CallableModel:
    def __init__(self):
        self.scale = 2

    def __call__(self, x):
        if x > 0:
            return x * self.scale
        return 0


def test_callable_instances_profile_their_call_method():
    p = Profiler()
    m = CallableModel()
    assert p.call(m, 3) == 6
    assert p.data.calls(CallableModel.__call__) == 1
    assert p.data.branch_outcomes(site("CallableModel", "If")) == Counter({True: 1})


def test_call_from_another_thread_runs_unprofiled():
    import threading
    p = Profiler()
    out = []

    def in_thread():
        out.append(p.call(helper, 41))

    def main_side(x):
        t = threading.Thread(target=in_thread)
        t.start()
        t.join()
        return x

    assert p.call(main_side, 1) == 1
    assert out == [42]
    assert p.data.calls(main_side) == 1 and p.data.calls(helper) == 0


def test_chained_compare_none_test_assert_comprehension_if_and_compound_while():
    p = Profiler()
    p.call(tricky_tests, 0, 1, 2, [1, 2, 3])
    p.call(tricky_tests, 2, 1, 2, [0])
    d = p.data
    assert d.branch_outcomes(site("tricky_tests", "If", "if a < b < c")) == Counter({True: 1, False: 1})
    assert d.branch_outcomes(site("tricky_tests", "If", "if a is not None")) == Counter({True: 2})
    assert d.branch_outcomes(site("tricky_tests", "Compare", "x > 1")) == Counter({True: 2, False: 2})
    assert d.trip_counts(site("tricky_tests", "ListComp")) == Counter({3: 1, 1: 1})
    assert d.branch_outcomes(site("tricky_tests", "If", "if not (")) == Counter({True: 2})
    assert d.branch_outcomes(site("tricky_tests", "BoolOp", "a and not b")) == Counter({True: 1, False: 1})
    s_while = site("tricky_tests", "While")
    assert d.branch_outcomes(s_while) == Counter({True: 4, False: 2})
    assert d.trip_counts(s_while) == Counter({3: 1, 1: 1})
    # `a < 3 or b`: short-circuits while a < 3, evaluates b when the loop ends
    assert d.branch_outcomes(site("tricky_tests", "BoolOp", "a < 3 or b")) == Counter({True: 4, False: 2})


def test_assert_statement_outcomes(tmp_path):
    # pytest rewrites asserts in test modules, so the program lives in its own file
    import importlib.util
    path = tmp_path / "prog_assert.py"
    path.write_text("def check(a):\n    assert a >= 0, 'negative'\n    return a\n")
    spec = importlib.util.spec_from_file_location("prog_assert", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    p = Profiler()
    p.call(mod.check, 1)
    with pytest.raises(AssertionError):
        p.call(mod.check, -1)
    node = ast.parse(path.read_text()).body[0].body[0]
    assert p.data.branch_outcomes(site_of(str(path), node)) == Counter({True: 1, False: 1})
    assert p.data.function(mod.check).raised == Counter({"AssertionError": 1})
