"""Tree-LSTM training step written by hand for graphs: trees batched level by level.

As ``handwritten/treernn.py``: the batch's trees are flattened in Python (inside the
timed step); the graph computes the gates of all leaves at once, then of all inner
nodes of one height at once, carrying (h, c) for every node computed so far.
"""
import tensorflow as tf

import treelstm
from handwritten import HandTrainer, graph_step
from handwritten import trees as flat


class Trainer(HandTrainer):
    def __init__(self, seed):
        super().__init__(treelstm.build(seed))
        model, optimizer, loss_fn = self.base.model, self.base.optimizer, self.base.loss_fn
        variables = model.trainable_variables

        @graph_step(*flat.SIGNATURE)
        def step(words, left, right, offsets, roots, labels):
            with tf.GradientTape() as tape:
                i, o, u = tf.split(model.leaf_gates(model.embedding(words)), 3, axis=1)
                c = tf.sigmoid(i) * tf.tanh(u)
                h = tf.sigmoid(o) * tf.tanh(c)
                for level in range(flat.MAX_LEVELS):
                    lo, hi = offsets[level], offsets[level + 1]
                    l, r = left[lo:hi], right[lo:hi]
                    gates = model.node_gates(tf.concat([tf.gather(h, l), tf.gather(h, r)], axis=1))
                    i, f_left, f_right, o, u = tf.split(gates, 5, axis=1)
                    c_new = (tf.sigmoid(i) * tf.tanh(u) + tf.sigmoid(f_left) * tf.gather(c, l)
                             + tf.sigmoid(f_right) * tf.gather(c, r))
                    h_new = tf.sigmoid(o) * tf.tanh(c_new)
                    c = tf.concat([c, c_new], axis=0)
                    h = tf.concat([h, h_new], axis=0)
                loss = loss_fn(labels, model.classifier(tf.gather(h, roots)))
            optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
            return loss

        self._step = step

    def train_step(self, trees, labels):
        return self._step(*flat.flatten(trees), labels)


def build(seed=0):
    return Trainer(seed)
