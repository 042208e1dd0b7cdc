"""XLA clusters in Janus graphs, against eager: assumptions that fail still abort the run
before any state changes (all-or-nothing), with XLA on and with XLA chosen by measuring.

XLA compiles only the pure part of a graph that runs before the first state write
(``janus.trace.xla``); its fused kernels round differently from eager's (``tanh`` most),
so results are compared at rtol 1e-4 with XLA on — a state write that happened on an
aborted run would be off by a whole update.  Chosen by measurement, XLA must give the
plain graph's bits: those tests compare with tolerance 0.
"""
import dataclasses

import pytest
import numpy as np
import tensorflow as tf

import janus
from janus import _tf_private, config
from janus.trace import xla as xla_marks
from harness import check, check_seeded

RTOL = 1e-4


def rnd(shape, seed, scale=1.0, shift=0.0):
    return tf.constant((np.random.RandomState(seed).randn(*shape) * scale + shift).astype(np.float32))


def with_xla(jit, jit_compile):
    """The harness's Janus decorator with this ``jit_compile`` (the eager run's is left as is)."""
    return janus.function(jit_compile=jit_compile) if jit is janus.function else jit


def model_factory(jit_compile, size=48):
    """A training step whose loss scale and update direction depend on tensor conditions:
    the profile sees small positive batches only, so the graph speculates on both branches
    (two assertions)."""
    def factory(jit):
        jit = with_xla(jit, jit_compile)

        class Model:
            def __init__(self):
                self.w = tf.Variable(rnd([size, size], 0, 0.2))
                self.steps = 0
                self.history = []

            def step(self, x):
                if tf.reduce_max(tf.abs(x)) < 5.0:
                    scale = 1.0
                else:
                    scale = 0.25
                with tf.GradientTape() as tape:
                    h = x
                    for _ in range(4):
                        h = tf.tanh(tf.matmul(h, self.w))
                    loss = scale * tf.reduce_mean(h * h)
                grad = tape.gradient(loss, self.w)
                if tf.reduce_mean(x) > 0:
                    self.w.assign_sub(0.5 * grad)
                else:
                    self.w.assign_add(0.5 * grad)
                self.steps += 1
                self.history.append(loss)
                return loss

        m = Model()
        m.step = jit(m.step)
        return type("P", (), {"fn": staticmethod(m.step), "m": m,
                              "state": staticmethod(lambda: {"w": m.w, "steps": m.steps, "history": list(m.history)})})
    return factory


def batches(signs, size=48):
    """One batch per sign: 1 small positive, -1 small negative, 2 positive with a large value."""
    out = []
    for i, s in enumerate(signs):
        x = rnd([8, size], i, 0.5, 1.0 if s > 0 else -1.0)
        out.append((x * tf.constant([[1.0]] * 7 + [[12.0]]) if s == 2 else x,))
    return out


def _record(seen: list, p) -> None:
    """Janus's explanation of ``p.fn`` (the Janus run of a harness call only)."""
    if hasattr(p.fn, "__janus_function__"):
        seen.append(str(janus.explain(p.fn)))


def test_xla_on_keeps_a_failed_speculation_all_or_nothing():
    seen = []

    def last(p):
        out = p.fn(*batches([1], 48)[0])
        _record(seen, p)
        return out

    signs = [1] * 7 + [-1] + [1] * 5 + [-1, 1, -1]
    total = check(model_factory(True), batches(signs) + [last], rtol=RTOL, atol=1e-6, min_graph_calls=10)
    assert total["assertion_failures"] >= 1 and total["assumptions_failed"] >= 1, total
    assert total["xla_graphs"] >= 1, total
    assert "XLA: on (jit_compile=True):" in seen[-1] and "ops in XLA clusters" in seen[-1], seen[-1]


def test_xla_not_tried_where_it_would_round_differently(monkeypatch):
    monkeypatch.setattr(config, "LIMITS", dataclasses.replace(config.LIMITS, xla_min_run_ms=0.0))
    seen = []

    def probe(p):
        out = p.fn(*batches([1], 48)[0])
        _record(seen, p)
        return out

    total = check(model_factory(None), batches([1] * 8) + [probe], rtol=0, atol=0, min_graph_calls=4)
    assert total["xla_graphs"] == 0, total
    assert "XLA: not chosen: not tried: XLA rounds Mean, Mul+Add, Tanh, TanhGrad differently" in seen[0], seen[0]


def test_xla_measured_keeps_eager_bits_with_a_failed_speculation(monkeypatch):
    """By measurement, XLA must give the plain graph's bits: with the prediction of
    rounding turned off, the tanh network is tried, its bits differ, the plain graph stays,
    and every result and state is eager's exactly."""
    # try it however fast this machine is
    monkeypatch.setattr(config, "LIMITS", dataclasses.replace(config.LIMITS, xla_min_run_ms=0.0))
    monkeypatch.setattr(xla_marks, "rounds_differently", lambda *_: [])
    seen = []

    def probe(p):
        out = p.fn(*batches([1], 64)[0])
        _record(seen, p)
        return out

    # 3 profiled calls, a reconversion (self.steps fed), a first untimed run, 3 timed plain
    # runs, then calls that run both graphs; the first disagreement ends the trial.
    calls = batches([1] * 12, 64) + [probe] + batches([1, -1, 1, 1, 2, 1], 64)
    total = check(model_factory(None, 64), calls, rtol=0, atol=0, min_graph_calls=10)
    assert total["assertion_failures"] >= 1 and total["assumptions_failed"] >= 1, total
    assert total["xla_graphs"] == 0, total
    text = seen[0]
    assert "XLA: not chosen: its results differed from the plain graph's in the last bits" in text, text


def exact_factory(jit_compile):
    """Ops XLA computes with eager's bits here (a matmul, which XLA hands to Eigen as eager
    does, relu, an add; not ``x * 3.0 + 1.0``, which XLA fuses into one rounding); a
    speculated branch and a variable update."""
    def factory(jit):
        jit = with_xla(jit, jit_compile)

        class Scaler:
            def __init__(self):
                self.v = tf.Variable(tf.zeros([256, 256]))
                self.w = tf.Variable(rnd([256, 256], 7))
                self.calls = 0

            def step(self, x):
                z = tf.nn.relu(tf.matmul(x, self.w)) + 1.0
                if tf.reduce_min(x) > -100.0:
                    self.v.assign(z + self.v)
                self.calls += 1
                return z

        s = Scaler()
        return type("P", (), {"fn": staticmethod(jit(s.step)),
                              "state": staticmethod(lambda: {"v": s.v, "calls": s.calls})})
    return factory


def test_xla_measured_chosen_when_bits_agree_then_speculation_fails(monkeypatch):
    # keep XLA whenever its bits agree: the path under test
    monkeypatch.setattr(config, "LIMITS", dataclasses.replace(config.LIMITS, xla_min_run_ms=0.0, xla_min_gain=-1e9))
    seen = []

    def probe(p):
        out = p.fn(rnd([256, 256], 99))
        _record(seen, p)
        return out

    xs = [(rnd([256, 256], i),) for i in range(16)]
    calls = xs + [probe, (rnd([256, 256], 50, 1.0, -500.0),)] + xs[:4]
    total = check(exact_factory(None), calls, rtol=0, atol=0, min_graph_calls=12)
    assert total["assumptions_failed"] == 1, total
    text = seen[0]
    assert "XLA: chosen by measurement: " in text and "same results bit for bit" in text, text
    assert "medians over 5 calls running both" in text, text


def test_speculation_failing_while_xla_is_measured(monkeypatch):
    monkeypatch.setattr(config, "LIMITS", dataclasses.replace(config.LIMITS, xla_min_run_ms=0.0, xla_min_gain=-1e9))
    # Conversions at calls 3 and 5 (self.calls becomes fed), timed plain runs 6-8, then
    # every call runs both graphs; the speculation fails on call 10 (the plain run aborts
    # first: nothing written, eager re-runs) and the rebuilt graph's trial starts again.
    xs = [(rnd([256, 256], i),) for i in range(24)]
    xs[10] = (rnd([256, 256], 10, 1.0, -500.0),)
    total = check(exact_factory(None), xs, rtol=0, atol=0, min_graph_calls=14)
    assert total["assumptions_failed"] == 1, total


def test_xla_on_leaves_random_draws_to_eager_kernels():
    """Draws stay outside the XLA clusters: with a seed, the noise is eager's bitwise."""
    def factory(jit):
        jit = with_xla(jit, True)

        class Noisy:
            def __init__(self):
                self.v = tf.Variable(tf.zeros([4, 16]))

            def step(self, x):
                noise = tf.random.normal([4, 16])
                self.v.assign(x + noise)
                return tf.reduce_max(x * 2.0 + noise)

        n = Noisy()
        return type("P", (), {"fn": staticmethod(jit(n.step)), "state": staticmethod(lambda: {"v": n.v})})

    xs = [(rnd([4, 16], i),) for i in range(8)]
    total = check_seeded(factory, xs, seed=11, min_graph_calls=4)
    assert total["xla_graphs"] == 1, total


def test_xla_off_and_bad_settings(monkeypatch):
    seen = []

    def probe(p):
        out = p.fn(*batches([1])[0])
        _record(seen, p)
        return out

    check(model_factory(False), batches([1] * 5) + [probe], min_graph_calls=2)
    assert "XLA: off (jit_compile=False)" in seen[0], seen[0]
    with pytest.raises(TypeError, match="jit_compile must be True, False or None"):
        janus.function(lambda x: x, jit_compile="yes")
    monkeypatch.setenv("JANUS_JIT_COMPILE", "maybe")
    with pytest.raises(ValueError, match="JANUS_JIT_COMPILE must be 0, 1 or auto"):
        config.jit_compile()
    monkeypatch.setenv("JANUS_JIT_COMPILE", "1")
    assert janus.function(lambda x: x).options.xla_mode is True


def test_integer_division_is_compiled_only_by_constants_without_zeros():
    """Eager raises on an integer division by zero; XLA gives some number: only a constant
    divisor without zeros may go into a cluster."""
    graph = tf.Graph()
    with graph.as_default():
        a = tf.compat.v1.placeholder(tf.int32, [3])
        by_three = tf.math.floormod(a, tf.constant(3))
        with_zero = tf.math.floormod(a, tf.constant([1, 0, 2]))
        computed = tf.math.floordiv(a, a)
        floats = tf.compat.v1.placeholder(tf.float32, [3]) / tf.compat.v1.placeholder(tf.float32, [3])
    assert xla_marks.compilable(by_three.op) and xla_marks.compilable(floats.op)
    assert not xla_marks.compilable(with_zero.op) and not xla_marks.compilable(computed.op)


def test_operands_compiled_into_the_program_must_not_change_between_runs():
    """A cluster is compiled again for every new value of an operand XLA needs at compile
    time (a reshape's shape, a ``ConcatOffset``'s shapes): a static shape is not enough, the
    value must be the same on every run.  The tree graphs' ``ConcatOffset`` of a level's
    shapes (its node count) compiled again for every batch of trees."""
    graph = tf.Graph()
    with graph.as_default():
        level = tf.compat.v1.placeholder(tf.float32, [None, 4])  # as many rows as the call's nodes
        fixed = tf.compat.v1.placeholder(tf.float32, [3, 4])
        start = tf.compat.v1.placeholder(tf.int32, [])
        per_call = tf.raw_ops.ConcatOffset(concat_dim=0, shape=[tf.shape(level), tf.shape(level)])
        constant = tf.raw_ops.ConcatOffset(concat_dim=0, shape=[tf.shape(fixed), tf.shape(fixed)])
        window = tf.slice(fixed, tf.stack([start, 0]), [1, 4])
        known_part = tf.reshape(fixed, tf.concat([tf.shape(level)[1:], [3]], 0))  # the known dimension: [4, 3]
    assert all(xla_marks.compilable(t.op) for t in (per_call[0], constant[0], window, known_part))
    assert not xla_marks.fixed_constant_operands(per_call[0].op, {})
    assert not xla_marks.fixed_constant_operands(window.op, {})
    assert xla_marks.fixed_constant_operands(constant[0].op, {})
    assert xla_marks.fixed_constant_operands(known_part.op, {})


def test_groups_too_small_for_a_cluster_are_not_marked():
    """Every cluster costs a launch on every run: a constant feeding no marked op, or two
    ops on their own, are not marked; a chain of four computations is."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [8, 4])
        rows = tf.gather(x, tf.constant([0, 2]))  # a gather stays outside: its index may be out of range
        pair = tf.nn.relu(x * 2.0)
        chain = tf.nn.relu(tf.abs(x * 3.0) - 1.0)
    chosen = set(xla_marks.candidates(graph.get_operations(), []))
    assert rows.op.inputs[1].op not in chosen
    assert pair.op not in chosen and pair.op.inputs[0].op not in chosen
    assert chain.op in chosen and chain.op.inputs[0].op.inputs[0].op.inputs[0].op in chosen


class _Node:
    def __init__(self, word=None, left=None, right=None):
        self.word, self.left, self.right = word, left, right


def _tree(rng, leaves):
    if leaves == 1:
        return _Node(word=int(rng.integers(0, 10)))
    split = int(rng.integers(1, leaves))
    return _Node(left=_tree(rng, split), right=_tree(rng, leaves - split))


def _forest(seed):
    """Three trees of 1 to 8 leaves: the node counts per height change with every call."""
    rng = np.random.default_rng(seed)
    return [_tree(rng, int(rng.integers(1, 9))) for _ in range(3)], tf.constant(rng.normal(size=[3, 1]), tf.float32)


def _upstream(tensor):
    seen, todo = set(), [tensor.op]
    while todo:
        op = todo.pop()
        if op not in seen:
            seen.add(op)
            todo.extend(t.op for t in op.inputs)
    return seen


def test_tree_graph_with_xla_marks_nothing_that_depends_on_the_trees_sizes():
    """A tree model's step with ``jit_compile=True`` over batches of trees of every size
    agrees with eager; in its graph, no operand XLA compiles into a cluster's program
    depends on the call's node counts (which compiled the cluster again for every batch),
    and no constant is marked without a marked op using it (201 clusters of a lone
    constant in the treernn example's graph)."""
    graphs, janus_text = [], []

    def factory(jit):
        class TreeRNN:
            def __init__(self):
                self.emb = tf.Variable(tf.random.stateless_normal([10, 6], [1, 1]) * 0.3)
                self.w = tf.Variable(tf.random.stateless_normal([12, 6], [2, 1]) * 0.3)
                self.out = tf.Variable(tf.random.stateless_normal([6, 1], [3, 1]) * 0.3)
                self.opt = tf.keras.optimizers.SGD(0.1)

            def encode(self, node):
                if node.left is None:
                    return tf.nn.embedding_lookup(self.emb, tf.constant([node.word]))
                return tf.tanh(tf.concat([self.encode(node.left), self.encode(node.right)], axis=1) @ self.w)

            def step(self, trees, targets):
                variables = [self.emb, self.w, self.out]
                with tf.GradientTape() as tape:
                    pred = tf.concat([self.encode(t) for t in trees], axis=0) @ self.out
                    loss = tf.reduce_mean(tf.square(pred - targets))
                self.opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
                return loss

        m = TreeRNN()
        m.step = with_xla(jit, True)(m.step)
        return type("P", (), {"fn": staticmethod(m.step),
                              "state": staticmethod(lambda: {"emb": m.emb, "w": m.w, "out": m.out})})

    def probe(p):
        out = p.fn(*_forest(99))
        if hasattr(p.fn, "__janus_function__"):
            graphs.append(janus.concrete_function(p.fn).graph)
            janus_text.append(str(janus.explain(p.fn)))
        return out

    total = check(factory, [_forest(s) for s in range(10)] + [probe], rtol=RTOL, atol=1e-6, min_graph_calls=6)
    assert total["xla_graphs"] == 1 and total["conversions"] == 1, total
    assert "XLA: on (jit_compile=True): " in janus_text[0], janus_text[0]
    marked = [op for op in graphs[0].get_operations() if op.node_def.attr["_XlaCompile"].b]
    assert marked
    per_call = {op for op in graphs[0].get_operations()  # the shapes of the levels, of as many rows as nodes
                if op.type in ("Shape", "ShapeN") and not all(t.shape.is_fully_defined() for t in op.inputs)}
    for op in marked:
        which = xla_marks._CONSTANT_OPERANDS.get(op.type, ())
        for operand in (op.inputs if which is None else [op.inputs[i] for i in which]):
            known = tf.get_static_value(operand) is not None or _tf_private.known_shape_value(operand)
            assert known or not _upstream(operand) & per_call, f"{op.type} {op.name} compiles a per-call shape"
    consumers = {op: [c for t in op.outputs for c in t.consumers()] for op in marked if op.type == "Const"}
    assert all(any(c in set(marked) for c in cs) for cs in consumers.values())
