"""Embedding: integer indices -> rows of an (input_dim, output_dim) table named `embeddings`."""
from __future__ import annotations

from ...ops import gather as _gather
from ...ops import math as _m
from .base import Layer


class Embedding(Layer):
    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform", embeddings_regularizer=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.embeddings_regularizer = embeddings_regularizer
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self.embeddings_initializer = "random_uniform" if embeddings_initializer == "uniform" \
            else embeddings_initializer

    def build(self, input_shape):
        self.embeddings = self.add_weight((self.input_dim, self.output_dim), self.embeddings_initializer,
                                          name="embeddings", regularizer=self.embeddings_regularizer)

    def call(self, inputs):
        if not inputs.dtype.is_integer:
            inputs = _m.cast(inputs, "int32")
        return _gather.gather(self.embeddings, inputs)
