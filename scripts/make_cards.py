"""Makes the robustness cards shipped in the docs (docs/cards/) and the table of docs/card.md that lists them.

Each card is made at the standard size (5 seeds x 10 episodes per arm, 2,000 bootstrap replicates, fast mode)
with the current ladder. The runs go to a scratch folder (``--work``, resumable); the docs keep each card's
``card.json``, ``card.html`` and ``badge.svg``. Run from the repository root::

    python scripts/make_cards.py                   # every card (about two hours on two cores)
    python scripts/make_cards.py --only ppo-CartPole-v1 td3-Pendulum-v1

``--table`` prints the Markdown table of the shipped cards without running anything; docs/card.md holds it
between the markers below, and a test checks that it is current.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CARDS = ROOT / "docs" / "cards"
PAGE = ROOT / "docs" / "card.md"
BEGIN, END = "<!-- cards: begin -->", "<!-- cards: end -->"
#: The trained Atari agents, beside the repository (relative to its root, where the script runs).
SHARED = "../shared/agents"

#: The shipped cards: folder name -> (agent, env ID).
SHIPPED = {
    "ppo-CartPole-v1": ("ppo-CartPole-v1", "CartPole-v1"),
    "ppo-CartPole-v1-randomized": ("ppo-CartPole-v1-randomized", "CartPole-v1"),
    "td3-Pendulum-v1": ("td3-Pendulum-v1", "Pendulum-v1"),
    "ppo-Catch-v0": ("ppo-Catch-v0", "rlwrappers/Catch-v0"),
    "ppo-Catch-v0-fgsm": ("ppo-Catch-v0-fgsm", "rlwrappers/Catch-v0"),
    "ppo-Hopper-v5": ("ppo-Hopper-v5", "Hopper-v5"),
    "ppo-Hopper-v5-randomized": ("ppo-Hopper-v5-randomized", "Hopper-v5"),
    "ppo-BreakoutNoFrameskip-v4": (f"{SHARED}/ppo-BreakoutNoFrameskip-v4-seed0.zip", "BreakoutNoFrameskip-v4"),
    "dqn-BreakoutNoFrameskip-v4": (f"{SHARED}/dqn-BreakoutNoFrameskip-v4-seed0.zip", "BreakoutNoFrameskip-v4"),
    # The same PPO agent on Toybox's Breakout, a game it was not trained on, for seed 000's interventions.
    "ppo-BreakoutNoFrameskip-v4-on-toybox": (
        f"{SHARED}/ppo-BreakoutNoFrameskip-v4-seed0.zip",
        "rlwrappers/ToyboxBreakout-v0",
    ),
}
FILES = ("card.json", "card.html", "badge.svg")


def table(cards: Path = CARDS) -> str:
    """The Markdown table of the cards in ``cards``, in :data:`SHIPPED` order (card-v1's columns for its cards)."""
    records = {
        name: json.loads((cards / name / "card.json").read_text())
        for name in SHIPPED
        if (cards / name / "card.json").exists()
    }
    graded = any(record["format_version"] >= 2 for record in records.values())
    measure = "score" if graded else "AUSC"
    lines = [
        f"| agent | env | rating | {'P(stars) | clean skill | score' if graded else 'mean AUSC'} | worst family |"
        f" attack {measure} | dynamics {measure} | card |",
        f"|---|---|---|---|---|---|---|---|{'---|---|' if graded else ''}",
    ]
    for name, record in records.items():
        overall = record["overall"]
        areas = {f["name"]: f["score" if graded else "ausc"] for f in record["families"]}

        def area(family: str, areas: dict[str, float | None] = areas) -> str:
            value = areas.get(family)
            return "-" if value is None else f"{value:.3f}"

        stars = "not rated" if overall["stars"] is None else f"{overall['stars']}/5"
        if graded:
            sure = "-" if overall["stars"] is None else f"{overall['stars_probability'][overall['stars'] - 1]:.2f}"
            numbers = f" {sure} | {record['clean']['skill']:.3f} | {overall['score']:.3f} |"
        else:
            numbers = f" {overall['mean_ausc']:.3f} |"
        lines.append(
            f"| `{record['agent']['name']}` | `{record['env_id']}` | ![{stars}](cards/{name}/badge.svg) |{numbers}"
            f" {overall['worst_family']} | {area('attack')} | {area('dynamics')} | [page](cards/{name}/card.html) |"
        )
    return "\n".join(lines)


def write_table() -> None:
    """Replaces the table between the markers of docs/card.md."""
    text = PAGE.read_text()
    head, rest = text.split(BEGIN)
    _, tail = rest.split(END)
    PAGE.write_text(f"{head}{BEGIN}\n{table()}\n{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    """Makes the cards asked for (all by default), copies them into docs/cards and rewrites the table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="+", choices=sorted(SHIPPED), help="make only these cards")
    parser.add_argument("--work", default="cards-work", help="where the runs go (default: cards-work in the root)")
    parser.add_argument("--workers", type=int, default=None, help="worker processes (default: CPU cores)")
    parser.add_argument("--table", action="store_true", help="print the docs table of the shipped cards and stop")
    args = parser.parse_args(argv)
    if args.table:
        print(table())
        return 0
    import rlwrappers as rw

    os.chdir(ROOT)
    for name in args.only or SHIPPED:
        agent, env_id = SHIPPED[name]
        if agent.endswith(".zip") and not Path(agent).exists():
            print(f"{name}: {agent} is not here (the Atari agents live in shared/agents beside the repository)")
            continue
        work = Path(args.work) / name
        print(f"{name} on {env_id} ...", flush=True)
        record = rw.robustness_card(agent, env_id, out=work, workers=args.workers, progress=False)
        target = CARDS / name
        target.mkdir(parents=True, exist_ok=True)
        for file in FILES:
            shutil.copyfile(work / file, target / file)
        print(f"  {record['overall']}, {record['timings']['seconds']:.0f} s", flush=True)
    write_table()
    return 0


if __name__ == "__main__":
    sys.exit(main())
