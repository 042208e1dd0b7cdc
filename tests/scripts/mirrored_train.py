"""A custom training loop under MirroredStrategy on two logical CPU devices, run eagerly
and through Janus from the same initial state; prints one JSON line of what each saw.

    python mirrored_train.py [outer|inner] [steps]

``outer``: ``janus.function`` of the distributed step (``strategy.run`` inside it);
``inner``: the per-replica step is a Janus function passed to ``strategy.run``;
``multiworker``: ``outer`` under a (single-worker) MultiWorkerMirroredStrategy.
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)

import janus  # noqa: E402

tf.get_logger().setLevel("ERROR")
MODE = sys.argv[1] if len(sys.argv) > 1 else "outer"
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 12
GLOBAL_BATCH = 8
if MODE == "multiworker":
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
else:
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])


class Trainer:
    def __init__(self, jit):
        with strategy.scope():
            self.model = tf.keras.Sequential([
                tf.keras.Input((4,)),
                tf.keras.layers.Dense(8, activation="tanh", kernel_initializer=tf.keras.initializers.GlorotUniform(1)),
                tf.keras.layers.Dense(1, kernel_initializer=tf.keras.initializers.GlorotUniform(2)),
            ])
            self.opt = tf.keras.optimizers.SGD(0.05, momentum=0.9)
        self.replica_calls = 0
        self.history = []
        if MODE == "inner":
            self.replica_step = jit(self.replica_step)
        else:
            self.step = jit(self.step)

    def replica_step(self, x, y):
        with tf.GradientTape() as tape:
            per_example = tf.square(self.model(x, training=True) - y)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.opt.apply_gradients(zip(grads, self.model.trainable_variables))
        self.replica_calls += 1
        return loss

    def step(self, x, y):
        per_replica = strategy.run(self.replica_step, args=(x, y))
        loss = strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
        self.history.append(loss)
        return loss


def batches():
    rs = np.random.RandomState(0)
    n = STEPS * GLOBAL_BATCH - GLOBAL_BATCH // 2  # the last batch is smaller
    x = rs.randn(n, 4).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5], [0.0]], np.float32) + 0.1).astype(np.float32)
    return strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices((x, y)).batch(GLOBAL_BATCH))


def run(jit):
    trainer = Trainer(jit)
    seen = []
    for x, y in batches():
        loss = trainer.step(x, y)
        seen.append({"loss": float(loss), "replica_calls": trainer.replica_calls,
                     "history": [float(h) for h in trainer.history],
                     "weights": [w.numpy().ravel().tolist() for w in trainer.model.trainable_variables]})
    return trainer, seen


_, eager = run(lambda f: f)
trainer, jan = run(janus.function)
fn = trainer.replica_step if MODE == "inner" else trainer.step
print(json.dumps({"eager": eager, "janus": jan, "stats": janus.stats(fn), "explain": str(janus.explain(fn))}))
