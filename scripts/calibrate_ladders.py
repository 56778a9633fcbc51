"""Rewrites the shipped severity ladders of the current version, and measures their families' effects.

    python scripts/calibrate_ladders.py                       # every env's file, from the measured effects
    python scripts/calibrate_ladders.py CartPole-v1           # one env
    python scripts/calibrate_ladders.py --suite mujoco        # one suite (prints each env's seconds)
    python scripts/calibrate_ladders.py --out /tmp/x          # elsewhere, e.g. to compare
    python scripts/calibrate_ladders.py --measure CartPole-v1 # play the reference agents first (minutes)
    python scripts/calibrate_ladders.py --measure BreakoutNoFrameskip-v4 --agents-dir ../shared/agents

Each env, built as its ladder says (``gym.make`` with its ``env_kwargs``, then its preprocessing: for
BreakoutNoFrameskip-v4, SB3's Atari preprocessing with whole games as episodes, which needs ``ale_py``), is played
for 10,000 steps (Breakout's: agent steps) by a uniform-random policy with fixed seeds for its scales and random
return. ``--measure`` then plays every point of each family's grid with the env's vanilla reference agents
(:mod:`rlwrappers.studies.ladder_effects`) and keeps the skill drops in ``rlwrappers/ladders/<version>/effects/``;
the levels are chosen from those drops (:mod:`rlwrappers.ladders.effect`), or are card-v1's where no effect was
measured. The files come out byte for byte the same every time; ``tests/test_ladders.py`` checks that the shipped
ones still do. The script prints each file it wrote, and per family its levels' skill drop on the reference
agents and which criteria they meet.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import rlwrappers.envs  # noqa: F401  (registers rlwrappers/Catch-v0)

from rlwrappers.ladders import LADDER, SUITES, ladder, suite_envs, write
from rlwrappers.ladders.calibration import DIRECTORY, file_name
from rlwrappers.ladders.definition import EFFECTS_FROM, ENVS


def _families(data: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Every family and sub-family of a ladder file, as (name, entry)."""
    out = []
    for name, family in data["families"].items():
        if "sub_families" in family:
            out += [(f"{name}.{sub}", entry) for sub, entry in family["sub_families"].items()]
        else:
            out.append((name, family))
    return out


#: docs/card-validity.md holds :func:`table` between these markers; a test checks that it is current.
BEGIN, END = "<!-- ladders: begin -->", "<!-- ladders: end -->"


def _yes(value: bool) -> str:
    return "yes" if value else "**no**"


def table() -> str:
    """The Markdown table of every shipped ladder's families: levels, their measured drops, the criteria."""
    lines = [
        "| env | family | levels 1 .. 5 | skill drop at levels 1 .. 5 | impact at levels 1 .. 5 |"
        " level 1 barely noticeable | level 5 severe | rising |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for env_id in ENVS:
        data = ladder(env_id).families
        for name, family in _families({"families": data}):
            calibration = family.get("calibration") or data[name.partition(".")[0]].get("calibration", {})
            if calibration.get("by") != "effect":
                lines.append(f"| `{env_id}` | {name} | card-v1's | not measured | - | - | - | - |")
                continue
            values = ", ".join(f"{v:g}" for v in calibration["values"])
            drops = ", ".join(f"{d:.2f}" for d in calibration["drops"])
            clean = calibration.get("clean_skill")
            impacts = ", ".join(f"{d / clean:.2f}" for d in calibration["drops"]) if clean else "-"
            criteria = calibration["criteria"]
            lines.append(
                f"| `{env_id}` | {name} | {values} | {drops} | {impacts} |"
                f" {_yes(criteria['level_1_barely_noticeable'])} | {_yes(criteria['level_5_severe'])} |"
                f" {_yes(calibration['rising'])} |"
            )
    return "\n".join(lines)


def report(data: dict[str, Any]) -> None:
    """Prints each family's levels' skill drop on the reference agents, or that its levels are constants."""
    for name, family in _families(data):
        calibration = family.get("calibration") or data["families"][name.partition(".")[0]].get("calibration", {})
        if calibration.get("by") != "effect":
            print(f"  {name:<34} card-v1's constants (no effect measured)")
            continue
        drops = ", ".join(f"{d:.3f}" for d in calibration["drops"])
        criteria = calibration["criteria"]
        met = [
            f"level 1 {'barely noticeable' if criteria['level_1_barely_noticeable'] else 'NOTICEABLE'}",
            f"level 5 {'severe' if criteria['level_5_severe'] else 'NOT SEVERE'}",
            "rising" if calibration["rising"] else "NOT RISING",
        ]
        print(f"  {name:<34} values {calibration['values']}; drops {drops}; {', '.join(met)}")


def main(argv: list[str] | None = None) -> int:
    """Measures effects where asked, writes the files, prints what it wrote; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "env_ids", nargs="*", help=f"the envs to calibrate (default: every env of every {LADDER} suite)"
    )
    parser.add_argument(
        "--suite", action="append", choices=list(SUITES), help="every env of this suite (repeat for several)"
    )
    parser.add_argument("--out", default=None, help=f"the folder to write to (default: rlwrappers/ladders/{LADDER})")
    parser.add_argument("--measure", action="store_true", help="measure the families' effects first (minutes)")
    parser.add_argument("--keys", default=None, help="with --measure: only these grids, separated by commas")
    parser.add_argument("--agents-dir", default=None, help="the folder of reference agents that are files")
    parser.add_argument("--work", default=None, help="with --measure: the runs' folder (resumable; default: temp)")
    parser.add_argument("--workers", type=int, default=None, help="with --measure: worker processes")
    parser.add_argument("--table", action="store_true", help="print the Markdown table of the shipped ladders")
    args = parser.parse_args(argv)
    if args.table:
        print(table())
        return 0
    env_ids = args.env_ids or [env_id for suite in args.suite or SUITES for env_id in suite_envs(suite)]
    if args.measure:
        from rlwrappers.studies.ladder_effects import measure_effects, write_effects

        work = args.work or tempfile.mkdtemp(prefix="ladder-effects-")
        for env_id in env_ids:
            if env_id in EFFECTS_FROM:
                print(f"{env_id} takes {EFFECTS_FROM[env_id]}'s measured effects: nothing to measure")
                continue
            keys = args.keys.split(",") if args.keys else None
            out = f"{work}/{env_id.replace('/', '-')}"
            effects = measure_effects(env_id, out=out, keys=keys, agents_dir=args.agents_dir, workers=args.workers)
            print(f"measured {env_id}: {write_effects(env_id, effects, directory=args.out)}")
    started = time.perf_counter()

    def wrote(env_id: str, seconds: float) -> None:
        path = Path(args.out or DIRECTORY / LADDER) / file_name(env_id)
        data = json.loads(path.read_text(encoding="utf-8"))
        calibration, reference = data["calibration"], data["reference"]
        print(
            f"wrote {path} in {seconds:.1f} s: random_return={data['random_return']!r} (measured"
            f" {calibration['random_return']!r} over {calibration['random_episodes']} episodes),"
            f" reference_return={reference['return'] if reference else 'none stated'!r}",
            flush=True,
        )
        if env_id in ENVS:  # the envs whose levels their reference agents chose
            report(data)

    write(args.out, env_ids, progress=wrote)
    print(f"{len(env_ids)} ladders in {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
