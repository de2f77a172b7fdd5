"""Parsing live functions into gast trees, and unparsing trees into text.

`parse_function` returns the FunctionDef (or Lambda) of a function object
with positions that match the user's file (line and column), decorators
stripped.  `unparse` renders any gast tree as Python text.
"""
from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass

import gast

from . import origin_info, translate


class ParseError(Exception):
    """The source of an entity could not be obtained or parsed."""


@dataclass
class SourceInfo:
    filename: str
    first_lineno: int
    source: str


def _dedent(lines: list[str]) -> tuple[str, int]:
    text = "".join(lines)
    dedented = textwrap.dedent(text)
    first = next((l for l in lines if l.strip()), "")
    first_d = next((l for l in dedented.splitlines(True) if l.strip()), "")
    return dedented, len(first) - len(first_d)


def _def_block(lines: list[str], start: int) -> list[str] | None:
    """The lines of the `def` starting at `lines[start]`, found by indentation: the lines after it
    indented deeper, up to the last one holding code (what `inspect.getblock` returns, without
    tokenizing: that cost as much as parsing).  None when the first line is not a plain `def` (a
    decorator, a lambda): the caller then asks `inspect`.  A line indented less than the `def` inside
    a bracket or a string ends the block too early; the text then fails to parse and the caller falls
    back to `inspect` as well."""
    first = lines[start]
    stripped = first.lstrip()
    if not stripped.startswith(("def ", "async def ")):
        return None
    base = len(first) - len(stripped)
    last = start + 1
    for i in range(start + 1, len(lines)):
        line = lines[i]
        code = line.lstrip()
        if not code or code.startswith("#"):
            continue
        if len(line) - len(code) <= base:
            break
        last = i + 1
    return lines[start:last]


def _source_lines(fn) -> tuple[list[str], int, bool]:
    """(`inspect.getsourcelines(fn)`, whether the fast `_def_block` found them)."""
    fn = inspect.unwrap(fn)
    if fn.__name__ != "<lambda>":
        all_lines, start = inspect.findsource(fn)
        block = _def_block(all_lines, start)
        if block is not None:
            return block, start + 1, True
    lines, lineno = inspect.getsourcelines(fn)
    return lines, lineno, False


def parse_function(fn) -> tuple[gast.AST, SourceInfo]:
    """Returns (FunctionDef or Lambda node, SourceInfo) for a Python function."""
    try:
        lines, lineno, fast = _source_lines(fn)
        filename = inspect.getsourcefile(fn) or fn.__code__.co_filename
    except (OSError, TypeError) as e:
        raise ParseError(f"source code of {fn.__qualname__} is not available ({e})") from None
    is_lambda = fn.__name__ == "<lambda>"
    text, col = _dedent(lines)
    try:
        tree = _parse_in_place(lines, lineno, col, text, is_lambda)
    except ParseError:
        if not fast:
            raise
        lines, lineno = inspect.getsourcelines(fn)  # the fast block was cut short
        text, col = _dedent(lines)
        tree = _parse_in_place(lines, lineno, col, text, is_lambda)
    info = SourceInfo(filename, lineno, text)
    if is_lambda:
        return _find_lambda(tree, fn), info
    for node in tree.body:
        if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef)) and node.name == fn.__name__:
            node.decorator_list = []
            return node, info
    raise ParseError(f"could not find the definition of {fn.__qualname__} in its source")


def _parse_in_place(lines: list[str], lineno: int, col: int, text: str, is_lambda: bool) -> gast.Module:
    """The tree of `lines` (starting at line `lineno` of their file, indented by `col`) with the positions
    the nodes have in the file.

    A def is parsed where it stands: its lines behind `lineno - 1` empty lines, and when indented, inside
    an `if 1:` (so the parser accepts the indentation and columns need no shifting either): no pass over
    the tree moves positions afterwards, and a multi-line string keeps the indentation of its lines, as
    the running function has it.  A lambda's lines (a fragment of a larger expression) are parsed
    dedented, trimmed until they parse (`_parse_text`), and shifted."""
    if is_lambda:
        tree = _parse_text(text, is_lambda)
        origin_info.shift(tree, lineno - 1, col)
        return tree
    body = "".join(lines)
    if col == 0:
        return _parse_text("\n" * (lineno - 1) + body, False)
    if lineno < 2:
        raise ParseError("an indented definition on the first line of its file")
    tree = _parse_text("\n" * (lineno - 2) + "if 1:\n" + body, False)
    if len(tree.body) != 1 or not isinstance(tree.body[0], gast.If):
        raise ParseError("source does not parse")
    tree.body = tree.body[0].body
    return tree


def _parse_text(text: str, is_lambda: bool) -> gast.Module:
    try:
        return translate.parse(text)
    except SyntaxError:
        if not is_lambda:
            raise ParseError("source does not parse") from None
    # A lambda's source lines may be a fragment of a larger expression: trim
    # trailing characters until the prefix parses.
    stripped = text.rstrip()
    for cut in range(len(stripped), 0, -1):
        try:
            return translate.parse(stripped[:cut])
        except SyntaxError:
            continue
    raise ParseError("lambda source does not parse")


def _find_lambda(tree: gast.AST, fn) -> gast.Lambda:
    code = fn.__code__
    lambdas = [n for n in gast.walk(tree) if isinstance(n, gast.Lambda)]
    args = list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount])
    cands = [l for l in lambdas if l.lineno == code.co_firstlineno
             and [a.id for a in l.args.args + l.args.kwonlyargs] == args]
    if len(cands) != 1:
        raise ParseError(f"could not uniquely identify the lambda at line {code.co_firstlineno}")
    return cands[0]


def unparse(node) -> str:
    """Python source text of a gast node or list of nodes."""
    if isinstance(node, (list, tuple)):
        return "\n".join(unparse(n) for n in node)
    py = translate.to_ast(node, fill_positions=True)
    try:
        return ast.unparse(py)
    except AttributeError:  # Python < 3.9
        import astunparse
        return astunparse.unparse(py).strip()
