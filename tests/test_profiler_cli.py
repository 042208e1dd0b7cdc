"""The ``janus-profile`` command, run in a subprocess as ``python -m janus_profiler``."""
import json
import os
import subprocess
import sys

import pytest

from janus_profiler import ProfileData

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(REPO, "examples", "profile_demo.py")


def run_cli(*args, cwd=REPO, timeout=180):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=REPO)
    return subprocess.run([sys.executable, "-m", "janus_profiler", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def section(report, name):
    """The report's section of one function (from its '-- name' header to the next)."""
    start = report.index(f"-- {name}  (")
    end = report.find("\n-- ", start + 1)
    return report[start:end if end != -1 else None]


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "profile.json"
    r = run_cli("--top", "0", "--json", str(out), DEMO, "--steps", "8", "--fail")
    return r, out


def test_demo_report_content(demo):
    r, _ = demo
    rep = r.stdout
    assert "janus-profile report: " in rep, r.stderr
    call = section(rep, "__main__.RNNRegressor.__call__")
    # a known branch, reported one-sided
    assert "if training:" in call and "True 8 / False 0" in call
    assert "prune: always True" in call
    # a known loop's trip count
    assert "for t in range(x.shape[1]):" in call and "trips 6: 8" in call
    assert "unroll 6 iterations" in call
    assert "x: tf.Tensor float32 (8, 6, 4): 8" in call
    assert "verdict: convertible" in call
    # known non-convertible functions, with their reasons
    assert "verdict: not convertible: generator" in section(rep, "__main__.batches")
    assert "verdict: not convertible: calls open()" in section(rep, "__main__.load_learning_rate")
    step = section(rep, "__main__.train_step")
    assert "if model.clip is not None:" in step and "True 0 / False 8" in step
    # a data-dependent loop stays dynamic
    halv = section(rep, "__main__.halvings")
    assert "keep dynamic loop" in halv and "trips 1: 1, 2: 2, 3: 4, 4: 1" in halv


def test_demo_exception_exit_status_and_traceback(demo):
    r, _ = demo
    assert r.returncode == 1
    assert "RuntimeError: failing on purpose (--fail)" in r.stderr
    assert "raised RuntimeError, exit status 1" in r.stdout
    assert "janus_profiler/cli.py" not in r.stderr  # the traceback is the script's, not the tool's


def test_demo_json_profile(demo):
    _, out = demo
    doc = json.loads(out.read_text())
    assert doc["meta"]["exit_status"] == 1
    data = ProfileData.from_json(out.read_text())
    f = data.function("__main__.RNNRegressor.__call__")
    assert f is not None and f.calls == 8
    loops = [s for s in f.sites if s.kind == "For"]
    assert [data.trip_counts(s) for s in loops] == [{6: 8}]
    assert not any(k.startswith(("tensorflow", "keras", "numpy")) for k in
                   (g.module or "" for g in data.functions.values()))


SCRIPT = """\
import sys
import helper_mod

def work(n):
    total = 0
    for i in range(n):
        if i % 2 == 0:
            total += helper_mod.double(i)
    return total

print("argv", sys.argv[1:], __name__)
print("result", work(4))
mode = sys.argv[1] if len(sys.argv) > 1 else ""
if mode == "exit":
    sys.exit(3)
if mode == "interrupt":
    raise KeyboardInterrupt
"""


@pytest.fixture()
def script(tmp_path):
    (tmp_path / "helper_mod.py").write_text("def double(x):\n    return 2 * x\n")
    path = tmp_path / "prog.py"
    path.write_text(SCRIPT)
    return path


def test_script_semantics_and_user_files(script):
    r = run_cli("--no-verdict", str(script), "--flag", "x")
    assert r.returncode == 0, r.stderr
    assert "argv ['--flag', 'x'] __main__" in r.stdout
    assert "result 4" in r.stdout
    assert "__main__.work" in r.stdout and "helper_mod.double" in r.stdout
    assert "trips 4: 1" in r.stdout
    assert "True 2 / False 2" in r.stdout


def test_include_exclude(script):
    r = run_cli("--no-verdict", "--exclude", "*helper_mod.py", str(script))
    assert r.returncode == 0
    assert "helper_mod.double  (" not in r.stdout and "__main__.work" in r.stdout


def test_exit_status_and_interrupt(script):
    r = run_cli("--no-verdict", str(script), "exit")
    assert r.returncode == 3 and "exit status 3" in r.stdout
    r = run_cli("--no-verdict", str(script), "interrupt")
    assert r.returncode == 130 and "interrupted (Ctrl-C)" in r.stdout and "__main__.work" in r.stdout


def test_tool_errors_are_one_line(tmp_path):
    r = run_cli(str(tmp_path / "missing.py"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0 and "can't open file" in r.stderr
    bad = tmp_path / "bad.py"
    bad.write_text("def f(:\n    pass\n")
    r = run_cli(str(bad))
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0 and "syntax error in" in r.stderr and "line 1" in r.stderr
    r = run_cli("--top", "many", str(bad))
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "--top" in r.stderr
    r = run_cli("--bogus", str(bad))
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "--bogus" in r.stderr
    r = run_cli()
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0


def test_help_documents_options():
    r = run_cli("--help")
    assert r.returncode == 0
    for opt in ("--include", "--exclude", "--json", "--top", "script", "Exit status"):
        assert opt in r.stdout
