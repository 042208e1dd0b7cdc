"""What the guard on Keras objects' Python state costs a graph hit (``janus.trace.library_state``).

A small Keras training step (two Dense layers, Adam, batch 4) through ``janus.function``, timed
per call after warm-up, with the guard and without it (the guard replaced by a no-op in that
process only, to measure it: never do this in a program), in alternating processes; and the
guard's own check, timed alone.

Usage: ``python benchmarks/keras_state_guard.py [--rounds N]``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
import timeit

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _step_us(guarded: bool) -> tuple[float, float, int]:
    """Median us per call of the step (7 windows of 200 calls), the guard's check alone (us),
    and how many objects and containers it compares."""
    import keras
    import tensorflow as tf

    import janus
    from janus.trace import library_state

    if not guarded:
        library_state.guard = lambda *args, **kwargs: None
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(1)])
    opt = keras.optimizers.Adam()
    x = tf.ones([4, 8])

    @janus.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(model(x))
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    for _ in range(20):
        step(x)
    windows = []
    for _ in range(7):
        start = time.perf_counter()
        for _ in range(200):
            step(x)
        windows.append((time.perf_counter() - start) / 200 * 1e6)
    state = library_state.LibraryState(library_state._reachable([model, opt]))  # noqa: SLF001 - measured alone
    alone = timeit.timeit(state.unchanged, number=2000) / 2000 * 1e6
    return statistics.median(windows), alone, len(state)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] in ("on", "off"):
        print(*_step_us(sys.argv[1] == "on"))
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    seen: dict = {"on": [], "off": []}
    alone = objects = None
    for _ in range(rounds):
        for mode in ("on", "off"):
            out = subprocess.run([sys.executable, __file__, mode], capture_output=True, text=True, check=True)
            per_call, check_us, count = out.stdout.split()
            seen[mode].append(float(per_call))
            if mode == "on":
                alone, objects = float(check_us), int(count)
    on, off = statistics.median(seen["on"]), statistics.median(seen["off"])
    print(f"Keras step (2 Dense, Adam), us per graph hit, median of {rounds} alternating processes each:")
    print(f"  guarded   {on:8.1f}   {[round(v, 1) for v in seen['on']]}")
    print(f"  unguarded {off:8.1f}   {[round(v, 1) for v in seen['off']]}")
    print(f"  the guard's check alone: {alone:.1f} us over {objects} Keras objects and containers")


if __name__ == "__main__":
    main()
