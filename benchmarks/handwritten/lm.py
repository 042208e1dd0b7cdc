"""Language-model training step written by hand as one graph function (see ``__init__``).

The recurrent state is explicit: the step takes (h, c) and returns the final (h, c)
with the loss; this trainer keeps them between batches and resets them to zeros when
the data starts over (where the eager program resets ``model.state``).  The time loop
is unrolled at trace time; the window length varies only at the end of an epoch, so
there are two graphs (a ``tf.while_loop`` over a ``TensorArray``, one graph for all
lengths, measured about 1.5x slower per step here).
"""
import tensorflow as tf

import lm
from handwritten import HandTrainer, graph_step
from handwritten.lstm import cell_step


class Trainer(HandTrainer):
    def __init__(self, seed):
        super().__init__(lm.build(seed))
        model, optimizer, loss_fn = self.base.model, self.base.optimizer, self.base.loss_fn
        variables = model.trainable_variables
        self.units = model.units
        self.reset_state()

        @graph_step()
        def step(inputs, targets, h, c):
            with tf.GradientTape() as tape:
                embedded = model.embedding(inputs)
                outputs = []
                for t in range(inputs.shape[1]):
                    h, c = cell_step(model.cell, embedded[:, t], h, c)
                    outputs.append(h)
                loss = loss_fn(targets, model.decoder(tf.stack(outputs, axis=1)))
            grads, _ = tf.clip_by_global_norm(tape.gradient(loss, variables), 5.0)
            optimizer.apply_gradients(zip(grads, variables))
            return loss, h, c

        self._step = step

    def reset_state(self):
        self.h = tf.zeros([lm.BATCH, self.units])
        self.c = tf.zeros([lm.BATCH, self.units])

    def next_batch(self):
        if self.base.batches.new_epoch:
            self.reset_state()
        inputs, targets = next(self.base.batches)
        return tf.constant(inputs), tf.constant(targets)

    def train_step(self, inputs, targets):
        loss, self.h, self.c = self._step(inputs, targets, self.h, self.c)
        return loss


def build(seed=0):
    return Trainer(seed)
