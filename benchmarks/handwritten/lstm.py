"""LSTM classifier training step written by hand as one graph function (see ``__init__``).

The time loop is unrolled at trace time (the sequence length is fixed), over the
cell's own weights: written out, not converted.
"""
import tensorflow as tf

import lstm
from handwritten import HandTrainer, graph_step


def cell_step(cell, x, h, c):
    """One step of ``lstm.LSTMCell`` written with its weights (same formula, same gate order)."""
    gates = tf.matmul(tf.concat([x, h], axis=1), cell.kernel) + cell.bias
    i, f, g, o = tf.split(gates, 4, axis=1)
    c = tf.sigmoid(f + 1.0) * c + tf.sigmoid(i) * tf.tanh(g)
    return tf.sigmoid(o) * tf.tanh(c), c


class Trainer(HandTrainer):
    def __init__(self, seed):
        super().__init__(lstm.build(seed))
        model, optimizer, loss_fn = self.base.model, self.base.optimizer, self.base.loss_fn
        variables = model.trainable_variables
        units = model.units

        @graph_step()
        def step(tokens, labels):
            with tf.GradientTape() as tape:
                inputs = model.embedding(tokens)
                h = c = tf.zeros([tokens.shape[0], units])
                for t in range(tokens.shape[1]):
                    h, c = cell_step(model.cell, inputs[:, t], h, c)
                loss = loss_fn(labels, model.classifier(h))
            optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
            return loss

        self._step = step

    def train_step(self, tokens, labels):
        return self._step(tokens, labels)


def build(seed=0):
    return Trainer(seed)
