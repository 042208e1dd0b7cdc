"""An ordinary eager TF2 training script (no Janus in it): a class with a train_step method."""
import sys

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(0)
STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 20


class Trainer:
    def __init__(self):
        self.model = tf.keras.Sequential([
            tf.keras.layers.Dense(16, activation="relu"),
            tf.keras.layers.Dense(1),
        ])
        self.model.build((None, 4))
        self.optimizer = tf.keras.optimizers.SGD(0.05, momentum=0.9)

    def train_step(self, x, y):
        with tf.GradientTape() as tape:
            pred = self.model(x)
            loss = tf.reduce_mean(tf.square(pred - y))
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
        return loss

    def evaluate(self, x, y):
        return tf.reduce_mean(tf.square(self.model(x) - y))


def batches(n, batch=16):
    rs = np.random.RandomState(1)
    w = rs.randn(4, 1).astype(np.float32)
    out = []
    for _ in range(n):
        x = rs.randn(batch, 4).astype(np.float32)
        out.append((tf.constant(x), tf.constant(x @ w + 0.1)))
    return out


def main():
    trainer = Trainer()
    data = batches(4)
    for step in range(STEPS):
        x, y = data[step % len(data)]
        loss = trainer.train_step(x, y)
        print(f"step {step} loss {float(loss):.6f}")
    print(f"eval {float(trainer.evaluate(*data[0])):.6f}")


if __name__ == "__main__":
    main()
