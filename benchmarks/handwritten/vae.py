"""VAE training step written by hand as one graph function.

The reparameterization noise is drawn eagerly, before the graph step, with the same
``tf.random.normal`` call eager makes (a graph would draw other numbers from the same
seed); the graph takes it as an input.  One graph for every batch size.
"""
import tensorflow as tf

import vae
from handwritten import HandTrainer, graph_step, spec


class Trainer(HandTrainer):
    def __init__(self, seed):
        super().__init__(vae.build(seed))
        b = self.base
        model, variables = b.model, b.model.trainable_variables

        @graph_step(spec([None, vae.SIZE, vae.SIZE, 1]), spec([None, vae.LATENT]))
        def step(x, eps):
            with tf.GradientTape() as tape:
                mean, logvar = model.encode(x)
                z = eps * tf.exp(logvar * .5) + mean
                cross_ent = tf.nn.sigmoid_cross_entropy_with_logits(logits=model.decode(z), labels=x)
                logpx_z = -tf.reduce_sum(cross_ent, axis=[1, 2, 3])
                logpz = vae.log_normal_pdf(z, 0., 0.)
                logqz_x = vae.log_normal_pdf(z, mean, logvar)
                loss = -tf.reduce_mean(logpx_z + logpz - logqz_x)
            b.optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
            return loss

        self._step = step

    def train_step(self, x):
        eps = tf.random.normal(shape=[x.shape[0], vae.LATENT])
        loss = self._step(x, eps)
        self.base.elbo.append(-loss)
        return loss


def build(seed=0):
    return Trainer(seed)
