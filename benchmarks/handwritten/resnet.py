"""ResNet training step written by hand as one graph function (see ``__init__``).

The batch-norm ``training`` flag is a constant of the training graph (True), as in
graph-mode TF where training and evaluation are two graphs.
"""
import tensorflow as tf

import resnet
from handwritten import HandTrainer, graph_step


class Trainer(HandTrainer):
    def __init__(self, seed):
        super().__init__(resnet.build(seed))
        model, optimizer, loss_fn = self.base.model, self.base.optimizer, self.base.loss_fn
        variables = model.trainable_variables

        @graph_step()
        def step(images, labels):
            with tf.GradientTape() as tape:
                loss = loss_fn(labels, model(images, training=True))
            optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
            return loss

        self._step = step

    def train_step(self, images, labels):
        return self._step(images, labels)


def build(seed=0):
    return Trainer(seed)
