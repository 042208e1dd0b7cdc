"""Shared driver of the example programs: the trainer protocol, the command line, Janus opt-in.

Every example defines ``build(seed) -> Trainer`` where the trainer has ``next_batch()``
(Python-side data, numpy -> tf.constant), ``train_step(*batch)`` (one ordinary eager
training step; the function Janus converts) and ``step()`` (both, returning the loss as a
float). ``main`` trains for ``--steps`` steps, eagerly or with ``--janus``.

The examples import each other as top-level modules (``import common``, ``import data``):
to import one from elsewhere, put ``examples/`` on ``sys.path`` first.
"""
import argparse
import time

import numpy as np


class Trainer:
    """Base of the examples' trainers; subclasses define ``next_batch`` and ``train_step``."""

    def step(self) -> float:
        return float(self.train_step(*self.next_batch()))

    def metrics(self) -> dict:
        """Monitoring values printed with the loss (held-out accuracy, episode return, ...)."""
        return {}


def maybe_janus(trainer, enabled):
    """Run ``trainer.train_step`` through Janus when ``enabled``; the program is unchanged."""
    if enabled:
        import janus

        trainer.train_step = janus.function(trainer.train_step)
    return trainer


def main(build, argv, *, doc, steps, log_every):
    """Parse the command line, train, print the mean loss every ``log_every`` steps; return the losses."""
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    parser.add_argument("--steps", type=int, default=steps, help="training steps (default %(default)s)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--janus", action="store_true", help="run train_step through janus.function")
    parser.add_argument("--log-every", type=int, default=log_every)
    args = parser.parse_args(argv)

    trainer = maybe_janus(build(args.seed), args.janus)
    losses, seconds = [], 0.0
    for i in range(1, args.steps + 1):
        start = time.perf_counter()
        losses.append(trainer.step())
        seconds += time.perf_counter() - start
        if i % args.log_every == 0 or i == args.steps:
            window = losses[-((i - 1) % args.log_every + 1):]
            extra = "".join(f"  {name} {value:.3f}" for name, value in trainer.metrics().items())
            print(f"step {i:5d}  loss {np.mean(window):.4f}{extra}", flush=True)
    print(f"done: {args.steps} steps, {1000 * seconds / args.steps:.1f} ms/step, "
          f"first loss {losses[0]:.4f}, last loss {losses[-1]:.4f}")
    if args.janus:
        import janus

        print("janus:", janus.stats(trainer.train_step))
    return losses
