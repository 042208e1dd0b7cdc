"""An ordinary eager TF2 script (no Janus in it): the TensorFlow text-generation tutorial
on synthetic text.  A character model (Embedding, GRU or LSTM, Dense) trained a few
steps by a custom ``train_step`` recording a GradientTape, then a generation loop that
calls the model one character at a time and samples with ``tf.random.categorical``.

``python text_generation.py [gru|lstm] [STEPS] [CHARS]``
"""
import sys

import numpy as np
import tensorflow as tf

tf.keras.utils.set_random_seed(0)
CELL = sys.argv[1] if len(sys.argv) > 1 else "gru"
STEPS = int(sys.argv[2]) if len(sys.argv) > 2 else 6
CHARS = int(sys.argv[3]) if len(sys.argv) > 3 else 60
SEQ, BATCH = 24, 8

words = ["janus", "graph", "eager", "tensor", "tape", "speculate", "guard", "assert", "loop", "branch"]
rs = np.random.RandomState(3)
text = " ".join(rs.choice(words) for _ in range(600))
vocab = sorted(set(text))
ids_from_chars = tf.keras.layers.StringLookup(vocabulary=vocab, mask_token=None)
chars_from_ids = tf.keras.layers.StringLookup(vocabulary=ids_from_chars.get_vocabulary(), invert=True,
                                              mask_token=None)
all_ids = ids_from_chars(tf.strings.unicode_split(text, "UTF-8"))
dataset = (tf.data.Dataset.from_tensor_slices(all_ids).batch(SEQ + 1, drop_remainder=True)
           .map(lambda seq: (seq[:-1], seq[1:])).batch(BATCH, drop_remainder=True))


class MyModel(tf.keras.Model):
    def __init__(self, vocab_size, embedding_dim, rnn_units):
        super().__init__()
        self.embedding = tf.keras.layers.Embedding(vocab_size, embedding_dim)
        layer = tf.keras.layers.GRU if CELL == "gru" else tf.keras.layers.LSTM
        self.rnn = layer(rnn_units, return_sequences=True, return_state=True)
        self.dense = tf.keras.layers.Dense(vocab_size)

    def call(self, inputs, states=None, return_state=False, training=False):
        x = self.embedding(inputs, training=training)
        if states is None:
            out = self.rnn(x, training=training)
        else:
            out = self.rnn(x, initial_state=states, training=training)
        x, states = out[0], list(out[1:])
        x = self.dense(x, training=training)
        return (x, states) if return_state else x


class CustomTraining(MyModel):
    def train_step(self, inputs):
        inputs, labels = inputs
        with tf.GradientTape() as tape:
            predictions = self(inputs, training=True)
            loss = self.loss(labels, predictions)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        return {"loss": loss}


model = CustomTraining(vocab_size=len(ids_from_chars.get_vocabulary()), embedding_dim=16, rnn_units=32)
model.compile(optimizer=tf.keras.optimizers.Adam(),
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))

step = 0
for inp, target in dataset.repeat():
    if step == STEPS:
        break
    logs = model.train_step([inp, target])
    print(f"step {step} loss {float(logs['loss']):.6f}")
    step += 1


class OneStep:
    def __init__(self, model, temperature=1.0):
        self.model, self.temperature = model, temperature
        skip_ids = ids_from_chars(["[UNK]"])[:, None]
        sparse_mask = tf.SparseTensor(values=[-float("inf")] * len(skip_ids), indices=skip_ids,
                                      dense_shape=[len(ids_from_chars.get_vocabulary())])
        self.prediction_mask = tf.sparse.to_dense(sparse_mask)

    def generate_one_step(self, inputs, states=None):
        input_ids = ids_from_chars(tf.strings.unicode_split(inputs, "UTF-8")).to_tensor()
        predicted_logits, states = self.model(inputs=input_ids, states=states, return_state=True)
        predicted_logits = predicted_logits[:, -1, :] / self.temperature + self.prediction_mask
        predicted_ids = tf.squeeze(tf.random.categorical(predicted_logits, num_samples=1), axis=-1)
        return chars_from_ids(predicted_ids), states


one_step = OneStep(model)
states, next_char, result = None, tf.constant(["tape"]), [tf.constant(["tape"])]
for _ in range(CHARS):
    next_char, states = one_step.generate_one_step(next_char, states=states)
    result.append(next_char)
print("text", tf.strings.join(result)[0].numpy().decode("utf-8"))
