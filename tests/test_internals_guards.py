"""Guards and sources, unit by unit: each kind of guard's code and description, a call it
admits and one it refuses; each kind of source's access path, its readable forms, and
the value it reads on a later call."""
import collections
import dataclasses

import numpy as np
import pytest
import tensorflow as tf

from janus.trace import guards as guards_module
from janus.trace.guards import Guard, GuardBuilder, GuardKind, compile_guard
from janus.trace.heap import HeapModel
from janus.trace.sources import Arg, Attr, Cell, ClassAttr, Default, Global, Item, KwArg, Source

Pair = collections.namedtuple("Pair", "x y")


class Model:
    scale = 2.0

    def __init__(self, **attrs):
        vars(self).update(attrs)


class SubModel(Model):
    pass


class Thing:
    pass


def helper():
    return 1


def holds(builder: GuardBuilder, guard: Guard, *a, **k) -> bool:
    """The guard alone, compiled as a cache entry's check is, on a call with ``a`` and ``k``."""
    check, _ = compile_guard([guard], len(a), tuple(k), builder.namespace)
    return check(a, k)


# -- Python values ----------------------------------------------------------------------
def test_constant_guard_is_identity_with_the_singleton():
    b = GuardBuilder()
    g = b.is_constant(Arg(0, "flag"), True)
    assert (g.expr, g.description, g.kind) == ("a[0] is True", "argument flag is True", GuardKind.VALUE)
    assert holds(b, g, True)
    assert not holds(b, g, 1)  # 1 == True, but it is not the object
    n = b.is_constant(KwArg("out"), None)
    assert (n.expr, n.description) == ("k['out'] is None", "argument out is None")
    assert holds(b, n, out=None) and not holds(b, n, out=0)


def test_scalar_equality_guard_pins_type_and_value():
    b = GuardBuilder()
    g = b.equals(Arg(0, "n"), 3)
    assert (g.expr, g.description, g.kind) == ("type(a[0]) is int and a[0] == 3", "argument n == 3", GuardKind.VALUE)
    assert holds(b, g, 3)
    assert not holds(b, g, 4) and not holds(b, g, 3.0) and not holds(b, g, np.int64(3))
    s = b.equals(KwArg("mode"), "sum")
    assert s.expr == "type(k['mode']) is str and k['mode'] == 'sum'" and s.description == "argument mode == 'sum'"
    assert holds(b, s, mode="sum") and not holds(b, s, mode="mean")


def test_an_infinite_float_is_compared_through_the_namespace():
    b = GuardBuilder()
    g = b.equals(Arg(0, "limit"), float("inf"))
    assert g.expr == "type(a[0]) is float and a[0] == _f5"  # `inf` is no Python literal
    assert b.namespace["_f5"] == float("inf") and g.description == "argument limit == inf"
    assert holds(b, g, float("inf")) and not holds(b, g, float("-inf")) and not holds(b, g, 1e308)


def test_sequence_of_scalars_is_compared_with_a_copy():
    b = GuardBuilder()
    opts = [1.0, (2, "x")]
    g = b.equals_sequence(Arg(0, "opts"), opts)
    assert (g.expr, g.description, g.kind) == ("type(a[0]) is list and a[0] == _v5", "argument opts == [1.0, (2, 'x')]",
                                               GuardKind.VALUE)
    opts[0] = 9.0  # the caller's list changing later does not change what the guard compares with
    assert holds(b, g, [1.0, (2, "x")])
    assert not holds(b, g, opts) and not holds(b, g, (1.0, (2, "x")))


@pytest.mark.xfail(strict=True, reason="the frozen copy of a named tuple is a list, so its value guard never holds "
                                       "(the function is retraced until the number is fed; no wrong answer)")
def test_named_tuple_of_scalars_value_guard_holds_on_an_equal_value():
    b = GuardBuilder()
    g = b.equals_sequence(Arg(0, "p"), Pair(1, 2))
    assert g.expr == "type(a[0]) is _t5 and a[0] == _v6"
    assert holds(b, g, Pair(1, 2))


def test_set_guard_pins_the_kind_of_set_and_its_members():
    b = GuardBuilder()
    source = Attr(Arg(0, "self"), "tags")
    g = b.equals_set(source, {"a"})
    assert (g.expr, g.description) == ("type(a[0].__dict__['tags']) is set and a[0].__dict__['tags'] == _v5",
                                       "self.tags == {'a'}")
    assert holds(b, g, Model(tags={"a"}))
    assert not holds(b, g, Model(tags=frozenset({"a"}))) and not holds(b, g, Model(tags={"a", "b"}))


def test_array_guard_compares_dtype_shape_and_elements_with_a_copy():
    b = GuardBuilder()
    g_dict = {"table": np.arange(3)}
    source = Global(b.const(g_dict, "g"), "table")
    g = b.equals_array(source, g_dict["table"])
    assert (g.expr, g.description) == ("_np_equal(_g5['table'], _arr6)", "global table equals the array seen (int64[3])")
    assert holds(b, g)
    g_dict["table"] = np.arange(3)
    assert holds(b, g)  # an equal array
    g_dict["table"][0] = 7
    assert not holds(b, g)
    g_dict["table"] = np.arange(3, dtype=np.float64)
    assert not holds(b, g)
    g_dict["table"] = [0, 1, 2]
    assert not holds(b, g)


# -- types and structure ---------------------------------------------------------------------
def test_type_guard_names_a_user_class_through_the_namespace_and_a_builtin_by_name():
    b = GuardBuilder()
    g = b.type_is(Arg(0, "self"), Model)
    assert (g.expr, g.description, g.kind) == ("type(a[0]) is _t5", "argument self is a Model", GuardKind.TYPE)
    assert b.namespace["_t5"] is Model
    assert holds(b, g, Model()) and not holds(b, g, SubModel())  # the exact class
    lst = b.type_is(Global("_g", "log"), list)
    assert (lst.expr, lst.description) == ("type(_g['log']) is list", "global log is a list")


def test_fed_number_guard_admits_any_value_of_the_type():
    b = GuardBuilder()
    g = b.fed_number(Arg(1, "step"), int)
    assert g.expr == "type(a[1]) is int and -9223372036854775808 <= a[1] < 9223372036854775808"
    assert (g.description, g.kind) == ("argument step is an int (fed to the graph)", GuardKind.TYPE)
    assert holds(b, g, None, 0) and holds(b, g, None, -2 ** 63)
    assert not holds(b, g, None, 2 ** 63) and not holds(b, g, None, True) and not holds(b, g, None, 1.0)
    f = b.fed_number(Arg(0, "lr"), float)
    assert (f.expr, f.description) == ("type(a[0]) is float", "argument lr is a float (fed to the graph)")
    assert holds(b, f, 0.5, 0) and not holds(b, f, 1, 0)


def test_length_guard_pins_the_container_type_and_length():
    b = GuardBuilder()
    g = b.length(Arg(0, "xs"), [object(), object()])
    assert (g.expr, g.description, g.kind) == ("type(a[0]) is list and len(a[0]) == 2", "argument xs is a list of 2",
                                               GuardKind.STRUCTURE)
    assert holds(b, g, ["anything", 2]) and not holds(b, g, [1, 2, 3]) and not holds(b, g, (1, 2))
    named = b.length(Arg(0, "p"), Pair(object(), 1))
    assert (named.expr, named.description) == ("type(a[0]) is _t5 and len(a[0]) == 2", "argument p is a Pair of 2")
    assert holds(b, named, Pair(3, 4)) and not holds(b, named, (3, 4))


def test_dict_guard_pins_keys_in_order():
    b = GuardBuilder()
    g = b.mapping_keys(Attr(Arg(0, "self"), "cfg"), {"depth": 2, "mode": "a"})
    assert g.expr == "type(a[0].__dict__['cfg']) is dict and list(a[0].__dict__['cfg']) == ['depth', 'mode']"
    assert (g.description, g.kind) == ("self.cfg is a dict with keys ['depth', 'mode']", GuardKind.STRUCTURE)
    assert holds(b, g, Model(cfg={"depth": 9, "mode": None}))
    assert not holds(b, g, Model(cfg={"mode": "a", "depth": 2})) and not holds(b, g, Model(cfg={"depth": 2}))


# -- tensors ------------------------------------------------------------------------------
def test_tensor_guard_pins_dtype_and_shape():
    b = GuardBuilder()
    g = b.tensor(Arg(0, "x"), tf.float32, (2, 3))
    assert g.expr == "type(a[0]) is _EagerTensor and a[0].dtype == _dt5 and a[0].shape == (2, 3)"
    assert (g.description, g.kind) == ("argument x is a float32 tensor of shape (2, 3)", GuardKind.TENSOR)
    assert holds(b, g, tf.zeros((2, 3)))
    for other in (tf.zeros((2, 3), tf.float64), tf.zeros((3, 2)), tf.Variable(tf.zeros((2, 3))), np.zeros((2, 3), np.float32)):
        assert not holds(b, g, other), other


def test_relaxed_tensor_guard_admits_any_size_of_a_none_dimension():
    b = GuardBuilder()
    g = b.tensor(Arg(0, "x"), tf.int32, (None, 3))
    assert g.expr == "type(a[0]) is _EagerTensor and a[0].dtype == _dt5 and _shape_ok(a[0].shape, (None, 3))"
    assert g.description == "argument x is a int32 tensor of shape (None, 3)"
    assert holds(b, g, tf.zeros((7, 3), tf.int32)) and holds(b, g, tf.zeros((0, 3), tf.int32))
    assert not holds(b, g, tf.zeros((7, 4), tf.int32)) and not holds(b, g, tf.zeros((7, 3, 1), tf.int32))


def test_tensor_value_guard_pins_dtype_shape_and_elements():
    b = GuardBuilder()
    g = b.equals_tensor(Arg(1, "transitions"), tf.constant([0, 0, 1]))
    assert g.expr == "type(a[1]) is _EagerTensor and a[1].dtype == _dt5 and _eq7(a[1], _arr6)"
    assert (g.description, g.kind) == ("argument transitions equals the tensor seen (int32[3])", GuardKind.VALUE)
    assert holds(b, g, None, tf.constant([0, 0, 1]))
    for other in (tf.constant([0, 1, 1]), tf.constant([0, 0, 1], tf.int64), tf.constant([[0, 0, 1]]),
                  tf.constant([0, 0]), np.array([0, 0, 1], np.int32), tf.Variable([0, 0, 1])):
        assert not holds(b, g, None, other), other
    scalar = b.equals_tensor(Arg(0, "n"), tf.constant(True))
    assert holds(b, scalar, tf.constant(True)) and not holds(b, scalar, tf.constant(False))


def test_composite_guard_fits_the_type_spec():
    b = GuardBuilder()
    rt = tf.ragged.constant([[1.0], [2.0, 3.0]])
    g = b.composite(Arg(0, "rt"), rt, tf.type_spec_from_value(rt))
    assert g.expr == "_fits(a[0], _ts5)" and g.kind is GuardKind.SPEC
    assert g.description.startswith("argument rt is a RaggedTensor of RaggedTensorSpec(")
    assert holds(b, g, tf.ragged.constant([[5.0, 6.0, 7.0], []]))
    assert not holds(b, g, tf.ragged.constant([[1.0], [2.0], [3.0]]))  # three rows
    assert not holds(b, g, tf.ragged.constant([[1], [2, 3]]))  # int32
    assert not holds(b, g, tf.zeros((2, 2)))
    sp = tf.sparse.from_dense(tf.eye(2))
    s = b.composite(KwArg("sp"), sp, tf.type_spec_from_value(sp))
    assert s.description.startswith("argument sp is a SparseTensor of ")
    assert holds(b, s, sp=tf.sparse.from_dense(tf.ones((2, 2)))) and not holds(b, s, sp=tf.sparse.from_dense(tf.eye(3)))


def test_dataset_guard_pins_the_element_spec():
    b = GuardBuilder()
    ds = tf.data.Dataset.range(3)
    g = b.dataset(KwArg("ds"), ds.element_spec)
    assert g.expr == "isinstance(k['ds'], _Dataset) and k['ds'].element_spec == _es5"
    assert g.description == "argument ds is a dataset of TensorSpec(shape=(), dtype=tf.int64, name=None)"
    assert holds(b, g, ds=tf.data.Dataset.range(10).map(lambda v: v * 2))
    assert not holds(b, g, ds=tf.data.Dataset.range(3).batch(2)) and not holds(b, g, ds=[0, 1, 2])


# -- identity, aliasing, absence ----------------------------------------------------------------
def test_identity_guards_describe_functions_by_name_and_objects_by_type():
    b = GuardBuilder()
    g_dict = {"helper": helper}
    gname = b.const(g_dict, "g")
    g = b.identity(Global(gname, "helper"), helper, named=True)
    assert (g.expr, g.kind) == ("_g5['helper'] is _o6", GuardKind.IDENTITY)
    assert g.description == f"global helper is {__name__}.helper"
    assert holds(b, g)
    g_dict["helper"] = lambda: 1
    assert not holds(b, g)
    thing = Thing()
    t = b.identity(Attr(Arg(0, "self"), "thing"), thing)
    assert (t.expr, t.description) == ("a[0].__dict__['thing'] is _o7", "self.thing is the same Thing object")
    assert holds(b, t, Model(thing=thing)) and not holds(b, t, Model(thing=Thing()))


def test_alias_guards():
    b = GuardBuilder()
    x, y = Arg(0, "x"), Arg(1, "y")
    same, other = b.same_object(y, x), b.distinct(y, x)
    assert (same.expr, same.description, same.kind) == ("a[1] is a[0]", "argument y is the same object as x", GuardKind.ALIAS)
    assert (other.expr, other.description) == ("a[1] is not a[0]", "argument y is not the same object as x")
    shared, fresh = [], []
    assert holds(b, same, shared, shared) and not holds(b, same, shared, fresh)
    assert holds(b, other, shared, fresh) and not holds(b, other, shared, shared)


def test_absence_guards():
    b = GuardBuilder()
    g_dict = {}
    g = b.builtin_not_shadowed(b.const(g_dict, "g"), "range")
    assert (g.expr, g.description, g.kind, g.source) == ("'range' not in _g5", "global range is not rebound (builtin range)",
                                                         GuardKind.ABSENT, None)
    assert holds(b, g)
    g_dict["range"] = lambda n: [n]
    assert not holds(b, g)
    a = b.not_on_instance(Arg(0, "self"), "scale")
    assert (a.expr, a.description) == ("'scale' not in a[0].__dict__", "self.scale is not set on the instance")
    assert holds(b, a, Model()) and not holds(b, a, Model(scale=3.0))


def test_forest_guard_asks_the_plan():
    @dataclasses.dataclass
    class Plan:
        answer: bool
        root_labels: tuple = ("tree",)
        cases: tuple = ("leaf", "node")
        label: str = "encode"
        levels: int = 3

        def fits(self, a, k):
            return self.answer and a[0] == "root"

    b = GuardBuilder()
    plan = Plan(True)
    g = b.forest(plan)
    assert (g.expr, g.kind) == ("_forest5.fits(a, k)", GuardKind.FOREST)
    assert g.description == "tree fit the 2 node cases of encode traced (below 3 levels)"
    assert b.const(plan, "forest") == "_forest5"  # the name the recursion feeds its inputs under
    assert holds(b, g, "root") and not holds(b, g, "leaf")
    plan.answer = False
    assert not holds(b, g, "root")


# -- the recorded set, and the compiled check -----------------------------------------------------
def test_a_guard_is_recorded_once_and_constants_once():
    b = GuardBuilder()
    first = b.type_is(Arg(0, "self"), Model)
    again = b.type_is(Arg(0, "self"), Model)
    assert again is first and b.guards == [first]
    assert b.const(Model, "t") == "_t5" and len(b.namespace) == 6
    b.add("a[0] is not None", "self is given", GuardKind.VALUE)  # the generic form the kind methods write through
    assert [g.expr for g in b.guards] == ["type(a[0]) is _t5", "a[0] is not None"]


def test_subsume_type_drops_a_root_s_type_guard_unless_read_through():
    b = GuardBuilder()
    root = Arg(0, "tree")
    b.type_is(root, Model)
    b.subsume_type(root)
    assert b.guards == []
    b.type_is(root, Model)  # recorded again once dropped
    b.equals(Attr(root, "depth"), 2)
    b.subsume_type(root)
    assert [g.kind for g in b.guards] == [GuardKind.TYPE, GuardKind.VALUE]


def test_compiled_check_pins_arity_and_keywords_and_a_raising_guard_fails():
    b = GuardBuilder()
    g = b.equals(Attr(Arg(0, "self"), "depth"), 2)
    check, source = compile_guard([g], 1, ("mode",), b.namespace)
    assert "len(a) == 1" in source and "k.keys() == {'mode'}" in source
    assert check((Model(depth=2),), {"mode": 1})
    assert not check((Model(depth=2),), {})
    assert not check((Model(depth=2), 0), {"mode": 1})
    assert not check((Model(),), {"mode": 1})  # KeyError inside the guard: it fails, never raises
    check0, source0 = compile_guard([], 0, (), b.namespace)
    assert "not k" in source0 and check0((), {}) and not check0((), {"x": 1})


def test_the_first_failing_guard_is_found_in_recording_order():
    b = GuardBuilder()
    b.type_is(Arg(0, "self"), Model)
    b.equals(Attr(Arg(0, "self"), "depth"), 2)
    b.equals(Attr(Arg(0, "self"), "mode"), "a")
    call = ((Model(depth=3, mode="b"),), {})
    failing = [g for g in b.guards if not holds(b, g, *call[0])]
    assert [g.description for g in failing] == ["self.depth == 2", "self.mode == 'a'"]


def test_heap_reads_record_guards_through_the_builder():
    b = GuardBuilder()
    heap = HeapModel(b)
    self_source = Arg(0, "self")
    obj = Model(cfg={"depth": 2}, flag=None, items=[1, 2])
    assert heap.read(obj, self_source) is obj
    cfg = heap.read(obj.cfg, Attr(self_source, "cfg"))
    assert cfg == {"depth": 2} and cfg is not obj.cfg  # a shadow copy converted code may change
    heap.read(obj.flag, Attr(self_source, "flag"))
    heap.read(obj.items, Attr(self_source, "items"))
    heap.read(obj.items, Global("_g", "ITEMS"))  # the same list reached another way
    assert [(g.kind, g.description) for g in b.guards] == [
        (GuardKind.TYPE, "argument self is a Model"),
        (GuardKind.STRUCTURE, "self.cfg is a dict with keys ['depth']"),
        (GuardKind.VALUE, "self.cfg['depth'] == 2"),
        (GuardKind.VALUE, "self.flag is None"),
        (GuardKind.VALUE, "self.items == [1, 2]"),
        (GuardKind.ALIAS, "global ITEMS is the same object as self.items"),
    ]


def test_two_list_arguments_are_guarded_distinct():
    b = GuardBuilder()
    heap = HeapModel(b)
    heap.read([object()], Arg(0, "xs"))
    heap.read([object()], Arg(1, "ys"))
    assert [g.expr for g in b.guards if g.kind is GuardKind.ALIAS] == ["a[1] is not a[0]"]


# -- sources --------------------------------------------------------------------------------------
def read(builder: GuardBuilder, source: Source, *a, **k):
    """What ``source`` reads on a later call with ``a`` and ``k``."""
    return builder.getter(source)(a, k)


def test_argument_sources():
    b = GuardBuilder()
    x, anonymous, mode = Arg(1, "x"), Arg(2), KwArg("mode")
    assert (x.expr, x.label, x.what, str(x)) == ("a[1]", "x", "argument x", "a[1]")
    assert (anonymous.label, anonymous.what) == ("argument 2", "argument 2")
    assert (mode.expr, mode.label, mode.what) == ("k['mode']", "mode", "argument mode")
    assert read(b, x, "self", 5) == 5 and read(b, mode, mode="sum") == "sum"
    assert x.is_argument and mode.is_argument
    assert Arg(1, "x") == Arg(1, "renamed") and len({Arg(1, "x"), Arg(1, "renamed")}) == 1  # the name is a label


def test_item_and_attribute_sources_chain_from_their_parent():
    b = GuardBuilder()
    item = Arg(0, "xs").item(1)
    key = KwArg("cfg").item("depth")
    attr = Arg(0, "self").attr("state")
    assert (item, item.expr, item.label, item.what) == (Item(Arg(0), 1), "a[0][1]", "xs[1]", "argument xs[1]")
    assert (key.expr, key.label) == ("k['cfg']['depth']", "cfg['depth']")
    assert (attr, attr.expr, attr.label, attr.what) == (Attr(Arg(0), "state"), "a[0].__dict__['state']", "self.state",
                                                         "self.state")
    assert item.is_argument and key.is_argument and not attr.is_argument  # state reached from an argument
    assert read(b, item, ["p", "q"]) == "q" and read(b, key, cfg={"depth": 4}) == 4
    assert read(b, attr, Model(state=7)) == 7
    with pytest.raises(KeyError):
        read(b, Arg(0).attr("scale"), Model())  # an attribute source reads the instance's own dict only


def test_global_cell_class_attribute_and_default_sources_read_through_the_namespace():
    b = GuardBuilder()
    module = {"LR": 0.1}
    glob = Global(b.const(module, "g"), "LR")
    assert (glob.expr, glob.label, glob.what) == ("_g5['LR']", "LR", "global LR")
    assert read(b, glob) == 0.1
    module["LR"] = 0.2
    assert read(b, glob) == 0.2 and not glob.is_argument

    def outer():
        k = 1

        def inner():
            return k

        def rebind(v):
            nonlocal k
            k = v

        return inner, rebind

    inner, rebind = outer()
    cname = b.const(inner.__closure__[0], "c")
    cell = Cell(cname, "k")
    assert (cell.expr, cell.label, cell.what) == (f"{cname}.cell_contents", "k", "closure variable k")
    rebind(5)
    assert read(b, cell) == 5

    tname = b.const(Model, "t")
    cls_attr = ClassAttr(tname, "Model", "scale")
    assert (cls_attr.expr, cls_attr.label, cls_attr.what) == (f"{tname}.__dict__['scale']", "Model.scale", "Model.scale")
    assert read(b, cls_attr) == 2.0

    def fn(x, scale=3.0, *, mode="sum"):
        return x

    fname = b.const(fn, "fn")
    positional, keyword = Default(fname, "scale", 0), Default(fname, "mode")
    assert (positional.expr, positional.label, positional.what) == (f"{fname}.__defaults__[0]", "scale", "default of scale")
    assert keyword.expr == f"{fname}.__kwdefaults__['mode']"
    assert read(b, positional) == 3.0 and read(b, keyword) == "sum"


def test_guard_namespace_base_holds_the_helpers_guard_code_calls():
    base = guards_module.guard_namespace_base()
    assert set(base) == {"_EagerTensor", "_Dataset", "_fits", "_np_equal", "_shape_ok"}
    assert GuardBuilder().namespace.keys() == base.keys()
