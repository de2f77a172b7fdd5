"""Fused kernels stay linear in the size of their group.

numexpr has no temporaries inside one expression: a value written out at each
of its uses doubles the text per level of reuse (residual and Euler-style
code: `y = tanh(y) * 0.5 + y`).  The backend splits such programs into stages
(numexpr_backend.stages); these tests check the structure (stage sizes, total
text) through `@function`, and that results agree with the unfused graph.
"""
from __future__ import annotations

import numpy as np
import pytest

import eager as ek
from graph_runtime import fusion
from graph_runtime.fusion import numexpr_backend
from tracing import function

needs_numexpr = pytest.mark.skipif(not numexpr_backend.available(), reason="numexpr not installed")
X = np.linspace(-2, 2, 16, dtype=np.float32).reshape(4, 4)


def _run(body, **opts):
    """(result, fused kernels, their programs) of `body` under `@function` with these fusion options."""
    f = function(body)
    x = ek.constant(X)
    with fusion.options(**opts):
        out = f(x).numpy()
    steps = [s for s in f.get_concrete_function(x)._plan.steps if s.op.type == "FusedElementwise"]
    return out, [s.kernel for s in steps], [s.op.get_attr("program") for s in steps]


def residual(y):
    for _ in range(220):
        y = ek.tanh(y) * 0.5 + y
    return y


@needs_numexpr
def test_residual_chain_numexpr_text_is_linear_and_matches_unfused():
    ref, none, _ = _run(residual, enabled=False)
    assert not none
    got, kernels, programs = _run(residual, force="numexpr")
    assert len(kernels) == 1 and kernels[0].strategy == "numexpr"
    st = numexpr_backend.stages(programs[0])
    assert len(kernels[0].expression) <= 40 * 3 * 220          # linear: ~the templates' total size
    assert max(len(s.text) for s in st.stages) <= numexpr_backend.MAX_STAGE_CHARS
    assert kernels[0].stages == len(st.stages) > 1
    # each tanh may differ from NumPy's by 3 ulp; the chain does not amplify it (tanh' <= 1, growth <= 1.5)
    np.testing.assert_allclose(got, ref, rtol=2e-5)


def test_residual_chain_numpy_backend_is_bitwise():
    ref, _, _ = _run(residual, enabled=False)
    got, kernels, _ = _run(residual, numexpr=False)
    assert [k.strategy for k in kernels] == ["numpy"]
    assert kernels[0].source.count("\n") < 4 * 3 * 220            # one line per instruction
    np.testing.assert_array_equal(got, ref)


@needs_numexpr
def test_templates_that_repeat_their_argument_do_not_compound():
    # relu is `where(((x > 0) | (x != x)), x, 0)`: x written 3 times, so 60 relus would be 3^60 characters
    def relus(y):
        for _ in range(60):
            y = ek.nn.relu(y - 0.01)
        return y
    ref, _, _ = _run(relus, enabled=False)
    got, kernels, _ = _run(relus, force="numexpr")
    assert kernels[0].strategy == "numexpr"
    assert len(kernels[0].expression) < 60 * 120
    np.testing.assert_array_equal(got, ref)


@needs_numexpr
def test_long_single_use_chain_is_split_by_depth():
    def chain(y):
        for _ in range(300):
            y = ek.sin(y) + 0.5
        return y
    ref, _, _ = _run(chain, enabled=False)
    got, kernels, _ = _run(chain, force="numexpr")
    assert kernels[0].strategy == "numexpr" and kernels[0].stages >= 300 * 2 // numexpr_backend.MAX_STAGE_DEPTH
    np.testing.assert_allclose(got, ref, rtol=1e-5)


@needs_numexpr
def test_fifty_op_chain_is_one_numexpr_call():
    # the benchmarks' 50-op chain (5 ops a round, ~1 paren level each): splitting it would cost a
    # second numexpr call on every run (+2 us on a 4x4 input) for nothing
    def chain50(y):
        for _ in range(10):
            y = ek.sin(ek.tanh(y) * 1.01 + 0.5) - 0.25
        return y
    ref, _, _ = _run(chain50, enabled=False)
    got, kernels, _ = _run(chain50, force="numexpr")
    assert [(k.strategy, k.stages) for k in kernels] == [("numexpr", 1)]
    np.testing.assert_allclose(got, ref, rtol=1e-5)


@needs_numexpr
def test_stages_of_an_unrolled_loop_compile_once():
    # the rounds of an unrolled loop give stages that differ only in the names they read; each
    # distinct (canonical text, argument dtypes) is compiled once, so compile time follows distinct stages
    numexpr_backend.clear_cache()
    ref, _, _ = _run(residual, enabled=False)
    got, kernels, programs = _run(residual, force="numexpr")
    st = numexpr_backend.stages(programs[0])
    texts = {numexpr_backend.canonical(s) for s in st.stages}
    assert len(st.stages) > 10 and len(texts) <= 3
    dtype_of = numexpr_backend.name_dtypes(programs[0])
    compiled = {id(numexpr_backend.compiled_stage(s, [dtype_of[n] for n in s.args], programs[0].dtypes[s.slot])[0])
                for s in st.stages}
    assert len(compiled) == len(texts)
    np.testing.assert_allclose(got, ref, rtol=2e-5)


def test_clear_caches_makes_the_next_plan_generate_its_kernel():
    _, k1, _ = _run(residual, numexpr=False)
    _, k2, _ = _run(residual, numexpr=False)
    assert k1[0] is k2[0]                   # shared: same program signature, shapes and options
    fusion.clear_caches()
    _, k3, _ = _run(residual, numexpr=False)
    assert k3[0] is not k1[0]


def test_numpy_kernel_of_an_unrolled_loop_is_rerolled_and_bitwise():
    # the straight-line kernel of an unrolled loop repeats the same statements; repeated blocks
    # become a loop (compile time follows the source's length), with the same calls in the same order
    from graph_runtime.fusion import numpy_backend
    ref, _, _ = _run(residual, enabled=False)
    got, kernels, programs = _run(residual, numexpr=False)
    np.testing.assert_array_equal(got, ref)
    assert "for _ in range(" in kernels[0].source
    assert kernels[0].source.count("\n") < len(programs[0].instrs) // 4


def test_reroll_keeps_the_statement_sequence():
    from graph_runtime.fusion.reroll import reroll
    calls = []
    ns = {"f": lambda *a: calls.append(a)}
    block = ["    f(1)", "    f(2, x)", "    x = f(3)"]
    for lines in ([f"    f({i})" for i in range(30)],                                   # nothing repeats
                  ["    x = 0"] + block * 37 + ["    f(9)"],                             # one block, many times
                  ["    x = 0"] + block * 3 + ["    f(8)"] * 50 + block * 9 + ["    f(4)"] * 2):
        out = reroll(lines, "    ")
        seqs = []
        for src in (lines, out):
            calls.clear()
            exec("def g():\n" + "\n".join(src) + "\n", ns)
            ns["g"]()
            seqs.append(list(calls))
        assert seqs[0] == seqs[1]
        assert len(out) <= len(lines)
    assert len(reroll(["    x = 0"] + block * 37, "    ")) < 3 * 37 // 2


@needs_numexpr
def test_numexpr_kernel_of_an_unrolled_loop_names_shared_stages_once_and_loops():
    def long_residual(y):
        for _ in range(600):
            y = ek.tanh(y) * 0.5 + y
        return y
    ref, _, _ = _run(long_residual, enabled=False)
    got, kernels, programs = _run(long_residual, force="numexpr")
    st = numexpr_backend.stages(programs[0])
    src = kernels[0].source.split("\n", 1)[1]          # the code (the first line lists the stage texts)
    assert len(st.stages) > 100 and "for _ in range(" in src and src.count("\n") < len(st.stages) // 2
    assert "x1(" not in src                             # one compiled stage, one name
    np.testing.assert_allclose(got, ref, rtol=2e-5)
