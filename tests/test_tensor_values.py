"""Tensor values that drive Python logic (``janus.trace.known_values``): a number the trace
knows (a constant, a guarded shape) is the Python number itself; a small integer tensor
input whose values Python needs is specialized by value, one graph per value seen, until
its values change at every call (then one graph takes them all, the parser's stack a list
whose length the graph computes, or the statement that needs them is a graph break).
Every program is compared with eager after every call."""
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

import janus
from harness import case, check

SHIFT, REDUCE = 0, 1


def _parser(jit):
    """SPINN's shift-reduce parser: a Python stack driven by ``int(transition)``."""
    init = tf.keras.initializers.GlorotUniform(seed=6)
    compose = tf.Variable(init([8, 4]))
    out = tf.Variable(init([4, 1]))
    losses = []

    @jit
    def step(words, transitions, target):
        with tf.GradientTape() as tape:
            buffer = tf.unstack(words)[::-1]
            stack = []
            for t in transitions:
                if int(t) == SHIFT:
                    stack.append(tf.expand_dims(buffer.pop(), 0))
                else:
                    right, left = stack.pop(), stack.pop()
                    stack.append(tf.tanh(tf.concat([left, right], 1) @ compose))
            loss = tf.reduce_sum(tf.square(stack[-1] @ out - target))
        grads = tape.gradient(loss, [compose, out])
        compose.assign_sub(0.1 * grads[0])
        out.assign_sub(0.1 * grads[1])
        losses.append(len(stack))
        return loss

    return SimpleNamespace(fn=step, state=lambda: {"compose": compose, "out": out, "losses": list(losses)})


def _left(n):
    return [SHIFT, SHIFT] + [REDUCE, SHIFT] * (n - 2) + [REDUCE]


def _right(n):
    return [SHIFT] * n + [REDUCE] * (n - 1)


def _words(i, n=5):
    return tf.constant(np.random.RandomState(i).normal(size=(n, 4)).astype(np.float32))


def test_a_parser_driven_by_int_of_a_transition_runs_one_graph_per_tree():
    trees = [tf.constant(_left(5)), tf.constant(_right(5))]
    calls = [(_words(i), trees[i % 2], tf.constant([[0.5]])) for i in range(14)]
    stats = check(_parser, calls, min_graph_calls=10)
    assert stats["conversions"] == 2 and stats["breaks"] == 0, stats
    prog = _parser(janus.function)
    for call in calls[:4]:
        prog.fn(*call)
    text = str(janus.explain(prog.fn))
    assert "argument transitions equals the tensor seen (int32[9])" in text, text
    assert "specialized by value" in text, text


def test_trees_that_change_at_every_call_stop_the_specialization_for_one_graph_of_every_tree():
    """Then the stack is a list whose length the graph computes (``janus.lowering.graph_lists``);
    the weights' gradients add the reduces' terms in another order than eager's tape: an ulp."""
    r = np.random.RandomState(3)

    def tree(i):  # a random valid transition sequence over 5 words
        seq, depth, shifted = [], 0, 0
        while shifted < 5 or depth > 1:
            if shifted < 5 and (depth < 2 or r.rand() < 0.5):
                seq.append(SHIFT)
                shifted, depth = shifted + 1, depth + 1
            else:
                seq.append(REDUCE)
                depth -= 1
        return tf.constant(seq)

    calls = [(_words(i), tree(i), tf.constant([[0.5]])) for i in range(24)]
    stats = check(_parser, calls, min_graph_calls=14, rtol=1e-6, atol=1e-7)
    assert stats["breaks"] == 0, stats
    assert stats["conversions"] <= 6, stats  # a few graphs, one per tree, then one for all
    prog = _parser(janus.function)
    for call in calls:
        prog.fn(*call)
    text = str(janus.explain(prog.fn))
    assert "no longer specialized by value" in text and "is in range (`right, left = stack.pop()" in text, text


def test_a_loop_bound_read_from_a_tensor_and_a_list_it_fills():
    def make(jit):
        log = []

        @jit
        def f(x, n):
            parts = []
            for i in range(int(n)):
                parts.append(x[i] * float(i + 1))
            log.append(len(parts))
            return tf.add_n(parts) if parts else tf.zeros([]), len(parts)

        return SimpleNamespace(fn=f, state=lambda: {"log": list(log)})

    x = tf.range(6, dtype=tf.float32)
    calls = [(x + k, tf.constant(1 + k % 3)) for k in range(12)]
    stats = check(make, calls, min_graph_calls=6)
    assert stats["conversions"] == 3 and stats["breaks"] == 0, stats


def test_a_dataset_argument_beside_a_tensor_whose_value_python_needs():
    @case
    def f(ds, t):
        total = tf.zeros([])
        for v in ds:
            total = total + v
        parts = []
        for _ in range(int(t[0])):
            parts.append(total)
        return tf.add_n(parts) if parts else tf.zeros([]), len(parts)

    calls = [(tf.data.Dataset.from_tensor_slices(tf.range(2.0) + k), tf.constant([1 + k % 2, 0])) for k in range(10)]
    stats = check(f, calls, min_graph_calls=5)
    assert stats["breaks"] == 0, stats


def test_a_number_a_guarded_shape_fixes_is_the_python_number():
    def make(jit):
        sizes = []

        @jit
        def f(x):
            n = int(tf.size(x))
            sizes.append(n)
            return x * n, n

        return SimpleNamespace(fn=f, state=lambda: {"sizes": list(sizes)})

    calls = [(tf.constant([1.0, 2.0, 3.0]) * k,) for k in range(8)]
    stats = check(make, calls, min_graph_calls=5)
    assert stats["conversions"] == 1 and stats["breaks"] == 0, stats


def test_an_index_past_the_end_raises_as_eager_does():
    @case
    def f(t):
        out = []
        for k in range(int(t[int(t[-1])])):
            out.append(k)
        return tf.constant(out, tf.int32) + 1 if out else tf.zeros([0], tf.int32)

    fine, past = tf.constant([2, 3, 1]), tf.constant([2, 3, 5])
    calls = [(fine,), (fine,), (fine,), (past,), (fine,), (past,), (fine,), (fine,)]
    stats = check(f, calls, min_graph_calls=3)
    assert stats["conversions"] == 1, stats


def test_a_float_or_a_large_tensor_is_not_specialized():
    def make(jit):
        seen = []

        @jit
        def f(x, big):
            if float(x) > 0.5:
                seen.append(1)
            return x + tf.cast(tf.reduce_sum(big), tf.float32) * float(int(big[0]) > 0)

        return SimpleNamespace(fn=f, state=lambda: {"seen": list(seen)})

    big = tf.range(2000)
    calls = [(tf.constant(v), big + k) for k, v in enumerate([0.1, 0.9, 0.7, 0.2, 0.6, 0.3, 0.8, 0.4])]
    check(make, calls, min_graph_calls=0)
    prog = make(janus.function)
    for call in calls:
        prog.fn(*call)
    assert "specialized by value" not in str(janus.explain(prog.fn))


def test_a_tensor_held_in_python_state_is_specialized_and_rechecked_after_it_changes():
    class Parser:
        def __init__(self):
            self.order = tf.constant([2, 0, 1])
            self.log = []

        def step(self, x):
            rows = []
            for i in self.order:
                rows.append(x[int(i)])
            self.log.append(len(rows))
            return tf.stack(rows)

    def make(jit):
        p = Parser()
        p.step = jit(p.step)
        return SimpleNamespace(fn=p.step, p=p, state=lambda: {"order": p.order, "log": list(p.log)})

    def reorder(order):
        def call(prog):
            prog.p.order = tf.constant(order)
            return prog.fn(tf.constant([[1.0], [2.0], [3.0]]))
        return call

    x = tf.constant([[1.0], [2.0], [3.0]])
    calls = [(x,), (x * 2,), (x,), reorder([1, 2, 0]), (x,), (x * 3,), reorder([2, 0, 1]), (x,)]
    stats = check(make, calls, min_graph_calls=4)
    assert stats["breaks"] == 0, stats


def test_known_value_folds_stateless_ops_on_constants_only():
    from janus.trace.known_values import fed_sources, known_value
    from janus.trace.sources import Arg

    seen = {}

    @tf.function(autograph=False)
    def graph(x):
        c = tf.constant([3, 1, 4, 1, 5])
        seen["slice"] = c[2] * 2 + tf.size(c)  # StridedSlice, Mul, Size, AddV2: all folded
        seen["cast"] = tf.cast(tf.reduce_max(c), tf.float32) / 2.0
        seen["input"] = c[0] + x[0]
        seen["variable"] = tf.cast(v.read_value(), tf.int32) + c[1]
        seen["x"] = x
        return x

    v = tf.Variable(2.0)
    graph.get_concrete_function(tf.TensorSpec([3], tf.int32))
    assert known_value(seen["slice"]) == 13 and known_value(seen["cast"]) == np.float32(2.5)
    assert known_value(seen["input"]) is None and known_value(seen["variable"]) is None
    placeholders = {seen["x"].name: Arg(0, "x")}
    assert fed_sources(seen["input"], placeholders) == {Arg(0, "x")}
    assert fed_sources(seen["variable"], placeholders) is None  # a variable read: not made of inputs alone


def test_numpy_of_a_transition_drives_the_stack_like_int_does():
    def make(jit):
        w = tf.Variable([[0.5, -0.25], [0.75, 1.0]])
        kept = []

        @jit
        def f(words, transitions):
            stack = []
            for k, t in enumerate(transitions):
                code = t.numpy()
                if code == SHIFT:
                    stack.append(words[k])
                else:
                    right, left = stack.pop(), stack.pop()
                    stack.append(tf.tanh(left @ w + right))
            kept.append(transitions.numpy())
            return stack[-1], code

        return SimpleNamespace(fn=f, state=lambda: {"kept": list(kept)})

    trees = [tf.constant([SHIFT, SHIFT, REDUCE, SHIFT, REDUCE]), tf.constant([SHIFT, SHIFT, SHIFT, REDUCE, REDUCE])]
    words = tf.constant(np.random.RandomState(0).normal(size=(5, 1, 2)).astype(np.float32))
    calls = [(words * (i + 1), trees[i % 2]) for i in range(12)]
    stats = check(make, calls, min_graph_calls=6)
    assert stats["conversions"] == 2 and stats["breaks"] == 0, stats


def test_a_condition_on_a_transition_tensor_drives_the_stack():
    """``if t == SHIFT and not (...)`` (tensor conditions, no ``int()``): the transitions are
    specialized by value and the conditions, known, are Python's ``and``, ``or``, ``not``
    and branch."""
    def make(jit):
        w = tf.Variable([[0.5, -0.25], [0.75, 1.0]])

        @jit
        def f(words, transitions):
            stack, k = [], 0
            for t in transitions:
                if t == SHIFT and not (t != SHIFT or len(stack) > 4):
                    stack.append(words[k])
                    k += 1
                else:
                    right, left = stack.pop(), stack.pop()
                    stack.append(tf.tanh(left @ w + right) if k > 2 else left + right)
            return stack[-1], k

        return SimpleNamespace(fn=f)

    trees = [tf.constant([SHIFT, SHIFT, REDUCE, SHIFT, REDUCE]), tf.constant([SHIFT, SHIFT, SHIFT, REDUCE, REDUCE])]
    words = tf.constant(np.random.RandomState(1).normal(size=(3, 1, 2)).astype(np.float32))
    calls = [(words * (i + 1), trees[i % 2]) for i in range(12)]
    stats = check(make, calls, min_graph_calls=6)
    assert stats["conversions"] == 2 and stats["breaks"] == 0, stats
