"""Property tests: random elementwise graphs, fused vs unfused.

Random graphs mix unary, binary (with broadcasting), comparison, logical,
select and cast ops over 1-3 inputs containing NaN, +-inf and signed zeros.

Tolerances:
- NumPy backends (straight-line and chunked): bitwise equal.  They call the
  very ufuncs the unfused ops call, on the same dtypes, in the same order.
- numexpr on ops it computes exactly (IEEE +, -, *, /, sqrt, comparisons,
  select, max/min written with `where`, abs, floor, ...): bitwise equal.
- numexpr with transcendental functions (exp, expm1, log, log1p, sin, cos,
  tanh): numexpr calls libm where NumPy uses its own SIMD loops.  Documented
  bound (graph_runtime/fusion/__init__.py): each call within
  `TRANSCENDENTAL_MAX_ULP` (3) ulp of NumPy's for the same input.  The random
  programs put one transcendental call after an arbitrary exact prefix
  (so both kernels see the same input) and before ops that cannot magnify an
  ulp difference (negation, abs, relu, scaling by 2 or 0.5, max/min with an
  exact value), and compare in ulps; `test_transcendental_bound_on_wide_inputs`
  checks each function on 20,000 inputs spanning its domain.
NaN is compared as NaN everywhere (any NaN equals any NaN, the sign is ignored).
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import eager as ek
import graph_runtime as gr
from graph_runtime.fusion import numexpr_backend

from graph_runtime.fusion import TRANSCENDENTAL_MAX_ULP

from fusion_helpers import assert_bitwise, assert_within_ulp, fused_and_reference

UNARY_ALL = ["neg", "abs", "tanh", "sin", "exp", "sqrt", "square", "sigmoid", "relu", "log1p", "floor", "sign",
             "reciprocal"]
UNARY_EXACT = ["neg", "abs", "sqrt", "square", "relu", "floor", "sign", "reciprocal"]
UNARY_TRANS = ["exp", "expm1", "log", "log1p", "sin", "cos", "tanh"]
UNARY_ULP_PRESERVING = ["neg", "abs", "relu"]
BINARY_ALL = ["add", "sub", "mul", "div", "max", "min"]

_UNARY = {"neg": ek.negative, "abs": ek.abs, "tanh": ek.tanh, "sin": ek.sin, "exp": ek.exp, "sqrt": ek.sqrt,
          "square": ek.square, "sigmoid": ek.sigmoid, "relu": ek.nn.relu, "log1p": ek.log1p, "floor": ek.floor,
          "sign": ek.sign, "reciprocal": ek.reciprocal, "cos": ek.cos, "log": ek.log, "expm1": ek.expm1}
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


_FLOAT_STEPS = {"u", "b", "c", "sel", "cast"}


@st.composite
def transcendental_programs(draw, fulls):
    """An exact random prefix, one transcendental call, then ops that keep an ulp difference an ulp difference."""
    dtype, shapes, steps, outs, seed, specials = draw(programs(fulls, UNARY_EXACT, BINARY_ALL, allow_cast=False))
    steps = list(steps)
    floats = list(range(len(shapes))) + [len(shapes) + k for k, s in enumerate(steps) if s[0] in _FLOAT_STEPS]
    steps.append(("u", draw(st.sampled_from(UNARY_TRANS)), draw(st.sampled_from(floats))))
    for _ in range(draw(st.integers(0, 3))):
        last = len(shapes) + len(steps) - 1
        kind = draw(st.sampled_from(["u", "scale", "minmax"]))
        if kind == "u":
            steps.append(("u", draw(st.sampled_from(UNARY_ULP_PRESERVING)), last))
        elif kind == "scale":
            steps.append(("c", "mul", last, draw(st.sampled_from([2.0, 0.5]))))
        else:
            steps.append(("b", draw(st.sampled_from(["max", "min"])), last, draw(st.sampled_from(floats))))
    return dtype, shapes, steps, [len(shapes) + len(steps) - 1], seed, specials


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
@given(transcendental_programs(SMALL))
def test_numexpr_transcendentals_within_documented_ulp_bound(prog):
    ref, got, _, plan = _run(prog, force="numexpr")
    for s in plan.steps:
        if s.op.type == "FusedElementwise" and len(s.op.outputs) == 1:
            assert s.kernel.strategy == "numexpr"
    assert_within_ulp(ref, got, TRANSCENDENTAL_MAX_ULP)


@pytest.mark.skipif(not numexpr_backend.available(), reason="numexpr not installed")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", UNARY_TRANS)
def test_transcendental_bound_on_wide_inputs(name, dtype):
    rng = np.random.default_rng(1)
    hi = {"exp": 90.0, "expm1": 90.0, "tanh": 20.0}.get(name, 1e4)
    x = np.concatenate([rng.uniform(-hi, hi, 10000), rng.uniform(-3, 3, 5000),
                        np.geomspace(1e-30, hi, 5000) * rng.choice([-1, 1], 5000)]).astype(dtype)
    g = gr.Graph()
    with g.as_default():
        ph = gr.placeholder(dtype, x.shape, name="x")
        y = _UNARY[name](ek.abs(ph) if name in ("log", "log1p") else ek.negative(ph))
    with np.errstate(all="ignore"):
        ref, got, _, plan = fused_and_reference(g, {ph: x}, [y], force="numexpr")
    assert _strategies(plan) == ["numexpr"]
    assert_within_ulp(ref, got, TRANSCENDENTAL_MAX_ULP)


@pytest.mark.skipif(not numexpr_backend.available(), reason="numexpr not installed")
def test_numexpr_is_used_when_forced():
    prog = ("float32", [(3, 4), (4,)], [("b", "add", 0, 1), ("u", "tanh", 2)], [3], 0, 0.1)
    _, _, _, plan = _run(prog, force="numexpr")
    kernels = [s.kernel for s in plan.steps if s.op.type == "FusedElementwise"]
    assert kernels[0].strategy == "numexpr" and "tanh" in kernels[0].expression
