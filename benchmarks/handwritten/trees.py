"""Flattening a batch of binary trees for the hand-written, level-by-level batched tree models.

Nodes get indices in one order: all leaves first, then the inner nodes by height (1, 2, ...),
so that every child's index is smaller than its parent's and the nodes of one height are
contiguous.  The graph then computes the leaves in one batch and each height in one batch.
"""
import numpy as np
import tensorflow as tf

import data

# A tree of n leaves is at most n - 1 levels high; the examples draw up to 7 leaves.
MAX_LEVELS = 6


def flatten(trees):
    """Return (words, left, right, offsets, roots) as int32 tensors for ``trees``.

    ``words[i]`` is leaf i's word; inner node ``L + k`` (L leaves) combines nodes
    ``left[k]`` and ``right[k]``; the inner nodes of height h are ``offsets[h-1]:offsets[h]``
    of ``left``/``right``; ``roots[b]`` is tree b's root.
    """
    words, inner, heights = [], [], {}

    def visit(node):
        if node.is_leaf():
            heights[id(node)] = (0, len(words))
            words.append(node.word)
            return 0
        h = 1 + max(visit(node.left), visit(node.right))
        heights[id(node)] = (h, None)
        inner.append(node)
        return h

    for tree in trees:
        visit(tree)
    inner.sort(key=lambda n: heights[id(n)][0])  # stable: ties keep post-order
    index = {}
    for key, (h, i) in heights.items():
        if h == 0:
            index[key] = i
    for k, node in enumerate(inner):
        index[id(node)] = len(words) + k
    counts = np.bincount(np.array([heights[id(n)][0] for n in inner], np.int64), minlength=MAX_LEVELS + 1)
    if len(counts) > MAX_LEVELS + 1:
        raise ValueError(f"tree higher than MAX_LEVELS={MAX_LEVELS}")
    offsets = np.concatenate([[0], np.cumsum(counts[1:])])
    return (tf.constant(np.array(words, np.int32)),
            tf.constant(np.array([index[id(n.left)] for n in inner], np.int32).reshape(-1)),
            tf.constant(np.array([index[id(n.right)] for n in inner], np.int32).reshape(-1)),
            tf.constant(offsets.astype(np.int32)),
            tf.constant(np.array([index[id(t)] for t in trees], np.int32)))


SIGNATURE = [tf.TensorSpec([None], tf.int32)] * 3 + [tf.TensorSpec([MAX_LEVELS + 1], tf.int32),
                                                     tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], tf.int32)]


def _check():
    tree = data.Node(left=data.Node(word=3), right=data.Node(left=data.Node(word=4), right=data.Node(word=5)))
    words, left, right, offsets, roots = (t.numpy().tolist() for t in flatten([tree, data.Node(word=7)]))
    assert words == [3, 4, 5, 7] and left == [1, 0] and right == [2, 4] and roots == [5, 3], (words, left, right, roots)
    assert offsets[:3] == [0, 1, 2], offsets
