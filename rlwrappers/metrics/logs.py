"""Reading the metrics' inputs out of logs, and the reproducibility table of several runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rlwrappers._optional import require
from rlwrappers.error import LogError
from rlwrappers.metrics.reproducibility import iqr, lcb, mad

if TYPE_CHECKING:
    import pandas as pd

    from rlwrappers.record import Log

__all__ = ["episode_returns", "reproducibility_table"]


def episode_returns(log: Log, *, complete_only: bool = True) -> NDArray[np.float64]:
    """The returns of a log's episodes, in order; episodes cut short (``complete`` False) are left out.

    Raises:
        LogError: the log holds no (complete) episode, so no metric can be computed from it.
    """
    episodes = log.episodes
    if complete_only and len(episodes):
        episodes = episodes[episodes["complete"].astype(bool)]
    if len(episodes) == 0:
        raise LogError(f"the log at {str(log.path)!r} holds no complete episode")
    return episodes["return"].to_numpy(dtype=np.float64)


def reproducibility_table(runs: Mapping[str, ArrayLike], alphas: Sequence[float] = (0.5, 1.0, 2.0)) -> pd.DataFrame:
    """One row per run: episodes, mean, median, MAD, IQR, std and LCB(alpha) = mean - alpha * MAD.

    Example:
        >>> table = reproducibility_table({"clean": [10.0, 10.0, 12.0], "noisy": [2.0, 10.0, 12.0]}, alphas=[1.0])
        >>> list(table.columns)
        ['episodes', 'mean', 'median', 'MAD', 'IQR', 'std', 'LCB(1.0)']
        >>> table.loc["noisy", ["median", "MAD", "LCB(1.0)"]].tolist()
        [10.0, 2.0, 6.0]
    """
    pd = require("pandas", purpose="reproducibility tables")
    rows: dict[str, dict[str, Any]] = {}
    for name, returns in runs.items():
        r = np.asarray(returns, dtype=np.float64)
        row: dict[str, Any] = {
            "episodes": len(r),
            "mean": float(np.mean(r)),
            "median": float(np.median(r)),
            "MAD": mad(r),
            "IQR": iqr(r),
            "std": float(np.std(r)),
        }
        row.update({f"LCB({a})": v for a, v in zip(alphas, np.atleast_1d(lcb(r, list(alphas))), strict=True)})
        rows[name] = row
    return pd.DataFrame.from_dict(rows, orient="index")
