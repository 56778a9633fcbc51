"""Spec strings: ``name(key=value, ...)``, parsed safely with :mod:`ast` and written back canonically.

A spec string names a perturbation (``"obs_noise(std=0.1)"``) or a schedule
(``"starting(episode=10) & prob(p=0.5)"``). Values are Python literals (numbers, strings, booleans,
``None``, lists, tuples, dicts); schedules nest as calls and combine with ``&``, ``|`` and ``~``. Nothing is
evaluated: the text is parsed, never executed.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rlwrappers.error import SpecSyntaxError

__all__ = ["Call", "format_call", "format_value", "parse"]


@dataclass(frozen=True)
class Call:
    """A parsed ``name(args..., key=value...)``; operators parse as calls named ``&``, ``|`` and ``~``."""

    name: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        if self.name in ("&", "|"):
            return f" {self.name} ".join(repr(a) for a in self.args)
        if self.name == "~":
            return f"~{self.args[0]!r}"
        inner = [format_value(a) for a in self.args] + [f"{k}={format_value(v)}" for k, v in self.kwargs.items()]
        return f"{self.name}({', '.join(inner)})" if inner else self.name


def parse(text: str, *, what: str = "spec") -> Call:
    """Parses one spec string into a :class:`Call` tree.

    A bare name (``"always"``) is a call without arguments.

    Raises:
        SpecSyntaxError: the text is not a spec string; the message points at the column where parsing failed.
    """
    if not isinstance(text, str):
        raise SpecSyntaxError(f"a {what} string must be a str, received {text!r}")
    source = text.strip()
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        # Python reports an unexpected end of the text at offset 0 or past it: point at the end.
        column = (exc.offset or 0) - 1
        if not 0 <= column < len(source):
            column = len(source)
        raise SpecSyntaxError(_pointed(what, source, column, exc.msg)) from None
    node = _convert(tree.body, source, what)
    if isinstance(node, str):
        return Call(node)
    if not isinstance(node, Call):
        raise SpecSyntaxError(_pointed(what, source, 0, "expected `name(key=value, ...)`"))
    return node


def _pointed(what: str, source: str, column: int, reason: str) -> str:
    return f"could not parse {what} {source!r} at column {column + 1}: {reason}\n    {source}\n    {' ' * column}^"


_OPERATORS: dict[type, str] = {ast.BitAnd: "&", ast.BitOr: "|"}


def _convert(node: ast.AST, source: str, what: str) -> Any:
    """Turns an expression node into literals, names (str) and :class:`Call` objects."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name):
            raise SpecSyntaxError(_pointed(what, source, node.col_offset, "a call must use a plain name"))
        args = tuple(_value(a, source, what) for a in node.args)
        kwargs: dict[str, Any] = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise SpecSyntaxError(_pointed(what, source, kw.value.col_offset - 2, "`**` is not allowed"))
            kwargs[kw.arg] = _value(kw.value, source, what)
        return Call(node.func.id, args, kwargs)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left = _as_call(_convert(node.left, source, what))
        right = _as_call(_convert(node.right, source, what))
        return Call(_OPERATORS[type(node.op)], (left, right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        return Call("~", (_as_call(_convert(node.operand, source, what)),))
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        column = getattr(node, "col_offset", 0)
        raise SpecSyntaxError(_pointed(what, source, column, f"`{ast.unparse(node)}` is not a literal value")) from None


def _as_call(value: Any) -> Any:
    return Call(value) if isinstance(value, str) else value


def _value(node: ast.AST, source: str, what: str) -> Any:
    """A call argument: a literal, or a nested call or bare name (a schedule such as ``always``)."""
    if isinstance(node, ast.Name) and node.id not in ("True", "False", "None"):
        return Call(node.id)
    return _convert(node, source, what)


def format_value(value: Any) -> str:
    """Writes a literal (or an object whose ``str`` is a spec) as it appears in a spec string."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (int, str)):
        return repr(value)
    if isinstance(value, tuple):
        inner = ", ".join(format_value(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{format_value(k)}: {format_value(v)}" for k, v in value.items()) + "}"
    return str(value)


def format_call(name: str, kwargs: Mapping[str, Any]) -> str:
    """Writes ``name(key=value, ...)``; a call without arguments is written as the bare ``name``."""
    if not kwargs:
        return name
    return f"{name}(" + ", ".join(f"{k}={format_value(v)}" for k, v in kwargs.items()) + ")"
