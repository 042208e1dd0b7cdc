"""A gymnasium environment inside the graph (issue #40, item 3): ``env.reset``/``env.step``
of CartPole-v1, wrappers included (TimeLimit, OrderEnforcing, PassiveEnvChecker), and
``np.random.choice(n, p=np.squeeze(action_probs))`` on the policy's probabilities run as
Python islands (janus/lowering/environments.py, janus/lowering/numpy_draws.py): an episode
stepped under a tape is one graph, with eager's trajectory.

Eager and Janus each get their own seeded environment; after every call the harness
compares results, stdout and state — the environment's whole tree (the cart's state, the
wrappers' counters and flags, every generator's state), the model's weights, and a
checksum of the observations of the episode — bit for bit.  The edges: a run aborting
after the environment stepped (an assumption failing, an op failing) leaves the
environment as before and the eager re-run gives eager's trajectory; a wrapper Janus
cannot vouch for keeps ``env.step`` a graph break; a read of the environment after its
island is a break.
"""
from __future__ import annotations

import types

import numpy as np
import pytest
import tensorflow as tf

import janus
from janus.commit.object_trees import TreeSnapshot
from janus.lowering import environments

from harness import OwnGenerator, check, check_seeded

gymnasium = pytest.importorskip("gymnasium")

EXACT = {"rtol": 0.0, "atol": 0.0}
# a loop's gradient in the graph adds the steps' terms in another order than eager's tape:
# the weights may differ by an ulp (the environment's state is compared as bytes: bitwise)
ULP = {"rtol": 1e-6, "atol": 1e-7}
MAX_STEPS = 16  # the loop's bound; TimeLimit truncates at 12, the pole falls earlier on some episodes
LONG_EPISODE = 100  # keras-io's loop ignores truncation: its episodes end when the pole falls


def _generator(g) -> tuple:
    return () if g is None else (g.bit_generator.state["state"]["state"], g.bit_generator.state["state"]["inc"])


def env_state(env) -> dict:
    """Everything of ``env``'s tree a step or reset may change."""
    u, chain = env.unwrapped, []
    while env is not u:
        chain.append({k: v for k, v in vars(env).items() if k in (
            "_elapsed_steps", "_has_reset", "checked_reset", "checked_step", "checked_data_reuse")})
        env = env.env
    return {
        "cart": None if u.state is None else np.asarray(u.state).tobytes(),  # bitwise, whatever the tolerance
        "beyond": u.steps_beyond_terminated, "wrappers": chain,
        "rng": _generator(u._np_random), "action_rng": _generator(u.action_space._np_random),
    }


def _make_env(wrapper=None):
    env = gymnasium.make("CartPole-v1", max_episode_steps=12)
    return env if wrapper is None else wrapper(env)


def _weights(seed: int, shape: tuple) -> tf.Variable:
    return tf.Variable(tf.random.stateless_normal(shape, seed=[seed, 7]) * 0.4)


def _categorical(after=None, wrapper=None):
    """TensorFlow's docs style: the action drawn by ``tf.random.categorical``, a REINFORCE
    loss added up over the episode, one update; ``after(loss, bonus)`` is traced after the
    loop (an edge to test)."""
    def factory(jit):
        env = _make_env(wrapper)
        w1, w2 = _weights(1, (4, 16)), _weights(2, (16, 2))
        opt = tf.keras.optimizers.SGD(0.05)

        @jit
        def episode(seed, bonus=0.5):
            state, _ = env.reset(seed=seed)
            with tf.GradientTape() as tape:
                loss = tf.constant(0.0)
                visited = tf.constant(0.0)
                for _ in range(MAX_STEPS):
                    x = tf.expand_dims(tf.convert_to_tensor(state), 0)
                    logits = tf.nn.relu(x @ w1) @ w2
                    action = int(tf.random.categorical(logits, 1)[0, 0])
                    state, reward, terminated, truncated, _ = env.step(action)
                    visited = visited + tf.reduce_sum(tf.convert_to_tensor(state))
                    loss = loss - tf.nn.log_softmax(logits)[0, action] * reward
                    if terminated or truncated:
                        break
                if after is not None:
                    loss = after(loss, bonus)
            grads = tape.gradient(loss, [w1, w2])
            opt.apply_gradients(zip(grads, [w1, w2]))
            return loss, visited

        return types.SimpleNamespace(fn=episode, env=env, state=lambda: {**env_state(env), "w1": w1.numpy(),
                                                                              "w2": w2.numpy()})
    return factory


def _actor_critic(jit, own_generator=False):
    """keras-io's actor-critic step, the loss added up in the loop: the action drawn by
    ``np.random.choice(num_actions, p=np.squeeze(action_probs))`` from NumPy's global
    generator (each program's own state of it: OwnGenerator), or by ``generator.choice``
    from a generator of the program's (``np.random.default_rng``)."""
    env, rng, generator = _make_env(), OwnGenerator(3), np.random.default_rng(3)
    num_inputs, num_actions, num_hidden = 4, 2, 16
    init = tf.keras.initializers.GlorotUniform
    inputs = tf.keras.layers.Input(shape=(num_inputs,))
    common = tf.keras.layers.Dense(num_hidden, activation="relu", kernel_initializer=init(seed=1))(inputs)
    action = tf.keras.layers.Dense(num_actions, activation="softmax", kernel_initializer=init(seed=2))(common)
    critic = tf.keras.layers.Dense(1, kernel_initializer=init(seed=3))(common)
    model = tf.keras.Model(inputs=inputs, outputs=[action, critic])
    optimizer = tf.keras.optimizers.Adam(learning_rate=0.01)
    huber_loss = tf.keras.losses.Huber()

    @jit
    def episode(seed):
        state, _ = env.reset(seed=seed)
        episode_reward = 0.0
        with tf.GradientTape() as tape:
            loss = tf.constant(0.0)
            for timestep in range(1, LONG_EPISODE):  # more than 32 items: the rest after a step is a tf.while_loop
                state = tf.convert_to_tensor(state)
                state = tf.expand_dims(state, 0)
                action_probs, critic_value = model(state)
                if own_generator:
                    action = generator.choice(num_actions, p=np.squeeze(action_probs))
                else:
                    action = np.random.choice(num_actions, p=np.squeeze(action_probs))
                log_prob = tf.math.log(action_probs[0, action])
                state, reward, done, _, _ = env.step(action)
                episode_reward += reward
                advantage = reward - critic_value[0, 0]
                loss = loss - log_prob * tf.stop_gradient(advantage) + huber_loss(
                    tf.expand_dims(critic_value[0, 0], 0), tf.expand_dims(reward, 0))
                if done:
                    break
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return episode_reward

    return types.SimpleNamespace(fn=lambda seed: rng.run(episode, seed), janus_fns=[episode], env=env,
                                 state=lambda: {**env_state(env),
                                                "weights": [v.numpy() for v in model.trainable_variables],
                                                "next": rng.run(np.random.rand), "own": _generator(generator)})


def _keras_io(jit):
    """keras-io's actor-critic episode as written there (histories in lists, returns
    normalized with NumPy after the episode, losses zipped): correct, with graph breaks."""
    env, rng = _make_env(), OwnGenerator(5)
    init = tf.keras.initializers.GlorotUniform
    inputs = tf.keras.layers.Input(shape=(4,))
    common = tf.keras.layers.Dense(16, activation="relu", kernel_initializer=init(seed=1))(inputs)
    action = tf.keras.layers.Dense(2, activation="softmax", kernel_initializer=init(seed=2))(common)
    critic = tf.keras.layers.Dense(1, kernel_initializer=init(seed=3))(common)
    model = tf.keras.Model(inputs=inputs, outputs=[action, critic])
    optimizer = tf.keras.optimizers.Adam(learning_rate=0.01)
    huber_loss = tf.keras.losses.Huber()
    gamma, eps = 0.99, np.finfo(np.float32).eps.item()

    @jit
    def episode(seed):
        state, _ = env.reset(seed=seed)
        action_probs_history, critic_value_history, rewards_history = [], [], []
        episode_reward = 0
        with tf.GradientTape() as tape:
            for timestep in range(1, MAX_STEPS):
                state = tf.convert_to_tensor(state)
                state = tf.expand_dims(state, 0)
                action_probs, critic_value = model(state)
                critic_value_history.append(critic_value[0, 0])
                action = np.random.choice(2, p=np.squeeze(action_probs))
                action_probs_history.append(tf.math.log(action_probs[0, action]))
                state, reward, done, _, _ = env.step(action)
                rewards_history.append(reward)
                episode_reward += reward
                if done:
                    break
            returns = []
            discounted_sum = 0
            for r in rewards_history[::-1]:
                discounted_sum = r + gamma * discounted_sum
                returns.insert(0, discounted_sum)
            returns = np.array(returns)
            returns = (returns - np.mean(returns)) / (np.std(returns) + eps)
            returns = returns.tolist()
            history = zip(action_probs_history, critic_value_history, returns)
            actor_losses, critic_losses = [], []
            for log_prob, value, ret in history:
                diff = ret - value
                actor_losses.append(-log_prob * diff)
                critic_losses.append(huber_loss(tf.expand_dims(value, 0), tf.expand_dims(ret, 0)))
            loss_value = sum(actor_losses) + sum(critic_losses)
        grads = tape.gradient(loss_value, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return episode_reward

    return types.SimpleNamespace(fn=lambda seed: rng.run(episode, seed), janus_fns=[episode], env=env,
                                 state=lambda: {**env_state(env),
                                                "weights": [v.numpy() for v in model.trainable_variables],
                                                "next": rng.run(np.random.rand)})


def _seeds(n: int) -> list:
    return [(i % 4,) for i in range(n)]


def _one_graph(stats: dict) -> None:
    """One graph for every episode length (the loop holds the islands); a second conversion
    when the profile's episodes all ended one way and that speculation failed."""
    assert stats["breaks"] == 0 and stats["segments"] == 0, stats
    assert stats["conversions"] <= 2 and stats["cache_entries"] == 1, stats


def test_a_cartpole_episode_under_the_tape_is_one_graph_with_eagers_trajectory():
    stats = check_seeded(_categorical(), _seeds(8), seed=11, min_graph_calls=4, **ULP)
    _one_graph(stats)


@pytest.mark.parametrize("own_generator", [False, True], ids=["np.random", "default_rng"])
def test_the_keras_io_actor_critic_step_draws_its_actions_inside_the_graph_with_eagers_numbers(own_generator):
    factory = lambda jit: _actor_critic(jit, own_generator)  # noqa: E731
    stats = check(factory, _seeds(8), min_graph_calls=4, **ULP)
    _one_graph(stats)
    prog = factory(janus.function)
    for (seed,) in _seeds(5):
        prog.fn(seed)
    text = str(janus.explain(prog.janus_fns[0]))
    assert "Python island: TimeLimit.reset, TimeLimit.step runs in Python inside the graph on env's objects" in text
    assert ("Python island: generator.choice" if own_generator else "Python island: np.random.choice") in text, text


def test_the_keras_io_episode_as_written_is_eagers_with_graph_breaks():
    stats = check(_keras_io, _seeds(6), min_graph_calls=0, **ULP)
    assert stats["breaks"] >= 1 and stats["segment_graph_calls"] >= 1, stats
    assert stats["conversions"] + stats["failed_conversions"] <= 12, (
        "the episode as written splits at its breaks: conversions and failed ones stay bounded over the 6 episodes, "
        f"Janus does not retry at every call: {stats}"
    )


def _branch_after(loss, bonus):
    if bonus > 1.0:  # a tensor test speculated from the profile (never taken in the first calls)
        return loss * 2.0
    return loss


def test_an_assumption_failing_after_the_environment_stepped_leaves_it_as_before():
    calls = [(i % 3, tf.constant(b)) for i, b in enumerate([0.5] * 5 + [1.5, 0.5, 1.5, 0.5])]
    stats = check_seeded(_categorical(after=_branch_after), calls, seed=3, min_graph_calls=3, **ULP)
    assert stats["assertion_failures"] >= 1, (
        "the branch after the environment stepped was speculated on b = 0.5 in the first 5 calls: b = 1.5 fails its "
        f"assertion: {stats}"
    )


def _gather_after(loss, bonus):
    index = tf.cast(bonus * 4.0, tf.int32)  # 0.5 -> 2, 1.0 -> 4: out of range, raises after the steps
    return loss + tf.gather(tf.constant([1.0, 2.0, 3.0, 4.0]), index)


def test_an_op_failing_after_the_environment_stepped_raises_as_eager_and_the_trajectory_is_eagers():
    calls = [(i % 3, tf.constant(b)) for i, b in enumerate([0.5] * 5 + [1.0, 0.5, 1.0, 0.5])]
    stats = check_seeded(_categorical(after=_gather_after), calls, seed=4, min_graph_calls=3, **ULP)
    assert stats["assertion_failures"] >= 2, (
        "the two calls with b = 1.0 fail in the graph after the environment stepped, as eager raises, and each re-runs"
        f" eagerly: {stats}"
    )


def test_a_snapshot_puts_the_tree_back_in_place():
    env = _make_env()
    env.reset(seed=5)
    env.step(0)
    objects = [env, env.env, env.env.env, env.unwrapped, env.unwrapped.action_space]
    before, cart = env_state(env), env.unwrapped.state
    snapshot = TreeSnapshot("env", lambda a, k: env, environments._member)
    snapshot.take((), {})
    env.reset(seed=9)  # a new generator, a new state array, counters back to 0
    for _ in range(4):
        env.step(1)
    env.action_space.sample()
    snapshot.abort()
    assert [env, env.env, env.env.env, env.unwrapped, env.unwrapped.action_space] == objects
    assert env.unwrapped.state is cart
    after = env_state(env)
    assert after == before
    eager = _make_env()
    eager.reset(seed=5)
    eager.step(0)
    np.testing.assert_array_equal(env.step(1)[0], eager.step(1)[0])  # the same trajectory from here


class Noisy(gymnasium.Wrapper):
    """A wrapper of the user's: Janus vouches only for wrappers it reviewed."""

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        return obs, reward + 0.0, terminated, truncated, info


def test_a_wrapper_janus_cannot_vouch_for_keeps_the_step_a_graph_break():
    stats = check_seeded(_categorical(wrapper=Noisy), _seeds(6), seed=8, min_graph_calls=0, **ULP)
    assert stats["breaks"] >= 1 and stats["segment_graph_calls"] + stats["graph_calls"] >= 1, stats
    prog = _categorical(wrapper=Noisy)(janus.function)
    for (seed,) in _seeds(4):
        prog.fn(seed)
    text = str(janus.explain(prog.fn))
    assert "not a Python island: test_gym_islands.Noisy is not among the wrappers and environments Janus vouches " \
           "for" in text, text


def test_unvouched_names_what_janus_did_not_review():
    env = _make_env()
    assert environments.unvouched(env, "step") is None
    assert "renders" in environments.unvouched(gymnasium.make("CartPole-v1", render_mode="rgb_array"), "step")
    wrapped = gymnasium.wrappers.RecordEpisodeStatistics(env)
    assert "RecordEpisodeStatistics is not among" in environments.unvouched(wrapped, "step")


def _reads_after(jit):
    env = _make_env()
    env.reset(seed=1)

    @jit
    def step(x):
        state, reward, terminated, truncated, _ = env.step(int(x > 0))
        return tf.reduce_sum(tf.convert_to_tensor(state)) * x + env.unwrapped.state[0]  # read after the island
    return types.SimpleNamespace(fn=step, state=lambda: env_state(env))


def test_a_read_of_the_environment_after_its_island_is_a_break_and_right():
    stats = check(_reads_after, [(tf.constant(float(i % 3) - 1.0),) for i in range(7)], min_graph_calls=0,
                  **EXACT)
    assert stats["breaks"] >= 1, f"reading the environment after its island is a graph break: {stats}"


def test_an_environment_changed_since_the_trace_runs_that_call_eagerly():
    def call(i):
        def run(p):
            p.env.unwrapped.render_mode = "rgb_array" if i == 6 else None  # rendering: not vouched for
            return p.fn(i % 4)
        return run
    stats = check_seeded(_categorical(), [call(i) for i in range(9)], seed=2, min_graph_calls=4, **ULP)
    assert stats["eager_calls"] >= 4 and stats["breaks"] == 0, stats
