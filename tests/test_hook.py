"""The transparent GradientTape hook (janus.enable / disable / enabled) and ``python -m janus``."""
import importlib
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

import janus
from janus.takeover import hook, redirect
from janus.driver.function import JanusFunction

from harness import assert_same

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SCRIPTS = os.path.join(HERE, "scripts")
PY = sys.executable

USER_MODULE = """
import tensorflow as tf

W = tf.Variable([[0.5], [-0.25]])


def step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(tf.matmul(x, W) - y))
    g = tape.gradient(loss, W)
    W.assign_sub(0.1 * g)
    return loss


def plain(x):
    return x * 2.0


def outer(x):
    def inner(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x * x
        return tape.gradient(y, x)
    return inner(x)


class Model:
    def __init__(self):
        self.v = tf.Variable([1.0, 2.0])
        self.calls = 0

    def train_step(self, x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(self.v * x)
        self.v.assign_sub(0.5 * tape.gradient(loss, self.v))
        return loss

    @staticmethod
    def grad_of_square(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(x * x)
        return tape.gradient(y, x)

    def predict(self, x):
        return self.v * x
"""


@pytest.fixture
def user_dir(tmp_path, monkeypatch):
    """A directory of user modules that is the current directory (so the hook scans it)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    names = []

    def write(name, source):
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        names.append(name)
        importlib.invalidate_caches()
        return name

    yield write
    hook.disable()
    for n in names:
        sys.modules.pop(n, None)


def _data(i):
    rs = np.random.RandomState(i)
    return tf.constant(rs.randn(4, 2).astype(np.float32)), tf.constant(rs.randn(4, 1).astype(np.float32))


def test_enable_takes_over_tape_functions_and_methods_and_disable_restores(user_dir):
    name = user_dir("hook_user_a", USER_MODULE)
    mod = importlib.import_module(name)
    orig_step, orig_train = mod.step, mod.Model.__dict__["train_step"]
    orig_static = mod.Model.__dict__["grad_of_square"]
    orig_plain, orig_outer, orig_predict = mod.plain, mod.outer, mod.Model.__dict__["predict"]
    assert hook.taken_over() == []

    janus.enable()
    assert hook.is_enabled()
    assert isinstance(mod.step, JanusFunction)
    assert isinstance(mod.Model.__dict__["train_step"], JanusFunction)
    assert isinstance(mod.Model.__dict__["grad_of_square"], staticmethod)
    assert isinstance(mod.Model.__dict__["grad_of_square"].__func__, JanusFunction)
    # no tape in their own body: untouched
    assert mod.plain is orig_plain and mod.outer is orig_outer
    assert mod.Model.__dict__["predict"] is orig_predict
    assert sorted(hook.taken_over()) == ["Model.grad_of_square", "Model.train_step", "step"]

    # the taken-over function and method give eager's results and run as graphs
    eager_w = tf.Variable(mod.W.numpy())
    m_j, m_e = mod.Model(), mod.Model()
    for i in range(8):
        x, y = _data(i)
        rj = mod.step(x, y)
        mod.W, saved = eager_w, mod.W          # run the original on its own variable
        re_ = orig_step(x, y)
        eager_w, mod.W = mod.W, saved
        assert_same(re_, rj, f"step call {i}")
        assert_same(eager_w, mod.W, f"W after call {i}")
        assert_same(orig_train(m_e, x[0]), m_j.train_step(x[0]), f"train_step call {i}")
        assert_same(m_e.v, m_j.v, f"v after call {i}")
        assert_same(orig_static.__func__(x), mod.Model.grad_of_square(x), f"static call {i}")
    assert janus.stats(mod.step)["graph_calls"] >= 1, (
        f"the taken-over function converts and runs as a graph within its 8 calls: {janus.explain(mod.step)}"
    )
    assert janus.stats(mod.Model.__dict__["train_step"])["graph_calls"] >= 1, \
        f"the taken-over method converts and runs as a graph within its 8 calls: {janus.stats(m_j.train_step)}"
    # one cache shared by instances
    assert janus.stats(m_j.train_step) == janus.stats(mod.Model().train_step)

    janus.disable()
    assert not hook.is_enabled()
    assert mod.step is orig_step
    assert mod.Model.__dict__["train_step"] is orig_train
    assert mod.Model.__dict__["grad_of_square"] is orig_static
    assert hook.taken_over() == []


def test_import_hook_takes_over_modules_imported_later(user_dir):
    janus.enable()
    try:
        name = user_dir("hook_user_b", USER_MODULE)
        mod = importlib.import_module(name)
        assert isinstance(mod.step, JanusFunction)
        assert isinstance(mod.Model.__dict__["train_step"], JanusFunction)
        assert not isinstance(mod.plain, JanusFunction)
        # the module keeps its ordinary loader
        assert type(mod.__loader__).__name__ == "SourceFileLoader"
        assert type(mod.__spec__.loader).__name__ == "SourceFileLoader"
        assert "step" in hook.taken_over()
    finally:
        janus.disable()
    assert not any(type(f).__name__ == "_HookFinder" for f in sys.meta_path)
    assert not isinstance(mod.step, JanusFunction)
    assert not isinstance(mod.Model.__dict__["train_step"], JanusFunction)
    # after disable, later imports are left alone
    name2 = user_dir("hook_user_c", USER_MODULE)
    mod2 = importlib.import_module(name2)
    assert not isinstance(mod2.step, JanusFunction)


def test_enabled_context_manager_and_rebinding(user_dir):
    name = user_dir("hook_user_d", USER_MODULE)
    mod = importlib.import_module(name)
    original = mod.step
    with janus.enabled():
        assert isinstance(mod.step, JanusFunction)
        # re-enabling is a rescan, not a second wrap
        janus.enable()
        assert isinstance(mod.step.python_function, type(original))
        assert hook.taken_over().count("step") == 1

        def mine(x, y):
            return x
        mod.step = mine                      # the user rebinds the name: disable leaves it
    assert mod.step is mine
    assert not hook.is_enabled()
    mod.step = original


def test_non_user_modules_are_not_scanned(user_dir):
    import janus.driver.function as jfmod
    before = dict(vars(jfmod))
    with janus.enabled():
        assert not any(q.startswith("JanusFunction") for q in hook.taken_over())
        # nothing from TensorFlow / Keras (site-packages) is taken over
        assert tf.keras.optimizers.SGD.__dict__.get("apply_gradients") is None or \
            not isinstance(tf.keras.optimizers.SGD.__dict__.get("apply_gradients"), JanusFunction)
    assert dict(vars(jfmod)) == before
    assert not hook.is_user_file(tf.__file__)
    assert not hook.is_user_file(os.path.join(os.path.dirname(janus.__file__), "hook.py"))


def test_tf_is_not_patched(user_dir):
    tape_attrs = dict(vars(tf.GradientTape))
    with janus.enabled():
        assert dict(vars(tf.GradientTape)) == tape_attrs
        assert tf.GradientTape.__module__.startswith("tensorflow")


LATE_MODULE = """
import tensorflow as tf


def make_step(w, lr):
    def step(x):                       # a closure: no namespace holds it
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * x) ** 2
        w.assign_sub(lr * tape.gradient(loss, w))
        return loss
    return step


def make_trainer():
    class Trainer:                      # a class created at run time
        def __init__(self):
            self.v = tf.Variable([0.5, -0.5])
            self.steps = 0

        def train(self, x):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(self.v * x * x)
            self.v.assign_sub(0.05 * tape.gradient(loss, self.v))
            self.steps += 1
            return loss
    return Trainer()
"""


def _xs(n):
    return [tf.constant([1.0, 0.1 * i]) for i in range(n)]


def _oracle(mod, n):
    """Losses and final values of the steps run eagerly, with the hook off."""
    w = tf.Variable([1.0, 2.0])
    step, trainer = mod.make_step(w, 0.01), mod.make_trainer()
    return [(float(step(x)), float(trainer.train(x))) for x in _xs(n)]


@pytest.fixture
def fast_sampling(monkeypatch):
    """On 3.11 the hook samples stacks (every 10 ms by default): sample every millisecond,
    so that the tests' short steps are found within their first calls."""
    monkeypatch.setenv("JANUS_TAKEOVER_SAMPLE_MS", "1")


def _until_taken(call, names, limit=40):
    """Call ``call()`` until every function named in ``names`` is redirected to Janus (or
    ``limit`` calls)."""
    results = []
    while len(results) < limit and not set(names) <= {f.__qualname__ for f in redirect.redirected()}:
        results.append(call())
    return results


def test_closures_classes_and_early_references_are_taken_over_when_they_record_a_tape(user_dir, fast_sampling):
    mod = importlib.import_module(user_dir("hook_late", LATE_MODULE))
    expected = _oracle(mod, 60)
    early_reference = mod.make_step          # taken before enable(): holds no tape itself
    names = ["make_step.<locals>.step", "make_trainer.<locals>.Trainer.train"]
    with janus.enabled():
        w = tf.Variable([1.0, 2.0])
        step, trainer = early_reference(w, 0.01), mod.make_trainer()
        xs = iter(_xs(60))

        def call():
            x = next(xs)
            return float(step(x)), float(trainer.train(x))

        got = _until_taken(call, names)
        assert set(names) <= set(hook.taken_over()), f"not found in {len(got)} calls"
        assert len(got) < 40
        got += [call() for _ in range(10)]
        np.testing.assert_allclose(got, expected[:len(got)], rtol=1e-5)
        stats = [janus.stats(f) for f in (step.__wrapped__, type(trainer).train.__wrapped__)]
        assert all(s["graph_calls"] >= 6 and s["conversions"] <= 2 for s in stats), stats
        import inspect
        assert list(inspect.signature(step).parameters) == ["x"]
    assert step.__code__.co_name == "step" and "__wrapped__" not in vars(step)
    assert hook.taken_over() == []
    plain = mod.make_step(tf.Variable(w.numpy()), 0.01)
    assert abs(float(step(_xs(1)[0])) - float(plain(_xs(1)[0]))) < 1e-6   # the restored code runs as written


def test_a_reference_taken_before_enable_reaches_the_scans_janus_function(user_dir, fast_sampling):
    mod = importlib.import_module(user_dir("hook_early", USER_MODULE))
    early = mod.step
    with janus.enabled():
        scanned = mod.step
        assert isinstance(scanned, JanusFunction)
        calls = iter(range(100))
        _until_taken(lambda: early(*_data(next(calls))), ["step"])
        before = janus.stats(scanned)["calls"]
        for i in range(6):
            early(*_data(i))                  # redirected to the scan's Janus function
        assert janus.stats(scanned)["calls"] == before + 6 and janus.stats(scanned)["graph_calls"] >= 3, \
            f"all 6 calls through the early reference reach the scan's Janus function; at most 3 of them are profiled: {janus.stats(scanned)}"
        assert hook.taken_over().count("step") == 1   # the same Janus function, not a second one
    assert mod.step is early and early.__code__.co_name == "step"
    assert scanned.python_function is early


def test_functions_defined_after_enable_are_taken_over(user_dir, tmp_path, fast_sampling):
    path = tmp_path / "late_defs.py"
    path.write_text(textwrap.dedent("""
        import tensorflow as tf
        v = tf.Variable(3.0)

        def fit(x):
            with tf.GradientTape() as tape:
                loss = (v * x - 1.0) ** 2
            v.assign_sub(0.01 * tape.gradient(loss, v))
            return loss
    """))
    with janus.enabled():
        namespace = {"__name__": "late_defs"}
        exec(compile(path.read_text(), str(path), "exec"), namespace)   # defined after enable()
        xs = iter([tf.constant(0.1 * i) for i in range(60)])
        losses = _until_taken(lambda: float(namespace["fit"](next(xs))), ["fit"])
        losses += [float(namespace["fit"](next(xs))) for _ in range(8)]
        assert janus.stats(hook.taken_over_functions()[0])["graph_calls"] >= 4, \
            f"of the 8 calls after the take-over, those after the 3 default profiled calls may run the graph; at least 4 do: {janus.stats(hook.taken_over_functions()[0])}"
    v = tf.Variable(3.0)
    expected = []
    for i in range(len(losses)):
        with tf.GradientTape() as tape:
            loss = (v * tf.constant(0.1 * i) - 1.0) ** 2
        v.assign_sub(0.01 * tape.gradient(loss, v))
        expected.append(float(loss))
    np.testing.assert_allclose(losses, expected, rtol=1e-5)


# ------------------------------------------------------------------ script rewrite, in process
def _run_source(source, rewrite):
    g = {"__name__": "__main__", "__builtins__": __builtins__}
    if rewrite:
        plan = hook.prepare_script(textwrap.dedent(source), "<test script>")
        code = plan.code
    else:
        plan, code = None, compile(textwrap.dedent(source), "<test script>", "exec")
    exec(code, g)
    return plan, {k: v for k, v in g.items() if not k.startswith("__") and not isinstance(v, type(np))}


LOOP_SCRIPT = """
import tensorflow as tf
w = tf.Variable([1.0, -1.0])
h = tf.zeros([2])
total = 0.0
for i in range(9):
    x = tf.constant([1.0, 2.0]) * float(i)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(w * x + h)
    w.assign_sub(0.01 * tape.gradient(loss, w))
    h = h * 0.5 + loss
    total += 1.0
result = (w.numpy().tolist(), h, total, loss)
"""


def test_script_rewrite_of_module_level_loop_matches_plain_exec():
    plan_, plain = _run_source(LOOP_SCRIPT, rewrite=False)
    plan, rewritten = _run_source(LOOP_SCRIPT, rewrite=True)
    assert [lp.lineno for lp in plan.loops] == [6], plan.skipped_loops
    loop = plan.loops[0]
    assert loop.params == ["i", "h", "total"]
    assert loop.returns == ["h", "loss", "total"]
    # x and tape are never read after the loop, so they stay local to the loop body
    assert set(plain) - set(rewritten) == {"x", "tape"}
    assert set(rewritten) <= set(plain)
    for k in ("w", "h", "total", "loss", "result"):
        assert_same(plain[k], rewritten[k], k)


def test_script_rewrite_of_two_training_loops():
    src = LOOP_SCRIPT + """
for j in range(4):
    with tf.GradientTape() as tape:
        loss2 = tf.reduce_sum(w * w)
    w.assign_sub(0.1 * tape.gradient(loss2, w))
final = (w.numpy().tolist(), loss2)
"""
    plan, rewritten = _run_source(src, rewrite=True)
    _, plain = _run_source(src, rewrite=False)
    assert [lp.lineno for lp in plan.loops] == [6, 15], plan.skipped_loops
    for k in ("w", "h", "total", "loss", "result", "loss2", "final"):
        assert_same(plain[k], rewritten[k], k)


def test_script_rewrite_declines_complicated_loops_and_stays_correct():
    src = """
    import tensorflow as tf
    w = tf.Variable(2.0)
    for i in range(5):
        with tf.GradientTape() as tape:
            y = w * w
        if i == 3:
            break
        w.assign_sub(0.1 * tape.gradient(y, w))
    for j in range(3):
        with tf.GradientTape() as tape:
            z = w * 3.0
        if j == 0:
            maybe = 1
        print(maybe)
    out = w.numpy()
    """
    plan, rewritten = _run_source(src, rewrite=True)
    _, plain = _run_source(src, rewrite=False)
    assert plan.loops == []
    assert [ln for ln, _ in plan.skipped_loops] == [4, 10]
    assert "Break" in plan.skipped_loops[0][1]
    assert "maybe" in plan.skipped_loops[1][1]
    assert_same(plain["out"], rewritten["out"], "out")


def test_script_rewrite_decorates_tape_functions_only():
    src = """
    import tensorflow as tf

    def step(v):
        with tf.GradientTape() as tape:
            y = v * v
        return tape.gradient(y, v)

    def helper(v):
        return v + 1

    class T:
        def train(self, v):
            with tf.GradientTape() as t:
                y = v * 3.0
            return t.gradient(y, v)

        @property
        def p(self):
            return tf.GradientTape

        def gen(self):
            with tf.GradientTape():
                yield 1
    """
    plan = hook.prepare_script(textwrap.dedent(src), "<test script>")
    assert plan.functions == ["step", "T.train"]


# ------------------------------------------------------------------ python -m janus
def _env(**extra):
    env = dict(os.environ)
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env.pop("JANUS_REPORT", None)
    env.pop("JANUS_DISABLE", None)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    env.update(extra)
    return env


def _run(args, **extra):
    return subprocess.run([PY] + args, capture_output=True, text=True, cwd=ROOT, env=_env(**extra), timeout=300)


def _losses(stdout):
    return [float(m) for m in re.findall(r"(?:loss|eval) (-?\d+\.\d+)", stdout)]


_TF_NOISE = re.compile(r"^(WARNING: All log messages before absl::InitializeLog\(\).*|I\d{4} .*oneDNN custom operations.*"
                       r"|I\d{4} .*cudart_stub\.cc.*Could not find cuda drivers.*"
                       r"|E\d{4} .*cuda_platform\.cc.*failed call to cuInit.*)\n", re.M)   # the full tensorflow package, no GPU


def _own_stderr(stderr):
    """stderr without TensorFlow's import-time log lines (printed by any TF import, eager or not)."""
    return _TF_NOISE.sub("", stderr)


def _report(stderr):
    return {m.group(1): {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(2))}
            for m in re.finditer(r"^janus: (.+?): (calls=.*)$", stderr, re.M)}


def test_cli_runs_unmodified_training_method_script_as_graphs():
    script = os.path.join(SCRIPTS, "train_method.py")
    with open(script) as fh:
        text = fh.read()
    assert "janus" not in text
    eager = _run([script])
    jan = _run(["-m", "janus", "--report", script])
    assert eager.returncode == 0, eager.stderr
    assert jan.returncode == 0, jan.stderr
    le, lj = _losses(eager.stdout), _losses(jan.stdout)
    assert len(le) == 21 and len(lj) == 21, (eager.stdout, jan.stdout)
    np.testing.assert_allclose(lj, le, rtol=1e-4, atol=1e-4)
    assert eager.stdout.splitlines()[0] == jan.stdout.splitlines()[0]
    rep = _report(jan.stderr)
    assert "Trainer.train_step" in rep, jan.stderr
    assert rep["Trainer.train_step"]["calls"] == 20, \
        f"the script's 20 steps (its STEPS) all call the taken-over train_step: {rep}"
    assert rep["Trainer.train_step"]["graph_calls"] >= 10, (
        f"of the 20 steps, all but the profiled ones and a few conversions run as graphs: {jan.stderr}"
    )
    with open(script) as fh:
        assert fh.read() == text  # the file is never modified


def test_cli_passes_argv_and_report_by_environment():
    script = os.path.join(SCRIPTS, "train_method.py")
    jan = _run(["-m", "janus", script, "7"], JANUS_REPORT="1")
    assert jan.returncode == 0, jan.stderr
    assert len(_losses(jan.stdout)) == 8
    rep = _report(jan.stderr)
    assert rep["Trainer.train_step"]["calls"] == 7, f"argv 7: the script runs 7 steps, all through Janus: {rep}"
    assert rep["Trainer.train_step"]["graph_calls"] >= 1, \
        f"7 calls: a graph runs after the profiled calls: {jan.stderr}"
    quiet = _run(["-m", "janus", script, "4"])
    assert quiet.returncode == 0 and "janus:" not in quiet.stderr


@pytest.mark.parametrize("script,line,n_losses,min_graphs", [
    # x, y = data[step % 4]: the body's parameter ``step`` is a new Python int every iteration
    ("train_loop.py", 19, 20, 1),
    # for x, y in dataset: inside an epoch loop (the innermost loop recording the tape is taken)
    ("train_loop_epochs.py", 16, 4, 12),
])
def test_cli_module_level_training_loop(script, line, n_losses, min_graphs):
    script = os.path.join(SCRIPTS, script)
    eager = _run([script])
    jan = _run(["-m", "janus", script], JANUS_REPORT="1")
    assert eager.returncode == 0, eager.stderr
    assert jan.returncode == 0, jan.stderr
    le, lj = _losses(eager.stdout), _losses(jan.stdout)
    assert len(le) == n_losses and len(lj) == n_losses
    np.testing.assert_allclose(lj, le, rtol=1e-4, atol=1e-4)
    rep = _report(jan.stderr)
    (name,) = [n for n in rep if f"loop body at line {line}" in n]
    assert rep[name]["calls"] == 20, \
        f"the loop body runs 20 times in both scripts (20 steps; 4 epochs of 5 batches), all through Janus: {rep}"
    assert rep[name]["graph_calls"] >= min_graphs, (
        f"the loop body runs as a graph in all but the profiled runs and a few conversions, at least {min_graphs} of "
        f"its 20: {jan.stderr}"
    )


def test_cli_missing_script_status_2_one_line():
    r = _run(["-m", "janus", "no_such_script_here.py"])
    assert r.returncode == 2
    lines = _own_stderr(r.stderr).strip().splitlines()
    assert len(lines) == 1 and "no_such_script_here.py" in lines[0], r.stderr
    assert r.stdout == ""


def test_cli_help():
    r = _run(["-m", "janus", "--help"])
    assert r.returncode == 0
    assert "usage: python -m janus" in r.stdout and "--report" in r.stdout


def test_cli_script_exit_status_and_exceptions_are_its_own(tmp_path):
    exits = tmp_path / "exits.py"
    exits.write_text("import sys\nprint('before', __name__, sys.argv[1:])\nsys.exit(3)\n")
    r = _run(["-m", "janus", str(exits), "a", "b"])
    assert r.returncode == 3 and r.stdout == "before __main__ ['a', 'b']\n", (r.stdout, r.stderr)

    raises = tmp_path / "raises.py"
    raises.write_text("def f(x):\n    return 1 / x\n\nprint('start')\nf(0)\n")
    e = _run([str(raises)])
    j = _run(["-m", "janus", str(raises)])
    assert (e.returncode, e.stdout) == (j.returncode, j.stdout) == (1, "start\n")
    assert _own_stderr(j.stderr) == e.stderr, (e.stderr, j.stderr)

    bad = tmp_path / "bad.py"
    bad.write_text("x = (\n")
    e = _run([str(bad)])
    j = _run(["-m", "janus", str(bad)])
    assert e.returncode == j.returncode == 1
    assert _own_stderr(j.stderr) == e.stderr, (e.stderr, j.stderr)


RAISING_STEP = """
import tensorflow as tf


class T:
    def __init__(self):
        self.v = tf.Variable([1.0, 2.0])
        self.n = 0

    def train_step(self, x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(self.v * x)
        self.v.assign_sub(0.1 * tape.gradient(loss, self.v))
        self.n += 1
        if self.n == 7:
            raise ValueError(f"bad step {self.n}")
        return loss


t = T()
for i in range(9):
    print("loss", float(t.train_step(tf.constant([1.0, float(i)]))))
"""


def test_cli_exception_inside_taken_over_step_has_pythons_traceback(tmp_path):
    script = tmp_path / "raising_step.py"
    script.write_text(RAISING_STEP)
    e = _run([str(script)])
    j = _run(["-m", "janus", "--report", str(script)])
    assert e.returncode == j.returncode == 1
    assert e.stdout == j.stdout and e.stdout.count("loss") == 6
    rep = _report(j.stderr)
    assert rep["T.train_step"]["calls"] == 7, \
        f"the 7th train_step call raises and ends the script (6 losses printed): {rep}"
    assert _own_stderr(e.stderr) == _own_stderr(j.stderr).split("janus: T.train_step")[0], j.stderr


def test_cli_takes_over_step_in_imported_user_module():
    script = os.path.join(SCRIPTS, "train_imported.py")
    eager = _run([script])
    jan = _run(["-m", "janus", "--report", script])
    assert eager.returncode == 0 and jan.returncode == 0, jan.stderr
    le, lj = _losses(eager.stdout), _losses(jan.stdout)
    assert len(le) == len(lj) == 15
    np.testing.assert_allclose(lj, le, rtol=1e-4, atol=1e-4)
    rep = _report(jan.stderr)
    assert rep["train_step"]["calls"] == 15, \
        f"the script's loop calls steplib.train_step 15 times, all through Janus: {rep}"
    assert rep["train_step"]["graph_calls"] >= 8, (
        f"of the 15 steps, all but the profiled ones and a few conversions run as graphs: {jan.stderr}"
    )


ENABLE_IN_SCRIPT = """
import tensorflow as tf
import janus


class Trainer:
    def __init__(self):
        self.w = tf.Variable([1.0, -1.0])

    def train_step(self, x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(tf.square(self.w * x))
        self.w.assign_sub(0.1 * tape.gradient(loss, self.w))
        return loss


def helper(x):
    return x + 1


janus.enable()
t = Trainer()
for i in range(8):
    print("loss", round(float(t.train_step(tf.constant([1.0, 0.5 * i]))), 5))
print("taken", janus.takeover.hook.taken_over(), type(helper).__name__)
s = janus.stats(Trainer.train_step)
print("graphs", s["graph_calls"] >= 4, s["calls"])
janus.disable()
print("restored", type(Trainer.__dict__["train_step"]).__name__)
"""


def test_enable_called_inside_a_plain_python_script(tmp_path):
    script = tmp_path / "enable_in_script.py"
    script.write_text(ENABLE_IN_SCRIPT)
    r = _run([str(script)])
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    eager = _run([str(script)], JANUS_DISABLE="1")
    assert _losses(r.stdout) == _losses(eager.stdout) and len(_losses(r.stdout)) == 8
    assert "taken ['Trainer.train_step'] function" in lines
    assert "graphs True 8" in lines
    assert lines[-1] == "restored function"


# ------------------------------------------------------------------ 3.11 take-over: heap walks (issue #24 item 12)
HEAP_WALK = """
import gc, sys, types
import tensorflow as tf
from janus.takeover import redirect

def step(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    return tape.gradient(y, x)

gc.disable()
tensors = [tf.constant(float(i)) for i in range(200)]
for t in tensors:
    t.note = 1       # kept as inline values until something asks for the instance dict
gc.set_threshold(gc.get_count()[0] + 20)   # a collection once the walk has made 20 dicts
gc.enable()
redirect.take_over_codes([step.__code__])
print("redirected", [f.__name__ for f in redirect.redirected()], gc.isenabled())
"""


def test_heap_walk_survives_a_collection_started_by_a_traverse(tmp_path):
    """gc.get_referrers makes EagerTensor_traverse build the tensors' instance dicts (3.11),
    and the first allocation past the threshold started a collection under the walk:
    SIGSEGV at every run before the walk turned automatic collection off."""
    script = tmp_path / "heap_walk.py"
    script.write_text(HEAP_WALK)
    r = _run([str(script)])
    assert r.returncode == 0, (r.returncode, _own_stderr(r.stderr)[-2000:])
    assert r.stdout.splitlines() == ["redirected ['step'] True"]


def test_text_generation_under_enable_exits_0_with_eagers_output():
    """The tutorial-style program of issue #24 item 12 (a GRU trained by a taken-over
    method, then sampled character by character), run under janus.enable() in fresh
    processes: 6 of 8 such runs died with SIGSEGV before the fix; each now exits 0 with
    eager's output.  Its step's first call was walked for at every sample (924 walks),
    then once; now the step's function is read from its running frame: no walk at all."""
    script = os.path.join(SCRIPTS, "text_generation.py")
    runner = ("import runpy, sys, janus; from janus.takeover import redirect; janus.enable(); "
              "walks = []; walk = redirect.functions_with; "
              "redirect.functions_with = lambda code: walks.append(code.co_name) or walk(code); "
              "sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__'); "
              "print('walks', walks, 'taken', janus.takeover.hook.taken_over(), file=sys.stderr)")
    eager = _run([script, "gru", "4", "40"])
    assert eager.returncode == 0, eager.stderr
    assert len(_losses(eager.stdout)) == 4 and "text tape" in eager.stdout
    for _ in range(4):
        r = _run(["-c", runner, script, "gru", "4", "40"], PYTHONFAULTHANDLER="1")
        assert r.returncode == 0, (r.returncode, _own_stderr(r.stderr)[-3000:])
        assert r.stdout == eager.stdout
        assert "walks [] taken ['CustomTraining.train_step']" in r.stderr, r.stderr[-2000:]


LATE_CLOSURE = """
import time
import tensorflow as tf
import janus
from janus.takeover import redirect

def make_step(w):
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * x)
        w.assign_sub(0.1 * tape.gradient(loss, w))
        time.sleep(0.03)            # a first call long enough to be found at once
        return loss
    return step

janus.enable()
first = make_step(tf.Variable([1.0, 2.0]))
for i in range(3):
    first(tf.constant([1.0, float(i)]))
second = make_step(tf.Variable([3.0, 4.0]))    # made after the code's walk
for i in range(3):
    second(tf.constant([1.0, float(i)]))
print("redirected", sorted(f.__qualname__ for f in redirect.redirected()), first is not second)
"""


def test_a_closure_made_after_its_codes_walk_is_taken_over_too(tmp_path):
    script = tmp_path / "late_closure.py"
    script.write_text(LATE_CLOSURE)
    r = _run([str(script)])
    assert r.returncode == 0, _own_stderr(r.stderr)[-2000:]
    assert r.stdout.splitlines()[-1] == "redirected ['make_step.<locals>.step', 'make_step.<locals>.step'] True"


# ------------------------------------------------------------------ one take-over per function, no heap walk (issue #27 item 3)
LONG_FIRST_CALL = """
import time
import tensorflow as tf


def make_step(w):
    def step(x, calls):
        total = 0.0
        for _ in range(calls):          # a long first call: many samples find it running
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(w * x) ** 2
            w.assign_sub(0.01 * tape.gradient(loss, w))
            total += float(loss)
            time.sleep(0.002)
        return total
    return step
"""


def _count_take_overs(monkeypatch):
    counts = {"take_over": 0, "walk": 0}
    take_over, walk = redirect.take_over_function, redirect.functions_with

    def counted_take_over(fn):
        counts["take_over"] += 1
        return take_over(fn)

    def counted_walk(code):
        counts["walk"] += 1
        return walk(code)

    monkeypatch.setattr(redirect, "take_over_function", counted_take_over)
    monkeypatch.setattr(redirect, "functions_with", counted_walk)
    return counts


def test_a_long_first_call_is_taken_over_once_without_a_heap_walk(user_dir, fast_sampling, monkeypatch):
    """A first call of 100 tapes seen by hundreds of 1 ms samples (or 100 tapes, 3.12+): its function
    is read from the frame and taken over once; the heap is never walked."""
    mod = importlib.import_module(user_dir("hook_long_first", LONG_FIRST_CALL))
    counts = _count_take_overs(monkeypatch)
    w, w_eager = tf.Variable([1.0, 2.0]), tf.Variable([1.0, 2.0])
    eager_step = mod.make_step(w_eager)
    with janus.enabled():
        step = mod.make_step(w)
        x = tf.constant([0.5, -0.25])
        first = step(x, 100)
        assert [f.__qualname__ for f in redirect.redirected()] == ["make_step.<locals>.step"]
        later = [step(x, 2) for _ in range(5)]
        assert counts == {"take_over": 1, "walk": 0}, counts
        assert janus.stats(step.__wrapped__)["calls"] == 5, \
            f"the 5 later calls; the first, taken over while it ran, finished as written: {janus.stats(step.__wrapped__)}"
    np.testing.assert_allclose([first] + later, [eager_step(x, 100)] + [eager_step(x, 2) for _ in range(5)],
                               rtol=1e-5)


def test_without_the_frame_layout_a_code_is_walked_for_once(user_dir, fast_sampling, monkeypatch):
    """Where a frame's function cannot be read (another Python's layout), the heap is
    walked for a code once, whatever number of calls, samples and episodes find it."""
    mod = importlib.import_module(user_dir("hook_no_layout", LONG_FIRST_CALL))
    counts = _count_take_overs(monkeypatch)
    monkeypatch.setattr(redirect, "function_of", lambda frame: None)
    with janus.enabled():
        step = mod.make_step(tf.Variable([1.0, 2.0]))
        x = tf.constant([0.5, -0.25])
        step(x, 60)
        for _ in range(5):
            step(x, 2)
        assert counts == {"take_over": 1, "walk": 1}, counts
        step2 = mod.make_step(tf.Variable([1.0, 2.0]))    # made after the walk: left alone
        for _ in range(3):
            step2(x, 30)
        assert counts["walk"] == 1, counts


def test_a_step_in_another_thread_while_the_main_thread_waits(user_dir, fast_sampling):
    """The main thread inside ``thread.join()`` runs no bytecode.  On 3.12+ the step is taken
    over at its tape anyway.  On 3.11 no thread reads another's frames (such reads crash
    3.11: issue #39 item 2), so a step running only in another thread is not found and runs
    eagerly.  Its results are eager's either way."""
    import threading

    mod = importlib.import_module(user_dir("hook_thread_step", LONG_FIRST_CALL))
    x = tf.constant([0.5, -0.25])
    eager_step = mod.make_step(tf.Variable([1.0, 2.0]))
    expected = [eager_step(x, 30 if i == 0 else 2) for i in range(6)]
    with janus.enabled():
        step = mod.make_step(tf.Variable([1.0, 2.0]))
        got = []
        thread = threading.Thread(target=lambda: got.extend(step(x, 30 if i == 0 else 2) for i in range(6)))
        thread.start()
        thread.join()
        if sys.version_info >= (3, 12):
            assert janus.stats(step.__wrapped__)["calls"] == 5, \
                f"the 5 later calls; the first, taken over while it ran, finished as written: {janus.stats(step.__wrapped__)}"
        else:
            assert step not in redirect.redirected()
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_cli_step_reading_a_schedule_from_an_ordered_dict_follows_it():
    """``python -m janus`` on a script whose scheduler writes the learning rate into an
    OrderedDict between epochs: the weights are eager's after every epoch (the graph once
    kept the first epoch's rate)."""
    script = os.path.join(SCRIPTS, "train_schedule.py")
    eager = _run([script])
    jan = _run(["-m", "janus", script], JANUS_REPORT="1")
    assert eager.returncode == 0, eager.stderr
    assert jan.returncode == 0, jan.stderr
    assert jan.stdout == eager.stdout or np.allclose(_losses(jan.stdout), _losses(eager.stdout), rtol=1e-5), \
        (eager.stdout, jan.stdout)
    weights = [re.findall(r"w \[(.*)\]", out) for out in (eager.stdout, jan.stdout)]
    assert len(weights[0]) == 4
    np.testing.assert_allclose(np.array([[float(v) for v in w.split(",")] for w in weights[1]]),
                               np.array([[float(v) for v in w.split(",")] for w in weights[0]]), rtol=1e-5)
    rep = _report(jan.stderr)
    assert rep["train_step"]["graph_calls"] >= 8, (
        "train_step runs as a graph in most steps although the learning rate read from the OrderedDict changes between"
        f" epochs: {jan.stderr}"
    )
