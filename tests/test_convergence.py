"""Convergence: every example trains the same eagerly and through Janus, step by step.

Each test builds the example's trainer twice from the same seed, one run eagerly (the
oracle) and one with ``common.maybe_janus`` (``train_step`` through ``janus.function``),
trains a few dozen steps, and checks

* the loss of every step (float tolerance: with oneDNN on, TensorFlow's graph rewrites
  of its kernels may round differently from eager in the last bit, ``docs/random.md``),
* the model weights and the trainer's Python-side lists (monitoring histories, episode
  returns) at the end,
* that Janus ran most steps as graphs (``graph_calls``); the tree models, whose every
  batch holds new trees, run all steps after the profiled ones with one graph.

Two ways of comparing, chosen per example:

* **free-running** (most examples): both runs go their own way for the whole horizon;
  losses agree to ~1e-7 relative over 30 steps (measured); 40 steps cross an epoch boundary in lenet and lm (short last batch, LM state reset), so rtol 1e-5 has margin.
* **synchronized per step** (``resnet``, ``inception``: deep nets with batch norm and SGD
  with momentum): graph round-off, ~1e-7 relative per step, is amplified chaotically by
  these nets (resnet: ~1e-4 relative after ~12 free-running steps, more later), so a
  free-running comparison would need a tolerance too loose to catch real bugs.  Instead,
  before every step the eager run's model and optimizer variables (weights, batch-norm
  moving averages, momenta, iteration count) are copied into the Janus trainer, both take
  the same batch, and that step's loss (rtol 1e-5) and updated variables (rtol 1e-5,
  atol 2e-6; measured differences <= 5e-7) are compared.  Copying values into the
  variables changes no Python state, so Janus keeps running its cached graph.

Timing is not tested here (see ``benchmarks/run_all.py``).  The whole file takes about
two to three minutes on 2 cores.
"""
import importlib
import os
import sys

import numpy as np
import pytest
import tensorflow as tf

import janus

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples"))
import common  # noqa: E402  (examples/common.py)

SEED = 0
LOSS_RTOL, LOSS_ATOL = 1e-5, 1e-6
VAR_RTOL, VAR_ATOL = 1e-5, 2e-6


def _build(name):
    module = importlib.import_module(name)
    eager = module.build(SEED)
    jan = common.maybe_janus(module.build(SEED), True)
    return eager, jan


def _models(trainer):
    return [getattr(trainer, a) for a in ("model", "generator", "discriminator") if hasattr(trainer, a)]


def _variables(trainer):
    """Model variables (trainable and not) of every model of the trainer, then its optimizers' variables."""
    out = []
    for model in _models(trainer):
        out += list(model.variables if hasattr(model, "variables") else model.trainable_variables)
    for attr in ("optimizer", "g_optimizer", "d_optimizer", "generator_optimizer", "discriminator_optimizer"):
        if hasattr(trainer, attr):
            out += list(getattr(trainer, attr).variables)
    return out


def _values(x):
    """Numbers of a history entry (tensor, float, tuple of them) as a flat float array."""
    return np.array([float(v) for v in tf.nest.flatten(x)], np.float64)


def _assert_python_lists_match(eager, jan):
    """The trainers' list attributes (histories, returns) have the same entries."""
    for attr, value in vars(eager).items():
        if not isinstance(value, list):
            continue
        other = getattr(jan, attr)
        assert len(other) == len(value), f"{attr}: {len(other)} entries through Janus, {len(value)} eagerly"
        for i, (a, b) in enumerate(zip(value, other)):
            if isinstance(a, (int, float, tuple)) or tf.is_tensor(a):
                np.testing.assert_allclose(_values(b), _values(a), rtol=LOSS_RTOL, atol=LOSS_ATOL,
                                           err_msg=f"{attr}[{i}]")


def _assert_losses_match(eager_losses, janus_losses):
    for i, (a, b) in enumerate(zip(eager_losses, janus_losses)):
        assert np.isclose(b, a, rtol=LOSS_RTOL, atol=LOSS_ATOL), \
            f"step {i + 1}: loss {b!r} through Janus, {a!r} eagerly (relative difference {abs(b - a) / abs(a):.1e})"


def _assert_mostly_graphs(jan, steps):
    stats = janus.stats(jan.train_step)
    assert stats["calls"] == steps
    assert stats["graph_calls"] >= 0.75 * steps, f"only {stats['graph_calls']} of {steps} steps ran as graphs: {stats}"


# --- free-running examples --------------------------------------------------------------------

FREE_RUNNING = {  # example: steps (fewer for the slow ones)
    "lenet": 40, "lstm": 40, "lm": 40, "a3c": 40, "ppo": 40, "gan": 40, "pix2pix": 30, "dcgan": 30, "vae": 40,
}


@pytest.mark.parametrize("name", list(FREE_RUNNING))
def test_free_running_matches_eager_and_runs_as_graphs(name):
    steps = FREE_RUNNING[name]
    eager, jan = _build(name)
    tf.random.set_seed(SEED)  # dcgan and vae draw noise in the step: both runs start from the same seed
    eager_losses = [eager.step() for _ in range(steps)]
    tf.random.set_seed(SEED)
    janus_losses = [jan.step() for _ in range(steps)]
    _assert_losses_match(eager_losses, janus_losses)
    for a, b in zip(_variables(eager), _variables(jan)):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-4, atol=1e-5, err_msg=a.path)
    _assert_python_lists_match(eager, jan)
    _assert_mostly_graphs(jan, steps)


# --- chaotic examples: synchronized per step ----------------------------------------------------

SYNCHRONIZED = {"resnet": 24, "inception": 20}


@pytest.mark.parametrize("name", list(SYNCHRONIZED))
def test_synchronized_step_matches_eager_and_runs_as_graphs(name):
    """Each step from the same state (see the module docstring for why these examples are not free-running)."""
    steps = SYNCHRONIZED[name]
    eager, jan = _build(name)
    eager_vars, janus_vars = _variables(eager), _variables(jan)
    assert [v.shape for v in eager_vars] == [v.shape for v in janus_vars]
    for i in range(steps):
        for a, b in zip(eager_vars, janus_vars):
            b.assign(a)
        eager_loss = float(eager.train_step(*eager.next_batch()))
        janus_loss = float(jan.train_step(*jan.next_batch()))
        assert np.isclose(janus_loss, eager_loss, rtol=LOSS_RTOL, atol=LOSS_ATOL), \
            f"step {i + 1}: loss {janus_loss!r} through Janus, {eager_loss!r} eagerly"
        for a, b in zip(eager_vars, janus_vars):
            np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=VAR_RTOL, atol=VAR_ATOL,
                                       err_msg=f"step {i + 1}: {a.path}")
    _assert_mostly_graphs(jan, steps)


# --- recursive tree models: one batched graph for every batch of new trees ---------------------

TREES = {"treernn": 16, "treelstm": 12}


@pytest.mark.parametrize("name", list(TREES))
def test_tree_model_matches_eager_as_one_batched_graph(name):
    """Recursive models over Python trees: every batch holds new trees, and one graph,
    which computes all trees of a batch level by level (``docs/recursion.md``), serves them
    all after the profiled calls."""
    steps = TREES[name]
    eager, jan = _build(name)
    eager_losses = [eager.step() for _ in range(steps)]
    janus_losses = [jan.step() for _ in range(steps)]
    _assert_losses_match(eager_losses, janus_losses)
    for a, b in zip(_variables(eager), _variables(jan)):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-4, atol=1e-5, err_msg=a.path)
    stats = janus.stats(jan.train_step)
    assert stats["calls"] == steps
    assert stats["conversions"] == 1 and stats["graph_calls"] == steps - 3, stats
