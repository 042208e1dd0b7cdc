"""A generative adversarial network on small synthetic images: the JANUS evaluation's AN, in miniature.

Goodfellow et al.'s adversarial nets with multilayer-perceptron generator and
discriminator, two models and two Adam optimizers, written like TensorFlow's GAN
tutorial: one ``train_step`` runs both networks under two tapes and updates both.  It
also mutates Python state for monitoring (``self.history.append``), as the paper's
GAN programs do.  The "real" images are 8x8 Gaussian blobs (``data.gaussian_blobs``);
the noise is drawn in ``next_batch`` so that a run is deterministic.
"""
import numpy as np
import tensorflow as tf

import common
import data

SIZE, NOISE, HIDDEN, BATCH = 8, 16, 128, 64


def mlp(hidden, outputs, activation, output_activation=None):
    return tf.keras.Sequential([
        tf.keras.layers.Dense(hidden, activation=activation),
        tf.keras.layers.Dense(hidden, activation=activation),
        tf.keras.layers.Dense(outputs, activation=output_activation),
    ])


class Trainer(common.Trainer):
    def __init__(self, seed):
        tf.keras.utils.set_random_seed(seed)
        self.rng = np.random.default_rng(seed)
        images = data.gaussian_blobs(1000, SIZE, seed=seed)
        self.batches = data.Batches([images], BATCH, self.rng)
        self.real_mean, self.real_std = images.mean(), images.std()
        self.eval_noise = np.random.default_rng(seed + 1).standard_normal((256, NOISE)).astype(np.float32)
        self.generator = mlp(HIDDEN, SIZE * SIZE, "relu", output_activation="tanh")
        self.discriminator = mlp(HIDDEN, 1, tf.nn.leaky_relu)
        self.discriminator(self.generator(tf.zeros([1, NOISE])))
        self.g_optimizer = tf.keras.optimizers.Adam(0.001, beta_1=0.5)
        self.d_optimizer = tf.keras.optimizers.Adam(0.001, beta_1=0.5)
        self.g_optimizer.build(self.generator.trainable_variables)
        self.d_optimizer.build(self.discriminator.trainable_variables)
        self.bce = tf.keras.losses.BinaryCrossentropy(from_logits=True)
        self.history = []

    def next_batch(self):
        (real,) = next(self.batches)
        noise = self.rng.standard_normal((len(real), NOISE)).astype(np.float32)
        return tf.constant(real), tf.constant(noise)

    def train_step(self, real, noise):
        with tf.GradientTape() as g_tape, tf.GradientTape() as d_tape:
            fake = self.generator(noise)
            real_logits = self.discriminator(real)
            fake_logits = self.discriminator(fake)
            g_loss = self.bce(tf.ones_like(fake_logits), fake_logits)
            d_loss = self.bce(tf.ones_like(real_logits), real_logits) + self.bce(tf.zeros_like(fake_logits), fake_logits)
        g_grads = g_tape.gradient(g_loss, self.generator.trainable_variables)
        d_grads = d_tape.gradient(d_loss, self.discriminator.trainable_variables)
        self.g_optimizer.apply_gradients(zip(g_grads, self.generator.trainable_variables))
        self.d_optimizer.apply_gradients(zip(d_grads, self.discriminator.trainable_variables))
        self.history.append((d_loss, g_loss))
        return d_loss

    def metrics(self):
        """Mean generator loss lately, and how far the generated images' brightness is from the real ones'."""
        fake = self.generator(self.eval_noise).numpy()
        return {"g_loss": np.mean([g for _, g in self.history[-20:]]),
                "mean_gap": abs(fake.mean() - self.real_mean), "std_gap": abs(fake.std() - self.real_std)}


def build(seed=0):
    return Trainer(seed)


def main(argv=None):
    return common.main(build, argv, doc=__doc__, steps=300, log_every=30)


if __name__ == "__main__":
    main()
