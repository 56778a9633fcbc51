"""Spec strings: ``name(key=value, ...)``, parsed safely with :mod:`ast` and written back canonically.

A spec string names a perturbation (``"obs_noise(std=0.1)"``) or a schedule
(``"starting(episode=10) & prob(p=0.5)"``). Values are Python literals (numbers, strings, booleans,
``None``, lists, tuples, dicts); schedules nest as calls and combine with ``&``, ``|`` and ``~``, and calls
may stand as values, also inside lists and dicts (a distribution: ``values={'gravity': uniform(8, 12)}``). Nothing is
evaluated: the text is parsed, never executed.

Hostile text is refused with a :class:`~rlwrappers.error.SpecSyntaxError` that quotes at most
:data:`QUOTED` characters of it around the failing column: texts longer than :data:`MAX_LENGTH`, nesting
deeper than :data:`MAX_DEPTH`, a keyword given twice, names that are not ASCII (Python would silently fold a
full-width ``std`` into ``std``), and ``nan`` or ``inf`` where a number belongs.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from rlwrappers.error import SpecSyntaxError

__all__ = ["MAX_DEPTH", "MAX_LENGTH", "QUOTED", "Call", "format_call", "format_value", "parse"]

#: The longest spec string accepted, in characters.
MAX_LENGTH: Final = 2000
#: The deepest nesting of calls, operators and containers accepted.
MAX_DEPTH: Final = 32
#: The most characters of a refused text an error message quotes.
QUOTED: Final = 80


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
        raise SpecSyntaxError(f"a {what} string must be a str, received {_quoted(repr(text))}")
    source = text.strip()
    if len(source) > MAX_LENGTH:
        raise SpecSyntaxError(_pointed(what, source, MAX_LENGTH, f"longer than {MAX_LENGTH} characters"))
    try:
        _check_names(source)
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        # Python reports an unexpected end of the text at offset 0 or past it: point at the end.
        column = (exc.offset or 0) - 1
        if not 0 <= column < len(source):
            column = len(source)
        raise SpecSyntaxError(_pointed(what, source, column, exc.msg)) from None
    except (RecursionError, MemoryError):
        raise SpecSyntaxError(_pointed(what, source, 0, f"nested deeper than {MAX_DEPTH} levels")) from None
    _check_depth(tree.body, source, what)
    node = _convert(tree.body, source, what)
    if isinstance(node, str):
        return Call(node)
    if not isinstance(node, Call):
        raise SpecSyntaxError(_pointed(what, source, 0, "expected `name(key=value, ...)`"))
    return node


def _quoted(text: str) -> str:
    return text if len(text) <= QUOTED else f"{text[: QUOTED - 3]}..."


def _pointed(what: str, source: str, column: int, reason: str) -> str:
    """The message of a failure at ``column``, quoting at most :data:`QUOTED` characters around it."""
    start = min(max(column - QUOTED // 2, 0), max(len(source) - QUOTED, 0))
    excerpt = source[start : start + QUOTED]
    left, right = ("..." if start else ""), ("..." if start + QUOTED < len(source) else "")
    caret = " " * (len(left) + column - start) + "^"
    return (
        f"could not parse {what} {_quoted(source)!r} at column {column + 1}: {reason}\n"
        f"    {left}{excerpt}{right}\n    {caret}"
    )


def _check_names(source: str) -> None:
    """Refuses names that are not ASCII: Python folds them (NFKC), so a full-width ``std`` would read ``std``."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type == tokenize.NAME and not token.string.isascii():
                raise SyntaxError(f"`{token.string}` is not an ASCII name", ("<spec>", 1, token.start[1] + 1, source))
    except (tokenize.TokenError, IndentationError):
        return  # unbalanced text: ast.parse says where


def _check_depth(node: ast.AST, source: str, what: str, depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        column = getattr(node, "col_offset", 0)
        raise SpecSyntaxError(_pointed(what, source, column, f"nested deeper than {MAX_DEPTH} levels"))
    for child in ast.iter_child_nodes(node):
        _check_depth(child, source, what, depth + 1)


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
            if kw.arg in kwargs:
                raise SpecSyntaxError(_pointed(what, source, kw.col_offset, f"`{kw.arg}` is given twice"))
            kwargs[kw.arg] = _value(kw.value, source, what)
        return Call(node.func.id, args, kwargs)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left = _as_call(_convert(node.left, source, what))
        right = _as_call(_convert(node.right, source, what))
        return Call(_OPERATORS[type(node.op)], (left, right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
        return Call("~", (_as_call(_convert(node.operand, source, what)),))
    if isinstance(node, (ast.List, ast.Tuple, ast.Dict)) and _holds_call(node):
        return _container(node, source, what)
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        for name in ast.walk(node):
            if isinstance(name, ast.Name) and name.id.lower() in _NOT_NUMBERS:
                raise SpecSyntaxError(
                    _pointed(what, source, name.col_offset, f"`{name.id}` is not a finite number")
                ) from None
        column = getattr(node, "col_offset", 0)
        raise SpecSyntaxError(_pointed(what, source, column, f"`{ast.unparse(node)}` is not a literal value")) from None


_NOT_NUMBERS: Final = frozenset({"nan", "inf", "infinity"})


def _container(node: ast.List | ast.Tuple | ast.Dict, source: str, what: str) -> Any:
    """A list, tuple or dict that holds calls (distributions), its items converted one by one."""
    if not isinstance(node, ast.Dict):
        items = [_value(item, source, what) for item in node.elts]
        return items if isinstance(node, ast.List) else tuple(items)
    out = {}
    for key, item in zip(node.keys, node.values, strict=True):
        if key is None:
            raise SpecSyntaxError(_pointed(what, source, item.col_offset - 2, "`**` is not allowed"))
        name = _convert(key, source, what)
        if isinstance(name, (Call, list, dict)):
            raise SpecSyntaxError(_pointed(what, source, key.col_offset, "a key must be a literal"))
        out[name] = _value(item, source, what)
    return out


def _holds_call(node: ast.AST) -> bool:
    """Whether a container holds a call (a distribution such as ``uniform(8, 12)``) at any depth."""
    return any(isinstance(child, ast.Call) for child in ast.walk(node))


def _as_call(value: Any) -> Any:
    return Call(value) if isinstance(value, str) else value


def _value(node: ast.AST, source: str, what: str) -> Any:
    """A call argument: a literal, or a nested call or bare name (a schedule such as ``always``)."""
    if isinstance(node, ast.Name) and node.id.lower() in _NOT_NUMBERS:
        raise SpecSyntaxError(_pointed(what, source, node.col_offset, f"`{node.id}` is not a finite number"))
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
