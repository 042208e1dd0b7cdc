"""janus.stats / janus.explain / janus.reset, profile_calls, JANUS_PROFILE_CALLS, JANUS_DISABLE.

Environment variables are tested in subprocesses so that it does not matter whether the
core reads them at import, decoration or call time.
"""
import ast
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import tensorflow as tf

import janus

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STATS_KEYS = {"calls", "graph_calls", "eager_calls", "conversions", "fallbacks", "cache_entries"}


def rnd(shape, seed):
    return tf.constant(np.random.RandomState(seed).randn(*shape).astype(np.float32))


def close(a, b):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-5, atol=1e-5)


def gcalls(f):
    return janus.stats(f)["graph_calls"]


# ---------------------------------------------------------------------------------------
def test_stats_keys_and_counting_with_identical_calls():
    janus.reset()

    @janus.function(profile_calls=3)
    def f(x):
        return tf.nn.relu(x) * 2.0 + 1.0

    x = rnd((2, 3), 0)
    s0 = janus.stats(f)
    assert STATS_KEYS <= set(s0), s0
    assert s0["calls"] == 0 and s0["graph_calls"] == 0, s0
    seen = []
    for i in range(8):
        close(f(x), tf.nn.relu(x) * 2.0 + 1.0)
        seen.append(gcalls(f))
    s = janus.stats(f)
    assert s["calls"] == 8, s
    assert s["graph_calls"] + s["eager_calls"] == 8, s
    # first three calls profiled eagerly, every later identical call runs the graph
    assert seen == [0, 0, 0, 1, 2, 3, 4, 5], seen
    assert s["eager_calls"] == 3, s
    assert s["conversions"] == 1, s
    assert s["cache_entries"] == 1, s


def test_stats_report_the_bytes_of_constants_the_cache_holds():
    janus.reset()
    weights = np.linspace(0.0, 1.0, 500).astype(np.float32)  # read by NumPy while tracing: a constant

    @janus.function
    def f(x):
        return x * tf.reduce_sum(tf.constant(weights.astype(np.float32)))

    assert janus.stats(f)["cache_constant_bytes"] == 0, "not called yet: no graph holds any constant"
    for i in range(5):
        close(f(tf.constant(float(i))), float(i) * weights.sum())
    s = janus.stats(f)
    assert s["cache_entries"] == 1 and weights.nbytes <= s["cache_constant_bytes"] < weights.nbytes + 256, s


def test_stats_count_guard_misses_as_eager_calls():
    janus.reset()

    @janus.function(profile_calls=3)
    def f(x, flag):
        if flag:
            return x + 1.0
        return x - 1.0

    x = rnd((3,), 1)
    for _ in range(4):
        close(f(x, True), x + 1.0)
    s = janus.stats(f)
    assert (s["calls"], s["graph_calls"], s["eager_calls"]) == (4, 1, 3), s
    close(f(x, False), x - 1.0)          # guard on `flag` fails: a cache miss, run eagerly
    s = janus.stats(f)
    assert (s["calls"], s["graph_calls"], s["eager_calls"]) == (5, 1, 4), s
    close(f(x, True), x + 1.0)           # the first graph is still cached and valid
    s = janus.stats(f)
    assert (s["calls"], s["graph_calls"], s["eager_calls"]) == (6, 2, 4), s
    for v in janus.stats(f).values():
        if isinstance(v, (int, float)):
            assert v >= 0


def test_stats_accepts_bound_methods_and_counts_per_function():
    janus.reset()

    class M:
        def __init__(self, k):
            self.k = k

        @janus.function
        def step(self, x):
            return x * self.k

    a, b = M(2.0), M(3.0)
    x = rnd((2,), 2)
    for i in range(6):
        close(a.step(x), x * 2.0)
        close(b.step(x), x * 3.0)
    sa, sb = janus.stats(a.step), janus.stats(b.step)
    assert sa["calls"] == sb["calls"] == 12, (sa, sb)
    assert sa["graph_calls"] >= 1, (
        f"the 12 calls through the method's one function run a graph after the profiled ones: {sa}"
    )


def test_decorator_forms_and_metadata_preserved():
    janus.reset()

    @janus.function()
    def with_parens(x):
        """doc of with_parens"""
        return x * 2.0

    def plain(x):
        return x + 2.0

    wrapped = janus.function(plain, profile_calls=2)
    assert with_parens.__name__ == "with_parens"
    assert with_parens.__doc__ == "doc of with_parens"
    assert wrapped.__name__ == "plain"
    x = rnd((3,), 3)
    for _ in range(5):
        close(with_parens(x), x * 2.0)
        close(wrapped(x), x + 2.0)
    assert gcalls(with_parens) >= 1, \
        f"5 calls: after the 3 default profiled calls, calls 4-5 run the graph: {janus.stats(with_parens)}"
    assert gcalls(wrapped) == 3, f"profile_calls=2: calls 3-5 run the graph built at call 3: {janus.stats(wrapped)}"


def test_explain_shows_guards_and_generated_source():
    janus.reset()

    @janus.function(profile_calls=3)
    def scale_or_shift(x, flag):
        if flag:
            y = x * 3.0
        else:
            y = x + 3.0
        return tf.reduce_sum(y)

    x = rnd((4,), 4)
    before = str(janus.explain(scale_or_shift))
    assert isinstance(before, str)
    for _ in range(5):
        close(scale_or_shift(x, True), tf.reduce_sum(x * 3.0))
    assert gcalls(scale_or_shift) >= 1, \
        f"profile_calls=3: calls 4-5 run the graph built at call 4: {janus.stats(scale_or_shift)}"
    e = janus.explain(scale_or_shift)
    s = str(e)
    assert "guard" in s.lower(), s
    assert "flag" in s, s
    code = e.code
    assert isinstance(code, str) and code.strip(), repr(code)
    ast.parse(code)
    compile(code, "<janus-generated>", "exec")
    defs = [ln.strip() for ln in code.splitlines() if ln.strip().startswith("def ")]
    assert defs, code
    assert any(d in s for d in defs), (defs, s)


def test_explain_says_why_a_generator_falls_back():
    janus.reset()

    @janus.function(profile_calls=1)
    def gen(x):
        yield x * 2.0

    x = rnd((2,), 5)
    for _ in range(4):
        out = list(gen(x))
        close(out[0], x * 2.0)
    s = janus.stats(gen)
    assert s["graph_calls"] == 0, s
    text = str(janus.explain(gen)).lower()
    assert "generator" in text or "yield" in text, text


def test_reset_one_function_reprofiles_it():
    janus.reset()

    @janus.function(profile_calls=3)
    def f(x):
        return tf.tanh(x) - x

    @janus.function(profile_calls=3)
    def g(x):
        return tf.sigmoid(x) + x

    x = rnd((3,), 6)
    for _ in range(5):
        close(f(x), tf.tanh(x) - x)
        close(g(x), tf.sigmoid(x) + x)
    assert gcalls(f) == 2 and gcalls(g) == 2, "profile_calls=3: calls 4-5 of each run the graph built at call 4"
    janus.reset(f)
    assert janus.stats(f)["cache_entries"] == 0, janus.stats(f)
    assert janus.stats(g)["cache_entries"] == 1, janus.stats(g)
    base = gcalls(f)
    for i in range(3):
        close(f(x), tf.tanh(x) - x)
        assert gcalls(f) == base, f"call {i} after reset ran a graph: {janus.stats(f)}"
    close(f(x), tf.tanh(x) - x)
    assert gcalls(f) == base + 1, janus.stats(f)
    gb = gcalls(g)
    close(g(x), tf.sigmoid(x) + x)        # g was not reset: straight to its graph
    assert gcalls(g) == gb + 1, janus.stats(g)


def test_reset_all_functions():
    janus.reset()

    @janus.function(profile_calls=2)
    def f(x):
        return x * x

    @janus.function(profile_calls=2)
    def g(x):
        return x + x

    x = rnd((2,), 7)
    for _ in range(4):
        f(x)
        g(x)
    assert gcalls(f) == 2 and gcalls(g) == 2, "profile_calls=2: calls 3-4 of each run the graph built at call 3"
    janus.reset()
    assert janus.stats(f)["cache_entries"] == 0, "janus.reset() drops every function's graphs"
    assert janus.stats(g)["cache_entries"] == 0, "janus.reset() drops every function's graphs"
    bf, bg = gcalls(f), gcalls(g)
    for _ in range(2):
        close(f(x), x * x)
        close(g(x), x + x)
    assert (gcalls(f), gcalls(g)) == (bf, bg), "after the reset, the first 2 calls are profiled again (profile_calls=2)"
    close(f(x), x * x)
    close(g(x), x + x)
    assert (gcalls(f), gcalls(g)) == (bf + 1, bg + 1), "the third call after the reset converts and runs the new graph"


def test_profile_calls_argument():
    janus.reset()

    @janus.function(profile_calls=1)
    def one(x):
        return x * 5.0

    @janus.function(profile_calls=5)
    def five(x):
        return x - 5.0

    x = rnd((3,), 8)
    t1, t5 = [], []
    for _ in range(7):
        close(one(x), x * 5.0)
        close(five(x), x - 5.0)
        t1.append(gcalls(one))
        t5.append(gcalls(five))
    assert t1 == [0, 1, 2, 3, 4, 5, 6], t1
    assert t5 == [0, 0, 0, 0, 0, 1, 2], t5


# ---------------------------------------------------------------------------------------
SCRIPT = r'''
import json
import numpy as np
import tensorflow as tf
import janus

@janus.function
def f(x):
    return tf.nn.relu(x) * 2.0 + 1.0

x = tf.constant(np.arange(6, dtype=np.float32).reshape(2, 3) - 2.0)
trace, ok = [], True
for i in range(8):
    y = f(x)
    ok = ok and bool(np.allclose(y.numpy(), (tf.nn.relu(x) * 2.0 + 1.0).numpy()))
    try:
        g = janus.stats(f)["graph_calls"]
    except Exception as e:  # stats may be unavailable when Janus is disabled
        g = None
    trace.append(g)
print("JSON:" + json.dumps({"graph_calls": trace, "ok": ok}))
'''


def run_script(env_extra, tmp_path):
    path = tmp_path / "janus_env_prog.py"
    path.write_text(textwrap.dedent(SCRIPT))
    env = {k: v for k, v in os.environ.items() if not k.startswith("JANUS_")}
    env["PYTHONPATH"] = REPO + os.pathsep + env.get("PYTHONPATH", "")
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env.update(env_extra)
    proc = subprocess.run([sys.executable, str(path)], cwd=str(tmp_path), env=env,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("JSON:")]
    assert len(lines) == 1, proc.stdout
    return json.loads(lines[0][5:])


def test_env_profile_calls_in_subprocess(tmp_path):
    r1 = run_script({"JANUS_PROFILE_CALLS": "1"}, tmp_path)
    assert r1["ok"], r1
    assert r1["graph_calls"] == [0, 1, 2, 3, 4, 5, 6, 7], r1
    r5 = run_script({"JANUS_PROFILE_CALLS": "5"}, tmp_path)
    assert r5["ok"], r5
    assert r5["graph_calls"] == [0, 0, 0, 0, 0, 1, 2, 3], r5


def test_default_profile_calls_and_disable_in_subprocess(tmp_path):
    on = run_script({}, tmp_path)
    assert on["ok"], on
    assert on["graph_calls"] == [0, 0, 0, 1, 2, 3, 4, 5], on
    off = run_script({"JANUS_DISABLE": "1"}, tmp_path)
    assert off["ok"], off
    assert all(g in (0, None) for g in off["graph_calls"]), off


def _line_of(text: str) -> int:
    return next(i for i, line in enumerate(open(__file__), 1) if text in line)


def test_generated_code_and_failures_name_the_users_lines():
    """explain's code carries the user's file:line; a failed trace and an aborted graph run
    name the user's line; a traceback through converted code shows the user's file."""
    def f(x, i):
        y = x * 2.0
        z = tf.gather(y, i)  # marker: gather
        return z + 1.0

    jf = janus.function(f)
    for k in range(4):
        jf(tf.constant([1.0, 2.0, 3.0]), tf.constant(k % 3))
    assert janus.stats(jf)["graph_calls"] == 1, \
        f"calls 1-3 are profiled (default profile_calls=3); call 4 converts and runs the graph: {janus.stats(jf)}"
    code = janus.explain(jf).code
    compile(code, "<janus-generated>", "exec")
    gather_line = _line_of("# marker: gather")
    assert f"# test_conv_introspection.py:{gather_line}" in code, code
    try:  # out of range: the graph run aborts, the eager re-run raises eager's error
        jf(tf.constant([1.0, 2.0, 3.0]), tf.constant(7))
    except tf.errors.InvalidArgumentError:
        pass
    reasons = janus.explain(jf).reasons
    assert any(f"graph run aborted at test_conv_introspection.py:{gather_line}" in r for r in reasons), reasons

    def g(x):
        y = x + 1.0
        return y.numpy()  # marker: numpy

    jg = janus.function(g)
    for k in range(4):
        jg(tf.constant([float(k)]))
    reasons = janus.explain(jg).reasons
    numpy_line = _line_of("# marker: numpy")
    assert any(f"at test_conv_introspection.py:{numpy_line}" in r for r in reasons), reasons
