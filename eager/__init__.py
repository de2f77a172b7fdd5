"""graphjit's eager layer: tensors, dtypes, the op registry, autodiff, state.

Everything runs immediately on NumPy unless a graph-building context is on the
context stack (pushed by `graph_runtime`), in which case the very same calls
build graph nodes.  This package imports nothing from the other three.
Public names follow TensorFlow 2 (see docs/api.md).
"""
from . import errors, nest
from .dtypes import (DType, as_dtype, float16, float32, float64, int8, int16, int32, int64, uint8, string,
                     bool_ as bool)  # noqa: A001 - TensorFlow's name
from .shape import TensorShape
from .tensor_spec import TensorSpec
from .tensor import Tensor, TensorRef, is_tensor, is_symbolic
from .context import executing_eagerly, name_scope, init_scope, device
from .convert import constant, convert_to_tensor
from .registry import OpDef
from .ops.constant import identity, stop_gradient
from .ops.math import *  # noqa: F401,F403 - each ops module lists its public names in __all__
from .ops.division import *  # noqa: F401,F403
from .ops.linalg import *  # noqa: F401,F403
from .ops.reduction import *  # noqa: F401,F403
from .ops.array import *  # noqa: F401,F403
from .ops.creation import *  # noqa: F401,F403
from .ops.manipulation import *  # noqa: F401,F403
from .ops.padding import *  # noqa: F401,F403
from .ops.indexing import *  # noqa: F401,F403
from .ops.gather import *  # noqa: F401,F403
from .ops.sorting import *  # noqa: F401,F403
from .ops.contraction import *  # noqa: F401,F403
from .ops import strings
from .ops import nn, random, debugging
from .ops.clipping import *  # noqa: F401,F403
from .ops.logging import print  # noqa: A001 - TensorFlow's name (tf.print)
from .variables import Variable
from .tape import GradientTape, UnconnectedGradients
from .ops.py_function import py_function
from .custom_gradient import custom_gradient
from .control_flow import cond, while_loop, switch_case
from .tensor_array import TensorArray
from .module import Module
from . import summary
from . import data
from . import tensor_operators as _tensor_operators  # installs +, -, [], ... on Tensor and Variable
from . import keras, linalg, math, optimizers, train  # last: they use the names above

