"""Python islands (issue #28: the environment in the tape): a method of Python state that
draws from a NumPy generator runs inside the graph, in Python, on a copy of its object
committed after the run.

Every test runs the same calls eagerly and through Janus with inputs that change between
calls and compares results, exceptions, stdout and state after each call, bit for bit,
the generator's state included; and asserts from ``janus.stats`` how the function ran.
The edges: an assumption failing after the island ran, an op failing after it, the island
raising now and then, returning another type, its object changing, another thread
running, and methods whose effects reach beyond their object (not islands).
"""
import threading
import types

import numpy as np
import pytest
import tensorflow as tf

import janus
from janus.commit.island_copies import IslandCopy
from janus.convert.analysis.confined import Confined, confinement_of
from janus.introspect import janus_function_of

from harness import assert_same, check


class Env:
    """A cart-pole-like environment: NumPy and a generator of its own."""

    def __init__(self, generator=False):
        self.rng = np.random.default_rng(3) if generator else np.random.RandomState(3)
        self.state = np.array([0.01, -0.02, 0.03, 0.0], np.float32)
        self.t = 0

    def step(self, action):
        x, v, th, om = (float(s) for s in self.state)
        force = 1.0 if action == 1 else -1.0
        om = om + 0.02 * (9.8 * np.sin(th) - force * np.cos(th))
        th, v = th + 0.02 * om, v + 0.02 * force
        noise = self.rng.normal(0, 0.01, 4).astype(np.float32)
        self.state = np.array([x + 0.02 * v, v, th, om], np.float32) + noise
        self.t = self.t + 1
        return self.state, 1.0 if abs(th) < 0.2 else 0.0


def _state(env, w, returns):
    rng = env.rng.get_state()[1:] if isinstance(env.rng, np.random.RandomState) else \
        (env.rng.bit_generator.state["state"]["state"],)
    return {"env.state": env.state, "env.t": env.t, "rng": rng, "w": w, "returns": list(returns)}


def _episode(generator=False, after=None, steps_arg=False):
    """An episode stepping ``Env`` inside the tape; ``after(total, tape_state)`` is traced
    after the loop (an edge to test)."""
    def factory(jit):
        env, returns = Env(generator), []
        w = tf.Variable(tf.reshape(tf.range(8, dtype=tf.float32), [4, 2]) / 8.0 - 0.25)

        @jit
        def episode(scale, steps=4):
            state = tf.expand_dims(env.state, 0)
            with tf.GradientTape() as tape:
                total = tf.constant(0.0)
                for _ in range(steps):
                    logits = (state * scale) @ w
                    action = int(tf.argmax(logits[0]))
                    s, reward = env.step(action)
                    state = tf.expand_dims(s, 0)
                    total = total + tf.nn.log_softmax(logits)[0, action] * reward
                if after is not None:
                    total = after(total, scale)
                loss = -total
            w.assign_sub(0.1 * tape.gradient(loss, w))
            returns.append(float(total))
            return total
        return types.SimpleNamespace(fn=episode, state=lambda: _state(env, w, returns), env=env)
    return factory


def _scales(n):
    return [(tf.constant(0.5 + 0.25 * (i % 3)),) for i in range(n)]


def _one_graph(total, conversions=1):
    assert total["breaks"] == 0 and total["segments"] == 0, total
    assert total["conversions"] == conversions, total


def test_the_analysis_confines_a_step_to_its_object_and_refuses_what_reaches_beyond():
    summary = confinement_of(Env.step)
    assert isinstance(summary, Confined)
    assert summary.writes == {"state", "t"} and summary.draws == {("rng", "normal")}

    def prints(self):
        print(self.rng.normal())

    def stores(self, out):
        out[0] = self.rng.normal()

    def helps(self):
        return self.helper(self.rng.normal())

    def shifts(self):
        self.state += self.rng.normal()

    assert isinstance(confinement_of(prints), Confined)  # print is refused on what it stands for
    assert confinement_of(stores) == "stores into an object other than its own"
    assert confinement_of(helps).helpers == {"helper"}  # checked in turn while tracing
    assert confinement_of(shifts) == "assigns in place (+=)"


def test_an_environment_stepped_inside_the_tape_is_one_graph_with_a_python_island():
    total = check(_episode(), _scales(12), rtol=0, atol=0)
    _one_graph(total)
    assert total["graph_calls"] >= 8 and total["eager_calls"] <= 4, total


def test_a_generator_object_island_draws_eagers_numbers():
    total = check(_episode(generator=True), _scales(10), rtol=0, atol=0)
    _one_graph(total)
    assert total["graph_calls"] >= 6, (
        f"the island runs inside the one graph: of the 10 calls, all but the 3 profiled ones and a miss run it: {total}"
    )


def test_explain_names_the_island_and_its_commit():
    prog = _episode()(janus.function)
    for (scale,) in _scales(6):
        prog.fn(scale)
    text = str(janus.explain(prog.fn))
    assert "Python island" in text and "commit env" in text, text


def _branch_after(total, scale):
    if scale > 0.9:  # speculated from the profile (never taken in the first calls)
        return total * 2.0
    return total


def test_an_assumption_failing_after_the_island_leaves_the_object_as_eager_does():
    calls = [(tf.constant(0.5),)] * 6 + [(tf.constant(1.0),), (tf.constant(0.5),), (tf.constant(1.0),)]
    total = check(_episode(after=_branch_after), calls, rtol=0, atol=0)
    assert total["assertion_failures"] >= 1 and total["graph_calls"] >= 4, total


def _gather_after(total, scale):
    index = tf.cast(scale * 4.0, tf.int32)  # 0.5 -> 2, 1.0 -> 4: out of range, raises
    return total + tf.gather(tf.constant([1.0, 2.0, 3.0, 4.0]), index)


def test_an_op_failing_after_the_island_raises_as_eager_and_the_object_moves_as_eagers():
    calls = [(tf.constant(0.5),)] * 5 + [(tf.constant(1.0),), (tf.constant(0.5),), (tf.constant(1.0),),
                                          (tf.constant(0.5),)]
    total = check(_episode(after=_gather_after), calls, rtol=0, atol=0)
    assert total["graph_calls"] >= 3 and total["assertion_failures"] >= 2, total


class SometimesRaising:
    """An environment whose step raises on a draw above 1.5 standard deviations."""

    def __init__(self):
        self.rng = np.random.RandomState(11)
        self.state = np.zeros(2, np.float32)

    def step(self, action):
        draw = self.rng.normal()
        if draw > 1.5:
            raise ValueError(f"draw {draw:.3f} too high")
        self.state = np.array([draw, action], np.float32)
        return self.state, draw


def _sometimes(jit):
    env, w = SometimesRaising(), tf.Variable([[0.5], [-0.25]])

    @jit
    def run(x):
        total = tf.constant(0.0)
        for _ in range(3):
            s, draw = env.step(int(tf.argmax(x)))
            total = total + tf.reduce_sum(tf.expand_dims(s, 0) @ w) * draw
        w.assign_add([[0.01], [0.0]])
        return total
    return types.SimpleNamespace(fn=run, state=lambda: {"state": env.state, "rng": env.rng.get_state()[1:], "w": w})


def test_an_island_that_raises_now_and_then_keeps_its_graph_and_eager_raises():
    calls = [(tf.constant([0.1 * i, 0.5, -0.2]),) for i in range(16)]
    total = check(_sometimes, calls, rtol=0, atol=0)
    _one_graph(total)
    assert total["graph_calls"] >= 6 and total["assertion_failures"] >= 1, total


class SwitchingEnv:
    """Returns a float reward, but an int one from its tenth step on."""

    def __init__(self):
        self.rng, self.t = np.random.RandomState(5), 0

    def step(self, action):
        self.t = self.t + 1
        r = self.rng.uniform() + action
        return r if self.t < 10 else int(r)


def _switching(jit):
    env = SwitchingEnv()

    @jit
    def run(x):
        return x * env.step(0) + x * env.step(1)
    return types.SimpleNamespace(fn=run, state=lambda: {"t": env.t, "rng": env.rng.get_state()[1:]})


def test_an_island_returning_another_type_than_profiled_aborts_and_runs_as_eager():
    total = check(_switching, [(tf.constant(float(i)),) for i in range(10)], rtol=0, atol=0)
    assert total["graph_calls"] >= 1 and total["assertion_failures"] >= 1, total


def _after_the_step(use, cls=Env):
    """A step calling ``env.step`` and returning ``use(env, s, r, x)`` of its results."""
    def factory(jit):
        env = cls()

        @jit
        def run(x):
            s, r = env.step(int(x > 0))
            return use(env, s, r, x)
        return types.SimpleNamespace(fn=run, state=lambda: {**_state(env, tf.constant(0), []),
                                                             "log": list(getattr(env, "log", []))})
    return factory


def _split_and_explained(factory, segment_graph_calls):
    """Compare ``factory``'s program with eager: split at one break; its explanation."""
    total = check(factory, [(tf.constant(float(i - 3)),) for i in range(8)], graph_calls=0, rtol=0, atol=0)
    assert total["breaks"] == 1 and total["segment_graph_calls"] >= segment_graph_calls, total
    prog = factory(janus.function)
    for i in range(5):
        prog.fn(tf.constant(float(i - 2)))
    return str(janus.explain(prog.fn))


def _reads_after(jit):
    env = Env()

    @jit
    def run(x):
        s, r = env.step(int(x > 0))
        y = tf.reduce_sum(tf.expand_dims(s, 0)) * x
        return y + env.t  # read after the island: the graph has its value of before the run
    return types.SimpleNamespace(fn=run, state=lambda: _state(env, tf.constant(0), []))


def test_a_read_of_the_object_after_its_island_is_refused_and_stays_eager_right():
    text = _split_and_explained(_reads_after, 3)
    assert "reads env.t after a Python island changed env" in text, text


class LoggingEnv(Env):
    def __init__(self):
        super().__init__()
        self.log = []

    def step(self, action):
        self.log.append(action)  # changes a list: its effects reach beyond rebinding attributes
        self.state = self.state + np.float32(self.rng.normal())
        return self.state, float(action)


class PrintingEnv(Env):
    def step(self, action):
        print("step", action)  # prints while the graph runs: no island
        self.state = self.state + np.float32(self.rng.normal())
        return self.state, float(action)


@pytest.mark.parametrize("cls, why", [(LoggingEnv, "env holds more than plain values and random generators"),
                                      (PrintingEnv, "it calls print")])
def test_a_method_whose_effects_reach_beyond_its_object_is_no_island(cls, why):
    text = _split_and_explained(_after_the_step(lambda env, s, r, x: tf.reduce_sum(s) * x + r, cls), 3)
    assert f"{cls.__name__}.step draws from a NumPy generator and cannot run as a Python island: {why}" in text, text


def test_an_object_that_changes_what_it_holds_runs_eagerly_for_those_calls():
    factory = _episode()
    prog_e, prog_j = factory(lambda f: f), factory(janus.function)
    for i, (scale,) in enumerate(_scales(12)):
        for prog in (prog_e, prog_j):
            if i == 8:
                prog.env.extra = [1, 2]  # a list: the island could not be undone
            if i == 10:
                del prog.env.extra
        assert float(prog_e.fn(scale)) == float(prog_j.fn(scale))
        assert_same(prog_e.state(), prog_j.state(), f"call {i}", 0, 0)
    assert "holds more than plain values" in str(janus.explain(prog_j.fn))
    assert janus.stats(prog_j.fn)["graph_calls"] >= 6, \
        f"12 calls, less 3 profiled and the 2 (calls 9-10) whose env holds a list, leave 7 that can run graphs; at least 6 do: {janus.stats(prog_j.fn)}"


def test_another_thread_running_makes_the_call_eager_and_right():
    factory = _episode()
    prog_e, prog_j = factory(lambda f: f), factory(janus.function)
    for (scale,) in _scales(6):
        assert float(prog_e.fn(scale)) == float(prog_j.fn(scale))
    before = janus.stats(prog_j.fn)["eager_calls"]
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert float(prog_e.fn(tf.constant(0.5))) == float(prog_j.fn(tf.constant(0.5)))
    finally:
        release.set()
        other.join()
    assert janus.stats(prog_j.fn)["eager_calls"] == before + 1
    assert float(prog_e.fn(tf.constant(0.75))) == float(prog_j.fn(tf.constant(0.75)))
    np.testing.assert_array_equal(prog_e.env.state, prog_j.env.state)
    assert prog_e.env.rng.get_state()[2] == prog_j.env.rng.get_state()[2]


def test_a_copy_commits_rebinds_and_an_abort_puts_the_generator_back():
    env = Env()
    copy = IslandCopy("env", lambda a, k: env)
    before = env.rng.get_state()[1].copy(), env.state
    copy.take((), {})
    Env.step(copy.copy, 1)
    assert env.state is before[1] and env.t == 0
    copy.abort()
    np.testing.assert_array_equal(env.rng.get_state()[1], before[0])
    copy.take((), {})
    Env.step(copy.copy, 1)
    stepped = copy.copy.state
    copy.commit()
    assert env.state is stepped and env.t == 1 and copy.copy is None


def test_an_island_whose_array_is_used_as_numpy_is_called_as_written_instead():
    # NumPy indexing of the island's array
    text = _split_and_explained(_after_the_step(lambda env, s, r, x: tf.reduce_sum(tf.constant(s[None])) * x + r), 2)
    assert "called as written, not as Python islands (their arrays are used as NumPy): test_islands.Env.step" in text
    assert "break at test_islands.py" in text and "numpy.random.RandomState.normal" in text, text


GAIN = 0.5


class GainEnv:
    """Reads a module global: its value may change between calls (eager reads it each time)."""

    def __init__(self):
        self.rng, self.x = np.random.RandomState(8), 0.0

    def step(self, action):
        self.x = self.x * GAIN + self.rng.uniform() + action
        return self.x


def _gain(jit):
    env = GainEnv()

    @jit
    def run(x):
        return x * env.step(int(x > 1.0))
    return types.SimpleNamespace(fn=run, state=lambda: {"x": env.x, "rng": env.rng.get_state()[1:]})


class _Gain:
    """A user object: an island may not read it (its attributes could run code)."""
    value = 0.25


def test_a_global_the_island_reads_is_read_at_each_run_and_rebound_to_an_object_runs_as_eager():
    global GAIN
    factory = _gain
    prog_e, prog_j = factory(lambda f: f), factory(janus.function)
    try:
        for i in range(14):
            GAIN = {6: 0.75, 9: _Gain(), 11: 0.5}.get(i, GAIN)
            x = tf.constant(0.5 * i)
            outcomes = []
            for prog in (prog_e, prog_j):
                try:
                    outcomes.append(float(prog.fn(x)))
                except TypeError as e:  # float * _Gain: eager raises, and so must Janus
                    outcomes.append(str(e))
            assert outcomes[0] == outcomes[1], (i, outcomes)
            assert_same(prog_e.state(), prog_j.state(), f"call {i}", 0, 0)
    finally:
        GAIN = 0.5
    stats = janus.stats(prog_j.fn)
    assert stats["graph_calls"] >= 6 and stats["conversions"] == 1, stats


class CartEnv(Env):
    def step(self, action):
        noise = self.rng.normal(0, 0.02, 4).astype(np.float32)
        self.state = (self.state + noise + np.float32(0.01 * (2 * action - 1))).astype(np.float32)
        self.t = self.t + 1
        return self.state, 1.0, bool(self.rng.uniform() < 0.3)  # episodes of 1 to 12 steps


def _until_done(jit):
    env, returns = CartEnv(), []
    w = tf.Variable(tf.reshape(tf.range(8, dtype=tf.float32), [4, 2]) / 8.0 - 0.25)

    @jit
    def episode(scale):
        state = tf.expand_dims(env.state, 0)
        with tf.GradientTape() as tape:
            total = tf.constant(0.0)
            for _ in range(12):
                logits = (state * scale) @ w
                action = int(tf.argmax(logits[0]))
                s, reward, done = env.step(action)
                state = tf.expand_dims(s, 0)
                total = total + tf.nn.log_softmax(logits)[0, action] * reward
                if done:  # a Python bool the island computes: the loop becomes a tf.while_loop
                    break
            loss = -total
        w.assign_sub(0.1 * tape.gradient(loss, w))
        returns.append(float(total))
        return total
    return types.SimpleNamespace(fn=episode, state=lambda: _state(env, w, returns), env=env)


def test_an_island_in_a_loop_that_breaks_on_its_done_runs_inside_the_tensor_loop():
    # a tf.while_loop's gradient adds the steps' terms one by one, eager's tape all at once:
    # the weights may differ by an ulp; the environment's state and draws are eager's exactly
    total = check(_until_done, _scales(14), rtol=1e-6, atol=1e-7)
    _one_graph(total)
    assert total["graph_calls"] >= 8, (
        "the island runs inside the one graph: of the 14 calls, all but the 3 profiled ones and a few misses run it: "
        f"{total}"
    )
    prog = _until_done(janus.function)
    lengths = []
    for (scale,) in _scales(14):
        before = prog.env.t
        prog.fn(scale)
        lengths.append(prog.env.t - before)
    assert len(set(lengths[4:])) >= 3, lengths  # the graph's loop ran episodes of several lengths
    assert "Python island: CartEnv.step" in str(janus.explain(prog.fn))


class Noisy:
    """Draws from a generator it may share with another object."""

    def __init__(self, rng):
        self.rng, self.last = rng, 0.0

    def step(self):
        self.last = self.rng.normal()
        return self.last


def _shared_generator(jit):
    rng = np.random.RandomState(12)
    a, b = Noisy(rng), Noisy(rng)

    @jit
    def run(x):
        first = x * a.step()  # no data flows between the two islands: their order is program order
        return first - 2.0 * x * b.step() + x * a.step()
    return types.SimpleNamespace(fn=run, state=lambda: {"a": a.last, "b": b.last, "rng": rng.get_state()[1:]})


def test_islands_of_two_objects_sharing_a_generator_draw_in_eagers_order():
    total = check(_shared_generator, [(tf.constant(float(i + 1)),) for i in range(10)], rtol=0, atol=0)
    _one_graph(total)
    assert total["graph_calls"] >= 6, (
        f"the islands run inside the one graph: of the 10 calls, all but the 3 profiled ones and a miss run it: {total}"
    )


class HelpedEnv:
    """An environment whose step calls methods of its own, as real ones do (``_observe``)."""

    def __init__(self):
        self.rng, self.pos, self.t = np.random.RandomState(21), np.zeros(2, np.float32), 0

    def step(self, action):
        self._move(action)
        self.t = self.t + 1
        return self._observe(), self._reward()

    def _move(self, action):
        self.pos = (self.pos + np.float32(0.1 * (2 * action - 1)) + self._noise()).astype(np.float32)

    def _noise(self):
        return self.rng.normal(0, 0.05, 2).astype(np.float32)

    def _observe(self):
        return np.concatenate([self.pos, np.float32([self.t % 3])]).astype(np.float32)

    def _reward(self):
        return float(-np.sum(np.abs(self.pos)))


class LeakyHelperEnv(HelpedEnv):
    def _reward(self):
        print("reward")  # a helper that prints: no island
        return 0.0


def _helped(cls):
    def factory(jit):
        env = cls()
        w = tf.Variable([[0.5, -0.5], [0.25, 0.75], [-0.1, 0.2]])

        @jit
        def run(x):
            total = tf.constant(0.0)
            s = tf.zeros([3])
            for _ in range(3):
                action = int(tf.argmax(tf.expand_dims(s, 0) @ w * x, axis=1)[0])
                s, r = env.step(action)
                total = total + tf.reduce_sum(tf.constant(s)) * r
            return total
        return types.SimpleNamespace(fn=run, state=lambda: {"pos": env.pos, "t": env.t, "rng": env.rng.get_state()[1:]})
    return factory


def test_an_island_may_call_methods_of_its_own_that_are_confined_too():
    total = check(_helped(HelpedEnv), [(tf.constant(float(i % 4) - 1.5),) for i in range(10)], rtol=0, atol=0)
    _one_graph(total)
    assert total["graph_calls"] >= 6, (
        f"the island runs inside the one graph: of the 10 calls, all but the 3 profiled ones and a miss run it: {total}"
    )
    summary = confinement_of(HelpedEnv.step)
    assert summary.helpers == {"_move", "_observe", "_reward"} and summary.draws == set()

    def passes_self_on(self):
        return len(self) + self.rng.normal()  # len() would call the class's __len__
    assert confinement_of(passes_self_on) == "passes self on (a builtin or operator could call its methods)"


def test_a_helper_whose_effects_reach_beyond_the_object_makes_no_island():
    check(_helped(LeakyHelperEnv), [(tf.constant(float(i % 4) - 1.5),) for i in range(8)], min_graph_calls=0,
          rtol=0, atol=0)
    prog = _helped(LeakyHelperEnv)(janus.function)
    for i in range(5):
        prog.fn(tf.constant(float(i)))
    text = str(janus.explain(prog.fn))
    assert "HelpedEnv.step draws from a NumPy generator and cannot run as a Python island: in " \
           "LeakyHelperEnv._reward, it calls print" in text, text
