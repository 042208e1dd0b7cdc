"""An LSTM sequence classifier written by hand: the JANUS evaluation's LSTM, in miniature.

An ``LSTMCell`` layer with its own weights is applied in a Python ``for`` loop over the
time steps of a fixed-length sequence; the last hidden state is classified.  The
sequences are synthetic (``data.count_sequences``): the label says whether tokens from
the lower half of the vocabulary outnumber the others.
"""
import numpy as np
import tensorflow as tf

import common
import data

VOCAB, LENGTH, BATCH = 16, 20, 16
EMBED, UNITS = 16, 64


class LSTMCell(tf.keras.layers.Layer):
    def __init__(self, units):
        super().__init__()
        self.units = units

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1] + self.units, 4 * self.units), name="kernel")
        self.bias = self.add_weight(shape=(4 * self.units,), initializer="zeros", name="bias")

    def call(self, x, state):
        h, c = state
        gates = tf.matmul(tf.concat([x, h], axis=1), self.kernel) + self.bias
        i, f, g, o = tf.split(gates, 4, axis=1)
        c = tf.sigmoid(f + 1.0) * c + tf.sigmoid(i) * tf.tanh(g)
        h = tf.sigmoid(o) * tf.tanh(c)
        return h, (h, c)


class LSTMClassifier(tf.keras.Model):
    def __init__(self, vocab, embed_dim, units, num_classes):
        super().__init__()
        self.units = units
        self.embedding = tf.keras.layers.Embedding(vocab, embed_dim)
        self.cell = LSTMCell(units)
        self.classifier = tf.keras.layers.Dense(num_classes)

    def call(self, tokens):
        inputs = self.embedding(tokens)
        batch_size = tokens.shape[0]
        state = (tf.zeros([batch_size, self.units]), tf.zeros([batch_size, self.units]))
        for t in range(tokens.shape[1]):
            h, state = self.cell(inputs[:, t], state)
        return self.classifier(h)


class Trainer(common.Trainer):
    def __init__(self, seed):
        tf.keras.utils.set_random_seed(seed)
        tokens, labels = data.count_sequences(500, LENGTH, VOCAB, seed=seed)
        self.batches = data.Batches([tokens, labels], BATCH, np.random.default_rng(seed))
        self.test_tokens, self.test_labels = data.count_sequences(200, LENGTH, VOCAB, seed=seed + 1)
        self.model = LSTMClassifier(VOCAB, EMBED, UNITS, 2)
        self.model(tf.zeros([1, LENGTH], tf.int32))
        self.optimizer = tf.keras.optimizers.Adam(0.005)
        self.optimizer.build(self.model.trainable_variables)
        self.loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def next_batch(self):
        tokens, labels = next(self.batches)
        return tf.constant(tokens), tf.constant(labels)

    def train_step(self, tokens, labels):
        with tf.GradientTape() as tape:
            logits = self.model(tokens)
            loss = self.loss_fn(labels, logits)
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
        return loss

    def metrics(self):
        predictions = np.argmax(self.model(self.test_tokens), axis=1)
        return {"test_acc": np.mean(predictions == self.test_labels)}


def build(seed=0):
    return Trainer(seed)


def main(argv=None):
    return common.main(build, argv, doc=__doc__, steps=200, log_every=20)


if __name__ == "__main__":
    main()
