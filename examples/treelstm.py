"""A binary Tree-LSTM over parse trees: the JANUS evaluation's Tree-LSTM (Tai et al. 2015), in miniature.

Same trees and labels as ``treernn.py``.  The recursive ``encode`` returns an
(h, c) pair: a leaf computes its gates from its word's embedding; an inner node computes
input, output and one forget gate per child from its children's hidden states and mixes
their memory cells.  The two branches of the base-case ``if`` define the gates
differently and meet again after it.
"""
import numpy as np
import tensorflow as tf

import common
import data

BATCH, DIM, UNITS = 4, 32, 32


class TreeLSTM:
    def __init__(self, vocab, dim, units, num_classes):
        self.embedding = tf.keras.layers.Embedding(vocab, dim)
        self.leaf_gates = tf.keras.layers.Dense(3 * units)
        self.node_gates = tf.keras.layers.Dense(5 * units)
        self.classifier = tf.keras.layers.Dense(num_classes)

    @property
    def trainable_variables(self):
        return (self.embedding.trainable_variables + self.leaf_gates.trainable_variables
                + self.node_gates.trainable_variables + self.classifier.trainable_variables)

    def encode(self, node):
        if node.is_leaf():
            x = self.embedding(tf.constant([node.word]))
            i, o, u = tf.split(self.leaf_gates(x), 3, axis=1)
            c = tf.sigmoid(i) * tf.tanh(u)
        else:
            h_left, c_left = self.encode(node.left)
            h_right, c_right = self.encode(node.right)
            gates = self.node_gates(tf.concat([h_left, h_right], axis=1))
            i, f_left, f_right, o, u = tf.split(gates, 5, axis=1)
            c = tf.sigmoid(i) * tf.tanh(u) + tf.sigmoid(f_left) * c_left + tf.sigmoid(f_right) * c_right
        h = tf.sigmoid(o) * tf.tanh(c)
        return h, c

    def __call__(self, tree):
        h, _ = self.encode(tree)
        return self.classifier(h)


class Trainer(common.Trainer):
    def __init__(self, seed):
        tf.keras.utils.set_random_seed(seed)
        trees, labels = data.sentiment_trees(302, seed=seed)
        self.batches = data.Batches([trees, labels], BATCH, np.random.default_rng(seed))
        self.test_trees, self.test_labels = data.sentiment_trees(100, seed=seed + 1)
        self.model = TreeLSTM(data.TREE_VOCAB, DIM, UNITS, 2)
        self.model(data.Node(left=data.Node(word=0), right=data.Node(word=1)))
        self.optimizer = tf.keras.optimizers.Adam(0.01)
        self.optimizer.build(self.model.trainable_variables)
        self.loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def next_batch(self):
        trees, labels = next(self.batches)
        return trees, tf.constant(labels)

    def train_step(self, trees, labels):
        with tf.GradientTape() as tape:
            logits = tf.concat([self.model(tree) for tree in trees], axis=0)
            loss = self.loss_fn(labels, logits)
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
        return loss

    def metrics(self):
        predictions = [np.argmax(self.model(tree)) for tree in self.test_trees]
        return {"test_acc": np.mean(np.array(predictions) == self.test_labels)}


def build(seed=0):
    return Trainer(seed)


def main(argv=None):
    return common.main(build, argv, doc=__doc__, steps=200, log_every=20)


if __name__ == "__main__":
    main()
