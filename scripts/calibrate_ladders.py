"""Rewrites the shipped severity ladders of the current version from the package's code.

    python scripts/calibrate_ladders.py                  # every env of rlwrappers.ladders.LADDER
    python scripts/calibrate_ladders.py CartPole-v1      # one env
    python scripts/calibrate_ladders.py --out /tmp/x     # elsewhere, e.g. to compare

Each env, built as its ladder says (``gym.make`` with its ``env_kwargs``, then its preprocessing: for
BreakoutNoFrameskip-v4, SB3's Atari preprocessing with whole games as episodes, which needs ``ale_py``), is played
for 10,000 steps (Breakout's: agent steps) by a uniform-random policy with fixed seeds
(:func:`rlwrappers.ladders.calibration.calibrate`), so the files come out byte for byte the same every time;
``tests/test_ladders.py`` checks that the shipped ones still do. The script prints each file it wrote with the
measured random return and scales.
"""

from __future__ import annotations

import argparse
import json
import sys

import rlwrappers.envs  # noqa: F401  (registers rlwrappers/Catch-v0)

from rlwrappers.ladders import LADDER, write
from rlwrappers.ladders.definition import ENVS


def main(argv: list[str] | None = None) -> int:
    """Writes the files, prints what it wrote; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "env_ids", nargs="*", help=f"the envs to calibrate (default: all of {LADDER}: {', '.join(ENVS)})"
    )
    parser.add_argument("--out", default=None, help=f"the folder to write to (default: rlwrappers/ladders/{LADDER})")
    args = parser.parse_args(argv)
    for path in write(args.out, args.env_ids or None):
        data = json.loads(path.read_text(encoding="utf-8"))
        calibration = data["calibration"]
        print(
            f"wrote {path}: random_return={data['random_return']!r} over {calibration['random_episodes']} episodes,"
            f" obs_std={calibration['obs_std']}, state_std={calibration['state_std']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
