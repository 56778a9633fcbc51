"""The intervention catalogues of the Toybox games: seed 000's Appendix A, as data.

The catalogues follow the paper's Appendix A, whose families and counts they keep (Breakout 39, Amidar 70,
Space Invaders 88) with values derived from the games' real states. :func:`catalogue` lists a game's
interventions in the appendix's order, :func:`get` finds one by name and :func:`define` adds your own. Each
is an :class:`~rlwrappers.state.interventions.Intervention` of the path language in
:mod:`rlwrappers.state.interventions`, checked against its game's state schema when it is built.
docs/interventions.md lists them, with what each game undoes by itself.

Example:
    >>> from rlwrappers.envs.toybox import interventions as iv
    >>> len(iv.catalogue("breakout", defined=False)), iv.get("breakout", "drop_row_0").assignments[0].path
    (39, 'bricks[row=0].alive')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from rlwrappers.error import InvalidArgument, InvalidType, UnknownName, did_you_mean
from rlwrappers.state.interventions import GAMES, Assignment, Intervention, check_game, is_name

__all__ = ["GAMES", "catalogue", "define", "get", "lookup"]

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
        >>> from rlwrappers.envs.toybox import interventions as iv
        >>> [len(iv.catalogue(game, defined=False)) for game in iv.GAMES]
        [39, 70, 88]
        >>> iv.catalogue("space_invaders")[87].name
        'flip_shields'
    """
    game = check_game(game)
    builtin = list(_builtin(game).values())
    return [*builtin, *_DEFINED[game].values()] if defined else builtin


def get(game: str, name: str) -> Intervention:
    """The intervention called ``name`` in ``game``'s catalogue.

    Raises:
        UnknownName: no such game or intervention; the message suggests the closest name.

    Example:
        >>> from rlwrappers.envs.toybox import interventions as iv
        >>> iv.get("amidar", "drop_enemy_2").doc
        'Removes enemy 2 (of those left, by position in the list).'
    """
    game = check_game(game)
    if not isinstance(name, str):
        raise InvalidType(f"`name` must be an intervention's name, received {name!r}")
    found = lookup(game, name)
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
    """Defines an intervention and adds it to ``game``'s catalogue, where :func:`get` and ``Intervene`` find it.

    :class:`~rlwrappers.wrappers.state.Intervene` takes its name like any catalogue name.

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
        >>> from rlwrappers.envs.toybox import interventions as iv
        >>> wide = iv.define("wide_paddle", "breakout", {"paddle_width": 40.0}, doc="A paddle 40 wide.")
        >>> iv.get("breakout", "wide_paddle") is wide, str(wide)
        (True, 'paddle_width=40.0')
    """
    game = check_game(game)
    if not isinstance(name, str) or not is_name(name):
        raise InvalidArgument(f"`name` must be a word such as 'wide_paddle', received {name!r}")
    if isinstance(assignments, Mapping):
        items: Any = tuple(Assignment(path, "set", value) for path, value in assignments.items())
    elif isinstance(assignments, str):
        items = tuple(Assignment.parse(line) for line in assignments.split(";") if line.strip())
    else:
        items = assignments
    intervention = Intervention(name, game, doc, items)
    existing = lookup(game, name)
    if existing is not None and existing != intervention:
        raise InvalidArgument(f"{game} already has an intervention `{name}`: {existing}; choose another name")
    if name not in _builtin(game):
        _DEFINED[game][name] = intervention
    return intervention


def lookup(game: str, name: str) -> Intervention | None:
    """The intervention called ``name`` in ``game``'s catalogue (built in or defined), or None."""
    return _builtin(check_game(game)).get(name) or _DEFINED[game].get(name)
