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

import functools

_MASK = 0xFFFFFFFF
_M0, _M1 = 0xD2511F53, 0xCD9E8D57  # Philox-4x32 multipliers
_INV0, _INV1 = pow(_M0, -1, 2 ** 32), pow(_M1, -1, 2 ** 32)
_W0, _W1 = 0x9E3779B9, 0xBB67AE85  # key increments per round
_SCRAMBLE_KEY = (0x3EC8F720, 0x02461E29)  # GenerateKey's fixed key
_KEYS = [((_SCRAMBLE_KEY[0] + r * _W0) & _MASK, (_SCRAMBLE_KEY[1] + r * _W1) & _MASK) for r in range(10)]


@functools.lru_cache(maxsize=4096)
def v1_seed(key: int, counter_high: int) -> tuple[int, int]:
    """The seed ``(a, b)`` (uint64 bits of an int64 pair) under which a v1 stateless kernel
    draws from Philox with ``key`` and counter ``[0, counter_high]``: eager's stateful draw
    with ``(seed, seed2) = (key, counter_high)``.

    Cached: the rows a call feeds are mostly the ones the previous call fed (the table
    peeks ahead of what the runs consume).
    """
    r0, r1, r2, r3 = key & _MASK, key >> 32, counter_high & _MASK, counter_high >> 32
    for k0, k1 in reversed(_KEYS):  # one Philox-4x32-10 block, backwards
        c0, c2 = (r3 * _INV0) & _MASK, (r1 * _INV1) & _MASK
        r0, r1, r2, r3 = c0, r0 ^ ((_M1 * c2) >> 32) ^ k0, c2, r2 ^ ((_M0 * c0) >> 32) ^ k1
    return r0 | (r1 << 32), r2 | (r3 << 32)


def scramble(a: int, b: int) -> tuple[int, int]:
    """``GenerateKey`` of seed ``(a, b)``: ``(key, counter_high)`` (the inverse of :func:`v1_seed`)."""
    c0, c1, c2, c3 = a & _MASK, a >> 32, b & _MASK, b >> 32
    for k0, k1 in _KEYS:
        p0, p1 = _M0 * c0, _M1 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & _MASK, (p0 >> 32) ^ c3 ^ k1, p0 & _MASK
    return c0 | (c1 << 32), c2 | (c3 << 32)
