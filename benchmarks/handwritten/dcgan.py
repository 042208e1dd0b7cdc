"""DCGAN training step written by hand as one graph function.

The noise is drawn eagerly, before the graph step, with the tutorial's own
``tf.random.normal([BATCH_SIZE, NOISE_DIM])``: a graph would draw other numbers than
eager from the same seed, and a hand-written version must give eager's losses.
"""
import tensorflow as tf

import dcgan
from handwritten import HandTrainer, graph_step


class Trainer(HandTrainer):
    def __init__(self, seed):
        super().__init__(dcgan.build(seed))
        b = self.base
        generator, discriminator = b.generator, b.discriminator
        g_vars, d_vars = generator.trainable_variables, discriminator.trainable_variables

        @graph_step()
        def step(images, noise):
            with tf.GradientTape() as gen_tape, tf.GradientTape() as disc_tape:
                generated = generator(noise, training=True)
                real_output = discriminator(images, training=True)
                fake_output = discriminator(generated, training=True)
                gen_loss = b.generator_loss(fake_output)
                disc_loss = b.discriminator_loss(real_output, fake_output)
            b.generator_optimizer.apply_gradients(zip(gen_tape.gradient(gen_loss, g_vars), g_vars))
            b.discriminator_optimizer.apply_gradients(zip(disc_tape.gradient(disc_loss, d_vars), d_vars))
            return disc_loss, gen_loss

        self._step = step

    def train_step(self, images):
        noise = tf.random.normal([dcgan.BATCH_SIZE, dcgan.NOISE_DIM])
        disc_loss, gen_loss = self._step(images, noise)
        self.base.gen_losses.append(gen_loss)
        return disc_loss


def build(seed=0):
    return Trainer(seed)
