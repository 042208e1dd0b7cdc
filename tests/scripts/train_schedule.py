"""An ordinary eager TF2 training script (no Janus in it) whose scheduler writes the
learning rate into an OrderedDict of hyper-parameters that the step reads."""
import collections

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(0)
HPARAMS = collections.OrderedDict(lr=0.1, l2=1e-3)


def schedule(epoch):
    HPARAMS["lr"] = 0.1 * 0.5 ** epoch


w = tf.Variable(tf.ones([4, 1]))


def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(x @ w - y)) + HPARAMS["l2"] * tf.reduce_sum(w * w)
    (g,) = tape.gradient(loss, [w])
    w.assign_sub(HPARAMS["lr"] * g)
    return loss


def main():
    rs = np.random.RandomState(1)
    data = [(tf.constant(rs.randn(8, 4).astype(np.float32)), tf.constant(rs.randn(8, 1).astype(np.float32)))
            for _ in range(4)]
    for epoch in range(4):
        schedule(epoch)
        for x, y in data:
            loss = train_step(x, y)
        print(f"epoch {epoch} loss {float(loss):.6f} w {np.round(w.numpy().ravel(), 6).tolist()}")


if __name__ == "__main__":
    main()
