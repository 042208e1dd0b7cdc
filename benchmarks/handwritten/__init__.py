"""Hand-written graph versions of the examples, for the benchmark (``benchmarks/run_all.py``).

Each module ``<example>.py`` here has ``build(seed)`` returning a trainer with the
examples' protocol (``next_batch()``, ``train_step(*batch)``, ``step()``) whose
``train_step`` is what a TensorFlow programmer would write by hand in graph style:

* one ``tf.function`` training step with AutoGraph off -- there is no Python control
  flow on data left to convert.  Shapes are static where the data has few of them (the
  step is traced once per batch shape: the examples' epochs end with one short batch;
  static shapes measured about 25% faster than a ``None`` batch dimension on the LSTM
  step here); where they vary every step (A3C rollouts, flattened tree batches) an
  ``input_signature`` with ``None`` dimensions gives one graph;
* state passed explicitly: Python-side state the eager program keeps in attributes
  (the LM's recurrent state, monitoring histories) goes in as arguments and comes out
  as results; the caller keeps it.  Model weights and optimizer slots stay
  ``tf.Variable``s, the graph's own state, as in any TF2 graph program;
* the model, its initial weights, the optimizer and the data iterator are the example's
  own, built by the example's ``build(seed)``: the same seed gives the same weights
  and batches, so losses can be compared with eager step by step;
* the recursive tree models are rewritten for graphs: the trees of a batch are
  flattened (in Python, inside the timed step) into leaf words and, per tree level,
  the child indices of the inner nodes; the graph embeds all leaves at once and then
  combines all nodes of one level with one batched matmul, level by level (the
  Cavs / dynamic-batching idea), unrolled over the maximum tree height.
"""
import tensorflow as tf


class HandTrainer:
    """Wraps the example's trainer ``base``; subclasses set ``self._step`` and override ``train_step``."""

    def __init__(self, base):
        self.base = base

    def next_batch(self):
        return self.base.next_batch()

    def step(self) -> float:
        return float(self.train_step(*self.next_batch()))

    def metrics(self):
        return self.base.metrics()


def spec(shape, dtype=tf.float32):
    return tf.TensorSpec(shape, dtype)


def graph_step(*signature):
    """``tf.function`` with AutoGraph off (the step is written graph-style), with ``signature`` if given."""
    return tf.function(input_signature=list(signature) if signature else None, autograph=False)


class ClassifierTrainer(HandTrainer):
    """An image classifier's step (forward, loss, gradients, update) as one graph function.

    ``call_kwargs`` are passed to the model, e.g. ``training=True``: the batch-norm flag is
    a constant of the training graph, as in graph-mode TF where training and evaluation
    are two graphs.
    """

    def __init__(self, base, **call_kwargs):
        super().__init__(base)
        model, optimizer, loss_fn = base.model, base.optimizer, base.loss_fn
        variables = model.trainable_variables

        @graph_step()
        def step(images, labels):
            with tf.GradientTape() as tape:
                loss = loss_fn(labels, model(images, **call_kwargs))
            optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
            return loss

        self._step = step

    def train_step(self, images, labels):
        return self._step(images, labels)
