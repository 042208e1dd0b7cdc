"""What running Janus's graphs without Grappler's reassociating passes costs.

    .venv/bin/python benchmarks/exact_arithmetic.py lenet gan dcgan vae

Janus calls its graphs with Grappler's arithmetic optimizer and constant folding off
(``janus._tf_private._exact_call_options``), so that they round like eager.  For each
example, one Janus trainer is warmed up, then windows of 20 steps alternate between
Janus's options and TensorFlow's default ones (the same cached graph; each setting is
optimized once, in the warm-up); the median of 8 windows per setting is reported.
"""
import argparse
import importlib
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))

import janus  # noqa: E402
from janus import _tf_private  # noqa: E402


def measure(name: str, windows: int = 8, steps: int = 20) -> tuple[float, float]:
    trainer = importlib.import_module(name).build(0)
    trainer.train_step = janus.function(trainer.train_step)
    batches = [trainer.next_batch() for _ in range(steps)]
    exact = _tf_private._exact_call_options
    settings = {"exact": exact, "default": lambda base, remapping=True: base}
    times: dict[str, list[float]] = {k: [] for k in settings}
    try:
        for batch in batches[:10]:
            float(trainer.train_step(*batch))
        for i in range(windows):
            for mode in (("exact", "default") if i % 2 == 0 else ("default", "exact")):
                _tf_private._exact_call_options = settings[mode]
                _tf_private._EXACT_ATTRS.clear()  # the call attributes cached from the other setting
                float(trainer.train_step(*batches[0]))
                start = time.perf_counter()
                for batch in batches:
                    float(trainer.train_step(*batch))
                times[mode].append((time.perf_counter() - start) / steps)
    finally:
        _tf_private._exact_call_options = exact
        _tf_private._EXACT_ATTRS.clear()
    return statistics.median(times["exact"]), statistics.median(times["default"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("examples", nargs="+")
    args = parser.parse_args()
    for name in args.examples:
        exact, default = measure(name)
        print(f"{name}: exact {exact * 1e3:.2f} ms/step, TF default {default * 1e3:.2f} ms/step, "
              f"exact/default {exact / default:.2f}")


if __name__ == "__main__":
    main()
