"""Benchmark: programs with statements no graph can hold, eager vs Janus vs tf.function.

Each program mixes TensorFlow with Python that has no graph form, written as their
authors would (issue #28):

* ``numpy_statistic``: a training step with a NumPy statistic of a gradient between two tapes;
* ``environment``: an episode whose loop steps a Python environment inside the tape;
* ``gradient_ascent``: gradient ascent on an input image (DeepDream's loop), a loss helper
  appending to a list, the loss logged as a Python float at every step;
* ``shift_reduce``: a shift-reduce tree network (SPINN's parser) with a Python stack driven
  by the transitions' values, over sentences parsed as one of two trees;
* ``shift_reduce_new_trees``: the same parser, each sentence parsed as its own random tree;
* ``numpy_minibatch``: a training step fed NumPy minibatches ``x[i:i + 32]``;
* ``text_generation``: the text-generation tutorial's loop, a character model called one
  character at a time, each drawn by ``tf.random.categorical`` (eager's numbers, seeded);
* ``library_helper``: a training step calling pure-TensorFlow helpers of an installed
  package (written to a temporary ``site-packages`` here), allowed by ``janus.allow``;
* ``wgan_gp``: a Keras WGAN-GP whose ``train_step`` calls its ``gradient_penalty`` method
  on ``self`` (both decorated), two critic steps per generator step, seeded noise.

Janus splits ``numpy_statistic`` and ``gradient_ascent`` at their graph breaks and runs
the rest as graph segments; the other seven convert whole (``text_generation`` with its
draws keyed like eager's, ``environment`` with its step a Python island run inside the graph, ``shift_reduce`` one
graph per tree, its transitions specialized by value, ``shift_reduce_new_trees`` one graph
for every tree, its stack a list whose length the graph computes).  Each program is first run in each mode alone, ``--warmup`` calls
(profiling, conversion, the split, the segments' conversions and their eager-or-graph
trial) then ``--calls`` more, to compare its results and final state with eager's (Janus
must match; tf.function may not — it traces Python once) and to time Janus's warm-up.
Then each round builds it fresh in every mode, warms each up and times ``--calls`` calls
taking turns between the modes (the shared machine's load falls on all alike).
Reported: the median per call over rounds, Janus's and tf.function's speed over eager's
(median of the rounds' ratios), the seconds Janus's warm-up took beyond eager's, and the
speed of a second eager build timed in turns with eager's, in rounds of their own (``eager
again``): the noise that a program running as written shows.  The
environment is also written by hand as graphs with its step inside through
``tf.numpy_function``: the whole episode as one graph (``environment_in_one_graph``), and
only its loop (``environment_loop_in_a_graph``, the tape eager) — the ceilings for it.

    python benchmarks/graph_breaks.py [--rounds 3] [--warmup 60] [--calls 30] [--programs a,b]
"""
from __future__ import annotations

import argparse
import importlib
import os
import statistics
import sys
import tempfile
import textwrap
import time
import types

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import janus  # noqa: E402



# ------------------------------------------------------------------ the programs
def numpy_statistic(jit):
    init = tf.keras.initializers.GlorotUniform(seed=1)
    w1, w2 = tf.Variable(init([64, 256])), tf.Variable(init([256, 10]))
    history = []

    def step(x, y):
        with tf.GradientTape() as tape:
            logits = tf.nn.relu(x @ w1) @ w2
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(y, logits))
        g1, g2 = tape.gradient(loss, [w1, w2])
        scale = float(np.percentile(np.abs(g1.numpy()), 99)) + 1e-3  # a NumPy statistic
        history.append(scale)
        with tf.GradientTape() as tape:
            reg = tf.reduce_sum(tf.square(w1)) * 1e-4 + tf.reduce_sum(tf.square(w2)) * 1e-4
        r1, r2 = tape.gradient(reg, [w1, w2])
        w1.assign_sub(0.01 * (g1 + r1) / scale)
        w2.assign_sub(0.01 * (g2 + r2) / scale)
        return loss

    r = np.random.RandomState(0)
    data = [(tf.constant(r.normal(size=(128, 64)).astype(np.float32)), tf.constant(r.randint(0, 10, 128)))
            for _ in range(4)]
    return jit(step), lambda i: data[i % 4], lambda: (w1, w2, history)


class _Env:
    """A cart-pole-like environment in NumPy (Python, not TensorFlow)."""

    def __init__(self):
        self.rng = np.random.RandomState(0)
        self.state = self.rng.uniform(-0.05, 0.05, 4).astype(np.float32)

    def step(self, action: int):
        x, v, th, om = (float(s) for s in self.state)
        force = 1.0 if action == 1 else -1.0
        om = om + 0.02 * (9.8 * np.sin(th) - force * np.cos(th))
        th, v = th + 0.02 * om, v + 0.02 * force
        x = x + 0.02 * v
        self.state = np.array([x, v, th, om], np.float32) + self.rng.normal(0, 0.01, 4).astype(np.float32)
        return self.state, 1.0 if abs(th) < 0.2 else 0.0


def environment(jit):
    init = tf.keras.initializers.GlorotUniform(seed=2)
    w1, w2, w3 = tf.Variable(init([4, 128])), tf.Variable(init([128, 128])), tf.Variable(init([128, 2]))
    env, returns = _Env(), []

    def episode(steps):
        state = tf.expand_dims(env.state, 0)
        with tf.GradientTape() as tape:
            total = tf.constant(0.0)
            for _ in range(steps):
                h = tf.nn.relu(tf.nn.relu(state @ w1) @ w2)
                logits = h @ w3
                probs = tf.nn.softmax(logits)
                action = int(tf.argmax(logits[0]))  # greedy: eager's choice, deterministic
                s, reward = env.step(action)  # the environment: Python
                state = tf.expand_dims(s, 0)
                total = total + tf.math.log(probs[0, action]) * reward
            loss = -total
        grads = tape.gradient(loss, [w1, w2, w3])
        for w, g in zip([w1, w2, w3], grads):
            w.assign_sub(0.001 * g)
        returns.append(float(loss))
        return loss

    return jit(episode), lambda i: (10,), lambda: (w1, w2, w3, returns, env.state)


class _HandWrittenEpisode:
    """The environment program's weights and environment, and its loop as graph code with the
    environment's step inside through ``tf.numpy_function`` (it runs in Python while the
    graph runs): the pieces of the hand-written versions below."""

    def __init__(self):
        init = tf.keras.initializers.GlorotUniform(seed=2)
        self.weights = [tf.Variable(init([4, 128])), tf.Variable(init([128, 128])), tf.Variable(init([128, 2]))]
        self.env, self.returns = _Env(), []

    def _step(self, action):
        s, reward = self.env.step(int(action))
        return s, np.float32(reward)

    def rollout(self, state, steps):
        """The loop, traced into the caller's graph: the sum of the rewarded log-probabilities."""
        w1, w2, w3 = self.weights
        total = tf.constant(0.0)
        for _ in range(steps):
            h = tf.nn.relu(tf.nn.relu(state @ w1) @ w2)
            logits = h @ w3
            probs = tf.nn.softmax(logits)
            action = tf.argmax(logits[0])
            s, reward = tf.numpy_function(self._step, [action], [tf.float32, tf.float32], stateful=True)
            state = tf.reshape(s, [1, 4])
            total = total + tf.math.log(probs[0, action]) * reward
        return total

    def update(self, tape, loss):
        for w, g in zip(self.weights, tape.gradient(loss, self.weights)):
            w.assign_sub(0.001 * g)

    def built(self, episode):
        """The ``(fn, args_of, state)`` of a program running ``episode`` (it returns the loss)."""
        def call(steps):
            loss = episode(steps)
            self.returns.append(float(loss))
            return loss
        return call, lambda i: (10,), lambda: (*self.weights, self.returns, self.env.state)


def environment_in_one_graph(jit):
    """``environment`` written by hand as one graph: the whole episode, the tape, the gradient
    and the update in a ``tf.function``: what Janus builds, with its step a Python island
    (docs/costs.md), written without the island's copy and checks."""
    p = _HandWrittenEpisode()

    @tf.function(autograph=False)
    def episode(steps):
        state = tf.reshape(tf.numpy_function(lambda: p.env.state, [], tf.float32, stateful=True), [1, 4])
        with tf.GradientTape() as tape:
            loss = -p.rollout(state, steps)
        p.update(tape, loss)
        return loss

    return p.built(episode)


def environment_loop_in_a_graph(jit):
    """``environment`` with only its loop written by hand as a graph; the tape, its gradient
    and the update stay eager Python."""
    p = _HandWrittenEpisode()
    rollout = tf.function(p.rollout, autograph=False)

    def episode(steps):
        with tf.GradientTape() as tape:
            loss = -rollout(tf.expand_dims(p.env.state, 0), steps)
        p.update(tape, loss)
        return loss

    return p.built(episode)


def gradient_ascent(jit):
    tf.keras.utils.set_random_seed(3)
    layers = [tf.keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
              tf.keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
              tf.keras.layers.Conv2D(32, 3, padding="same", activation="relu")]
    img = tf.Variable(tf.random.stateless_uniform([1, 32, 32, 3], seed=[4, 5]))
    log = []

    def calc_loss(x):
        losses = []
        for layer in layers:
            x = layer(x)
            losses.append(tf.reduce_mean(x))
        return tf.reduce_sum(losses)

    def dream_step(step_size):
        with tf.GradientTape() as tape:
            tape.watch(img)
            loss = calc_loss(img)
        g = tape.gradient(loss, img)
        g = g / (tf.math.reduce_std(g) + 1e-8)
        img.assign(tf.clip_by_value(img + g * step_size, -1.0, 1.0))
        log.append("loss {:.4f}".format(loss.numpy()))  # logged as eager does
        return loss

    return jit(dream_step), lambda i: (0.01,), lambda: (img, log)


SHIFT, REDUCE = 0, 1


def _parser(jit, examples):
    """SPINN's shift-reduce parser over ``examples`` (words, transitions, target)."""
    init = tf.keras.initializers.GlorotUniform(seed=6)
    compose = tf.Variable(init([64, 32]))
    out = tf.Variable(init([32, 1]))

    def reduce(left, right):
        return tf.tanh(tf.concat([left, right], 1) @ compose)

    def step(words, transitions, target):
        with tf.GradientTape() as tape:
            buffer = tf.unstack(words)[::-1]
            stack = []
            for t in transitions:
                if int(t) == SHIFT:  # a Python int read from a tensor drives the stack
                    stack.append(tf.expand_dims(buffer.pop(), 0))
                else:
                    right, left = stack.pop(), stack.pop()
                    stack.append(reduce(left, right))
            loss = tf.reduce_sum(tf.square(stack[-1] @ out - target))
        grads = tape.gradient(loss, [compose, out])
        compose.assign_sub(0.01 * grads[0])
        out.assign_sub(0.01 * grads[1])
        return loss

    return jit(step), lambda i: examples[i % len(examples)], lambda: (compose, out)


def _random_tree(r: np.random.RandomState, n: int) -> list[int]:
    """The transitions of a random binary tree over ``n`` words."""
    seq, depth, shifted = [], 0, 0
    while shifted < n or depth > 1:
        if shifted < n and (depth < 2 or r.rand() < 0.5):
            seq, shifted, depth = seq + [SHIFT], shifted + 1, depth + 1
        else:
            seq, depth = seq + [REDUCE], depth - 1
    return seq


def shift_reduce(jit):
    """The parser over sentences of 6 words parsed as one of two trees (left- and
    right-leaning): Janus specializes on each tree's transitions."""
    r = np.random.RandomState(7)
    trees = [[SHIFT, SHIFT] + [REDUCE, SHIFT] * 4 + [REDUCE], [SHIFT] * 6 + [REDUCE] * 5]
    return _parser(jit, [(tf.constant(r.normal(size=(6, 32)).astype(np.float32)), tf.constant(trees[i % 2]),
                          tf.constant([[0.5]])) for i in range(4)])


def shift_reduce_new_trees(jit):
    """The parser over sentences of 8 words, each parsed as its own random tree (as in a
    treebank): the transitions differ at every call."""
    r = np.random.RandomState(8)
    return _parser(jit, [(tf.constant(r.normal(size=(8, 32)).astype(np.float32)), tf.constant(_random_tree(r, 8)),
                          tf.constant([[0.5]])) for _ in range(400)])


def numpy_minibatch(jit):
    init = tf.keras.initializers.GlorotUniform(seed=8)
    w1, w2 = tf.Variable(init([32, 64])), tf.Variable(init([64, 1]))
    r = np.random.RandomState(0)
    x = r.normal(size=(1024, 32)).astype(np.float32)
    y = (x[:, :1] * 0.5).astype(np.float32)

    def step(xb, yb):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.nn.relu(xb @ w1) @ w2 - yb))
        g1, g2 = tape.gradient(loss, [w1, w2])
        w1.assign_sub(0.01 * g1)
        w2.assign_sub(0.01 * g2)
        return loss

    return jit(step), lambda i: (x[(i * 32) % 1024:(i * 32) % 1024 + 32], y[(i * 32) % 1024:(i * 32) % 1024 + 32]), \
        lambda: (w1, w2)


def text_generation(jit):
    tf.keras.utils.set_random_seed(9)
    vocab, units = 40, 128
    embedding = tf.keras.layers.Embedding(vocab, 32)
    gru = tf.keras.layers.GRU(units, return_sequences=True, return_state=True)
    dense = tf.keras.layers.Dense(vocab)
    generated = []

    def generate(first, temperature):
        ids, states = tf.reshape(first, [1, 1]), tf.zeros([1, units])
        chars = []
        for _ in range(12):
            x = embedding(ids)
            x, states = gru(x, initial_state=states)
            logits = dense(x)[:, -1, :] / temperature
            ids = tf.random.categorical(logits, num_samples=1)  # eager's draws, in the graph
            chars.append(int(ids[0, 0]))
        generated.append(chars)
        return states

    tf.random.set_seed(10)  # every mode draws the same characters
    firsts = [tf.constant(i, tf.int64) for i in range(vocab)]
    return jit(generate), lambda i: (firsts[i % vocab], 1.0), \
        lambda: ([w.numpy() for w in embedding.weights + gru.weights + dense.weights], generated)


_HELPERS = """
import tensorflow as tf


def smooth_l1(pred, target, delta=1.0):
    diff = tf.abs(pred - target)
    return tf.reduce_mean(tf.where(diff < delta, 0.5 * diff * diff / delta, diff - 0.5 * delta))


def clip_by_global_norm(grads, limit):
    norm = tf.linalg.global_norm(grads)
    if norm > limit:  # Python control flow on a tensor, as library code has
        return [g * (limit / norm) for g in grads]
    return grads
"""


def _installed_helpers() -> types.ModuleType:
    """A package of pure-TensorFlow helpers, installed into a temporary ``site-packages``
    (Janus counts it as library code, not the user's)."""
    name = "jn_bench_helpers"
    if name not in sys.modules:
        root = os.path.join(tempfile.mkdtemp(), "site-packages")
        os.makedirs(os.path.join(root, name))
        with open(os.path.join(root, name, "__init__.py"), "w") as f:
            f.write(textwrap.dedent(_HELPERS))
        sys.path.insert(0, root)
        importlib.invalidate_caches()
    return importlib.import_module(name)


def library_helper(jit):
    helpers = _installed_helpers()
    if jit is janus.function:
        janus.allow(helpers)  # the user's one line: convert the package as user code
    init = tf.keras.initializers.GlorotUniform(seed=11)
    w1, w2 = tf.Variable(init([32, 64])), tf.Variable(init([64, 4]))
    r = np.random.RandomState(12)
    data = [(tf.constant(r.normal(size=(64, 32)).astype(np.float32)), tf.constant(r.normal(size=(64, 4)).astype(np.float32)))
            for _ in range(4)]

    def step(x, y):
        with tf.GradientTape() as tape:
            loss = helpers.smooth_l1(tf.nn.relu(x @ w1) @ w2, y)
        grads = helpers.clip_by_global_norm(tape.gradient(loss, [w1, w2]), 1.0)
        w1.assign_sub(0.05 * grads[0])
        w2.assign_sub(0.05 * grads[1])
        return loss

    return jit(step), lambda i: data[i % 4], lambda: (w1, w2)


def wgan_gp(jit):
    keras = tf.keras
    keras.utils.set_random_seed(13)  # every mode draws the same noise (tf.function: its own)

    class WGAN(keras.Model):
        def __init__(self):
            super().__init__()
            self.critic = keras.Sequential([keras.Input((32,)), keras.layers.Dense(64, activation="relu"),
                                            keras.layers.Dense(64, activation="relu"), keras.layers.Dense(1)])
            self.gen = keras.Sequential([keras.Input((16,)), keras.layers.Dense(64, activation="relu"),
                                         keras.layers.Dense(32)])
            self.c_opt, self.g_opt = keras.optimizers.Adam(1e-3), keras.optimizers.Adam(1e-3)

        @jit
        def gradient_penalty(self, batch_size, real, fake):
            alpha = tf.random.uniform([batch_size, 1], 0.0, 1.0)
            interpolated = real + alpha * (fake - real)
            with tf.GradientTape() as gp_tape:
                gp_tape.watch(interpolated)
                pred = self.critic(interpolated, training=True)
            grads = gp_tape.gradient(pred, [interpolated])[0]
            norm = tf.sqrt(tf.reduce_sum(tf.square(grads), axis=[1]))
            return tf.reduce_mean((norm - 1.0) ** 2)

        @jit
        def train_step(self, real):
            batch_size = tf.shape(real)[0]
            for _ in range(2):  # critic steps per generator step
                with tf.GradientTape() as tape:
                    fake = self.gen(tf.random.normal([batch_size, 16]), training=True)
                    cost = tf.reduce_mean(self.critic(fake, training=True)) - \
                        tf.reduce_mean(self.critic(real, training=True))
                    c_loss = cost + self.gradient_penalty(batch_size, real, fake) * 10.0
                grads = tape.gradient(c_loss, self.critic.trainable_variables)
                self.c_opt.apply_gradients(zip(grads, self.critic.trainable_variables))
            with tf.GradientTape() as tape:
                g_loss = -tf.reduce_mean(self.critic(self.gen(tf.random.normal([batch_size, 16]), training=True)))
            grads = tape.gradient(g_loss, self.gen.trainable_variables)
            self.g_opt.apply_gradients(zip(grads, self.gen.trainable_variables))
            return {"c_loss": c_loss, "g_loss": g_loss}

    model = WGAN()
    r = np.random.RandomState(14)
    data = [tf.constant(r.normal(size=(64, 32)).astype(np.float32)) for _ in range(4)]
    return model.train_step, lambda i: (data[i % 4],), lambda: [w.numpy() for w in model.weights]


PROGRAMS = {f.__name__: f for f in (numpy_statistic, environment, gradient_ascent, shift_reduce,
                                     shift_reduce_new_trees, numpy_minibatch,
                                     text_generation, library_helper, wgan_gp)}
MODES = {"eager": lambda f: f, "janus": janus.function, "tf.function": tf.function}
# A second eager build, timed in turn with eager's in rounds of their own: its speed over
# eager's is the noise a program that runs as written shows (the "eager again" column).
AGAIN = "eager again"
# Programs also written by hand as graphs holding their Python (the "hand-written" modes).
HANDWRITTEN = {"environment": {"one graph": environment_in_one_graph, "loop in a graph": environment_loop_in_a_graph}}


def builder(name: str, mode: str):
    """``(fn, args_of, state)`` of program ``name`` built fresh in ``mode`` (an entry of
    ``MODES``, or a hand-written version's name)."""
    if mode in MODES or mode == AGAIN:
        return PROGRAMS[name](MODES.get(mode, MODES["eager"]))
    return HANDWRITTEN[name][mode](None)


# ------------------------------------------------------------------ timing
def _leaves(x):
    if isinstance(x, tf.Tensor) and not hasattr(x, "numpy"):
        return [x]  # a graph's tensor tf.function left in Python state: equal to nothing eager has
    if isinstance(x, (tf.Tensor, tf.Variable, np.ndarray)):
        return [np.asarray(x)]
    if isinstance(x, (list, tuple)):
        return [leaf for v in x for leaf in _leaves(v)]
    if isinstance(x, dict):
        return [leaf for k in sorted(x) for leaf in _leaves(x[k])]
    return [x]


def _agreement(a, b) -> str:
    """``yes``: the same results and state, bit for bit; ``to 3e-08``: equal up to that
    absolute difference (float rounding: a graph may add a gradient's terms in another
    order); ``no``: other numbers (tf.function's own random draws, say)."""
    la, lb = _leaves(a), _leaves(b)
    if len(la) != len(lb):
        return "no"
    diff = 0.0
    for x, y in zip(la, lb):
        if isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.dtype.kind == "f" and x.shape == y.shape \
                or type(x) is float and type(y) is float:
            x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
            if not np.allclose(x, y, rtol=1e-5, atol=1e-6):
                return "no"
            diff = max(diff, float(np.max(np.abs(x - y), initial=0.0)))
        elif isinstance(x, tf.Tensor) or isinstance(y, tf.Tensor) or \
                not (np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y):
            return "no"
    return "yes" if diff == 0.0 else f"to {diff:.0e}"


def run(name: str, mode: str, warmup: int, calls: int) -> types.SimpleNamespace:
    """Build program ``name`` fresh in ``mode``, run ``warmup + calls`` calls one after another:
    its results and final state (compared with eager's), stats and warm-up seconds."""
    janus.reset()
    try:
        fn, args_of, state = builder(name, mode)
        results, times = [], []
        for i in range(warmup + calls):
            start = time.perf_counter()
            results.append(fn(*args_of(i)))
            times.append(time.perf_counter() - start)
        stats = janus.stats(fn) if mode == "janus" else None
        return types.SimpleNamespace(warmup=sum(times[:warmup]), results=results, state=state(), stats=stats,
                                     error=None)
    except Exception as e:  # noqa: BLE001 - tf.function may fail on these programs: reported
        return types.SimpleNamespace(results=None, state=None, stats=None, error=f"{type(e).__name__}: "
                                                                                f"{_last_line(str(e))[:70]}")


def timed(name: str, modes: list[str], warmup: int, calls: int) -> dict[str, float]:
    """Median seconds per call of program ``name`` in each of ``modes``, built fresh, warmed up,
    then timed call by call in turn (eager's, Janus's, tf.function's, ...), so that the
    shared machine's load falls on every mode alike.  Their numbers are not compared:
    interleaved, the modes share TensorFlow's global random state."""
    janus.reset()
    built = {m: builder(name, m) for m in modes}
    for fn, args_of, _ in built.values():
        for i in range(warmup):
            fn(*args_of(i))
    times: dict[str, list] = {m: [] for m in modes}
    for i in range(warmup, warmup + calls):
        for m, (fn, args_of, _) in built.items():
            start = time.perf_counter()
            fn(*args_of(i))
            times[m].append(time.perf_counter() - start)
    return {m: statistics.median(t) for m, t in times.items()}


def _last_line(text: str) -> str:
    """The message of an error (tf.function's begin with the user code's traceback)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=60)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    args = parser.parse_args(argv)
    names = [p for p in args.programs.split(",") if p]
    unknown = [p for p in names if p not in PROGRAMS]
    if unknown:
        parser.error(f"unknown program {unknown[0]!r} (known: {', '.join(PROGRAMS)})")
    print("| program | eager ms/call | Janus ms/call | Janus speed-up | tf.function ms/call | tf.function speed-up "
          "| Janus = eager | tf.function = eager | hand-written graph | Janus: breaks, segment graph calls "
          "| Janus warm-up beyond eager's | eager again (noise) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in names:
        modes = list(MODES) + list(HANDWRITTEN.get(name, ()))
        checked = {m: run(name, m, args.warmup, args.calls) for m in modes}
        working = [m for m in modes if checked[m].error is None]
        rounds = [timed(name, working, args.warmup, args.calls) for _ in range(args.rounds)]
        # apart: a second eager program timed among the others slowed Janus's graphs (0.20 ->
        # 0.34 ms a call for shift_reduce), which it is there to measure, not to change
        noise = statistics.median(r["eager"] / r[AGAIN] for r in
                                  (timed(name, ["eager", AGAIN], args.warmup, args.calls) for _ in range(args.rounds)))
        eager = checked["eager"]
        cell = {}
        for mode in modes:
            if checked[mode].error is not None:
                cell[mode] = (f"fails ({checked[mode].error})", "-", "-")
                continue
            ms = statistics.median(r[mode] for r in rounds) * 1e3
            speed = statistics.median(r["eager"] / r[mode] for r in rounds)
            same = _agreement((eager.results, eager.state), (checked[mode].results, checked[mode].state))
            cell[mode] = (f"{ms:.2f}", f"{speed:.2f}x", same)
        s = checked["janus"].stats or {}
        extra = "-" if checked["janus"].error else f"{checked['janus'].warmup - eager.warmup:.2f} s"
        hand = "; ".join(f"{m}: {cell[m][0]} ms ({cell[m][1]}), = eager: {cell[m][2]}"
                         for m in HANDWRITTEN.get(name, ())) or "-"
        print(f"| {name} | {cell['eager'][0]} | {cell['janus'][0]} | {cell['janus'][1]} | {cell['tf.function'][0]} "
              f"| {cell['tf.function'][1]} | {cell['janus'][2]} | {cell['tf.function'][2]} | {hand} "
              f"| {s.get('breaks', 0)}, {s.get('segment_graph_calls', 0)} | {extra} | {noise:.2f}x |", flush=True)


if __name__ == "__main__":
    main()
