"""A recursive neural network over binary parse trees: the JANUS evaluation's TreeRNN, in miniature.

Trees are Python objects (``data.Node`` with ``left``, ``right``, ``word``) and the model
encodes them with a recursive Python method: a leaf is its word's embedding, an inner
node combines its children's vectors; the root vector is classified.  Each step trains
on a few trees, encoded one by one inside the tape.  The labels are planted
(``data.sentiment_trees``): positive when positive words outnumber negative ones.
"""
import numpy as np
import tensorflow as tf

import common
import data

BATCH, DIM = 4, 32


class TreeRNN:
    def __init__(self, vocab, dim, num_classes):
        self.embedding = tf.keras.layers.Embedding(vocab, dim)
        self.combine = tf.keras.layers.Dense(dim, activation="tanh")
        self.classifier = tf.keras.layers.Dense(num_classes)

    @property
    def trainable_variables(self):
        return self.embedding.trainable_variables + self.combine.trainable_variables + self.classifier.trainable_variables

    def encode(self, node):
        if node.is_leaf():
            return self.embedding(tf.constant([node.word]))
        left = self.encode(node.left)
        right = self.encode(node.right)
        return self.combine(tf.concat([left, right], axis=1))

    def __call__(self, tree):
        return self.classifier(self.encode(tree))


class Trainer(common.Trainer):
    def __init__(self, seed):
        tf.keras.utils.set_random_seed(seed)
        trees, labels = data.sentiment_trees(302, seed=seed)
        self.batches = data.Batches([trees, labels], BATCH, np.random.default_rng(seed))
        self.test_trees, self.test_labels = data.sentiment_trees(100, seed=seed + 1)
        self.model = TreeRNN(data.TREE_VOCAB, DIM, 2)
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
