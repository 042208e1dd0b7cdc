"""An ordinary eager TF2 training script (no Janus in it): the training loop at module level."""
import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(0)
rs = np.random.RandomState(2)
w_true = rs.randn(4, 1).astype(np.float32)
data = []
for _ in range(4):
    xb = rs.randn(16, 4).astype(np.float32)
    data.append((tf.constant(xb), tf.constant(xb @ w_true - 0.2)))

model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="tanh"), tf.keras.layers.Dense(1)])
model.build((None, 4))
optimizer = tf.keras.optimizers.Adam(0.02)
total = 0.0
losses = []

for step in range(20):
    x, y = data[step % 4]
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x) - y))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    losses.append(loss)

for step, loss in enumerate(losses):
    print(f"step {step} loss {float(loss):.6f}")
