"""Run from outside the checkout against a venv that holds the janus-tf wheel (not an editable
install): the package, its metadata and entry points are the wheel's, and a decorated step
runs as a graph with eager's results."""
import os
import subprocess
import sys
import sysconfig
from importlib import metadata

import numpy as np
import tensorflow as tf

import janus

site = os.path.realpath(sysconfig.get_paths()["purelib"])
for module in (janus, __import__("janus_profiler")):
    where = os.path.realpath(module.__file__)
    assert where.startswith(site + os.sep), f"{module.__name__} comes from {where}, not the wheel in {site}"

dist = metadata.distribution("janus-tf")
assert not (dist.read_text("direct_url.json") or "").count('"editable": true'), "an editable install"
assert dist.metadata["License-Expression"] == "Apache-2.0", dist.metadata["License-Expression"]
assert any(f.name == "LICENSE" for f in dist.files or ()), "LICENSE not in the wheel"
version = getattr(janus, "__version__", None)
assert version == dist.version, f"janus.__version__ is {version!r}, the distribution {dist.version!r}"

checkers = {ep.name: ep for ep in metadata.entry_points(group="janus_profiler.checkers")}
assert checkers["janus"].load().__module__ == "janus.convert.support", checkers
scripts = {ep.name: ep.value for ep in metadata.entry_points(group="console_scripts")}
assert scripts.get("janus-profile") == "janus_profiler.cli:main", scripts
cli = os.path.join(os.path.dirname(sys.executable), "janus-profile")
done = subprocess.run([cli, "--help"], capture_output=True, text=True, timeout=300)
assert done.returncode == 0 and "usage" in done.stdout.lower(), (done.returncode, done.stderr[-2000:])

from janus._requirements import require_tensorflow  # noqa: E402

assert require_tensorflow() is tf


class Model:
    def __init__(self):
        self.w = tf.Variable([[0.5], [-0.25]])
        self.losses = []

    def step(self, x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((x @ self.w - y) ** 2)
        self.w.assign_sub(0.1 * tape.gradient(loss, self.w))
        self.losses.append(loss)
        return loss


eager, graph = Model(), Model()
step = janus.function(graph.step)
rng = np.random.default_rng(0)
for i in range(8):
    x = tf.constant(rng.normal(size=(4, 2)), tf.float32)
    y = tf.constant(rng.normal(size=(4, 1)), tf.float32)
    want, got = eager.step(x, y), step(x, y)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
np.testing.assert_allclose(graph.w.numpy(), eager.w.numpy(), rtol=1e-5, atol=1e-6)
assert len(graph.losses) == len(eager.losses) == 8

stats = janus.stats(step)
assert stats["calls"] == 8 and stats["conversions"] >= 1 and stats["graph_calls"] >= 4, stats
print(f"wheel check: janus-tf {dist.version} from {site}: {stats['graph_calls']} of {stats['calls']} calls "
      "ran as a graph, with eager's results")
