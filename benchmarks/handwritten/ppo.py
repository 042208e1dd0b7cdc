"""PPO training step written by hand as one graph function (see ``__init__``).

Minibatches vary in size (the last of each pass is smaller): batch dimension ``None``.
The clip fraction is returned with the loss and appended by the caller.
"""
import tensorflow as tf

import envs
import ppo
from handwritten import HandTrainer, graph_step


class Trainer(HandTrainer):
    def __init__(self, seed):
        super().__init__(ppo.build(seed))
        model, optimizer = self.base.model, self.base.optimizer
        variables = model.trainable_variables
        num_actions = envs.CartPole.num_actions

        @graph_step()
        def step(states, actions, old_log_probs, advantages, returns):
            advantages = (advantages - tf.reduce_mean(advantages)) / (tf.math.reduce_std(advantages) + 1e-8)
            with tf.GradientTape() as tape:
                logits, values = model(states)
                log_probs = tf.nn.log_softmax(logits)
                chosen = tf.reduce_sum(log_probs * tf.one_hot(actions, num_actions), axis=1)
                ratio = tf.exp(chosen - old_log_probs)
                clipped = tf.clip_by_value(ratio, 1 - ppo.CLIP, 1 + ppo.CLIP)
                policy_loss = -tf.reduce_mean(tf.minimum(ratio * advantages, clipped * advantages))
                value_loss = tf.reduce_mean(tf.square(returns - values))
                entropy = -tf.reduce_mean(tf.reduce_sum(tf.exp(log_probs) * log_probs, axis=1))
                loss = policy_loss + 0.5 * value_loss - 0.01 * entropy
            optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
            clip_fraction = tf.reduce_mean(tf.cast(tf.abs(ratio - 1) > ppo.CLIP, tf.float32))
            return loss, clip_fraction

        self._step = step

    def train_step(self, *batch):
        loss, clip_fraction = self._step(*batch)
        self.base.clip_fractions.append(clip_fraction)
        return loss


def build(seed=0):
    return Trainer(seed)
