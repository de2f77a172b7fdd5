"""Models: subclassed `Model`, `Sequential`, the functional API (`Input`, `Model(inputs, outputs)`)."""
from .model import Model
from .sequential import Sequential
from .functional import Functional, Input

__all__ = ["Model", "Sequential", "Functional", "Input"]
