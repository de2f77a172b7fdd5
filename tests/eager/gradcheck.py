"""Numerical gradient checking shared by the registry-wide gradient test.

A `GradCase` names the op it exercises, a function of float64 tensors built
with the public API, and how to make its inputs.  `check_case` compares the
tape's gradient of `sum(w * f(x))` (random weights w) with central finite
differences, and confirms the named op really was recorded.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

import eager as ek


@dataclass
class GradCase:
    op_name: str
    fn: Callable
    shapes: Sequence = ()                 # one shape per differentiable input (random normal float64)
    make_inputs: Callable | None = None   # alternative: rng -> list of np.float64 arrays
    constants: Sequence = ()              # extra non-differentiated arguments appended to the call
    rtol: float = 1e-5
    atol: float = 1e-6
    eps: float = 1e-6
    id: str = ""
    tags: dict = field(default_factory=dict)

    def inputs(self, rng):
        if self.make_inputs is not None:
            return [np.asarray(a, dtype=np.float64) for a in self.make_inputs(rng)]
        return [rng.standard_normal(s) for s in self.shapes]


def _scalar_loss(case, arrays, weights):
    out = case.fn(*[ek.constant(a) for a in arrays], *case.constants)
    outs = out if isinstance(out, (list, tuple)) else [out]
    return sum(float(np.sum(np.asarray(o.numpy(), dtype=np.float64) * w)) for o, w in zip(outs, weights))


def check_case(case: GradCase, seed: int = 0):
    rng = np.random.default_rng(seed)
    arrays = case.inputs(rng)
    tensors = [ek.constant(a) for a in arrays]
    with ek.GradientTape(persistent=True) as tape:
        for t in tensors:
            tape.watch(t)
        out = case.fn(*tensors, *case.constants)
        outs = out if isinstance(out, (list, tuple)) else [out]
        weights = [rng.standard_normal(np.shape(o.numpy())) for o in outs]
        loss = ek.add_n([ek.reduce_sum(o * ek.constant(w)) for o, w in zip(outs, weights)]) \
            if len(outs) > 1 else ek.reduce_sum(outs[0] * ek.constant(weights[0]))
    recorded = {e.opdef.name for e in tape._entries}
    assert case.op_name in recorded, f"{case.op_name} was not recorded by the tape (got {sorted(recorded)})"
    grads = tape.gradient(loss, tensors)
    for i, (a, g) in enumerate(zip(arrays, grads)):
        num = np.zeros_like(a)
        flat = a.reshape(-1)
        for j in range(flat.size):
            orig = flat[j]
            flat[j] = orig + case.eps
            up = _scalar_loss(case, arrays, weights)
            flat[j] = orig - case.eps
            down = _scalar_loss(case, arrays, weights)
            flat[j] = orig
            num.reshape(-1)[j] = (up - down) / (2 * case.eps)
        got = np.zeros_like(a) if g is None else np.asarray(g.numpy(), dtype=np.float64)
        np.testing.assert_allclose(got, num, rtol=case.rtol, atol=case.atol,
                                   err_msg=f"{case.op_name} ({case.id}): gradient of input {i}")


def grad_of(f):
    """x -> df/dx computed with an inner tape (so the outer tape records the gradient ops)."""
    def g(x):
        with ek.GradientTape() as t:
            t.watch(x)
            y = f(x)
        return t.gradient(y, x)
    return g
