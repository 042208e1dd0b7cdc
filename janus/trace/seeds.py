"""Seeds of the random ops a graph runs, drawn as eager would draw them.

With a global seed set, each eager stateful random op without an op seed takes
``(s1, s2) = random_seed.get_seed(None)``: ``s1`` from the global seed, ``s2`` the next
number of the context's op-seed generator (a ``random.Random``).  Its kernel draws
from Philox with key ``s1`` and counter ``[0, s2]``; the stateless v2 kernels, given
that key and counter as inputs, draw the same numbers bitwise.

So a graph draws eager's numbers when those pairs are computed in Python at every
call and fed to it:

* while tracing, a :class:`SeedStream` hands out rows of the fed seed table in program
  order (its ``position`` is a Python int, or a graph tensor once a draw happened inside
  a tensor conditional or loop); the graph's final position says how many draws ran;
* at each call, the :class:`SeedReservation` *peeks* at the generator (a copy of its
  state draws the rows, the generator itself does not move) and feeds the table;
  a row also holds the ``seed=[a, b]`` under which the v1 stateless kernels
  (``StatelessMultinomial``, ``StatelessRandomPoisson``) draw from the same key and
  counter (:mod:`janus.trace.philox`), computed when the graph has such a draw;
* only after the run succeeded does the commit advance the generator by exactly the
  number of draws that ran (:class:`janus.commit.effects.ConsumeSeeds`).  An aborted
  run consumes nothing, and eager calls (profiling, fallbacks) share the same stream.

Without a global seed eager's numbers are not reproducible; fresh seeds are fed and
TensorFlow's generator is left alone, as eager leaves it.
"""
from __future__ import annotations

import contextlib
import os
import random
from typing import Any, Iterator

import numpy as np
import tensorflow as tf

from janus import _tf_private
from janus.trace import aborts, philox
from janus.errors import ConversionError
from janus.reporting.codes import Code

# A row of the fed table: (s1, 0, s2, a, b) -> key [s1], counter [0, s2] of the v2 kernels,
# and the v1 kernels' seed [a, b] (int64 bits) that GenerateKey turns into the same key and counter.
ROW = 5
OVERFLOW_MESSAGE = f"{aborts.marker(aborts.CheckKind.SEEDS)} the run drew more random seeds than were reserved"
_MAXINT32 = 2 ** 31 - 1
_FRESH = random.Random(os.urandom(16))


class SeedReservation:
    """What a graph needs at each call: ``rows`` seed rows peeked from TensorFlow's
    op-seed generator, and the commit that consumes the ones the run used."""

    def __init__(self) -> None:
        self.rows = 0  # rows fed at every call (at least every draw a run can make, when static)
        self.dynamic = False  # the number of draws is only known after the run
        self.v1 = False  # a draw uses a v1 stateless kernel: the table's last columns are needed

    def table(self) -> np.ndarray:
        """The rows eager's next ``rows`` draws would use, without consuming them."""
        seed = _tf_private.global_seed()
        pairs = self._fresh_pairs() if seed is None else self._peeked_pairs(seed)
        rows = [(s1, 0, s2, *self._v1_seed(seed, s1, s2)) for s1, s2 in pairs]
        return np.array(rows, np.uint64).reshape(self.rows, ROW)

    def _fresh_pairs(self) -> list[tuple[int, int]]:
        return [(_FRESH.randrange(1, _MAXINT32), _FRESH.randrange(_MAXINT32)) for _ in range(self.rows)]

    def _peeked_pairs(self, seed: int) -> list[tuple[int, int]]:
        """``random_seed.get_seed(None)`` of eager's next ``rows`` draws."""
        peek = random.Random()
        peek.setstate(_tf_private.op_seed_generator().getstate())
        s1 = seed % _MAXINT32
        pairs = [(s1, peek.randint(0, _MAXINT32) % _MAXINT32) for _ in range(self.rows)]
        return [(0, _MAXINT32) if pair == (0, 0) else pair for pair in pairs]

    def _v1_seed(self, seed: int | None, s1: int, s2: int) -> tuple[int, int]:
        if not self.v1:
            return 0, 0
        if seed is None:  # any seed is as fresh as eager's
            return _FRESH.getrandbits(64), _FRESH.getrandbits(64)
        return philox.v1_seed(s1, s2)

    def consume(self, count: int) -> None:
        """Advance TensorFlow's op-seed generator past the ``count`` draws a run made."""
        if count > self.rows:
            raise RuntimeError(f"a graph made {count} random draws with {self.rows} seeds reserved")
        if _tf_private.global_seed() is None:
            return
        rng = _tf_private.op_seed_generator()
        for _ in range(count):
            rng.randint(0, _MAXINT32)

    def grow(self) -> None:
        """After a run overflowed the table: reserve twice as many rows from now on."""
        self.rows *= 2


class SeedStream:
    """The trace-time view: the seed table placeholder and the position of the next draw."""

    def __init__(self) -> None:
        self.position: int | tf.Tensor = 0
        self.reservation = SeedReservation()
        self._table: Any = None
        self._outer_graph: Any = None
        self._forbidden: str | None = None
        self.uncarried_loops = 0

    @property
    def used(self) -> bool:
        return self._table is not None

    def bind(self, outer_graph: Any) -> None:
        self._outer_graph = outer_graph

    def draw(self) -> tuple[tf.Tensor, tf.Tensor]:
        """The Philox key and counter of the next draw eager would make (uint64 tensors)."""
        row = self._next_row()
        return row[:1], row[1:3]

    def draw_v1(self) -> tf.Tensor:
        """The ``seed`` (int64 ``[2]``) under which a v1 stateless kernel makes the next draw
        eager would make."""
        self.reservation.v1 = True
        return tf.bitcast(self._next_row()[3:], tf.int64)

    def _next_row(self) -> tf.Tensor:
        if self._forbidden is not None:
            raise ConversionError(self._forbidden, code=Code.RANDOM)
        if self.uncarried_loops:
            raise DrawInLoop()
        if self._table is None:
            reservation = self.reservation
            self._table = _tf_private.call_time_input(
                self._outer_graph, lambda: tf.constant(reservation.table()), tf.TensorSpec([None, ROW], tf.uint64),
                key="janus_seeds")
        pos = self.position
        if isinstance(pos, int):
            self.reservation.rows = max(self.reservation.rows, pos + 1)
            row = self._table[pos]
        else:
            last = tf.shape(self._table)[0] - 1
            row = tf.gather(self._table, tf.minimum(pos, last))
        self.position = pos + 1
        return row

    def position_tensor(self) -> tf.Tensor:
        """The position as an int32 tensor (to carry it out of a conditional or loop)."""
        pos = self.position
        return tf.constant(pos, tf.int32) if isinstance(pos, int) else tf.identity(pos)

    @contextlib.contextmanager
    def forbidden(self, reason: str) -> Iterator[None]:
        """Draws are refused (with ``reason``) inside this block: a place the position cannot leave."""
        previous, self._forbidden = self._forbidden, reason
        try:
            yield
        finally:
            self._forbidden = previous

    def finish(self, assert_that: Any) -> int | tf.Tensor:
        """At the end of the trace: the number of draws the run makes (a tensor when dynamic,
        then checked against the rows fed)."""
        pos = self.position
        if isinstance(pos, int):
            return pos
        self.reservation.dynamic = True
        self.reservation.rows = max(2 * self.reservation.rows, 32)
        assert_that(pos <= tf.shape(self._table)[0], OVERFLOW_MESSAGE)
        return pos


class DrawInLoop(ConversionError):
    """A draw inside a ``tf.while_loop`` that does not carry the seed position yet: the loop
    is traced again, carrying it."""

    code = Code.RANDOM

    def __init__(self) -> None:
        super().__init__("a random draw inside a tensor-dependent loop")


# Kernels that draw from TensorFlow's stateful generators (seeded by attributes at graph
# construction): a graph holding one, reached through library code Janus does not see,
# would draw other numbers than eager.
STATEFUL_RANDOM_OPS = frozenset({
    "RandomStandardNormal", "RandomUniform", "RandomUniformInt", "TruncatedNormal", "RandomShuffle",
    "Multinomial", "RandomGamma", "RandomPoisson", "RandomPoissonV2", "ParameterizedTruncatedNormal",
    "RandomCrop",
})

# tf.data kernels whose order or elements are random: a dataset holding one, iterated in a
# graph, draws from state that eager draws from too (and a graph built inside the step
# would seed it differently).
DATASET_RANDOM_OPS = frozenset({
    "ShuffleDataset", "ShuffleDatasetV2", "ShuffleDatasetV3", "ShuffleAndRepeatDataset",
    "ShuffleAndRepeatDatasetV2", "RandomDataset", "RandomDatasetV2", "ExperimentalRandomDataset",
    "SamplingDataset", "DataServiceDataset",
})
