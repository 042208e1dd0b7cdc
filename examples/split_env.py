"""A split program: a Python environment stepped inside a GradientTape.

``env.step`` computes with NumPy on the action's value, which a graph cannot do: Janus runs
that statement in Python at a graph break and the rest of the step in graph segments (the
tape keeps recording across the break).  ``python -m janus --html report.html
examples/split_env.py`` writes the page of what ran where (docs/report.png).
"""
import sys

import numpy as np
import tensorflow as tf

import janus


class Env:
    """A toy environment: its state is NumPy, its step is Python."""

    def __init__(self):
        self.state = np.zeros(4, np.float32)
        self.steps = 0

    def step(self, action):
        self.state = np.tanh(self.state + action).astype(np.float32)
        self.steps += 1
        return self.state, float(self.state.sum())


env = Env()
w = tf.Variable(tf.ones((4, 4)) * 0.1)
opt = tf.keras.optimizers.SGD(0.01)


@janus.function
def train_step(obs):
    with tf.GradientTape() as tape:
        logits = tf.matmul(obs[None, :], w)
        action = tf.nn.softmax(logits)[0]
        new_obs, reward = env.step(action.numpy())
        loss = -tf.reduce_sum(tf.math.log(action + 1e-6)) * reward
    grads = tape.gradient(loss, [w])
    opt.apply_gradients(zip(grads, [w]))
    return tf.constant(new_obs), loss


def main(steps: int = 60) -> None:
    obs = tf.zeros(4)
    for _ in range(steps):
        obs, loss = train_step(obs)
    print(f"loss {float(loss):.4f} after {steps} steps; {janus.stats(train_step)['segment_graph_calls']} segment "
          f"graph runs")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
