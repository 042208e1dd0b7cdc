"""TreeRNN training step written by hand for graphs: trees batched level by level (see ``__init__``).

Where the eager program recurses over each tree's Python nodes, the hand-written
version flattens the batch's trees (``trees.flatten``, in Python, inside the timed
step), embeds all leaves in one lookup, then for each height combines all nodes of that
height in one batched ``Dense`` (unrolled over ``trees.MAX_LEVELS`` heights; empty
heights cost a few no-op kernels).  Same weights, same loss; sums happen in another
order, so losses agree with eager up to float round-off.
"""
import tensorflow as tf

import treernn
from handwritten import HandTrainer, graph_step
from handwritten import trees as flat


class Trainer(HandTrainer):
    def __init__(self, seed):
        super().__init__(treernn.build(seed))
        model, optimizer, loss_fn = self.base.model, self.base.optimizer, self.base.loss_fn
        variables = model.trainable_variables

        @graph_step(*flat.SIGNATURE)
        def step(words, left, right, offsets, roots, labels):
            with tf.GradientTape() as tape:
                states = model.embedding(words)
                for h in range(flat.MAX_LEVELS):
                    lo, hi = offsets[h], offsets[h + 1]
                    children = tf.concat([tf.gather(states, left[lo:hi]), tf.gather(states, right[lo:hi])], axis=1)
                    states = tf.concat([states, model.combine(children)], axis=0)
                loss = loss_fn(labels, model.classifier(tf.gather(states, roots)))
            optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
            return loss

        self._step = step

    def train_step(self, trees, labels):
        return self._step(*flat.flatten(trees), labels)


def build(seed=0):
    return Trainer(seed)
