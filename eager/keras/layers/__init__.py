"""`eager.keras.layers`: Keras 3's layers on graphjit's eager ops (see base.py for the Layer contract)."""
from .base import Layer
from .core import (Activation, Add, Average, Concatenate, Dense, Dropout, Flatten, InputLayer, Maximum, Minimum,
                   Multiply, Reshape, Subtract)
from .conv import (AveragePooling2D, Conv2D, GlobalAveragePooling2D, GlobalMaxPooling2D, MaxPooling2D)
from .normalization import BatchNormalization, LayerNormalization
from .embedding import Embedding
from .recurrent import GRU, LSTM, SimpleRNN

__all__ = ["Layer", "InputLayer", "Dense", "Activation", "Flatten", "Reshape", "Dropout", "Concatenate", "Add",
           "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Conv2D", "MaxPooling2D", "AveragePooling2D",
           "GlobalAveragePooling2D", "GlobalMaxPooling2D", "BatchNormalization", "LayerNormalization", "Embedding",
           "SimpleRNN", "LSTM", "GRU"]
