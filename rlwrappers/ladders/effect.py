"""Choosing a family's range by its effect: levels 1 to 5 from the skill drop of the env's vanilla reference agents.

Each family has a **grid** of candidate severities in its own unit, mildest first (:data:`~rlwrappers.ladders.
definition.GRIDS`). The reference agents play every grid point beside a clean arm (same seeds and episodes), and
the **drop** at a point is the fall of their skill from the clean arm, ``(R_clean - R_g) / (R_ref - R_random)``
averaged over the agents, with a 95% interval from a paired bootstrap that resamples episodes within each (agent,
seed) (:func:`rlwrappers.metrics.grade.resampled_means`). :func:`choose` then picks the levels from the measured
drops alone, deciding each criterion on an interval bound:

- **level 1, barely noticeable**: the largest grid point up to which every drop's upper bound stays at most
  :data:`NOTICEABLE` (at the grid's first point when even that one is noticeable: the criterion is not met);
- **level 5, severe**: the first grid point above level 1 whose drop's lower bound reaches :data:`SEVERE` (the
  grid's last point when none does: not met); a family bounded by its own nature (the dynamics family by its
  uncertainty set's hull) has its level 5 fixed there, severe or not; where nothing up to level 5 is even
  noticeable, level 1 is the grid's first point, so that the levels still span the grid;
- **levels 2 to 4** on the geometric series between levels 1 and 5, measured in a second pass; where the unit
  takes only some values (whole pixels, JPEG qualities, grey levels of a budget) at the grid points evenly
  between them (:func:`level_values`);
- **rising**: the five levels' mean drops do not fall by more than :data:`RISE_SLACK` from one level to the
  next, and level 5's lower bound lies above level 1's upper bound.

:class:`Choice` keeps the levels' values and drops, and which criteria hold; a ladder file writes
them, so the numbers behind every range are shipped with it.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from rlwrappers.error import InvalidArgument, MissingFile

__all__ = ["NOTICEABLE", "RISE_SLACK", "SEVERE", "Choice", "Effect", "choose", "ends", "level_values"]

#: A drop whose upper bound stays at most this is barely noticeable.
NOTICEABLE: Final = 0.05
#: A drop whose lower bound reaches this is severe.
SEVERE: Final = 0.5
#: How far a level's mean drop may fall below the one before it and still count as rising (noise).
RISE_SLACK: Final = 0.02


@dataclass(frozen=True)
class Effect:
    """The measured skill drop of the reference agents at each grid point: mean and 95% interval.

    ``extra`` holds the same (``values``, ``drop``, ``low``, ``high``) at levels measured beyond the grid: the
    geometric levels between two grid points. ``clean`` is the reference agents' clean skill the drops fall
    from (None where not kept), so that a drop's impact relative to it is ``drop / clean``.
    """

    grid: list[float]
    drop: list[float]
    low: list[float]
    high: list[float]
    extra: dict[str, list[float]] = field(default_factory=dict)
    clean: float | None = None

    def __post_init__(self) -> None:
        n = len(self.grid)
        if n < 2 or any(len(x) != n for x in (self.drop, self.low, self.high)):
            raise InvalidArgument(
                f"an Effect needs one drop, low and high per grid point (at least 2), received lengths"
                f" {[len(x) for x in (self.grid, self.drop, self.low, self.high)]}"
            )

    def at(self, value: float) -> tuple[float, float, float]:
        """The (drop, low, high) measured at ``value``, on the grid or beyond it.

        Raises:
            MissingFile: nothing was measured at ``value``.
        """
        for values, drop, low, high in ((self.grid, self.drop, self.low, self.high), self._extra()):
            if value in values:
                i = values.index(value)
                return drop[i], low[i], high[i]
        raise MissingFile(
            f"no effect was measured at {value!r}: `scripts/calibrate_ladders.py --measure` measures the levels"
            " between the grid's points"
        )

    def _extra(self) -> tuple[list[float], list[float], list[float], list[float]]:
        e = self.extra
        return e.get("values", []), e.get("drop", []), e.get("low", []), e.get("high", [])

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Effect:
        """An effect from the JSON form :meth:`to_dict` writes."""
        extra = {key: list(map(float, values)) for key, values in data.get("extra", {}).items()}
        grid, drop, low, high = (list(map(float, data[key])) for key in ("grid", "drop", "low", "high"))
        clean = data.get("clean")
        return cls(grid, drop, low, high, extra, None if clean is None else float(clean))

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: the four lists, by name, and the extra levels where there are some."""
        out: dict[str, Any] = {"grid": self.grid, "drop": self.drop, "low": self.low, "high": self.high}
        if self.extra:
            out["extra"] = self.extra
        if self.clean is not None:
            out["clean"] = self.clean
        return out


@dataclass(frozen=True)
class Choice:
    """The five levels :func:`choose` picked, and the criteria they meet.

    Attributes:
        values: each level's severity, in the family's unit.
        drops: each level's measured mean drop.
        noticeable: level 1's drop is barely noticeable (its upper bound at most :data:`NOTICEABLE`).
        severe: level 5's drop is severe (its lower bound at least :data:`SEVERE`).
        rising: the drops rise from level 1 to level 5 (see the module).
    """

    values: list[float]
    drops: list[float]
    noticeable: bool
    severe: bool
    rising: bool

    def to_dict(self) -> dict[str, Any]:
        """The JSON form a ladder file holds."""
        return {
            "values": self.values,
            "drops": self.drops,
            "criteria": {"level_1_barely_noticeable": self.noticeable, "level_5_severe": self.severe},
            "rising": self.rising,
        }


def ends(effect: Effect, top: int | None = None) -> tuple[int, int]:
    """The grid indices of levels 1 and 5; ``top`` fixes level 5's (e.g. the uncertainty set's hull)."""
    n = len(effect.grid)
    if top is not None and not 0 <= top < n:
        raise InvalidArgument(f"`top` must be a grid index in [0, {n}), received {top!r}")
    first = 0
    while first + 1 < n and all(h <= NOTICEABLE for h in effect.high[: first + 2]):
        first += 1
    if top is not None:
        return (0 if first >= top else first), top
    above = [i for i in range(first + 1, n) if effect.low[i] >= SEVERE]
    if not above and first == n - 1:
        return 0, n - 1  # nothing on the grid is even noticeable: the levels span the whole grid
    return first, above[0] if above else n - 1


def level_values(effect: Effect, *, top: int | None = None, continuous: bool = True) -> list[float]:
    """The five levels' severities: levels 1 and 5 on the grid (:func:`ends`), levels 2 to 4 between them.

    With ``continuous``, levels 2 to 4 follow the geometric series between levels 1 and 5 (four significant
    digits); otherwise (whole pixels, JPEG qualities) they are the grid points at the indices evenly between
    (halves up).

    Example:
        >>> grid = [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4]
        >>> drop = [0.0, 0.01, 0.1, 0.3, 0.6, 0.9, 1.0]
        >>> effect = Effect(grid, drop, [d - 0.02 for d in drop], [d + 0.02 for d in drop])
        >>> level_values(effect)
        [0.2, 0.3364, 0.5657, 0.9514, 1.6]
        >>> level_values(effect, continuous=False)
        [0.2, 0.4, 0.8, 0.8, 1.6]
    """
    first, last = ends(effect, top)
    if continuous:
        a, b = effect.grid[first], effect.grid[last]
        middle = [float(f"{a * (b / a) ** (step / 4):.4g}") for step in (1, 2, 3)]
        return [a, *middle, b]
    return [effect.grid[first + math.floor((last - first) * step / 4 + 0.5)] for step in range(5)]


def choose(effect: Effect, *, top: int | None = None, continuous: bool = True) -> Choice:
    """The levels of a family from its measured effect (:func:`level_values`), each level's drop measured.

    Example:
        >>> grid = [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4]
        >>> drop = [0.0, 0.01, 0.1, 0.3, 0.6, 0.9, 1.0]
        >>> effect = Effect(grid, drop, [d - 0.02 for d in drop], [d + 0.02 for d in drop])
        >>> c = choose(effect, continuous=False)
        >>> c.values, c.drops, c.noticeable, c.severe, c.rising
        ([0.2, 0.4, 0.8, 0.8, 1.6], [0.01, 0.1, 0.3, 0.3, 0.6], True, True, True)

    Raises:
        MissingFile: a level between grid points was not measured (``effect.extra`` lacks it).
    """
    values = level_values(effect, top=top, continuous=continuous)
    drops, lows, highs = zip(*(effect.at(v) for v in values), strict=True)
    rising = all(b >= a - RISE_SLACK for a, b in itertools.pairwise(drops)) and lows[-1] > highs[0]
    return Choice(
        values=values,
        drops=list(drops),
        noticeable=highs[0] <= NOTICEABLE,
        severe=lows[-1] >= SEVERE,
        rising=rising,
    )


def geometric(start: float, stop: float, ratio: float) -> tuple[float, ...]:
    """``start, start * ratio, ...`` up to ``stop`` (included within rounding), each to four significant digits.

    Example:
        >>> geometric(0.01, 0.08, 2.0)
        (0.01, 0.02, 0.04, 0.08)
    """
    out: list[float] = []
    value = start
    while value <= stop * (1 + 1e-9):
        out.append(float(f"{value:.4g}"))
        value *= ratio
    return tuple(out)


def distinct(values: Sequence[float]) -> tuple[float, ...]:
    """``values`` without repeats, in order (a rounded geometric grid of integers repeats its first points)."""
    return tuple(dict.fromkeys(values))
