"""A small Inception network on 32x32 colour images: the JANUS evaluation's Inception-v3, in miniature.

Inception blocks run parallel convolution branches (1x1; 1x1 then 3x3; 1x1 then two 3x3
standing for a 5x5, as Inception-v3 factorizes it; average pooling then 1x1) and
concatenate them.  Every convolution is followed by the hand-written ``BatchNorm`` of
``resnet.py``, whose ``call`` branches on the Python ``training`` flag.  Same synthetic
12-class blob images as ``resnet.py``.
"""
import numpy as np
import tensorflow as tf

import common
import data
from resnet import BatchNorm

SIZE, GRID, CHANNELS, BATCH = 32, 2, 3, 32
TRAIN_SIZE = 1016  # the last batch of an epoch holds 24 images
NUM_CLASSES = GRID * GRID * CHANNELS


class ConvBN(tf.keras.layers.Layer):
    def __init__(self, filters, kernel_size, strides=1):
        super().__init__()
        self.conv = tf.keras.layers.Conv2D(filters, kernel_size, strides=strides, padding="same", use_bias=False)
        self.bn = BatchNorm()

    def call(self, x, training=False):
        return tf.nn.relu(self.bn(self.conv(x), training=training))


class InceptionBlock(tf.keras.layers.Layer):
    def __init__(self, width):
        super().__init__()
        self.branch1 = [ConvBN(width, 1)]
        self.branch3 = [ConvBN(width // 2, 1), ConvBN(width, 3)]
        self.branch5 = [ConvBN(width // 4, 1), ConvBN(width // 2, 3), ConvBN(width // 2, 3)]
        self.pool = tf.keras.layers.AveragePooling2D(3, strides=1, padding="same")
        self.pool_proj = ConvBN(width // 2, 1)

    def call(self, x, training=False):
        outputs = []
        for branch in (self.branch1, self.branch3, self.branch5):
            y = x
            for layer in branch:
                y = layer(y, training=training)
            outputs.append(y)
        outputs.append(self.pool_proj(self.pool(x), training=training))
        return tf.concat(outputs, axis=-1)


class Inception(tf.keras.Model):
    def __init__(self, num_classes):
        super().__init__()
        self.stem = ConvBN(16, 3, strides=2)
        self.block1 = InceptionBlock(16)
        self.reduce = tf.keras.layers.MaxPool2D()
        self.block2 = InceptionBlock(32)
        self.pool = tf.keras.layers.GlobalAveragePooling2D()
        self.classifier = tf.keras.layers.Dense(num_classes)

    def call(self, x, training=False):
        x = self.stem(x, training=training)
        x = self.reduce(self.block1(x, training=training))
        x = self.block2(x, training=training)
        return self.classifier(self.pool(x))


class Trainer(common.Trainer):
    def __init__(self, seed):
        tf.keras.utils.set_random_seed(seed)
        images, labels = data.blob_images(TRAIN_SIZE, SIZE, CHANNELS, GRID, seed=seed)
        self.batches = data.Batches([images, labels], BATCH, np.random.default_rng(seed))
        self.test_images, self.test_labels = data.blob_images(200, SIZE, CHANNELS, GRID, seed=seed + 1)
        self.model = Inception(NUM_CLASSES)
        self.model(tf.zeros([1, SIZE, SIZE, CHANNELS]))
        self.optimizer = tf.keras.optimizers.SGD(0.05, momentum=0.9)
        self.optimizer.build(self.model.trainable_variables)
        self.loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def next_batch(self):
        images, labels = next(self.batches)
        return tf.constant(images), tf.constant(labels)

    def train_step(self, images, labels):
        with tf.GradientTape() as tape:
            logits = self.model(images, training=True)
            loss = self.loss_fn(labels, logits)
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
        return loss

    def metrics(self):
        predictions = np.argmax(self.model(self.test_images, training=False), axis=1)
        return {"test_acc": np.mean(predictions == self.test_labels)}


def build(seed=0):
    return Trainer(seed)


def main(argv=None):
    return common.main(build, argv, doc=__doc__, steps=200, log_every=20)


if __name__ == "__main__":
    main()
