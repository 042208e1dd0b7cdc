"""Benchmark: PPO as keras-io writes it ("Proximal Policy Optimization", CartPole), on a
CartPole written in NumPy (gymnasium's equations; no download, no extra package; keras-io's SciPy
discounting written as a loop).

The program is keras-io's: a ``Buffer`` of NumPy arrays filled one environment step at a
time, ``sample_action`` drawing with ``tf.random.categorical``, and the two training
functions, whose arguments are the buffer's NumPy arrays, new at every epoch.
``train_policy`` computes ``advantage_buffer > 0`` and ``(1 + clip_ratio) *
advantage_buffer`` with NumPy on its argument.  Each mode replaces keras-io's
``@tf.function`` with its own wrapper: eager (none), Janus (``janus.function``), and
``tf.function`` (keras-io as written, which is also the hand-written graph here).  Each mode
runs the same epochs in one process, from the same seeds; per epoch (median of the last
half) and over the whole run (first call included), and the training functions alone.

    python benchmarks/ppo.py [--epochs 8] [--steps 200]
"""
from __future__ import annotations

import argparse
import math
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import janus  # noqa: E402

GAMMA, LAM, CLIP_RATIO, TARGET_KL = 0.99, 0.97, 0.2, 0.01
POLICY_ITERATIONS, VALUE_ITERATIONS = 20, 20
HIDDEN = (64, 64)


class CartPole:
    """gymnasium's CartPole-v1 dynamics in NumPy (Euler integration, 500-step limit)."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.state, self.steps = None, 0

    def reset(self):
        self.state, self.steps = self.rng.uniform(-0.05, 0.05, 4), 0
        return self.state.astype(np.float32), {}

    def step(self, action: int):
        x, x_dot, theta, theta_dot = self.state
        force = 10.0 if action == 1 else -10.0
        cos, sin = math.cos(theta), math.sin(theta)
        temp = (force + 0.05 * theta_dot ** 2 * sin) / 1.1
        theta_acc = (9.8 * sin - cos * temp) / (0.5 * (4.0 / 3.0 - 0.1 * cos ** 2 / 1.1))
        x_acc = temp - 0.05 * theta_acc * cos / 1.1
        self.state = np.array([x + 0.02 * x_dot, x_dot + 0.02 * x_acc, theta + 0.02 * theta_dot,
                               theta_dot + 0.02 * theta_acc])
        self.steps += 1
        terminated = bool(abs(self.state[0]) > 2.4 or abs(self.state[2]) > 12 * 2 * math.pi / 360)
        return self.state.astype(np.float32), 1.0, terminated, self.steps >= 500, {}


def discounted_cumulative_sums(x, discount):
    """keras-io's ``scipy.signal.lfilter([1], [1, -discount], x[::-1])[::-1]``, as a loop
    (SciPy is not among the project's dependencies)."""
    out, running = np.zeros(len(x)), 0.0
    for i in range(len(x) - 1, -1, -1):
        running = x[i] + discount * running
        out[i] = running
    return out


class Buffer:
    """keras-io's buffer: NumPy arrays, advantages by GAE-lambda, normalized in get()."""

    def __init__(self, observation_dimensions, size, gamma=GAMMA, lam=LAM):
        self.observation_buffer = np.zeros((size, observation_dimensions), dtype=np.float32)
        self.action_buffer = np.zeros(size, dtype=np.int32)
        self.advantage_buffer = np.zeros(size, dtype=np.float32)
        self.reward_buffer = np.zeros(size, dtype=np.float32)
        self.return_buffer = np.zeros(size, dtype=np.float32)
        self.value_buffer = np.zeros(size, dtype=np.float32)
        self.logprobability_buffer = np.zeros(size, dtype=np.float32)
        self.gamma, self.lam = gamma, lam
        self.pointer, self.trajectory_start_index = 0, 0

    def store(self, observation, action, reward, value, logprobability):
        self.observation_buffer[self.pointer] = observation
        self.action_buffer[self.pointer] = action
        self.reward_buffer[self.pointer] = reward
        self.value_buffer[self.pointer] = value
        self.logprobability_buffer[self.pointer] = logprobability
        self.pointer += 1

    def finish_trajectory(self, last_value=0):
        path_slice = slice(self.trajectory_start_index, self.pointer)
        rewards = np.append(self.reward_buffer[path_slice], last_value)
        values = np.append(self.value_buffer[path_slice], last_value)
        deltas = rewards[:-1] + self.gamma * values[1:] - values[:-1]
        self.advantage_buffer[path_slice] = discounted_cumulative_sums(deltas, self.gamma * self.lam)
        self.return_buffer[path_slice] = discounted_cumulative_sums(rewards, self.gamma)[:-1]
        self.trajectory_start_index = self.pointer

    def get(self):
        self.pointer, self.trajectory_start_index = 0, 0
        advantage_mean, advantage_std = np.mean(self.advantage_buffer), np.std(self.advantage_buffer)
        self.advantage_buffer = (self.advantage_buffer - advantage_mean) / advantage_std
        return (self.observation_buffer, self.action_buffer, self.advantage_buffer, self.return_buffer,
                self.logprobability_buffer)


def mlp(x, sizes, activation=keras.activations.tanh, output_activation=None):
    for size in sizes[:-1]:
        x = keras.layers.Dense(units=size, activation=activation)(x)
    return keras.layers.Dense(units=sizes[-1], activation=output_activation)(x)


def build(wrap, steps_per_epoch: int):
    """keras-io's models, optimizers and functions, with ``wrap`` where it writes ``@tf.function``."""
    keras.utils.set_random_seed(0)
    num_actions, observation_dimensions = 2, 4
    observation_input = keras.Input(shape=(observation_dimensions,), dtype="float32")
    actor = keras.Model(inputs=observation_input, outputs=mlp(observation_input, list(HIDDEN) + [num_actions]))
    critic = keras.Model(inputs=observation_input,
                         outputs=keras.ops.squeeze(mlp(observation_input, list(HIDDEN) + [1]), axis=1))
    policy_optimizer = keras.optimizers.Adam(learning_rate=3e-4)
    value_optimizer = keras.optimizers.Adam(learning_rate=1e-3)

    def logprobabilities(logits, a):
        logprobabilities_all = keras.ops.log_softmax(logits)
        return keras.ops.sum(keras.ops.one_hot(a, num_actions) * logprobabilities_all, axis=1)

    @wrap
    def sample_action(observation):
        logits = actor(observation)
        action = keras.ops.squeeze(tf.random.categorical(logits, 1), axis=1)
        return logits, action

    @wrap
    def train_policy(observation_buffer, action_buffer, logprobability_buffer, advantage_buffer):
        with tf.GradientTape() as tape:
            ratio = keras.ops.exp(logprobabilities(actor(observation_buffer), action_buffer) - logprobability_buffer)
            min_advantage = keras.ops.where(advantage_buffer > 0, (1 + CLIP_RATIO) * advantage_buffer,
                                            (1 - CLIP_RATIO) * advantage_buffer)
            policy_loss = -keras.ops.mean(keras.ops.minimum(ratio * advantage_buffer, min_advantage))
        policy_grads = tape.gradient(policy_loss, actor.trainable_variables)
        policy_optimizer.apply_gradients(zip(policy_grads, actor.trainable_variables))
        kl = keras.ops.mean(logprobability_buffer - logprobabilities(actor(observation_buffer), action_buffer))
        return keras.ops.sum(kl)

    @wrap
    def train_value_function(observation_buffer, return_buffer):
        with tf.GradientTape() as tape:
            value_loss = keras.ops.mean((return_buffer - critic(observation_buffer)) ** 2)
        value_grads = tape.gradient(value_loss, critic.trainable_variables)
        value_optimizer.apply_gradients(zip(value_grads, critic.trainable_variables))

    return actor, critic, logprobabilities, sample_action, train_policy, train_value_function


def run(wrap, epochs: int, steps_per_epoch: int) -> dict:
    """keras-io's training loop; the times of each epoch and of its training calls."""
    actor, critic, logprobabilities, sample_action, train_policy, train_value_function = build(wrap, steps_per_epoch)
    env, buffer = CartPole(seed=1), Buffer(4, steps_per_epoch)
    observation, _ = env.reset()
    episode_return = episode_length = 0
    epoch_times, train_times, returns, start = [], [], [], time.perf_counter()
    for _ in range(epochs):
        t0 = time.perf_counter()
        sum_return = num_episodes = 0
        for t in range(steps_per_epoch):
            observation = observation.reshape(1, -1)
            logits, action = sample_action(observation)
            observation_new, reward, done, truncated, _ = env.step(action[0].numpy())
            episode_return += reward
            episode_length += 1
            value_t = critic(observation)
            logprobability_t = logprobabilities(logits, action)
            # keras-io stores the 1-element tensors themselves; NumPy 2 refuses them in a scalar slot
            buffer.store(observation, action[0], reward, value_t[0], logprobability_t[0])
            observation = observation_new
            if done or truncated or t == steps_per_epoch - 1:
                last_value = 0 if done else critic(observation.reshape(1, -1))
                buffer.finish_trajectory(last_value)
                sum_return += episode_return
                num_episodes += 1
                observation, _ = env.reset()
                episode_return = episode_length = 0
        t1 = time.perf_counter()
        (observation_buffer, action_buffer, advantage_buffer, return_buffer,
         logprobability_buffer) = buffer.get()
        for _ in range(POLICY_ITERATIONS):
            kl = train_policy(observation_buffer, action_buffer, logprobability_buffer, advantage_buffer)
            if kl > 1.5 * TARGET_KL:
                break
        for _ in range(VALUE_ITERATIONS):
            train_value_function(observation_buffer, return_buffer)
        t2 = time.perf_counter()
        epoch_times.append(t2 - t0)
        train_times.append(t2 - t1)
        returns.append(sum_return / num_episodes)
    return {"epoch": epoch_times, "train": train_times, "total": time.perf_counter() - start, "returns": returns,
            "weights": [w.numpy() for w in actor.weights + critic.weights],
            "stats": {"sample_action": _stats(sample_action), "train_policy": _stats(train_policy),
                      "train_value_function": _stats(train_value_function)}}


def _stats(f) -> dict:
    try:
        return janus.stats(f)
    except TypeError:  # not a Janus function
        return {}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--steps", type=int, default=200)
    args = parser.parse_args()
    modes = [("eager", lambda f: f), ("Janus", janus.function), ("tf.function", tf.function)]
    results = {name: run(wrap, args.epochs, args.steps) for name, wrap in modes}
    half = args.epochs // 2
    eager = results["eager"]
    print(f"PPO, {args.epochs} epochs of {args.steps} steps; {POLICY_ITERATIONS}+{VALUE_ITERATIONS} training calls "
          "an epoch at most")
    print("| | epoch (ms, median of last half) | training calls of an epoch (ms) | whole run (s) "
          "| vs eager per epoch | vs eager, whole run | eager's numbers |")
    print("|---|---|---|---|---|---|---|")
    for name, r in results.items():
        epoch, train = statistics.median(r["epoch"][half:]), statistics.median(r["train"][half:])
        same = r["returns"] == eager["returns"] and all(np.array_equal(a, b) for a, b in zip(r["weights"],
                                                                                              eager["weights"]))
        print(f"| {name} | {epoch * 1e3:.0f} | {train * 1e3:.0f} | {r['total']:.1f} | "
              f"{statistics.median(eager['epoch'][half:]) / epoch:.2f}x | {eager['total'] / r['total']:.2f}x | "
              f"{'bitwise' if same else 'differ'} |")
    for name, stats in results["Janus"]["stats"].items():
        keep = ("calls", "graph_calls", "eager_calls", "conversions", "breaks", "segment_graph_calls")
        print(f"Janus {name}:", {k: stats[k] for k in keep if stats.get(k)})


if __name__ == "__main__":
    main()
