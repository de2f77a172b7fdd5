"""Shared lowering of jumps (`break`, `continue`, `return`) into flags.

A jump statement is replaced by assignments (`break_ = True`, or
`do_return = True; retval_ = value`); the statements after anything that may
jump are guarded by `if not <flag>:`.  When one branch of an `if` always
jumps, the rest of the block moves into the other branch instead of being
guarded, which keeps the generated code shorter and lets both branches of a
staged `cond` define the same variables (e.g. `if x: return 1` / `return 2`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import gast

from ..pyct import anno, templates
from ..pyct.anno import Key

_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef, gast.Lambda)
_LOOPS = (gast.While, gast.For, gast.AsyncFor)


@dataclass
class JumpSpec:
    """How to lower one kind of jump."""

    kind: type                                   # gast.Break / Continue / Return
    replacement: Callable[[gast.stmt], list]     # statements replacing a jump
    flag: str                                    # the flag guarding the rest
    into_loops: bool                             # True for return only
    on_loop: Optional[Callable[[gast.stmt], None]] = None  # adds `not flag` to a loop test


def _children_blocks(s) -> list[list]:
    if isinstance(s, gast.Try):
        return [s.body, s.orelse, s.finalbody] + [h.body for h in s.handlers]
    return [getattr(s, f) for f in ("body", "orelse") if isinstance(getattr(s, f, None), list)]


def may_jump(stmts: list, spec: JumpSpec) -> bool:
    for s in stmts:
        if isinstance(s, spec.kind):
            return True
        if isinstance(s, _SCOPES) or (isinstance(s, _LOOPS) and not spec.into_loops):
            continue
        if any(may_jump(b, spec) for b in _children_blocks(s)):
            return True
    return False


def always_jumps(stmts: list, spec: JumpSpec) -> bool:
    for s in stmts:
        if isinstance(s, spec.kind):
            return True
        if isinstance(s, gast.If) and always_jumps(s.body, spec) and always_jumps(s.orelse, spec):
            return True
        if isinstance(s, gast.With) and always_jumps(s.body, spec):     # its body runs once, in full
            return True
        if isinstance(s, gast.Try) and (always_jumps(s.finalbody, spec) or (
                (always_jumps(s.body, spec) or always_jumps(s.orelse, spec))
                and all(always_jumps(h.body, spec) for h in s.handlers))):
            return True
    return False


def guard(flag: str, stmts: list) -> list:
    return templates.replace("if not flag:\n    body", flag=flag, body=stmts)


def lower_block(stmts: list, spec: JumpSpec) -> list:
    out: list = []
    for i, s in enumerate(stmts):
        rest = list(stmts[i + 1:])
        if isinstance(s, spec.kind):
            return out + spec.replacement(s)
        if not may_jump([s], spec):
            out.append(s)
            continue
        if isinstance(s, gast.If):
            ab, ao = always_jumps(s.body, spec), always_jumps(s.orelse, spec)
            if ab and not ao and rest:
                s.orelse, rest = s.orelse + rest, []
            elif ao and not ab and rest:
                s.body, rest = s.body + rest, []
            s.body = lower_block(s.body, spec)
            s.orelse = lower_block(s.orelse, spec)
            out.append(s)
            if ab and ao:
                return out
        elif isinstance(s, _LOOPS):
            s.body = lower_block(s.body, spec)
            if spec.on_loop is not None:
                spec.on_loop(s)
            out.append(s)
        else:  # with, try
            if isinstance(s, gast.Try):
                s.body = lower_block(s.body, spec)
                s.orelse = lower_block(s.orelse, spec)
                s.finalbody = lower_block(s.finalbody, spec)
                for h in s.handlers:
                    h.body = lower_block(h.body, spec)
            else:
                s.body = lower_block(s.body, spec)
            out.append(s)
        if rest:
            out.extend(guard(spec.flag, lower_block(rest, spec)))
        return out
    return out


def add_flag_to_while(loop: gast.While, flag: str) -> None:
    """`while not flag and test:`; the flag is recorded (anno JUMP_FLAGS) so the
    runtime can tell a test made symbolic by a jump from one whose variables
    changed type."""
    loop.test = and_not_flag(flag, loop.test)
    anno.set_(loop, Key.JUMP_FLAGS, tuple(anno.get(loop, Key.JUMP_FLAGS, ())) + (flag,))


def and_not_flag(flag: str, test: Optional[gast.expr]) -> gast.expr:
    """`not flag and test` (or just `not flag`)."""
    if test is None:
        return templates.replace_as_expression("not flag", flag=flag)
    return templates.replace_as_expression("not flag and test", flag=flag, test=test)
