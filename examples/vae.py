"""A variational autoencoder, written as TensorFlow's CVAE tutorial writes it, on small binarized images.

A ``tf.keras.Model`` subclass with ``encode``, ``reparameterize`` (``eps =
tf.random.normal(shape=mean.shape)``) and ``decode``; the loss is the tutorial's
single-sample Monte Carlo estimate of the ELBO.  The noise is drawn inside the step;
with ``tf.random.set_seed`` eager's losses are reproducible and Janus keeps them bitwise
(``docs/random.md``).  The data are 8x8 Gaussian blobs thresholded to {0, 1}; the last
batch of every epoch is smaller, so ``mean.shape`` varies.
"""
import numpy as np
import tensorflow as tf

import common
import data

SIZE, LATENT, HIDDEN, BATCH = 8, 4, 64, 64


class CVAE(tf.keras.Model):
    def __init__(self, latent_dim):
        super().__init__()
        self.latent_dim = latent_dim
        self.encoder = tf.keras.Sequential([
            tf.keras.Input((SIZE, SIZE, 1)),
            tf.keras.layers.Flatten(),
            tf.keras.layers.Dense(HIDDEN, activation="relu"),
            tf.keras.layers.Dense(latent_dim + latent_dim),
        ])
        self.decoder = tf.keras.Sequential([
            tf.keras.Input((latent_dim,)),
            tf.keras.layers.Dense(HIDDEN, activation="relu"),
            tf.keras.layers.Dense(SIZE * SIZE),
            tf.keras.layers.Reshape((SIZE, SIZE, 1)),
        ])

    def encode(self, x):
        mean, logvar = tf.split(self.encoder(x), num_or_size_splits=2, axis=1)
        return mean, logvar

    def reparameterize(self, mean, logvar):
        eps = tf.random.normal(shape=mean.shape)
        return eps * tf.exp(logvar * .5) + mean

    def decode(self, z):
        return self.decoder(z)


def log_normal_pdf(sample, mean, logvar, raxis=1):
    log2pi = tf.math.log(2. * np.pi)
    return tf.reduce_sum(-.5 * ((sample - mean) ** 2. * tf.exp(-logvar) + logvar + log2pi), axis=raxis)


class Trainer(common.Trainer):
    def __init__(self, seed):
        tf.keras.utils.set_random_seed(seed)
        self.rng = np.random.default_rng(seed)
        images = (data.gaussian_blobs(1000, SIZE, seed=seed) > 0).astype(np.float32).reshape(-1, SIZE, SIZE, 1)
        self.batches = data.Batches([images], BATCH, self.rng)
        self.model = CVAE(LATENT)
        self.optimizer = tf.keras.optimizers.Adam(1e-3)
        self.optimizer.build(self.model.trainable_variables)
        self.elbo = []

    def next_batch(self):
        (x,) = next(self.batches)
        return (tf.constant(x),)

    def compute_loss(self, x):
        mean, logvar = self.model.encode(x)
        z = self.model.reparameterize(mean, logvar)
        x_logit = self.model.decode(z)
        cross_ent = tf.nn.sigmoid_cross_entropy_with_logits(logits=x_logit, labels=x)
        logpx_z = -tf.reduce_sum(cross_ent, axis=[1, 2, 3])
        logpz = log_normal_pdf(z, 0., 0.)
        logqz_x = log_normal_pdf(z, mean, logvar)
        return -tf.reduce_mean(logpx_z + logpz - logqz_x)

    def train_step(self, x):
        with tf.GradientTape() as tape:
            loss = self.compute_loss(x)
        gradients = tape.gradient(loss, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(gradients, self.model.trainable_variables))
        self.elbo.append(-loss)
        return loss

    def metrics(self):
        return {"elbo": float(np.mean(self.elbo[-20:]))}


def build(seed=0):
    return Trainer(seed)


def main(argv=None):
    return common.main(build, argv, doc=__doc__, steps=300, log_every=30)


if __name__ == "__main__":
    main()
