"""An ordinary eager TF2 script (no Janus in it): epochs over a list of batches, loop at module level."""
import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(0)
rs = np.random.RandomState(4)
dataset = [(tf.constant(rs.randn(16, 4).astype(np.float32)), tf.constant(rs.randn(16, 1).astype(np.float32)))
           for _ in range(5)]
model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(1)])
model.build((None, 4))
optimizer = tf.keras.optimizers.SGD(0.05, momentum=0.9)
history = []

for epoch in range(4):
    epoch_loss = 0.0
    for x, y in dataset:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        epoch_loss = epoch_loss + loss
    history.append(epoch_loss / len(dataset))
    print(f"epoch {epoch} loss {float(history[-1]):.6f}")
