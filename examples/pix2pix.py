"""Image-to-image translation with a conditional GAN: the JANUS evaluation's pix2pix, in miniature.

A U-Net generator (strided-convolution encoder, transposed-convolution decoder, skip
connections gathered in a Python list and consumed in reverse) and a PatchGAN
discriminator that scores patches of the (input, image) pair; the generator minimizes
adversarial loss plus 100 x L1 distance to the target, two Adam optimizers, two tapes,
as in TensorFlow's pix2pix tutorial.  The L1 distances are kept in ``self.history`` for
monitoring.  Paired data (``data.outline_fill_pairs``): a rectangle's outline in, the
filled rectangle coloured by its area out, 32x32.
"""
import numpy as np
import tensorflow as tf

import common
import data

SIZE, BATCH, L1_WEIGHT = 32, 16, 100.0


class Generator(tf.keras.Model):
    def __init__(self, widths=(16, 32, 64), out_channels=3):
        super().__init__()
        self.down_stack = [tf.keras.layers.Conv2D(w, 4, strides=2, padding="same", activation=tf.nn.leaky_relu)
                           for w in widths]
        self.up_stack = [tf.keras.layers.Conv2DTranspose(w, 4, strides=2, padding="same", activation="relu")
                         for w in reversed(widths[:-1])]
        self.last = tf.keras.layers.Conv2DTranspose(out_channels, 4, strides=2, padding="same", activation="tanh")

    def call(self, x):
        skips = []
        for down in self.down_stack:
            x = down(x)
            skips.append(x)
        for up, skip in zip(self.up_stack, reversed(skips[:-1])):
            x = tf.concat([up(x), skip], axis=-1)
        return self.last(x)


class Discriminator(tf.keras.Model):
    def __init__(self, widths=(16, 32)):
        super().__init__()
        self.convs = [tf.keras.layers.Conv2D(w, 4, strides=2, padding="same", activation=tf.nn.leaky_relu)
                      for w in widths]
        self.patch_logits = tf.keras.layers.Conv2D(1, 3, padding="same")

    def call(self, inputs, images):
        x = tf.concat([inputs, images], axis=-1)
        for conv in self.convs:
            x = conv(x)
        return self.patch_logits(x)


class Trainer(common.Trainer):
    def __init__(self, seed):
        tf.keras.utils.set_random_seed(seed)
        inputs, targets = data.outline_fill_pairs(500, SIZE, seed=seed)
        self.batches = data.Batches([inputs, targets], BATCH, np.random.default_rng(seed))
        self.generator = Generator()
        self.discriminator = Discriminator()
        dummy = tf.zeros([1, SIZE, SIZE, 1])
        self.discriminator(dummy, self.generator(dummy))
        self.g_optimizer = tf.keras.optimizers.Adam(0.002, beta_1=0.5)
        self.d_optimizer = tf.keras.optimizers.Adam(0.002, beta_1=0.5)
        self.g_optimizer.build(self.generator.trainable_variables)
        self.d_optimizer.build(self.discriminator.trainable_variables)
        self.bce = tf.keras.losses.BinaryCrossentropy(from_logits=True)
        self.history = []

    def next_batch(self):
        inputs, targets = next(self.batches)
        return tf.constant(inputs), tf.constant(targets)

    def train_step(self, inputs, targets):
        with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
            fake = self.generator(inputs)
            real_logits = self.discriminator(inputs, targets)
            fake_logits = self.discriminator(inputs, fake)
            l1 = tf.reduce_mean(tf.abs(targets - fake))
            g_loss = self.bce(tf.ones_like(fake_logits), fake_logits) + L1_WEIGHT * l1
            d_loss = self.bce(tf.ones_like(real_logits), real_logits) + self.bce(tf.zeros_like(fake_logits), fake_logits)
        g_grads = g_tape.gradient(g_loss, self.generator.trainable_variables)
        d_grads = d_tape.gradient(d_loss, self.discriminator.trainable_variables)
        self.g_optimizer.apply_gradients(zip(g_grads, self.generator.trainable_variables))
        self.d_optimizer.apply_gradients(zip(d_grads, self.discriminator.trainable_variables))
        self.history.append(l1)
        return g_loss

    def metrics(self):
        return {"l1": np.mean(self.history[-20:])}


def build(seed=0):
    return Trainer(seed)


def main(argv=None):
    return common.main(build, argv, doc=__doc__, steps=250, log_every=25)


if __name__ == "__main__":
    main()
