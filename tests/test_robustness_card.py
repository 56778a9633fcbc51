"""The robustness card end to end: real runs of zoo agents on their ladders, the record, the files, the command."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import helpers_robustness_cards as hand_built
import numpy as np
import pytest
from helpers_scripts import script

import rlwrappers as rw
from rlwrappers import cli, ladders
from rlwrappers.error import IncompatibleSpace, InvalidArgument, UnknownName
from rlwrappers.metrics import card as scores
from rlwrappers.metrics import grade
from rlwrappers.report.card import read_robustness_card
from rlwrappers.studies.robustness_card import episode_returns, robustness_card

ROOT = Path(__file__).resolve().parents[1]

SMALL: dict[str, Any] = dict(seeds=2, episodes=2, reps=200, workers=1, progress=False)


def numbers(record: dict[str, Any]) -> dict[str, Any]:
    """Everything of a record that must repeat: all but its timings."""
    return {k: v for k, v in record.items() if k != "timings"}


@pytest.fixture(scope="module")
def cartpole(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("card") / "cartpole"
    robustness_card("ppo-CartPole-v1", "CartPole-v1", out=out, **SMALL)
    return out


def test_a_card_holds_every_family_of_the_ladder_scored_from_its_logs(cartpole: Path) -> None:
    record = read_robustness_card(cartpole)
    assert {p.name for p in cartpole.iterdir()} >= {"card.json", "card.html", "badge.svg", "runs"}
    ladder = ladders.ladder("CartPole-v1")
    assert [f["name"] for f in record["families"]] == list(ladder.families)
    assert record["settings"]["complete"] and record["overall"]["stars"] in range(1, 6)
    assert record["random_return"] == ladder.random_return
    runs = rw.open_evaluation(cartpole / "runs")

    def returns(shift: str) -> np.ndarray:
        paths = runs.index.loc[runs.index["shift"] == shift].sort_values("seed")["path"]
        return np.stack([rw.read_log(runs.path / p).episodes["return"].to_numpy(dtype=float) for p in paths])

    clean = returns("baseline")
    assert record["clean"]["mean_return"] == pytest.approx(float(clean.mean()), abs=0)
    assert (record["reference_return"], record["reference"]["return"]) == (500.0, 500.0)
    reference = ladder.reference_return
    assert record["clean"]["skill"] == pytest.approx((clean.mean() - ladder.random_return) / (500.0 - 22.7877))
    for family in record["families"]:
        levels = [returns(f"{family['name']}@{level}") for level in range(1, 6)]
        skill = grade.skill([level.mean() for level in levels], ladder.random_return, reference)
        assert [lv["skill"] for lv in family["levels"]] == pytest.approx(skill, abs=1e-12)
        assert family["score"] == pytest.approx(float(np.clip(skill, 0, 1).mean()), abs=1e-12)
        assert family["stars"] == grade.stars(family["score"], grade.FAMILY_STARS)
        # card-v1's numbers, relative to the clean return: shown beside, as card-v1 computed them
        normalized = [1.0 - scores.impact(clean, level, ladder.random_return) for level in levels]
        assert [lv["normalized"] for lv in family["levels"]] == pytest.approx(normalized, abs=1e-12)
        assert family["relative"]["ausc"] == pytest.approx(scores.ausc(normalized), abs=1e-12)
        assert family["relative"]["tolerated"] == scores.tolerated_level(normalized)
        assert family["score_ci"][0] <= family["score"] <= family["score_ci"][1]
    areas = {f["name"]: f["score"] for f in record["families"]}
    overall = record["overall"]
    assert overall["score"] == pytest.approx(float(np.mean(list(areas.values()))), abs=1e-12)
    assert overall["stars"] == min(grade.stars(overall["score"]), grade.stars(min(areas.values()), grade.FAMILY_STARS))
    assert overall["worst_family"] == min(areas, key=lambda k: areas[k])
    assert sum(overall["stars_probability"]) == pytest.approx(1.0) and len(overall["stars_probability"]) == 5
    attack = next(f for f in record["families"] if f["name"] == "attack")
    assert all(0.0 <= lv["flip_rate"] <= 1.0 for lv in attack["levels"])
    by_family = {f["name"]: [lv["flip_rate"] for lv in f["levels"]] for f in record["families"]}
    assert all(rate is None for rate in by_family["init_noise"] + by_family["dynamics"])  # they change states
    assert all(0.0 <= rate <= 1.0 for rate in by_family["obs_noise"] + by_family["sticky_action"])
    # Interventions: shown, not rated, each paired with the clean arm.
    assert [x["name"] for x in record["interventions"]] == [i.name for i in ladder.interventions]
    assert "intervention" not in areas
    for shown, entry in zip(ladder.interventions, record["interventions"], strict=True):
        shifted = returns(shown.arm)
        assert entry["mean_return"] == float(shifted.mean())
        assert entry["impact"] == pytest.approx(scores.impact(clean, shifted, ladder.random_return), abs=1e-12)
        assert entry["skill"] == pytest.approx(float(grade.skill(shifted.mean(), ladder.random_return, 500.0)))
        assert entry["doc"] == shown.doc and entry["spec"][0].startswith("intervene(")
    push = next(x for x in record["interventions"] if x["name"] == "cart_push")  # the cart leaves the track
    assert 0.5 < push["impact"] and push["impact_ci"][0] <= push["impact"] <= push["impact_ci"][1]
    recovery = record["recovery"]
    assert recovery["episodes"] == 4 and 0.0 <= recovery["never_share"] <= 1.0
    page = (cartpole / "card.html").read_text()
    assert "data:image/gif;base64," in page  # the clean and the worst episode, played again from their logs


def test_same_seeds_give_the_same_card_and_a_resumed_card_equals_it(cartpole: Path, tmp_path: Path) -> None:
    first = read_robustness_card(cartpole)
    again = robustness_card("ppo-CartPole-v1", "CartPole-v1", out=tmp_path / "again", **SMALL)
    assert numbers(again) == numbers(first)
    resumed = tmp_path / "resumed"
    shutil.copytree(cartpole, resumed)
    shutil.rmtree(resumed / "runs/logs/agent/sticky_action_3")  # as if interrupted before these runs
    (resumed / "card.json").unlink()
    record = robustness_card("ppo-CartPole-v1", "CartPole-v1", out=resumed, **SMALL)
    assert numbers(record) == numbers(first)


@pytest.mark.slow
def test_exact_cards_agree_across_worker_counts(tmp_path: Path) -> None:
    kwargs: dict[str, Any] = {**SMALL, "mode": "exact", "families": ["obs_noise", "attack", "param_noise"]}
    one = robustness_card("td3-Pendulum-v1", "Pendulum-v1", out=tmp_path / "one", **kwargs)
    kwargs["workers"] = 2
    two = robustness_card("td3-Pendulum-v1", "Pendulum-v1", out=tmp_path / "two", batch=3, **kwargs)
    assert numbers(one) == numbers(two)
    assert one["overall"]["stars"] is None and not one["settings"]["complete"]  # a subset is not rated
    assert one["recovery"] is None


def test_bad_requests_are_refused_before_any_run(tmp_path: Path) -> None:
    with pytest.raises(UnknownName, match="not a registered Gymnasium ID"):
        robustness_card("ppo-CartPole-v1", "MountainCart-v0", out=tmp_path / "a", **SMALL)
    with pytest.raises(IncompatibleSpace, match="does not match the env's Discrete"):  # a provisional ladder's env
        robustness_card("ppo-CartPole-v1", "MountainCar-v0", out=tmp_path / "a", **SMALL)
    assert not list((tmp_path / "a").rglob("*.parquet"))
    with pytest.raises(UnknownName, match=r"`mode` must be one of \['fast', 'exact'\], received 'quick'"):
        robustness_card("ppo-CartPole-v1", "CartPole-v1", out=tmp_path / "b", mode="quick")
    with pytest.raises(InvalidArgument, match=r"`seeds` must be >= 1, received 0"):
        robustness_card("ppo-CartPole-v1", "CartPole-v1", out=tmp_path / "e", seeds=0)
    with pytest.raises(UnknownName, match="Did you mean `obs_noise`"):
        robustness_card("ppo-CartPole-v1", "CartPole-v1", out=tmp_path / "c", families=["obs_nois"])
    with pytest.raises(InvalidArgument, match="`agent` must name at least one trained agent, received an empty list"):
        robustness_card([], "CartPole-v1", out=tmp_path / "f", **SMALL)
    with pytest.raises(IncompatibleSpace, match="action_space"):
        robustness_card("td3-Pendulum-v1", "CartPole-v1", out=tmp_path / "d", **SMALL)
    assert not (tmp_path / "d" / "runs" / "logs").exists()


def test_the_command_writes_a_card_and_ranks_cards(
    cartpole: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "subset"
    argv = ["card", "--env", "CartPole-v1", "--agent", "ppo-CartPole-v1@1", "--out", str(out)]
    status = cli.main([*argv, "--families", "obs_noise,sticky_action", "--seeds", "2", "--episodes", "2", "--quiet"])
    assert status == 0
    printed = capsys.readouterr().out
    assert "not rated" in printed and "obs_noise" in printed and "card.html" in printed
    record = json.loads((out / "card.json").read_text())
    assert record["agent"]["name"] == "ppo-CartPole-v1@1" and record["settings"]["families"] == [
        "obs_noise",
        "sticky_action",
    ]
    board = tmp_path / "board"
    assert cli.main(["card", "--compare", str(cartpole), str(out), "--out", str(board)]) == 0
    page = (board / "leaderboard.html").read_text()
    assert page.index("ppo-CartPole-v1@1") > page.index(">ppo-CartPole-v1<")  # the rated card ranks first
    assert cli.main(["card", "--env", "CartPole-v1", "--agent", "td3-Pendulum-v1", "--out", str(tmp_path / "x")]) == 2
    assert "does not match the env's" in capsys.readouterr().err


def test_list_names_every_ladder(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["list", "ladders"]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("Severity ladders (card-v2")
    *lines, other = printed.splitlines()[1:]
    envs = [line for line in lines if line.startswith("  ")]
    assert sorted(line.split()[0] for line in envs) == ladders.ladders()
    assert [line.split()[0] for line in lines if not line.startswith(" ")] == list(ladders.SUITES)
    assert other.startswith("any other registered env: a provisional ladder")
    assert len({line.index(line.split()[1]) for line in envs}) == 1  # the families line up in one column
    assert "rlwrappers/Catch-v0" in printed and "corruptions" in printed


def test_the_shipped_cards_are_valid_and_the_docs_table_is_theirs() -> None:
    make_cards = script("make_cards")
    shipped = sorted(p.name for p in (ROOT / "docs" / "cards").iterdir())
    assert shipped == sorted(name for name in make_cards.SHIPPED if (ROOT / "docs/cards" / name).exists())
    assert {"ppo-CartPole-v1", "ppo-Catch-v0", "ppo-Catch-v0-fgsm", "td3-Pendulum-v1"} <= set(shipped)
    for name in shipped:
        record = read_robustness_card(ROOT / "docs" / "cards" / name)  # validates against the schema
        assert record["ladder"] in ladders.versions() and record["settings"]["complete"]
        assert record["settings"]["seeds"] == [0, 1, 2, 3, 4] and record["settings"]["reps"] == 2000
        ladder = ladders.ladder(record["env_id"], record["ladder"])
        assert {f["name"] for f in record["families"]} == set(ladder.families)
        assert [x["name"] for x in record["interventions"]] == [i.name for i in ladder.interventions]
        flipping = [f for f in record["families"] if f["name"] not in ("init_noise", "dynamics")]
        assert all(level["flip_rate"] is not None for f in flipping for level in f["levels"])  # made with flips
    page = (ROOT / "docs" / "card.md").read_text()
    assert f"{make_cards.BEGIN}\n{make_cards.table()}\n{make_cards.END}" in page


def test_on_the_zoos_agents_the_weaker_one_never_ranks_higher_and_a_dominating_table_never_grades_lower(
    cartpole: Path, tmp_path: Path
) -> None:
    weak_dir = tmp_path / "obs_noise"
    robustness_card("ppo-CartPole-v1-obs_noise", "CartPole-v1", out=weak_dir, **SMALL)
    strong, weak = read_robustness_card(cartpole), read_robustness_card(weak_dir)
    assert weak["clean"]["mean_return"] < strong["clean"]["mean_return"]
    board = tmp_path / "board"
    cli.main(["card", "--compare", str(weak_dir), str(cartpole), "--out", str(board)])
    page = (board / "leaderboard.html").read_text()
    ranks = dict(re.findall(r'<tr data-card="(\d+)" data-rank="(\d*)">', page))
    if strong["overall"]["score"] > weak["overall"]["score"]:
        assert int(ranks["1"]) < int(ranks["0"])
    # The two agents' episode tables, and the better of the two in every episode: it dominates both.
    ladder = ladders.ladder("CartPole-v1")
    tables = [
        episode_returns(e, {p: rw.read_log(e.path / p).episodes for p in e.index["path"]})
        for e in (rw.open_evaluation(cartpole / "runs"), rw.open_evaluation(weak_dir / "runs"))
    ]
    best = {arm: np.maximum(tables[0][arm], tables[1][arm]) for arm in tables[0]}

    def graded(t: dict[str, np.ndarray]) -> grade.CardGrade:
        families = {name: [t[a.name] for a in ladder.arms(name)] for name in ladder.families}
        return grade.grade(t["baseline"], families, ladder.random_return, 500.0, np.random.default_rng(0), reps=200)

    a, b, top = (graded(t) for t in (*tables, best))
    for g in (a, b):
        assert top.score.value >= g.score.value and top.stars >= g.stars
        assert all(top.families[n].score.value >= g.families[n].score.value for n in g.families)


def test_a_training_method_is_graded_over_its_training_seeds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kwargs: dict[str, Any] = {**SMALL, "families": ["obs_noise", "sticky_action"]}
    method = robustness_card("ppo-CartPole-v1@0,1,2", "CartPole-v1", out=tmp_path / "method", **kwargs)
    assert [run["name"] for run in method["runs"]] == [f"ppo-CartPole-v1@{s}" for s in range(3)]
    assert method["agent"]["name"] == "ppo-CartPole-v1@0,1,2" and method["agent"]["sha256"] is None
    assert sorted(p.name for p in (tmp_path / "method" / "runs").iterdir()) == ["run0", "run1", "run2"]
    assert method["clean"]["mean_return"] == pytest.approx(np.mean([r["clean_mean_return"] for r in method["runs"]]))
    alone = robustness_card("ppo-CartPole-v1@1", "CartPole-v1", out=tmp_path / "one", **kwargs)
    assert method["runs"][1]["score"] == alone["overall"]["score"]  # each trained agent graded alone, as its own card
    assert "runs" not in alone
    # The same runs named one by one on the command line: the same card but for its name.
    argv = ["card", "--env", "CartPole-v1", "--agent", "ppo-CartPole-v1@0", "--agent", "ppo-CartPole-v1@1"]
    argv += ["--agent", "ppo-CartPole-v1@2", "--families", "obs_noise,sticky_action", "--seeds", "2"]
    argv += ["--episodes", "2", "--reps", "200", "--workers", "1", "--quiet", "--out", str(tmp_path / "cli")]
    assert cli.main(argv) == 0
    assert "trained agent ppo-CartPole-v1@2: score" in capsys.readouterr().out
    again = read_robustness_card(tmp_path / "cli")
    assert again["agent"]["name"] == "ppo-CartPole-v1@0 + ppo-CartPole-v1@1 + ppo-CartPole-v1@2"
    assert {k: v for k, v in numbers(again).items() if k != "agent"} == {
        k: v for k, v in numbers(method).items() if k != "agent"
    }
    page = (tmp_path / "method" / "card.html").read_text()
    assert 'id="runs"' in page and 'data-path="$.runs[2].score"' in page


def test_the_validity_matrix_compares_each_trained_agent_with_the_vanilla_one_per_family(tmp_path: Path) -> None:
    make_leaderboards = script("make_leaderboards")
    vanilla = hand_built.graded(hand_built.cartpole())
    trained = json.loads(json.dumps(vanilla))
    noise = next(f for f in trained["families"] if f["name"] == "obs_noise")
    noise["score"], noise["score_ci"] = 0.95, [0.93, 0.97]  # above the vanilla agent's interval
    for name, record in (("ppo-CartPole-v1", vanilla), ("ppo-CartPole-v1-obs_noise", trained)):
        (tmp_path / "CartPole-v1" / name).mkdir(parents=True)
        (tmp_path / "CartPole-v1" / name / "card.json").write_text(json.dumps(record))
    for name in ("ppo-BreakoutNoFrameskip-v4", "dqn-BreakoutNoFrameskip-v4"):  # two algorithms, neither trained
        (tmp_path / "BreakoutNoFrameskip-v4" / name).mkdir(parents=True)  # under a shift: no row
        (tmp_path / "BreakoutNoFrameskip-v4" / name / "card.json").write_text(json.dumps(vanilla))
    rows = make_leaderboards.matrix(tmp_path).splitlines()[2:]
    assert len(rows) == len(vanilla["families"])  # one trained agent, every family
    obs = next(row for row in rows if "| obs_noise |" in row)
    assert "| 0.950 vs " in obs and "| raises |" in obs and obs.endswith("| yes |")
    action = next(row for row in rows if "| action_noise |" in row)
    assert "| no clear change |" in action and action.endswith("|  |")  # not the family it was trained under


def test_the_validity_page_holds_the_shipped_leaderboards_matrix() -> None:
    make_leaderboards = script("make_leaderboards")
    page = (ROOT / "docs" / "card-validity.md").read_text()
    assert f"{make_leaderboards.BEGIN}\n{make_leaderboards.matrix()}\n{make_leaderboards.END}" in page
    for env_id in make_leaderboards.METHODS:
        folder = make_leaderboards.board(env_id)
        for card in folder.glob("*/card.json"):
            record = read_robustness_card(card)
            assert record["ladder"] == ladders.LADDER and record["settings"]["complete"]
            assert card.parent.name in make_leaderboards.METHODS[env_id]
        if folder.exists():
            assert (folder / "leaderboard.html").exists()


def test_per_entry_levels_repeat_over_stacked_frames() -> None:
    from rlwrappers.studies.recipe import env_side_frames, input_frames, tiled

    attack = {"name": "fgsm", "eps": [0.1, 0.2], "quantize": True, "when": "always"}
    assert tiled([attack], 3)[0]["eps"] == [0.1, 0.2] * 3 and attack["eps"] == [0.1, 0.2]
    init = {"name": "init_noise", "std": [0.1, 0.2], "dist": "gaussian", "when": "always"}
    assert tiled([init], 3)[0]["std"] == [0.1, 0.2]  # a state's entries, not an observation's
    stack = {"wrapper": "rlwrappers.wrappers.frames.StackFrames", "kwargs": {"frames": 2, "channels_order": None}}
    record = {"vec_env_wrappers": [stack], "frame_stack": 4}
    assert (env_side_frames(record), input_frames(record), input_frames({})) == (2, 8, 1)
