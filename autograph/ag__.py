"""The runtime operators that converted code calls as `ag__.NAME` (explicit re-exports).

Generated code only ever refers to the names in `__all__` and to
`converted_call`: `impl/api.py` builds the `ag__` namespace from this list plus
its own `converted_call` (which converts the functions it calls, so it sits
above this module).
"""
from .operators.control_flow import for_stmt, if_exp, if_stmt, while_stmt  # noqa: F401
from .operators.data_structures import list_append, list_stack  # noqa: F401
from .operators.exceptions import assert_stmt  # noqa: F401
from .operators.logical import and_, eq, not_, not_eq, or_  # noqa: F401
from .operators.py_builtins import (abs_, enumerate_, float_, int_, len_,  # noqa: F401
                                    range_, zip_)
from .operators.variables import (Undefined, UndefinedReturnValue, ldu, retval,  # noqa: F401
                                  set_attr, set_item)

__all__ = ["for_stmt", "if_exp", "if_stmt", "while_stmt", "list_append", "list_stack", "assert_stmt", "and_", "eq",
           "not_", "not_eq", "or_", "abs_", "enumerate_", "float_", "int_", "len_", "range_", "zip_", "Undefined",
           "UndefinedReturnValue", "ldu", "retval", "set_attr", "set_item"]
