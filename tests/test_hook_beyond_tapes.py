"""The hook beyond tapes (issue #40 item 7): ``janus.enable()`` and ``python -m janus`` take over
a user function that uses TensorFlow without a tape once it has been called
``janus.config.LIMITS.hot_calls`` times (``janus/takeover/hot.py``), with eager's results, random
numbers, variables and printed output; functions that are not TensorFlow-heavy are left alone.

Each program runs twice from the same source, as two modules of a directory that is the
current directory (user code to the hook): eagerly with the hook off, then with the hook
on; the observations are compared call by call."""
import contextlib
import dataclasses
import importlib
import io
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

import janus
from janus import config
from janus.takeover import hook, hot
from janus.takeover.detect import is_trampoline

from harness import assert_same

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
HOT = 5          # the tests' hot_calls: the 5th call takes a function over
CALLS = 16

AGENT = """
import numpy as np
import tensorflow as tf
import keras

actor = keras.Sequential([keras.Input((4,)), keras.layers.Dense(8, activation="tanh"), keras.layers.Dense(2)])
_rng = np.random.RandomState(0)
actor.set_weights([(_rng.randn(*w.shape) * 0.5).astype("float32") for w in actor.get_weights()])
W = tf.Variable([[0.5], [-0.25], [0.1], [0.3]])


def sample_action(observation):                 # PPO: once per environment step
    logits = actor(observation)
    action = tf.squeeze(tf.random.categorical(logits, 1), axis=1)
    return logits, action


def update_target(target_weights, weights, tau):  # DDPG: names no TensorFlow global
    for (a, b) in zip(target_weights, weights):
        a.assign(b * tau + a * (1 - tau))


def report(step, values):                         # prints
    mean = tf.reduce_mean(values)
    print("step", step, "mean", mean)
    return mean


def forward(x):                                   # called by the tape step and on its own
    return tf.tanh(tf.matmul(x, W))


def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((forward(x) - y) ** 2)
    W.assign_sub(0.1 * tape.gradient(loss, W))
    return loss


def discounted(rewards, gamma):                   # pure Python
    out, running = [], 0.0
    for r in reversed(rewards):
        running = r + gamma * running
        out.append(running)
    return out[::-1]


def scale(x, k):                                  # given tensors, but names no TensorFlow
    return x * k


@tf.function
def compiled(x):
    return tf.reduce_sum(x)


def stepping(x):                                  # a generator
    yield tf.reduce_sum(x)


class Holder:
    def __init__(self):                           # creates variables: not a step of a loop
        self.v = tf.Variable([1.0])

    def __call__(self, x):                        # a step of a loop
        return tf.square(self.v * x)


class Block(keras.layers.Layer):                  # Keras calls its methods
    def call(self, x):
        return tf.nn.relu(x)


block = Block()
"""


@pytest.fixture
def user_dir(tmp_path, monkeypatch):
    """Modules written in a directory that is the current directory (user code to the hook),
    ``config.LIMITS.hot_calls`` lowered to ``HOT``."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(config, "LIMITS", dataclasses.replace(config.LIMITS, hot_calls=HOT))
    monkeypatch.delenv("JANUS_HOT_FUNCTIONS", raising=False)
    names = []

    def load(name, source=AGENT):
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        importlib.invalidate_caches()
        names.append(name)
        return importlib.import_module(name)

    yield load
    hook.disable()
    for n in names:
        sys.modules.pop(n, None)


def _observation(i):
    return np.random.RandomState(i).randn(1, 4).astype(np.float32)


def _variables():
    return ([tf.Variable([float(i), 1.0, -1.0]) for i in range(2)],
            [tf.Variable([0.5 * (i + 1), 2.0, 3.0]) for i in range(2)])


def _episode(mod):
    """What one program run shows after every call: results, variables, printed output."""
    tf.random.set_seed(1234)
    targets, weights = _variables()
    seen = []
    for i in range(CALLS):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            logits, action = mod.sample_action(_observation(i))
            mod.update_target(targets, weights, 0.005)
            mean = mod.report(i, logits)
            x = tf.constant(_observation(100 + i))
            loss = mod.train_step(x, tf.constant([[0.5]]))
            pred = mod.forward(x)
            ret = mod.discounted([1.0, 2.0, float(i)], 0.99)
        seen.append({"logits": logits, "action": action, "targets": [v.numpy() for v in targets],
                     "mean": mean, "loss": loss, "pred": pred, "W": mod.W.numpy(), "ret": ret,
                     "stdout": out.getvalue()})
    return seen


def _compare(eager, hooked):
    for i, (e, j) in enumerate(zip(eager, hooked)):
        assert e["stdout"] == j["stdout"], f"call {i}: {e['stdout']!r} != {j['stdout']!r}"
        # seeded draws and the arithmetic around them: bitwise
        assert_same(e["logits"], j["logits"], f"call {i} logits", 0, 0)
        assert_same(e["action"], j["action"], f"call {i} action", 0, 0)
        for k in ("targets", "mean", "loss", "pred", "W", "ret"):
            assert_same(e[k], j[k], f"call {i} {k}")


def _untouched(fn):
    return not is_trampoline(fn.__code__) and "__wrapped__" not in vars(fn)


def test_hot_tensorflow_functions_are_taken_over_with_eagers_results(user_dir):
    eager = _episode(user_dir("agent_eager"))
    mod = user_dir("agent_hooked")
    codes = {name: getattr(mod, name).__code__ for name in ("sample_action", "update_target", "report", "forward")}
    with janus.enabled():
        counted = sorted(f.__name__ for f in hook.counting() if f.__module__ == mod.__name__)
        assert counted == ["__call__", "forward", "report", "sample_action", "update_target"]
        hooked = _episode(mod)
        taken = hook.taken_over()
        assert {"sample_action", "update_target", "report", "forward", "train_step"} <= set(taken), taken
        for name in ("sample_action", "update_target", "report"):
            s = janus.stats(getattr(mod, name))
            # taken over at the HOT-th call, which runs as written: CALLS - HOT calls through Janus;
            # 3 profiled calls, then one graph for every call: the observation is a NumPy array of
            # one dtype and shape (fed), the variables the same objects, tau the same float,
            # ``step`` an int fed to the graph.  A second conversion would be a specialization lost.
            assert s["calls"] == CALLS - HOT, (name, s)
            assert s["conversions"] == 1 and s["fallbacks"] == 0, (name, s)
            assert s["graph_calls"] == CALLS - HOT - 3, (name, s, janus.explain(getattr(mod, name)))
        # forward: its calls from the tape step's eager (profiled) calls count too; it is taken over
        # at the HOT-th; from then on it is inlined into train_step's graph and runs as one on its own
        assert janus.stats(mod.forward)["graph_calls"] >= 1
    _compare(eager, hooked)
    for name, code in codes.items():   # disable() gives every function its own code back
        assert getattr(mod, name).__code__ is code and _untouched(getattr(mod, name))
    assert janus.stats(mod.sample_action)["calls"] == CALLS - HOT   # remembered after disable()


def test_functions_that_are_not_tensorflow_heavy_are_left_alone(user_dir):
    mod = user_dir("agent_alone")
    alone = {"discounted": mod.discounted, "scale": mod.scale, "stepping": mod.stepping,
             "Block.call": mod.Block.__dict__["call"]}
    codes = {name: fn.__code__ for name, fn in alone.items()}
    janus.do_not_convert(mod.forward)
    with janus.enabled():
        for i in range(3 * HOT):
            mod.discounted([1.0, float(i)], 0.9)
            mod.scale(tf.constant([1.0, 2.0]), 3.0)
            list(mod.stepping(tf.constant([1.0])))
            mod.compiled(tf.constant([1.0, 2.0]))
            mod.block(tf.constant([[-1.0, 2.0]]))
            mod.forward(tf.ones([1, 4]))
        counted = {f.__name__ for f in hook.counting() if f.__module__ == mod.__name__}
        assert not counted & {"discounted", "scale", "stepping", "call", "forward"}, counted
        assert not set(hook.taken_over()) & {"discounted", "scale", "stepping", "Block.call", "compiled", "forward"}
        for name, fn in alone.items():
            assert fn.__code__ is codes[name] and _untouched(fn), name
            assert janus.stats(fn)["calls"] == 0
        assert isinstance(mod.compiled, type(tf.function(lambda: 0)))   # tf.function: not a Python function
    verdicts = {name: hot.candidacy(fn).reason for name, fn in alone.items()}
    assert verdicts["discounted"].startswith("names no TensorFlow") and verdicts["scale"].startswith("names no")
    assert verdicts["stepping"] == "a generator or coroutine"
    assert hot.candidacy(mod.forward).reason == "marked janus.do_not_convert"
    assert hot.candidacy(tf.nn.relu).reason == "not the user's code"
    assert hot.candidacy(mod.train_step).reason.startswith("records a tape")
    assert hot.candidacy(mod.update_target) == hot.Candidacy(True, "calls .assign")
    assert hot.candidacy(mod.Holder.__init__).reason.startswith("a special method")
    assert hot.candidacy(mod.Holder.__call__).candidate
    assert hot.candidacy(mod.Block.__dict__["call"]).reason == "a method of a Keras class (Keras calls it)"


@pytest.mark.parametrize("how", ["keyword", "environment", "JANUS_DISABLE"])
def test_the_off_switch_leaves_functions_without_a_tape_alone(user_dir, monkeypatch, how):
    mod = user_dir(f"agent_off_{how.lower()}")
    code = mod.sample_action.__code__
    if how != "keyword":
        monkeypatch.setenv("JANUS_HOT_FUNCTIONS" if how == "environment" else how, "0" if how == "environment" else "1")
    with janus.enabled(**({"hot_functions": False} if how == "keyword" else {})):
        tf.random.set_seed(1)
        for i in range(3 * HOT):
            mod.sample_action(_observation(i))
            mod.train_step(tf.constant(_observation(i)), tf.constant([[0.5]]))
        assert hook.counting() == []
        assert "sample_action" not in hook.taken_over()
        if how != "JANUS_DISABLE":
            # the tape hook still works (the list may also name what an earlier test's hook
            # took over: enable() takes it over again while it lives)
            assert "train_step" in hook.taken_over(), hook.taken_over()
            assert janus.stats(mod.train_step)["calls"] == 3 * HOT, janus.stats(mod.train_step)
        assert mod.sample_action.__code__ is code and janus.stats(mod.sample_action)["calls"] == 0


def test_enable_again_without_hot_functions_stops_counting_and_again_with_them_resumes(user_dir):
    mod = user_dir("agent_again")
    code = mod.update_target.__code__
    targets, weights = _variables()
    with janus.enabled():
        for _ in range(HOT - 1):
            mod.update_target(targets, weights, 0.5)
        janus.enable(hot_functions=False)          # stops counting: own code back
        assert hook.counting() == [] and mod.update_target.__code__ is code
        janus.enable()                             # counts again, from zero
        for _ in range(HOT):
            mod.update_target(targets, weights, 0.5)
        assert "update_target" in hook.taken_over()
        for _ in range(5):
            mod.update_target(targets, weights, 0.5)
        assert janus.stats(mod.update_target)["graph_calls"] == 2
    with janus.enabled():                          # taken over before a disable(): at once, same Janus function
        assert "update_target" in hook.taken_over()
        assert "update_target" not in {f.__name__ for f in hook.counting()}
        mod.update_target(targets, weights, 0.5)
        assert janus.stats(mod.update_target)["calls"] == 6 and janus.stats(mod.update_target)["graph_calls"] == 3
    expected_t, expected_w = _variables()
    for _ in range(HOT - 1 + HOT + 5 + 1):
        for a, b in zip(expected_t, expected_w):
            a.assign(b * 0.5 + a * (1 - 0.5))
    assert_same([v.numpy() for v in expected_t], [v.numpy() for v in targets], "targets")


# ------------------------------------------------------------------ python -m janus
SCRIPT = """
import numpy as np
import tensorflow as tf
from tensorflow import keras

tf.random.set_seed(42)
actor = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
rng = np.random.RandomState(0)
actor.set_weights([(rng.randn(*w.shape) * 0.5).astype("float32") for w in actor.get_weights()])
target = [tf.Variable(np.zeros(3, np.float32)), tf.Variable(np.ones(2, np.float32))]
source = [tf.Variable(np.arange(3, dtype=np.float32)), tf.Variable(np.full(2, 4.0, np.float32))]


def sample_action(observation):
    logits = actor(observation)
    action = tf.squeeze(tf.random.categorical(logits, 1), axis=1)
    return logits, action


def update_target(target_weights, weights, tau):
    for (a, b) in zip(target_weights, weights):
        a.assign(b * tau + a * (1 - tau))


def discounted(rewards, gamma):
    return [r * gamma for r in rewards]


class Base(keras.Model):
    pass


class Net(Base):                     # a Keras class through a base of the script's: Keras calls its call
    def call(self, x):
        return tf.square(x)


net = Net()
for step in range(40):
    logits, action = sample_action(rng.randn(1, 4).astype("float32"))
    update_target(target, source, 0.05)
    print(step, action.numpy().tolist(), logits.numpy().tolist(), discounted([1.0, float(step)], 0.5),
          [v.numpy().tolist() for v in target], float(tf.reduce_sum(net(tf.ones([1, 2]) * step))))
"""


def _run(args, **extra):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    for name in ("JANUS_REPORT", "JANUS_DISABLE", "JANUS_HOT_FUNCTIONS"):
        env.pop(name, None)
    env.update(extra)
    return subprocess.run([sys.executable] + args, capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)


def _report(stderr):
    import re
    return {m.group(1): {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
            for m in re.finditer(r"^janus: (.+?): (calls=.*)$", stderr, re.M)}


def test_cli_takes_over_hot_functions_of_a_script_with_eagers_output(tmp_path):
    script = tmp_path / "ppo_loop.py"
    script.write_text(SCRIPT)
    eager = _run([str(script)])
    hooked = _run(["-m", "janus", "--report", str(script)], JANUS_LOG="debug")
    assert eager.returncode == 0 and hooked.returncode == 0, hooked.stderr[-3000:]
    assert hooked.stdout == eager.stdout and len(eager.stdout.splitlines()) == 40
    # counted (the rewrite cannot see Keras through Base), then left as written when hot
    assert "Net.call stays as written after 20 calls: a method of a Keras class" in hooked.stderr
    rep = _report(hooked.stderr)
    assert set(rep) == {"sample_action", "update_target"}, hooked.stderr[-3000:]
    for name in rep:   # the 20th call (hot_calls) is the last as written; then 3 profiled calls and graphs
        assert rep[name]["calls"] == 40 - config.LIMITS.hot_calls and rep[name]["conversions"] == 1, rep
        assert rep[name]["graph_calls"] == 40 - config.LIMITS.hot_calls - 3, rep

    tapes_only = _run(["-m", "janus", "--report", "--tapes-only", str(script)])
    assert tapes_only.returncode == 0 and tapes_only.stdout == eager.stdout
    assert _report(tapes_only.stderr) == {} and "nothing was taken over" in tapes_only.stderr
    environment = _run(["-m", "janus", "--report", str(script)], JANUS_HOT_FUNCTIONS="0")
    assert environment.stdout == eager.stdout and _report(environment.stderr) == {}
    bad = _run(["-m", "janus", str(script)], JANUS_HOT_FUNCTIONS="maybe")
    assert bad.returncode == 2 and "JANUS_HOT_FUNCTIONS" in bad.stderr


def test_script_rewrite_counts_functions_naming_tensorflow_only():
    src = textwrap.dedent("""
        import tensorflow as tf
        import keras as K
        from tensorflow import keras
        model = K.Sequential([])

        def uses_alias(x):
            return tf.square(x)

        def uses_model(x):
            return model(x)

        def assigns(a, b):
            a.assign(b)

        def pure(x):
            return x + 1

        def step(x):
            with tf.GradientTape() as tape:
                y = x * x
            return tape.gradient(y, x)

        @tf.function
        def compiled(x):
            return tf.square(x)

        class Net(keras.Model):
            def call(self, x):
                return tf.square(x)

        class Agent:
            def __init__(self):
                self.v = tf.Variable(1.0)

            def act(self, x):
                return tf.argmax(x)

            def gen(self, x):
                yield tf.argmax(x)
    """)
    plan = hook.prepare_script(src, "<test script>")
    assert plan.functions == ["step"]
    assert plan.counted == ["uses_alias", "uses_model", "assigns", "Agent.act"]
    assert hook.prepare_script(src, "<test script>", hot_functions=False).counted == []


def test_cli_keras_io_ppo_samples_actions_as_graphs_with_eagers_trajectory():
    """keras-io's PPO with its ``@tf.function`` decorators removed, as a user runs it: every
    action drawn, every return and the trained weights are eager's (an action drawn otherwise
    would change the whole trajectory)."""
    script = os.path.join(HERE, "scripts", "ppo_keras_io.py")
    eager = _run([script, "3", "80"])
    hooked = _run(["-m", "janus", "--report", script, "3", "80"])
    assert eager.returncode == 0 and hooked.returncode == 0, hooked.stderr[-3000:]
    assert hooked.stdout == eager.stdout and eager.stdout.count("actions ") == 3
    rep = _report(hooked.stderr)
    steps = 3 * 80
    # taken over at its 20th step; 3 profiled calls, then one graph: the observation is always a
    # (1, 4) float32 NumPy array, fed
    assert rep["sample_action"]["calls"] == steps - config.LIMITS.hot_calls, rep
    assert rep["sample_action"]["conversions"] == 1
    assert rep["sample_action"]["graph_calls"] == steps - config.LIMITS.hot_calls - 3
    # two signatures: a step's (1, 2) logits and the buffers train_policy's profiled (eager) calls pass
    assert rep["logprobabilities"]["conversions"] <= 2 and rep["logprobabilities"]["graph_calls"] >= steps - 30, rep
    assert rep["train_policy"]["graph_calls"] >= 1 and rep["train_value_function"]["graph_calls"] >= 1, rep
    assert set(rep) == {"sample_action", "logprobabilities", "train_policy", "train_value_function"}, rep


RAISING = """
import tensorflow as tf

FAIL = False


def risky(x):
    if FAIL:
        raise ValueError("bad input")
    return tf.reduce_sum(x * 2.0)


for i in range(30):
    FAIL = i == 3                      # raises while counted
    try:
        print("sum", float(risky(tf.ones([2]) * i)))
    except ValueError as e:
        print("caught", e)
FAIL = True
risky(tf.ones([2]))                    # raises once taken over: python's traceback, as eager's
"""


def test_cli_exception_in_a_hot_function_has_eagers_traceback(tmp_path):
    script = tmp_path / "raising_hot.py"
    script.write_text(RAISING)
    eager = _run([str(script)])
    hooked = _run(["-m", "janus", str(script)], JANUS_LOG="info")
    assert eager.returncode == hooked.returncode == 1
    assert hooked.stdout == eager.stdout and "caught bad input" in eager.stdout
    assert "took over risky after 20 calls" in hooked.stderr, hooked.stderr[-2000:]
    traceback = hooked.stderr[hooked.stderr.index("Traceback"):]
    assert traceback == eager.stderr[eager.stderr.index("Traceback"):], (eager.stderr, hooked.stderr)


def test_cli_keras_io_ddpg_updates_targets_as_graphs_with_eagers_weights():
    """keras-io's DDPG without its ``@tf.function`` decorators: every episode's reward and the
    target actor's weights are eager's; ``update_target`` (variables assigned, no tape) runs as
    graphs once hot, and so do the methods and functions around it, or they give up, correctly."""
    script = os.path.join(HERE, "scripts", "ddpg_keras_io.py")
    eager = _run([script, "3", "60"])
    hooked = _run(["-m", "janus", "--report", script, "3", "60"])
    assert eager.returncode == 0 and hooked.returncode == 0, hooked.stderr[-3000:]
    assert hooked.stdout == eager.stdout and eager.stdout.count("Episode") == 3
    rep = _report(hooked.stderr)
    calls = 2 * 3 * 60   # the target actor's and the target critic's, every step
    assert rep["update_target"]["calls"] == calls - config.LIMITS.hot_calls, rep
    # two signatures: the actor's 4 variables and the critic's 10, each list guarded on its objects
    assert rep["update_target"]["conversions"] == 2, rep
    assert rep["update_target"]["graph_calls"] >= calls - config.LIMITS.hot_calls - 6, (
        "each of the two signatures runs its graph in every call after its 3 profiled ones: at most 6 of the calls "
        f"after hot_calls run eagerly: {rep}"
    )
    assert rep["Buffer.update"]["graph_calls"] >= 1, f"Buffer.update, taken over once hot, runs as a graph: {rep}"
