"""Staged (graph) form of dataset iteration: not written yet.

Until it is, iterating a dataset or calling `reduce` while a graph is being
built raises NotImplementedError instead of unrolling the dataset.
"""
from __future__ import annotations


def _refuse(what):
    raise NotImplementedError(f"{what} inside a graph (@function) is not staged yet; iterate the dataset "
                              f"eagerly and pass its elements to the function")


def staged_reduce(dataset, initial_state, reduce_func):
    _refuse("Dataset.reduce")


class GraphIterator:
    def __init__(self, dataset):
        _refuse("iterating a Dataset")
