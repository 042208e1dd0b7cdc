"""Random numbers in graphs: eager's exact numbers (tolerance 0) from fed seeds.

Every program runs its whole call sequence eagerly and through Janus after the same
``tf.random.set_seed`` (``harness.check_seeded``); some calls also draw eagerly between
steps, so graph calls and eager calls share one stream of op seeds.
"""
from types import SimpleNamespace

import numpy as np
import pytest
import tensorflow as tf

import janus
from harness import case, check_seeded


def rnd(shape, seed, scale=1.0):
    return tf.constant((np.random.RandomState(seed).randn(*shape) * scale).astype(np.float32))


def eager_draw(p):
    """Other code of the program draws eagerly between steps."""
    return tf.random.uniform([2])


def test_noise_and_dropout_gan_step_with_two_tapes():
    def make(jit):
        tf.keras.utils.set_random_seed(1)
        gen = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(4)])
        disc = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="relu"), tf.keras.layers.Dense(1)])
        gen.build((None, 3))
        disc.build((None, 4))
        g_opt, d_opt = tf.keras.optimizers.SGD(0.05), tf.keras.optimizers.SGD(0.05)
        g_opt.build(gen.trainable_variables)
        d_opt.build(disc.trainable_variables)
        history = []

        @jit
        def step(real):
            noise = tf.random.normal([tf.shape(real)[0], 3])
            with tf.GradientTape() as gt, tf.GradientTape() as dt:
                fake = gen(noise)
                real_logit = disc(tf.nn.dropout(real, 0.3))
                fake_logit = disc(tf.nn.dropout(fake, 0.3))
                g_loss = tf.reduce_mean(tf.nn.softplus(-fake_logit))
                d_loss = tf.reduce_mean(tf.nn.softplus(-real_logit)) + tf.reduce_mean(tf.nn.softplus(fake_logit))
            g_opt.apply_gradients(zip(gt.gradient(g_loss, gen.trainable_variables), gen.trainable_variables))
            d_opt.apply_gradients(zip(dt.gradient(d_loss, disc.trainable_variables), disc.trainable_variables))
            history.append(d_loss)
            return g_loss, d_loss

        return SimpleNamespace(fn=step, state=lambda: {
            "history": list(history), "gen": [v.numpy() for v in gen.variables],
            "disc": [v.numpy() for v in disc.variables]})

    calls = [(rnd((5, 4), i),) for i in range(10)]
    calls.insert(6, eager_draw)
    stats = check_seeded(make, calls, seed=11, min_graph_calls=6)
    assert stats["conversions"] == 1, f"every call has shape (5, 4): the graph built at call 4 serves them all: {stats}"


def test_random_ops_inside_a_tensor_branch_that_flips():
    @case
    def f(x):
        if tf.reduce_sum(x) > 0:
            y = x * tf.random.uniform(tf.shape(x))
        else:
            y = x + tf.random.normal(tf.shape(x)) + tf.random.normal([])
        return y + tf.random.truncated_normal([3], stddev=0.5)

    signs = [1, -1, 1, 1, -1, 1, -1, -1, 1, -1, 1, 1, -1]
    calls = [(rnd((3,), i) * 0 + s,) for i, s in enumerate(signs)]
    calls.insert(7, eager_draw)
    stats = check_seeded(f, calls, seed=3, min_graph_calls=6)
    assert stats["conversions"] <= 2, \
        f"x keeps its shape: one graph, and at most one rebuild should an assumption on the flipping branch fail: {stats}"


def test_random_ops_in_a_loop_with_a_data_dependent_trip_count():
    @case
    def f(x, n):
        total = tf.zeros([2])
        i = tf.constant(0)
        while i < n:
            total += tf.random.normal([2], mean=x)
            if tf.reduce_sum(total) > 1.0:
                total -= tf.random.uniform([2], -1, 1)
            i += 1
        return total

    trips = [3, 0, 5, 2, 9, 1, 4, 40, 7, 3]  # 40 draws twice as many seeds as the first graph reserved
    calls = [(tf.constant(float(i)), tf.constant(n)) for i, n in enumerate(trips)]
    calls.insert(5, eager_draw)
    stats = check_seeded(f, calls, seed=5, min_graph_calls=6)
    assert stats["conversions"] == 1, \
        f"n is a tensor and an overflow of the reserved seeds keeps the graph (it reserves more): one graph: {stats}"


def test_vae_step_reparameterization():
    def make(jit):
        tf.keras.utils.set_random_seed(2)
        enc = tf.keras.layers.Dense(4)
        dec = tf.keras.layers.Dense(6)
        enc.build((None, 6))
        dec.build((None, 2))
        opt = tf.keras.optimizers.Adam(0.01)
        variables = enc.trainable_variables + dec.trainable_variables
        opt.build(variables)

        @jit
        def step(x):
            with tf.GradientTape() as tape:
                mean, logvar = tf.split(enc(x), 2, axis=1)
                eps = tf.random.normal(shape=mean.shape)
                z = eps * tf.exp(logvar * 0.5) + mean
                recon = tf.reduce_mean(tf.square(dec(z) - x))
                kl = -0.5 * tf.reduce_mean(1 + logvar - tf.square(mean) - tf.exp(logvar))
                loss = recon + kl
            opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
            return loss

        return SimpleNamespace(fn=step, state=lambda: {"vars": [v.numpy() for v in variables]})

    calls = [(rnd((8, 6), i),) for i in range(9)]
    calls.insert(4, eager_draw)
    stats = check_seeded(make, calls, seed=21, min_graph_calls=5)
    assert stats["conversions"] == 1, f"every call has shape (8, 6): the graph built at call 4 serves them all: {stats}"


def test_dropout_with_noise_shape_and_rate_zero():
    @case
    def f(x):
        a = tf.nn.dropout(x, 0.5, noise_shape=[tf.shape(x)[0], 1])
        b = tf.nn.dropout(x, 0.0)  # eager still takes a seed here
        return a + b + tf.random.uniform([])

    calls = [(rnd((4, 3), i),) for i in range(8)]
    check_seeded(f, calls, seed=8, min_graph_calls=4)


def test_guard_misses_interleave_eager_and_graph_calls_in_one_stream():
    @case
    def f(x, scale):
        return x * scale + tf.random.normal(tf.shape(x))

    calls = []
    for i in range(12):
        # an int scale misses the graph's guards: those calls run eagerly, in the same stream
        calls.append((rnd((3,), i), 3 if i % 4 == 3 else 2.0))
        if i % 5 == 2:
            calls.append(eager_draw)
    check_seeded(f, calls, seed=13, min_graph_calls=5)


def test_reseeding_between_calls():
    @case
    def f(x):
        return x + tf.random.normal([3])

    def reseed(s):
        def call(p):
            tf.random.set_seed(s)
            return p.fn(rnd((3,), s))
        return call

    calls = [reseed(s) for s in (1, 2, 1, 3, 3, 4, 1, 2)]
    check_seeded(f, calls, seed=0, min_graph_calls=4)


def test_image_augmentations_shuffle_gamma_and_integer_draws():
    @case
    def augment(images, labels):
        images = tf.image.random_flip_left_right(images)
        images = tf.image.random_flip_up_down(images[0])[None]
        images = tf.image.random_brightness(images, 0.2)
        images = tf.image.random_contrast(images, 0.8, 1.2)
        images = tf.image.random_saturation(images, 0.5, 1.5)
        images = tf.image.random_hue(images, 0.1)
        crop = tf.image.random_crop(images, [1, 3, 3, 3])
        order = tf.random.shuffle(tf.range(4))
        g = tf.random.gamma([2], 2.0)
        k = tf.random.uniform([3], 0, 10, dtype=tf.int64)
        return crop, tf.gather(labels, order), g, k

    calls = [(tf.abs(rnd((2, 4, 4, 3), i)) % 1.0, tf.range(4) * i) for i in range(7)]
    check_seeded(augment, calls, seed=17, min_graph_calls=3)


def test_categorical_and_poisson_over_dtypes_and_shapes():
    """The v1 stateless kernels, seeded so that their scramble gives eager's key and counter."""
    @case
    def f(x, lam, n):
        outs = []
        for dtype in (tf.float16, tf.bfloat16, tf.float32, tf.float64):
            outs.append(tf.random.categorical(tf.cast(x, dtype), 5))
        outs.append(tf.random.categorical(x * 3.0, n, dtype=tf.int32))
        outs.append(tf.random.categorical(tf.math.log([[0.5, 0.5]]), 7))  # constant logits
        outs.append(tf.random.poisson([4], lam))
        outs.append(tf.random.poisson([2, 3], lam * 30.0, dtype=tf.int64))  # rates >= 10: rejection sampling
        outs.append(tf.random.poisson([], [0.5, 12.0]))  # a Python list: float64 rates, as eager converts it
        outs.append(tf.random.poisson([3], tf.cast(lam * 20.0, tf.int32), dtype=tf.float16))
        outs.append(tf.random.poisson(tf.shape(x), 4.0, dtype=tf.float64))
        return outs

    calls = [(rnd((1 + i % 3, 6), i), tf.abs(rnd((2,), 50 + i)), tf.constant(4 + i)) for i in range(8)]
    calls.insert(4, eager_draw)
    stats = check_seeded(f, calls, seed=31, min_graph_calls=4)
    assert stats["conversions"] <= 2, \
        f"x's batch of 1-3 rows varies: at most one retrace, with that dimension relaxed: {stats}"


def test_categorical_in_a_python_loop_a_tensor_loop_and_a_tensor_cond():
    @case
    def f(logits, n):
        picks = [tf.random.categorical(logits, 2) for _ in range(3)]
        total = tf.zeros([], tf.int64)
        i = tf.constant(0)
        while i < n:
            total += tf.reduce_sum(tf.random.categorical(logits + tf.cast(i, tf.float32), 3))
            i += 1
        if tf.reduce_sum(logits) > 0:
            extra = tf.random.categorical(logits * 2.0, 1)
        else:
            extra = tf.cast(tf.random.poisson([1, 1], 3.0), tf.int64)
        return picks, total, extra

    trips = [2, 0, 5, 1, 40, 3, 2, 6, 1]  # 40 draws overflow the reserved rows once
    calls = [(rnd((2, 4), i) + (1.0 if i % 3 else -1.0), tf.constant(n)) for i, n in enumerate(trips)]
    calls.insert(5, eager_draw)
    calls.insert(3, lambda p: tf.random.categorical([[0.0, 1.0]], 4))  # an eager categorical between calls
    stats = check_seeded(f, calls, seed=9, min_graph_calls=5)
    assert stats["conversions"] <= 2, \
        f"logits keep shape (2, 4), n is a tensor, a seeds overflow keeps the graph: one graph, and at most one rebuild should an assumption fail: {stats}"


def test_actor_critic_episode_samples_actions_with_categorical_under_a_tape():
    """The TF actor-critic tutorial's shape: each step's action is drawn from the policy's logits."""
    def make(jit):
        tf.keras.utils.set_random_seed(3)
        common = tf.keras.layers.Dense(16, activation="relu")
        actor, critic = tf.keras.layers.Dense(3), tf.keras.layers.Dense(1)
        for layer, width in ((common, 4), (actor, 16), (critic, 16)):
            layer.build((None, width))
        variables = common.trainable_variables + actor.trainable_variables + critic.trainable_variables
        opt = tf.keras.optimizers.Adam(0.01)
        opt.build(variables)
        actions = []

        def env_step(state, action):
            """A toy environment in TensorFlow ops."""
            state = tf.tanh(state + tf.cast(action, tf.float32) * 0.1 - 0.05)
            return state, tf.reduce_sum(state), tf.reduce_max(tf.abs(state)) > 0.9

        @jit
        def train_episode(state, max_steps):
            with tf.GradientTape() as tape:
                log_probs, values, rewards = [], [], []
                for _ in range(max_steps):
                    hidden = common(state[None])
                    logits, value = actor(hidden), critic(hidden)
                    action = tf.random.categorical(logits, 1)[0, 0]
                    log_probs.append(tf.nn.log_softmax(logits)[0, action])
                    values.append(value[0, 0])
                    state, reward, done = env_step(state, action)
                    rewards.append(reward)
                    actions.append(action)
                    if done:
                        break
                returns = tf.math.cumsum(tf.stack(rewards), reverse=True)
                advantage = returns - tf.stack(values)
                loss = -tf.reduce_sum(tf.stack(log_probs) * tf.stop_gradient(advantage)) + \
                    tf.reduce_sum(tf.square(advantage))
            opt.apply_gradients(zip(tape.gradient(loss, variables), variables))
            return loss, len(rewards)

        return SimpleNamespace(fn=train_episode, state=lambda: {
            "vars": [v.numpy() for v in variables], "actions": [int(a) for a in actions]})

    calls = [(rnd((4,), i, 0.3), 6) for i in range(10)]
    calls.insert(5, eager_draw)
    stats = check_seeded(make, calls, seed=4, min_graph_calls=5)
    assert stats["conversions"] <= 3, (
        "a few conversions (after profiling, after the eager draw or a failed assumption on the episode) serve every "
        f"episode, not one per call: {stats}"
    )


def test_generator_draws_are_all_or_nothing():
    """A tf.random.Generator advances its state variable: only in a run that succeeds."""
    def make(jit):
        gen = tf.random.Generator.from_seed(4)
        w = tf.Variable(tf.zeros([3]))

        @jit
        def f(x):
            noise = gen.normal([3])
            w.assign_add(noise)
            if tf.reduce_sum(x) > 0:  # speculated from the profile; a negative x aborts the run
                return w * 2.0
            return w - 1.0

        return SimpleNamespace(fn=f, state=lambda: {"gen": gen.state.numpy(), "w": w.numpy()})

    calls = [(tf.constant([1.0, 1.0, 1.0]),)] * 6 + [(tf.constant([-1.0, -1.0, -1.0]),)] + \
            [(tf.constant([1.0, 2.0, 3.0]),)] * 3
    check_seeded(make, calls, seed=2, min_graph_calls=3)


def test_an_op_seed_runs_eagerly_and_says_why():
    def make(jit):
        @jit
        def f(x):
            return x + tf.random.normal([3], seed=5)

        return SimpleNamespace(fn=f)

    calls = [(rnd((3,), i),) for i in range(6)]
    check_seeded(make, calls, seed=1, eager_only=True)
    f = make(janus.function)
    for i in range(6):
        f.fn(rnd((3,), i))
    assert "op seed" in str(janus.explain(f.fn))


@pytest.mark.parametrize("draw", [
    lambda x: tf.random.categorical(tf.math.log([[0.5, 0.5]]), 3, seed=2),  # an op seed
    lambda x: tf.compat.v1.nn.dropout(x, rate=0.5),  # draws inside library code Janus calls as it is
    lambda x: tf.random.set_seed(3),
])
def test_draws_janus_cannot_reproduce_run_eagerly(draw):
    @case
    def f(x):
        draw(x)
        return x + tf.random.uniform([3])

    calls = [(rnd((3,), i),) for i in range(6)]
    check_seeded(f, calls, seed=1, eager_only=True)


def test_without_a_global_seed_draws_are_fresh_and_leave_tensorflow_alone():
    from janus import _tf_private

    @janus.function
    def f(x):
        return x + tf.random.normal([3]), tf.random.poisson([8], 1e6)  # a v2 and a v1 kernel

    tf.random.set_seed(None)  # no global seed, as in a program that never sets one
    try:
        before = _tf_private.op_seed_generator().getstate()
        outs = [f(tf.zeros([3])) for _ in range(6)]
        assert janus.stats(f)["graph_calls"] >= 2, \
            f"6 calls: after the 3 default profiled calls, calls 4-6 may run the graph; at least 2 do: {janus.stats(f)}"
        for k in range(2):
            assert len({o[k].numpy().tobytes() for o in outs}) == len(outs)
        assert _tf_private.op_seed_generator().getstate() == before
    finally:
        tf.random.set_seed(0)


def test_v1_kernels_draw_eagers_numbers_from_inverted_seeds():
    """StatelessMultinomial / StatelessRandomPoisson with the seed philox.v1_seed computes
    from eager's (s1, s2) against eager's Multinomial / RandomPoissonV2, over dtypes and shapes."""
    import random
    from tensorflow.python.ops import gen_stateless_random_ops
    from janus import _tf_private
    from janus.trace import philox

    def next_seed():
        peek = random.Random()
        peek.setstate(_tf_private.op_seed_generator().getstate())
        s1, s2 = _tf_private.global_seed() % (2 ** 31 - 1), peek.randint(0, 2 ** 31 - 1) % (2 ** 31 - 1)
        return tf.constant(np.array(philox.v1_seed(s1, s2), np.uint64).view(np.int64))

    tf.random.set_seed(99)
    r = np.random.RandomState(1)
    for batch, classes, n in [(1, 2, 1), (64, 10, 1), (200, 1000, 3), (3, 5, 1000), (1, 100000, 2), (17, 3, 0),
                              (0, 4, 5)]:
        for dtype in (tf.float16, tf.bfloat16, tf.float32, tf.float64):
            logits = tf.constant(r.normal(size=(batch, classes)) * 3, dtype)
            seed = next_seed()
            eager = tf.random.categorical(logits, n, dtype=tf.int32 if n == 3 else None)
            out = gen_stateless_random_ops.stateless_multinomial(logits, n, seed, output_dtype=eager.dtype)
            np.testing.assert_array_equal(eager.numpy(), out.numpy())
    rates = [0.01, 0.5, 5, 9.9, 10, 10.1, 50, 1e4, 0.0]  # from 10 on, rejection sampling
    for rate_dtype in (tf.float16, tf.float32, tf.float64, tf.int32, tf.int64):
        for dtype in (tf.float16, tf.float32, tf.float64, tf.int32, tf.int64):
            for shape in ([], [7], [300, 2]):
                lam = tf.cast(tf.constant(rates), rate_dtype)
                seed = next_seed()
                eager = tf.random.poisson(shape, lam, dtype=dtype)
                out = gen_stateless_random_ops.stateless_random_poisson(tf.concat([shape, tf.shape(lam)], 0), seed,
                                                                        lam, dtype=dtype)
                np.testing.assert_array_equal(eager.numpy(), out.numpy())


def test_v1_seeds_scramble_into_the_key_and_counter_asked_for():
    from janus.trace import philox

    for key, counter in [(0, 2 ** 31 - 1), (1, 0), (2 ** 31 - 2, 7), (12345, 2 ** 40 + 3), (2 ** 64 - 1, 2 ** 63)]:
        assert philox.scramble(*philox.v1_seed(key, counter)) == (key, counter)
