"""A word-level LSTM language model with state carried across batches: the JANUS evaluation's LM.

Mirrors the paper's Figure 1: a plain Python ``LanguageModel`` object reads its recurrent
state from ``self.state`` at the start of a batch, runs a hand-written LSTM cell in a
Python loop over the time steps, and writes the final state back to ``self.state`` for
the next batch (truncated backpropagation through time).  The state is reset when the
data starts over.  The text comes from a small grammar (``data.grammar_corpus``); the
last window of an epoch is shorter, so the loop's trip count changes now and then.
"""
import tensorflow as tf

import common
import data
from lstm import LSTMCell

BATCH, BPTT = 16, 20
EMBED, UNITS = 32, 64


class LanguageModel:
    def __init__(self, vocab, embed_dim, units, batch_size):
        self.embedding = tf.keras.layers.Embedding(vocab, embed_dim)
        self.cell = LSTMCell(units)
        self.decoder = tf.keras.layers.Dense(vocab)
        self.units = units
        self.batch_size = batch_size
        self.reset_state()

    def reset_state(self):
        self.state = (tf.zeros([self.batch_size, self.units]), tf.zeros([self.batch_size, self.units]))

    @property
    def trainable_variables(self):
        return self.embedding.trainable_variables + self.cell.trainable_variables + self.decoder.trainable_variables

    def __call__(self, tokens):
        inputs = self.embedding(tokens)
        state = self.state
        outputs = []
        for t in range(tokens.shape[1]):
            h, state = self.cell(inputs[:, t], state)
            outputs.append(h)
        self.state = state
        return self.decoder(tf.stack(outputs, axis=1))


class Trainer(common.Trainer):
    def __init__(self, seed):
        tf.keras.utils.set_random_seed(seed)
        self.batches = data.BPTTBatches(data.grammar_corpus(1500, seed=seed), BATCH, BPTT)
        self.model = LanguageModel(len(data.VOCAB), EMBED, UNITS, BATCH)
        self.model(tf.zeros([BATCH, 1], tf.int32))
        self.model.reset_state()
        self.optimizer = tf.keras.optimizers.Adam(0.005)
        self.optimizer.build(self.model.trainable_variables)
        self.loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def next_batch(self):
        if self.batches.new_epoch:
            self.model.reset_state()
        inputs, targets = next(self.batches)
        return tf.constant(inputs), tf.constant(targets)

    def train_step(self, inputs, targets):
        with tf.GradientTape() as tape:
            logits = self.model(inputs)
            loss = self.loss_fn(targets, logits)
        grads = tape.gradient(loss, self.model.trainable_variables)
        grads, _ = tf.clip_by_global_norm(grads, 5.0)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
        return loss


def build(seed=0):
    return Trainer(seed)


def main(argv=None):
    return common.main(build, argv, doc=__doc__, steps=150, log_every=15)


if __name__ == "__main__":
    main()
