"""Inception training step written by hand as one graph function (``ClassifierTrainer``)."""
import inception
from handwritten import ClassifierTrainer


def build(seed=0):
    return ClassifierTrainer(inception.build(seed), training=True)
