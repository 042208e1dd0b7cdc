"""janus.allow (issue #28 item 4): a library's pure-TensorFlow Python converts like the user's.

The library is a package written at test time into a directory named ``site-packages``
(what ``janus_profiler.usercode`` counts as installed code, never the user's), put on
``sys.path``: before ``janus.allow`` a step calling it runs eagerly with the reason in
``janus.explain``; after it the step is a graph whose results and state match eager's.
Each test writes a package of its own name (allowances last for the process).
"""
import importlib
import itertools
import sys
import textwrap
import types

import numpy as np
import pytest
import tensorflow as tf

import janus
import keras
from janus.convert import libraries
from janus_profiler import usercode

from harness import check

HELPERS = """
import tensorflow as tf


def scaled_softplus(x, a):
    return tf.nn.softplus(x) * a


def soft_clip(x, limit):
    if tf.reduce_max(x) > limit:      # Python control flow on a tensor
        return tf.clip_by_value(x, -limit, limit)
    return x


class Scale:
    def __init__(self, factor):
        self.factor = factor

    def __call__(self, x):
        return x * self.factor
"""

SUB = """
import tensorflow as tf


def centered(x):
    return x - tf.reduce_mean(x)
"""

_names = itertools.count()


@pytest.fixture
def package(tmp_path, monkeypatch):
    """Write a fresh package ``<name>`` (helpers, sub.ops) under ``<tmp>/site-packages`` and
    return a function importing its modules."""
    name = f"jn_fake_lib_{next(_names)}"
    root = tmp_path / "site-packages"
    (root / name / "sub").mkdir(parents=True)
    (root / name / "__init__.py").write_text("")
    (root / name / "helpers.py").write_text(textwrap.dedent(HELPERS))
    (root / name / "sub" / "__init__.py").write_text("")
    (root / name / "sub" / "ops.py").write_text(textwrap.dedent(SUB))
    monkeypatch.syspath_prepend(str(root))
    importlib.invalidate_caches()

    def load(module: str = "") -> types.ModuleType:
        return importlib.import_module(f"{name}.{module}" if module else name)
    load.name = name
    yield load
    for m in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[m]


def _inputs():
    return [(tf.constant(np.linspace(-2, 2, 6, dtype=np.float32) * s),) for s in (1.0, 0.5, 2.0, 0.25, 3.0, 1.5)]


def test_the_fake_package_is_library_code(package):
    helpers = package("helpers")
    assert not usercode.is_user_file(helpers.__file__)
    assert not libraries.is_user_function(helpers.scaled_softplus)


def test_a_library_helper_runs_eagerly_until_allowed_then_as_a_graph(package):
    helpers = package("helpers")

    def make(jit):
        def step(x):
            return helpers.scaled_softplus(x, 2.0) + 1.0
        return types.SimpleNamespace(fn=jit(step))

    check(make, _inputs(), eager_only=True)
    step = janus.function(lambda x: helpers.scaled_softplus(x, 2.0))
    for (x,) in _inputs()[:4]:
        step(x)
    text = str(janus.explain(step))
    assert f"callee not allow-listed: {package.name}.helpers.scaled_softplus" in text, text
    assert f"janus.allow({package.name}.helpers) converts it" in text, text

    assert janus.allow(helpers.scaled_softplus) is helpers.scaled_softplus
    stats = check(make, _inputs(), graph_calls=3)
    assert stats["conversions"] == 1 and stats["fallbacks"] == 0, stats


def test_python_control_flow_on_a_tensor_in_an_allowed_helper(package):
    helpers = package("helpers")
    janus.allow(helpers.soft_clip)

    def make(jit):
        def step(x, limit):
            return helpers.soft_clip(x * 2.0, limit)
        return types.SimpleNamespace(fn=jit(step))

    calls = [(x, 1.5) for (x,) in _inputs()] + [(tf.constant([0.1, 0.2, 0.3]), 1.5)] * 3
    stats = check(make, calls, min_graph_calls=4)
    assert stats["conversions"] <= 3, (
        "the 3 profiled calls all clip: one conversion after them, one after the unclipped input (scale 0.25) "
        f"fails the speculated branch, one more at most when x's length changes: {stats}"
    )


def test_a_module_allowance_covers_its_functions_submodules_and_classes(package):
    top, helpers, ops = package(), package("helpers"), package("sub.ops")
    assert janus.allow(top) is top

    def make(jit):
        scale = helpers.Scale(0.5)

        def step(x):
            return ops.centered(helpers.scaled_softplus(scale(x), 3.0)) + helpers.Scale(2.0)(x)  # built in the step
        return types.SimpleNamespace(fn=jit(step), scale=scale, state=lambda: {"factor": scale.factor})

    # a library object's attribute the graph reads is guarded like the user's: changed, it is read again
    calls = _inputs()[:4] + [lambda p: _rescale(p, 2.0)] + _inputs()[:3]
    stats = check(make, calls, min_graph_calls=4)
    assert stats["conversions"] == 2, stats      # one per factor: the first graph's guard on it missed


def _rescale(p, factor):
    p.scale.factor = factor
    return p.fn(tf.constant([1.0, 2.0]))


def test_a_module_allowed_by_name_before_it_is_imported(package):
    janus.allow(f"{package.name}.sub")
    ops = package("sub.ops")

    def make(jit):
        return types.SimpleNamespace(fn=jit(lambda x: ops.centered(x) * 2.0))

    check(make, _inputs(), graph_calls=3)


def test_do_not_convert_wins_over_allow(package):
    top, helpers = package(), package("helpers")
    janus.allow(top)
    janus.do_not_convert(helpers.scaled_softplus)
    janus.allow(helpers.scaled_softplus)        # allowed after the mark: still never converted

    def make(jit):
        return types.SimpleNamespace(fn=jit(lambda x: helpers.scaled_softplus(x, 2.0)))

    check(make, _inputs(), eager_only=True)
    step = janus.function(lambda x: helpers.scaled_softplus(x, 2.0))
    for (x,) in _inputs()[:4]:
        step(x)
    assert "scaled_softplus, marked janus.do_not_convert" in str(janus.explain(step))


@pytest.mark.parametrize("bad, error, words", [
    (3, TypeError, "got int"),
    (len, TypeError, "got builtin_function_or_method"),
    ("not a module!", TypeError, "got 'not a module!'"),
    (None, TypeError, "got NoneType"),
    (tf, ValueError, "tensorflow is part of tensorflow, which Janus calls as it is"),
    ("keras.src.ops", ValueError, "part of keras"),
    ("numpy.linalg", ValueError, "part of numpy"),
    (keras.activations.relu, ValueError, "part of keras"),
    ("janus.lowering", ValueError, "part of janus"),
])
def test_a_bad_argument_is_one_clear_line(bad, error, words):
    with pytest.raises(error) as info:
        janus.allow(bad)
    message = str(info.value)
    assert "\n" not in message and message.startswith("janus.allow") and words in message, message


def test_the_default_set_converts_ecosystem_packages_and_keeps_keras_as_it_is():
    assert "tensorflow_probability" in libraries.CONVERTED_MODULE_ROOTS
    assert "tensorflow_text" in libraries.CONVERTED_MODULE_ROOTS
    assert libraries.is_allowed_module("tensorflow_probability.python.distributions")
    for as_is in ("keras", "keras_hub", "tensorflow"):
        assert as_is in libraries.ALLOWED_MODULE_ROOTS and not libraries.is_allowed_module(as_is)
    assert "allow" in janus.__all__
