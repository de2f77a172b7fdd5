"""Property tests: random elementwise graphs, fused vs unfused (issue 9).

Random graphs mix unary, binary (with broadcasting), comparison, logical,
select and cast ops over 1-3 inputs containing NaN, +-inf and signed zeros.

Tolerances:
- NumPy backends (straight-line and chunked): bitwise equal.  They call the
  very ufuncs the unfused ops call, on the same dtypes, in the same order.
- numexpr on ops it computes exactly (IEEE +, -, *, /, sqrt, comparisons,
  select, max/min written with `where`, abs, floor, ...): bitwise equal.
- numexpr with transcendental functions (tanh, sin, exp, sigmoid): numexpr calls
  libm where NumPy uses its own SIMD loops, so single results differ in the
  last bit or two; after a few more float32 ops that grows.  Documented
  tolerance: rtol = atol = 1e-3 on inputs in [-3, 3] and chains of at most 8 ops.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import eager as ek
import graph_runtime as gr
from graph_runtime.fusion import numexpr_backend

from fusion_helpers import assert_bitwise, assert_close, fused_and_reference

UNARY_ALL = ["neg", "abs", "tanh", "sin", "exp", "sqrt", "square", "sigmoid", "relu", "log1p", "floor", "sign",
             "reciprocal"]
UNARY_EXACT = ["neg", "abs", "sqrt", "square", "relu", "floor", "sign", "reciprocal"]
UNARY_TRANS = ["tanh", "sin", "sigmoid"]
BINARY_ALL = ["add", "sub", "mul", "div", "max", "min"]
BINARY_BOUNDED = ["add", "sub"]

_UNARY = {"neg": ek.negative, "abs": ek.abs, "tanh": ek.tanh, "sin": ek.sin, "exp": ek.exp, "sqrt": ek.sqrt,
          "square": ek.square, "sigmoid": ek.sigmoid, "relu": ek.nn.relu, "log1p": ek.log1p, "floor": ek.floor,
          "sign": ek.sign, "reciprocal": ek.reciprocal}
_BINARY = {"add": ek.add, "sub": ek.subtract, "mul": ek.multiply, "div": ek.divide, "max": ek.maximum,
           "min": ek.minimum}
_CMP = {"less": ek.less, "ge": ek.greater_equal, "eq": ek.equal}


def _sub_shape(draw, full):
    """A shape that broadcasts to `full`: some leading dims dropped, some dims set to 1."""
    drop = draw(st.integers(0, len(full)))
    dims = list(full[drop:])
    return tuple(1 if draw(st.booleans()) and draw(st.booleans()) else d for d in dims)


@st.composite
def programs(draw, fulls, unary, binary, allow_bool=True, allow_cast=True):
    full = draw(st.sampled_from(fulls))
    dtype = draw(st.sampled_from(["float32", "float64"]))
    n_in = draw(st.integers(1, 3))
    shapes = [full] + [_sub_shape(draw, full) for _ in range(n_in - 1)]
    steps = []
    kinds = ["f"] * n_in                      # value kinds: "f" float of `dtype`, "b" bool
    target = draw(st.integers(1, 8))
    while len(steps) < target:
        floats = [i for i, k in enumerate(kinds) if k == "f"]
        bools = [i for i, k in enumerate(kinds) if k == "b"]
        options = ["u", "b", "b", "c"] + (["cmp"] if allow_bool else []) + \
            (["sel", "logic"] if allow_bool and bools else []) + (["cast"] if allow_cast else [])
        choice = draw(st.sampled_from(options))
        if choice == "u":
            steps.append(("u", draw(st.sampled_from(unary)), draw(st.sampled_from(floats))))
            kinds.append("f")
        elif choice == "b":
            steps.append(("b", draw(st.sampled_from(binary)), draw(st.sampled_from(floats)),
                          draw(st.sampled_from(floats))))
            kinds.append("f")
        elif choice == "c":
            steps.append(("c", draw(st.sampled_from(binary)), draw(st.sampled_from(floats)),
                          draw(st.sampled_from([0.5, -1.5, 2.0, 0.0]))))
            kinds.append("f")
        elif choice == "cmp":
            steps.append(("cmp", draw(st.sampled_from(sorted(_CMP))), draw(st.sampled_from(floats)),
                          draw(st.sampled_from(floats))))
            kinds.append("b")
        elif choice == "sel":
            steps.append(("sel", draw(st.sampled_from(bools)), draw(st.sampled_from(floats)),
                          draw(st.sampled_from(floats))))
            kinds.append("f")
        elif choice == "logic":
            steps.append(("logic", draw(st.sampled_from(["and", "or", "not"])), draw(st.sampled_from(bools)),
                          draw(st.sampled_from(bools))))
            kinds.append("b")
        elif choice == "cast":
            steps.append(("cast", draw(st.sampled_from(floats))))
            kinds.append("f")
    outs = [len(kinds) - 1]
    if draw(st.booleans()):
        outs.append(draw(st.integers(n_in, len(kinds) - 1)))      # a second (maybe internal) output
    seed = draw(st.integers(0, 2 ** 16))
    specials = draw(st.floats(0, 0.4))
    return dtype, shapes, steps, sorted(set(outs)), seed, specials


def _build(dtype, shapes, steps):
    g = gr.Graph()
    other = "float64" if dtype == "float32" else "float32"
    with g.as_default():
        phs = [gr.placeholder(dtype, s, name=f"x{i}") for i, s in enumerate(shapes)]
        vals = list(phs)
        for st_ in steps:
            kind = st_[0]
            if kind == "u":
                vals.append(_UNARY[st_[1]](vals[st_[2]]))
            elif kind == "b":
                vals.append(_BINARY[st_[1]](vals[st_[2]], vals[st_[3]]))
            elif kind == "c":
                vals.append(_BINARY[st_[1]](vals[st_[2]], st_[3]))
            elif kind == "cmp":
                vals.append(_CMP[st_[1]](vals[st_[2]], vals[st_[3]]))
            elif kind == "sel":
                vals.append(ek.where(vals[st_[1]], vals[st_[2]], vals[st_[3]]))
            elif kind == "logic":
                a, b = vals[st_[2]], vals[st_[3]]
                vals.append(ek.logical_not(a) if st_[1] == "not" else
                            (ek.logical_and(a, b) if st_[1] == "and" else ek.logical_or(a, b)))
            else:
                vals.append(ek.cast(ek.cast(vals[st_[1]], other), dtype))
    return g, phs, vals


def _inputs(dtype, shapes, seed, specials, lo=-3.0, hi=3.0):
    rng = np.random.default_rng(seed)
    out = []
    for s in shapes:
        a = rng.uniform(lo, hi, s).astype(dtype)
        mask = rng.random(s) < specials
        pick = rng.choice(np.array([np.nan, np.inf, -np.inf, 0.0, -0.0], dtype), size=s)
        out.append(np.where(mask, pick, a).astype(dtype))
    return out


def _run(prog, lo=-3.0, hi=3.0, **options):
    dtype, shapes, steps, outs, seed, specials = prog
    g, phs, vals = _build(dtype, shapes, steps)
    feeds = dict(zip(phs, _inputs(dtype, shapes, seed, specials, lo, hi)))
    with np.errstate(all="ignore"):
        return fused_and_reference(g, feeds, [vals[i] for i in outs], **options)


SMALL = [(3, 4), (2, 3, 4), (5,), (1, 4), (4, 1), ()]
LARGE = [(64, 33), (3, 20, 30), (2500,)]


def _strategies(plan) -> list:
    return [s.kernel.strategy for s in plan.steps if s.op.type == "FusedElementwise"]


@given(programs(SMALL, UNARY_ALL, BINARY_ALL))
def test_straight_line_numpy_is_bitwise(prog):
    ref, got, _, plan = _run(prog, numexpr=False, force="numpy")
    assert set(_strategies(plan)) <= {"numpy"}
    assert_bitwise(ref, got)


@settings(max_examples=25)
@given(programs(LARGE, UNARY_ALL, BINARY_ALL))
def test_chunked_numpy_is_bitwise(prog):
    ref, got, _, plan = _run(prog, numexpr=False, force="chunked", chunk_bytes=1024, threads=1)
    assert set(_strategies(plan)) <= {"chunked", "numpy"}
    assert_bitwise(ref, got)


@settings(max_examples=10)
@given(programs(LARGE, UNARY_ALL, BINARY_ALL, allow_bool=False))
def test_chunked_threaded_is_bitwise(prog):
    ref, got, _, _ = _run(prog, numexpr=False, force="chunked", chunk_bytes=1024, threads=3)
    assert_bitwise(ref, got)


@pytest.mark.skipif(not numexpr_backend.available(), reason="numexpr not installed")
@given(programs(SMALL, UNARY_EXACT, BINARY_ALL, allow_cast=False))
def test_numexpr_exact_ops_are_bitwise(prog):
    ref, got, _, plan = _run(prog, force="numexpr")
    for s in plan.steps:
        if s.op.type == "FusedElementwise" and len(s.op.outputs) == 1:
            assert s.kernel.strategy == "numexpr"
    assert_bitwise(ref, got)


@pytest.mark.skipif(not numexpr_backend.available(), reason="numexpr not installed")
@given(programs(SMALL, UNARY_TRANS, BINARY_BOUNDED, allow_cast=False))
def test_numexpr_transcendentals_within_tolerance(prog):
    ref, got, _, _ = _run(prog, force="numexpr")
    assert_close(ref, got, rtol=1e-3, atol=1e-3)


@pytest.mark.skipif(not numexpr_backend.available(), reason="numexpr not installed")
def test_numexpr_is_used_when_forced():
    prog = ("float32", [(3, 4), (4,)], [("b", "add", 0, 1), ("u", "tanh", 2)], [3], 0, 0.1)
    _, _, _, plan = _run(prog, force="numexpr")
    kernels = [s.kernel for s in plan.steps if s.op.type == "FusedElementwise"]
    assert kernels[0].strategy == "numexpr" and "tanh" in kernels[0].expression
