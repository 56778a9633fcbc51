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
that game's state schema when it is built: unknown fields raise :class:`~rlwrappers.error.InvalidArgument`
with a suggestion, values of the wrong type :class:`~rlwrappers.error.InvalidType`, both naming the path.

The catalogues follow the paper's Appendix A, whose families and counts they keep (Breakout 39, Amidar 70,
Space Invaders 88) with values derived from the games' real states: :func:`catalogue` lists them in the
appendix's order, :func:`get` finds one by name and :func:`define` adds your own. :class:`Intervene` makes
interventions on a running env, at reset or at any step a schedule names: the Toybox games
(``rlwrappers/ToyboxBreakout-v0`` and its siblings), and through :mod:`rlwrappers.statejson` the
classic-control envs (``theta=0.1``, ``length*=2``), MuJoCo envs (``qpos[1]=0.1``) and ALE envs (their RAM:
``ram[14]=100``), whose paths are checked against the env's state when the wrapper is built.
docs/interventions.md has the tables and the ALE games' RAM addresses.

Example:
    >>> from rlwrappers import interventions as iv
    >>> wide = iv.Intervention.parse("paddle_width=40")
    >>> state = {"paddle_width": 24.0, "paddle_speed": 4.0}
    >>> iv.apply(state, wide), state["paddle_width"]
    ({'paddle_width': 40, 'paddle_speed': 4.0}, 24.0)
    >>> len(iv.catalogue("breakout", defined=False)), iv.get("breakout", "drop_row_0").assignments[0].path
    (39, 'bricks[row=0].alive')
"""

from __future__ import annotations

import copy
import functools
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import gymnasium as gym
import numpy as np
from typing_extensions import override

from rlwrappers import _optional, statejson
from rlwrappers.core import Perturbation, PerturbationLayer, Record, SingleLayer, register_wrapper
from rlwrappers.error import (
    InvalidArgument,
    InvalidType,
    SpecSyntaxError,
    UnknownName,
    did_you_mean,
)
from rlwrappers.schedule import Schedule

__all__ = [
    "GAMES",
    "OPS",
    "Assignment",
    "Intervene",
    "Intervention",
    "InterventionPerturbation",
    "apply",
    "catalogue",
    "define",
    "get",
    "resolve",
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
        >>> from rlwrappers.interventions import Assignment
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

    Build one with :meth:`parse` (``"paddle_width=40; paddle_speed*=2"``) or :func:`define`, or take one from
    :func:`catalogue`. With a ``game``, every path and value is checked against that game's state schema here,
    so a mistake fails when the intervention is built, not when it is applied.

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
            _check_game(self.game)
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
            schema = _Schema.of(self.game)
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
            >>> from rlwrappers.interventions import Intervention
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


def _check_game(game: Any) -> str:
    if not isinstance(game, str):
        raise InvalidType(f"`game` must be one of {list(GAMES)}, received {game!r}")
    if game not in GAMES:
        raise UnknownName(f"`game` must be one of {list(GAMES)}, received {game!r}.{did_you_mean(game, GAMES)}")
    return game


# -- the games' state schemas -----------------------------------------------------------------------------
_UINT_MAX: Final = {"uint8": 255, "uint16": 65535, "uint32": 2**32 - 1, "uint64": 2**64 - 1}
_INT_RANGE: Final = {"int8": 2**7, "int16": 2**15, "int32": 2**31, "int64": 2**63}


class _Schema:
    """A game's JSON state schema (from Toybox) and the checks an assignment must pass against it."""

    _cache: dict[str, _Schema] = {}

    def __init__(self, game: str, root: dict[str, Any], label: str | None = None) -> None:
        self.game = game
        self.root = root
        #: What messages call a state: ``a breakout state``.
        self.label = label or f"a {game} state"

    @classmethod
    def of(cls, game: str) -> _Schema:
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
        >>> from rlwrappers import interventions as iv
        >>> state = {"bricks": [{"row": 0, "alive": True}, {"row": 1, "alive": True}]}
        >>> iv.apply(state, "bricks[row=1].alive=false")["bricks"]
        [{'row': 0, 'alive': True}, {'row': 1, 'alive': False}]
    """
    if not isinstance(state, dict):
        raise InvalidType(f"`state` must be a dict as state_json() returns, received {type(state).__name__}")
    items: Sequence[Intervention | str]
    items = [intervention] if isinstance(intervention, (Intervention, str)) else intervention
    for item in items:
        iv = item if isinstance(item, Intervention) else _intervention(item)
        if iv.game is not None and _SIGNATURE[iv.game] not in state:
            raise InvalidArgument(
                f"intervention `{iv.name}` is for {iv.game}, but the state has no `{_SIGNATURE[iv.game]}`: "
                f"it is not a {iv.game} state"
            )
        for a in iv.assignments:
            state = _assign(state, a.tokens, 0, a)
    return state


def _intervention(item: Any, game: str | None = None) -> Intervention:
    if isinstance(item, Intervention):
        return item
    if isinstance(item, str):
        return Intervention.parse(item, game=game)
    if isinstance(item, Mapping):
        return Intervention.from_dict(item)
    raise InvalidType(
        f"an intervention must be an Intervention, a line such as 'paddle_width=40' or a dict, received {item!r}"
    )


# -- catalogues -------------------------------------------------------------------------------------------
# Breakout: 6 rows x 18 columns of bricks (rows 0-5 from the top), the paddle 24 wide, moving 4 per frame,
# starting at x = 120 (the centre of a 240-wide frame; bricks span x = 12..228).
BREAKOUT_PADDLE_WIDTHS: Final = (12.0, 18.0, 30.0, 36.0, 48.0)
BREAKOUT_PADDLE_SPEEDS: Final = (1.0, 2.0, 3.0, 5.0, 6.0, 8.0)
BREAKOUT_PADDLE_XS: Final = (24.0, 72.0, 168.0, 216.0)
BREAKOUT_ROWS: Final = 6
BREAKOUT_COLUMNS: Final = 18

# Amidar: a 32 x 31 tile board; a tile (tx, ty) is at world point (64 tx, 80 ty); corridors join at junctions.
#: The middle tile of each vertical corridor segment (between two junctions) that no mob starts on: all 34
#: but the player's (31, 12)-(31, 18) and enemy 3's (0, 24)-(0, 30).
AMIDAR_REMOVE_TILES: Final = (
    (0, 3), (6, 3), (10, 3), (14, 3), (17, 3), (21, 3), (25, 3), (31, 3),
    (0, 9), (4, 9), (9, 9), (12, 9), (19, 9), (22, 9), (27, 9), (31, 9),
    (0, 15), (3, 15), (11, 15), (20, 15), (28, 15),
    (0, 21), (5, 21), (14, 21), (17, 21), (26, 21), (31, 21),
    (6, 27), (12, 27), (19, 27), (25, 27), (31, 27),
)  # fmt: skip
#: In each of the 25 boxes that do not trigger chase mode, the empty tile just below the middle of its top
#: side: a one-tile dead end off the corridor.
AMIDAR_ADD_TILES: Final = (
    (8, 1), (12, 1), (15, 1), (19, 1), (23, 1),
    (2, 7), (6, 7), (10, 7), (15, 7), (20, 7), (24, 7), (29, 7),
    (1, 13), (7, 13), (15, 13), (24, 13), (29, 13),
    (2, 19), (9, 19), (15, 19), (21, 19), (28, 19),
    (9, 25), (15, 25), (22, 25),
)  # fmt: skip
AMIDAR_ENEMIES: Final = 5
#: Enemies 1-4 where their own routes take them 100 frames into a game: position, next tile and route index
#: (so they go on along their routes from there). Enemy 0 starts where enemy 1 does.
AMIDAR_ENEMY_MOVES: Final = {
    1: ({"x": 414, "y": 480}, {"tx": 7, "ty": 6}, 13),
    2: ({"x": 768, "y": 570}, {"tx": 12, "ty": 8}, 13),
    3: ({"x": 330, "y": 1440}, {"tx": 6, "ty": 18}, 13),
    4: ({"x": 896, "y": 1830}, {"tx": 14, "ty": 22}, 13),
}
#: The middle tiles of the four vertical corridors of the player's band (rows 12-18) farthest from its start
#: (31, 15).
AMIDAR_PLAYER_TILES: Final = ((0, 15), (3, 15), (11, 15), (20, 15))

# Space Invaders: 36 enemies in 6 rows x 6 columns (id = 6 row + col), 3 shields 16 wide at x = 84, 148,
# 212, the ship starting at x = 68, the left end of its range 68..230, moving 3 per frame.
SPACE_INVADERS_ENEMIES: Final = 36
SPACE_INVADERS_SHIELD_SHIFTS: Final = (-15, -12, -9, -6, -3, 3, 6, 9, 12, 15)
#: 29 starting points evenly spread over the ship's range to the right of its start: 68 + round(k * 162 / 29).
SPACE_INVADERS_SHIP_XS: Final = tuple(68 + round(k * 162 / 29) for k in range(1, 30))
SPACE_INVADERS_ROWS: Final = 6
SPACE_INVADERS_COLUMNS: Final = 6


def _breakout() -> list[Intervention]:
    out = [
        Intervention(f"paddle_width_{w:g}", "breakout", f"Sets the paddle's width to {w:g} (24 at the start).",
                     (Assignment("paddle_width", "set", w),))
        for w in BREAKOUT_PADDLE_WIDTHS
    ]  # fmt: skip
    out += [
        Intervention(f"paddle_speed_{v:g}", "breakout", f"Sets the paddle's speed to {v:g} per frame (4 at the start).",
                     (Assignment("paddle_speed", "set", v),))
        for v in BREAKOUT_PADDLE_SPEEDS
    ]  # fmt: skip
    out += [
        Intervention(f"paddle_x_{x:g}", "breakout", f"Puts the paddle's centre at x = {x:g} (120 at the start).",
                     (Assignment("paddle.position.x", "set", x),))
        for x in BREAKOUT_PADDLE_XS
    ]  # fmt: skip
    out += [
        Intervention(f"drop_row_{r}", "breakout", f"Removes brick row {r} (0 is the top), 18 bricks.",
                     (Assignment(f"bricks[row={r}].alive", "set", False),))
        for r in range(BREAKOUT_ROWS)
    ]  # fmt: skip
    out += [
        Intervention(f"drop_column_{c}", "breakout", f"Removes brick column {c} (0 is the left), 6 bricks.",
                     (Assignment(f"bricks[col={c}].alive", "set", False),))
        for c in range(BREAKOUT_COLUMNS)
    ]  # fmt: skip
    return out


def _amidar() -> list[Intervention]:
    out = [
        Intervention(f"remove_tile_{x}_{y}", "amidar", f"Removes corridor tile ({x}, {y}) (it becomes Empty).",
                     (Assignment(f"board.tiles[{y}][{x}]", "set", "Empty"),))
        for x, y in AMIDAR_REMOVE_TILES
    ]  # fmt: skip
    out += [
        Intervention(f"add_tile_{x}_{y}", "amidar", f"Adds an unpainted tile at ({x}, {y}), a dead end.",
                     (Assignment(f"board.tiles[{y}][{x}]", "set", "Unpainted"),))
        for x, y in AMIDAR_ADD_TILES
    ]  # fmt: skip
    out += [
        Intervention(f"drop_enemy_{i}", "amidar", f"Removes enemy {i} (of those left, by position in the list).",
                     (Assignment(f"enemies[{i}]", "delete"),))
        for i in range(AMIDAR_ENEMIES)
    ]  # fmt: skip
    for i, (position, step, nxt) in AMIDAR_ENEMY_MOVES.items():
        assignments = (
            Assignment(f"enemies[{i}].position", "set", position),
            Assignment(f"enemies[{i}].step", "set", step),
            Assignment(f"enemies[{i}].ai", "set", {"EnemyLookupAI": {"next": nxt, "default_route_index": i}}),
        )
        out.append(
            Intervention(f"move_enemy_{i}", "amidar",
                         f"Moves enemy {i} to tile {step['tx'], step['ty']}, 100 frames along its route.", assignments)
        )  # fmt: skip
    for x, y in AMIDAR_PLAYER_TILES:
        assignments = (
            Assignment("player.position", "set", {"x": 64 * x, "y": 80 * y}),
            Assignment("player.step", "set", None),
            Assignment("player.history", "set", []),
        )
        out.append(Intervention(f"move_player_{x}_{y}", "amidar", f"Moves the player to tile ({x}, {y}).", assignments))
    return out


def _space_invaders() -> list[Intervention]:
    out = [
        Intervention(f"drop_enemy_{i}", "space_invaders", f"Kills enemy {i} (row {i // 6}, column {i % 6}).",
                     (Assignment(f"enemies[id={i}].alive", "set", False),))
        for i in range(SPACE_INVADERS_ENEMIES)
    ]  # fmt: skip
    for dx in SPACE_INVADERS_SHIELD_SHIFTS:
        side = "left" if dx < 0 else "right"
        out.append(
            Intervention(f"shields_{side}_{abs(dx)}", "space_invaders", f"Moves the shields {abs(dx)} to the {side}.",
                         (Assignment("shields[*].x", "add", dx),))
        )  # fmt: skip
    out += [
        Intervention(f"ship_x_{x}", "space_invaders", f"Puts the ship at x = {x} (68 at the start).",
                     (Assignment("ship.x", "set", x),))
        for x in SPACE_INVADERS_SHIP_XS
    ]  # fmt: skip
    out += [
        Intervention(f"drop_enemy_row_{r}", "space_invaders", f"Kills enemy row {r} (0 is the top), 6 enemies.",
                     (Assignment(f"enemies[row={r}].alive", "set", False),))
        for r in range(SPACE_INVADERS_ROWS)
    ]  # fmt: skip
    out += [
        Intervention(f"drop_enemy_column_{c}", "space_invaders", f"Kills enemy column {c} (0 is the left), 6 enemies.",
                     (Assignment(f"enemies[col={c}].alive", "set", False),))
        for c in range(SPACE_INVADERS_COLUMNS)
    ]  # fmt: skip
    out.append(
        Intervention("flip_shields", "space_invaders", "Flips the shields' pixels upside down; as many pixels remain.",
                     (Assignment("shields[*].data", "reverse"),))
    )  # fmt: skip
    return out


_BUILDERS: Final = {"breakout": _breakout, "amidar": _amidar, "space_invaders": _space_invaders}
_BUILTIN: dict[str, dict[str, Intervention]] = {}
#: Interventions added with :func:`define`, by game and name.
_DEFINED: dict[str, dict[str, Intervention]] = {game: {} for game in GAMES}


def _builtin(game: str) -> dict[str, Intervention]:
    table = _BUILTIN.get(game)
    if table is None:
        table = _BUILTIN[game] = {iv.name: iv for iv in _BUILDERS[game]()}
    return table


def catalogue(game: str, *, defined: bool = True) -> list[Intervention]:
    """The game's interventions: the paper's Appendix A ones in its order, then those added with :func:`define`.

    Position ``i`` of the built-in part is the appendix's intervention ``i`` (for Breakout, see
    docs/interventions.md on its overlapping rows).

    Args:
        game: one of :data:`GAMES`.
        defined: whether to list those added with :func:`define` too.

    Example:
        >>> from rlwrappers import interventions as iv
        >>> [len(iv.catalogue(game, defined=False)) for game in iv.GAMES]
        [39, 70, 88]
        >>> iv.catalogue("space_invaders")[87].name
        'flip_shields'
    """
    game = _check_game(game)
    builtin = list(_builtin(game).values())
    return [*builtin, *_DEFINED[game].values()] if defined else builtin


def get(game: str, name: str) -> Intervention:
    """The intervention called ``name`` in ``game``'s catalogue.

    Raises:
        UnknownName: no such game or intervention; the message suggests the closest name.

    Example:
        >>> from rlwrappers import interventions as iv
        >>> iv.get("amidar", "drop_enemy_2").doc
        'Removes enemy 2 (of those left, by position in the list).'
    """
    game = _check_game(game)
    if not isinstance(name, str):
        raise InvalidType(f"`name` must be an intervention's name, received {name!r}")
    found = _builtin(game).get(name) or _DEFINED[game].get(name)
    if found is None:
        names = [iv.name for iv in catalogue(game)]
        raise UnknownName(
            f"{game} has no intervention `{name}` ({len(names)} known; list them with catalogue({game!r}))."
            f"{did_you_mean(name, names)}"
        )
    return found


def define(
    name: str,
    game: str,
    assignments: Mapping[str, Any] | Sequence[str | Assignment | Mapping[str, Any]] | str,
    *,
    doc: str = "",
) -> Intervention:
    """Defines an intervention and adds it to ``game``'s catalogue, so :func:`get` and :class:`Intervene` find it.

    Args:
        name: a word (letters, digits, ``_``, ``.``, ``-``), not the name of a built-in intervention.
        game: one of :data:`GAMES`.
        assignments: ``{path: value}`` (each a ``set``), one-line forms (``["shields[*].x+=6"]`` or
            ``"a=1; b*=2"``) or :class:`Assignment` objects.
        doc: one line saying what it does.

    Raises:
        InvalidArgument: the name is taken by a different intervention, or a path does not exist in the game.
        InvalidType: a value does not fit its field.

    Example:
        >>> from rlwrappers import interventions as iv
        >>> wide = iv.define("wide_paddle", "breakout", {"paddle_width": 40.0}, doc="A paddle 40 wide.")
        >>> iv.get("breakout", "wide_paddle") is wide, str(wide)
        (True, 'paddle_width=40.0')
    """
    game = _check_game(game)
    if not isinstance(name, str) or not _WORD.fullmatch(name):
        raise InvalidArgument(f"`name` must be a word such as 'wide_paddle', received {name!r}")
    if isinstance(assignments, Mapping):
        items: Any = tuple(Assignment(path, "set", value) for path, value in assignments.items())
    elif isinstance(assignments, str):
        items = tuple(Assignment.parse(line) for line in assignments.split(";") if line.strip())
    else:
        items = assignments
    intervention = Intervention(name, game, doc, items)
    existing = _builtin(game).get(name) or _DEFINED[game].get(name)
    if existing is not None and existing != intervention:
        raise InvalidArgument(f"{game} already has an intervention `{name}`: {existing}; choose another name")
    if name not in _builtin(game):
        _DEFINED[game][name] = intervention
    return intervention


# -- the wrapper ------------------------------------------------------------------------------------------
def _check_nothing_changes_observations(env: gym.Env[Any, Any]) -> None:
    """Raises if a wrapper between ``env`` and the base env changes observations (the re-rendered one would skip it)."""
    current: Any = env
    while isinstance(current, gym.Wrapper):
        inner = current.env
        if (
            isinstance(current, gym.ObservationWrapper)
            or (
                isinstance(current, PerturbationLayer)
                and any(p.channel == "observation" for p in current.perturbations)
            )
            or current.observation_space != inner.observation_space
        ):
            raise InvalidArgument(
                f"intervene re-renders the observation of the changed state, so it must sit below every wrapper "
                f"that changes observations; received an env with {type(current).__name__} below it: wrap the "
                f"base env with Intervene first"
            )
        current = inner


def resolve(
    env: gym.Env[Any, Any], interventions: Iterable[Intervention | str | Mapping[str, Any]]
) -> tuple[statejson.StateAdapter, tuple[Intervention, ...]]:
    """The adapter of ``env``'s state and ``interventions`` made ready for it.

    Catalogue names are looked up in the env's game (Toybox envs only); one-line forms and dicts become
    :class:`Intervention` objects; every assignment is checked against the env's state schema, so a path the
    env's state lacks fails here, before any state is touched.

    Args:
        env: a Toybox, classic-control, MuJoCo or ALE env, wrapped or not.
        interventions: catalogue names, one-line forms, :meth:`Intervention.to_dict` dicts or Interventions.

    Raises:
        StateNotSettable: the env's state cannot be read and written.
        UnknownName: a name is not in the game's catalogue (with suggestions).
        InvalidArgument: a catalogue name on an env that is not a Toybox game, an intervention for another
            game, or a path the state lacks.
        InvalidType: a value of the wrong type for its path.
    """
    state = statejson.adapter(env, purpose="intervene")
    native = state.native  # a Toybox env: checked against its game's schema
    game = getattr(state.env, "game", None) if native else None
    game = game if game in GAMES else None
    schema_root = state.schema()
    schema = None if schema_root is None else _Schema(state.name, schema_root, label=_a(state.name) + " state")
    resolved = []
    for item in interventions:
        if isinstance(item, str) and _WORD.fullmatch(item.strip()):
            if game is None:
                raise InvalidArgument(
                    f"intervention `{item}` is a catalogue name, but {state.name} is not one of the Toybox games "
                    f"{list(GAMES)}, whose catalogues hold names; pass the intervention itself (its one-line "
                    f"form, such as 'path=value', or an Intervention)"
                )
            iv = get(game, item.strip())
        else:
            iv = _intervention(item, game)
            if iv.game is None and game is not None:  # check it against the env's game now
                iv = Intervention(iv.name, game, iv.doc, iv.assignments)
        if iv.game is not None and iv.game != game and (game is not None or not native):
            plays = f"the env plays {game}" if game is not None else f"the env is {state.name}"
            raise InvalidArgument(f"intervention `{iv.name}` is for {iv.game}, but {plays}")
        if schema is not None:
            for a in iv.assignments:
                schema.check(a)
        resolved.append(iv)
    return state, tuple(resolved)


@dataclass(kw_only=True)
class InterventionPerturbation(Perturbation):
    """Makes interventions on an env's state whenever its schedule switches on; the env carries them.

    Works on the Toybox games and, through :func:`rlwrappers.statejson.adapter`, on classic-control, MuJoCo
    and ALE envs. Each time the schedule switches on (at reset when it is active at time 0, or at the step it
    names) the layer reads the state once, makes every intervention in order and writes it back once, then
    renders the observation of the new state. Nothing is undone when the schedule switches off: the game plays on from
    the changed state until the next reset starts a new game. The record of the call that made them is
    ``{"active": True, "applied": [names]}``. In a layer built by :func:`rlwrappers.wrap`, the observation of
    a mid-episode step that makes them is the one rendered before; :class:`Intervene` re-renders it.

    Args:
        interventions: catalogue names (``"drop_row_0"``, Toybox only), one-line forms (``"paddle_width=40"``,
            ``"ram[14]=100"``) or :meth:`Intervention.to_dict` dicts, made in order.
    """

    name = "intervene"
    channel = "state"

    interventions: list[str | dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        items: Any = self.interventions
        if isinstance(items, (str, Mapping, Intervention)):
            items = [items]
        if not isinstance(items, Sequence) or not items:
            raise InvalidArgument(
                f"`interventions` must name at least one intervention, received {self.interventions!r}"
            )
        out: list[str | dict[str, Any]] = []
        for item in items:
            if isinstance(item, Intervention):
                out.append(item.to_dict())
            elif isinstance(item, str):
                if not _WORD.fullmatch(item.strip()):
                    Intervention.parse(item)  # a one-line form: fails now if it cannot be read
                out.append(item.strip())
            elif isinstance(item, Mapping):
                out.append(Intervention.from_dict(item).to_dict())
            else:
                raise InvalidType(f"`interventions` items must be names, one-line forms or dicts, received {item!r}")
        self.interventions = out
        self._resolved: tuple[Intervention, ...] = ()
        self._record: Record = {}
        self._state: Any = None
        #: Set when an intervention was made and the observation not yet re-rendered.
        self.fresh = False

    @override
    def bind(self, env: gym.Env[Any, Any], observation_space: gym.Space[Any], action_space: gym.Space[Any]) -> None:
        self._state, self._resolved = resolve(env, self.interventions)
        _check_nothing_changes_observations(env)
        self._record = {"applied": [iv.name for iv in self._resolved]}

    @property
    def resolved(self) -> tuple[Intervention, ...]:
        """The interventions it makes, once bound to an env."""
        return self._resolved

    @override
    def activate(self, env: gym.Env[Any, Any], rng: np.random.Generator) -> Record:
        state = self._state.state_json()
        for iv in self._resolved:
            for a in iv.assignments:
                state = _assign(state, a.tokens, 0, a)
        self._state.write_state_json(state)
        self.fresh = True
        return dict(self._record)

    @override
    def reset(self, env: gym.Env[Any, Any], obs: Any, rng: np.random.Generator) -> tuple[Any, Record]:
        # Called at time 0 right after activate() made the interventions: the observation must show them.
        self.fresh = False
        return self._state.observe(), dict(self._record)

    @override
    def deactivate(self, env: gym.Env[Any, Any]) -> None:
        """Undoes nothing: an intervention is a change the game carries for the rest of the episode."""

    def observe(self) -> Any:
        """The observation of the env's current state."""
        self.fresh = False
        return self._state.observe()


@register_wrapper("intervene")
class Intervene(SingleLayer):
    """Makes interventions on an env's state, at reset or at the step a schedule names.

    See :class:`InterventionPerturbation`. The interventions are made once each time the schedule switches
    on, with one read and one write of the env's state, and the env carries them for the rest of the
    episode (what a game itself undoes, such as Breakout's paddle width after a lost ball, is listed in
    docs/interventions.md). ``when="always"`` (the default) makes them at every reset;
    ``when="starting(step=100)"`` at step 100 of every episode. The observation returned by the call that
    makes them shows the changed state. Wrap the base env with it before any wrapper that changes
    observations (frame skipping, resizing, stacking).

    The env's state is a JSON document (:mod:`rlwrappers.statejson`): a Toybox game's own, checked against the
    game's schema; a classic-control env's state vector under names and its constants (``theta``,
    ``length``); a MuJoCo env's ``qpos`` and ``qvel``; an ALE env's ``ram`` (128 bytes). Beyond Toybox the
    paths and values are checked against the env's state when the wrapper is built.

    No vector version: wrap each sub-env.

    Args:
        env: a Toybox, classic-control, MuJoCo or ALE env, e.g. ``gym.make("rlwrappers/ToyboxBreakout-v0")``.
        interventions: a catalogue name (``"drop_row_0"``, Toybox only), a one-line form
            (``"paddle_width=40"``, ``"theta=0.1"``, ``"ram[14]=100"``), an :class:`Intervention`, or a list of
            these, made in order.
        when: the schedule (default: always, i.e. at every reset).
        label: names the log columns (default ``intervene``).

    Raises:
        StateNotSettable: no adapter serves the env (the message names it).
        InvalidArgument: a path names a field or an item the env's state does not have.
        InvalidType: a value has a kind its field cannot hold.

    Example:
        >>> import gymnasium as gym, rlwrappers.envs
        >>> from rlwrappers.interventions import Intervene
        >>> env = Intervene(gym.make("rlwrappers/ToyboxBreakout-v0"), ["drop_row_0", "paddle_width=40"])
        >>> obs, info = env.reset(seed=0)
        >>> info["rlwrappers"]["intervene"]["applied"], env.unwrapped.state_json()["paddle_width"]
        (['drop_row_0', 'paddle_width=40'], 40.0)
        >>> cartpole = Intervene(gym.make("CartPole-v1"), "theta=0.1; length*=2")
        >>> obs, info = cartpole.reset(seed=0)
        >>> float(obs[2]), cartpole.unwrapped.length
        (0.10000000149011612, 1.0)
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        interventions: str | Intervention | Mapping[str, Any] | Sequence[str | Intervention | Mapping[str, Any]],
        *,
        when: str | Schedule | Mapping[str, Any] | None = None,
        label: str | None = None,
    ):
        """Wraps ``env``; ``when`` is the schedule (default: always), ``label`` names the log columns."""
        items = [interventions] if isinstance(interventions, (str, Intervention, Mapping)) else interventions
        if not isinstance(items, Sequence):
            raise InvalidType(
                f"`interventions` must be a name, a one-line form or a list of them, received {interventions!r}"
            )
        registered: list[Any] = []
        game = getattr(env.unwrapped, "game", None)
        for item in items:
            # A catalogue or defined intervention of the env's game is recorded by its name, any other by its dict.
            if isinstance(item, Intervention) and item.game is not None and item.game == game:
                known = _builtin(item.game).get(item.name) or _DEFINED[item.game].get(item.name)
                registered.append(item.name if known == item else item.to_dict())
            else:
                registered.append(item)
        self._setup(env, InterventionPerturbation(interventions=registered), when, label)
        self._intervention: InterventionPerturbation = self.perturbations[0]  # type: ignore[assignment]

    @override
    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(action)
        if self._intervention.fresh:
            obs = self._intervention.observe()
        return obs, reward, terminated, truncated, info

    @property
    def interventions(self) -> tuple[Intervention, ...]:
        """The interventions it makes, in order."""
        return self._intervention.resolved
