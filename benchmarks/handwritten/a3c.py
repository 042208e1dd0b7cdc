"""A3C training step written by hand as one graph function (see ``__init__``).

The rollout length varies (episodes end), so the batch dimension is ``None``.  The
policy entropy is returned with the loss and appended to ``entropies`` by the caller,
where the eager program appends it inside ``train_step``.
"""
import tensorflow as tf

import a3c
import envs
from handwritten import HandTrainer, graph_step, spec


class Trainer(HandTrainer):
    def __init__(self, seed):
        super().__init__(a3c.build(seed))
        model, optimizer = self.base.model, self.base.optimizer
        variables = model.trainable_variables
        num_actions = envs.CartPole.num_actions

        @graph_step(spec([None, envs.CartPole.observation_size]), spec([None], tf.int32), spec([None]))
        def step(states, actions, returns):
            with tf.GradientTape() as tape:
                logits, values = model(states)
                log_probs = tf.nn.log_softmax(logits)
                chosen = tf.reduce_sum(log_probs * tf.one_hot(actions, num_actions), axis=1)
                advantages = returns - values
                policy_loss = -tf.reduce_mean(chosen * tf.stop_gradient(advantages))
                value_loss = tf.reduce_mean(tf.square(advantages))
                entropy = -tf.reduce_mean(tf.reduce_sum(tf.exp(log_probs) * log_probs, axis=1))
                loss = policy_loss + 0.5 * value_loss - 0.01 * entropy
            grads, _ = tf.clip_by_global_norm(tape.gradient(loss, variables), 40.0)
            optimizer.apply_gradients(zip(grads, variables))
            return loss, entropy

        self._step = step

    def train_step(self, states, actions, returns):
        loss, entropy = self._step(states, actions, returns)
        self.base.entropies.append(entropy)
        return loss


def build(seed=0):
    return Trainer(seed)
