"""Makes the card-v2 leaderboards shipped in the docs: one per env, of every zoo agent graded over its training seeds.

Each training method of the zoo (each zoo agent, over its training seeds ``NAME@0,1,2``; one seed where the zoo has
one; Breakout's two shared agents alone) gets a card at the standard size (5 seeds x 10 episodes per arm, 2,000
bootstrap replicates, fast mode), in ``docs/leaderboards/<env>/<method>/`` (``card.json``, ``card.html``,
``badge.svg``), and each env a ``leaderboard.html`` beside them. From the same cards comes the validity matrix of
docs/card-validity.md: each agent trained under a shift against the vanilla agent, per family, in score and in
relative robustness. Run from the repository root::

    python scripts/make_leaderboards.py                          # every env (hours on two cores)
    python scripts/make_leaderboards.py --env CartPole-v1        # one env
    python scripts/make_leaderboards.py --matrix                 # print the validity matrix of the shipped cards

The runs go to ``--work`` (resumable).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BOARDS = ROOT / "docs" / "leaderboards"
#: The trained Atari agents, beside the repository.
SHARED = ROOT.parent / "shared" / "agents"
FILES = ("card.json", "card.html", "badge.svg")
#: docs/card-validity.md holds :func:`matrix` between these markers; a test checks that it is current.
BEGIN, END = "<!-- validity: begin -->", "<!-- validity: end -->"

#: Each env's training methods: folder name -> the agent (a zoo name over its seeds, or a file).
METHODS: Mapping[str, Mapping[str, str]] = {
    "CartPole-v1": {
        name: f"{name}@0,1,2"
        for name in (
            "ppo-CartPole-v1",
            "ppo-CartPole-v1-action_noise",
            "ppo-CartPole-v1-dynamics",
            "ppo-CartPole-v1-init_noise",
            "ppo-CartPole-v1-obs_noise",
            "ppo-CartPole-v1-param_noise",
            "ppo-CartPole-v1-randomized",
            "ppo-CartPole-v1-reward_noise",
        )
    },
    "Pendulum-v1": {
        name: f"{name}@0,1,2"
        for name in (
            "td3-Pendulum-v1",
            "td3-Pendulum-v1-action_noise",
            "td3-Pendulum-v1-dynamics",
            "td3-Pendulum-v1-init_noise",
            "td3-Pendulum-v1-obs_noise",
            "td3-Pendulum-v1-param_noise",
            "td3-Pendulum-v1-reward_noise",
        )
    },
    "rlwrappers/Catch-v0": {name: f"{name}@0,1,2" for name in ("ppo-Catch-v0", "ppo-Catch-v0-fgsm")},
    "Hopper-v5": {name: f"{name}@0" for name in ("ppo-Hopper-v5", "ppo-Hopper-v5-randomized")},
    "BreakoutNoFrameskip-v4": {
        name: str(SHARED / f"{name}-seed0.zip") for name in ("ppo-BreakoutNoFrameskip-v4", "dqn-BreakoutNoFrameskip-v4")
    },
}
#: The card family each training shift of the zoo trains against (reward noise trains against none).
TRAINED_FAMILY = {
    "action_noise": "action_noise",
    "dynamics": "dynamics",
    "init_noise": "init_noise",
    "obs_noise": "obs_noise",
    "param_noise": "param_noise",
    "randomized": "dynamics",
    "fgsm": "attack",
}


def board(env_id: str) -> Path:
    """The folder of ``env_id``'s leaderboard."""
    return BOARDS / env_id.replace("/", "-")


def make(env_id: str, work: Path, workers: int | None) -> Path:
    """Makes ``env_id``'s method cards (resuming) and its leaderboard; returns the leaderboard's path."""
    import rlwrappers as rw
    from rlwrappers import ladders
    from rlwrappers.report.card import write_robustness_leaderboard

    if env_id not in ladders.ladders():  # a provisional ladder's cards never reach the shipped boards
        raise SystemExit(f"{env_id} has no shipped {ladders.LADDER} ladder; its cards are provisional")
    folders = []
    for name, agent in METHODS[env_id].items():
        if agent.endswith(".zip") and not Path(agent).exists():
            print(f"{name}: {agent} is not here (the Atari agents live in shared/agents beside the repository)")
            continue
        out = work / env_id.replace("/", "-") / name
        print(f"{name} on {env_id} ...", flush=True)
        record = rw.robustness_card(agent, env_id, out=out, workers=workers, progress=False)
        target = board(env_id) / name
        target.mkdir(parents=True, exist_ok=True)
        for file in FILES:
            shutil.copyfile(out / file, target / file)
        folders.append(target)
        overall = record["overall"]
        print(f"  {overall['stars']}/5, score {overall['score']:.3f}, {record['timings']['seconds']:.0f} s", flush=True)
    return write_robustness_leaderboard(folders, board(env_id))


def _cards(env_id: str, boards: Path) -> dict[str, dict[str, Any]]:
    """The shipped method cards of ``env_id``, by folder name."""
    folder = boards / env_id.replace("/", "-")
    return {
        name: json.loads((folder / name / "card.json").read_text())
        for name in METHODS[env_id]
        if (folder / name / "card.json").exists()
    }


def _compare(mine: Mapping[str, Any], vanilla: Mapping[str, Any], key: str) -> tuple[str, str]:
    """``mine`` against ``vanilla`` on a family's ``key`` (score, or relative AUSC): the numbers and the verdict."""

    def number(family: Mapping[str, Any]) -> tuple[float, list[float] | None]:
        if key == "score":
            return family["score"], family["score_ci"]
        return family["relative"]["ausc"], family["relative"]["ausc_ci"]

    (a, a_ci), (b, b_ci) = number(mine), number(vanilla)
    if a_ci is not None and b_ci is not None and a_ci[0] > b_ci[1]:
        verdict = "raises"
    elif a_ci is not None and b_ci is not None and a_ci[1] < b_ci[0]:
        verdict = "lowers"
    else:
        verdict = "no clear change"
    return f"{a:.3f} vs {b:.3f}", verdict


def matrix(boards: Path = BOARDS) -> str:
    """The validity matrix: each agent trained under a shift against its env's vanilla agent, per family."""
    lines = [
        "| env | trained under | family | score vs vanilla | in score | relative AUSC vs vanilla | in relative |"
        " expected |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for env_id, methods in METHODS.items():
        cards = _cards(env_id, boards)
        vanilla_name = next(iter(methods))
        if vanilla_name not in cards:
            continue
        vanilla = {f["name"]: f for f in cards[vanilla_name]["families"]}
        for name, record in cards.items():
            if not name.startswith(vanilla_name + "-"):
                continue  # the vanilla agent itself, or another algorithm's (Breakout's DQN): trained under nothing
            shift = name.removeprefix(vanilla_name + "-")
            target = TRAINED_FAMILY.get(shift)
            for family in record["families"]:
                score, verdict = _compare(family, vanilla[family["name"]], "score")
                relative, relative_verdict = _compare(family, vanilla[family["name"]], "relative")
                expected = ""
                if family["name"] == target:
                    expected = "yes" if verdict == "raises" else "**no**"
                lines.append(
                    f"| `{env_id}` | {shift} | {family['name']} | {score} | {verdict} | {relative} |"
                    f" {relative_verdict} | {expected} |"
                )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Makes the leaderboards asked for (all by default), or prints the validity matrix."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--env", action="append", choices=sorted(METHODS), help="only these envs")
    parser.add_argument("--work", default="cards-work", help="where the runs go (default: cards-work in the root)")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: CPU cores)")
    parser.add_argument("--matrix", action="store_true", help="print the validity matrix of the shipped cards")
    args = parser.parse_args(argv)
    if args.matrix:
        print(matrix())
        return 0
    os.environ.setdefault("MUJOCO_GL", "egl")  # MuJoCo's episodes render for the cards without a display
    import rlwrappers.envs  # noqa: F401  (registers rlwrappers/Catch-v0)

    for env_id in args.env or list(METHODS):
        print(f"leaderboard: {make(env_id, Path(args.work), args.workers)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
