"""TensorFlow's op dispatch is not thread-safe: a deterministic reproduction, no Janus.

    python -X dev -X faulthandler tests/scripts/tf_dispatch_race.py [--same-thread]

``PythonAPIDispatcher::Dispatch`` (tensorflow/python/framework/python_api_dispatcher.cc)
canonicalizes an op's arguments into a buffer that belongs to the dispatcher (one per
API, e.g. ``tf.reshape``), as borrowed references, then type-checks them one by one.  A
check of a type not seen before by that checker calls ``isinstance`` against TensorFlow's
``typing.Protocol`` classes, which runs Python code (``typing``/``abc``
``__instancecheck__``); the GIL can pass to another thread there.  If that thread calls
the same op, it overwrites the shared buffer with its own arguments, and once they are
freed the first thread type-checks freed objects: the SIGBUS/SIGSEGV of the concurrency
sweep on 3.13 (issue #39 item 2; a core showed ``instance`` = 0xdddd... under ``-X dev``).

Here the first thread's argument is an object of a new class that matches
``TensorProtocol`` (so the check goes on to the next argument) and whose ``__class__`` is
a property (``abc`` reads it while checking), which lets the other thread make its call
right then, deterministically; its arguments die before the first thread resumes.
Exit status 0 if the first call survived; a crash (or a wrong error) otherwise.
"""
from __future__ import annotations

import argparse
import os
import sys
import threading

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def make_value(interleave):
    """An object of a new type (so the dispatcher's per-type cache misses) that runs
    ``interleave`` when ``isinstance`` asks for its ``__class__``."""
    class Probe:
        def __tf_tensor__(self, dtype=None, name=None):  # matches TensorFlow's TensorProtocol
            return tf.constant([1.0, 2.0])

        @property
        def __class__(self):
            interleave()
            return Probe
    return Probe()


def other_call() -> None:
    """The other thread's call: arguments that die as soon as it returns."""
    t = tf.constant(np.arange(6, dtype=np.float32))
    tf.reshape(t, tf.constant([2, 3]))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--same-thread", action="store_true", help="re-enter from the same thread instead")
    opts = ap.parse_args()
    done = []

    def interleave():
        if done:
            return
        done.append(1)
        if opts.same_thread:
            other_call()
        else:
            t = threading.Thread(target=other_call)
            t.start()
            t.join()   # the first thread waits inside its isinstance check, as a GIL switch would

    for position in (0, 1):
        done.clear()
        args = [tf.constant([1.0, 2.0]), [2]]
        args[position] = make_value(interleave)
        try:
            tf.reshape(*args)
        except (TypeError, ValueError):
            pass   # what eager says of a bad argument: fine, if it gets that far
    print("survived")
    return 0


if __name__ == "__main__":
    sys.exit(main())
