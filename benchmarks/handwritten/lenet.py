"""LeNet-5 training step written by hand as one graph function (``ClassifierTrainer``)."""
import lenet
from handwritten import ClassifierTrainer


def build(seed=0):
    return ClassifierTrainer(lenet.build(seed))
