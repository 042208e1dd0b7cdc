"""Benchmark: keras-io's "Deep Q-Learning for Atari Breakout" as written, on a small synthetic
Breakout-like environment (a 4 x 21 x 21 frame stack, Python with a seeded NumPy generator; no
Atari ROM): eager, Janus (``janus.function`` on the episode), ``janus.enable()`` (the hook on
the plain episode, which records a tape) and ``tf.function`` on the same episode.

The program is keras-io's, its module-level ``while True`` loop's body made a function called
once per episode (what ``python -m janus`` does to such a loop is to move a tape-recording
loop's body into a function; here it is one episode, as in benchmarks/actor_critic.py), the
globals it updates (``frame_count``, ``epsilon``, the histories) kept in the enclosing scope
(``nonlocal``): epsilon-greedy with ``np.random.rand(1)[0]`` and ``np.random.choice`` from NumPy's
global generator, the action from ``keras.ops.argmax(action_probs[0]).numpy()``, the replay
buffer in five Python lists trimmed with ``del history[:1]``, every ``update_after_actions``
frames a batch drawn by ``np.random.choice(range(len(done_history)), size=batch_size)``, the
targets from ``model_target.predict(state_next_sample)``, the update under a
``tf.GradientTape`` with Adam (``clipnorm=1.0``) and the Huber loss, and
``model_target.set_weights(model.get_weights())`` every ``update_target_network`` frames.
The Q-network is keras-io's (a ``Lambda`` transposing channels first to last, three
``Conv2D``, ``Flatten``, two ``Dense``) with fewer filters for 21 x 21 frames; the schedule
constants are scaled down so that a short run has greedy actions, updates, target syncs and
buffer trimming.

Every mode runs the same episodes from the same seeds (NumPy's global generator, the
environment's, ``keras.utils.set_random_seed``); per episode (median of the last half), whole
run (first call included), and whether the episode rewards and final weights equal eager's.

    python benchmarks/dqn.py [--episodes 8]
"""
from __future__ import annotations

import argparse
import os
from collections import deque

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from keras import layers  # noqa: E402

import side_by_side  # noqa: E402  (benchmarks/side_by_side.py)

SIZE, STACK = 21, 4
num_actions = 4  # noop, fire, left, right (Breakout's)
gamma = 0.99
epsilon_min, epsilon_max = 0.1, 1.0
epsilon_interval = epsilon_max - epsilon_min
batch_size = 8                 # keras-io: 32
max_steps_per_episode = 120    # keras-io: 10000
epsilon_random_frames = 40     # keras-io: 50000
epsilon_greedy_frames = 400.0  # keras-io: 1000000.0
max_memory_length = 150        # keras-io: 100000
update_after_actions = 4
update_target_network = 100    # keras-io: 10000


class MiniBreakout:
    """A ball falling row by row onto a paddle on the bottom row; the observation is the
    last four 21 x 21 frames (uint8, as Atari preprocessing with a frame stack gives).
    Reward 1 for each catch (the ball goes back to the top); the episode ends on a miss."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def _frame(self):
        frame = np.zeros((SIZE, SIZE), dtype=np.uint8)
        frame[self.ball_y, self.ball_x] = 255
        frame[SIZE - 1, max(0, self.paddle - 1):self.paddle + 2] = 255
        return frame

    def reset(self):
        self.ball_x, self.ball_y = int(self.rng.integers(SIZE)), 0
        self.dx = int(self.rng.choice([-1, 1]))
        self.paddle = SIZE // 2
        self.frames = deque([self._frame()] * STACK, maxlen=STACK)
        return np.stack(self.frames), {}

    def step(self, action):
        action = int(action)
        if action == 2:
            self.paddle = max(1, self.paddle - 1)
        elif action == 3:
            self.paddle = min(SIZE - 2, self.paddle + 1)
        self.ball_x += self.dx
        if self.ball_x <= 0 or self.ball_x >= SIZE - 1:
            self.dx, self.ball_x = -self.dx, min(max(self.ball_x, 0), SIZE - 1)
        self.ball_y += 1
        reward, done = 0.0, False
        if self.ball_y == SIZE - 1:
            if abs(self.ball_x - self.paddle) <= 1:
                reward, self.ball_y = 1.0, 0
                self.ball_x = int(self.rng.integers(SIZE))
            else:
                done = True
        self.frames.append(self._frame())
        return np.stack(self.frames), reward, done, False, {}


def create_q_model():
    # Network defined by the Deepmind paper (fewer filters here: 21 x 21 frames)
    return keras.Sequential(
        [
            keras.Input(shape=(STACK, SIZE, SIZE)),
            # Convolutions on the frames on the screen
            layers.Lambda(lambda tensor: keras.ops.transpose(tensor, [0, 2, 3, 1]),
                          output_shape=(SIZE, SIZE, STACK)),
            layers.Conv2D(8, 4, strides=2, activation="relu"),
            layers.Conv2D(16, 3, strides=1, activation="relu"),
            layers.Conv2D(16, 3, strides=1, activation="relu"),
            layers.Flatten(),
            layers.Dense(64, activation="relu"),
            layers.Dense(num_actions, activation="linear"),
        ]
    )


def make_program(wrap):
    """keras-io's setup; its loop body, one episode a call, wrapped by ``wrap``."""
    np.random.seed(42)
    keras.utils.set_random_seed(42)
    env = MiniBreakout(seed=42)
    model = create_q_model()
    model_target = create_q_model()
    optimizer = keras.optimizers.Adam(learning_rate=0.00025, clipnorm=1.0)

    action_history = []
    state_history = []
    state_next_history = []
    rewards_history = []
    done_history = []
    frame_count = 0
    epsilon = 1.0
    loss_function = keras.losses.Huber()

    def run_episode():
        nonlocal frame_count, epsilon
        observation, _ = env.reset()
        state = np.array(observation)
        episode_reward = 0

        for timestep in range(1, max_steps_per_episode):
            frame_count += 1

            # Use epsilon-greedy for exploration
            if frame_count < epsilon_random_frames or epsilon > np.random.rand(1)[0]:
                # Take random action
                action = np.random.choice(num_actions)
            else:
                # Predict action Q-values
                # From environment state
                state_tensor = keras.ops.convert_to_tensor(state)
                state_tensor = keras.ops.expand_dims(state_tensor, 0)
                action_probs = model(state_tensor, training=False)
                # Take best action
                action = keras.ops.argmax(action_probs[0]).numpy()

            # Decay probability of taking random action
            epsilon -= epsilon_interval / epsilon_greedy_frames
            epsilon = max(epsilon, epsilon_min)

            # Apply the sampled action in our environment
            state_next, reward, done, _, _ = env.step(action)
            state_next = np.array(state_next)

            episode_reward += reward

            # Save actions and states in replay buffer
            action_history.append(action)
            state_history.append(state)
            state_next_history.append(state_next)
            done_history.append(done)
            rewards_history.append(reward)
            state = state_next

            # Update every fourth frame and once batch size is over 32
            if frame_count % update_after_actions == 0 and len(done_history) > batch_size:
                # Get indices of samples for replay buffers
                indices = np.random.choice(range(len(done_history)), size=batch_size)

                # Using list comprehension to sample from replay buffer
                state_sample = np.array([state_history[i] for i in indices])
                state_next_sample = np.array([state_next_history[i] for i in indices])
                rewards_sample = [rewards_history[i] for i in indices]
                action_sample = [action_history[i] for i in indices]
                done_sample = keras.ops.convert_to_tensor([float(done_history[i]) for i in indices])

                # Build the updated Q-values for the sampled future states
                # Use the target model for stability
                future_rewards = model_target.predict(state_next_sample, verbose=0)
                # Q value = reward + discount factor * expected future reward
                updated_q_values = rewards_sample + gamma * keras.ops.amax(future_rewards, axis=1)

                # If final frame set the last value to -1
                updated_q_values = updated_q_values * (1 - done_sample) - done_sample

                # Create a mask so we only calculate loss on the updated Q-values
                masks = keras.ops.one_hot(action_sample, num_actions)

                with tf.GradientTape() as tape:
                    # Train the model on the states and updated Q-values
                    q_values = model(state_sample)

                    # Apply the masks to the Q-values to get the Q-value for action taken
                    q_action = keras.ops.sum(keras.ops.multiply(q_values, masks), axis=1)
                    # Calculate loss between new Q-value and old Q-value
                    loss = loss_function(updated_q_values, q_action)

                # Backpropagation
                grads = tape.gradient(loss, model.trainable_variables)
                optimizer.apply_gradients(zip(grads, model.trainable_variables))

            if frame_count % update_target_network == 0:
                # update the the target network with new weights
                model_target.set_weights(model.get_weights())

            # Limit the state and reward history
            if len(rewards_history) > max_memory_length:
                del rewards_history[:1]
                del state_history[:1]
                del action_history[:1]
                del state_next_history[:1]
                del done_history[:1]

            if done:
                break
        return episode_reward

    return model, (lambda: frame_count), wrap(run_episode)


def measure(name: str, wrap, episodes: int) -> dict:
    with side_by_side.hooked(name):
        model, frames, episode = make_program(wrap)
        run = side_by_side.timed(name, episode, range(episodes), lambda _: float(episode()))
    run.update(frames=frames(), weights=[v.numpy() for v in model.trainable_variables])
    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=8)
    args = parser.parse_args()
    n = args.episodes
    runs = [measure(name, wrap, n) for name, wrap in side_by_side.MODES]
    eager = runs[0]
    print(f"keras-io DQN (Breakout structure) on a synthetic {STACK}x{SIZE}x{SIZE} frame stack: {n} episodes, one "
          f"per call, {eager['frames']} frames in eager's run; median ms/episode over the second half")
    print(side_by_side.machine())
    print("| mode | ms/episode (median, 2nd half) | vs eager | whole run s | rewards, frames = eager's | "
          "weights = eager's | note |")
    print("|---|---|---|---|---|---|---|")
    for r in runs:
        same = r["results"] == eager["results"] and r["frames"] == eager["frames"]
        bitwise = all(np.array_equal(a, b) for a, b in zip(r["weights"], eager["weights"]))
        close = all(np.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(r["weights"], eager["weights"]))
        print(f"| {r['name']} | {r['median_ms']:.1f} | {side_by_side.speed(r, eager):.2f}x | {r['total_s']:.1f} | "
              f"{same} ({len(r['results'])} episodes, {r['frames']} frames) | "
              f"{'bitwise' if bitwise else 'within 1e-5' if close else 'no'} | {side_by_side.note(r)} |")
    side_by_side.print_explanations(runs)


if __name__ == "__main__":
    main()
