"""Every op of the registry's gradient cases, placed on a non-default device (/cpu:1 of two), gives the same
values and gradients in a Session as the same graph on one device."""
import importlib
import pathlib
import pkgutil
import sys

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr

_EAGER_TESTS = pathlib.Path(__file__).parent.parent / "eager"
sys.path.insert(0, str(_EAGER_TESTS))
CASES = []
for _info in pkgutil.iter_modules([str(_EAGER_TESTS)]):
    if _info.name.startswith("gradcases_"):
        CASES.extend(importlib.import_module(_info.name).CASES)

# case names that are not op types in a graph
NOT_AN_OP = {"CustomGradient": "a graph records custom_gradient's forward ops, not an op of that name"}


def _run(case, arrays, split: bool):
    g = gr.Graph()
    with g.as_default():
        xs = [gr.placeholder(ek.float64, a.shape, name=f"x{i}") for i, a in enumerate(arrays)]
        with g.device("/cpu:1" if split else None):
            out = case.fn(*xs, *case.constants)
        outs = list(out) if isinstance(out, (list, tuple)) else [out]
        loss = ek.add_n([ek.reduce_sum(o * o) for o in outs]) if len(outs) > 1 else ek.reduce_sum(outs[0] ** 2)
        grads = [gr_ for gr_ in gr.gradients(loss, xs) if gr_ is not None]
    types = {o.type for o in g.get_operations()}
    cfg = gr.SessionConfig(device_count={"CPU": 2})
    with gr.Session(graph=g, config=cfg) as sess:
        return types, sess.run(outs + grads, dict(zip(xs, arrays)))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id or c.op_name)
def test_op_on_a_non_default_device_matches_one_device(case):
    arrays = case.inputs(np.random.default_rng(0))
    types, one = _run(case, arrays, split=False)
    assert case.op_name in types or case.op_name in NOT_AN_OP
    _, two = _run(case, arrays, split=True)
    for a, b in zip(one, two):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=0)
