"""A cart-pole control task in pure Python/numpy for the reinforcement-learning examples.

The classic pole-balancing problem (Barto, Sutton & Anderson 1983) with the constants and
Euler integration of OpenAI Gym's CartPole-v1: push the cart left or right, reward 1 per
step while the pole stays up, episode ends when it falls, the cart leaves the track, or
after ``max_steps``.  Deterministic given the seed.
"""
import math

import numpy as np


class CartPole:
    observation_size = 4
    num_actions = 2

    gravity, cart_mass, pole_mass, pole_half_length = 9.8, 1.0, 0.1, 0.5
    force, dt = 10.0, 0.02
    max_angle, max_position = 12 * 2 * math.pi / 360, 2.4

    def __init__(self, seed=0, max_steps=200):
        self.rng = np.random.default_rng(seed)
        self.max_steps = max_steps
        self.state = None
        self.steps = 0

    def reset(self):
        self.state = self.rng.uniform(-0.05, 0.05, size=4)
        self.steps = 0
        return self.state.astype(np.float32)

    def step(self, action):
        """Apply ``action`` (0: push left, 1: push right); return (observation, reward, done)."""
        x, x_dot, theta, theta_dot = self.state
        force = self.force if action == 1 else -self.force
        cos, sin = math.cos(theta), math.sin(theta)
        total_mass = self.cart_mass + self.pole_mass
        pole_moment = self.pole_mass * self.pole_half_length
        temp = (force + pole_moment * theta_dot ** 2 * sin) / total_mass
        theta_acc = (self.gravity * sin - cos * temp) / (
            self.pole_half_length * (4.0 / 3.0 - self.pole_mass * cos ** 2 / total_mass))
        x_acc = temp - pole_moment * theta_acc * cos / total_mass
        self.state = np.array([x + self.dt * x_dot, x_dot + self.dt * x_acc,
                               theta + self.dt * theta_dot, theta_dot + self.dt * theta_acc])
        self.steps += 1
        fallen = abs(self.state[0]) > self.max_position or abs(self.state[2]) > self.max_angle
        return self.state.astype(np.float32), 1.0, bool(fallen or self.steps >= self.max_steps)
