"""A deep convolutional GAN, written as TensorFlow's DCGAN tutorial writes it, on small synthetic images.

Generator: Dense -> BatchNorm -> LeakyReLU -> Conv2DTranspose layers up to 8x8x1;
discriminator: Conv2D -> LeakyReLU -> Dropout -> Dense.  ``train_step`` draws its noise
inside the step, ``tf.random.normal([BATCH_SIZE, NOISE_DIM])``, and trains both networks
under two tapes, as the tutorial does.  With ``tf.random.set_seed`` the losses are
reproducible eagerly, and Janus keeps them bitwise: the graph draws from the seeds eager
would use (``docs/random.md``).  The "real" images are 8x8 Gaussian blobs.
"""
import numpy as np
import tensorflow as tf

import common
import data

SIZE, NOISE_DIM, BATCH_SIZE = 8, 16, 64


def make_generator_model():
    return tf.keras.Sequential([
        tf.keras.Input((NOISE_DIM,)),
        tf.keras.layers.Dense(4 * 4 * 32, use_bias=False),
        tf.keras.layers.BatchNormalization(),
        tf.keras.layers.LeakyReLU(),
        tf.keras.layers.Reshape((4, 4, 32)),
        tf.keras.layers.Conv2DTranspose(16, 5, strides=1, padding="same", use_bias=False),
        tf.keras.layers.BatchNormalization(),
        tf.keras.layers.LeakyReLU(),
        tf.keras.layers.Conv2DTranspose(1, 5, strides=2, padding="same", use_bias=False, activation="tanh"),
    ])


def make_discriminator_model():
    return tf.keras.Sequential([
        tf.keras.Input((SIZE, SIZE, 1)),
        tf.keras.layers.Conv2D(16, 5, strides=2, padding="same"),
        tf.keras.layers.LeakyReLU(),
        tf.keras.layers.Dropout(0.3),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(1),
    ])


class Trainer(common.Trainer):
    def __init__(self, seed):
        tf.keras.utils.set_random_seed(seed)  # also tf.random.set_seed: the step's noise is reproducible
        self.rng = np.random.default_rng(seed)
        images = data.gaussian_blobs(16 * BATCH_SIZE, SIZE, seed=seed).reshape(-1, SIZE, SIZE, 1)
        self.batches = data.Batches([images], BATCH_SIZE, self.rng)
        self.real_mean = images.mean()
        self.generator = make_generator_model()
        self.discriminator = make_discriminator_model()
        self.cross_entropy = tf.keras.losses.BinaryCrossentropy(from_logits=True)
        self.generator_optimizer = tf.keras.optimizers.Adam(1e-3, beta_1=0.5)
        self.discriminator_optimizer = tf.keras.optimizers.Adam(1e-3, beta_1=0.5)
        self.generator_optimizer.build(self.generator.trainable_variables)
        self.discriminator_optimizer.build(self.discriminator.trainable_variables)
        self.gen_losses = []

    def next_batch(self):
        (images,) = next(self.batches)
        return (tf.constant(images),)

    def discriminator_loss(self, real_output, fake_output):
        real_loss = self.cross_entropy(tf.ones_like(real_output), real_output)
        fake_loss = self.cross_entropy(tf.zeros_like(fake_output), fake_output)
        return real_loss + fake_loss

    def generator_loss(self, fake_output):
        return self.cross_entropy(tf.ones_like(fake_output), fake_output)

    def train_step(self, images):
        noise = tf.random.normal([BATCH_SIZE, NOISE_DIM])
        with tf.GradientTape() as gen_tape, tf.GradientTape() as disc_tape:
            generated_images = self.generator(noise, training=True)
            real_output = self.discriminator(images, training=True)
            fake_output = self.discriminator(generated_images, training=True)
            gen_loss = self.generator_loss(fake_output)
            disc_loss = self.discriminator_loss(real_output, fake_output)
        gradients_of_generator = gen_tape.gradient(gen_loss, self.generator.trainable_variables)
        gradients_of_discriminator = disc_tape.gradient(disc_loss, self.discriminator.trainable_variables)
        self.generator_optimizer.apply_gradients(zip(gradients_of_generator, self.generator.trainable_variables))
        self.discriminator_optimizer.apply_gradients(
            zip(gradients_of_discriminator, self.discriminator.trainable_variables))
        self.gen_losses.append(gen_loss)
        return disc_loss

    def metrics(self):
        """Mean generator loss lately, and how far generated brightness is from the real images'."""
        fake = self.generator(np.random.default_rng(1).standard_normal((256, NOISE_DIM)).astype(np.float32),
                              training=False).numpy()
        return {"g_loss": float(np.mean(self.gen_losses[-20:])), "mean_gap": abs(fake.mean() - self.real_mean)}


def build(seed=0):
    return Trainer(seed)


def main(argv=None):
    return common.main(build, argv, doc=__doc__, steps=300, log_every=30)


if __name__ == "__main__":
    main()
