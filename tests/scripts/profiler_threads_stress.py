"""Stress the profiler with threads (issue #39): 8 threads make profiled calls at once
under a 1 us switch interval; half of them run under a trace function of their own.

    python tests/scripts/profiler_threads_stress.py [--rounds N] [--janus]

``--janus`` calls one ``janus.function`` (TensorFlow) during its profiled calls instead of
driving ``janus_profiler.Profiler`` directly.  Exit status 1 and a line on stderr if any
thread got an exception, a result differs from eager's, or a hook of the profiler is left
(a trace function, a sys.monitoring tool); nothing is printed otherwise, so a run that
prints anything at all (noise at exit included) is a failure.
"""
import argparse
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

from janus_profiler import Profiler  # noqa: E402

THREADS, CALLS = 8, 40


def work(v):
    total = 0
    for i in range(v % 4 + 1):
        total += (lambda j: j + 1)(i) if i % 2 else i
    return total


def _leftovers() -> list:
    tools = [i for i in range(6) if sys.monitoring.get_tool(i) == "janus-profiler"] \
        if hasattr(sys, "monitoring") else []
    return tools + ([sys.gettrace()] if sys.gettrace() is not None else [])


def one_round(call, expected) -> list:
    """8 threads x CALLS calls; the problems seen (empty: none)."""
    problems = []
    barrier = threading.Barrier(THREADS)

    def run(t):
        def mine(frame, event, arg):
            return None
        try:
            barrier.wait()
            if t % 2:
                sys.settrace(mine)
            got = [call(t, i) for i in range(CALLS)]
            if sys.gettrace() is not (mine if t % 2 else None):
                problems.append(f"thread {t}: trace function {sys.gettrace()!r} after its calls")
            sys.settrace(None)
            if got != [expected(t, i) for i in range(CALLS)]:
                problems.append(f"thread {t}: results differ from eager's")
        except BaseException as e:  # noqa: BLE001 - the thing looked for
            problems.append(f"thread {t}: {type(e).__name__}: {e}")

    workers = [threading.Thread(target=run, args=(t,)) for t in range(THREADS)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return problems + [f"left installed: {x!r}" for x in _leftovers()]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--janus", action="store_true")
    opts = ap.parse_args()
    if opts.janus:
        import tensorflow as tf
        import janus
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
        from test_profiler_threads import step

        def rounds():
            for _ in range(opts.rounds):
                f = janus.function(step, profile_calls=THREADS * CALLS + 1)
                yield (lambda t, i: f(tf.constant([float(t), float(i)]), t + i).numpy().tolist(),
                       lambda t, i: step(tf.constant([float(t), float(i)]), t + i).numpy().tolist())
    else:
        p = Profiler()

        def rounds():
            for _ in range(opts.rounds):
                yield (lambda t, i: p.call(work, t + i)), (lambda t, i: work(t + i))
    saved = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        for n, (call, expected) in enumerate(rounds()):
            problems = one_round(call, expected)
            if problems:
                sys.stderr.write(f"round {n}: {problems[:4]}\n")
                return 1
    finally:
        sys.setswitchinterval(saved)
    return 0


if __name__ == "__main__":
    sys.exit(main())
