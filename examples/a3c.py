"""An A3C-style actor-critic on cart-pole: the JANUS evaluation's A3C, in miniature.

Several actors, each with its own environment (``envs.CartPole``), take turns acting
with the shared model for up to ``T_MAX`` steps (a single-threaded stand-in for A3C's
asynchronous workers).  ``next_batch`` runs that rollout in a Python loop, appending to
lists, and computes the n-step returns with a Python loop; ``train_step`` updates the
policy and value heads with one tape over the rollout (its length varies, since
episodes end) and records the policy entropy in ``self.entropies`` for monitoring.
"""
import numpy as np
import tensorflow as tf

import common
import envs

WORKERS, T_MAX, GAMMA = 4, 20, 0.99
HIDDEN = 64


class ActorCritic(tf.keras.Model):
    def __init__(self, num_actions, hidden):
        super().__init__()
        self.hidden = tf.keras.layers.Dense(hidden, activation="relu")
        self.policy = tf.keras.layers.Dense(num_actions)
        self.value = tf.keras.layers.Dense(1)

    def call(self, states):
        x = self.hidden(states)
        return self.policy(x), tf.squeeze(self.value(x), axis=1)


class Worker:
    """An actor's environment, its current observation and the return of its running episode."""

    def __init__(self, seed):
        self.env = envs.CartPole(seed)
        self.observation = self.env.reset()
        self.episode_return = 0.0


class Trainer(common.Trainer):
    def __init__(self, seed):
        tf.keras.utils.set_random_seed(seed)
        self.rng = np.random.default_rng(seed)
        self.workers = [Worker(seed * WORKERS + i) for i in range(WORKERS)]
        self.turn = 0
        self.model = ActorCritic(envs.CartPole.num_actions, HIDDEN)
        self.model(tf.zeros([1, envs.CartPole.observation_size]))
        self.optimizer = tf.keras.optimizers.Adam(0.005)
        self.optimizer.build(self.model.trainable_variables)
        self.episode_returns = []
        self.entropies = []

    def act(self, observation):
        logits, _ = self.model(observation[None])
        probs = tf.nn.softmax(logits)[0].numpy().astype(np.float64)
        return int(self.rng.choice(len(probs), p=probs / probs.sum()))

    def next_batch(self):
        worker = self.workers[self.turn]
        self.turn = (self.turn + 1) % WORKERS
        states, actions, rewards = [], [], []
        done = False
        while not done and len(states) < T_MAX:
            action = self.act(worker.observation)
            states.append(worker.observation)
            actions.append(action)
            worker.observation, reward, done = worker.env.step(action)
            rewards.append(reward)
            worker.episode_return += reward
        if done:
            self.episode_returns.append(worker.episode_return)
            worker.observation, worker.episode_return = worker.env.reset(), 0.0
            ret = 0.0
        else:
            ret = float(self.model(worker.observation[None])[1][0])
        returns = []
        for reward in reversed(rewards):
            ret = reward + GAMMA * ret
            returns.append(ret)
        returns.reverse()
        return tf.constant(np.stack(states)), tf.constant(actions), tf.constant(returns, tf.float32)

    def train_step(self, states, actions, returns):
        with tf.GradientTape() as tape:
            logits, values = self.model(states)
            log_probs = tf.nn.log_softmax(logits)
            chosen = tf.reduce_sum(log_probs * tf.one_hot(actions, envs.CartPole.num_actions), axis=1)
            advantages = returns - values
            policy_loss = -tf.reduce_mean(chosen * tf.stop_gradient(advantages))
            value_loss = tf.reduce_mean(tf.square(advantages))
            entropy = -tf.reduce_mean(tf.reduce_sum(tf.exp(log_probs) * log_probs, axis=1))
            loss = policy_loss + 0.5 * value_loss - 0.01 * entropy
        grads = tape.gradient(loss, self.model.trainable_variables)
        grads, _ = tf.clip_by_global_norm(grads, 40.0)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
        self.entropies.append(entropy)
        return loss

    def metrics(self):
        return {"return": np.mean(self.episode_returns[-20:]), "entropy": np.mean(self.entropies[-20:])}


def build(seed=0):
    return Trainer(seed)


def main(argv=None):
    return common.main(build, argv, doc=__doc__, steps=300, log_every=30)


if __name__ == "__main__":
    main()
