"""Proximal policy optimization on cart-pole: the JANUS evaluation's PPO, in miniature.

The agent collects a rollout of ``ROLLOUT`` steps in a Python loop (lists appended in
place, finished episodes' returns recorded), computes generalized advantage estimates
with a Python loop over the rollout, and then makes ``EPOCHS`` passes over it in
shuffled minibatches (the last one of each pass smaller).  ``train_step`` optimizes the
clipped surrogate objective plus value loss and entropy bonus on one minibatch and
records the fraction of clipped ratios in ``self.clip_fractions`` for monitoring.
Shares the environment ``envs.CartPole`` with ``a3c.py``.
"""
import math

import numpy as np
import tensorflow as tf

import common
import data
import envs

ROLLOUT, EPOCHS, MINIBATCH = 250, 4, 64
GAMMA, LAMBDA, CLIP = 0.99, 0.95, 0.2
HIDDEN = 64


class ActorCritic(tf.keras.Model):
    def __init__(self, num_actions, hidden):
        super().__init__()
        self.policy = tf.keras.Sequential([
            tf.keras.layers.Dense(hidden, activation="tanh"),
            tf.keras.layers.Dense(hidden, activation="tanh"),
            tf.keras.layers.Dense(num_actions),
        ])
        self.value = tf.keras.Sequential([
            tf.keras.layers.Dense(hidden, activation="tanh"),
            tf.keras.layers.Dense(hidden, activation="tanh"),
            tf.keras.layers.Dense(1),
        ])

    def call(self, states):
        return self.policy(states), tf.squeeze(self.value(states), axis=1)


class Trainer(common.Trainer):
    def __init__(self, seed):
        tf.keras.utils.set_random_seed(seed)
        self.rng = np.random.default_rng(seed)
        self.env = envs.CartPole(seed)
        self.observation = self.env.reset()
        self.episode_return = 0.0
        self.episode_returns = []
        self.model = ActorCritic(envs.CartPole.num_actions, HIDDEN)
        self.model(tf.zeros([1, envs.CartPole.observation_size]))
        self.optimizer = tf.keras.optimizers.Adam(0.001)
        self.optimizer.build(self.model.trainable_variables)
        self.minibatches = None
        self.updates_left = 0
        self.clip_fractions = []

    def collect(self):
        """Run the policy for ROLLOUT steps; return states, actions, log-probs, advantages, returns."""
        states, actions, log_probs, rewards, values, dones = [], [], [], [], [], []
        for _ in range(ROLLOUT):
            logits, value = self.model(self.observation[None])
            probs = tf.nn.softmax(logits)[0].numpy().astype(np.float64)
            action = int(self.rng.choice(len(probs), p=probs / probs.sum()))
            states.append(self.observation)
            actions.append(action)
            log_probs.append(math.log(probs[action]))
            values.append(float(value[0]))
            self.observation, reward, done = self.env.step(action)
            rewards.append(reward)
            dones.append(done)
            self.episode_return += reward
            if done:
                self.episode_returns.append(self.episode_return)
                self.observation, self.episode_return = self.env.reset(), 0.0
        next_value = float(self.model(self.observation[None])[1][0])
        advantages = np.zeros(ROLLOUT, np.float32)
        gae = 0.0
        for t in reversed(range(ROLLOUT)):
            if dones[t]:
                next_value, gae = 0.0, 0.0
            delta = rewards[t] + GAMMA * next_value - values[t]
            gae = delta + GAMMA * LAMBDA * gae
            advantages[t] = gae
            next_value = values[t]
        returns = advantages + np.array(values, np.float32)
        return [np.stack(states), np.array(actions, np.int32), np.array(log_probs, np.float32), advantages, returns]

    def next_batch(self):
        if self.updates_left == 0:
            self.minibatches = data.Batches(self.collect(), MINIBATCH, self.rng)
            self.updates_left = EPOCHS * math.ceil(ROLLOUT / MINIBATCH)
        self.updates_left -= 1
        return tuple(tf.constant(column) for column in next(self.minibatches))

    def train_step(self, states, actions, old_log_probs, advantages, returns):
        advantages = (advantages - tf.reduce_mean(advantages)) / (tf.math.reduce_std(advantages) + 1e-8)
        with tf.GradientTape() as tape:
            logits, values = self.model(states)
            log_probs = tf.nn.log_softmax(logits)
            chosen = tf.reduce_sum(log_probs * tf.one_hot(actions, envs.CartPole.num_actions), axis=1)
            ratio = tf.exp(chosen - old_log_probs)
            clipped = tf.clip_by_value(ratio, 1 - CLIP, 1 + CLIP)
            policy_loss = -tf.reduce_mean(tf.minimum(ratio * advantages, clipped * advantages))
            value_loss = tf.reduce_mean(tf.square(returns - values))
            entropy = -tf.reduce_mean(tf.reduce_sum(tf.exp(log_probs) * log_probs, axis=1))
            loss = policy_loss + 0.5 * value_loss - 0.01 * entropy
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
        self.clip_fractions.append(tf.reduce_mean(tf.cast(tf.abs(ratio - 1) > CLIP, tf.float32)))
        return loss

    def metrics(self):
        return {"return": np.mean(self.episode_returns[-20:]), "clip_frac": np.mean(self.clip_fractions[-16:])}


def build(seed=0):
    return Trainer(seed)


def main(argv=None):
    return common.main(build, argv, doc=__doc__, steps=400, log_every=32)


if __name__ == "__main__":
    main()
