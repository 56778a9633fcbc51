"""Shared timing helpers: paired, interleaved rounds, so both arms see the same machine state."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any


def paired(fns: dict[str, Callable[[], int]], rounds: int = 21) -> tuple[dict[str, float], dict[str, float]]:
    """Runs the functions in interleaved rounds (the first is the baseline).

    Each function returns the units of work it did. Returns the median seconds per unit of each function,
    and the median over rounds of each function's time divided by the baseline's time in the same round.
    """
    names = list(fns)
    for fn in fns.values():  # warm up
        fn()
    per_unit: dict[str, list[float]] = {n: [] for n in names}
    ratios: dict[str, list[float]] = {n: [] for n in names}
    for r in range(rounds):
        order = names if r % 2 == 0 else names[::-1]
        took = {}
        for name in order:
            start = time.perf_counter()
            units = fns[name]()
            took[name] = (time.perf_counter() - start) / units
            per_unit[name].append(took[name])
        for name in names:
            ratios[name].append(took[name] / took[names[0]])
    return (
        {n: statistics.median(v) for n, v in per_unit.items()},
        {n: statistics.median(v) for n, v in ratios.items()},
    )


def report(title: str, fns: dict[str, Callable[[], int]], limits: dict[str, float], rounds: int = 21) -> bool:
    """Times ``fns`` with :func:`paired`, prints times and ratios to the first; returns whether limits hold."""
    times, ratios = paired(fns, rounds)
    print(title)
    ok = True
    for name, t in times.items():
        line = f"  {name:<40} {t * 1e6:9.2f} us"
        if ratios[name] != 1.0 or name in limits:
            line += f"   ratio {ratios[name]:5.3f}"
        if name in limits:
            holds = ratios[name] <= limits[name]
            ok &= holds
            line += f"  (limit {limits[name]:.2f}: {'ok' if holds else 'EXCEEDED'})"
        print(line)
    return ok


def cycle(env: Any, steps: int, actions: int) -> int:
    """Steps ``env`` ``steps`` times with the actions 0, 1, ..., ``actions - 1`` in turn, resetting at each end."""
    env.reset(seed=0)
    for i in range(steps):
        _, _, terminated, truncated, _ = env.step(i % actions)
        if terminated or truncated:
            env.reset()
    return steps
