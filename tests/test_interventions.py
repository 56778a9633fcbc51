"""Interventions on Toybox states: the catalogues, what each changes and keeps, errors, the Intervene wrapper.

Then beyond Toybox: the same wrapper on classic-control, MuJoCo and ALE envs through rlwrappers.state.documents.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
from collections.abc import Callable, Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from rlwrappers.envs.toybox import interventions as catalogues

import rlwrappers as rw
from rlwrappers import (
    envs,  # registers the Toybox IDs when ctoybox is installed
    error,
)
from rlwrappers.state import documents
from rlwrappers.state import interventions as iv
from rlwrappers.state.interventions import Assignment, Intervention
from rlwrappers.wrappers.state import Intervene

HAS_TOYBOX = importlib.util.find_spec("ctoybox") is not None
#: The tests that need no Toybox (the envs beyond it); every other test is skipped without ctoybox.
BEYOND_TOYBOX: set[str] = set()


def beyond_toybox(test: Callable[..., None]) -> Callable[..., None]:
    """Marks a test that runs without ctoybox."""
    BEYOND_TOYBOX.add(test.__name__)
    return test


@pytest.fixture(autouse=True)
def _needs_toybox(request: pytest.FixtureRequest) -> None:
    if not HAS_TOYBOX and request.function.__name__ not in BEYOND_TOYBOX:
        pytest.skip("needs ctoybox (the toybox extra)")


IDS = envs.TOYBOX_IDS
#: Frames played (seeded random actions) before the mid-episode snapshot.
MID = 200
#: Frames of NOOP played after an intervention to see that the game keeps it.
KEEP = 10
#: The paper's Appendix A: (first, last) intervention number of each family, in order.
APPENDIX = {
    "breakout": {
        "paddle_width": (0, 4),
        "paddle_speed": (5, 10),
        "paddle_x": (11, 14),
        "drop_row": (15, 20),
        "drop_column": (21, 38),
    },
    "amidar": {
        "remove_tile": (0, 31),
        "add_tile": (32, 56),
        "drop_enemy": (57, 61),
        "move_enemy": (62, 65),
        "move_player": (66, 69),
    },
    "space_invaders": {
        "drop_enemy": (0, 35),
        "shields": (36, 45),
        "ship_x": (46, 74),
        "drop_enemy_row|drop_enemy_column": (75, 86),
        "flip_shields": (87, 87),
    },
}


def toy(env: gym.Env) -> envs.ToyboxEnv:
    """The Toybox env under ``env``'s wrappers."""
    unwrapped = env.unwrapped
    assert isinstance(unwrapped, envs.ToyboxEnv)
    return unwrapped


def actions(env: gym.Env, seed: int, n: int) -> list[int]:
    """``n`` seeded random actions of ``env``."""
    space = env.action_space
    assert isinstance(space, gym.spaces.Discrete)
    return [int(a) for a in np.random.default_rng(seed).integers(0, int(space.n), n)]


@pytest.fixture(autouse=True)
def _forget_defined() -> Iterator[None]:
    """Interventions a test defines must not be seen by the others."""
    before = {game: dict(table) for game, table in catalogues._DEFINED.items()}
    yield
    for game, table in before.items():
        catalogues._DEFINED[game] = table


@functools.cache
def snapshot(game: str, frames: int) -> dict[str, Any]:
    """The game's state after ``frames`` frames of seeded random play (0: right after reset(seed=0))."""
    env = gym.make(IDS[game])
    env.reset(seed=0)
    for action in actions(env, 0, frames):
        env.step(action)
    state = toy(env).state_json()
    env.close()
    return state


# -- the catalogues -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("game", iv.GAMES)
def test_the_catalogues_keep_appendix_as_families_counts_and_order(game: str) -> None:
    items = catalogues.catalogue(game, defined=False)
    assert len(items) == {"breakout": 39, "amidar": 70, "space_invaders": 88}[game]
    assert len({x.name for x in items}) == len(items)
    for prefixes, (first, last) in APPENDIX[game].items():
        names = [x.name for x in items[first : last + 1]]
        assert all(name.startswith(tuple(prefixes.split("|"))) for name in names), (prefixes, names)
    assert all(x.game == game and x.doc and x.assignments for x in items)
    assert [x.name for x in items] == [catalogues.get(game, x.name).name for x in items]


def test_the_catalogue_values_come_from_the_real_states() -> None:
    breakout = snapshot("breakout", 0)
    assert (breakout["paddle_width"], breakout["paddle_speed"], breakout["paddle"]["position"]["x"]) == (24, 4, 120)
    assert {b["row"] for b in breakout["bricks"]} == set(range(6))
    assert {b["col"] for b in breakout["bricks"]} == set(range(18))
    assert not {24.0, 4.0} & set(catalogues.BREAKOUT_PADDLE_WIDTHS + catalogues.BREAKOUT_PADDLE_SPEEDS)
    assert all(0 < x < 240 and x != 120 for x in catalogues.BREAKOUT_PADDLE_XS)

    board = snapshot("amidar", 0)["board"]
    tiles, width = board["tiles"], board["width"]
    junctions = {(j % width, j // width) for j in board["junctions"]}
    for x, y in catalogues.AMIDAR_REMOVE_TILES:  # the middle of a vertical segment of 5 tiles between two junctions
        assert tiles[y][x] == "Unpainted"
        assert (x, y - 3) in junctions and (x, y + 3) in junctions
        assert all(tiles[y + d][x] != "Empty" and (x, y + d) not in junctions for d in (-2, -1, 1, 2))
    inside = {
        (tx, ty)
        for box in board["boxes"]
        if not box["triggers_chase"]
        for tx in range(box["top_left"]["tx"] + 1, box["bottom_right"]["tx"])
        for ty in range(box["top_left"]["ty"] + 1, box["bottom_right"]["ty"])
    }
    assert all(tiles[y][x] == "Empty" and (x, y) in inside for x, y in catalogues.AMIDAR_ADD_TILES)
    assert all(tiles[y - 1][x] != "Empty" for x, y in catalogues.AMIDAR_ADD_TILES)  # a dead end off a corridor
    assert len({(x, y) for x, y in catalogues.AMIDAR_ADD_TILES}) == 25
    assert all(tiles[y][x] != "Empty" for x, y in catalogues.AMIDAR_PLAYER_TILES)

    invaders = snapshot("space_invaders", 0)
    assert [(e["id"], e["row"], e["col"]) for e in invaders["enemies"]] == [(i, i // 6, i % 6) for i in range(36)]
    assert invaders["ship"]["x"] == 68
    assert len(set(catalogues.SPACE_INVADERS_SHIP_XS)) == 29 and max(catalogues.SPACE_INVADERS_SHIP_XS) == 230


def test_the_ships_range_and_the_amidar_routes_are_the_games_own() -> None:
    # The ship's x stays in [68, 230]: the catalogue's starting points span the range right of its start.
    env = toy(gym.make(IDS["space_invaders"]))
    env.reset(seed=0)
    for _ in range(130):  # the ship comes alive after the lives are shown
        env.step(0)
    for x, kept in ((0, 68), (400, 230)):
        env.write_state_json(iv.apply(env.state_json(), f"ship.x={x}"))
        env.step(0)
        assert env.state_json()["ship"]["x"] == kept
    # move_enemy_i puts enemy i where its route takes it after 100 frames, whatever the seed.
    for seed in (0, 1):
        amidar = toy(gym.make(IDS["amidar"]))
        amidar.reset(seed=seed)
        for _ in range(100):
            amidar.step(0)
        enemies = amidar.state_json()["enemies"]
        for i, (position, step, nxt) in catalogues.AMIDAR_ENEMY_MOVES.items():
            assert enemies[i]["position"] == position and enemies[i]["step"] == step
            assert enemies[i]["ai"] == {"EnemyLookupAI": {"next": nxt, "default_route_index": i}}


# -- what each intervention changes, and keeps --------------------------------------------------------------
Path = tuple[Any, ...]


def targets(state: Any, a: Assignment) -> list[Path]:
    """The concrete paths ``a`` names in ``state`` (for delete: the list it deletes from)."""
    tokens = a.tokens[:-1] if a.op == "delete" else a.tokens
    paths: list[Path] = [()]
    for kind, key, value in tokens:
        nxt: list[Path] = []
        for path in paths:
            node = at(state, path)
            if kind == iv._KEY:
                nxt.append((*path, key))
            elif kind == iv._INDEX:
                nxt.append((*path, key))
            elif kind == iv._ALL:
                nxt += [(*path, j) for j in range(len(node))]
            else:
                nxt += [(*path, j) for j, item in enumerate(node) if item[key] == value]
        paths = nxt
    return paths


def at(state: Any, path: Path) -> Any:
    for key in path:
        state = state[key]
    return state


def changed(before: Any, after: Any, path: Path = ()) -> list[Path]:
    """Every path at which ``after`` differs from ``before`` (a list of another length counts as a whole)."""
    if isinstance(before, dict) and isinstance(after, dict) and before.keys() == after.keys():
        return [p for key in before for p in changed(before[key], after[key], (*path, key))]
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        return [p for j, (x, y) in enumerate(zip(before, after, strict=True)) for p in changed(x, y, (*path, j))]
    return [] if before == after and type(before) is type(after) else [path]


def expected(before: Any, a: Assignment, path: Path) -> Any:
    old = at(before, path)
    if a.op == "set":
        return a.value
    if a.op == "add":
        return old + a.value
    if a.op == "scale":
        return old * a.value
    if a.op == "reverse":
        return old[::-1]
    return None


def check_changes_only_what_it_names(before: dict[str, Any], x: Intervention) -> dict[str, Any]:
    frozen = copy.deepcopy(before)
    after = iv.apply(before, x)
    assert before == frozen, f"{x.name} edited the state it was given"
    named: list[Path] = []
    for a in x.assignments:
        paths = targets(before, a)
        assert paths, f"{x.name}: {a} names nothing in the state"
        named += paths
    diffs = changed(before, after)
    if any(a.op != "set" or any(at(before, p) != a.value for p in targets(before, a)) for a in x.assignments):
        assert diffs, f"{x.name} changed nothing"
    else:  # mid-episode, what it sets may hold already (an enemy the agent shot)
        assert not diffs
    for diff in diffs:
        assert any(diff[: len(p)] == p for p in named), f"{x.name} changed {diff}, which it does not name"
    if len(x.assignments) == 1 and x.assignments[0].op != "delete":
        a = x.assignments[0]
        for path in targets(before, a):
            assert at(after, path) == expected(before, a, path), (x.name, path)
    return after


@pytest.mark.parametrize("game", iv.GAMES)
@pytest.mark.parametrize("frames", [0, MID], ids=["reset", "mid-episode"])
def test_every_intervention_changes_what_it_names_and_nothing_else(game: str, frames: int) -> None:
    before = snapshot(game, frames)
    for x in catalogues.catalogue(game, defined=False):
        after = check_changes_only_what_it_names(before, x)
        if x.name.startswith("drop_enemy_") and game == "amidar":
            i = int(x.name.rsplit("_", 1)[1])
            assert after["enemies"] == before["enemies"][:i] + before["enemies"][i + 1 :]


#: What the game moves by itself after these interventions (checked separately below).
MOVING = {"amidar": ("move_enemy",)}


def persisted(game: str, x: Intervention, applied: dict[str, Any], later: dict[str, Any]) -> None:
    """Asserts that ``later`` (KEEP NOOP frames after ``applied``) still holds what ``x`` set."""
    assert later["lives"] == applied["lives"], f"{x.name}: a life was lost, which undoes some interventions"
    for a in x.assignments:
        if x.name.startswith(MOVING.get(game, ("-",))):
            continue
        if a.op == "delete":
            for path in targets(applied, a):
                assert len(at(later, path)) == len(at(applied, path)), x.name
            continue
        for path in targets(applied, a):
            assert at(later, path) == at(applied, path), f"{x.name}: {path} did not persist"


@pytest.mark.parametrize("game", iv.GAMES)
@pytest.mark.parametrize("frames", [0, MID], ids=["at-reset", "mid-episode"])
def test_every_intervention_persists_through_the_wrapper(game: str, frames: int) -> None:
    """Intervene makes each one at reset or at step 1 after a mid-episode snapshot; the game then keeps it."""
    base = gym.make(IDS[game])
    for x in catalogues.catalogue(game, defined=False):
        env = Intervene(base, x.name, when="always" if frames == 0 else "starting(step=1)")
        obs, info = env.reset(seed=0)
        if frames:
            assert "rlwrappers" not in info
            toy(env).write_state_json(snapshot(game, frames))
            before = toy(env).state_json()
            obs, _, _, _, info = env.step(0)
        assert info["rlwrappers"]["intervene"] == {"active": True, "applied": [x.name]}
        applied = toy(env).state_json()
        assert np.array_equal(obs, toy(env).observe()), f"{x.name}: the observation is not the new state's"
        for a in x.assignments:
            if a.op == "set" and not x.name.startswith(MOVING.get(game, ("-",))):
                assert all(at(applied, p) == a.value for p in targets(applied, a)), x.name
        for _ in range(KEEP):
            _, _, terminated, _, info = env.step(0)
            assert "rlwrappers" not in info and not terminated
        persisted(game, x, applied, toy(env).state_json())
        if frames and game == "amidar" and x.name.startswith("drop_enemy"):
            assert len(applied["enemies"]) == len(before["enemies"]) - 1
    base.close()


def test_moved_amidar_enemies_go_on_from_where_they_were_put() -> None:
    base = gym.make(IDS["amidar"])
    plain = toy(base)
    for i in catalogues.AMIDAR_ENEMY_MOVES:
        env = Intervene(base, f"move_enemy_{i}")
        env.reset(seed=0)
        put = toy(env).state_json()["enemies"][i]
        for _ in range(KEEP):
            env.step(0)
        moved = toy(env).state_json()["enemies"][i]
        plain.reset(seed=0)
        for _ in range(KEEP):
            plain.step(0)
        untouched = plain.state_json()["enemies"][i]
        gone = abs(moved["position"]["x"] - put["position"]["x"]) + abs(moved["position"]["y"] - put["position"]["y"])
        assert 0 < gone <= KEEP * put["speed"]  # it moved along its route, at its speed
        apart = abs(moved["position"]["x"] - untouched["position"]["x"]) + abs(
            moved["position"]["y"] - untouched["position"]["y"]
        )
        assert apart > 64 * 3  # and is still far from where it would have been
        assert moved["ai"]["EnemyLookupAI"]["next"] > put["ai"]["EnemyLookupAI"]["next"]


def test_breakout_restores_the_paddle_width_when_a_ball_is_lost() -> None:
    """Documented: the game undoes a paddle width intervention at the next lost ball; speed and position stay."""
    env = Intervene(gym.make(IDS["breakout"]), ["paddle_width_48", "paddle_speed_8"])
    env.reset(seed=0)
    env.step(1)  # serve
    lives = toy(env).lives
    while toy(env).lives == lives:
        assert toy(env).state_json()["paddle_width"] == 48
        env.step(0)
    state = toy(env).state_json()
    assert (state["paddle_width"], state["paddle_speed"]) == (24, 8)


# -- names, paths and types -----------------------------------------------------------------------------------
def test_unknown_names_raise_with_a_suggestion() -> None:
    with pytest.raises(error.UnknownName, match="Did you mean `drop_row_0`"):
        catalogues.get("breakout", "drop_rwo_0")
    with pytest.raises(error.UnknownName, match="Did you mean `space_invaders`"):
        catalogues.catalogue("space_invader")
    with pytest.raises(error.UnknownName, match="Did you mean `flip_shields`"):
        Intervene(gym.make(IDS["space_invaders"]), "flip_shield")
    with pytest.raises(error.UnknownName, match="Did you mean `move_player_0_15`"):
        catalogues.get("amidar", "move_player_0_16")


@pytest.mark.parametrize(
    ("text", "game", "err", "match"),
    [
        ("paddle_widht=40", "breakout", error.InvalidArgument, r"no field `paddle_widht`.*Did you mean `paddle_width`"),
        (
            "paddle.positon.x=3",
            "breakout",
            error.InvalidArgument,
            r"`paddle` in a breakout state has no field `positon`.*`position`",
        ),
        ("paddle_width=true", "breakout", error.InvalidType, r"`paddle_width` holds a number .* received True"),
        ("bricks[row=2].alive=1", "breakout", error.InvalidType, r"`bricks\[row=2\].alive` holds a bool.*received 1"),
        ("bricks[rwo=2].alive=false", "breakout", error.InvalidArgument, r"no field `rwo` to filter on.*`row`"),
        ("bricks[row=two].alive=false", "breakout", error.InvalidType, r"filter value of `row` must be an integer"),
        ("paddle_width[0]=1", "breakout", error.InvalidArgument, r"`paddle_width` in a breakout state is not a list"),
        ("ship.x=3.5", "space_invaders", error.InvalidType, r"`ship.x` holds an integer .* received 3.5"),
        ("ship.x+=1.5", "space_invaders", error.InvalidType, r"`\+=` needs an integer, received 1.5"),
        ("ship.color.r=300", "space_invaders", error.InvalidType, r"integer in \[0, 255\].*received 300"),
        ("reverse ship.x", "space_invaders", error.InvalidType, r"it holds an integer, not a list"),
        ("enemies[0].alive*=2", "space_invaders", error.InvalidType, r"not a number"),
        ("board.tiles[0][0]=Wall", "amidar", error.InvalidType, r"one of \['Empty', 'Unpainted'"),
        ('player.position={"x": 1}', "amidar", error.InvalidType, r"an object with fields \['x', 'y'\]"),
    ],
)
def test_bad_paths_and_values_fail_when_the_intervention_is_built(
    text: str, game: str, err: type[Exception], match: str
) -> None:
    with pytest.raises(err, match=match):
        Intervention.parse(text, game=game)
    with pytest.raises(err, match=match):  # and through the wrapper, at construction
        Intervene(gym.make(IDS[game]), text)


@pytest.mark.parametrize(
    ("item", "err", "match"),
    [
        ("paddle_width", error.SpecSyntaxError, "write `path=value`"),
        ("bricks[row=2.alive=false", error.SpecSyntaxError, "at column 7: this `\\[` is not closed"),
        ("bricks]=1", error.SpecSyntaxError, "at column 7: this `]` closes nothing"),
        ("paddle..x=1", error.SpecSyntaxError, "expected a field name"),
        ("[0].x=1", error.SpecSyntaxError, "starts with a field name"),
        ("paddle_width=<40>", error.SpecSyntaxError, "write a JSON value"),
        ("del paddle_width", error.InvalidArgument, "must end in"),
        ("paddle_width*=wide", error.InvalidType, "needs a number"),
    ],
)
def test_unreadable_assignments_raise_typed_errors(item: str, err: type[Exception], match: str) -> None:
    with pytest.raises(err, match=match):
        Intervention.parse(item)


def test_bad_assignment_and_intervention_arguments_raise_typed_errors() -> None:
    with pytest.raises(error.UnknownName, match="Did you mean `scale`"):
        Assignment("paddle_width", "scael", 2)
    with pytest.raises(error.InvalidType, match="needs a number"):
        Assignment("paddle_width", "add", "3")
    with pytest.raises(error.InvalidArgument, match="finite"):
        Assignment("paddle_width", "set", float("nan"))
    with pytest.raises(error.InvalidType, match="JSON value"):
        Assignment("paddle_width", "set", object())
    with pytest.raises(error.InvalidArgument, match="takes no value"):
        Assignment("shields[*].data", "reverse", 1)
    with pytest.raises(error.InvalidArgument, match="at least one assignment"):
        Intervention("nothing", "breakout", "", ())
    with pytest.raises(error.UnknownName, match="Did you mean `amidar`"):
        Intervention("x", "amidr", "", (Assignment("lives", "set", 1),))
    with pytest.raises(error.InvalidArgument, match=r"has no key `assignment`.*`assignments`"):
        Intervention.from_dict({"name": "x", "assignment": []})


def test_applying_checks_the_state_it_meets() -> None:
    amidar, breakout = snapshot("amidar", 0), snapshot("breakout", 0)
    with pytest.raises(error.InvalidArgument, match="`enemies` has 5 items, so index 7 is out of range"):
        iv.apply(amidar, "enemies[7].speed=3")
    with pytest.raises(error.InvalidArgument, match="no item of `bricks` has row=9"):
        iv.apply(breakout, "bricks[row=9].alive=false")
    with pytest.raises(error.InvalidType, match=r"`paddle_width` holds a number \(24.0\), received 'wide'"):
        iv.apply(breakout, 'paddle_width="wide"')  # no game given: checked against the state itself
    with pytest.raises(error.InvalidArgument, match=r"has no field `paddle_widht`.*Did you mean `paddle_width`"):
        iv.apply(breakout, "paddle_widht=40")
    with pytest.raises(error.InvalidArgument, match="is for amidar, but the state has no `board`"):
        iv.apply(breakout, catalogues.get("amidar", "drop_enemy_0"))
    with pytest.raises(error.InvalidType, match="`state` must be a dict"):
        iv.apply([], "lives=1")  # type: ignore[arg-type]
    env = Intervene(gym.make(IDS["amidar"]), ["drop_enemy_0"] * 5 + ["move_enemy_1"])
    with pytest.raises(error.InvalidArgument, match="`enemies` has 0 items"):
        env.reset(seed=0)


def test_the_wrapper_rejects_envs_and_stacks_it_cannot_serve() -> None:
    with pytest.raises(error.StateNotSettable, match="FrozenLakeEnv is none of these"):
        Intervene(gym.make("FrozenLake-v1"), "lives=1")
    with pytest.raises(error.InvalidArgument, match="is for amidar, but the env plays breakout"):
        Intervene(gym.make(IDS["breakout"]), catalogues.get("amidar", "drop_enemy_0"))
    resized = gym.wrappers.ResizeObservation(gym.make(IDS["breakout"]), (84, 84))
    with pytest.raises(error.InvalidArgument, match="below every wrapper that changes observations"):
        Intervene(resized, "drop_row_0")
    with pytest.raises(error.InvalidArgument, match="at least one"):
        Intervene(gym.make(IDS["breakout"]), [])
    with pytest.raises(error.InvalidType, match="names, one-line forms or dicts"):
        Intervene(gym.make(IDS["breakout"]), [3])  # type: ignore[list-item]


# -- user interventions and round trips ---------------------------------------------------------------------
def test_users_define_their_own_in_one_line() -> None:
    wide = catalogues.define(
        "test_wide", "breakout", {"paddle_width": 40.0, "paddle.position.x": 60.0}, doc="Wide, left."
    )
    assert catalogues.get("breakout", "test_wide") is wide and catalogues.catalogue("breakout")[-1] is wide
    assert catalogues.catalogue("breakout", defined=False)[-1].name == "drop_column_17"
    assert catalogues.define(
        "test_wide", "breakout", {"paddle_width": 40.0, "paddle.position.x": 60.0}, doc="Wide, left."
    )
    with pytest.raises(error.InvalidArgument, match="already has an intervention `test_wide`"):
        catalogues.define("test_wide", "breakout", {"paddle_width": 41.0})
    with pytest.raises(error.InvalidArgument, match="already has an intervention `drop_row_0`"):
        catalogues.define("drop_row_0", "breakout", {"paddle_width": 41.0})
    with pytest.raises(error.InvalidArgument, match="must be a word"):
        catalogues.define("two words", "breakout", {"paddle_width": 41.0})
    shifted = catalogues.define("test_shift", "space_invaders", "shields[*].x+=5; reverse shields[*].data")
    env = Intervene(gym.make(IDS["space_invaders"]), ["test_shift", "ship.x=100"])
    env.reset(seed=0)
    state = toy(env).state_json()
    assert [s["x"] for s in state["shields"]] == [89, 153, 217] and state["ship"]["x"] == 100
    assert env.interventions[0] is shifted and str(env.interventions[1]) == "ship.x=100"


def test_one_line_forms_and_dicts_round_trip() -> None:
    for game in iv.GAMES:
        for x in catalogues.catalogue(game, defined=False):
            assert Intervention.parse(str(x), game=game).assignments == x.assignments, x.name
            assert Intervention.from_dict(x.to_dict()) == x
    for line in ("a.b[2][*].c-=3", "a[id=4].b*=0.5", "del a[k=v]", "reverse a.b", 'a="two words"', "a=[1, 2]"):
        assert str(Assignment.parse(line)) == line
    assert Assignment.parse("a[k = v] = 2").path == "a[k = v]"
    assert Assignment.parse("a-=2") == Assignment("a", "add", -2)


# -- the wrapper ----------------------------------------------------------------------------------------------
def rollout(env: gym.Env, seed: int, steps: int) -> tuple[list[np.ndarray], list[float], dict[str, Any]]:
    obs, _ = env.reset(seed=seed)
    frames, rewards = [obs], []
    for action in actions(env, seed, steps):
        obs, reward, terminated, truncated, _ = env.step(action)
        frames.append(obs)
        rewards.append(float(reward))
        if terminated or truncated:
            break
    return frames, rewards, toy(env).state_json()


def test_same_seeds_give_bit_identical_runs_and_applying_is_deterministic() -> None:
    def make() -> gym.Env:
        return Intervene(
            gym.make(IDS["space_invaders"]), ["drop_enemy_row_5", "shields_left_9"], when="starting(step=40)"
        )

    a, b = rollout(make(), 3, 120), rollout(make(), 3, 120)
    assert len(a[0]) == len(b[0]) and all(np.array_equal(x, y) for x, y in zip(a[0], b[0], strict=True))
    assert a[1] == b[1] and a[2] == b[2]
    plain = rollout(gym.make(IDS["space_invaders"]), 3, 120)
    assert all(np.array_equal(x, y) for x, y in zip(a[0][:40], plain[0][:40], strict=True))
    assert not np.array_equal(a[0][40], plain[0][40])  # the observation at step 40 shows the change
    state = snapshot("space_invaders", MID)
    x = catalogues.get("space_invaders", "flip_shields")
    assert iv.apply(state, x) == iv.apply(copy.deepcopy(state), x)


def test_the_schedule_says_when_and_each_switch_on_makes_them_once() -> None:
    env = Intervene(gym.make(IDS["breakout"]), "lives+=1", when="window(start=3, stop=5) | window(start=8, stop=9)")
    _, info = env.reset(seed=0)
    assert "rlwrappers" not in info
    lives, applied = [], []
    for t in range(1, 11):
        _, _, _, _, info = env.step(0)
        lives.append(toy(env).state_json()["lives"])
        if "rlwrappers" in info:
            applied.append(t)
    assert applied == [3, 8]
    assert lives == [5, 5, 6, 6, 6, 6, 6, 7, 7, 7]  # made once per switch-on; nothing undone when it ends


def test_records_reach_the_recorder_and_specs_rebuild_the_wrapper(tmp_path: Any) -> None:
    pytest.importorskip("pyarrow")
    env = Intervene(gym.make(IDS["breakout"]), ["drop_row_0", "paddle_width=40"], when="starting(step=3)", label="iv")
    assert env.specs == [
        "intervene(interventions=['drop_row_0', 'paddle_width=40'], when=starting(step=3), label='iv')"
    ]
    recorder = rw.Recorder(env, tmp_path / "log")
    recorder.reset(seed=0)
    for _ in range(6):
        recorder.step(0)
    recorder.close()
    log = rw.read_log(tmp_path / "log")
    assert log.steps["iv.active"].tolist() == [False, False, True, False, False, False]
    assert log.meta["perturbations"][0]["params"] == {"interventions": ["drop_row_0", "paddle_width=40"]}
    assert env.spec is not None
    rebuilt = gym.make(env.spec)  # the recorder closed env
    again = Intervene(gym.make(IDS["breakout"]), ["drop_row_0", "paddle_width=40"], when="starting(step=3)")
    assert rollout(rebuilt, 0, 5)[2] == rollout(again, 0, 5)[2]
    assert not all(b["alive"] for b in rollout(rebuilt, 0, 5)[2]["bricks"] if b["row"] == 0)
    layered = rw.wrap(gym.make(IDS["breakout"]), "intervene(interventions=['paddle_x_24'], when=starting(step=2))")
    layered.reset(seed=0)
    layered.step(0)
    _, _, _, _, info = layered.step(0)
    assert info["rlwrappers"]["intervene"]["applied"] == ["paddle_x_24"]
    assert toy(layered).state_json()["paddle"]["position"]["x"] == 24


def test_an_intervention_given_as_data_is_recorded_as_data() -> None:
    custom = Intervention("narrow", None, "A narrow paddle.", (Assignment.parse("paddle_width*=0.5"),))
    env = Intervene(gym.make(IDS["breakout"]), custom)
    assert env.perturbations[0].params()["interventions"] == [custom.to_dict()]
    assert env.interventions[0].game == "breakout"  # checked against the env's game when bound
    env.reset(seed=0)
    assert toy(env).state_json()["paddle_width"] == 12.0


@pytest.mark.slow
def test_intervene_passes_the_wrapper_contract() -> None:
    from rlwrappers.testing import check_wrapper

    ran = check_wrapper(
        lambda: gym.make(IDS["breakout"]),
        lambda env: Intervene(env, ["drop_row_0", "paddle_x_24"], when="starting(step=5)"),
        steps=20,
        async_vector=False,
    )
    assert {"check_determinism", "check_no_mutation", "check_spec_roundtrip"} <= set(ran)


# -- beyond Toybox: classic control, MuJoCo and ALE -------------------------------------------------------------
def ale_env(env_id: str, **kwargs: Any) -> gym.Env:
    """An ALE env (v5: 4 frames a step, sticky actions), or a skip without ale_py."""
    ale_py = pytest.importorskip("ale_py")
    gym.register_envs(ale_py)
    return gym.make(env_id, **kwargs)


def state_of(env: gym.Env) -> dict[str, Any]:
    return documents.adapter(env).state_json()


def play(env: gym.Env, seed: int, steps: int) -> tuple[list[np.ndarray], list[float]]:
    """Observations and rewards of ``steps`` seeded random actions from ``reset(seed=seed)``."""
    obs, _ = env.reset(seed=seed)
    frames, rewards = [np.asarray(obs)], []
    space = env.action_space
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        if isinstance(space, gym.spaces.Discrete):
            action: Any = int(rng.integers(0, int(space.n)))
        else:
            assert isinstance(space, gym.spaces.Box)
            action = rng.uniform(space.low, space.high).astype(space.dtype)
        obs, reward, terminated, truncated, _ = env.step(action)
        frames.append(np.asarray(obs))
        rewards.append(float(reward))
        if terminated or truncated:
            break
    return frames, rewards


def same_runs(a: tuple[list[np.ndarray], list[float]], b: tuple[list[np.ndarray], list[float]]) -> bool:
    return (
        len(a[0]) == len(b[0]) and all(np.array_equal(x, y) for x, y in zip(a[0], b[0], strict=True)) and a[1] == b[1]
    )


@beyond_toybox
def test_cartpole_interventions_change_what_they_name_and_the_env_plays_on_from_there() -> None:
    env = Intervene(gym.make("CartPole-v1"), "theta=0.1; length*=2")
    plain = gym.make("CartPole-v1")
    plain.reset(seed=0)
    before = state_of(plain)
    obs, info = env.reset(seed=0)
    after = state_of(env)
    assert info["rlwrappers"]["intervene"] == {"active": True, "applied": ["theta=0.1; length*=2"]}
    assert changed(before, after) == [("theta",), ("length",)]
    assert (after["theta"], after["length"]) == (0.1, 1.0)
    cartpole: Any = env.unwrapped
    assert obs.dtype == np.float32 and np.array_equal(obs, np.array(cartpole.state, dtype=np.float32))
    assert cartpole.polemass_length == 0.1 and cartpole.total_mass == 1.1  # the derived constants follow
    # It plays on from the new state, as an env set by hand does, and keeps the new length.
    by_hand: Any = plain.unwrapped
    by_hand.state[2], by_hand.length, by_hand.polemass_length = 0.1, 1.0, 0.1
    for action in (0, 1, 1, 0, 1):
        assert np.array_equal(env.step(action)[0], plain.step(action)[0])
    assert state_of(env)["length"] == 1.0


@beyond_toybox
def test_pendulum_mid_episode_intervention_returns_the_observation_of_the_new_state() -> None:
    env = Intervene(gym.make("Pendulum-v1"), "theta=3.0; theta_dot=-1.5; m*=2", when="starting(step=3)")
    env.reset(seed=0)
    action = np.zeros(1, dtype=np.float32)
    for _ in range(2):
        assert "rlwrappers" not in env.step(action)[4]
    before = state_of(env)
    obs, _, _, _, info = env.step(action)
    assert info["rlwrappers"]["intervene"]["active"]
    after = state_of(env)
    assert (after["theta"], after["theta_dot"], after["m"]) == (3.0, -1.5, 2.0)
    assert after["g"] == before["g"] and after["l"] == before["l"] and after["dt"] == before["dt"]
    assert np.array_equal(obs, np.array([np.cos(3.0), np.sin(3.0), -1.5], dtype=np.float32))
    assert state_of(env)["m"] == 2.0
    for _ in range(5):  # the mass stays; the pendulum swings on from theta = 3
        env.step(action)
    assert state_of(env)["m"] == 2.0 and state_of(env)["theta"] != 3.0


@beyond_toybox
def test_mujoco_interventions_set_qpos_and_qvel_and_render_the_observation() -> None:
    pytest.importorskip("mujoco")
    env = Intervene(gym.make("InvertedPendulum-v5"), "qpos[1]=0.1; qvel[0]+=0.5")
    plain = gym.make("InvertedPendulum-v5")
    plain.reset(seed=0)
    before = state_of(plain)
    obs, _ = env.reset(seed=0)
    after = state_of(env)
    assert changed(before, after) == [("qpos", 1), ("qvel", 0)]
    assert after["qpos"][1] == 0.1 and after["qvel"][0] == before["qvel"][0] + 0.5
    assert np.array_equal(obs, np.concatenate([after["qpos"], after["qvel"]]))  # InvertedPendulum's observation
    mujoco_env: Any = plain.unwrapped
    mujoco_env.set_state(np.array(after["qpos"]), np.array(after["qvel"]))
    for _ in range(5):
        action = np.array([0.3], dtype=np.float32)
        assert np.array_equal(env.step(action)[0], plain.step(action)[0])


#: Breakout's bricks are a bitmap in RAM bytes 0-35; the bottom row is bytes 0, 6, ..., 30 (OCAtari's RAM map).
BREAKOUT_BOTTOM_ROW = "ram[0]=0; ram[6]=0; ram[12]=0; ram[18]=0; ram[24]=0; ram[30]=0"
#: The step of ALE/Breakout-v5 (4 frames a step) from which the wall is built and brick writes stay.
BREAKOUT_WALL_BUILT = 10
#: Freeway: RAM byte 14 is the left chicken's y, drawn with its top at screen row 193 - y (OCAtari's RAM map).
FREEWAY_CHICKEN = "ram[14]=100"


def brick_rows(obs: np.ndarray) -> list[int]:
    """Lit pixels in each of Breakout's 6 brick rows (6 pixels high from y = 57, x = 8..151), top first."""
    return [int((obs[57 + 6 * r : 63 + 6 * r, 8:152].sum(-1) > 0).sum()) for r in range(6)]


def chicken_rows(obs: np.ndarray) -> list[int]:
    """The screen rows where Freeway's left chicken (yellow, x = 44..49) is drawn, lane markings left out."""
    yellow = (obs[:, 44:50] == [252, 252, 84]).all(-1).any(1)
    return [int(y) for y in np.flatnonzero(yellow) if y not in (102, 104)]


@beyond_toybox
def test_breakout_ram_intervention_clears_the_bottom_row_and_the_game_keeps_it() -> None:
    # Breakout builds its wall in the first 37 frames after a reset, undoing earlier writes: make it at step 10.
    env = Intervene(ale_env("ALE/Breakout-v5"), BREAKOUT_BOTTOM_ROW, when=f"starting(step={BREAKOUT_WALL_BUILT})")
    plain = ale_env("ALE/Breakout-v5")
    plain.reset(seed=0)
    env.reset(seed=0)
    for _ in range(BREAKOUT_WALL_BUILT):
        clean, *_ = plain.step(0)
        obs, _, _, _, info = env.step(0)
    assert info["rlwrappers"]["intervene"]["active"]
    assert brick_rows(clean) == [864] * 6  # 18 bricks of 8 x 6 pixels
    assert brick_rows(obs) == [864] * 5 + [0]  # the observation returned shows the row gone
    ram, before = state_of(env)["ram"], state_of(plain)["ram"]
    assert [i for i in range(128) if ram[i] != before[i]] == [0, 6, 12, 18, 24, 30]
    for action in [1] + [0] * 49:  # serve, and miss the ball: a lost ball does not rebuild the wall
        obs, _, terminated, _, info = env.step(action)
        assert not terminated
    assert info["lives"] == 4 and brick_rows(obs) == [864] * 5 + [0]
    assert [state_of(env)["ram"][i] for i in (0, 6, 12, 18, 24, 30)] == [0] * 6


@beyond_toybox
def test_what_breakout_undoes_the_early_wall_and_the_paddle_byte() -> None:
    """Documented: writes to the wall before step 10 are undone, and the paddle byte follows the paddle controller."""
    env = Intervene(ale_env("ALE/Breakout-v5"), BREAKOUT_BOTTOM_ROW)
    obs, _ = env.reset(seed=0)
    assert brick_rows(obs) == [864] * 5 + [0]
    for _ in range(BREAKOUT_WALL_BUILT):
        obs, *_ = env.step(0)
    assert brick_rows(obs) == [864] * 6  # the game built its wall over it
    paddle = Intervene(ale_env("ALE/Breakout-v5"), "ram[72]=100", when="starting(step=12)")
    paddle.reset(seed=0)
    for _ in range(12):
        paddle.step(0)
    assert state_of(paddle)["ram"][72] == 100
    for _ in range(3):
        paddle.step(0)
    assert state_of(paddle)["ram"][72] > 140  # back to where the controller holds it (146)


@beyond_toybox
def test_freeway_ram_intervention_moves_the_chicken_until_a_car_pushes_it_back() -> None:
    env = Intervene(ale_env("ALE/Freeway-v5"), FREEWAY_CHICKEN)
    plain = ale_env("ALE/Freeway-v5")
    plain.reset(seed=0)
    obs, _ = env.reset(seed=0)
    assert chicken_rows(obs) == list(range(93, 101))  # its top at 193 - 100
    ram, before = state_of(env)["ram"], state_of(plain)["ram"]
    assert [i for i in range(128) if ram[i] != before[i]] == [14]
    for _ in range(KEEP):
        obs, *_ = env.step(0)
    assert state_of(env)["ram"][14] == 100 and chicken_rows(obs) == list(range(93, 101))
    for _ in range(20):  # with seed 0, a car hits it after 27 steps and pushes it down the road
        env.step(0)
    assert state_of(env)["ram"][14] < 100


@beyond_toybox
def test_pong_enemy_paddle_is_put_where_written_and_moves_on_from_there() -> None:
    env = Intervene(ale_env("ALE/Pong-v5"), "ram[21]=60", when="starting(step=30)")
    env.reset(seed=0)
    for _ in range(30):
        obs, _, _, _, info = env.step(0)
    assert info["rlwrappers"]["intervene"]["active"]
    enemy = np.flatnonzero((obs[34:194, 16:20] == [213, 130, 74]).all(-1).any(1)) + 34
    assert 60 - 15 <= enemy.min() <= 60 - 15 + 2  # drawn from y = 60 (the frame drawn moves it by up to 2)
    for _ in range(5):
        env.step(0)
    assert state_of(env)["ram"][21] > 60  # its own AI moves it on, towards the ball


@beyond_toybox
def test_drawing_the_ale_observation_leaves_no_trace_in_the_run() -> None:
    """The frame drawn after a RAM write is emulated on a copy: the run goes on as after a bare setRAM."""
    steps = 40
    wrapped = play(Intervene(ale_env("ALE/Freeway-v5"), FREEWAY_CHICKEN, when="starting(step=10)"), 3, steps)
    plain = ale_env("ALE/Freeway-v5")
    obs, _ = plain.reset(seed=3)
    frames, rewards = [obs], []
    rng = np.random.default_rng(3)
    for t in range(1, steps + 1):
        obs, reward, *_ = plain.step(int(rng.integers(0, 3)))
        if t == 10:
            plain.unwrapped.ale.setRAM(14, 100)  # type: ignore[attr-defined]
        frames.append(obs)
        rewards.append(float(reward))
    assert all(np.array_equal(x, y) for x, y in zip(wrapped[0][11:], frames[11:], strict=True))
    assert wrapped[1] == rewards
    assert not np.array_equal(wrapped[0][10], frames[10])  # step 10's observation shows the change


@beyond_toybox
@pytest.mark.parametrize("obs_type", ["ram", "grayscale"])
def test_ale_observations_follow_the_envs_obs_type(obs_type: str) -> None:
    env = Intervene(ale_env("ALE/Freeway-v5", obs_type=obs_type), FREEWAY_CHICKEN)
    plain = ale_env("ALE/Freeway-v5", obs_type=obs_type)
    obs, _ = env.reset(seed=0)
    clean, _ = plain.reset(seed=0)
    assert obs.shape == clean.shape and obs.dtype == clean.dtype
    if obs_type == "ram":
        assert np.array_equal(obs, state_of(env)["ram"]) and obs[14] == 100
    else:
        moved = np.flatnonzero((obs[:, 44:50] != clean[:, 44:50]).any(1))
        assert set(range(93, 101)) <= set(moved.tolist())


@beyond_toybox
@pytest.mark.parametrize(
    ("make", "text", "when"),
    [
        (lambda: gym.make("CartPole-v1"), "x=1.0; masspole*=3", "starting(step=5)"),
        (lambda: ale_env("ALE/Breakout-v5"), BREAKOUT_BOTTOM_ROW, "starting(step=5)"),
    ],
    ids=["CartPole", "Breakout"],
)
def test_same_seeds_give_bit_identical_runs_beyond_toybox(make: Callable[[], gym.Env], text: str, when: str) -> None:
    a, b = play(Intervene(make(), text, when=when), 1, 30), play(Intervene(make(), text, when=when), 1, 30)
    assert same_runs(a, b)
    plain = play(make(), 1, 30)
    assert all(np.array_equal(x, y) for x, y in zip(a[0][:5], plain[0][:5], strict=True))
    assert not np.array_equal(a[0][5], plain[0][5])


@beyond_toybox
@pytest.mark.parametrize(
    ("env_id", "text", "err", "match"),
    [
        ("CartPole-v1", "thetaa=0.1", error.InvalidArgument, r"a CartPoleEnv state has no field `thetaa`.*`theta`"),
        ("CartPole-v1", "theta=true", error.InvalidType, r"`theta` holds a number in a CartPoleEnv state"),
        ("CartPole-v1", "theta[0]=1", error.InvalidArgument, r"`theta` in a CartPoleEnv state is not a list"),
        ("Pendulum-v1", "theta_dot*=fast", error.InvalidType, "needs a number"),
        ("MountainCar-v0", "positon=0.3", error.InvalidArgument, r"Did you mean `position`"),
        ("Acrobot-v1", "LINK_MAS_1=2", error.InvalidArgument, r"Did you mean `LINK_MASS_1`"),
        ("ALE/Freeway-v5", "ram[128]=1", error.InvalidArgument, r"has 128 items, so index 128 is out of range"),
        ("ALE/Freeway-v5", "ram[14]=256", error.InvalidType, r"an integer in \[0, 255\].*received 256"),
        ("ALE/Freeway-v5", "ram[14]=1.5", error.InvalidType, r"received 1.5"),
        ("ALE/Freeway-v5", "ram[14]+=0.5", error.InvalidType, r"`\+=` needs an integer"),
        ("ALE/Freeway-v5", "rma[14]=1", error.InvalidArgument, r"AtariEnv \(freeway\) state has no field `rma`.*`ram`"),
        ("ALE/Freeway-v5", "del ram[3]", error.InvalidArgument, "always has 128 items"),
        ("ALE/Freeway-v5", "drop_row_0", error.InvalidArgument, "is a catalogue name"),
        ("InvertedPendulum-v5", "qpos[2]=0", error.InvalidArgument, "has 2 items, so index 2 is out of range"),
        ("InvertedPendulum-v5", "qpos=[0.1]", error.InvalidType, r"a list of 2 items \(a number each\)"),
        ("InvertedPendulum-v5", "qvel.x=1", error.InvalidArgument, "which has no field `x`"),
    ],
)
def test_bad_paths_beyond_toybox_fail_when_the_wrapper_is_built(
    env_id: str, text: str, err: type[Exception], match: str
) -> None:
    if env_id.startswith("ALE/"):
        env = ale_env(env_id)
    else:
        if env_id.startswith("Inverted"):
            pytest.importorskip("mujoco")
        env = gym.make(env_id)
    with pytest.raises(err, match=match):
        Intervene(env, text)


@beyond_toybox
def test_unsupported_envs_and_other_games_interventions_raise_at_construction() -> None:
    for env_id in ("FrozenLake-v1", "Blackjack-v1"):
        with pytest.raises(error.StateNotSettable, match=f"{env_id.split('-')[0]}Env is none of these"):
            Intervene(gym.make(env_id), "x=1")
    breakout = Intervention("wide", "breakout", "", (Assignment("paddle_width", "set", 40.0),)) if HAS_TOYBOX else None
    if breakout is not None:
        with pytest.raises(error.InvalidArgument, match="is for breakout, but the env is CartPoleEnv"):
            Intervene(gym.make("CartPole-v1"), breakout)
    with pytest.raises(error.StateNotSettable, match="no state before its first reset"):
        documents.adapter(gym.make("Pendulum-v1")).state_json()


@beyond_toybox
def test_values_the_state_cannot_hold_raise_when_written() -> None:
    """What only the current value decides (a byte pushed past 255) fails at the write, naming the byte."""
    env = Intervene(ale_env("ALE/Freeway-v5"), "ram[14]+=250")
    with pytest.raises(error.InvalidArgument, match=r"`ram\[14\]` must be in \[0, 255\].*received 256"):
        env.reset(seed=0)
    cartpole = gym.make("CartPole-v1")
    cartpole.reset(seed=0)
    adapter = documents.adapter(cartpole)
    with pytest.raises(error.InvalidArgument, match=r"needs every field; received none for \['tau'\]"):
        adapter.write_state_json({k: v for k, v in adapter.state_json().items() if k != "tau"})
    with pytest.raises(error.InvalidArgument, match="`theta` must be finite"):
        adapter.write_state_json({**adapter.state_json(), "theta": float("inf")})


@beyond_toybox
def test_specs_rebuild_the_wrapper_beyond_toybox() -> None:
    env = Intervene(gym.make("CartPole-v1"), ["theta=0.1", "length*=2"], when="starting(step=2)")
    assert env.specs == ["intervene(interventions=['theta=0.1', 'length*=2'], when=starting(step=2))"]
    assert env.spec is not None
    assert same_runs(play(gym.make(env.spec), 0, 10), play(env, 0, 10))


@beyond_toybox
@pytest.mark.slow
def test_intervene_passes_the_wrapper_contract_beyond_toybox() -> None:
    from rlwrappers.testing import check_wrapper

    ran = check_wrapper(
        lambda: ale_env("ALE/Freeway-v5"),
        lambda env: Intervene(env, FREEWAY_CHICKEN, when="starting(step=5)"),
        steps=20,
        async_vector=False,
    )
    assert {"check_determinism", "check_no_mutation", "check_env_rng_untouched", "check_spec_roundtrip"} <= set(ran)
    ran = check_wrapper(
        lambda: gym.make("CartPole-v1"),
        lambda env: Intervene(env, ["theta=0.05", "length*=2"], when="starting(step=5)"),
        steps=20,
        async_vector=False,
    )
    assert {"check_determinism", "check_no_mutation", "check_env_rng_untouched", "check_spec_roundtrip"} <= set(ran)


@pytest.mark.parametrize(
    ("env_id", "intervention", "field", "result"),
    [
        ("Pendulum-v1", "m=0", "m", "0"),
        ("Pendulum-v1", "l*=0", "l", "0.0"),
        ("CartPole-v1", "tau=0", "tau", "0"),
        ("CartPole-v1", "length*=2; length-=1.5", "length", "-0.5"),  # made in order
        ("Acrobot-v1", "LINK_MASS_1=-1", "LINK_MASS_1", "-1"),
    ],
)
def test_an_intervention_that_leaves_a_mass_length_or_time_step_at_or_below_zero_is_refused_when_built(
    env_id, intervention, field, result
):
    with pytest.raises(error.InvalidArgument, match=rf"makes `{field}` {result}, but it must stay > 0"):
        Intervene(gym.make(env_id), intervention)
    env = Intervene(gym.make(env_id), f"{field}*=2")  # a positive change is made as before
    env.reset(seed=0)
    assert getattr(env.unwrapped, field) > 0
