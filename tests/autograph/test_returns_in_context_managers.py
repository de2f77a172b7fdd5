"""`return` inside `with` blocks under staged `if`s (TF's reference tests of multiple returns), and TF's
wording of the errors its reference tests match."""
import pytest

import eager as ek
from fidelity_helpers import assert_agree
from tracing import function


def nested_ifs_and_context_managers(x):
    with ek.name_scope(""):
        if x > 0:
            if x < 5:
                with ek.name_scope(""):
                    return x
            else:
                return x * x
        else:
            return x * x * x


def return_with_default_in_context_manager(x):
    with ek.name_scope(""):
        if x > 0:
            return 1
        return 0


def unreachable_return(x):
    with ek.name_scope(""):
        if x > 0:
            return x
        else:
            return x * x
    return x * x * x


@pytest.mark.parametrize("x", [0, 3, 5])
def test_nested_ifs_and_context_managers(x):
    assert_agree(nested_ifs_and_context_managers, x)


@pytest.mark.parametrize("x", [0, 1])
def test_return_with_default_in_context_manager(x):
    assert_agree(return_with_default_in_context_manager, x)


@pytest.mark.parametrize("x", [-2, 2])
def test_unreachable_return_after_a_with(x):
    assert_agree(unreachable_return, x)


def possibly_unassigned(x):
    if x > 0:
        i = 1
    return i


def test_use_before_assignment_has_tf_wording():
    with pytest.raises(UnboundLocalError, match="'i' is used before assignment"):
        function(possibly_unassigned)(0)


def fill_in_loop(n):
    y = {}
    for i in ek.range(n):
        y["a"] = i
    return y["a"]


def test_zero_iterations_initializing_a_key_has_tf_wording():
    assert int(function(fill_in_loop)(ek.constant(2))) == 1
    with pytest.raises(ek.errors.InvalidArgumentError,
                       match=r"loop must iterate at least once to initialize y\['a'\]"):
        function(fill_in_loop)(ek.constant(0))
