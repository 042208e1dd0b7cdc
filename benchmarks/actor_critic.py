"""Benchmark: keras-io's actor-critic ("Actor Critic Method", CartPole) on gymnasium's
CartPole-v1, one episode per call: eager, Janus, ``tf.function`` on the same code, and a
hand-written graph (TensorFlow's docs' way: ``tf.numpy_function`` around ``env.step`` and the
draw).

The episode is keras-io's step with the loss added up inside the loop (the histories and
NumPy's normalization of the returns after it would keep graph breaks: tests/test_gym_islands.py):
the action drawn by ``np.random.choice(num_actions, p=np.squeeze(action_probs))`` from NumPy's
global generator, ``env.step(action)``, ``if done: break`` — under one ``tf.GradientTape``,
then one Adam update.  Through Janus, ``env.reset``/``env.step`` and the draw are Python
islands and the episode is one graph (janus/lowering/environments.py).  Every mode runs the
same episodes from the same seeds (the environment's, NumPy's global generator's, the
model's); it reports ms per episode (median of the second half), the whole run (first
calls, profiling and conversion included), and whether the episode rewards, the
environment's final state and the weights equal eager's.

    python benchmarks/actor_critic.py [--episodes 40] [--max-steps 500]
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import gymnasium  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import janus  # noqa: E402

NUM_ACTIONS = 2


def _model() -> tf.keras.Model:
    init = tf.keras.initializers.GlorotUniform
    inputs = tf.keras.layers.Input(shape=(4,))
    common = tf.keras.layers.Dense(128, activation="relu", kernel_initializer=init(seed=1))(inputs)
    action = tf.keras.layers.Dense(NUM_ACTIONS, activation="softmax", kernel_initializer=init(seed=2))(common)
    critic = tf.keras.layers.Dense(1, kernel_initializer=init(seed=3))(common)
    return tf.keras.Model(inputs=inputs, outputs=[action, critic])


def program(wrap, max_steps: int):
    """keras-io's episode, wrapped by ``wrap`` (identity, janus.function, tf.function)."""
    env, model = gymnasium.make("CartPole-v1"), _model()
    optimizer = tf.keras.optimizers.Adam(learning_rate=0.01)
    huber_loss = tf.keras.losses.Huber()

    def episode(seed):
        state, _ = env.reset(seed=seed)
        episode_reward = 0.0
        with tf.GradientTape() as tape:
            loss = tf.constant(0.0)
            for timestep in range(1, max_steps):
                state = tf.convert_to_tensor(state)
                state = tf.expand_dims(state, 0)
                action_probs, critic_value = model(state)
                action = np.random.choice(NUM_ACTIONS, p=np.squeeze(action_probs))
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

    return env, model, wrap(episode)


def handwritten(max_steps: int):
    """The same episode as a graph by hand: env.step and the draw in tf.numpy_function."""
    env, model = gymnasium.make("CartPole-v1"), _model()
    optimizer = tf.keras.optimizers.Adam(learning_rate=0.01)
    huber_loss = tf.keras.losses.Huber()

    def env_step(action):
        state, reward, done, _, _ = env.step(int(action))
        return state, np.float64(reward), np.bool_(done)

    def draw(p):
        return np.int64(np.random.choice(NUM_ACTIONS, p=p))

    @tf.function
    def run(state):
        loss, total, done = tf.constant(0.0), tf.constant(0.0, tf.float64), tf.constant(False)
        with tf.GradientTape() as tape:
            for _ in tf.range(1, max_steps):
                if done:
                    break
                action_probs, critic_value = model(tf.expand_dims(state, 0))
                action = tf.numpy_function(draw, [tf.squeeze(action_probs)], tf.int64, stateful=True)
                action.set_shape([])
                log_prob = tf.math.log(action_probs[0, action])
                state, reward, done = tf.numpy_function(env_step, [action], [tf.float32, tf.float64, tf.bool],
                                                        stateful=True)
                state.set_shape([4])
                reward.set_shape([])
                done.set_shape([])
                total += reward
                advantage = reward - tf.cast(critic_value[0, 0], tf.float64)
                loss = loss - log_prob * tf.stop_gradient(tf.cast(advantage, tf.float32)) + huber_loss(
                    tf.expand_dims(critic_value[0, 0], 0), tf.expand_dims(tf.cast(reward, tf.float32), 0))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return total

    def episode(seed):
        state, _ = env.reset(seed=seed)
        return float(run(tf.constant(state)))

    return env, model, episode


def measure(name: str, make, episodes: int) -> dict:
    np.random.seed(42)
    env, model, episode = make()
    times, rewards, error = [], [], None
    start = time.perf_counter()
    for i in range(episodes):
        t0 = time.perf_counter()
        try:
            rewards.append(float(episode(i)))
        except Exception as e:  # noqa: BLE001 - tf.function on eager code may not run it
            last = [line.strip() for line in str(e).splitlines() if line.strip()][-1]
            error = f"raises {last[:110]}" if last.startswith(type(e).__name__) else \
                f"raises {type(e).__name__}: {last[:100]}"
            break
        times.append(time.perf_counter() - t0)
    total = time.perf_counter() - start
    second = times[len(times) // 2:]
    return {"name": name, "median_ms": 1000 * statistics.median(second) if second else float("nan"),
            "total_s": total, "rewards": rewards, "state": np.asarray(env.unwrapped.state),
            "weights": [v.numpy() for v in model.trainable_variables], "error": error,
            "stats": janus.stats(episode) if name == "janus" else None}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--max-steps", type=int, default=500)
    args = parser.parse_args()
    n, steps = args.episodes, args.max_steps
    runs = [
        measure("eager", lambda: program(lambda f: f, steps), n),
        measure("janus", lambda: program(janus.function, steps), n),
        measure("tf.function", lambda: program(tf.function, steps), n),
        measure("handwritten", lambda: handwritten(steps), n),
    ]
    eager = runs[0]
    print(f"keras-io actor-critic on gymnasium CartPole-v1: {n} episodes (one per call), max {steps} steps; "
          f"median ms/episode over the second half")
    print(f"machine: {os.cpu_count()} cores, {platform.machine()}, Python {platform.python_version()}, "
          f"TensorFlow {tf.__version__}, gymnasium {gymnasium.__version__}")
    print("| mode | ms/episode (median, 2nd half) | vs eager | whole run s | rewards = eager's | env state, "
          "weights = eager's | note |")
    print("|---|---|---|---|---|---|---|")
    for r in runs:
        same_rewards = r["rewards"] == eager["rewards"]
        bitwise = same_rewards and r["state"].tobytes() == eager["state"].tobytes() and all(
            np.array_equal(a, b) for a, b in zip(r["weights"], eager["weights"]))
        close = same_rewards and all(np.allclose(a, b, rtol=1e-5, atol=1e-6)
                                     for a, b in zip(r["weights"], eager["weights"]))
        note = r["error"] or (f"{r['stats']['conversions']} conversions, {r['stats']['graph_calls']}/{n} "
                              f"episodes as graphs" if r["stats"] else "")
        speed = eager["median_ms"] / r["median_ms"] if r["median_ms"] == r["median_ms"] else float("nan")
        print(f"| {r['name']} | {r['median_ms']:.1f} | {speed:.2f}x | {r['total_s']:.1f} | {same_rewards} "
              f"({len(r['rewards'])} episodes, {sum(r['rewards']):.0f} steps) | "
              f"{'bitwise' if bitwise else 'within 1e-5' if close else 'no'} | {note} |")


if __name__ == "__main__":
    main()
