"""The ``rlwrappers`` command line.

``rlwrappers list`` prints the registered perturbed env IDs, the perturbations with their parameters, and the
schedules; ``rlwrappers list ids`` (or ``perturbations``, ``schedules``) prints one of those parts.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import gymnasium as gym

from rlwrappers import schedule
from rlwrappers.core import perturbations
from rlwrappers.registration import NAMESPACE, catalogue

__all__ = ["main"]

_PARTS = ("ids", "perturbations", "schedules")


def _list(parts: Sequence[str]) -> None:
    if "ids" in parts:
        entries = catalogue()
        catalogued = {e.id for e in entries}
        width = max(len(e.id) for e in entries)
        print(f"Registered IDs (gym.make them after `import rlwrappers`), {len(entries)} in the catalogue:")
        for e in entries:
            print(f"  {e.id:<{width}}  {e.spec:<46} {e.doc}")
        extra = sorted(i for i in gym.registry if i.startswith(f"{NAMESPACE}/") and i not in catalogued)
        if extra:
            print("Registered in this process with rw.register:")
            for env_id in extra:
                print(f"  {env_id}")
    if "perturbations" in parts:
        print("Perturbations (spec strings `name(key=value, ...)`; every one also takes `when` and `label`):")
        for info in perturbations():
            wrapper = f" [rw.{info.wrapper}]" if info.wrapper else ""
            print(f"  {info.name} ({info.channel}){wrapper}: {info.summary}")
            for key, (default, doc) in info.params.items():
                print(f"      {key}={default!r}: {doc}")
    if "schedules" in parts:
        print("Schedules (`when=`; combine with &, | and ~):")
        for name in schedule.names():
            cls = schedule._SCHEDULES[name]
            print(f"  {name}: {(cls.__doc__ or '').strip().splitlines()[0]}")


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit status."""
    parser = argparse.ArgumentParser(prog="rlwrappers", description="Stress-test RL agents with perturbations.")
    commands = parser.add_subparsers(dest="command", required=True)
    listing = commands.add_parser("list", help="list registered perturbed env IDs, perturbations and schedules")
    listing.add_argument("parts", nargs="*", metavar="PART", help=f"what to list: {', '.join(_PARTS)} (default: all)")
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            unknown = [p for p in args.parts if p not in _PARTS]
            if unknown:
                listing.error(f"unknown part {unknown[0]!r}; choose from {', '.join(_PARTS)}")
            _list(args.parts or _PARTS)
    except BrokenPipeError:  # the reader stopped early (`rlwrappers list | head`): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
