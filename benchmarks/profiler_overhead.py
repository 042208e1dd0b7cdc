"""Overhead of janus_profiler on an eager training step, measured side by side in one run.

    .venv/bin/python benchmarks/profiler_overhead.py [--repeats 30]

Three measurements, each the median of ``--repeats`` runs, interleaved so that
machine drift hits all of them alike:

1. an eager training step (a SimpleRNN cell applied in a Python loop over 10 time
   steps, a dense head, GradientTape, SGD) unprofiled;
2. the same step run through ``Profiler.call`` (the step function is profiled at
   the bytecode level; TensorFlow/Keras code it calls is not);
3. pure-Python code *outside* the profiled functions (a function the profiled step
   calls but that is not itself profiled), with and without the profiler active --
   this is the cost the hook imposes on code it does not trace;
4. the "floor" on 3.11: the step under a do-nothing ``sys.settrace`` function that
   selects the same frame for opcode events, i.e. what CPython's tracing mode
   costs before the profiler records anything.

``--outside-only`` runs measurement 3 alone, without TensorFlow, so it can be run
with any interpreter (e.g. ``python3.12 benchmarks/profiler_overhead.py --outside-only``
shows the sys.monitoring backend).

Not a test: numbers are for docs/profiler.md.
"""
import argparse
import os
import platform
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from janus_profiler import Profiler  # noqa: E402

B, T, D, H = 16, 10, 8, 32


def make_step():
    import tensorflow as tf

    tf.keras.utils.set_random_seed(0)
    cell = tf.keras.layers.SimpleRNNCell(H)
    head = tf.keras.layers.Dense(1)
    opt = tf.keras.optimizers.SGD(0.01)
    x = tf.random.normal((B, T, D))
    y = tf.random.normal((B, 1))

    def train_step(x, y):
        with tf.GradientTape() as tape:
            h = tf.zeros((B, H))
            for t in range(T):
                h, _ = cell(x[:, t], [h])
            if head.built or True:
                pred = head(h)
            loss = tf.reduce_mean((pred - y) ** 2)
        variables = cell.trainable_variables + head.trainable_variables
        grads = tape.gradient(loss, variables)
        opt.apply_gradients(zip(grads, variables))
        return loss

    train_step(x, y)
    return train_step, x, y


def pure_python(n=20000):
    """Plain Python work, never profiled: the 'code outside the profiled functions'."""
    s = 0
    for i in range(n):
        s += i % 7
    return s


def calls_outside():
    return pure_python()


def median_ms(fn, repeats):
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return 1000 * statistics.median(ts)


def floor_tracer(code):
    """A do-nothing tracer with the same selection: CPython's tracing-mode cost alone."""
    def local(frame, event, arg):
        return local

    def glob(frame, event, arg):
        if frame.f_code is code:
            frame.f_trace_opcodes = True
            frame.f_trace_lines = False
            return local
        return None
    return glob


def backend():
    return "sys.monitoring" if hasattr(sys, "monitoring") else "sys.settrace"


def outside(repeats, rounds):
    outside_prof = Profiler()
    a, b = [], []
    for _ in range(rounds):
        a.append(median_ms(calls_outside, repeats))
        b.append(median_ms(lambda: outside_prof.call(calls_outside), repeats))
    a, b = statistics.median(a), statistics.median(b)
    print(f"pure-Python code outside the profiled function:  unprofiled {a:7.2f} ms   "
          f"profiler active {b:7.2f} ms   ratio {b / a:.2f}x")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--outside-only", action="store_true", help="measurement 3 only, no TensorFlow")
    args = ap.parse_args()
    if args.outside_only:
        print(f"Python {platform.python_version()}, backend {backend()}, "
              f"median of {args.rounds} rounds x {args.repeats} repeats")
        outside(args.repeats, args.rounds)
        return

    import tensorflow as tf

    step, x, y = make_step()
    prof = Profiler()
    prof.call(step, x, y)  # warm the code maps
    glob = floor_tracer(step.__code__)

    def floor():
        sys.settrace(glob)
        try:
            step(x, y)
        finally:
            sys.settrace(None)

    res = {"eager": [], "profiled": [], "floor": []}
    for _ in range(args.rounds):
        res["eager"].append(median_ms(lambda: step(x, y), args.repeats))
        res["profiled"].append(median_ms(lambda: prof.call(step, x, y), args.repeats))
        if not hasattr(sys, "monitoring"):
            res["floor"].append(median_ms(floor, args.repeats))
    med = {k: statistics.median(v) for k, v in res.items() if v}

    print(f"machine: {os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}, TensorFlow {tf.__version__} "
          f"({'GPU' if tf.config.list_physical_devices('GPU') else 'CPU only'}), backend {backend()}")
    print(f"median of {args.rounds} rounds x {args.repeats} repeats")
    print(f"eager training step (RNN, T={T}, B={B}, H={H}):  unprofiled {med['eager']:7.2f} ms   "
          f"profiled {med['profiled']:7.2f} ms   ratio {med['profiled'] / med['eager']:.2f}x")
    if "floor" in med:
        print(f"  floor: do-nothing settrace selecting the same frame  {med['floor']:7.2f} ms   "
              f"ratio {med['floor'] / med['eager']:.2f}x")
    outside(args.repeats, args.rounds)
    f = prof.data.function(step)
    print(f"(profile sanity: {f.calls} profiled calls of train_step recorded)")


if __name__ == "__main__":
    main()
