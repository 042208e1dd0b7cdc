"""NumPy arrays passed as arguments, whose values change from call to call: fed to the
graph like tensors (guarded on dtype and shape) while only TensorFlow reads them, and
Python values guarded by value where NumPy or Python reads them (``janus.trace.arrays``).
Every program is compared with eager after every call."""
from types import SimpleNamespace

import numpy as np
import tensorflow as tf

from harness import check


def test_a_write_into_an_array_from_state_runs_eagerly():
    def make(jit):
        class Buffer:
            def __init__(self):
                self.data = np.zeros(3)

            @jit
            def put(self, t):
                self.data[0] += 1.0
                return t + self.data[0]

        buf = Buffer()
        return SimpleNamespace(fn=buf.put, state=lambda: {"data": buf.data.copy()})

    check(make, [(tf.constant(float(i)),) for i in range(8)], eager_only=True)
