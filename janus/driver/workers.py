"""Janus functions under ``tf.distribute``: calls inside a replica, and the vote that keeps
the workers of a multi-worker strategy on the same path."""
from __future__ import annotations

import tensorflow as tf

from janus.reporting.codes import Code, reason

IN_REPLICA = reason(Code.IN_REPLICA, "called inside strategy.run (a replica context): runs as written; "
                                    "convert the function that calls strategy.run instead")


def in_replica() -> bool:
    """Is this call inside ``strategy.run`` (one per replica, on the strategy's threads)?

    Such a call runs as written: a graph traced there cannot hold the step's
    synchronization points (an optimizer's gradient all-reduce), and replicas must all take
    the same path; the function that calls ``strategy.run`` is the one to convert."""
    return tf.distribute.has_strategy() and not tf.distribute.in_cross_replica_context()


def every_worker_runs_a_graph(strategy: tf.distribute.Strategy, mine: bool) -> bool:
    """Agree with the other workers of a multi-worker strategy: a graph's collectives are
    not the eager step's (gradients are packed differently), so either every worker runs
    its graph at this step or every worker runs the step eagerly.  One eager all-reduce of
    a vote per step."""
    votes = strategy.experimental_distribute_values_from_function(lambda _: tf.constant(int(mine)))
    return int(strategy.reduce(tf.distribute.ReduceOp.SUM, votes, axis=None)) == strategy.num_replicas_in_sync
