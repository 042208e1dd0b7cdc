"""Seeds for TensorFlow's v1 stateless kernels that make them draw eager's numbers.

Eager's stateful ``Multinomial`` and ``RandomPoissonV2`` kernels draw from Philox with key
``s1`` and counter ``[0, 0, s2 lo, s2 hi]`` (``random_seed.get_seed``), like the other
stateful kernels.  Their stateless twins, ``StatelessMultinomial`` and
``StatelessRandomPoisson``, have no v2 form taking key and counter: they take
``seed=[a, b]`` and scramble it (``GenerateKey`` in TensorFlow's
``stateless_random_ops.cc``): the 128 bits of ``(a, b)``, as a counter, go through one
Philox-4x32-10 block under a fixed key, and the block's output words become the key
(words 0, 1) and the counter's high words (2, 3), its low words 0.

Under a fixed key a Philox block is a bijection of the counter (each round is
invertible: the multipliers are odd), so running the block backwards from the words
eager uses gives the seed that reproduces them exactly.
"""
from __future__ import annotations

import numpy as np

_MASK = np.uint64(0xFFFFFFFF)
_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)  # Philox-4x32 multipliers
_INV0, _INV1 = np.uint64(pow(0xD2511F53, -1, 2 ** 32)), np.uint64(pow(0xCD9E8D57, -1, 2 ** 32))
_W0, _W1 = 0x9E3779B9, 0xBB67AE85  # key increments per round
_SCRAMBLE_KEY = (0x3EC8F720, 0x02461E29)  # GenerateKey's fixed key
_ROUNDS = 10
_32 = np.uint64(32)


def _round_keys() -> list[tuple[np.uint64, np.uint64]]:
    k0, k1 = _SCRAMBLE_KEY
    return [(np.uint64((k0 + r * _W0) % 2 ** 32), np.uint64((k1 + r * _W1) % 2 ** 32)) for r in range(_ROUNDS)]


_KEYS = _round_keys()


def _block(words: list[np.ndarray]) -> list[np.ndarray]:
    """One Philox-4x32-10 block under the scramble key (32-bit words held in uint64 arrays)."""
    c0, c1, c2, c3 = words
    for k0, k1 in _KEYS:
        p0, p1 = _M0 * c0, _M1 * c2
        c0, c1, c2, c3 = (p1 >> _32) ^ c1 ^ k0, p1 & _MASK, (p0 >> _32) ^ c3 ^ k1, p0 & _MASK
    return [c0, c1, c2, c3]


def _unblock(words: list[np.ndarray]) -> list[np.ndarray]:
    """The inverse of :func:`_block`."""
    r0, r1, r2, r3 = words
    for k0, k1 in reversed(_KEYS):
        c0, c2 = (r3 * _INV0) & _MASK, (r1 * _INV1) & _MASK
        r0, r1, r2, r3 = c0, r0 ^ ((_M1 * c2) >> _32) ^ k0, c2, r2 ^ ((_M0 * c0) >> _32) ^ k1
    return [r0, r1, r2, r3]


def v1_seeds(key: np.ndarray, counter_high: np.ndarray) -> np.ndarray:
    """For each ``(key, counter_high)`` (uint64 arrays), the ``[a, b]`` seed (uint64 bits of
    an int64 pair) under which a v1 stateless kernel draws from Philox with that key and
    counter ``[0, counter_high]``: eager's stateful draw with ``(seed, seed2) = (key,
    counter_high)``."""
    key, counter_high = np.asarray(key, np.uint64), np.asarray(counter_high, np.uint64)
    seed = _unblock([key & _MASK, key >> _32, counter_high & _MASK, counter_high >> _32])
    return np.stack([seed[0] | (seed[1] << _32), seed[2] | (seed[3] << _32)], axis=-1)


def scrambled(seeds: np.ndarray) -> np.ndarray:
    """``GenerateKey``'s scramble of ``[a, b]`` seeds: ``[key, counter_high]`` (for checks)."""
    seeds = np.asarray(seeds, np.uint64)
    a, b = seeds[..., 0], seeds[..., 1]
    out = _block([a & _MASK, a >> _32, b & _MASK, b >> _32])
    return np.stack([out[0] | (out[1] << _32), out[2] | (out[3] << _32)], axis=-1)
