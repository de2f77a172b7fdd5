"""Lists: `l.append(x)` statements become explicit updates of `l`.

Before:
    for i in range(n):
        out.append(i * 2)

After:
    for i in range(n):
        out = ag__.list_append(out, i * 2)

On a Python list, `list_append` appends in place and returns the same list,
so plain-Python behaviour (including aliasing) is unchanged.  Because `out`
is now visibly assigned, it becomes a loop variable; a staged loop turns it
into a tensor list (TensorArray) and the variable is the stacked tensor
after the loop (TensorFlow raises InaccessibleTensorError here instead).
Only `name.append(value)` used as a statement is rewritten, and only when
`name` is a local variable of the function (a parameter or assigned in it):
assigning a closure or global list would make it local.
"""
from __future__ import annotations

import gast

from ..pyct import origin_info, templates, transformer
from ..static_analysis import activity


class ListTransformer(transformer.Base):

    def __init__(self, ctx, fn_node):
        super().__init__(ctx)
        self.fn_node = fn_node
        self._local_names = None

    @property
    def local_names(self) -> set[str]:
        """The function's locals, computed at the first `x.append(...)` statement (a walk of the whole
        function: most functions have no such statement)."""
        if self._local_names is None:
            g, nl = activity.declared_nonlocal(self.fn_node)
            self._local_names = (activity.of(self.fn_node.body).writes | activity.params_of(self.fn_node)) - g - nl
        return self._local_names

    def visit_Expr(self, node):
        call = node.value
        if (isinstance(call, gast.Call) and isinstance(call.func, gast.Attribute)
                and call.func.attr == "append" and isinstance(call.func.value, gast.Name)
                and len(call.args) == 1 and not call.keywords
                and not isinstance(call.args[0], gast.Starred)
                and call.func.value.id in self.local_names):
            target = call.func.value.id
            new = templates.replace("target = ag__.list_append(target, value)",
                                    target=target, value=call.args[0], ag__=self.ctx.ag_name)
            origin_info.inherit(new, node)
            return new
        return node


def transform(fn_node, ctx):
    if isinstance(fn_node, gast.Lambda):
        return fn_node
    return ListTransformer(ctx, fn_node).transform(fn_node)
