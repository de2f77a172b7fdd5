"""Helpers for the optimizer tests: run a graph (optimized or not) by names and compare results strictly.

`run_graph(graph, fetch_names, feeds)` runs with optimization OFF, so the graph
itself is what runs (the reference, or a pass's output).  `assert_same(a, b,
exact)` checks dtype, shape, NaN and +-inf positions, and either bitwise
equality (exact rewrites) or closeness of the finite values.
"""
from __future__ import annotations

import os

import numpy as np

import graph_runtime as gr
from graph_runtime.passes import optimize, run_pass

os.environ.setdefault("GRAPHJIT_VERIFY_PASSES", "1")

NO_OPT = gr.SessionConfig(optimize=False)


def run_graph(graph, fetch_names, feeds=None):
    """Run `graph` as is (no optimization) and return the fetched values as a list."""
    with gr.Session(graph=graph, config=NO_OPT) as sess:
        return sess.run(list(fetch_names), dict(feeds or {}))


def optimized(graph, fetch_names, feeds=None, passes=None, **kw):
    """(optimized graph, report); fed and fetched names are preserved."""
    keep = list(fetch_names) + list((feeds or {}).keys())
    return optimize(graph, keep, passes, verify=True, **kw)


def single_pass(name, graph, fetch_names, feeds=None, **kw):
    keep = list(fetch_names) + list((feeds or {}).keys())
    return run_pass(name, graph, keep, verify=True, **kw)


def _bits(a):
    return a.view(f"u{a.dtype.itemsize}")


def assert_same(a, b, exact: bool = True, rtol: float = 1e-4, what: str = ""):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype, f"{what}: dtype {a.dtype} != {b.dtype}"
    assert a.shape == b.shape, f"{what}: shape {a.shape} != {b.shape}"
    if a.dtype.kind == "f":
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b), err_msg=f"{what}: NaN positions differ")
        np.testing.assert_array_equal(np.isposinf(a), np.isposinf(b), err_msg=f"{what}: +inf positions differ")
        np.testing.assert_array_equal(np.isneginf(a), np.isneginf(b), err_msg=f"{what}: -inf positions differ")
        fin = np.isfinite(a).reshape(-1)
        fa, fb = a.reshape(-1)[fin], b.reshape(-1)[fin]
        if exact:
            np.testing.assert_array_equal(_bits(fa), _bits(fb), err_msg=f"{what}: not bitwise equal")
        else:
            np.testing.assert_allclose(fa, fb, rtol=rtol, atol=rtol, err_msg=what)
    else:
        np.testing.assert_array_equal(a, b, err_msg=what)


def count_type(graph, op_type: str) -> int:
    return sum(1 for op in graph.get_operations() if op.type == op_type)


def types(graph) -> list:
    return [op.type for op in graph.get_operations()]
