"""pix2pix training step written by hand as one graph function (see ``__init__``).

The L1 distance is returned with the generator loss and appended to ``history`` by the caller.
"""
import tensorflow as tf

import pix2pix
from handwritten import HandTrainer, graph_step


class Trainer(HandTrainer):
    def __init__(self, seed):
        super().__init__(pix2pix.build(seed))
        b = self.base
        generator, discriminator, bce = b.generator, b.discriminator, b.bce
        g_vars, d_vars = generator.trainable_variables, discriminator.trainable_variables

        @graph_step()
        def step(inputs, targets):
            with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
                fake = generator(inputs)
                real_logits = discriminator(inputs, targets)
                fake_logits = discriminator(inputs, fake)
                l1 = tf.reduce_mean(tf.abs(targets - fake))
                g_loss = bce(tf.ones_like(fake_logits), fake_logits) + pix2pix.L1_WEIGHT * l1
                d_loss = bce(tf.ones_like(real_logits), real_logits) + bce(tf.zeros_like(fake_logits), fake_logits)
            g_grads = g_tape.gradient(g_loss, g_vars)
            d_grads = d_tape.gradient(d_loss, d_vars)
            b.g_optimizer.apply_gradients(zip(g_grads, g_vars))
            b.d_optimizer.apply_gradients(zip(d_grads, d_vars))
            return g_loss, l1

        self._step = step

    def train_step(self, inputs, targets):
        g_loss, l1 = self._step(inputs, targets)
        self.base.history.append(l1)
        return g_loss


def build(seed=0):
    return Trainer(seed)
