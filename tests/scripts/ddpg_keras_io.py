"""DDPG as keras-io writes it ("Deep Deterministic Policy Gradient", the TensorFlow-era
``update_target`` assigning variables), with its ``@tf.function`` decorators removed and a
Pendulum in NumPy (gymnasium's equations): a user's eager program.  ``Buffer.update``
records tapes; ``update_target`` (no tape) runs twice per environment step, ``policy`` and
``Buffer.learn`` once.  ``python -m janus`` takes them over once hot
(tests/test_hook_beyond_tapes.py).

    python tests/scripts/ddpg_keras_io.py [episodes] [steps]
"""
import sys
import math
import numpy as np
import tensorflow as tf
import keras
from keras import layers

keras.utils.set_random_seed(0)
num_states, num_actions, upper_bound, lower_bound = 3, 1, 2.0, -2.0


class Pendulum:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
    def reset(self):
        self.th, self.thdot = self.rng.uniform(-np.pi, np.pi), self.rng.uniform(-1, 1)
        return self._obs()
    def _obs(self):
        return np.array([math.cos(self.th), math.sin(self.th), self.thdot], dtype=np.float32)
    def step(self, u):
        u = float(np.clip(u, -2.0, 2.0))
        cost = ((self.th + np.pi) % (2 * np.pi) - np.pi) ** 2 + 0.1 * self.thdot ** 2 + 0.001 * u ** 2
        self.thdot = np.clip(self.thdot + (3 * 10.0 / 2 * math.sin(self.th) + 3.0 * u) * 0.05, -8, 8)
        self.th = self.th + self.thdot * 0.05
        return self._obs(), -cost


class OUActionNoise:
    def __init__(self, mean, std_deviation, theta=0.15, dt=1e-2, x_initial=None):
        self.theta, self.mean, self.std_dev, self.dt, self.x_initial = theta, mean, std_deviation, dt, x_initial
        self.reset()
    def __call__(self):
        x = (self.x_prev + self.theta * (self.mean - self.x_prev) * self.dt
             + self.std_dev * np.sqrt(self.dt) * np.random.normal(size=self.mean.shape))
        self.x_prev = x
        return x
    def reset(self):
        self.x_prev = self.x_initial if self.x_initial is not None else np.zeros_like(self.mean)


class Buffer:
    def __init__(self, buffer_capacity=1000, batch_size=16):
        self.buffer_capacity, self.batch_size, self.buffer_counter = buffer_capacity, batch_size, 0
        self.state_buffer = np.zeros((self.buffer_capacity, num_states))
        self.action_buffer = np.zeros((self.buffer_capacity, num_actions))
        self.reward_buffer = np.zeros((self.buffer_capacity, 1))
        self.next_state_buffer = np.zeros((self.buffer_capacity, num_states))

    def record(self, obs_tuple):
        index = self.buffer_counter % self.buffer_capacity
        self.state_buffer[index] = obs_tuple[0]
        self.action_buffer[index] = obs_tuple[1]
        self.reward_buffer[index] = obs_tuple[2]
        self.next_state_buffer[index] = obs_tuple[3]
        self.buffer_counter += 1

    def update(self, state_batch, action_batch, reward_batch, next_state_batch):
        with tf.GradientTape() as tape:
            target_actions = target_actor(next_state_batch, training=True)
            y = reward_batch + gamma * target_critic([next_state_batch, target_actions], training=True)
            critic_value = critic_model([state_batch, action_batch], training=True)
            critic_loss = keras.ops.mean(keras.ops.square(y - critic_value))
        critic_grad = tape.gradient(critic_loss, critic_model.trainable_variables)
        critic_optimizer.apply_gradients(zip(critic_grad, critic_model.trainable_variables))
        with tf.GradientTape() as tape:
            actions = actor_model(state_batch, training=True)
            critic_value = critic_model([state_batch, actions], training=True)
            actor_loss = -keras.ops.mean(critic_value)
        actor_grad = tape.gradient(actor_loss, actor_model.trainable_variables)
        actor_optimizer.apply_gradients(zip(actor_grad, actor_model.trainable_variables))

    def learn(self):
        record_range = min(self.buffer_counter, self.buffer_capacity)
        batch_indices = np.random.choice(record_range, self.batch_size)
        state_batch = keras.ops.convert_to_tensor(self.state_buffer[batch_indices])
        action_batch = keras.ops.convert_to_tensor(self.action_buffer[batch_indices])
        reward_batch = keras.ops.convert_to_tensor(self.reward_buffer[batch_indices])
        reward_batch = keras.ops.cast(reward_batch, dtype="float32")
        next_state_batch = keras.ops.convert_to_tensor(self.next_state_buffer[batch_indices])
        self.update(state_batch, action_batch, reward_batch, next_state_batch)


def update_target(target_weights, weights, tau):
    for (a, b) in zip(target_weights, weights):
        a.assign(b * tau + a * (1 - tau))


def get_actor():
    last_init = keras.initializers.RandomUniform(minval=-0.003, maxval=0.003)
    inputs = layers.Input(shape=(num_states,))
    out = layers.Dense(32, activation="relu")(inputs)
    outputs = layers.Dense(1, activation="tanh", kernel_initializer=last_init)(out)
    return keras.Model(inputs, outputs * upper_bound)


def get_critic():
    state_input = layers.Input(shape=(num_states,))
    state_out = layers.Dense(16, activation="relu")(state_input)
    action_input = layers.Input(shape=(num_actions,))
    action_out = layers.Dense(16, activation="relu")(action_input)
    concat = layers.Concatenate()([state_out, action_out])
    outputs = layers.Dense(1)(layers.Dense(32, activation="relu")(concat))
    return keras.Model([state_input, action_input], outputs)


def policy(state, noise_object):
    sampled_actions = keras.ops.squeeze(actor_model(state))
    noise = noise_object()
    sampled_actions = sampled_actions.numpy() + noise
    legal_action = np.clip(sampled_actions, lower_bound, upper_bound)
    return [np.squeeze(legal_action)]


ou_noise = OUActionNoise(mean=np.zeros(1), std_deviation=float(0.2) * np.ones(1))
actor_model, critic_model = get_actor(), get_critic()
target_actor, target_critic = get_actor(), get_critic()
target_actor.set_weights(actor_model.get_weights())
target_critic.set_weights(critic_model.get_weights())
critic_optimizer = keras.optimizers.Adam(0.002)
actor_optimizer = keras.optimizers.Adam(0.001)
total_episodes, gamma, tau = int(sys.argv[1]) if len(sys.argv) > 1 else 3, 0.99, 0.005
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 60
buffer = Buffer(1000, 16)
np.random.seed(0)
env = Pendulum(1)
for ep in range(total_episodes):
    prev_state = env.reset()
    episodic_reward = 0
    for t in range(steps):
        tf_prev_state = keras.ops.expand_dims(keras.ops.convert_to_tensor(prev_state), 0)
        action = policy(tf_prev_state, ou_noise)
        state, reward = env.step(action[0])
        buffer.record((prev_state, action[0], reward, state))
        episodic_reward += reward
        buffer.learn()
        update_target(target_actor.variables, actor_model.variables, tau)
        update_target(target_critic.variables, critic_model.variables, tau)
        prev_state = state
    print(f"Episode * {ep} * reward {episodic_reward:.6f} w {float(sum(np.sum(w) for w in target_actor.get_weights())):.6f}")
