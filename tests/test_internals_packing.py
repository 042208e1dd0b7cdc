"""Packing, record by record: a value built while tracing is packed into graph outputs
and a recipe, the graph runs, and the recipe rebuilds the value eager would have made."""
import collections
import dataclasses
import types

import numpy as np
import pytest
import tensorflow as tf

from janus.commit import packing
from janus.commit.effects import ConsumeSeeds, SetAttr
from janus.commit.packing import (
    ArrayCopy, Built, Composite, Constant, DictOf, Formatted, FromState, ListOf, NamedTupleOf, NumberOrTensor, Output,
    Packer, Recipe, Run, SetOf, TupleOf,
)
from janus.errors import ConversionError
from janus.trace.context import TraceContext
from janus.trace.scalars import PyOrTensor, PyScalar
from janus.trace.sources import Arg
from janus.trace.values import UNDEF, DeferredStr, Field

Pair = collections.namedtuple("Pair", "x y")


class Node:
    def __init__(self, *args):
        raise AssertionError("a rebuilt object is not constructed again")


def new_node(**attrs) -> Node:
    node = object.__new__(Node)
    vars(node).update(attrs)
    return node


def traced(make, ctx: TraceContext | None = None) -> tuple[Recipe, list, TraceContext]:
    """Pack what ``make()`` builds inside a graph; run the graph once.  Returns the recipe,
    the graph's outputs and the trace context."""
    ctx = ctx or TraceContext()
    state = {}

    def graph_fn():
        packer = Packer(ctx)
        state["recipe"] = packer.pack(make())
        return packer.tensors

    outputs = tf.function(graph_fn, autograph=False).get_concrete_function()()
    return state["recipe"], list(outputs), ctx


def round_trip(make, a=(), k=None):
    recipe, outputs, _ = traced(make)
    return recipe, recipe.unpack(Run(outputs, a, k or {}))


# -- tensors and numbers ------------------------------------------------------------------
def test_a_graph_tensor_is_an_output():
    recipe, value = round_trip(lambda: tf.constant([1.0, 2.0]) * 2.0)
    assert isinstance(recipe, Output) and (recipe.index, recipe.kind) == (0, None)
    assert isinstance(value, tf.Tensor) and value.numpy().tolist() == [2.0, 4.0]


@pytest.mark.parametrize("kind, tensor, expected", [
    (int, lambda: tf.constant(40, tf.int64) + 2, 42),
    (float, lambda: tf.constant(0.25, tf.float64) * 2.0, 0.5),
    (bool, lambda: tf.constant(3) > 2, True),
])
def test_a_python_number_the_graph_computes_comes_back_as_the_python_type(kind, tensor, expected):
    recipe, value = round_trip(lambda: PyScalar(tensor(), kind))
    assert isinstance(recipe, Output) and recipe.kind is kind
    assert type(value) is kind and value == expected


def test_a_number_or_tensor_comes_back_as_the_run_went():
    def make(is_number):
        return lambda: PyOrTensor(tf.constant(3, tf.int64), int, tf.constant(3.5), tf.constant(is_number))

    recipe, number = round_trip(make(True))
    assert isinstance(recipe, NumberOrTensor) and (recipe.first, recipe.kind) == (0, int)
    assert type(number) is int and number == 3
    _, tensor = round_trip(make(False))
    assert isinstance(tensor, tf.Tensor) and float(tensor) == 3.5


def test_composites_leave_the_graph_as_components_and_are_rebuilt_from_their_spec():
    def make():
        values = tf.constant([1.0, 2.0, 3.0]) + 1.0
        ragged = tf.RaggedTensor.from_row_lengths(values, tf.constant([1, 2], tf.int64))
        sparse = tf.sparse.SparseTensor(tf.constant([[0, 1]], tf.int64), values[:1], tf.constant([2, 2], tf.int64))
        return ragged, sparse

    recipe, (ragged, sparse) = round_trip(make)
    assert isinstance(recipe, TupleOf) and all(isinstance(r, Composite) for r in recipe.items)
    first, second = recipe.items
    assert (first.first, second.first) == (0, first.count) and second.count == 3
    assert isinstance(ragged, tf.RaggedTensor) and ragged.to_list() == [[2.0], [3.0, 4.0]]
    assert isinstance(sparse, tf.SparseTensor) and tf.sparse.to_dense(sparse).numpy().tolist() == [[0.0, 2.0], [0.0, 0.0]]


# -- Python values -----------------------------------------------------------------------------
def test_python_constants_are_the_very_objects():
    fn, var = (lambda v: v), tf.Variable(1.0)
    for constant in (3, "s", None, 2.5, b"x", np.float32(2.0), fn, np, int, var):
        recipe, value = round_trip(lambda: constant)
        assert isinstance(recipe, Constant) and value is constant


def test_containers_are_rebuilt_fresh_at_every_run():
    recipe, outputs, _ = traced(lambda: {"a": [tf.constant(1.0), (2, "b")], "p": Pair(tf.constant(3), 4),
                                         "s": {1, 2}, "fs": frozenset({"x"})})
    assert isinstance(recipe, DictOf) and recipe.keys == ("a", "p", "s", "fs")
    a, p, s, fs = recipe.values
    assert isinstance(a, ListOf) and isinstance(a.items[1], TupleOf) and isinstance(p, NamedTupleOf) and p.cls is Pair
    assert isinstance(s, SetOf) and s.cls is set and isinstance(fs, SetOf) and fs.cls is frozenset
    first, second = recipe.unpack(Run(outputs, (), {})), recipe.unpack(Run(outputs, (), {}))
    assert float(first["a"][0]) == 1.0 and first["a"][1] == (2, "b")
    assert type(first["p"]) is Pair and int(first["p"].x) == 3 and first["p"].y == 4
    assert first["s"] == {1, 2} and first["fs"] == frozenset({"x"})
    assert first["a"] is not second["a"] and first["s"] is not second["s"] and first is not second


def test_an_array_is_copied_at_every_run():
    array = np.arange(3)
    recipe, outputs, _ = traced(lambda: array)
    array[0] = 9  # changing the trace's array later changes nothing
    first = recipe.unpack(Run(outputs, (), {}))
    first[1] = 7
    assert isinstance(recipe, ArrayCopy)
    assert recipe.unpack(Run(outputs, (), {})).tolist() == [0, 1, 2]


def test_an_f_string_is_formatted_after_the_run():
    def make():
        loss = tf.constant(0.123456, tf.float64)
        steps = PyScalar(tf.constant(7, tf.int64), int)
        return DeferredStr(("loss ", Field(loss, -1, ".3f"), " after ", Field(steps, ord("r"), ""), "!"))

    recipe, text = round_trip(make)
    assert isinstance(recipe, Formatted) and len(recipe.fields) == 2
    assert text == "loss 0.123 after 7!"


# -- objects ------------------------------------------------------------------------------------
def test_an_object_of_python_state_is_read_again_at_call_time():
    ctx = TraceContext()
    model = new_node()
    ctx.heap.track(model, Arg(0, "self"))
    recipe, outputs, _ = traced(lambda: model, ctx)
    assert isinstance(recipe, FromState)
    other = new_node()
    assert recipe.unpack(Run(outputs, (other,), {})) is other  # this call's self, not the traced one


def test_an_object_the_trace_built_is_rebuilt_once_per_run():
    ctx = TraceContext()

    def make():
        leaf = ctx.heap.adopt(new_node(value=tf.constant(2.0) * 3.0, tags=["x"]))
        root = ctx.heap.adopt(new_node(left=leaf, right=leaf, depth=1))
        return root, leaf

    recipe, outputs, _ = traced(make, ctx)
    assert isinstance(recipe, TupleOf) and all(isinstance(r, Built) for r in recipe.items)
    root, leaf = recipe.unpack(Run(outputs, (), {}))
    assert type(root) is Node and root.left is leaf and root.right is leaf and root.depth == 1
    assert float(leaf.value) == 6.0 and leaf.tags == ["x"]
    again, _ = recipe.unpack(Run(outputs, (), {}))
    assert again is not root and again.left is not leaf


def test_what_cannot_leave_a_graph_fails_the_conversion():
    ctx = TraceContext()
    with pytest.raises(ConversionError, match="may be unassigned"):
        traced(lambda: [UNDEF], ctx)
    local_cls = type("Local", (), {})
    ctx.heap.created_classes.add(local_cls)
    with pytest.raises(ConversionError, match="class made inside the function"):
        traced(lambda: local_cls(), ctx)
    with pytest.raises(ConversionError, match="holds a Thing object created during the call"):
        traced(lambda: types.new_class("Thing")(), ctx)


# -- the records ------------------------------------------------------------------------------------
def test_records_are_frozen_and_equal_only_to_themselves():
    recipe = Output(0, int)
    with pytest.raises(dataclasses.FrozenInstanceError):
        recipe.index = 1
    assert recipe != Output(0, int) and recipe == recipe
    assert ArrayCopy(np.zeros(2)) != ArrayCopy(np.zeros(2))  # no element-wise == of arrays
    assert packing.unpack(Constant(5), Run([], (), {})) == 5


def test_effects_read_their_recipes():
    ctx = TraceContext()
    packer = Packer(ctx)
    counted = ConsumeSeeds(3, None).pack(ctx, packer)
    assert isinstance(counted.count, Constant)
    assert counted.describe() == "consume 3 op seeds (the random draws, as eager would)"
    with tf.Graph().as_default():
        by_graph = ConsumeSeeds(tf.constant(2), None).pack(ctx, packer)
    assert isinstance(by_graph.count, Output)
    assert by_graph.describe() == "consume the op seeds of the random draws that ran (counted by the graph)"

    target = Arg(0, "self")
    obj = new_node(state=0)
    set_attr = SetAttr(target, "state", [1, (2, None)]).pack(ctx, packer)
    assert isinstance(set_attr.value, ListOf)
    other = new_node(state=0)
    set_attr.commit(Run([], (other,), {}))
    assert other.state == [1, (2, None)] and obj.state == 0
