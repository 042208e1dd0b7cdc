"""Settings and options (issue #24 item 14): ``janus.function``'s options are checked when
given, every ``JANUS_*`` variable is read by one parser in ``janus/config.py``, and
``python -m janus`` turns a bad value into one line and exit status 2."""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import janus
from janus import config
from janus.driver.function import JanusFunction

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


# ------------------------------------------------------------------ the switch parser
@pytest.mark.parametrize("word,value", [("1", True), ("true", True), ("Yes", True), ("ON", True), (" on ", True),
                                        ("0", False), ("False", False), ("no", False), ("off", False), ("", None)])
def test_every_switch_reads_the_same_words(monkeypatch, word, value):
    for name, read, default in (("JANUS_DISABLE", config.disabled, False), ("JANUS_REPORT", config.report, False),
                                ("JANUS_PROFILE", config.profiling, True),
                                ("JANUS_SUBTREE_REUSE", config.subtree_reuse, False),
                                ("JANUS_JIT_COMPILE", config.jit_compile, None)):
        monkeypatch.setenv(name, word)
        assert read() == (default if value is None else value), (name, word)


@pytest.mark.parametrize("name", ["JANUS_DISABLE", "JANUS_REPORT", "JANUS_PROFILE", "JANUS_SUBTREE_REUSE",
                                  "JANUS_JIT_COMPILE"])
def test_a_bad_switch_is_one_line_naming_the_variable(monkeypatch, name):
    monkeypatch.setenv(name, "maybe")
    with pytest.raises(config.ConfigError) as info:
        config.check()
    message = str(info.value)
    assert "\n" not in message and message.startswith(name) and "'maybe'" in message
    assert "yes/no" in message


def test_disable_no_leaves_janus_on_and_report_no_leaves_it_off(monkeypatch):
    monkeypatch.setenv("JANUS_DISABLE", "no")
    monkeypatch.setenv("JANUS_REPORT", "no")
    assert not config.disabled() and not config.report()

    def f(x):
        return x

    assert isinstance(janus.function(f).__janus_function__, JanusFunction)


@pytest.mark.parametrize("name,value", [("JANUS_PROFILE_CALLS", "-1"), ("JANUS_PROFILE_CALLS", "2.5"),
                                        ("JANUS_PROFILE_CALLS", "three"), ("JANUS_TAKEOVER_SAMPLE_MS", "fast"),
                                        ("JANUS_TAKEOVER_SAMPLE_MS", "0"), ("JANUS_TAKEOVER_SAMPLE_MS", "nan"),
                                        ("JANUS_TAKEOVER_SAMPLE_MS", "inf"), ("JANUS_JIT_COMPILE", "sometimes")])
def test_bad_numbers_are_one_line_naming_the_variable(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(config.ConfigError) as info:
        config.check()
    assert "\n" not in str(info.value) and str(info.value).startswith(name)


def test_numbers_read(monkeypatch):
    monkeypatch.setenv("JANUS_PROFILE_CALLS", " 5 ")
    monkeypatch.setenv("JANUS_TAKEOVER_SAMPLE_MS", "2.5")
    monkeypatch.setenv("JANUS_JIT_COMPILE", "Auto")
    assert config.profile_calls() == 5
    assert config.takeover_sample_seconds() == pytest.approx(0.0025)
    assert config.jit_compile() is None


def test_janus_variables_are_read_only_in_config():
    """One reader: no ``os.environ``/``os.getenv`` read of a ``JANUS_*`` name elsewhere in janus/."""
    pattern = re.compile(r"(environ(\.get)?\s*[\[(]|getenv\s*\()\s*['\"]JANUS_")
    offenders = []
    for base, _, files in os.walk(os.path.join(ROOT, "janus")):
        for name in files:
            path = os.path.join(base, name)
            if name.endswith(".py") and path != os.path.join(ROOT, "janus", "config.py"):
                with open(path, encoding="utf-8") as fh:
                    if pattern.search(fh.read()):
                        offenders.append(os.path.relpath(path, ROOT))
    assert not offenders, offenders


# ------------------------------------------------------------------ janus.function's options
def _f(x):
    return x


@pytest.mark.parametrize("options,error", [
    (dict(profile_calls="3"), TypeError), (dict(profile_calls=2.5), TypeError), (dict(profile_calls=True), TypeError),
    (dict(profile_calls=-1), ValueError), (dict(speculate="no"), TypeError), (dict(speculate=0), TypeError),
    (dict(jit_compile="yes"), TypeError), (dict(jit_compile=1), TypeError),
])
def test_bad_options_fail_when_given(options, error, monkeypatch):
    (option,) = options
    for disable in ("0", "1"):  # checked whether or not Janus is on
        monkeypatch.setenv("JANUS_DISABLE", disable)
        with pytest.raises(error) as info:
            janus.function(**options)
        assert "\n" not in str(info.value) and option in str(info.value), info.value
        with pytest.raises(error):
            janus.function(_f, **options)


def test_good_options_are_accepted():
    f = janus.function(_f, profile_calls=np.int64(2), speculate=False, jit_compile=False)
    assert f.__janus_function__.options.profile_calls == 2
    assert janus.function(profile_calls=0, jit_compile=None)(_f)(3) == 3


# ------------------------------------------------------------------ python -m janus
_TF_NOISE = re.compile(r"^(WARNING: All log messages before absl::InitializeLog\(\).*|I\d{4} .*|"
                       r"To enable the following instructions.*)\n", re.M)


def _janus(args, cwd, python=("-m", "janus"), **env):
    full = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=ROOT)
    for name in list(full):
        if name.startswith("JANUS_"):
            del full[name]
    full.update(env)
    done = subprocess.run([sys.executable, *python] + args, cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=300)
    return done.returncode, done.stdout, _TF_NOISE.sub("", done.stderr)


@pytest.fixture
def script_dir(tmp_path):
    """A script in ``sub/`` that prints its sys.path[0] and exits 3; the current directory
    holds a ``numpy.py`` that must not be imported."""
    (tmp_path / "numpy.py").write_text("print('SHADOWED NUMPY RAN')\nraise SystemExit(99)\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "script.py").write_text(textwrap.dedent("""
        import sys
        import numpy
        print("path0", sys.path[0])
        sys.exit(3)
    """))
    return tmp_path


@pytest.mark.parametrize("name,value", [("JANUS_TAKEOVER_SAMPLE_MS", "fast"), ("JANUS_DISABLE", "nope"),
                                        ("JANUS_PROFILE_CALLS", "-2")])
def test_cli_bad_variable_is_one_line_and_status_2(script_dir, name, value):
    status, out, err = _janus(["sub/script.py"], script_dir, **{name: value})
    assert status == 2, err
    assert err.count("\n") == 1 and err.startswith(f"janus: error: {name}"), err
    assert "path0" not in out


def test_cli_report_under_disable_keeps_the_scripts_status(tmp_path):
    (tmp_path / "train.py").write_text(textwrap.dedent("""
        import sys
        import tensorflow as tf

        def step(x):
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = x * x
            return tape.gradient(y, x)

        for i in range(3):
            step(tf.constant(1.0))
        for i in range(3):
            with tf.GradientTape() as tape:
                x = tf.constant(2.0)
                tape.watch(x)
                y = x * x
            g = tape.gradient(y, x)
        sys.exit(3)
    """))
    status, out, err = _janus(["--report", "train.py"], tmp_path, JANUS_DISABLE="1")
    assert status == 3, err
    assert "Traceback" not in err and "janus: disabled" in err, err


def test_cli_path0_is_the_scripts_directory(script_dir):
    status, out, err = _janus(["sub/script.py"], script_dir)
    assert status == 3, err
    assert "SHADOWED" not in out
    assert out.splitlines() == [f"path0 {os.path.realpath(script_dir / 'sub')}"], out


def test_cli_safe_path_adds_no_directory_as_python_does(script_dir):
    """``python -P script.py`` puts no directory first; neither does ``python -P -m janus``."""
    (script_dir / "numpy.py").unlink()
    plain = _janus(["sub/script.py"], script_dir, python=("-P",))
    jan = _janus(["sub/script.py"], script_dir, python=("-P", "-m", "janus"))
    assert plain[0] == jan[0] == 3, (plain, jan)
    assert plain[1] == jan[1]
