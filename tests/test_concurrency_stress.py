"""No crash and eager's answers under threads (issue #39 item 2): one round of
``tests/scripts/concurrency_stress.py`` (cold and warm calls from four threads, conversions
racing, the XLA trial, the take-over's sampling with the main thread and three others
running tape steps) in a fresh process under ``-X dev -X faulthandler``.

A fresh process: a crash fails this test with every thread's stack instead of ending the
suite, and ``janus.enable()``'s take-over starts from nothing.  What the round asserts is
deterministic (results, variables and Python state equal eager's, no thread raised, no
failure of Janus's own, counters within bounds); how the threads interleave is not.  The
longer sweep is the same script run many times (its docstring).
"""
import os
import subprocess
import sys

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scripts", "concurrency_stress.py")


def test_one_round_of_the_concurrency_stress_in_a_fresh_process():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    r = subprocess.run([sys.executable, "-X", "dev", "-X", "faulthandler", SCRIPT, "--calls", "8"],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, f"exit {r.returncode}\n{r.stderr[-4000:]}"
