"""GAN training step written by hand as one graph function (see ``__init__``).

Both losses are returned; the caller appends them to ``history`` as the eager program does.
"""
import tensorflow as tf

import gan
from handwritten import HandTrainer, graph_step


class Trainer(HandTrainer):
    def __init__(self, seed):
        super().__init__(gan.build(seed))
        b = self.base
        generator, discriminator, bce = b.generator, b.discriminator, b.bce
        g_vars, d_vars = generator.trainable_variables, discriminator.trainable_variables

        @graph_step()
        def step(real, noise):
            with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
                fake = generator(noise)
                real_logits = discriminator(real)
                fake_logits = discriminator(fake)
                g_loss = bce(tf.ones_like(fake_logits), fake_logits)
                d_loss = bce(tf.ones_like(real_logits), real_logits) + bce(tf.zeros_like(fake_logits), fake_logits)
            g_grads = g_tape.gradient(g_loss, g_vars)
            d_grads = d_tape.gradient(d_loss, d_vars)
            b.g_optimizer.apply_gradients(zip(g_grads, g_vars))
            b.d_optimizer.apply_gradients(zip(d_grads, d_vars))
            return d_loss, g_loss

        self._step = step

    def train_step(self, real, noise):
        d_loss, g_loss = self._step(real, noise)
        self.base.history.append((d_loss, g_loss))
        return d_loss


def build(seed=0):
    return Trainer(seed)
