"""A small ResNet on 32x32 colour images: the JANUS evaluation's ResNet50/ImageNet, in miniature.

Three stages of residual blocks with a hand-written batch normalization whose ``call``
branches on the Python ``training`` flag, as in the paper's CNNs: batch statistics and a
moving-average update when training, the moving averages when evaluating.  Training
steps run with ``training=True``; ``metrics`` evaluates now and then with
``training=False``.  The images are synthetic (``data.blob_images``): 12 classes, set by
the quadrant and colour of a bright blob.
"""
import numpy as np
import tensorflow as tf

import common
import data

SIZE, GRID, CHANNELS, BATCH = 32, 2, 3, 32
TRAIN_SIZE = 1016  # the last batch of an epoch holds 24 images
NUM_CLASSES = GRID * GRID * CHANNELS


class BatchNorm(tf.keras.layers.Layer):
    """Batch normalization over the batch and spatial axes, with moving averages for evaluation."""

    def __init__(self, momentum=0.9, epsilon=1e-5):
        super().__init__()
        self.momentum = momentum
        self.epsilon = epsilon

    def build(self, input_shape):
        shape = (input_shape[-1],)
        self.gamma = self.add_weight(shape=shape, initializer="ones", name="gamma")
        self.beta = self.add_weight(shape=shape, initializer="zeros", name="beta")
        self.moving_mean = self.add_weight(shape=shape, initializer="zeros", trainable=False, name="moving_mean")
        self.moving_var = self.add_weight(shape=shape, initializer="ones", trainable=False, name="moving_var")

    def call(self, x, training=False):
        if training:
            mean, var = tf.nn.moments(x, axes=[0, 1, 2])
            self.moving_mean.assign(self.momentum * self.moving_mean + (1 - self.momentum) * mean)
            self.moving_var.assign(self.momentum * self.moving_var + (1 - self.momentum) * var)
        else:
            mean, var = self.moving_mean, self.moving_var
        return tf.nn.batch_normalization(x, mean, var, self.beta, self.gamma, self.epsilon)


class ResidualBlock(tf.keras.layers.Layer):
    def __init__(self, filters, stride=1):
        super().__init__()
        self.conv1 = tf.keras.layers.Conv2D(filters, 3, strides=stride, padding="same", use_bias=False)
        self.bn1 = BatchNorm()
        self.conv2 = tf.keras.layers.Conv2D(filters, 3, padding="same", use_bias=False)
        self.bn2 = BatchNorm()
        if stride == 1:
            self.projection = None
        else:
            self.projection = tf.keras.layers.Conv2D(filters, 1, strides=stride, use_bias=False)
            self.projection_bn = BatchNorm()

    def call(self, x, training=False):
        y = tf.nn.relu(self.bn1(self.conv1(x), training=training))
        y = self.bn2(self.conv2(y), training=training)
        if self.projection is not None:
            x = self.projection_bn(self.projection(x), training=training)
        return tf.nn.relu(x + y)


class ResNet(tf.keras.Model):
    def __init__(self, num_classes, widths=(8, 16, 32)):
        super().__init__()
        self.stem = tf.keras.layers.Conv2D(widths[0], 3, padding="same", use_bias=False)
        self.stem_bn = BatchNorm()
        self.blocks = [ResidualBlock(w, stride=1 if i == 0 else 2) for i, w in enumerate(widths)]
        self.pool = tf.keras.layers.GlobalAveragePooling2D()
        self.classifier = tf.keras.layers.Dense(num_classes)

    def call(self, x, training=False):
        x = tf.nn.relu(self.stem_bn(self.stem(x), training=training))
        for block in self.blocks:
            x = block(x, training=training)
        return self.classifier(self.pool(x))


class Trainer(common.Trainer):
    def __init__(self, seed):
        tf.keras.utils.set_random_seed(seed)
        images, labels = data.blob_images(TRAIN_SIZE, SIZE, CHANNELS, GRID, seed=seed)
        self.batches = data.Batches([images, labels], BATCH, np.random.default_rng(seed))
        self.test_images, self.test_labels = data.blob_images(200, SIZE, CHANNELS, GRID, seed=seed + 1)
        self.model = ResNet(NUM_CLASSES)
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
    return common.main(build, argv, doc=__doc__, steps=250, log_every=25)


if __name__ == "__main__":
    main()
