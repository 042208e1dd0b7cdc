"""ResNet training step written by hand as one graph function (``ClassifierTrainer``)."""
import resnet
from handwritten import ClassifierTrainer


def build(seed=0):
    return ClassifierTrainer(resnet.build(seed), training=True)
