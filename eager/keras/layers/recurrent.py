"""Recurrent layers: SimpleRNN, LSTM (gates i, f, c, o) and GRU (gates z, r, h, reset_after=True).

Weights and layouts are Keras 3's: `kernel` (features, k*units), `recurrent_kernel`
(units, k*units), `bias` (k*units,) -- for GRU (2, 3*units): the input bias and the recurrent
bias, the latter added before the reset gate multiplies it (reset_after).  The LSTM's forget-gate
bias starts at 1 (unit_forget_bias).  Inputs are (batch, time, features).  With a time length
known when the layer runs, the steps are a Python loop (unrolled in a trace); with an unknown
length (a trace whose signature leaves time as None) they are an `eager.while_loop` over a
TensorArray, so one trace serves every length.  `return_sequences` gives every step's output,
`return_state` appends the final states (`[output, h]`, LSTM `[output, h, c]`).
"""
from __future__ import annotations

import numpy as np

from ...control_flow import while_loop
from ...ops import array as _array
from ...ops import linalg as _linalg
from ...ops import manipulation as _manip
from ...ops import math as _m
from ...tensor_array import TensorArray
from .. import activations, initializers
from .base import Layer


def _scan(step, inputs, states, go_backwards):
    """Run `out, states = step(x_t, states)` over time; returns (last output, all outputs, states)."""
    steps = inputs.shape.as_list()[1]
    if steps is not None:
        xs = _array.unstack(inputs, num=steps, axis=1)
        outs = []
        for x_t in (xs[::-1] if go_backwards else xs):
            out, states = step(x_t, states)
            outs.append(out)
        return outs[-1], _array.stack(outs, axis=1), states
    time_major = _manip.transpose(inputs, [1, 0, 2])
    if go_backwards:
        time_major = _manip.reverse(time_major, [0])
    n = _array.shape(time_major)[0]
    xs = TensorArray(inputs.dtype, size=n).unstack(time_major)
    out_ta = TensorArray(inputs.dtype, size=n)

    def body(t, ta, *st):
        out, new = step(xs.read(t), list(st))
        return (t + 1, ta.write(t, out), *new)

    t, out_ta, *states = while_loop(lambda t, ta, *st: t < n, body, (0, out_ta, *states))
    seq = _manip.transpose(out_ta.stack(), [1, 0, 2])
    return states[0], seq, states


class _RNN(Layer):
    _gates = 1
    _n_states = 1

    def __init__(self, units, activation="tanh", use_bias=True, kernel_initializer="glorot_uniform",
                 recurrent_initializer="orthogonal", bias_initializer="zeros", return_sequences=False,
                 return_state=False, go_backwards=False, kernel_regularizer=None, recurrent_regularizer=None,
                 bias_regularizer=None, **kwargs):
        super().__init__(**kwargs)
        self._regularizers = (kernel_regularizer, recurrent_regularizer, bias_regularizer)
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.return_sequences, self.return_state, self.go_backwards = return_sequences, return_state, go_backwards
        self._inits = (kernel_initializer, recurrent_initializer, bias_initializer)

    def build(self, input_shape):
        if len(input_shape) != 3 or input_shape[-1] is None:
            raise ValueError(f"{type(self).__name__} {self.name!r}: expects inputs (batch, time, features) with "
                             f"known features, got shape {input_shape}")
        k, r, b = self._inits
        width = self._gates * self.units
        kr, rr, br = self._regularizers
        self.kernel = self.add_weight((input_shape[-1], width), k, name="kernel", regularizer=kr)
        self.recurrent_kernel = self.add_weight((self.units, width), r, name="recurrent_kernel", regularizer=rr)
        self.bias = self.add_weight(self._bias_shape(), self._bias_init(b), name="bias",
                                    regularizer=br) if self.use_bias else None

    def _bias_shape(self):
        return (self._gates * self.units,)

    def _bias_init(self, init):
        return init

    def call(self, inputs, initial_state=None):
        if initial_state is None:
            batch = _array.shape(inputs)[0]
            states = [_array.zeros(_array.stack([batch, self.units]), inputs.dtype)] * self._n_states
        else:
            states = list(initial_state) if isinstance(initial_state, (list, tuple)) else [initial_state]
            if len(states) != self._n_states:
                raise ValueError(f"{type(self).__name__} {self.name!r}: initial_state needs {self._n_states} "
                                 f"tensor(s), got {len(states)}")
        last, seq, states = _scan(self._step, inputs, states, self.go_backwards)
        out = seq if self.return_sequences else last
        return [out, *states] if self.return_state else out


class SimpleRNN(_RNN):
    """h_t = activation(x_t @ kernel + h_{t-1} @ recurrent_kernel + bias)."""

    def _step(self, x, states):
        z = _m.add(_linalg.matmul(x, self.kernel), _linalg.matmul(states[0], self.recurrent_kernel))
        h = self.activation(_m.add(z, self.bias) if self.bias is not None else z)
        return h, [h]


class _UnitForgetBias:
    """LSTM bias initializer: `bias_initializer` everywhere, ones on the forget gate."""

    def __init__(self, units, init):
        self.units, self.init = units, init

    def __call__(self, shape, dtype="float32"):
        u = self.units
        base = np.asarray(initializers.get(self.init)((u,), dtype))
        return np.concatenate([base, np.ones((u,), dtype), np.asarray(initializers.get(self.init)((2 * u,), dtype))])


class LSTM(_RNN):
    """Gates i, f, c, o in that order along the kernels' last axis; c_t = f*c + i*tanh(.), h_t = o*tanh(c_t)."""

    _gates = 4
    _n_states = 2

    def __init__(self, units, recurrent_activation="sigmoid", unit_forget_bias=True, **kwargs):
        super().__init__(units, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = unit_forget_bias

    def _bias_init(self, init):
        return _UnitForgetBias(self.units, init) if self.unit_forget_bias else init

    def _step(self, x, states):
        h, c = states
        z = _m.add(_linalg.matmul(x, self.kernel), _linalg.matmul(h, self.recurrent_kernel))
        if self.bias is not None:
            z = _m.add(z, self.bias)
        zi, zf, zc, zo = _manip.split(z, 4, axis=1)
        ra = self.recurrent_activation
        c = _m.add(_m.multiply(ra(zf), c), _m.multiply(ra(zi), self.activation(zc)))
        h = _m.multiply(ra(zo), self.activation(c))
        return h, [h, c]


class GRU(_RNN):
    """Gates z, r, h; reset_after=True: bias (2, 3*units), the reset gate multiplies the recurrent
    candidate after its bias is added.  h_t = z * h_{t-1} + (1 - z) * hh."""

    _gates = 3

    def __init__(self, units, recurrent_activation="sigmoid", reset_after=True, **kwargs):
        super().__init__(units, **kwargs)
        if not reset_after:
            raise ValueError("GRU: only reset_after=True (Keras 3's default) is supported")
        self.recurrent_activation = activations.get(recurrent_activation)

    def _bias_shape(self):
        return (2, 3 * self.units)

    def _step(self, x, states):
        h = states[0]
        xz = _linalg.matmul(x, self.kernel)
        rz = _linalg.matmul(h, self.recurrent_kernel)
        if self.bias is not None:
            xz = _m.add(xz, self.bias[0])
            rz = _m.add(rz, self.bias[1])
        x_z, x_r, x_h = _manip.split(xz, 3, axis=1)
        r_z, r_r, r_h = _manip.split(rz, 3, axis=1)
        ra = self.recurrent_activation
        z = ra(_m.add(x_z, r_z))
        r = ra(_m.add(x_r, r_r))
        hh = self.activation(_m.add(x_h, _m.multiply(r, r_h)))
        h = _m.add(_m.multiply(z, h), _m.multiply(_m.subtract(1.0, z), hh))
        return h, [h]
