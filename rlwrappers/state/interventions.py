"""Interventions on a game's or simulator's state: named, documented assignments written as data.

An intervention is a direct change made to a game's state by assigning values to some of its variables
(Definition 3.1 of *Measuring Offline Robustness in Reinforcement Learning*); the game then plays on from the
changed state, which carries the change. Here an :class:`Intervention` is data, not code: a name, the game it
is for, a one-line doc and a list of :class:`Assignment` objects, each a path into the game's JSON state
(``"paddle_width"``, ``"bricks[row=2].alive"``, ``"shields[*].x"``) with an operation:

=========  ========================  =====================================================================
op         one-line form             effect on the value(s) the path selects
=========  ========================  =====================================================================
set        ``path=value``            replaces it by ``value`` (a JSON value; a bare word is a string)
add        ``path+=x``, ``path-=x``  adds ``x`` to a number
scale      ``path*=x``               multiplies a number by ``x`` (integers are rounded to the nearest)
delete     ``del path``              removes the selected items from their list (the path ends in ``[...]``)
reverse    ``reverse path``          reverses a list (flips a sprite's rows)
=========  ========================  =====================================================================

A path is a field name followed by ``.field`` and list selectors: ``[3]`` (one item), ``[*]`` (every item)
and ``[field=value]`` (every item whose ``field`` equals ``value``; at least one must). :func:`apply` returns
the new state and never edits the one it is given. An intervention that names its game is checked against
that game's state schema (:class:`Schema`) when it is built: unknown fields raise
:class:`~rlwrappers.error.InvalidArgument` with a suggestion, values of the wrong type
:class:`~rlwrappers.error.InvalidType`, both naming the path.

This module is the language; the paper's catalogues of the Toybox games live beside the games
(:mod:`rlwrappers.envs.toybox.interventions`), and :class:`rlwrappers.wrappers.state.Intervene` makes
interventions on a running env through the state documents of :mod:`rlwrappers.state.documents`.
docs/interventions.md has the tables and the ALE games' RAM addresses.

Example:
    >>> from rlwrappers.state.interventions import Intervention, apply
    >>> wide = Intervention.parse("paddle_width=40")
    >>> state = {"paddle_width": 24.0, "paddle_speed": 4.0}
    >>> apply(state, wide), state["paddle_width"]
    ({'paddle_width': 40, 'paddle_speed': 4.0}, 24.0)
"""

from __future__ import annotations

import copy
import functools
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from rlwrappers import _optional
from rlwrappers.error import InvalidArgument, InvalidType, SpecSyntaxError, UnknownName, did_you_mean

__all__ = [
    "GAMES",
    "OPS",
    "Assignment",
    "Intervention",
    "Schema",
    "apply",
    "as_intervention",
    "check_game",
    "is_name",
]

#: The Toybox games, by their Toybox names.
GAMES: Final = ("breakout", "amidar", "space_invaders")
#: The operations an assignment can make.
OPS: Final = ("set", "add", "scale", "delete", "reverse")
#: A field every state of the game has and no other game's state has (a cheap check that a state fits).
_SIGNATURE: Final = {"breakout": "bricks", "amidar": "board", "space_invaders": "shields"}

# Path tokens: (kind, a, b). A key ("paddle"), an index ([3]), every item ([*]), or a filter ([row=2]).
_KEY, _INDEX, _ALL, _WHERE = 0, 1, 2, 3
Token = tuple[int, Any, Any]

_NAME = re.compile(r"[A-Za-z_]\w*")
_WORD = re.compile(r"[A-Za-z_][\w.-]*")
_SELECTOR = re.compile(r"\[\s*(?:(\d+)|(\*)|([A-Za-z_]\w*)\s*=\s*([^\]]*?))\s*\]")


def is_name(text: str) -> bool:
    """Whether ``text`` is an intervention's name (a word such as ``drop_row_0``) rather than a one-line form."""
    return bool(_WORD.fullmatch(text))


# -- paths ------------------------------------------------------------------------------------------------
def _literal(text: str, what: str) -> Any:
    """A JSON value, or a bare word read as a string (``Empty``); raises SpecSyntaxError otherwise."""
    text = text.strip()
    try:
        return json.loads(text)
    except ValueError:
        if _NAME.fullmatch(text):
            return text
    raise SpecSyntaxError(f'could not read {what} {text!r}: write a JSON value (40, 2.5, true, "Empty", [1, 2])')


@functools.lru_cache(maxsize=4096)
def _tokens(path: str) -> tuple[Token, ...]:
    """Parses a path such as ``bricks[row=2].alive`` into tokens; raises SpecSyntaxError naming the column."""
    if not isinstance(path, str):
        raise InvalidType(f"a path must be a string such as 'paddle.position.x', received {path!r}")
    out: list[Token] = []
    i, n = 0, len(path)
    while i < n:
        if path[i] == "[":
            match = _SELECTOR.match(path, i)
            if match is None:
                raise SpecSyntaxError(_pointed(path, i, "a selector is [3], [*] or [field=value]"))
            index, star, key, value = match.groups()
            if index is not None:
                out.append((_INDEX, int(index), None))
            elif star is not None:
                out.append((_ALL, None, None))
            else:
                out.append((_WHERE, key, _literal(value, f"the filter value in path {path!r}")))
            i = match.end()
            continue
        if out:
            if path[i] != ".":
                raise SpecSyntaxError(_pointed(path, i, "expected `.field` or `[...]`"))
            i += 1
        match = _NAME.match(path, i)
        if match is None:
            raise SpecSyntaxError(_pointed(path, i, "expected a field name"))
        out.append((_KEY, match.group(), None))
        i = match.end()
    if not out or out[0][0] != _KEY:
        raise SpecSyntaxError(_pointed(path, 0, "a path starts with a field name"))
    return tuple(out)


def _pointed(text: str, column: int, reason: str) -> str:
    return f"could not read {text!r} at column {column + 1}: {reason}\n    {text}\n    {' ' * column}^"


def _format_token(token: Token) -> str:
    kind, a, b = token
    if kind == _KEY:
        return f".{a}"
    if kind == _INDEX:
        return f"[{a}]"
    if kind == _ALL:
        return "[*]"
    return f"[{a}={_format_value(b)}]"


def _prefix(tokens: Sequence[Token]) -> str:
    return "".join(_format_token(t) for t in tokens).lstrip(".") or "the state"


def _format_value(value: Any) -> str:
    if isinstance(value, str) and _NAME.fullmatch(value) and value not in ("true", "false", "null"):
        return value
    return json.dumps(value)


def _jsonable(name: str, value: Any) -> Any:
    """A JSON-ready copy of ``value`` (numpy scalars become Python numbers), or raises naming ``name``."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidArgument(f"`{name}` must be finite, received {value!r}")
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(f"{name}[{i}]", v) for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        out = {}
        for key, v in value.items():
            if not isinstance(key, str):
                raise InvalidType(f"`{name}` keys must be strings, received {key!r}")
            out[key] = _jsonable(f"{name}[{key!r}]", v)
        return out
    raise InvalidType(f"`{name}` must be a JSON value (number, string, bool, None, list, dict), received {value!r}")


# -- assignments and interventions ------------------------------------------------------------------------
@dataclass(frozen=True)
class Assignment:
    """One assignment to a game's state: a path, an operation (one of :data:`OPS`) and its value.

    Args:
        path: where in the state, e.g. ``"paddle.position.x"``, ``"bricks[row=2].alive"``, ``"enemies[3]"``.
        op: ``"set"`` (default), ``"add"``, ``"scale"``, ``"delete"`` or ``"reverse"``.
        value: the JSON value to set, or the number to add or scale by; None for delete and reverse.

    Example:
        >>> from rlwrappers.state.interventions import Assignment
        >>> str(Assignment("shields[*].x", "add", -6)), str(Assignment.parse("del enemies[2]"))
        ('shields[*].x-=6', 'del enemies[2]')
    """

    path: str
    op: str = "set"
    value: Any = None

    def __post_init__(self) -> None:
        tokens = _tokens(self.path)
        if self.op not in OPS:
            raise UnknownName(
                f"`op` must be one of {list(OPS)}, received {self.op!r}.{did_you_mean(str(self.op), OPS)}"
            )
        if self.op == "set":
            object.__setattr__(self, "value", _jsonable(f"value of {self.path}", self.value))
        elif self.op in ("add", "scale"):
            value = self.value.item() if isinstance(self.value, np.generic) else self.value
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise InvalidType(f"`{self.op}` on `{self.path}` needs a number, received {self.value!r}")
            if not math.isfinite(value):
                raise InvalidArgument(f"`{self.op}` on `{self.path}` needs a finite number, received {value!r}")
            object.__setattr__(self, "value", value)
        else:
            if self.value is not None:
                raise InvalidArgument(f"`{self.op}` takes no value, received {self.value!r} for `{self.path}`")
            if self.op == "delete" and tokens[-1][0] == _KEY:
                raise InvalidArgument(
                    f"`del {self.path}`: delete removes list items, so the path must end in [i], [*] or "
                    f"[field=value]; a game's fields cannot be deleted"
                )

    @classmethod
    def parse(cls, line: str) -> Assignment:
        """Reads one line: ``path=value``, ``path+=x``, ``path-=x``, ``path*=x``, ``del path`` or ``reverse path``.

        Raises:
            SpecSyntaxError: the line has none of these forms, or its path or value cannot be read.
        """
        if not isinstance(line, str):
            raise InvalidType(f"an assignment must be a string such as 'paddle_width=40', received {line!r}")
        text = line.strip()
        for word, op in (("del ", "delete"), ("reverse ", "reverse")):
            if text.startswith(word):
                return cls(text[len(word) :].strip(), op)
        depth = 0
        for column, char in enumerate(text):
            depth += {"[": 1, "]": -1}.get(char, 0)
            if depth < 0:
                raise SpecSyntaxError(_pointed(text, column, "this `]` closes nothing"))
        if depth:
            raise SpecSyntaxError(_pointed(text, text.rfind("["), "this `[` is not closed"))
        split = _split(text)
        if split is None:
            raise SpecSyntaxError(
                f"could not read assignment {text!r}: write `path=value`, `path+=x`, `path-=x`, `path*=x`, "
                f"`del path` or `reverse path`"
            )
        path, op, raw = split
        value = _literal(raw, f"the value of {path!r}")
        if op == "=":
            return cls(path, "set", value)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidType(f"`{op}` on `{path}` needs a number, received {value!r}")
        if op == "-=":
            return cls(path, "add", -value)
        return cls(path, "add" if op == "+=" else "scale", value)

    @property
    def tokens(self) -> tuple[Token, ...]:
        """The parsed path."""
        return _tokens(self.path)

    def __str__(self) -> str:
        if self.op in ("delete", "reverse"):
            return f"{'del' if self.op == 'delete' else 'reverse'} {self.path}"
        if self.op == "add":
            return f"{self.path}-={_format_value(-self.value)}" if self.value < 0 else f"{self.path}+={self.value!r}"
        if self.op == "scale":
            return f"{self.path}*={self.value!r}"
        return f"{self.path}={_format_value(self.value)}"

    def to_dict(self) -> dict[str, Any]:
        """The assignment as a JSON-ready dict that :meth:`from_dict` reads back."""
        out: dict[str, Any] = {"path": self.path, "op": self.op}
        if self.op in ("set", "add", "scale"):
            out["value"] = copy.deepcopy(self.value)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Assignment:
        """Builds an assignment from :meth:`to_dict`'s dict."""
        if not isinstance(data, Mapping) or "path" not in data:
            raise InvalidType(f"an assignment dict needs `path` (and `op`, `value`), received {data!r}")
        unknown = set(data) - {"path", "op", "value"}
        if unknown:
            key = sorted(unknown)[0]
            raise InvalidArgument(
                f"an assignment dict has `path`, `op` and `value`, received `{key}`."
                f"{did_you_mean(key, ['path', 'op', 'value'])}"
            )
        return cls(data["path"], data.get("op", "set"), data.get("value"))


def _split(text: str) -> tuple[str, str, str] | None:
    """Splits ``path op value`` at the first operator outside brackets; None if there is none."""
    depth = 0
    for i, char in enumerate(text):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif depth == 0 and char == "=":
            if i > 0 and text[i - 1] in "+-*":
                return text[: i - 1].strip(), text[i - 1 : i + 1], text[i + 1 :]
            return text[:i].strip(), "=", text[i + 1 :]
    return None


def _assignment(item: Any) -> Assignment:
    if isinstance(item, Assignment):
        return item
    if isinstance(item, str):
        return Assignment.parse(item)
    if isinstance(item, Mapping):
        return Assignment.from_dict(item)
    raise InvalidType(
        f"an assignment must be an Assignment, a line such as 'paddle_width=40' or a dict, received {item!r}"
    )


@dataclass(frozen=True)
class Intervention:
    """A named, documented set of assignments to one game's state, made in order.

    Build one with :meth:`parse` (``"paddle_width=40; paddle_speed*=2"``) or
    :func:`~rlwrappers.envs.toybox.interventions.define`, or take one from
    :func:`~rlwrappers.envs.toybox.interventions.catalogue`. With a ``game``, every path and value is checked
    against that game's state schema here, so a mistake fails when the intervention is built, not when it is
    applied.

    Args:
        name: what logs and listings call it.
        game: the Toybox game it is for (one of :data:`GAMES`), or None to check only against the states it
            is applied to.
        doc: one line saying what it does.
        assignments: :class:`Assignment` objects, one-line forms (``"bricks[row=0].alive=false"``) or their
            dicts; at least one.

    Raises:
        InvalidArgument: a path names a field the game's state does not have (the message suggests one).
        InvalidType: a value has a type the field cannot hold.
        UnknownName: ``game`` is not one of :data:`GAMES`.
    """

    name: str
    game: str | None
    doc: str
    assignments: tuple[Assignment, ...]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():
            raise InvalidType(f"`name` must be a non-empty string, received {self.name!r}")
        if self.game is not None:
            check_game(self.game)
        if not isinstance(self.doc, str):
            raise InvalidType(f"`doc` must be a string, received {self.doc!r}")
        items: Any = self.assignments
        if isinstance(items, (str, Assignment, Mapping)):
            items = (items,)
        if not isinstance(items, Iterable):
            raise InvalidType(f"`assignments` must be a list of assignments, received {items!r}")
        assignments = tuple(_assignment(a) for a in items)
        if not assignments:
            raise InvalidArgument(f"intervention `{self.name}` needs at least one assignment, received none")
        object.__setattr__(self, "assignments", assignments)
        if self.game is not None:
            schema = Schema.of(self.game)
            for a in assignments:
                schema.check(a)

    @classmethod
    def parse(cls, text: str, *, game: str | None = None, name: str | None = None, doc: str = "") -> Intervention:
        """Reads assignments in their one-line forms, separated by ``;``.

        Args:
            text: e.g. ``"paddle_width=40"`` or ``"shields[*].x+=6; reverse shields[*].data"``.
            game: the game to check it against (recommended), or None.
            name: its name; the text itself by default.
            doc: one line saying what it does.

        Example:
            >>> from rlwrappers.state.interventions import Intervention
            >>> str(Intervention.parse("paddle_width = 40;paddle_speed*=2", game="breakout"))
            'paddle_width=40; paddle_speed*=2'
        """
        if not isinstance(text, str):
            raise InvalidType(f"an intervention must be a string such as 'paddle_width=40', received {text!r}")
        lines = [line for line in text.split(";") if line.strip()]
        assignments = tuple(Assignment.parse(line) for line in lines)
        if name is None:
            name = "; ".join(str(a) for a in assignments) or text
        return cls(name, game, doc, assignments)

    def __str__(self) -> str:
        return "; ".join(str(a) for a in self.assignments)

    def to_dict(self) -> dict[str, Any]:
        """The intervention as a JSON-ready dict that :meth:`from_dict` reads back."""
        return {
            "name": self.name,
            "game": self.game,
            "doc": self.doc,
            "assignments": [a.to_dict() for a in self.assignments],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Intervention:
        """Builds an intervention from :meth:`to_dict`'s dict."""
        if not isinstance(data, Mapping):
            raise InvalidType(f"an intervention dict must be a dict, received {data!r}")
        known = ("name", "game", "doc", "assignments")
        for key in data:
            if key not in known:
                raise InvalidArgument(
                    f"an intervention dict has no key `{key}`; keys: {list(known)}.{did_you_mean(key, known)}"
                )
        if "name" not in data or "assignments" not in data:
            raise InvalidArgument(f"an intervention dict needs `name` and `assignments`, received {sorted(data)}")
        return cls(data["name"], data.get("game"), data.get("doc", ""), data["assignments"])


def check_game(game: Any) -> str:
    """``game`` if it is one of :data:`GAMES`; raises naming the argument otherwise."""
    if not isinstance(game, str):
        raise InvalidType(f"`game` must be one of {list(GAMES)}, received {game!r}")
    if game not in GAMES:
        raise UnknownName(f"`game` must be one of {list(GAMES)}, received {game!r}.{did_you_mean(game, GAMES)}")
    return game


# -- the games' state schemas -----------------------------------------------------------------------------
_UINT_MAX: Final = {"uint8": 255, "uint16": 65535, "uint32": 2**32 - 1, "uint64": 2**64 - 1}
_INT_RANGE: Final = {"int8": 2**7, "int16": 2**15, "int32": 2**31, "int64": 2**63}


class Schema:
    """A game's JSON state schema (from Toybox) and the checks an assignment must pass against it."""

    _cache: dict[str, Schema] = {}

    def __init__(self, game: str, root: dict[str, Any], label: str | None = None) -> None:
        self.game = game
        self.root = root
        #: What messages call a state: ``a breakout state``.
        self.label = label or f"a {game} state"

    @classmethod
    def of_document(cls, name: str, root: dict[str, Any]) -> Schema:
        """The schema of an env's state document (:meth:`rlwrappers.state.documents.StateAdapter.schema`)."""
        return cls(name, root, label=_a(name) + " state")

    @classmethod
    def of(cls, game: str) -> Schema:
        """The schema of a Toybox game, read from the game once and cached."""
        schema = cls._cache.get(game)
        if schema is None:
            ctoybox = _optional.require("ctoybox", purpose="checking interventions on Toybox games")
            with ctoybox.Toybox(game) as toybox:
                schema = cls(game, toybox.schema_for_state())
            cls._cache[game] = schema
        return schema

    def alternatives(self, node: Mapping[str, Any]) -> list[Mapping[str, Any]]:
        """The plain schemas ``node`` may be: ``$ref``, ``allOf`` and ``anyOf`` resolved."""
        if "$ref" in node:
            return self.alternatives(self.root["definitions"][node["$ref"].rsplit("/", 1)[-1]])
        if "allOf" in node:
            out: list[Mapping[str, Any]] = []
            for part in node["allOf"]:
                out += self.alternatives(part)
            return out
        if "anyOf" in node:
            out = []
            for part in node["anyOf"]:
                out += self.alternatives(part)
            return out
        return [node]

    @staticmethod
    def types(node: Mapping[str, Any]) -> tuple[str, ...]:
        """The JSON types a schema node allows."""
        kind = node.get("type")
        if kind is None:
            return ()
        return (kind,) if isinstance(kind, str) else tuple(kind)

    def walk(self, assignment: Assignment, tokens: Sequence[Token]) -> list[Mapping[str, Any]]:
        """The schemas of what ``tokens`` select; raises InvalidArgument at the first step the game lacks."""
        current = self.alternatives(self.root)
        for depth, token in enumerate(tokens):
            kind, key, value = token
            nxt: list[Mapping[str, Any]] = []
            where = _prefix(tokens[:depth])
            if kind == _KEY:
                fields: list[str] = []
                for node in current:
                    properties = node.get("properties", {})
                    fields += [f for f in properties if f not in fields]
                    if key in properties:
                        nxt += self.alternatives(properties[key])
                if not nxt and not fields:
                    raise InvalidArgument(
                        f"`{assignment.path}`: {self._in(where)} holds {self.describe(current)}, which has no "
                        f"field `{key}`"
                    )
                if not nxt:
                    raise InvalidArgument(
                        f"`{assignment.path}`: {self._in(where)} has no field `{key}`; "
                        f"its fields: {fields}.{did_you_mean(key, fields)}"
                    )
            else:
                lists = [node for node in current if "array" in self.types(node) and "items" in node]
                for node in lists:
                    nxt += self.alternatives(node["items"])
                if not nxt:
                    raise InvalidArgument(
                        f"`{assignment.path}`: {self._in(where)} is not a list, so it has no "
                        f"items to select with {_format_token(token)}"
                    )
                sizes: list[int] = [node["maxItems"] for node in lists if "maxItems" in node]
                if kind == _INDEX and len(sizes) == len(lists) and all(key >= size for size in sizes):
                    raise InvalidArgument(
                        f"`{assignment.path}`: {self._in(where)} has {max(sizes)} items, so index {key} is out of "
                        f"range (0 to {max(sizes) - 1})"
                    )
                if kind == _WHERE:
                    item_fields = [f for node in nxt for f in node.get("properties", {})]
                    if key not in item_fields:
                        raise InvalidArgument(
                            f"`{assignment.path}`: the items of {self._in(where)} have no field "
                            f"`{key}` to filter on; their fields: {item_fields}.{did_you_mean(key, item_fields)}"
                        )
                    field_schemas = [s for node in nxt for s in self.alternatives(node["properties"].get(key, {}))]
                    if not any(self.conforms(value, s) for s in field_schemas):
                        raise InvalidType(
                            f"`{assignment.path}`: the filter value of `{key}` must be "
                            f"{self.describe(field_schemas)}, received {value!r}"
                        )
            current = nxt
        return current

    def _in(self, where: str) -> str:
        """``a breakout state`` or ```paddle` in a breakout state``, for messages."""
        return self.label if where == "the state" else f"`{where}` in {self.label}"

    def check(self, assignment: Assignment) -> None:
        """Raises a typed error if ``assignment`` cannot apply to any state of the game."""
        tokens = assignment.tokens
        if assignment.op == "delete":
            parents = self.walk(assignment, tokens[:-1])
            if not any("array" in self.types(node) for node in parents):
                raise InvalidArgument(f"`del {assignment.path}`: {_prefix(tokens[:-1])} is not a list")
            fixed = [n for n in parents if "array" in self.types(n) and n.get("minItems", 0) == n.get("maxItems")]
            if len(fixed) == len(parents):
                raise InvalidArgument(
                    f"`del {assignment.path}`: `{_prefix(tokens[:-1])}` always has {fixed[0]['maxItems']} items in "
                    f"{self.label}, so none can be deleted"
                )
            self.walk(assignment, tokens)  # checks a filter's field and value
            return
        targets = self.walk(assignment, tokens)
        op, value = assignment.op, assignment.value
        if op == "set":
            if not any(self.conforms(value, node) for node in targets):
                raise InvalidType(
                    f"`{assignment.path}` holds {self.describe(targets)} in {self.label}, received {value!r}"
                )
        elif op in ("add", "scale"):
            numeric = [t for node in targets for t in self.types(node) if t in ("integer", "number")]
            if not numeric:
                raise InvalidType(
                    f"`{assignment}`: `{assignment.path}` holds {self.describe(targets)}, not a number, "
                    f"so it cannot be {'added to' if op == 'add' else 'scaled'}"
                )
            if op == "add" and "number" not in numeric and not isinstance(value, int):
                raise InvalidType(
                    f"`{assignment}`: `{assignment.path}` holds an integer, so `+=` needs an integer, "
                    f"received {value!r}"
                )
        elif op == "reverse" and not any("array" in self.types(node) for node in targets):
            raise InvalidType(f"`reverse {assignment.path}`: it holds {self.describe(targets)}, not a list")

    def conforms(self, value: Any, node: Mapping[str, Any]) -> bool:
        """Whether ``value`` is valid against the (resolved or not) schema ``node``."""
        for alt in self.alternatives(node):
            if "enum" in alt and value not in alt["enum"]:
                continue
            kinds = self.types(alt)
            if not kinds or any(self._is(value, kind, alt) for kind in kinds):
                return True
        return False

    def _is(self, value: Any, kind: str, node: Mapping[str, Any]) -> bool:
        if kind == "null":
            return value is None
        if kind == "boolean":
            return isinstance(value, bool)
        if kind == "string":
            return isinstance(value, str)
        if kind == "integer":
            if isinstance(value, bool) or not isinstance(value, int):
                return False
            fmt = node.get("format", "")
            if fmt in _UINT_MAX:
                return 0 <= value <= _UINT_MAX[fmt]
            if fmt in _INT_RANGE:
                return -_INT_RANGE[fmt] <= value < _INT_RANGE[fmt]
            return value >= node.get("minimum", -math.inf)
        if kind == "number":
            return not isinstance(value, bool) and isinstance(value, (int, float))
        if kind == "array":
            if not isinstance(value, list):
                return False
            if not node.get("minItems", 0) <= len(value) <= node.get("maxItems", math.inf):
                return False
            items = node.get("items")
            return items is None or all(self.conforms(v, items) for v in value)
        if kind == "object":
            if not isinstance(value, dict):
                return False
            properties = node.get("properties", {})
            if any(key not in properties for key in value) or any(key not in value for key in node.get("required", ())):
                return False
            return all(self.conforms(v, properties[key]) for key, v in value.items())
        return False

    def describe(self, nodes: Sequence[Mapping[str, Any]]) -> str:
        """What the schema nodes allow, in words, for error messages."""
        words: list[str] = []
        for node in nodes:
            if "enum" in node:
                word = f"one of {node['enum']}"
            else:
                parts = []
                for kind in self.types(node):
                    if kind == "object":
                        parts.append(f"an object with fields {sorted(node.get('properties', {}))}")
                    elif kind == "integer" and node.get("format", "") in _UINT_MAX:
                        parts.append(f"an integer in [0, {_UINT_MAX[node['format']]}]")
                    elif kind == "array" and node.get("minItems", 0) == node.get("maxItems") and "items" in node:
                        items = self.describe(self.alternatives(node["items"]))
                        parts.append(f"a list of {node['maxItems']} items ({items} each)")
                    else:
                        parts.append(_KIND_WORDS.get(kind, kind))
                word = " or ".join(parts) or "anything"
            if word not in words:
                words.append(word)
        return " or ".join(words)


_KIND_WORDS: Final = {
    "null": "null",
    "boolean": "a bool",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "array": "a list",
}


def _a(word: str) -> str:
    """``word`` after its indefinite article: ``a CartPoleEnv``, ``an AtariEnv (pong)``."""
    return f"{'an' if word[:1].lower() in 'aeio' else 'a'} {word}"


def _where(tokens: Sequence[Token]) -> str:
    """``the state`` or the path of ``tokens`` in backticks, for messages."""
    where = _prefix(tokens)
    return where if where == "the state" else f"`{where}`"


# -- applying ---------------------------------------------------------------------------------------------
def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a bool"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return "null" if value is None else type(value).__name__


def _at(trail: tuple[Any, ...]) -> str:
    """The concrete place ``trail`` (keys and indices) in backticks, for messages."""
    return "`" + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in trail).lstrip(".") + "`"


def _change(current: Any, a: Assignment, trail: tuple[Any, ...]) -> Any:
    """The new value at one selected place, for set, add, scale and reverse."""
    op = a.op
    if op == "set":
        value = a.value
        if current is not None and value is not None:
            # Numbers: an int may replace a float, never the reverse (Toybox reads integers strictly).
            if not (type(current) is type(value) or (type(current) is float and type(value) is int)):
                raise InvalidType(f"`{a.path}`: {_at(trail)} holds {_kind(current)} ({current!r}), received {value!r}")
        return copy.deepcopy(value) if isinstance(value, (list, dict)) else value
    if op == "reverse":
        if not isinstance(current, list):
            raise InvalidType(f"`reverse {a.path}`: {_at(trail)} holds {_kind(current)}, not a list")
        return current[::-1]
    if isinstance(current, bool) or not isinstance(current, (int, float)):
        raise InvalidType(f"`{a}`: {_at(trail)} holds {_kind(current)} ({current!r}), not a number")
    if op == "add":
        if isinstance(current, int) and not isinstance(a.value, int):
            raise InvalidType(f"`{a}`: {_at(trail)} holds an integer, so `+=` needs an integer, received {a.value!r}")
        return current + a.value
    result = current * a.value
    return round(result) if isinstance(current, int) else float(result)


def _assign(node: Any, tokens: tuple[Token, ...], i: int, a: Assignment, trail: tuple[Any, ...] = ()) -> Any:
    """A copy of ``node`` (at ``trail`` in the state) with the assignment made below it.

    Only the lists and objects on the way to what the path selects are copied; the rest is shared.
    """
    kind, key, value = tokens[i]
    last = i == len(tokens) - 1
    if kind == _KEY:
        if not isinstance(node, dict):
            raise InvalidArgument(f"`{a.path}`: {_where(tokens[:i])} holds {_kind(node)}, which has no field `{key}`")
        if key not in node:
            fields = list(node)
            raise InvalidArgument(
                f"`{a.path}`: {_where(tokens[:i])} has no field `{key}`; its fields: {fields}."
                f"{did_you_mean(key, fields)}"
            )
        out = dict(node)
        here = (*trail, key)
        out[key] = _change(node[key], a, here) if last else _assign(node[key], tokens, i + 1, a, here)
        return out
    if not isinstance(node, list):
        raise InvalidArgument(
            f"`{a.path}`: {_where(tokens[:i])} holds {_kind(node)}, not a list to select "
            f"{_format_token(tokens[i])} from"
        )
    if kind == _INDEX:
        if key >= len(node):
            raise InvalidArgument(
                f"`{a.path}`: {_where(tokens[:i])} has {len(node)} items, so index {key} is out of range"
            )
        selected: Iterable[int] = (key,)
    elif kind == _ALL:
        selected = range(len(node))
    else:
        selected = [j for j, item in enumerate(node) if isinstance(item, dict) and item.get(key, _MISSING) == value]
        if not selected:
            raise InvalidArgument(f"`{a.path}`: no item of {_where(tokens[:i])} has {key}={_format_value(value)}")
    if last and a.op == "delete":
        drop = set(selected)
        return [item for j, item in enumerate(node) if j not in drop]
    out_list = list(node)
    if last:
        for j in selected:
            out_list[j] = _change(node[j], a, (*trail, j))
    else:
        for j in selected:
            out_list[j] = _assign(node[j], tokens, i + 1, a, (*trail, j))
    return out_list


_MISSING: Final = object()


def apply(state: dict[str, Any], intervention: Intervention | str | Sequence[Intervention | str]) -> dict[str, Any]:
    """The state after the intervention(s), made in order; ``state`` itself is left as it was.

    The new state shares with ``state`` every part the intervention does not change (only the lists and
    objects on the paths it names are copied), so applying one costs far less than reading the state; copy
    the result with ``copy.deepcopy`` before editing it in place.

    Args:
        state: a game's state, as ``env.unwrapped.state_json()`` or ``ctoybox.Toybox.state_to_json()`` return it.
        intervention: an :class:`Intervention`, its one-line form (``"paddle_width=40"``), or a list of them.

    Raises:
        InvalidArgument: a path names a field or an item the state does not have, a filter matches no item,
            or the intervention is for another game.
        InvalidType: a value's type differs from the one the state holds there.

    Example:
        >>> from rlwrappers.state import interventions as iv
        >>> state = {"bricks": [{"row": 0, "alive": True}, {"row": 1, "alive": True}]}
        >>> iv.apply(state, "bricks[row=1].alive=false")["bricks"]
        [{'row': 0, 'alive': True}, {'row': 1, 'alive': False}]
    """
    if not isinstance(state, dict):
        raise InvalidType(f"`state` must be a dict as state_json() returns, received {type(state).__name__}")
    items: Sequence[Intervention | str]
    items = [intervention] if isinstance(intervention, (Intervention, str)) else intervention
    for item in items:
        iv = item if isinstance(item, Intervention) else as_intervention(item)
        if iv.game is not None and _SIGNATURE[iv.game] not in state:
            raise InvalidArgument(
                f"intervention `{iv.name}` is for {iv.game}, but the state has no `{_SIGNATURE[iv.game]}`: "
                f"it is not a {iv.game} state"
            )
        for a in iv.assignments:
            state = _assign(state, a.tokens, 0, a)
    return state


def as_intervention(item: Any, game: str | None = None) -> Intervention:
    """``item`` (an Intervention, a one-line form or a :meth:`Intervention.to_dict` dict) as an Intervention."""
    if isinstance(item, Intervention):
        return item
    if isinstance(item, str):
        return Intervention.parse(item, game=game)
    if isinstance(item, Mapping):
        return Intervention.from_dict(item)
    raise InvalidType(
        f"an intervention must be an Intervention, a line such as 'paddle_width=40' or a dict, received {item!r}"
    )
