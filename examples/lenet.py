"""LeNet-5 on 28x28 grey images: the JANUS evaluation's LeNet/MNIST, in miniature.

A small CNN of fine-grained operations, written as a Keras model class and trained with
an eager ``tf.GradientTape`` step (SGD with momentum).  The images are synthetic
(``data.blob_images``): the class is the cell of a 3x3 grid holding a bright blob, with a
dimmer distractor blob elsewhere.
"""
import numpy as np
import tensorflow as tf

import common
import data

SIZE, GRID, BATCH = 28, 3, 32
TRAIN_SIZE = 1000  # the last batch of an epoch holds 8 images
NUM_CLASSES = GRID * GRID


class LeNet(tf.keras.Model):
    def __init__(self, num_classes):
        super().__init__()
        self.conv1 = tf.keras.layers.Conv2D(6, 5, padding="same", activation="relu")
        self.pool1 = tf.keras.layers.MaxPool2D()
        self.conv2 = tf.keras.layers.Conv2D(16, 5, activation="relu")
        self.pool2 = tf.keras.layers.MaxPool2D()
        self.flatten = tf.keras.layers.Flatten()
        self.fc1 = tf.keras.layers.Dense(120, activation="relu")
        self.fc2 = tf.keras.layers.Dense(84, activation="relu")
        self.fc3 = tf.keras.layers.Dense(num_classes)

    def call(self, x):
        x = self.pool1(self.conv1(x))
        x = self.pool2(self.conv2(x))
        return self.fc3(self.fc2(self.fc1(self.flatten(x))))


class Trainer(common.Trainer):
    def __init__(self, seed):
        tf.keras.utils.set_random_seed(seed)
        images, labels = data.blob_images(TRAIN_SIZE, SIZE, grid=GRID, seed=seed)
        self.batches = data.Batches([images, labels], BATCH, np.random.default_rng(seed))
        self.test_images, self.test_labels = data.blob_images(300, SIZE, grid=GRID, seed=seed + 1)
        self.model = LeNet(NUM_CLASSES)
        self.model(tf.zeros([1, SIZE, SIZE, 1]))
        self.optimizer = tf.keras.optimizers.SGD(0.02, momentum=0.9)
        self.optimizer.build(self.model.trainable_variables)
        self.loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def next_batch(self):
        images, labels = next(self.batches)
        return tf.constant(images), tf.constant(labels)

    def train_step(self, images, labels):
        with tf.GradientTape() as tape:
            logits = self.model(images)
            loss = self.loss_fn(labels, logits)
        grads = tape.gradient(loss, self.model.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
        return loss

    def metrics(self):
        predictions = np.argmax(self.model(self.test_images), axis=1)
        return {"test_acc": np.mean(predictions == self.test_labels)}


def build(seed=0):
    return Trainer(seed)


def main(argv=None):
    return common.main(build, argv, doc=__doc__, steps=150, log_every=15)


if __name__ == "__main__":
    main()
