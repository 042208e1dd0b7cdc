"""Graph breaks (issue #28 item 1): a statement Janus cannot convert runs in Python, the
rest of the function in graph segments, each checked against eager call by call.

Every test runs the same calls eagerly and through Janus with inputs that change
between calls, compares results, exceptions, stdout and state after each call, and
asserts from ``janus.stats`` that the function was split (``breaks``) and that its
segments ran as graphs (``segment_graph_calls``), with how many conversions.
"""
import threading
import types

import numpy as np
import pytest
import tensorflow as tf

import janus
from janus.introspect import janus_function_of

from harness import check, check_seeded, inline_segments


def _segments(fn):
    return janus_function_of(fn).split.segments


# ------------------------------------------------------------------ a NumPy statistic between two tapes
def _numpy_statistic(jit):
    class Model:
        def __init__(self):
            self.w = tf.Variable(tf.reshape(tf.range(16, dtype=tf.float32), [4, 4]) / 16.0)
            self.history = []

        @jit
        def step(self, x):
            with tf.GradientTape() as tape:
                h = tf.tanh(tf.matmul(x, self.w))
                loss = tf.reduce_sum(h * h)
            g = tape.gradient(loss, self.w)
            scale = float(np.std(g.numpy())) + 1.0  # NumPy on a gradient: a break
            self.history.append(scale)
            with tf.GradientTape() as tape:
                loss2 = tf.reduce_sum(tf.matmul(x, self.w) ** 2)
            g2 = tape.gradient(loss2, self.w)
            self.w.assign_sub(0.01 * (g + g2) / scale)
            return loss + loss2

    m = Model()
    return types.SimpleNamespace(fn=m.step, state=lambda: {"w": m.w, "history": list(m.history)})


def test_a_numpy_statistic_between_two_tapes_is_a_break_and_both_sides_are_graphs():
    calls = [(tf.constant(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4) * (i + 1)),) for i in range(8)]
    total = check(_numpy_statistic, calls, graph_calls=0)
    assert total["breaks"] == 1, "one break: the NumPy statistic of the gradient"
    assert total["segments"] == 2, "a graph segment on each side of the break"
    # three profiled calls of the whole step (the third converts and finds the break); the
    # fourth runs the segments eagerly, profiled; from the fifth on they are graphs, but for
    # the first miss of the second on `scale`, a float it then feeds
    assert total["eager_calls"] == 3 and total["segment_eager_calls"] == 3, total
    assert total["segment_graph_calls"] == 7, total


# ------------------------------------------------------------------ a Python environment inside the tape
class _Env:
    def __init__(self):
        self.rng = np.random.RandomState(0)
        self.s = self.rng.randn(4).astype(np.float32)

    def step(self, action):
        self.s = (0.9 * self.s + 0.1 * action + 0.01 * self.rng.randn(4)).astype(np.float32)
        return self.s, float(self.s.sum())


def _actor(jit):
    class Agent:
        def __init__(self):
            self.w1 = tf.Variable(tf.random.stateless_normal([4, 16], seed=[1, 2]) * 0.3)
            self.w2 = tf.Variable(tf.random.stateless_normal([16, 1], seed=[3, 4]) * 0.3)
            self.env = _Env()
            self.returns = []

        @jit
        def episode(self, steps):
            state = tf.constant(self.env.s[None])
            with tf.GradientTape() as tape:
                total = tf.constant(0.0)
                for t in range(steps):
                    value = tf.matmul(tf.nn.relu(tf.matmul(state, self.w1)), self.w2)
                    action = tf.tanh(value)[0, 0]
                    s, reward = self.env.step(float(action))  # the environment: Python
                    state = tf.constant(s[None])
                    total = total + value[0, 0] * reward
                loss = -total
            grads = tape.gradient(loss, [self.w1, self.w2])
            for v, g in zip([self.w1, self.w2], grads):
                v.assign_sub(0.01 * g)
            self.returns.append(float(loss))
            return loss

    a = Agent()
    return types.SimpleNamespace(fn=a.episode, state=lambda: {"w1": a.w1, "w2": a.w2, "returns": list(a.returns),
                                                               "env": a.env.s.copy()})


def test_an_environment_stepped_inside_the_tape_keeps_the_tape_recording_across_the_break():
    total = check(_actor, [(n,) for n in (3, 3, 4, 3, 5, 3, 3, 4)], graph_calls=0, rtol=1e-6, atol=1e-6)
    assert total["breaks"] >= 2  # the environment, and the gradient of the tape recorded across it
    assert total["segment_graph_calls"] >= 20, (
        "the segments around the environment and the tape's gradient run as graphs, several per call of the 8: the "
        f"test must not pass by running everything eagerly: {total}"
    )


# ------------------------------------------------------------------ a segment's assumption failing
def _speculated_after_a_break(jit):
    class Model:
        def __init__(self):
            self.v = tf.Variable(1.0)
            self.steps = 0
            self.log = []

        @jit
        def step(self, x):
            self.steps += 1
            self.v.assign_add(tf.reduce_sum(x))  # before the break: stands when a later segment aborts
            self.log.append(np.round(float(self.v.numpy()), 3))
            y = x * 2.0
            if tf.reduce_sum(y) > 0:  # speculated positive, then negative
                y = y + self.v
            else:
                y = y - self.v
            return y

    m = Model()
    return types.SimpleNamespace(fn=m.step, state=lambda: {"v": m.v, "steps": m.steps, "log": list(m.log)})


def test_an_assumption_failing_in_a_segment_reruns_that_segment_only():
    calls = [(tf.constant([float(i + 1), 1.0]),) for i in range(5)] + [(tf.constant([-9.0, 1.0]),)] + \
            [(tf.constant([float(i), 2.0]),) for i in range(3)]
    total = check(_speculated_after_a_break, calls, graph_calls=0)
    assert total["breaks"] == 1 and total["segments"] == 2, f"one break (the NumPy rounding of self.v), a graph segment on each side: {total}"
    assert total["segment_graph_calls"] >= 8, (
        "both segments run as graphs in the calls after profiling: the test must not pass by running everything "
        f"eagerly: {total}"
    )
    prog = _speculated_after_a_break(janus.function)
    for x, in calls:
        prog.fn(x)
    first, second = (janus.stats(s) for s in _segments(prog.fn))
    assert first["assumptions_failed"] == 0 and first["graph_calls"] >= 4, first
    assert second["assumptions_failed"] == 1 and second["graph_calls"] >= 4, second


# ------------------------------------------------------------------ a break in a loop: no retrace per iteration
def _loop_with_a_break(jit):
    class Model:
        def __init__(self):
            self.w = tf.Variable([[0.5, -0.25], [0.125, 1.0]])
            self.norms = []

        @jit
        def run(self, x, n):
            for i in range(n):
                x = tf.tanh(tf.matmul(x, self.w)) + 0.1 * i
                self.norms.append(float(np.linalg.norm(x.numpy())))
            return x

    m = Model()
    return types.SimpleNamespace(fn=m.run, state=lambda: {"w": m.w, "norms": list(m.norms)})


def test_a_loop_with_a_break_runs_in_python_and_its_body_segment_is_not_retraced_per_iteration():
    calls = [(tf.constant([[0.1 * k, -0.2]]), 6) for k in range(6)]
    total = check(_loop_with_a_break, calls, graph_calls=0)
    assert total["breaks"] == 1 and total["segments"] == 1, f"the NumPy norm in the loop is the one break; the loop runs in Python, its body is the one segment: {total}"
    assert total["segment_graph_calls"] >= 5, (
        "the body segment runs as a graph at least 5 times (18 iterations through the split) before 5 runs as written "
        f"decide which it keeps: {total}"
    )
    prog = _loop_with_a_break(janus.function)
    for args in calls:
        prog.fn(*args)
    (body,) = _segments(prog.fn)
    # 18 iterations through the split: the loop variable is fed once it varies, one graph
    assert janus.stats(body)["conversions"] <= 2, janus.stats(body)
    # never slower than eager: after 5 graph runs, 5 runs as written decide which it keeps
    assert "runs as written (in the driver): eagerly" in str(janus.explain(prog.fn)) or \
        "stays a graph: eagerly" in str(janus.explain(prog.fn))


# ------------------------------------------------------------------ returns, unbound locals, exceptions
def _early_return(jit):
    @jit
    def f(x, k):
        if k > 2:
            y = x * 2.0
        if k == 5:
            return x - 1.0
        print("mean", np.mean(x.numpy()))
        return y + 1.0
    return types.SimpleNamespace(fn=f)


def test_returns_on_both_sides_of_a_break_and_an_unbound_local_raise_as_in_eager():
    calls = [(tf.constant([1.0, 2.0]) * k, k) for k in (3, 4, 3, 6, 5, 7, 3, 1, 4, 6, 3, 4, 8, 9)]
    total = check(_early_return, calls, graph_calls=0)
    assert total["breaks"] == 1, f"one break: the print of a NumPy mean: {total}"
    assert total["segment_graph_calls"] >= 6, (
        "the segments on both sides of the break run as graphs once profiled: the test must not pass by running "
        f"everything eagerly: {total}"
    )


def _raises_now_and_then(jit):
    @janus.do_not_convert
    def audit(value):
        if value > 3.0:
            raise ValueError(f"too large: {value:.2f}")
        return value

    class Model:
        def __init__(self):
            self.v = tf.Variable(0.5)
            self.seen = []

        @jit
        def step(self, x):
            loss = tf.reduce_sum(x * self.v)
            self.seen.append(audit(float(loss)))
            self.v.assign(self.v * 1.1)
            return loss * 2.0

    m = Model()
    return types.SimpleNamespace(fn=m.step, state=lambda: {"v": m.v, "seen": list(m.seen)})


def test_do_not_convert_is_a_break_and_its_exceptions_are_eagers():
    calls = [(tf.constant([1.0, float(k)]),) for k in (1, 2, 1, 9, 2, 1, 8, 1)]
    total = check(_raises_now_and_then, calls, graph_calls=0)
    assert total["breaks"] == 1, f"one break: the call of the do_not_convert audit(): {total}"
    assert total["segment_graph_calls"] == 6, total  # 4 split calls, of which the 2 that raise run 1 segment


# ------------------------------------------------------------------ a return inside a segment, past a finally
def _return_past_a_finally(jit):
    class Model:
        def __init__(self):
            self.log = []

        @jit
        def step(self, x, k):
            try:
                try:
                    if tf.reduce_sum(x) > 0.0:
                        return x * 2.0
                finally:
                    k = k + 1  # after the return: the finally below reads it
                y = x + 1.0
            finally:
                self.log.append(("k", k))
                print("mean", np.mean(x.numpy()))  # a break: this try runs in Python
            return y

    m = Model()
    return types.SimpleNamespace(fn=m.step, state=lambda: {"log": list(m.log)})


def test_a_return_inside_a_try_of_a_segment_gives_the_driver_what_its_finally_bound():
    calls = [(tf.constant([1.0, -2.0]) * s, k) for s, k in ((1, 0), (-1, 1), (1, 2), (-1, 3), (1, 4), (1, 5), (-1, 6))]
    total = check(_return_past_a_finally, calls, graph_calls=0)
    assert total["breaks"] >= 1 and total["segment_graph_calls"] >= 1, total


def _return_from_a_handler(jit):
    class Model:
        def __init__(self):
            self.log = []

        @jit
        def step(self, x, k):
            try:
                try:
                    if k > 2:
                        raise ValueError(f"k = {k}")
                    y = x * 2.0
                except ValueError as e:
                    if k > 3:
                        return x * 3.0  # leaving the handler unbinds e
                    y = x - 1.0
            finally:
                print("mean", np.mean(x.numpy()))  # a break: this try runs in Python
                self.log.append(str(e) if k > 3 else "-")  # e unbound: UnboundLocalError
            return y

    m = Model()
    return types.SimpleNamespace(fn=m.step, state=lambda: {"log": list(m.log)})


def test_a_return_from_an_except_as_handler_of_a_segment_leaves_its_name_unbound():
    calls = [(tf.constant([1.0, -2.0]) * k, k) for k in (0, 1, 3, 4, 2, 5, 1, 4, 3)]
    total = check(_return_from_a_handler, calls, graph_calls=0)
    assert total["breaks"] == 1, total


# ------------------------------------------------------------------ a lock held around segments
def _locked(jit):
    class Model:
        def __init__(self):
            self.lock = threading.Lock()
            self.w = tf.Variable([1.0, 2.0])
            self.held = []

        @jit
        def step(self, x):
            with self.lock:
                y = tf.reduce_sum(x * self.w)
                self.held.append(self.lock.locked())
                self.w.assign_add(x)
            return y

    m = Model()
    return types.SimpleNamespace(fn=m.step, state=lambda: {"w": m.w, "held": list(m.held)})


def test_a_lock_is_held_while_the_python_part_and_the_segments_inside_it_run():
    total = check(_locked, [(tf.constant([0.5, float(i)]),) for i in range(10)], graph_calls=0)
    assert total["breaks"] == 2  # the lock's with statement; lock.locked() in the segment inside it
    assert total["segment_graph_calls"] >= 8, (
        "the segments inside and after the lock's with statement run as graphs once profiled: the test must not pass "
        f"by running everything eagerly: {total}"
    )


# ------------------------------------------------------------------ random ops a graph cannot reproduce
def _categorical(jit):
    class Policy:
        def __init__(self):
            self.logits = tf.Variable([[0.1, 0.5, -0.3, 0.2]])
            self.actions = []

        @jit
        def act(self, x):
            logits = self.logits + x
            a = tf.random.categorical(logits, 1, seed=5)[0, 0]  # an op seed: eager continues one stream per kernel
            self.actions.append(int(a))
            self.logits.assign_add(0.1 * x)
            return tf.nn.softmax(logits)[0, a]

    p = Policy()
    return types.SimpleNamespace(fn=p.act, state=lambda: {"logits": p.logits, "actions": list(p.actions)})


def test_op_seeded_draws_run_eagerly_between_segments_with_eagers_numbers():
    calls = [(tf.constant([[0.1 * i, 0.0, 0.2, -0.1 * i]]),) for i in range(8)]
    total = check_seeded(_categorical, calls, seed=7, graph_calls=0)
    assert total["breaks"] == 1, f"one break: the op-seeded categorical draw runs eagerly, between the segments: {total}"
    assert total["segment_graph_calls"] == 8, total


# ------------------------------------------------------------------ explain, strict mode
def test_explain_lists_breaks_segments_and_time_split():
    prog = _numpy_statistic(janus.function)
    for i in range(8):
        prog.fn(tf.constant(np.full((2, 4), 0.1 * (i + 1), np.float32)))
    text = str(janus.explain(prog.fn))
    assert "graph breaks: 1" in text
    assert "break at test_graph_breaks.py:39" in text, text
    assert "segment 0 (test_graph_breaks.py:35-38)" in text and "segment 1 (test_graph_breaks.py:40-45)" in text, text
    assert "in segments" in text and "in Python between them" in text
    assert [janus.stats(s)["graph_calls"] for s in _segments(prog.fn)] == [4, 3]


def test_strict_functions_still_raise_at_a_break():
    @janus.function(strict=True)
    def f(x):
        return tf.constant(np.std(x.numpy())) + x

    f(tf.constant([1.0, 2.0]))
    with pytest.raises(janus.GraphBreakError):
        for _ in range(3):
            f(tf.constant([1.0, 2.0]))
    assert janus_function_of(f).split is None


# ------------------------------------------------------------------ constructs the converter refuses, as breaks
def _with_del_and_open(jit):
    class Model:
        def __init__(self, path):
            self.w = tf.Variable([1.0, -1.0])
            self.path = path
            self.sizes = []

        @jit
        def step(self, x):
            tmp = x * self.w
            y = tf.reduce_sum(tmp)
            class Scratch: pass  # a construct the converter refuses: a break, not a whole-function fallback
            with open(self.path) as f:  # a builtin Janus never runs in a graph
                self.sizes.append(len(f.read()))
            self.w.assign_add(x * 0.5)
            return y * 2.0

    return Model


def test_statements_the_converter_refuses_are_breaks(tmp_path):
    path = tmp_path / "data.txt"
    path.write_text("abc")

    def make(jit):
        m = _with_del_and_open(jit)(str(path))
        return types.SimpleNamespace(fn=m.step, state=lambda: {"w": m.w, "sizes": list(m.sizes)})

    total = check(make, [(tf.constant([float(i), 1.0]),) for i in range(9)], graph_calls=0)
    assert total["breaks"] == 2, total
    assert total["segment_graph_calls"] >= 6, (
        "the segments between the two refused statements run as graphs once profiled: the test must not pass by "
        f"running everything eagerly: {total}"
    )

# ------------------------------------------------------------------ found by tests/test_graph_breaks_generator.py
@janus.do_not_convert
def _audit(value):
    if value > 2.5:
        raise ValueError(f"audit {value:.2f}")
    return value


def _unbound_into_a_segment_split_again(jit):
    class Model:
        def __init__(self):
            self.lock = threading.Lock()
            self.rate = 1.0

        @jit
        def step(self, x):
            y = x * 1.0
            with self.lock:  # the first break: the loop below is one segment, split again later
                for i in range(2):
                    if tf.reduce_sum(y) > 0.0:
                        self.rate = float(np.round(np.std(y.numpy()), 4)) + 1.0
                    else:
                        if tf.reduce_max(x) > 0.3:
                            w = tf.reduce_sum(x) * 2.0  # bound by this iteration, an earlier one, or not at all
                        print("v", np.round(y.numpy(), 3))
                        y = y + w
            return y

    m = Model()
    return types.SimpleNamespace(fn=m.step, state=lambda: {"rate": m.rate})


def test_a_local_unbound_at_a_segment_split_again_raises_unbound_local_error():
    # the segment whose input `w` may be unbound (UNDEF) was split again: its driver was the
    # converter's version of it, without the deletion of UNDEF inputs, and the UNDEF object
    # reached `y + w` (UndefinedValueError instead of eager's UnboundLocalError)
    xs = [[-0.005, -0.61, 0.37], [-0.18, 0.78, 0.08], [-0.3, 0.81, -0.21], [0.2, 0.95, -0.01],
          [0.14, 0.17, 0.6], [0.94, 0.01, -0.07], [-0.02, 0.002, -0.06], [-0.16, -0.73, -0.36]]
    total = check(_unbound_into_a_segment_split_again, [(tf.constant(x),) for x in xs], graph_calls=0)
    assert total["breaks"] >= 2 and total["segment_graph_calls"] >= 1, total


def _raises_in_a_segment_split_again(jit):
    @jit
    def f(x):
        y = x * 1.0
        try:
            s = float(np.sum(x.numpy()))  # the first break: the rest of the try body is one segment
            y = y + 1.0
            s = _audit(float(tf.reduce_max(y)))  # found when that segment is traced: it is split again
            y = y * 2.0
        except ValueError as e:
            print("caught", e, np.round(y.numpy(), 3))  # eager's y: y + 1.0
        return y
    return types.SimpleNamespace(fn=f)


def test_what_a_segment_split_again_bound_before_it_raised_reaches_the_handler():
    # the segment inside the try was split again; its driver (the converter's version) raised
    # the exception itself instead of returning it with the locals it had bound
    calls = [(tf.constant([v, 0.0]),) for v in (0.5, 1.0, 0.2, 3.0, 0.1, 4.0, 0.3, 5.0, 0.1, 6.0)]
    total = check(_raises_in_a_segment_split_again, calls, graph_calls=0)
    assert total["breaks"] >= 2 and total["segment_graph_calls"] >= 4, total


def _binding_that_raises_in_a_try(jit):
    @jit
    def f(x):
        s = 0.0
        try:
            s = tf.reduce_sum(x) * 2.0  # a segment: eager's s when the next binding raises
            print("x", np.round(x.numpy(), 2))
            s = _audit(float(tf.reduce_max(x)))
        except ValueError as e:
            print("caught", e)
        return s
    return types.SimpleNamespace(fn=f)


def test_a_segment_in_a_try_gives_back_what_a_later_binding_that_raises_leaves():
    # `s` was not an output of the first segment: the statement after the break binds it
    # surely... unless it raises, and the handler then returned the s from before the try
    calls = [(tf.constant([v, 0.5]),) for v in (0.5, 3.0, 1.0, 4.0, 0.2, 5.0, 0.1, 6.0, 0.3)]
    total = check(_binding_that_raises_in_a_try, calls, graph_calls=0)
    assert total["breaks"] >= 2 and total["segment_graph_calls"] >= 3, total


def _tape_across_a_break(jit):
    class Model:
        def __init__(self):
            self.rate = 1.0

        @jit
        def step(self, x):
            y = x * 1.0
            with tf.GradientTape() as tape:
                tape.watch(x)
                z = tf.reduce_sum(y * x)
            self.rate = float(np.std(x.numpy())) + 1.0  # a break between the tape and its gradient
            g = tape.gradient(z, x)
            return z + tf.reduce_sum(g)

    m = Model()
    return types.SimpleNamespace(fn=m.step, state=lambda: {"rate": m.rate})


def test_a_tape_whose_gradient_is_taken_after_a_break_is_entered_in_python():
    # the with statement was in a segment that returned `tape`: the graph returned the tape
    # of its trace (gradient None, then "can only be used to compute one set of gradients")
    total = check(_tape_across_a_break, [(tf.constant([float(v), 1.0]),) for v in range(8)], graph_calls=0)
    assert total["breaks"] >= 1 and total["segment_graph_calls"] >= 4, total


def _numpy_of_a_python_number(jit):
    class Model:
        def __init__(self):
            self.log = []

        @jit
        def step(self, x):
            y = x * 2.0
            self.log.append(np.round(float(tf.reduce_sum(y)), 4))  # NumPy reads a float the graph computes
            return y + 1.0

    m = Model()
    return types.SimpleNamespace(fn=m.step, state=lambda: {"log": list(m.log)})


def test_numpy_reading_a_python_number_computed_from_tensors_is_a_break():
    # NumPy raised TypeError ("no callable rint method") on the traced number: taken for an
    # error eager raises too, the whole function ran eagerly
    total = check(_numpy_of_a_python_number, [(tf.constant([1.0, float(i)]),) for i in range(8)], graph_calls=0)
    assert total["breaks"] == 1 and total["segment_graph_calls"] >= 8, total


def _return_through_a_finally_in_a_segment(jit):
    class Model:
        def __init__(self):
            self.k0 = 0
            self.log = []

        @jit
        def step(self, x):
            k = self.k0
            try:
                print("x", np.round(x.numpy(), 2))  # a break: the try runs in Python
                try:
                    if tf.reduce_sum(x) > 0.5:
                        return x * 2.0, k
                finally:
                    k = k + 1  # after the return took its value, before the finally below reads k
                k = k + 10
            finally:
                self.log.append(k)
            return x, k

    m = Model()
    return types.SimpleNamespace(fn=m.step, state=lambda: {"log": list(m.log)})


def test_a_return_leaving_a_finally_inside_a_segment_gives_back_the_locals_that_finally_left():
    # found by tests/test_try_generator.py: the segment inside the try gave back its locals
    # where its `return` ran, before its own `finally` rebound k, and the driver's finally
    # logged the k of before
    calls = [(tf.constant([v, 0.25]),) for v in (1.0, -1.0, 2.0, 0.0, 3.0, -2.0, 1.5, 0.1)]
    total = check(_return_through_a_finally_in_a_segment, calls, graph_calls=0)
    assert total["breaks"] >= 1 and total["segment_graph_calls"] >= 4, total


# ------------------------------------------------------------------ the edges: an op failing mid-segment, two threads
def _fails_after_a_break(jit):
    class Model:
        def __init__(self):
            self.v = tf.Variable(1.0)
            self.w = tf.Variable(0.0)
            self.log = []

        @jit
        def step(self, x):
            self.v.assign_add(1.0)  # segment 0: stands when segment 1 fails, as in eager
            self.log.append(float(np.max(x.numpy())))  # the break
            self.w.assign_add(tf.reduce_sum(x))  # segment 1: not half done when the check fails
            y = tf.debugging.check_numerics(tf.math.log(x), "log of a negative input")
            return y * self.v

    m = Model()
    return types.SimpleNamespace(fn=m.step, state=lambda: {"v": m.v, "w": m.w, "log": list(m.log)})


def test_an_op_failing_in_a_segment_at_run_time_raises_eagers_error_with_eagers_state():
    calls = [(tf.constant([1.0, 2.0 + i]),) for i in range(5)] + [(tf.constant([-1.0, 2.0]),)] + \
            [(tf.constant([1.0, 3.0 + i]),) for i in range(3)] + [(tf.constant([2.0, -5.0]),)]
    total = check(_fails_after_a_break, calls, graph_calls=0)
    assert total["breaks"] == 1 and total["segment_graph_calls"] >= 6, total


def test_two_threads_calling_one_split_step_each_get_eagers_results():
    import threading as th

    class Model:
        def __init__(self, scale):
            self.w = tf.Variable([scale, -scale])
            self.norms = []

        @janus.function
        def step(self, x):
            y = tf.tanh(x * self.w)
            self.norms.append(float(np.linalg.norm(y.numpy())))  # the break
            self.w.assign_add(0.1 * y)
            return tf.reduce_sum(y)

        def eager(self, x):
            return Model.step.python_function(self, x)

    def run(model, out, use_janus, together=None):
        for i in range(12):
            if together is not None:
                # in step with the other thread: how many calls it makes as written while this
                # one converts a segment must not depend on how fast the machine is
                together.wait()
            x = tf.constant([0.1 * i, 1.0 - 0.1 * i])
            out.append(float(model.step(x) if use_janus else model.eager(x)))

    expected = {}
    for scale in (0.5, 2.0):
        m, out = Model(scale), []
        run(m, out, False)
        expected[scale] = (out, m.norms, m.w.numpy())
    models = {scale: Model(scale) for scale in (0.5, 2.0)}
    outs = {scale: [] for scale in models}
    together = th.Barrier(2, timeout=900)  # a safety net: a thread that died breaks it
    threads = [th.Thread(target=run, args=(models[s], outs[s], True, together)) for s in models]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not together.broken
    for scale, (out, norms, w) in expected.items():
        assert outs[scale] == out and models[scale].norms == norms, scale
        np.testing.assert_array_equal(models[scale].w.numpy(), w)
    assert janus.stats(Model.step)["breaks"] == 1 and janus.stats(Model.step)["segment_graph_calls"] >= 6, f"the NumPy norm is the one break; its segments ran as graphs with two threads calling: {janus.stats(Model.step)}"


# ------------------------------------------------------------------ segments put back in the driver
def _inlining_after(program, calls_before: int):
    """``program`` whose split functions run every segment as written from call
    ``calls_before`` on, as a trial that found eager faster leaves them."""
    def factory(jit):
        prog = program(jit)
        if jit is not janus.function:
            return prog
        inner, count = prog.fn, [0]

        def fn(*args):
            count[0] += 1
            if count[0] == calls_before:
                inline_segments(inner)
            return inner(*args)

        prog.fn, prog.janus_fns = fn, [inner]
        return prog
    return factory


@pytest.mark.parametrize("program, calls", [
    (_return_past_a_finally, [(tf.constant([1.0, -2.0]) * s, k) for s, k in
                              ((1, 0), (-1, 1), (1, 2), (-1, 3), (1, 4), (1, 5), (-1, 6), (1, 7), (-1, 8))]),
    (_return_from_a_handler, [(tf.constant([1.0, -2.0]) * k, k) for k in (0, 1, 3, 4, 2, 5, 1, 4, 3, 0, 5)]),
    (_early_return, [(tf.constant([1.0, 2.0]) * k, k) for k in (3, 4, 3, 6, 5, 7, 3, 1, 4, 6, 3, 4, 8, 9, 5, 1)]),
    (_locked, [(tf.constant([0.5, float(i)]),) for i in range(10)]),
], ids=["finally", "handler", "unbound", "lock"])
def test_segments_settled_as_written_run_in_the_driver_as_the_user_wrote_them(program, calls):
    total = check(_inlining_after(program, 7), calls, graph_calls=0)
    assert total["breaks"] >= 1 and total["segment_graph_calls"] >= 1, total
    prog = _inlining_after(program, 7)(janus.function)
    for args in calls:
        try:
            prog.fn(*args)
        except Exception:  # noqa: BLE001 - compared with eager's above
            pass
    jf = janus_function_of(prog.janus_fns[0])
    runs = {c.segment.index: c.function.counts["calls"] for c in jf.split.calls}
    prog.fn(*calls[0])
    assert runs == {c.segment.index: c.function.counts["calls"] for c in jf.split.calls}  # no segment called
    assert "_jn_segs[" not in jf.split.source, jf.split.source


def _state_read_by_value(jit):
    class Model:
        def __init__(self):
            self.w = tf.Variable([0.5, -1.0])
            self.offset = np.zeros(2, np.float32)  # read by value: changes at every call
            self.norms = []

        @jit
        def step(self, x):
            y = tf.tanh(x * self.w + self.offset)
            self.offset = self.offset.copy() + np.float32(0.25)
            self.norms.append(float(np.linalg.norm(y.numpy())))  # the break
            z = tf.reduce_sum(y * self.w)
            self.w.assign_add(0.1 * y)
            return z

    m = Model()
    return types.SimpleNamespace(fn=m.step, state=lambda: {"w": m.w, "offset": m.offset, "norms": list(m.norms)})


def test_a_segment_that_gives_up_is_put_back_in_the_driver(caplog):
    import logging

    calls = [(tf.constant([0.1 * i, 1.0]),) for i in range(14)]
    total = check(_state_read_by_value, calls, graph_calls=0)
    assert total["breaks"] == 1 and total["segment_graph_calls"] >= 6, total
    prog = _state_read_by_value(janus.function)
    with caplog.at_level(logging.WARNING, logger="janus"):
        for args in calls:
            prog.fn(*args)
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    # the warning says the segment's statements run as written, not that the function is eager
    assert any(", a graph segment, runs as written from now on: its last 3 graphs were never reused" in w
               for w in warned) and not any("runs eagerly from now on" in w for w in warned), warned
    jf = janus_function_of(prog.fn)
    first = jf.split.calls[0].function
    assert first.permanent_reason and "never reused" in first.permanent_reason, first.permanent_reason
    runs = first.counts["calls"]
    prog.fn(*calls[0])
    assert first.counts["calls"] == runs  # the driver runs its statements itself
    source = str(janus.explain(prog.fn))
    assert "y = tf.tanh(((x * self.w) + self.offset))" in source and "_jn_segs[0](" not in source, source


def _numpy_statistic_under_a_tape(jit):
    """``_numpy_statistic`` called inside the caller's recording tape: its segments' graph
    calls are recorded, their backward functions run by the caller's ``tape.gradient``."""
    prog = _numpy_statistic(jit)
    grads = []

    def fn(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = prog.fn(x)
        grads.append(tape.gradient(loss, x))
        return loss

    return types.SimpleNamespace(fn=fn, step=prog.fn, janus_fns=[prog.fn],
                                 state=lambda: {**prog.state(), "grads": list(grads)})


@pytest.mark.parametrize("whole_calls_faster", [True, False], ids=["kept", "dropped"])
def test_segments_kept_as_graphs_under_a_tape_are_confirmed_on_whole_calls(monkeypatch, whole_calls_faster):
    """A segment's trial cannot time its graph's backward (run later by tape.gradient): the
    root confirms graphs kept under a recording tape on whole calls, as graphs then as
    written, and keeps the faster; every call through the confirmation gives eager's
    results and state."""
    import dataclasses

    from janus import config
    from janus.driver import segments

    # every trial keeps its graph
    monkeypatch.setattr(config, "LIMITS", dataclasses.replace(config.LIMITS, segment_min_gain=-float("inf")))
    monkeypatch.setattr(segments, "whole_calls_faster_with_graphs", lambda trial: whole_calls_faster)
    calls = [(tf.constant(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4) * (i % 5 + 1)),) for i in range(30)]
    total = check(_numpy_statistic_under_a_tape, calls, graph_calls=0)
    assert total["breaks"] == 1 and total["segment_graph_calls"] >= 10, total
    prog = _numpy_statistic_under_a_tape(janus.function)
    for args in calls:
        prog.fn(*args)
    split = janus_function_of(prog.step).split
    verdict = "kept as graphs" if whole_calls_faster else "run as written"
    assert split.confirmation is not None and split.confirmation.endswith(verdict), split.confirmation
    assert verdict in str(janus.explain(prog.step))
    graphs = sum(janus.stats(s)["graph_calls"] for s in _segments(prog.step))
    prog.fn(*calls[0])
    assert sum(janus.stats(s)["graph_calls"] for s in _segments(prog.step)) == graphs + (2 if whole_calls_faster else 0)
    assert ("_jn_segs[" in split.source) == whole_calls_faster, split.source


def test_segments_kept_as_graphs_no_tape_records_stay_on_their_trial(monkeypatch):
    """With no tape recording its calls, a segment's trial times all its graph costs: the
    graphs it keeps are not confirmed on whole calls (which would lose a segment's gain
    in a whole call's noise)."""
    import dataclasses

    from janus import config
    from janus.driver import segments

    # every trial keeps its graph
    monkeypatch.setattr(config, "LIMITS", dataclasses.replace(config.LIMITS, segment_min_gain=-float("inf")))
    monkeypatch.setattr(segments, "whole_calls_faster_with_graphs", lambda trial: False)
    calls = [(tf.constant(np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4) * (i % 5 + 1)),) for i in range(30)]
    check(_numpy_statistic, calls, graph_calls=0)
    prog = _numpy_statistic(janus.function)
    for args in calls:
        prog.fn(*args)
    split = janus_function_of(prog.fn).split
    assert split.confirmation is None and "_jn_segs[" in split.source, split.confirmation
    graphs = sum(janus.stats(s)["graph_calls"] for s in _segments(prog.fn))
    prog.fn(*calls[0])
    assert sum(janus.stats(s)["graph_calls"] for s in _segments(prog.fn)) == graphs + 2


def test_a_segment_split_in_turn_whose_segments_run_as_written_is_put_back_whole(monkeypatch):
    """The environment's gradient after the tape is a segment split again (the tape is
    Python's); once its own segment runs as written, the parent runs its statements too."""
    import dataclasses

    from janus import config

    # every trial: as written
    monkeypatch.setattr(config, "LIMITS", dataclasses.replace(config.LIMITS, segment_min_gain=float("inf")))
    calls = [(n,) for n in (3, 3, 4, 3, 5, 3, 3, 4) * 3]
    total = check(_actor, calls, graph_calls=0, rtol=1e-6, atol=1e-6)
    assert total["breaks"] >= 2 and total["segment_graph_calls"] >= 10, total
    prog = _actor(janus.function)
    for args in calls:
        prog.fn(*args)
    split = janus_function_of(prog.fn).split
    assert any(c.function.split is not None for c in split.calls)  # one segment was split in turn
    assert split.settled and "_jn_segs[" not in split.source, split.source
    runs = split.runs
    prog.fn(*calls[0])
    assert split.runs == runs  # settled: the user's function runs, not the driver
