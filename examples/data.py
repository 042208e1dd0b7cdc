"""Deterministic synthetic data sets for the examples; nothing is downloaded.

Each data set plants its labels by a rule a model can learn, and the batch iterators
make the last batch of an epoch smaller than the others, as real data sets do when the
batch size does not divide them (so a step sees a different shape now and then).
"""
import numpy as np


class Batches:
    """Endless shuffled minibatches over equally long columns (numpy arrays or lists).

    Every epoch visits each example once in a new order; its last batch holds the remainder.
    """

    def __init__(self, columns, batch_size, rng):
        self.columns = columns
        self.batch_size = batch_size
        self.rng = rng
        self.epoch = 0
        self._order = np.empty(0, dtype=np.int64)
        self._pos = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self._pos == len(self._order):
            self._order = self.rng.permutation(len(self.columns[0]))
            self._pos = 0
            self.epoch += 1
        idx = self._order[self._pos:self._pos + self.batch_size]
        self._pos += len(idx)
        return tuple(c[idx] if isinstance(c, np.ndarray) else [c[i] for i in idx] for c in self.columns)


# --- images --------------------------------------------------------------------------------

def blob_images(n, size, channels=1, grid=2, seed=0):
    """Noisy images whose class is the grid cell and colour channel of a bright square blob.

    A dimmer distractor blob sits in another cell.  Returns ``x`` float32
    [n, size, size, channels] and ``y`` int32 [n] with ``y = cell * channels + channel``,
    i.e. ``grid * grid * channels`` classes.
    """
    rng = np.random.default_rng(seed)
    cell = size // grid
    half = max(2, cell // 4)
    x = rng.normal(0.0, 0.1, (n, size, size, channels)).astype(np.float32)
    cells = rng.integers(grid * grid, size=n)
    chans = rng.integers(channels, size=n)
    distractors = (cells + rng.integers(1, grid * grid, size=n)) % (grid * grid)
    for i in range(n):
        for c, ch, brightness in ((cells[i], chans[i], 1.0), (distractors[i], rng.integers(channels), 0.4)):
            row, col = divmod(int(c), grid)
            cy = row * cell + rng.integers(half, cell - half + 1)
            cx = col * cell + rng.integers(half, cell - half + 1)
            x[i, cy - half:cy + half, cx - half:cx + half, ch] += brightness
    return x, (cells * channels + chans).astype(np.int32)


def gaussian_blobs(n, size, seed=0):
    """Images in [-1, 1] of one Gaussian blob with random centre and width: a GAN's "real" data."""
    rng = np.random.default_rng(seed)
    grid = np.arange(size, dtype=np.float32)
    cy, cx = rng.uniform(1.5, size - 2.5, (2, n, 1, 1)).astype(np.float32)
    width = rng.uniform(1.0, 2.0, (n, 1, 1)).astype(np.float32)
    d2 = (grid[None, :, None] - cy) ** 2 + (grid[None, None, :] - cx) ** 2
    return (2.0 * np.exp(-d2 / (2 * width ** 2)) - 1.0).reshape(n, size * size)


def outline_fill_pairs(n, size, seed=0):
    """Paired images for image-to-image translation.

    Input: a rectangle's outline, 1 on -1 (1 channel).  Target: the rectangle filled with
    a colour set by its area, red when small and blue when large, on grey (3 channels,
    within (-1, 1), away from where a tanh output saturates).
    """
    rng = np.random.default_rng(seed)
    inputs = -np.ones((n, size, size, 1), np.float32)
    targets = np.full((n, size, size, 3), -0.5, np.float32)
    for i in range(n):
        h, w = rng.integers(4, size - 3, size=2)
        top, left = rng.integers(1, size - h), rng.integers(1, size - w)
        inputs[i, top:top + h, left:left + w] = 1.0
        inputs[i, top + 1:top + h - 1, left + 1:left + w - 1] = -1.0
        t = (h * w - 16) / ((size - 4) ** 2 - 16)
        targets[i, top:top + h, left:left + w] = (0.8 - 1.6 * t, 0.5, 1.6 * t - 0.8)
    return inputs, targets


# --- sequences -----------------------------------------------------------------------------

def count_sequences(n, length, vocab, seed=0):
    """Token sequences labelled 1 when tokens of the lower half of the vocabulary outnumber the rest."""
    rng = np.random.default_rng(seed)
    low = rng.random((n, length)) < rng.uniform(0.25, 0.75, (n, 1))
    tokens = np.where(low, rng.integers(0, vocab // 2, (n, length)), rng.integers(vocab // 2, vocab, (n, length)))
    return tokens.astype(np.int32), (2 * low.sum(axis=1) > length).astype(np.int32)


_LEXICON = {
    "DET_S": "the a every this", "DET_P": "the some many these",
    "N_S": "cat dog bird child teacher", "N_P": "cats dogs birds children teachers",
    "ADJ": "small happy old red", "P": "near with behind",
    "V_S": "sees likes chases finds", "V_P": "see like chase find",
    "VI_S": "sleeps runs", "VI_P": "sleep run", "ADV": "quickly today",
}
VOCAB = ["<eos>"] + sorted({w for words in _LEXICON.values() for w in words.split()})


def grammar_corpus(num_sentences, seed=0):
    """Token ids of sentences from a small grammar with number agreement between subject and verb.

    ``S -> NP VP <eos>``, ``NP -> DET [ADJ] N [P NP]``, ``VP -> V NP [ADV] | VI [ADV]``;
    words are indices into ``VOCAB``.
    """
    rng = np.random.default_rng(seed)
    index = {w: i for i, w in enumerate(VOCAB)}

    def pick(category):
        words = _LEXICON[category].split()
        return words[rng.integers(len(words))]

    def noun_phrase(number, depth=0):
        words = [pick("DET_" + number)]
        if rng.random() < 0.4:
            words.append(pick("ADJ"))
        words.append(pick("N_" + number))
        if depth == 0 and rng.random() < 0.25:
            words += [pick("P")] + noun_phrase("SP"[rng.integers(2)], depth + 1)
        return words

    tokens = []
    for _ in range(num_sentences):
        number = "SP"[rng.integers(2)]
        words = noun_phrase(number)
        if rng.random() < 0.6:
            words += [pick("V_" + number)] + noun_phrase("SP"[rng.integers(2)])
        else:
            words.append(pick("VI_" + number))
        if rng.random() < 0.3:
            words.append(pick("ADV"))
        tokens += [index[w] for w in words] + [index["<eos>"]]
    return np.array(tokens, np.int32)


class BPTTBatches:
    """Truncated-BPTT batches: the corpus as ``batch_size`` parallel streams cut into windows.

    Each batch is (inputs, targets) of shape [batch_size, <= bptt]; the last window of an
    epoch is shorter.  ``new_epoch`` tells whether the next batch starts the streams again.
    """

    def __init__(self, tokens, batch_size, bptt):
        length = len(tokens) // batch_size
        self.streams = tokens[:length * batch_size].reshape(batch_size, length)
        self.bptt = bptt
        self.pos = 0

    @property
    def new_epoch(self):
        return self.pos == 0

    def __iter__(self):
        return self

    def __next__(self):
        end = min(self.pos + self.bptt, self.streams.shape[1] - 1)
        batch = self.streams[:, self.pos:end], self.streams[:, self.pos + 1:end + 1]
        self.pos = 0 if end == self.streams.shape[1] - 1 else end
        return batch


# --- trees ---------------------------------------------------------------------------------

class Node:
    """A node of a binary parse tree: a leaf holds a word id, an inner node two children."""

    def __init__(self, word=None, left=None, right=None):
        self.word = word
        self.left = left
        self.right = right

    def is_leaf(self):
        return self.left is None

    def __repr__(self):
        return str(self.word) if self.is_leaf() else f"({self.left!r} {self.right!r})"


TREE_VOCAB = 20
POSITIVE_WORDS = range(0, 5)
NEGATIVE_WORDS = range(5, 10)  # the remaining words are neutral


def sentiment_trees(n, seed=0, min_leaves=2, max_leaves=7):
    """Randomly bracketed binary trees over random words, labelled at the root.

    The label is 1 when positive words outnumber negative ones, else 0 (ties are not drawn).
    """
    rng = np.random.default_rng(seed)

    def bracket(words):
        if len(words) == 1:
            return Node(word=int(words[0]))
        split = rng.integers(1, len(words))
        return Node(left=bracket(words[:split]), right=bracket(words[split:]))

    trees, labels = [], []
    while len(trees) < n:
        words = rng.integers(0, TREE_VOCAB, size=rng.integers(min_leaves, max_leaves + 1))
        score = np.isin(words, POSITIVE_WORDS).sum() - np.isin(words, NEGATIVE_WORDS).sum()
        if score != 0:
            trees.append(bracket(words))
            labels.append(int(score > 0))
    return trees, np.array(labels, np.int32)
