"""Difference-in-differences impact of a shift that starts at episode T (seed 001, Appendix A.3).

Seed 001 (*Using Causal Inference to Evaluate RL Agents under Distribution Shift*) compares a run shifted
from episode ``T`` on (the treated group, G = 1) with a run of the same agent on the same seeds without the
shift (the control, G = 0). Eq. 4 is the classic estimate over a time series X(t) of returns::

    DiD = {E[X(t >= T) | G=1] - E[X(t < T) | G=1]} - {E[X(t >= T) | G=0] - E[X(t < T) | G=0]}

With fixed seeds the two runs are identical before ``T`` (the "RL fixed-seed assumption"), the pre-shift
terms cancel and eq. 4 equals eq. 5/6, the mean post-shift difference ``E[X(t >= T) | G=1] - E[X(t >= T) |
G=0]``. :func:`difference_in_differences` computes eq. 4 per seed, so that it stays correct when the
assumption fails, and says whether it held.

Choices the paper leaves open, written down:

- Episode ``T`` is the first shifted episode, so the post period is ``t >= T`` and the pre period ``t < T``.
- The **standard error** is over seeds: eq. 4 per seed, then ``std(ddof=1) / sqrt(seeds)`` (NaN with one
  seed). Episodes within a seed are not independent draws (they share the agent and the seed's stream),
  seeds are.
- The **pointwise impact** at episode t >= T is the treated minus the control return, averaged over seeds;
  the **cumulative impact** is its running sum. Both are negative when the shift costs return.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rlwrappers import _check
from rlwrappers.error import InvalidArgument

__all__ = ["DiD", "difference_in_differences"]


@dataclass(frozen=True)
class DiD:
    """The difference-in-differences of one shift against its same-seed control.

    Attributes:
        estimate: eq. 4, averaged over seeds.
        se: its standard error over seeds (NaN with one seed).
        per_seed: eq. 4 for each seed.
        pointwise: per post-shift episode (``T``, ``T + 1``, ...), treated minus control, mean over seeds.
        cumulative: the running sum of ``pointwise``.
        pre_identical: whether every seed's pre-shift episodes are identical in both runs (the fixed-seed
            assumption); when False, the env or the agent is not deterministic and eq. 5 would be biased.
    """

    estimate: float
    se: float
    per_seed: NDArray[np.float64]
    pointwise: NDArray[np.float64]
    cumulative: NDArray[np.float64]
    pre_identical: bool


def _returns(name: str, values: Any) -> NDArray[np.float64]:
    array = _check.finite_array(name, values)
    if array.ndim == 1:
        array = array[None]
    if array.ndim != 2 or array.size == 0:
        raise InvalidArgument(
            f"`{name}` must be returns of shape (seeds, episodes) or (episodes,), received {array.shape}"
        )
    return array


def difference_in_differences(treated: ArrayLike, control: ArrayLike, shift_at: int) -> DiD:
    """Eq. 4 of seed 001 per seed, with its standard error over seeds and the pointwise and cumulative impact.

    Args:
        treated: returns of the shifted runs, shape (seeds, episodes), or (episodes,) for one seed.
        control: returns of the same seeds without the shift, the same shape.
        shift_at: ``T``, the first shifted episode; there must be episodes before and after it.

    Returns:
        A :class:`DiD`.

    Raises:
        InvalidArgument: shapes differ, non-finite returns, or ``shift_at`` outside ``1 .. episodes - 1``.

    Example:
        >>> control = [[10.0, 10.0, 10.0, 10.0]]
        >>> treated = [[10.0, 10.0, 4.0, 6.0]]  # shifted from episode 2 on
        >>> result = difference_in_differences(treated, control, shift_at=2)
        >>> result.estimate, result.cumulative.tolist(), result.pre_identical
        (-5.0, [-6.0, -10.0], True)
    """
    t = _returns("treated", treated)
    c = _returns("control", control)
    if t.shape != c.shape:
        raise InvalidArgument(f"`treated` and `control` must have the same shape, received {t.shape} and {c.shape}")
    episodes = t.shape[1]
    if not isinstance(shift_at, (int, np.integer)) or isinstance(shift_at, bool) or not 1 <= shift_at < episodes:
        raise InvalidArgument(
            f"`shift_at` must be an episode in 1 .. {episodes - 1} (with episodes before and after it),"
            f" received {shift_at!r}"
        )
    post_t, pre_t = t[:, shift_at:].mean(axis=1), t[:, :shift_at].mean(axis=1)
    post_c, pre_c = c[:, shift_at:].mean(axis=1), c[:, :shift_at].mean(axis=1)
    per_seed = (post_t - pre_t) - (post_c - pre_c)
    seeds = len(per_seed)
    se = float(per_seed.std(ddof=1) / math.sqrt(seeds)) if seeds > 1 else math.nan
    pointwise = (t[:, shift_at:] - c[:, shift_at:]).mean(axis=0)
    return DiD(
        estimate=float(per_seed.mean()),
        se=se,
        per_seed=per_seed,
        pointwise=pointwise,
        cumulative=np.cumsum(pointwise),
        pre_identical=bool(np.array_equal(t[:, :shift_at], c[:, :shift_at])),
    )
