"""PPO as keras-io writes it (CartPole in NumPy), with keras-io's ``@tf.function`` decorators
removed: a user's eager program.  ``sample_action`` (no tape) runs once per environment step;
``train_policy`` and ``train_value_function`` record tapes.  ``python -m janus`` takes the
training functions over at once and ``sample_action`` and ``logprobabilities`` once hot
(tests/test_hook_beyond_tapes.py).

    python tests/scripts/ppo_keras_io.py [epochs] [steps_per_epoch]
"""
import math
import sys

import keras
import numpy as np
import tensorflow as tf

EPOCHS = int(sys.argv[1]) if len(sys.argv) > 1 else 3
STEPS_PER_EPOCH = int(sys.argv[2]) if len(sys.argv) > 2 else 80
GAMMA, LAM, CLIP_RATIO, TARGET_KL = 0.99, 0.97, 0.2, 0.01
POLICY_ITERATIONS, VALUE_ITERATIONS = 5, 5
HIDDEN = (16, 16)
num_actions, observation_dimensions = 2, 4


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


def logprobabilities(logits, a):
    logprobabilities_all = keras.ops.log_softmax(logits)
    return keras.ops.sum(keras.ops.one_hot(a, num_actions) * logprobabilities_all, axis=1)


def sample_action(observation):
    logits = actor(observation)
    action = keras.ops.squeeze(tf.random.categorical(logits, 1), axis=1)
    return logits, action


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


def train_value_function(observation_buffer, return_buffer):
    with tf.GradientTape() as tape:
        value_loss = keras.ops.mean((return_buffer - critic(observation_buffer)) ** 2)
    value_grads = tape.gradient(value_loss, critic.trainable_variables)
    value_optimizer.apply_gradients(zip(value_grads, critic.trainable_variables))


keras.utils.set_random_seed(0)
observation_input = keras.Input(shape=(observation_dimensions,), dtype="float32")
actor = keras.Model(inputs=observation_input, outputs=mlp(observation_input, list(HIDDEN) + [num_actions]))
critic = keras.Model(inputs=observation_input,
                     outputs=keras.ops.squeeze(mlp(observation_input, list(HIDDEN) + [1]), axis=1))
policy_optimizer = keras.optimizers.Adam(learning_rate=3e-4)
value_optimizer = keras.optimizers.Adam(learning_rate=1e-3)

env, buffer = CartPole(seed=1), Buffer(observation_dimensions, STEPS_PER_EPOCH)
observation, _ = env.reset()
episode_return = episode_length = 0
for epoch in range(EPOCHS):
    sum_return = num_episodes = 0
    actions = []
    for t in range(STEPS_PER_EPOCH):
        observation = observation.reshape(1, -1)
        logits, action = sample_action(observation)
        actions.append(int(action[0]))
        observation_new, reward, done, truncated, _ = env.step(action[0].numpy())
        episode_return += reward
        episode_length += 1
        value_t = critic(observation)
        logprobability_t = logprobabilities(logits, action)
        buffer.store(observation, action[0], reward, value_t[0], logprobability_t[0])
        observation = observation_new
        if done or truncated or t == STEPS_PER_EPOCH - 1:
            last_value = 0 if done else critic(observation.reshape(1, -1))
            buffer.finish_trajectory(last_value)
            sum_return += episode_return
            num_episodes += 1
            observation, _ = env.reset()
            episode_return = episode_length = 0
    (observation_buffer, action_buffer, advantage_buffer, return_buffer,
     logprobability_buffer) = buffer.get()
    for _ in range(POLICY_ITERATIONS):
        kl = train_policy(observation_buffer, action_buffer, logprobability_buffer, advantage_buffer)
        if kl > 1.5 * TARGET_KL:
            break
    for _ in range(VALUE_ITERATIONS):
        train_value_function(observation_buffer, return_buffer)
    print(f"epoch {epoch + 1} episodes {num_episodes} mean return {sum_return / num_episodes:.4f} "
          f"actions {''.join(map(str, actions))}")
    print(f"epoch {epoch + 1} weights {sum(float(np.sum(w)) for w in actor.get_weights()):.4f}")
