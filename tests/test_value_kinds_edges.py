"""The kinds' deferred writes at the edges: a run that fails after the step changed a deque,
an OrderedDict or a defaultdict (a missing key read) leaves them as they were, and eager
raises at the same call; a call that succeeds commits them in eager's order."""
import collections
from types import SimpleNamespace

import tensorflow as tf

from harness import check


def test_a_run_failing_after_a_deque_append_and_a_missing_key_read_changes_nothing():
    """The step appends to a deque (maxlen evicting), moves an OrderedDict key and reads a
    defaultdict's missing key, then an op fails on the calls whose input has a negative
    entry (``tf.debugging.assert_non_negative``): those calls raise eager's error and leave
    all three as they were; the others commit every change."""
    def make(jit):
        buf = collections.deque([1.0, 2.0], maxlen=3)
        order = collections.OrderedDict(a=1.0, b=2.0)
        counts = collections.defaultdict(int)

        @jit
        def step(x, key):
            buf.append(float(len(buf)))
            order.move_to_end("a")
            seen = counts[key]
            tf.debugging.assert_non_negative(x, message="negative input")
            return x * (sum(buf) + seen) + order["a"]

        return SimpleNamespace(fn=step, state=lambda: {"buf": list(buf), "order": list(order.items()),
                                                        "counts": sorted(counts.items())})

    good, bad = tf.constant([1.0, 2.0]), tf.constant([1.0, -2.0])
    calls = [(good, "a"), (good, "a"), (good, "b"), (good, "c"), (bad, "d"), (good, "e"), (bad, "f"), (good, "a")]
    check(make, calls, min_graph_calls=2)
