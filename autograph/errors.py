"""Error messages of converted code, in one place (see TF_SEMANTICS.md).

Each helper returns an exception of the type TensorFlow raises, whose
message names the variable and ends with the user's file:line.
"""
from __future__ import annotations

from .pyct.origin_info import at_user_line


class AutoGraphError(Exception):
    """Base of autograph's own conversion errors."""


def branch_undefined(name: str, missing_branch: str) -> ValueError:
    return ValueError(at_user_line(
        f"'{name}' must also be initialized in the {missing_branch} branch"))


def branch_dtype(name: str, main, orelse) -> TypeError:
    return TypeError(at_user_line(
        f"'{name}' has {main} in the main branch, but {orelse} in the else branch"))


def branch_structure(name: str, main: str, orelse: str) -> ValueError:
    return ValueError(at_user_line(
        f"'{name}' is {main} in the main branch, but {orelse} in the else branch"))


def staged_return_error() -> ValueError:
    return ValueError(at_user_line(
        "a staged condition decides whether this function returns, so every path "
        "must return a value: the else branch must also have a return statement."))


def loop_dtype(name: str, before: str, after: str) -> TypeError:
    return TypeError(at_user_line(
        f"'{name}' has dtype {before} before the loop, but dtype {after} after one iteration"))


def loop_shape(name: str, before, after) -> ValueError:
    return ValueError(at_user_line(
        f"'{name}' has shape {before} before the loop, but shape {after} after one "
        "iteration. Use set_loop_options to set shape invariants."))


def loop_structure(name: str, before: str, after: str) -> ValueError:
    return ValueError(at_user_line(
        f"'{name}' is {before} before the loop, but {after} after one iteration"))


def loop_var_type(name: str, value) -> ValueError:
    return ValueError(at_user_line(
        f"'{name}' is a {type(value).__name__} before a staged loop; variables "
        "modified by a staged loop must be tensors, numbers or lists"))


def loop_undefined(name: str) -> ValueError:
    return ValueError(at_user_line(
        f"'{name}' is used after a staged loop but the loop body never defines it"))


def iterate_at_least_once(name: str) -> str:
    return f"loop must iterate at least once to initialize {name}"
