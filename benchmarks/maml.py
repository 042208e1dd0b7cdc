"""Benchmark: MAML on sine waves as the widely copied TF2 MAML notebook writes it, on
synthetic tasks: eager, Janus (``janus.function`` on the step), ``janus.enable()`` (the hook
on the plain step), and ``tf.function`` on the same step.

The program is the notebook's: a ``SineModel(keras.Model)`` of three Dense layers (40, 40, 1)
with a ``forward(x)`` method; per task ``copy_model`` builds a new ``SineModel`` in the step,
runs ``forward`` once to build it and copies the weights with
``set_weights(model.get_weights())``; an inner gradient step under a tape nested in the
outer tape; the copy's weights overridden functionally, layer by layer
(``w - lr_inner * g``); the copy's loss differentiated by the outer tape and applied to the
model by Adam.  Every step is a new task (new NumPy arrays, as the notebook's
``np_to_tensor(t.batch())``).

Keras 3: the notebook assigns ``model_copy.layers[j].kernel = ...``; in Keras 3 a Dense's
``kernel`` is a read-only property (over ``self._kernel``, for LoRA and quantization) and
that assignment raises ``AttributeError``.  The Keras-3 ports assign the attribute behind
it, ``layer._kernel = ...`` (``bias`` is still a plain attribute, assigned as written); that is
what this script does, since it keeps the notebook's structure (a model copy whose layers
compute with tensors that depend on the model's variables) rather than rewriting the step
as a functional forward with explicit weights, which would be a friendlier program.

Each mode runs the same tasks from the same seed (``keras.utils.set_random_seed(0)`` before
the model is made); per step (median of the last half), whole run (first call included),
and whether the outer losses and the final weights equal eager's.

    python benchmarks/maml.py [--steps 30]
"""
from __future__ import annotations

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import side_by_side  # noqa: E402  (benchmarks/side_by_side.py)

K = 10          # points per task (the notebook's K=10)
LR_INNER = 0.01


class SineModel(keras.Model):
    def __init__(self):
        super().__init__()
        self.hidden1 = keras.layers.Dense(40, input_shape=(1,))
        self.hidden2 = keras.layers.Dense(40)
        self.out = keras.layers.Dense(1)

    def forward(self, x):
        x = keras.activations.relu(self.hidden1(x))
        x = keras.activations.relu(self.hidden2(x))
        x = self.out(x)
        return x


def loss_function(pred_y, y):
    return keras.ops.mean(keras.losses.mean_squared_error(y, pred_y))


def np_to_tensor(list_of_numpy_objs):
    return (tf.convert_to_tensor(obj) for obj in list_of_numpy_objs)


def compute_loss(model, x, y, loss_fn=loss_function):
    logits = model.forward(x)
    mse = loss_fn(y, logits)
    return mse, logits


def copy_model(model, x):
    copied_model = SineModel()
    # If we don't run this step the weights are not "initialized"
    # and the gradients will not be computed.
    copied_model.forward(tf.convert_to_tensor(x))
    copied_model.set_weights(model.get_weights())
    return copied_model


def make_step(wrap):
    """The notebook's ``train_maml`` loop body (batch_size=1), as a step ``wrap`` wraps."""
    keras.utils.set_random_seed(0)
    model = SineModel()
    optimizer = keras.optimizers.Adam()

    def maml_step(batch):
        x, y = np_to_tensor(batch)
        model.forward(x)  # run forward pass to initialize weights
        with tf.GradientTape() as test_tape:
            # test_tape.watch(model.trainable_variables)
            with tf.GradientTape() as train_tape:
                train_loss, _ = compute_loss(model, x, y)
            model_copy = copy_model(model, x)
            gradients = train_tape.gradient(train_loss, model.trainable_variables)
            k = 0
            for j in range(len(model_copy.layers)):
                # Keras 3: ``kernel`` is a read-only property over ``_kernel`` (module docstring)
                model_copy.layers[j]._kernel = tf.subtract(model.layers[j].kernel,
                                                           tf.multiply(LR_INNER, gradients[k]))
                model_copy.layers[j].bias = tf.subtract(model.layers[j].bias,
                                                        tf.multiply(LR_INNER, gradients[k + 1]))
                k += 2
            test_loss, logits = compute_loss(model_copy, x, y)
        gradients = test_tape.gradient(test_loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        return test_loss

    return model, wrap(maml_step)


def tasks(steps: int):
    """The notebook's SinusoidGenerator: amplitude in [0.1, 5], phase in [0, pi], x in [-5, 5]."""
    rng = np.random.default_rng(1)
    for _ in range(steps):
        amplitude, phase = rng.uniform(0.1, 5.0), rng.uniform(0, np.pi)
        x = rng.uniform(-5, 5, (K, 1))
        yield x, amplitude * np.sin(x - phase)


def measure(name: str, wrap, steps: int) -> dict:
    with side_by_side.hooked(name):
        model, step = make_step(wrap)
        run = side_by_side.timed(name, step, tasks(steps), lambda batch: float(step(batch)))
    run["weights"] = [v.numpy() for v in model.trainable_variables]
    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    n = args.steps
    runs = [measure(name, wrap, n) for name, wrap in side_by_side.MODES]
    eager = runs[0]
    print(f"TF2 MAML notebook on sine tasks (K={K}, one task per step): {n} steps; median ms/step over the "
          f"second half")
    print(side_by_side.machine())
    print("| mode | ms/step (median, 2nd half) | vs eager | whole run s | losses = eager's | weights = eager's "
          "| note |")
    print("|---|---|---|---|---|---|---|")
    for r in runs:
        losses, eager_losses = r["results"], eager["results"]
        same = losses == eager_losses
        close = len(losses) == len(eager_losses) and np.allclose(losses, eager_losses, rtol=1e-5)
        shapes = [w.shape for w in r["weights"]] == [w.shape for w in eager["weights"]]
        bitwise = shapes and all(np.array_equal(a, b) for a, b in zip(r["weights"], eager["weights"]))
        wclose = shapes and all(np.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(r["weights"], eager["weights"]))
        print(f"| {r['name']} | {r['median_ms']:.1f} | {side_by_side.speed(r, eager):.2f}x | {r['total_s']:.1f} | "
              f"{'bitwise' if same else 'within 1e-5' if close else 'no'} ({len(losses)} steps) | "
              f"{'bitwise' if bitwise else 'within 1e-5' if wclose else 'no'} | {side_by_side.note(r)} |")
    side_by_side.print_explanations(runs)


if __name__ == "__main__":
    main()
