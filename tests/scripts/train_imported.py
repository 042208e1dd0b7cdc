"""An ordinary eager TF2 script (no Janus in it) whose training step is imported from steplib."""
import numpy as np
import tensorflow as tf

import steplib

tf.keras.utils.set_random_seed(0)
rs = np.random.RandomState(3)
batches = [(tf.constant(rs.randn(8, 3).astype(np.float32)), tf.constant(rs.randn(8, 2).astype(np.float32)))
           for _ in range(3)]
model = tf.keras.Sequential([tf.keras.layers.Dense(6, activation="relu"), tf.keras.layers.Dense(2)])
model.build((None, 3))
optimizer = tf.keras.optimizers.SGD(0.1, momentum=0.9)
for step in range(15):
    x, y = batches[step % 3]
    loss = steplib.train_step(model, optimizer, x, y)
    print(f"step {step} loss {float(loss):.6f}")
