"""One worker of a two-worker MultiWorkerMirroredStrategy training loop (TF_CONFIG set by
the caller): the loop runs eagerly, then through Janus from the same initial weights;
prints one JSON line of what this worker saw.

At step ``MISS_STEP`` worker 1 alone scales its loss by another Python float: its graph's
guard misses there while worker 0's holds, and both must take the same path.
"""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import janus  # noqa: E402

tf.get_logger().setLevel("ERROR")
strategy = tf.distribute.MultiWorkerMirroredStrategy()
GLOBAL_BATCH = 8
STEPS, MISS_STEP = 10, 6
WORKER = json.loads(os.environ["TF_CONFIG"])["task"]["index"]


class Trainer:
    def __init__(self, jit):
        with strategy.scope():
            self.model = tf.keras.Sequential([
                tf.keras.Input((4,)), tf.keras.layers.Dense(1, kernel_initializer=tf.keras.initializers.GlorotUniform(1))])
            self.opt = tf.keras.optimizers.SGD(0.05)
        self.history = []
        self.scale = 1.0
        self.step = jit(self.step)

    def replica_step(self, x, y):
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(tf.square(self.model(x, training=True) - y),
                                              global_batch_size=GLOBAL_BATCH) * self.scale
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.opt.apply_gradients(zip(grads, self.model.trainable_variables))
        return loss

    def step(self, x, y):
        loss = strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(self.replica_step, args=(x, y)), axis=None)
        self.history.append(loss)
        return loss


def run(jit):
    rs = np.random.RandomState(0)
    x = rs.randn(STEPS * GLOBAL_BATCH, 4).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5], [0.0]], np.float32)).astype(np.float32)
    data = strategy.experimental_distribute_dataset(tf.data.Dataset.from_tensor_slices((x, y)).batch(GLOBAL_BATCH))
    trainer = Trainer(jit)
    losses = []
    for i, (bx, by) in enumerate(data):
        trainer.scale = 0.5 if i == MISS_STEP and WORKER == 1 else 1.0
        losses.append(float(trainer.step(bx, by)))
    return trainer, losses, [w.numpy().ravel().tolist() for w in trainer.model.trainable_variables]


_, eager_losses, eager_weights = run(lambda f: f)
trainer, janus_losses, janus_weights = run(janus.function)
print(json.dumps({"eager": eager_losses, "janus": janus_losses, "eager_weights": eager_weights,
                  "janus_weights": janus_weights, "history": len(trainer.history),
                  "stats": janus.stats(trainer.step), "explain": str(janus.explain(trainer.step))}))
