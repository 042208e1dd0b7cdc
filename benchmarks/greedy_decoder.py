"""Benchmark: keras-io's greedy decoder ("English-to-Spanish translation with a
sequence-to-sequence Transformer", ``decode_sequence``) as written, on a small synthetic
Transformer: eager, Janus (``janus.function(decode_sequence)``), ``janus.enable()`` (the hook
on the plain program; ``decode_sequence`` records no tape, so only the hook's hot-function
counting can take it over, at its ``config.HOT_CALLS``-th call: 20; keras-io decodes 30
sentences) and ``tf.function(decode_sequence)``.

``decode_sequence`` is keras-io's, a module-level function reading the module's globals: the
input sentence vectorized by ``TextVectorization``, then a Python ``for i in
range(max_decoded_sentence_length)`` loop that vectorizes the decoded string so far, calls the
whole transformer on it, takes ``np.argmax(predictions[0, i, :])`` (the tf.keras version of the
example; the Keras-3 version writes ``ops.convert_to_numpy(ops.argmax(...)).item(0)``), looks
the index up in a Python dict (``spa_index_lookup[sampled_token_index]``), appends the word to
a Python string (``decoded_sentence += " " + sampled_token``) and stops at ``if sampled_token
== "[end]": break``.  The layers (``PositionalEmbedding``, ``TransformerEncoder``,
``TransformerDecoder`` with its causal mask) are keras-io's (Keras 3 version; the causal mask
as the tf.keras version builds it with ``tf.tile``, since Keras 3.15's ``ops.tile`` cannot be
built symbolically); the sizes are small (embedding 32,
latent 64, 2 heads instead of 256/2048/8) and the vocabulary synthetic ("e0".."e29" English,
"s0".."s27" Spanish; 400 random pairs).  Weights from
``keras.utils.set_random_seed(0)``, then keras-io's ``transformer.fit`` ("rmsprop", sparse
categorical cross-entropy) for ``--epochs`` epochs on the synthetic pairs, once per process:
untrained weights never produce ``[end]`` within 20 tokens, so the loop's ``break`` would never
be taken.  Every mode builds the model again and loads those weights: the decoded text must
equal eager's.

Per sentence (median of the last half), whole run (first call included), and whether every
decoded sentence equals eager's.

    python benchmarks/greedy_decoder.py [--sentences 30] [--epochs 3]
"""
from __future__ import annotations

import argparse
import os
import re
import string

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow.strings as tf_strings  # noqa: E402
from keras import layers, ops  # noqa: E402
from keras.layers import TextVectorization  # noqa: E402

import side_by_side  # noqa: E402  (benchmarks/side_by_side.py)

vocab_size = 32  # the adapted vocabularies fill it: the argmax is always a key of spa_index_lookup
sequence_length = 20
embed_dim, latent_dim, num_heads = 32, 64, 2
max_decoded_sentence_length = 20

strip_chars = string.punctuation + "¿"
strip_chars = strip_chars.replace("[", "")
strip_chars = strip_chars.replace("]", "")


def custom_standardization(input_string):
    lowercase = tf_strings.lower(input_string)
    return tf_strings.regex_replace(lowercase, "[%s]" % re.escape(strip_chars), "")


class TransformerEncoder(layers.Layer):
    def __init__(self, embed_dim, dense_dim, num_heads, **kwargs):
        super().__init__(**kwargs)
        self.embed_dim = embed_dim
        self.dense_dim = dense_dim
        self.num_heads = num_heads
        self.attention = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.dense_proj = keras.Sequential([layers.Dense(dense_dim, activation="relu"), layers.Dense(embed_dim)])
        self.layernorm_1 = layers.LayerNormalization()
        self.layernorm_2 = layers.LayerNormalization()
        self.supports_masking = True

    def call(self, inputs, mask=None):
        if mask is not None:
            padding_mask = ops.cast(mask[:, None, :], dtype="int32")
        else:
            padding_mask = None
        attention_output = self.attention(query=inputs, value=inputs, key=inputs, attention_mask=padding_mask)
        proj_input = self.layernorm_1(inputs + attention_output)
        proj_output = self.dense_proj(proj_input)
        return self.layernorm_2(proj_input + proj_output)


class PositionalEmbedding(layers.Layer):
    def __init__(self, sequence_length, vocab_size, embed_dim, **kwargs):
        super().__init__(**kwargs)
        self.token_embeddings = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.position_embeddings = layers.Embedding(input_dim=sequence_length, output_dim=embed_dim)
        self.sequence_length = sequence_length
        self.vocab_size = vocab_size
        self.embed_dim = embed_dim

    def call(self, inputs):
        length = ops.shape(inputs)[-1]
        positions = ops.arange(0, length, 1)
        embedded_tokens = self.token_embeddings(inputs)
        embedded_positions = self.position_embeddings(positions)
        return embedded_tokens + embedded_positions

    def compute_mask(self, inputs, mask=None):
        return ops.not_equal(inputs, 0)


class TransformerDecoder(layers.Layer):
    def __init__(self, embed_dim, latent_dim, num_heads, **kwargs):
        super().__init__(**kwargs)
        self.embed_dim = embed_dim
        self.latent_dim = latent_dim
        self.num_heads = num_heads
        self.attention_1 = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.attention_2 = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.dense_proj = keras.Sequential([layers.Dense(latent_dim, activation="relu"), layers.Dense(embed_dim)])
        self.layernorm_1 = layers.LayerNormalization()
        self.layernorm_2 = layers.LayerNormalization()
        self.layernorm_3 = layers.LayerNormalization()
        self.supports_masking = True

    def call(self, inputs, mask=None):
        inputs, encoder_outputs = inputs
        causal_mask = self.get_causal_attention_mask(inputs)

        if mask is None:
            inputs_padding_mask, encoder_outputs_padding_mask = None, None
        else:
            inputs_padding_mask, encoder_outputs_padding_mask = mask

        attention_output_1 = self.attention_1(query=inputs, value=inputs, key=inputs, attention_mask=causal_mask,
                                              query_mask=inputs_padding_mask)
        out_1 = self.layernorm_1(inputs + attention_output_1)

        attention_output_2 = self.attention_2(query=out_1, value=encoder_outputs, key=encoder_outputs,
                                              query_mask=inputs_padding_mask, key_mask=encoder_outputs_padding_mask)
        out_2 = self.layernorm_2(out_1 + attention_output_2)

        proj_output = self.dense_proj(out_2)
        return self.layernorm_3(out_2 + proj_output)

    def get_causal_attention_mask(self, inputs):
        # the tf.keras version's (Keras 3's ``ops.tile`` with a tensor of multiples cannot be traced
        # by Keras's symbolic build on the TensorFlow backend)
        input_shape = tf.shape(inputs)
        batch_size, sequence_length = input_shape[0], input_shape[1]
        i = tf.range(sequence_length)[:, tf.newaxis]
        j = tf.range(sequence_length)
        mask = tf.cast(i >= j, dtype="int32")
        mask = tf.reshape(mask, (1, input_shape[1], input_shape[1]))
        mult = tf.concat([tf.expand_dims(batch_size, -1), tf.constant([1, 1], dtype=tf.int32)], axis=0)
        return tf.tile(mask, mult)


def synthetic_pairs(n: int, seed: int):
    """Sentence pairs on a synthetic vocabulary (keras-io's spa texts: "[start] ... [end]")."""
    rng = np.random.default_rng(seed)
    eng = [" ".join(f"e{w}" for w in rng.integers(0, 30, rng.integers(3, 10))) + "." for _ in range(n)]
    spa = ["[start] " + " ".join(f"s{w}" for w in rng.integers(0, 28, rng.integers(3, 10))) + " [end]"
           for _ in range(n)]
    return eng, spa


def build():
    """keras-io's vectorizations and transformer, from ``keras.utils.set_random_seed(0)``."""
    keras.utils.set_random_seed(0)
    train_eng_texts, train_spa_texts = synthetic_pairs(400, seed=1)
    eng_vectorization = TextVectorization(max_tokens=vocab_size, output_mode="int",
                                          output_sequence_length=sequence_length)
    spa_vectorization = TextVectorization(max_tokens=vocab_size, output_mode="int",
                                          output_sequence_length=sequence_length + 1,
                                          standardize=custom_standardization)
    eng_vectorization.adapt(train_eng_texts)
    spa_vectorization.adapt(train_spa_texts)

    encoder_inputs = keras.Input(shape=(None,), dtype="int64", name="encoder_inputs")
    x = PositionalEmbedding(sequence_length, vocab_size, embed_dim)(encoder_inputs)
    encoder_outputs = TransformerEncoder(embed_dim, latent_dim, num_heads)(x)
    encoder = keras.Model(encoder_inputs, encoder_outputs)  # noqa: F841 - keras-io builds it too

    decoder_inputs = keras.Input(shape=(None,), dtype="int64", name="decoder_inputs")
    encoded_seq_inputs = keras.Input(shape=(None, embed_dim), name="decoder_state_inputs")  # noqa: F841
    x = PositionalEmbedding(sequence_length, vocab_size, embed_dim)(decoder_inputs)
    x = TransformerDecoder(embed_dim, latent_dim, num_heads)([x, encoder_outputs])
    x = layers.Dropout(0.5)(x)
    decoder_outputs = layers.Dense(vocab_size, activation="softmax")(x)
    transformer = keras.Model([encoder_inputs, decoder_inputs], decoder_outputs, name="transformer")
    return eng_vectorization, spa_vectorization, transformer, (train_eng_texts, train_spa_texts)


_TRAINED: list = []


def trained_weights(epochs: int) -> list:
    """keras-io's ``transformer.fit`` for a few epochs on the synthetic pairs, once per process
    (untrained weights never reach ``[end]``: the decoded length would not vary)."""
    if not _TRAINED:
        eng_vectorization, spa_vectorization, transformer, (eng, spa) = build()
        eng_t, spa_t = eng_vectorization(eng), spa_vectorization(spa)
        transformer.compile("rmsprop", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
        transformer.fit({"encoder_inputs": eng_t, "decoder_inputs": spa_t[:, :-1]}, spa_t[:, 1:],
                        batch_size=64, epochs=epochs, verbose=0, shuffle=False)
        _TRAINED.extend(transformer.get_weights())
    return _TRAINED


eng_vectorization = spa_vectorization = transformer = spa_index_lookup = None  # keras-io's globals


def decode_sequence(input_sentence):
    tokenized_input_sentence = eng_vectorization([input_sentence])
    decoded_sentence = "[start]"
    for i in range(max_decoded_sentence_length):
        tokenized_target_sentence = spa_vectorization([decoded_sentence])[:, :-1]
        predictions = transformer([tokenized_input_sentence, tokenized_target_sentence])

        sampled_token_index = np.argmax(predictions[0, i, :])
        sampled_token = spa_index_lookup[sampled_token_index]
        decoded_sentence += " " + sampled_token

        if sampled_token == "[end]":
            break
    return decoded_sentence


def make_decoder(wrap, epochs: int):
    """keras-io's globals (a new model with the trained weights) and ``wrap(decode_sequence)``."""
    global eng_vectorization, spa_vectorization, transformer, spa_index_lookup
    eng_vectorization, spa_vectorization, transformer, _ = build()
    transformer.set_weights(trained_weights(epochs))

    spa_vocab = spa_vectorization.get_vocabulary()
    spa_index_lookup = dict(zip(range(len(spa_vocab)), spa_vocab))
    return wrap(decode_sequence)


def _text(out) -> str:
    """A decoded sentence as text, whatever the mode returned it as."""
    return out.decode() if isinstance(out, bytes) else out if isinstance(out, str) else \
        out.numpy().decode() if hasattr(out, "numpy") else str(out)


def measure(name: str, wrap, sentences: list[str], epochs: int) -> dict:
    decode = make_decoder(wrap, epochs)
    # the hook on after the globals exist: it counts functions that name TensorFlow objects
    with side_by_side.hooked(name):
        return side_by_side.timed(name, decode, sentences, lambda sentence: _text(decode(sentence)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sentences", type=int, default=30, help="keras-io decodes 30")
    parser.add_argument("--epochs", type=int, default=3, help="of keras-io's fit on the synthetic pairs")
    args = parser.parse_args()
    sentences, _ = synthetic_pairs(args.sentences, seed=2)
    trained_weights(args.epochs)
    runs = [measure(name, wrap, sentences, args.epochs) for name, wrap in side_by_side.MODES]
    eager = runs[0]
    lengths = [len(s.split()) - 1 for s in eager["results"]]
    print(f"keras-io English-to-Spanish decode_sequence, small synthetic Transformer (embed {embed_dim}, latent "
          f"{latent_dim}, {num_heads} heads, vocab {vocab_size}): {args.sentences} sentences, one per call; "
          f"decoded lengths {min(lengths)}-{max(lengths)} tokens ({sum(lengths)} in all, "
          f"{sum(s.endswith('[end]') for s in eager['results'])} reached [end]); median ms/sentence over the "
          f"second half")
    print(side_by_side.machine())
    print("| mode | ms/sentence (median, 2nd half) | vs eager | whole run s | decoded text = eager's | note |")
    print("|---|---|---|---|---|---|")
    for r in runs:
        print(f"| {r['name']} | {r['median_ms']:.1f} | {side_by_side.speed(r, eager):.2f}x | {r['total_s']:.1f} | "
              f"{r['results'] == eager['results']} ({len(r['results'])} sentences) | {side_by_side.note(r)} |")
    print("\neager's first decoded sentences:", eager["results"][:3])
    side_by_side.print_explanations(runs)


if __name__ == "__main__":
    main()
