"""Lowers `return` anywhere (including inside loops) into flags.

Before:
    def f(n):
        for i in range(n):
            if i * i > n:
                return i
        return -1

After:
    def f(n):
        do_return = False
        retval_ = ag__.UndefinedReturnValue()
        for i in range(n):           # EXTRA_TEST: not do_return
            if i * i > n:
                retval_ = i
                do_return = True
        if not do_return:
            retval_ = -1
            do_return = True
        return ag__.retval(retval_)

Every loop that may return gets `not do_return` added to its condition, so
this also works in staged loops (TensorFlow raises NotImplementedError
there).  A function whose only `return` is its last statement is left alone.
"""
from __future__ import annotations

import gast

from ..pyct import anno, origin_info, templates, transformer
from ..pyct.anno import Key
from . import jumps


def _returns(fn_node) -> list:
    found = []

    def walk(stmts):
        for s in stmts:
            if isinstance(s, gast.Return):
                found.append(s)
            elif not isinstance(s, jumps._SCOPES):
                for b in jumps._children_blocks(s):
                    walk(b)
    walk(fn_node.body)
    return found


def needed(fn_node) -> bool:
    """Is there a `return` to lower (any but a single one that is the last statement)?"""
    if isinstance(fn_node, gast.Lambda):
        return False
    rets = _returns(fn_node)
    return bool(rets) and not (len(rets) == 1 and fn_node.body and fn_node.body[-1] is rets[0])


def transform(fn_node, ctx: transformer.Context):
    if not needed(fn_node):
        return fn_node
    rets = _returns(fn_node)
    do_return = ctx.namer.new("do_return")
    retval = ctx.namer.new("retval_")

    def replacement(s):
        value = s.value if s.value is not None else templates.literal(None)
        # The value first: if evaluating it raises (inside a `try`), no return happened.
        stmts = templates.replace("retval = value\nflag = True", flag=do_return,
                                  retval=retval, value=value)
        origin_info.inherit(stmts, s)
        return stmts

    def on_loop(loop):
        if isinstance(loop, gast.While):
            jumps.add_flag_to_while(loop, do_return)
        else:
            extra = anno.get(loop, Key.EXTRA_TEST)
            anno.set_(loop, Key.EXTRA_TEST, jumps.and_not_flag(do_return, extra))

    spec = jumps.JumpSpec(gast.Return, replacement, do_return, into_loops=True, on_loop=on_loop)
    body = fn_node.body
    docstring = []
    if body and isinstance(body[0], gast.Expr) and isinstance(body[0].value, gast.Constant) \
            and isinstance(body[0].value.value, str):
        docstring, body = [body[0]], body[1:]
    prologue = templates.replace(
        "flag = False\nretval = ag__.UndefinedReturnValue()", flag=do_return, retval=retval,
        ag__=ctx.ag_name)
    if jumps.always_jumps(body, spec):
        epilogue = templates.replace("return ag__.retval(retval_)", retval_=retval,
                                     ag__=ctx.ag_name)
    else:  # some path falls off the end: returns None unless do_return
        epilogue = templates.replace("return ag__.retval(retval_, flag)", retval_=retval,
                                     flag=do_return, ag__=ctx.ag_name)
    origin_info.inherit(prologue, fn_node.body[0])
    origin_info.inherit(epilogue, rets[-1])
    fn_node.body = docstring + prologue + jumps.lower_block(body, spec) + epilogue
    return fn_node

