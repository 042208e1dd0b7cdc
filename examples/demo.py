"""Demo: the hand-written LSTM classifier (``lstm.py``) trained eagerly and through Janus, side by side.

Builds the trainer twice with the same seed, wraps the second one's ``train_step`` with
``janus.function``, and trains both, alternating step by step.  Reports the median step
time after warm-up, the speedup, whether the losses agree step by step, and Janus's
statistics.  Exit status 1 when the losses differ or Janus cannot be used at all.
"""
import argparse
import sys
import time

import numpy as np

import common
import lstm


def timed_step(trainer):
    start = time.perf_counter()
    loss = trainer.step()
    return loss, time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=10, help="steps left out of the timing")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    try:
        import janus

        jan = common.maybe_janus(lstm.build(args.seed), True)
    except Exception as e:  # noqa: BLE001 - Janus is still being written; say what happened
        print(f"Janus is not usable: {type(e).__name__}: {e}")
        return 1
    eager = lstm.build(args.seed)

    eager_losses, eager_times, janus_losses, janus_times = [], [], [], []
    for _ in range(args.steps):
        loss, seconds = timed_step(eager)
        eager_losses.append(loss)
        eager_times.append(seconds)
        loss, seconds = timed_step(jan)
        janus_losses.append(loss)
        janus_times.append(seconds)

    eager_ms = 1000 * np.median(eager_times[args.warmup:])
    janus_ms = 1000 * np.median(janus_times[args.warmup:])
    print(f"LSTM classifier, {args.steps} steps, median step time after {args.warmup} warm-up steps:")
    print(f"  eager  {eager_ms:7.2f} ms   loss {eager_losses[0]:.4f} -> {eager_losses[-1]:.4f}")
    print(f"  janus  {janus_ms:7.2f} ms   loss {janus_losses[0]:.4f} -> {janus_losses[-1]:.4f}")
    print(f"  speedup {eager_ms / janus_ms:.2f}x")

    close = np.isclose(janus_losses, eager_losses, rtol=1e-4)
    if close.all():
        print("losses match eager step by step (rtol 1e-4)")
    else:
        first = int(np.argmin(close))
        print(f"LOSSES DIFFER at {np.sum(~close)} of {args.steps} steps; first at step {first + 1}: "
              f"eager {eager_losses[first]:.6f}, janus {janus_losses[first]:.6f}")

    stats = janus.stats(jan.train_step)
    print(f"janus.stats: {stats}")
    if stats["graph_calls"] == 0:
        print("Janus ran no step as a graph: every step fell back to eager execution.")
        print(janus.explain(jan.train_step))
    return 0 if close.all() else 1


if __name__ == "__main__":
    sys.exit(main())
