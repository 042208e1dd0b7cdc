"""The knobs of issue #27 item 5: strict mode (janus.GraphBreakError), janus.do_not_convert,
janus.concrete_function (export to a SavedModel, the graph for TensorBoard), JANUS_LOG,
python -m janus -m module / --version, and a clear error when TensorFlow is missing.
Where a knob changes execution, Janus is compared with eager (tests/harness.py)."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import types

import numpy as np
import pytest
import tensorflow as tf

import janus
from harness import check
from janus.errors import InternalSignal, JanusError
from janus.takeover import hook

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TF_NOISE = re.compile(r"^(WARNING: All log messages before absl::InitializeLog\(\).*|I\d{4} .*|E\d{4} .*|W\d{4} .*|"
                       r"To enable the following instructions.*)\n", re.M)


def _run(args, cwd, **env):
    full = {k: v for k, v in os.environ.items() if not k.startswith("JANUS_")}
    full.update(TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)
    full.update(env)
    done = subprocess.run([sys.executable, *args], cwd=cwd, env=full, capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout, _TF_NOISE.sub("", done.stderr)


def _x(i=0, shape=(4, 3)):
    return tf.constant(np.random.RandomState(i).randn(*shape).astype(np.float32))


# ------------------------------------------------------------------ strict
def _with_generator(jit):
    state = types.SimpleNamespace(seen=[])

    @jit
    def f(x):
        def parts():
            yield x
            yield x * 2.0
        state.seen.append(1)
        return sum(parts())

    return types.SimpleNamespace(fn=f, state=lambda: {"seen": list(state.seen)})


def test_strict_raises_instead_of_falling_back_naming_the_construct_and_line():
    assert issubclass(janus.GraphBreakError, JanusError) and not issubclass(janus.GraphBreakError, InternalSignal)
    eager, jan = _with_generator(lambda f: f), _with_generator(janus.function(strict=True, profile_calls=2))
    for i in range(2):                               # profiled calls before the conversion: eager, no error
        np.testing.assert_allclose(eager.fn(_x(i)).numpy(), jan.fn(_x(i)).numpy())
    assert eager.state() == jan.state()
    for i in range(2):                               # then every call that would run eagerly raises
        with pytest.raises(janus.GraphBreakError) as info:
            jan.fn(_x(i))
        e = info.value
        assert e.reason == "generator (yield)" and e.function.endswith("f")
        line = _with_generator.__code__.co_firstlineno + 6    # the yield's line
        assert e.location == f"test_knobs.py:{line}", e.location
        assert "generator (yield)" in str(e) and f"test_knobs.py:{line}" in str(e)
    assert jan.state() == {"seen": [1, 1]}           # the refused calls did not run
    s = janus.stats(jan.fn)
    assert s["graph_breaks"] == 2 and s["eager_calls"] == 2 and s["fallbacks"] == 0, \
        f"2 profiled calls ran eagerly; the next 2, which cannot run as graphs, were refused (strict), not run eagerly: {s}"


def test_janus_strict_switch_and_strict_false_overrides_it(monkeypatch):
    monkeypatch.setenv("JANUS_STRICT", "1")
    p = _with_generator(janus.function(profile_calls=0))
    with pytest.raises(janus.GraphBreakError):
        p.fn(_x())
    assert p.state() == {"seen": []}
    lax = _with_generator(janus.function(profile_calls=0, strict=False))
    lax.fn(_x())
    assert lax.state() == {"seen": [1]}
    assert "strict" in str(janus.explain(p.fn))
    monkeypatch.setenv("JANUS_STRICT", "maybe")
    from janus import config
    with pytest.raises(config.ConfigError, match="JANUS_STRICT"):
        config.check()
    with pytest.raises(TypeError, match="strict must be True, False or None"):
        janus.function(strict="yes")


def test_strict_raises_on_a_conversion_failure_at_the_users_line():
    import json as _json

    @janus.function(strict=True, profile_calls=1)
    def f(x):
        y = x + 1.0
        text = _json.dumps([1])          # a standard-library callee: never converted
        return y, text

    f(tf.constant(1.0))
    with pytest.raises(janus.GraphBreakError) as info:
        f(tf.constant(1.0))
    assert "json.dumps" in info.value.reason and info.value.location == \
        f"test_knobs.py:{f.python_function.__code__.co_firstlineno + 3}", info.value


def _speculated(jit):
    class M:
        def __init__(self):
            self.v = tf.Variable(1.0)
            self.log = []

        @jit
        def step(self, x):
            if tf.reduce_sum(x) > 0:     # speculated one-sided after profiling: an assertion
                self.v.assign_add(tf.reduce_sum(x))
            else:
                self.v.assign_sub(1.0)
            self.log.append(self.v.read_value())
            return self.v * 2.0

    m = M()
    return types.SimpleNamespace(fn=m.step, state=lambda: {"v": m.v, "log": list(m.log)})


def test_strict_runs_graphs_and_aborted_runs_and_guard_misses_are_no_fallbacks(monkeypatch):
    monkeypatch.setenv("JANUS_STRICT", "1")
    pos = [(tf.constant([1.0, 2.0]),) for _ in range(5)]
    calls = pos + [(tf.constant([-3.0, 1.0]),)] + pos + [(tf.constant([1.0, 2.0, 3.0]),)] * 4 + pos
    total = check(_speculated, calls, min_graph_calls=8)
    assert total["graph_breaks"] == 0 and total["assertion_failures"] >= 1, total


# ------------------------------------------------------------------ do_not_convert
def _calls_marked(jit):
    state = types.SimpleNamespace(log=[])

    @janus.do_not_convert
    def helper(x):
        state.log.append(float(tf.reduce_sum(x)))
        return x * 2.0

    @jit
    def f(x):
        return helper(x) + 1.0

    return types.SimpleNamespace(fn=f, state=lambda: {"log": list(state.log)}, helper=helper)


def test_a_function_calling_a_do_not_convert_function_runs_eagerly_with_that_reason():
    total = check(_calls_marked, [(_x(i),) for i in range(6)], eager_only=True)
    assert total["conversions"] == 0, f"a do_not_convert callee keeps the caller eager: nothing converts: {total}"
    p = _calls_marked(janus.function)
    for i in range(5):
        p.fn(_x(i))
    text = str(janus.explain(p.fn))
    assert "calls _calls_marked.<locals>.helper, marked janus.do_not_convert" in text, text
    assert janus.function(p.helper) is p.helper and janus.explain(p.helper).reason.startswith("marked")
    strict = _calls_marked(janus.function(strict=True, profile_calls=0))
    with pytest.raises(janus.GraphBreakError, match="marked janus.do_not_convert"):
        strict.fn(_x())


def test_do_not_convert_on_methods_and_janus_functions():
    class M:
        @janus.do_not_convert
        def a(self, x):
            return x

        @janus.function
        def b(self, x):
            return x

    assert janus.function(M.a) is M.a and janus.function(M().a).__func__ is M.a
    plain = janus.do_not_convert(M.b)                # a Janus function: its plain function, marked
    assert plain is M.b.python_function and janus.function(plain) is plain
    with pytest.raises(TypeError, match="do_not_convert expects a Python function"):
        janus.do_not_convert(3)


def test_the_hook_leaves_a_do_not_convert_function_plain(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "knob_user.py").write_text(textwrap.dedent("""
        import janus
        import tensorflow as tf
        v = tf.Variable(1.0)

        @janus.do_not_convert
        def kept(x):
            with tf.GradientTape() as tape:
                loss = v * x
            return tape.gradient(loss, v)

        def taken(x):
            with tf.GradientTape() as tape:
                loss = v * x
            return tape.gradient(loss, v)
    """))
    import importlib
    importlib.invalidate_caches()
    mod = importlib.import_module("knob_user")
    kept = mod.kept
    try:
        with janus.enabled():
            assert mod.kept is kept and "taken" in hook.taken_over() and "kept" not in hook.taken_over()
            for i in range(5):
                mod.kept(tf.constant(float(i)))
            assert janus.stats(kept)["calls"] == 0 and "do_not_convert" in str(janus.explain(kept)), \
                "the hook never takes over a do_not_convert function: Janus counted none of its calls"
    finally:
        hook.disable()
        sys.modules.pop("knob_user", None)


# ------------------------------------------------------------------ concrete_function: export and TensorBoard
class Regressor:
    def __init__(self):
        self.dense = tf.keras.layers.Dense(2, kernel_initializer=tf.keras.initializers.GlorotUniform(seed=1))
        self.optimizer = tf.keras.optimizers.SGD(0.1)
        self.losses = []

    def train_step(self, x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((self.dense(x) - y) ** 2)
        grads = tape.gradient(loss, self.dense.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.dense.trainable_variables))
        self.losses.append(loss)
        return loss

    def forward(self, x):
        return self.dense(x)


def _trained(jit):
    model = Regressor()
    step, forward = jit(model.train_step), jit(model.forward)
    rs = np.random.RandomState(0)
    for _ in range(8):
        x = tf.constant(rs.randn(5, 3).astype(np.float32))
        step(x, tf.reduce_sum(x, axis=1, keepdims=True) * tf.constant([[1.0, -1.0]]))
    for i in range(5):
        forward(_x(i, (5, 3)))
    return model, step, forward


def test_a_trained_steps_forward_graph_exports_to_a_saved_model_and_reloads(tmp_path):
    model, step, forward = _trained(janus.function(jit_compile=False))
    eager_model, _, _ = _trained(lambda f: f)
    assert janus.stats(step)["graph_calls"] >= 3 and janus.stats(forward)["graph_calls"] >= 2, \
        f"after the 3 default profiled calls: forward's calls 4-5 run its graph, and at least 3 of step's calls 4-8: {janus.stats(step)} {janus.stats(forward)}"
    np.testing.assert_allclose(model.dense.kernel.numpy(), eager_model.dense.kernel.numpy(), rtol=1e-5)

    train_graph = janus.concrete_function(step)
    # inputs: the argument tensors x, y; outputs: the loss, then the deferred append's value
    assert [s.shape.as_list() for s in train_graph.structured_input_signature[0]] == [[5, 3], [5, 2]]
    assert len(train_graph.outputs) == 2

    cf = janus.concrete_function(forward)
    assert [s.shape.as_list() for s in cf.structured_input_signature[0]] == [[5, 3]]
    holder = tf.Module()
    holder.variables_ = list(model.dense.variables)     # the captured variables, tracked for saving
    holder.forward = cf
    path = str(tmp_path / "forward")
    tf.saved_model.save(holder, path, signatures=cf)
    loaded = tf.saved_model.load(path)
    serve = loaded.signatures["serving_default"]
    x = _x(9, (5, 3))
    (name, spec), = serve.structured_input_signature[1].items()
    out = serve(**{name: x})
    assert list(out) == ["output_0"]
    np.testing.assert_allclose(out["output_0"].numpy(), eager_model.forward(x).numpy(), rtol=1e-5, atol=1e-6)


def test_the_graph_for_tensorboard_is_written_without_tensorboard(tmp_path):
    _, step, _ = _trained(janus.function(jit_compile=False))
    cf = janus.concrete_function(step)
    writer = tf.summary.create_file_writer(str(tmp_path / "logs"))
    with writer.as_default():
        assert bool(tf.summary.graph(cf.graph))
    writer.flush()
    assert any(n.startswith("events.out.tfevents") for n in os.listdir(tmp_path / "logs"))
    tf.io.write_graph(cf.graph.as_graph_def(), str(tmp_path), "step.pbtxt")
    assert "MatMul" in (tmp_path / "step.pbtxt").read_text()


# ------------------------------------------------------------------ JANUS_LOG
LOG_SCRIPT = """
import logging, sys
import tensorflow as tf
import janus
if "--basic" in sys.argv:
    logging.basicConfig(level=logging.INFO)

@janus.function
def step(x):
    return x * 2.0

@janus.function
def gen(x):
    def g():
        yield x
    return sum(g())

for i in range(5):
    step(tf.constant(float(i)))
    gen(tf.constant(1.0))
print("done")
"""


def test_janus_log_info_one_line_per_conversion_and_give_up_with_seconds(tmp_path):
    (tmp_path / "s.py").write_text(LOG_SCRIPT)
    status, out, err = _run(["s.py"], tmp_path, JANUS_LOG="info")
    assert status == 0 and out == "done\n", err
    lines = err.strip().splitlines()
    converted = [l for l in lines if l.startswith("janus: converted step in ")]
    assert len(converted) == 1, err
    assert re.match(r"janus: converted step in \d+\.\d\d s after 3 profiled calls: \d+ guards", converted[0]), err
    assert sum("gen runs eagerly from now on: generator (yield)" in l for l in lines) == 1, err
    assert not any("janus: janus:" in l for l in lines), err
    assert all(l.startswith("janus: ") for l in lines), err

    status, out, debug = _run(["s.py"], tmp_path, JANUS_LOG="debug")
    assert "janus: gen: cannot convert: generator (yield)" in debug, debug

    status, out, quiet = _run(["s.py"], tmp_path)    # no JANUS_LOG: only the give-up warning, as before
    assert quiet.strip().splitlines() == ["janus: gen runs eagerly from now on: generator (yield) [JB001]. It contains a "
                                          "construct Janus does not convert; see janus.explain(f)."], quiet


def test_a_configured_handler_shows_no_doubled_prefix(tmp_path):
    (tmp_path / "s.py").write_text(LOG_SCRIPT)
    status, out, err = _run(["s.py", "--basic"], tmp_path)
    assert "INFO:janus:converted step in " in err and "WARNING:janus:gen runs eagerly" in err, err
    assert "janus:janus:" not in err, err


def test_a_bad_janus_log_is_one_line(tmp_path):
    (tmp_path / "s.py").write_text(LOG_SCRIPT)
    status, out, err = _run(["-m", "janus", "s.py"], tmp_path, JANUS_LOG="loud")
    assert status == 2 and err.strip() == "janus: error: JANUS_LOG must be one of debug, info, warning, error, got 'loud'"


# ------------------------------------------------------------------ python -m janus -m module, --version
def test_python_m_janus_runs_a_module_as_main_like_python_m(tmp_path):
    pkg = tmp_path / "trainpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text(textwrap.dedent("""
        import sys, json
        import tensorflow as tf
        import janus
        W = tf.Variable(1.0)

        def step(x):
            with tf.GradientTape() as tape:
                loss = W * x
            W.assign_sub(0.1 * tape.gradient(loss, W))
            return loss

        for i in range(6):
            step(tf.constant(float(i)))
        print(json.dumps({"name": __name__, "spec": __spec__.name, "package": __package__,
                          "argv": sys.argv, "path0": sys.path[0], "graphs": janus.stats(step)["graph_calls"],
                          "W": float(W.numpy())}))
    """))
    status, out, err = _run(["-m", "janus", "-m", "trainpkg", "a", "--b"], tmp_path)
    assert status == 0, err
    got = json.loads(out)
    status, out, err = _run(["-m", "trainpkg", "a", "--b"], tmp_path, JANUS_DISABLE="1")   # python -m itself
    want = json.loads(out)
    assert got["graphs"] == 3 and want["graphs"] == 0
    for key in ("name", "spec", "package", "argv", "path0", "W"):
        assert got[key] == want[key], key
    status, out, err = _run(["-m", "janus", "-m", "no_such_module_xyz"], tmp_path)
    assert status == 1 and err.strip() == "janus: error: No module named no_such_module_xyz"


def test_python_m_janus_version(tmp_path):
    status, out, err = _run(["-m", "janus", "--version"], tmp_path)
    assert status == 0 and out == f"janus-tf {janus.__version__}\n"


def test_janus_version_falls_back_without_distribution_metadata(monkeypatch):
    from importlib import metadata

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    assert janus._version() == janus._FALLBACK_VERSION
    monkeypatch.setattr(metadata, "version", lambda name: "9.9" if name == "janus-tf" else missing(name))
    assert janus._version() == "9.9"


# ------------------------------------------------------------------ TensorFlow missing
def test_a_missing_tensorflow_is_one_clear_error(tmp_path):
    code = textwrap.dedent("""
        import sys
        sys.modules["tensorflow"] = None       # as if it were not installed
        import janus, janus.convert            # need no TensorFlow
        print(sorted(n for n in dir(janus) if not n.startswith("_")) == sorted(janus.__all__))
        try:
            janus.function
        except ImportError as e:
            print(type(e).__name__, e)
    """)
    status, out, err = _run(["-c", code], tmp_path)
    assert status == 0, err
    first, second = out.strip().splitlines()
    assert first == "True"
    assert second.startswith("ImportError Janus needs TensorFlow, which is not installed"), out
