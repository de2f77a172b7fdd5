"""Targeted tests: each arithmetic rule fires where it may, and only there (broadcasting, IEEE, dtypes)."""
from __future__ import annotations

import numpy as np
import pytest

import eager as ek
import graph_runtime as gr

from pass_helpers import assert_same, count_type, run_graph, single_pass, types

SPECIAL = np.array([[0.0, -0.0, 1.0], [np.nan, np.inf, -np.inf]], np.float32)
MIXED = np.array([[-2.5, 0.5, 3.0], [1e-8, -1e30, 7.0]], np.float32)


def _build(fn, shape=(2, 3), dtype=ek.float32):
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(dtype, shape, name="x")
        y = fn(x)
    return g, y.name


def _arith(fn, value=SPECIAL, dtype=ek.float32, shape=(2, 3), mixed=True, **options):
    """(result types after the arithmetic pass, details) after checking results are unchanged."""
    g, y = _build(fn, shape, dtype)
    new, stats = single_pass("arithmetic", g, [y], {"x:0": value}, options=options)
    exact = not any(r in stats.details for r in ("log1p", "expm1", "log_softmax"))
    for v in (value, MIXED.astype(value.dtype) if value.dtype.kind == "f" and mixed else value):
        ref = run_graph(g, [y], {"x:0": v})[0]
        got = run_graph(new, [y], {"x:0": v})[0]
        assert_same(ref, got, exact=exact, rtol=1e-5, what=y)
    return types(new), stats.details


@pytest.mark.parametrize("fn,rule,gone", [
    (lambda x: x * 1.0, "mul_one", "Mul"),
    (lambda x: 1.0 * x, "mul_one", "Mul"),
    (lambda x: x / 1.0, "div_one", "RealDiv"),
    (lambda x: x - 0.0, "sub_zero", "Sub"),
    (lambda x: x + ek.constant(-0.0), "add_zero", "AddV2"),
    (lambda x: ek.constant(-0.0) + x, "add_zero", "AddV2"),
    (lambda x: ek.pow(x, 1.0), "pow_one", "Pow"),
    (lambda x: -(-x), "neg_neg", "Neg"),
    (lambda x: ek.transpose(ek.transpose(x, [1, 0]), [1, 0]), "transpose_transpose", "Transpose"),
    (lambda x: ek.cast(ek.cast(x, ek.float64), ek.float32), "cast_cast", "Cast"),
])
def test_identity_rules_remove_the_op(fn, rule, gone):
    ts, details = _arith(fn)
    assert details.get(rule) == 1
    assert gone not in ts


@pytest.mark.parametrize("fn,rule,new_type", [
    (lambda x: ek.constant(-0.0) - x, "zero_sub", "Neg"),
    (lambda x: 1.0 / x, "one_div", "Reciprocal"),
    (lambda x: x * x, "mul_self", "Square"),
    (lambda x: ek.pow(x, 2.0), "pow_two", "Square"),
    (lambda x: ek.pow(x, 0.5), "pow_half", "Sqrt"),
    (lambda x: ek.pow(x, -1.0), "pow_minus_one", "Reciprocal"),
    (lambda x: x + (-ek.tanh(x)), "add_neg", "Sub"),
    (lambda x: (-ek.tanh(x)) + x, "add_neg", "Sub"),
    (lambda x: x - (-ek.tanh(x)), "sub_neg", "AddV2"),
    (lambda x: ek.square(x - ek.tanh(x)), "squared_difference", "SquaredDifference"),
    (lambda x: (x + ek.tanh(x)) + ek.sin(x), "add_n", "AddN"),
    (lambda x: ek.transpose(ek.transpose(ek.reshape(x, [1, 2, 3]), [1, 0, 2]), [0, 2, 1]),
     "transpose_transpose", "Transpose"),
])
def test_strength_reduction_rules_are_exact(fn, rule, new_type):
    ts, details = _arith(fn)
    assert details.get(rule) == 1, details
    assert new_type in ts


@pytest.mark.parametrize("fn,rule,new_type", [
    (lambda x: ek.log(1.0 + x), "log1p", "Log1p"),
    (lambda x: ek.log(x + 1.0), "log1p", "Log1p"),
    (lambda x: ek.exp(x) - 1.0, "expm1", "Expm1"),
])
def test_accuracy_rules(fn, rule, new_type):
    ts, details = _arith(fn, value=MIXED)
    assert details.get(rule) == 1 and new_type in ts


@pytest.mark.parametrize("fn,rule", [
    (lambda x: 1.0 / (ek.exp(x) - 1.0), "expm1"),
    (lambda x: 1.0 / ek.log(1.0 + x), "log1p"),
])
def test_accuracy_rules_keep_the_sign_of_zero(fn, rule):
    # expm1(-0.0) and log1p(-0.0) are -0.0 where exp(-0.0) - 1 and log(1 + -0.0) are +0.0: the reciprocal of
    # the rewritten graph must still be +inf there (the random pass test found -inf)
    v = np.array([[-0.0, 0.0, 1.0], [-1.0, 2.0, -0.0]], np.float32)
    ts, details = _arith(fn, value=v, mixed=False)      # checks the +inf and -inf positions
    assert details.get(rule) == 1
    g, y = _build(fn)
    new, _ = single_pass("arithmetic", g, [y], {"x:0": v})
    got = run_graph(new, [y], {"x:0": v})[0]
    assert np.isposinf(got[0, 0]) and np.isposinf(got[1, 2])
    # "fast math" (signed_zeros=False) leaves the bare Log1p / Expm1
    fast, _ = single_pass("arithmetic", g, [y], {"x:0": v}, options={"signed_zeros": False})
    assert "AddV2" not in types(fast) and "AddV2" in types(new)


def test_log_softmax_rule():
    v = np.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 5.0]], np.float32)
    ts, details = _arith(lambda x: ek.log(ek.nn.softmax(x)), value=v, mixed=False)
    assert details.get("log_softmax") == 1 and "LogSoftmax" in ts and "Softmax" not in ts
    # where softmax underflows to 0, log(softmax) is -inf and LogSoftmax is finite (documented, more accurate)


def test_not_greater_is_less_equal_for_ints_only():
    iv = np.array([[1, 2, 3], [4, 5, 6]], np.int32)
    ts, details = _arith(lambda x: ek.cast(ek.logical_not(ek.greater(x, 3)), ek.int32), value=iv, dtype=ek.int32)
    assert details.get("not_compare") == 1 and "LessEqual" in ts and "LogicalNot" not in ts
    # floats: NaN makes not(x > y) differ from x <= y, so the rule must not fire
    ts, details = _arith(lambda x: ek.cast(ek.logical_not(ek.greater(x, 0.5)), ek.float32))
    assert "not_compare" not in details and "LogicalNot" in ts
    # not(x == y) -> x != y holds for floats too (NaN included)
    ts, details = _arith(lambda x: ek.cast(ek.logical_not(ek.equal(x, 1.0)), ek.float32))
    assert details.get("not_compare") == 1 and "NotEqual" in ts


@pytest.mark.parametrize("reduce", [ek.reduce_mean, ek.reduce_sum])
def test_a_product_with_a_full_reduce_grad_multiplies_by_one_element(reduce):
    # the gradient of a mean/sum loss: ReduceGrad's x-sized fill goes, the bits stay (SPECIAL: nan, inf, -0)
    ts, details = _arith(lambda x: gr.gradients(reduce(ek.square(ek.tanh(x))), [x])[0])
    assert details.get("mul_reduce_grad") == 1, details


LABELS = np.array([[0.0, 1.0, 0.0], [0.25, 0.25, 0.5]], np.float32)


@pytest.mark.parametrize("loss,rule", [
    # a per-example loss's mean: its gradient reaches the backprop as expand_dims(fill, -1) * backprop
    (lambda x: ek.reduce_mean(ek.nn.softmax_cross_entropy_with_logits(labels=ek.constant(LABELS), logits=x)),
     "mul_expanded_reduce_grad"),
    (lambda x: ek.reduce_sum(ek.nn.softmax_cross_entropy_with_logits(labels=ek.constant(LABELS), logits=x)),
     "mul_expanded_reduce_grad"),
    # a reshaped loss: the fill comes back through a Reshape
    (lambda x: ek.reduce_mean(ek.reshape(ek.square(x), [6])), "mul_reshaped_reduce_grad"),
])
def test_a_product_with_a_reshaped_full_reduce_grad_multiplies_by_one_element(loss, rule):
    ts, details = _arith(lambda x: gr.gradients(loss(x), [x])[0])      # bitwise on nan, inf, -0 (SPECIAL)
    assert details.get(rule) == 1, details
    assert "ReduceGrad" not in ts


def test_a_reshaped_partial_reduce_grad_is_not_one_element():
    # a mean over one axis only: the fill holds one value per row, not one value
    ts, details = _arith(lambda x: gr.gradients(ek.reduce_mean(ek.reshape(ek.square(x), [3, 2]), axis=0), [x])[0])
    assert "mul_reshaped_reduce_grad" not in details and "ReduceGrad" in ts


def test_ones_like_of_a_small_known_shape_is_a_constant():
    ts, details = _arith(lambda x: ek.ones_like(ek.reduce_sum(x, axis=0)) * x)
    assert details.get("ones_like_small") == 1 and "OnesLike" not in ts
    ts, details = _arith(lambda x: ek.ones_like(x) * x, shape=(None, 3))     # unknown batch: a fill
    assert "ones_like_small" not in details and "OnesLike" in ts


def test_a_partial_reduce_grad_is_not_one_element():
    ts, details = _arith(lambda x: gr.gradients(ek.reduce_mean(ek.square(ek.tanh(x)), axis=0), [x])[0])
    assert "mul_reduce_grad" not in details and "ReduceGrad" in ts


@pytest.mark.parametrize("fn", [
    lambda x: x * 0.0,                                      # inf * 0 is nan
    lambda x: ek.abs(ek.abs(x)),
    lambda x: ek.log(ek.exp(x)),                            # overflow
    lambda x: x + ek.zeros((4, 2, 3)),                      # broadcasts x to a bigger shape
    lambda x: x * ek.ones((3, 2, 3)),
    lambda x: x + 0.0,                                      # -0.0 + 0.0 is +0.0: not x
    lambda x: 0.0 - x,                                      # 0.0 - 0.0 is +0.0, -(0.0) is -0.0
    lambda x: x - ek.constant(-0.0),
    lambda x: ek.pow(x, ek.constant(np.array([0.5], np.float32))),   # general pow: pow(-inf, .5) = inf
    lambda x: ek.cast(ek.cast(x, ek.int32), ek.float32),   # lossy
    lambda x: ek.cast(ek.cast(x, ek.float16), ek.float32),  # lossy
])
def test_rules_that_must_not_fire(fn):
    before = _build(fn)[0]
    ts, details = _arith(fn)
    assert details == {}, details
    assert ts == types(before)


def test_broadcast_rule_respects_unknown_dims():
    # x: (None, 3); x * ones((1, 3)) has x's shape whatever the batch: removable
    ts, details = _arith(lambda x: x * ek.ones((1, 3)), shape=(None, 3))
    assert details.get("mul_one") == 1
    # x: (None,); x * ones((3,)) would broadcast a length-1 x to 3: must stay
    g, y = _build(lambda x: x * ek.ones((3,)), shape=(None,))
    new, stats = single_pass("arithmetic", g, [y], {"x:0": np.ones(1, np.float32)})
    assert stats.changes == 0
    assert run_graph(new, [y], {"x:0": np.ones(1, np.float32)})[0].shape == (3,)


def test_unknown_rank_is_never_simplified():
    ts, details = _arith(lambda x: x * 1.0, shape=None)
    assert details == {}


def test_signed_zero_rules_with_fast_math_option():
    ts, details = _arith(lambda x: x + 0.0, value=MIXED, signed_zeros=False)
    assert details.get("add_zero") == 1
    ts, details = _arith(lambda x: 0.0 - x, value=MIXED, signed_zeros=False)
    assert details.get("zero_sub") == 1


def test_integer_identities():
    iv = np.array([[1, -2, 3], [0, 5, -7]], np.int32)
    for fn, rule in [(lambda x: x + 0, "add_zero"), (lambda x: 0 - x, "zero_sub"), (lambda x: x * 1, "mul_one"),
                     (lambda x: x - 0, "sub_zero")]:
        ts, details = _arith(fn, value=iv, dtype=ek.int32)
        assert details.get(rule) == 1, (rule, details)


def test_lossless_cast_chain_to_other_dtype():
    iv = np.array([[1, -2, 3], [0, 5, -7]], np.int8)
    ts, details = _arith(lambda x: ek.cast(ek.cast(x, ek.int32), ek.float32), value=iv, dtype=ek.int8)
    assert details.get("cast_cast") == 1 and ts.count("Cast") == 1


def test_rules_do_not_look_through_fed_tensors():
    g = gr.Graph()
    with g.as_default():
        x = gr.placeholder(ek.float32, (3,), name="x")
        n = ek.negative(x, name="n")
        y = ek.negative(n, name="y")
    feeds = {"x:0": np.ones(3, np.float32), "n:0": np.full(3, 5.0, np.float32)}
    new, stats = single_pass("arithmetic", g, ["y:0"], feeds)
    assert stats.changes == 0
    np.testing.assert_array_equal(run_graph(new, ["y:0"], feeds)[0], [-5, -5, -5])


def test_fetched_op_keeps_its_name():
    g, y = _build(lambda x: ek.multiply(x, 1.0, name="scaled"))
    new, stats = single_pass("arithmetic", g, [y])
    assert y == "scaled:0"
    assert new.get_tensor_by_name("scaled:0").op.type == "Identity"
    g, y = _build(lambda x: ek.multiply(x, x, name="sq"))
    new, _ = single_pass("arithmetic", g, [y])
    assert new.get_operation_by_name("sq").type == "Square"


def test_rule_table_is_readable():
    from graph_runtime.passes.arithmetic_rules import RULES
    names = [r.name for r in RULES]
    assert len(names) == len(set(names))
    assert all(r.doc for r in RULES)
    assert {r.name for r in RULES if not r.exact} == {"log1p", "expm1", "log_softmax"}
