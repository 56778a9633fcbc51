"""Plots of evaluation results, kept apart from computing them (rliable's ``plot_utils`` spirit).

Every function takes plain data (mappings of arrays, a DataFrame) and returns a new
:class:`matplotlib.figure.Figure`; none touches pyplot's global state or the active backend, so the figures
can be saved (``fig.savefig("lcb.png")``), shown in a notebook, or embedded in a report. matplotlib comes
with the ``report`` extra and is imported only when a plot is drawn.

Example:
    >>> from rlwrappers import plots
    >>> fig = plots.lcb_curves({"clean": [10.0, 10.0, 12.0], "noisy": [2.0, 10.0, 12.0]}, [0.0, 1.0, 2.0])
    >>> [line.get_label() for line in fig.axes[0].get_lines()]
    ['clean', 'noisy']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rlwrappers._optional import require
from rlwrappers.error import InvalidArgument, InvalidType
from rlwrappers.metrics.reproducibility import lcb, pareto_front

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["lcb_curves", "paired_deltas", "pareto", "return_distributions"]

#: Methods past this many share colours again.
_PALETTE: Final = "tab10"
_FRONT_COLOUR: Final = "tab:red"


def _figure(width: float, height: float) -> tuple[Figure, Axes]:
    """A new figure with one axes, outside pyplot (no backend is selected, no figure is registered)."""
    figure_module = require("matplotlib.figure", purpose="plots")
    fig = figure_module.Figure(figsize=(width, height), layout="constrained")
    ax = fig.add_subplot()
    ax.grid(True, alpha=0.3)
    return fig, ax


def _colour(i: int) -> Any:
    colormaps = require("matplotlib", purpose="plots").colormaps
    return colormaps[_PALETTE](i % 10)


def _methods(returns_by_method: Any, name: str = "returns_by_method") -> dict[str, NDArray[np.float64]]:
    """The mapping as name -> 1-d finite float array, each non-empty."""
    if not isinstance(returns_by_method, Mapping):
        raise InvalidType(f"`{name}` must be a mapping of method name -> returns, received {returns_by_method!r}")
    if not returns_by_method:
        raise InvalidArgument(f"`{name}` must hold at least one method, received an empty mapping")
    out = {}
    for method, returns in returns_by_method.items():
        r = np.asarray(returns, dtype=np.float64).ravel()
        if r.size == 0:
            raise InvalidArgument(f"`{name}[{method!r}]` must hold at least one return, received none")
        if not np.all(np.isfinite(r)):
            raise InvalidArgument(
                f"`{name}[{method!r}]` must be finite, received {r.size - np.isfinite(r).sum()} non-finite"
            )
        out[str(method)] = r
    return out


def _alphas(alphas: ArrayLike) -> NDArray[np.float64]:
    a = np.asarray(alphas, dtype=np.float64).ravel()
    if a.size == 0:
        raise InvalidArgument("`alphas` must hold at least one value, received none")
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise InvalidArgument(f"`alphas` must be finite and >= 0, received {np.asarray(alphas).tolist()!r}")
    return np.sort(a)


def lcb_curves(
    returns_by_method: Mapping[str, ArrayLike],
    alphas: ArrayLike,
    *,
    performance_kind: str = "mean",
    dispersion_kind: str = "mad",
) -> Figure:
    """LCB(alpha) = P - alpha * sigma against alpha, one line per method (Flageat et al. 2023, Fig. 2).

    At alpha = 0 the curve is the performance P; its slope is -sigma, so a method whose line crosses above
    another's is the better choice for anyone who weighs dispersion at least that much.

    Args:
        returns_by_method: the episode returns of each method.
        alphas: the weights of dispersion to plot, each >= 0.
        performance_kind: "mean" or "median".
        dispersion_kind: "mad", "iqr" or "std".

    Raises:
        InvalidArgument: no method, a method without returns, or an alpha < 0.
    """
    methods = _methods(returns_by_method)
    a = _alphas(alphas)
    fig, ax = _figure(6.4, 4.0)
    for i, (method, returns) in enumerate(methods.items()):
        values = np.atleast_1d(lcb(returns, a, performance_kind=performance_kind, dispersion_kind=dispersion_kind))
        ax.plot(a, values, label=method, color=_colour(i), linewidth=1.8)
    sigma = {"mad": "MAD", "iqr": "IQR", "std": "std"}[dispersion_kind]
    ax.set_xlabel("alpha (weight of dispersion)")
    ax.set_ylabel(f"LCB = {performance_kind} - alpha * {sigma}")
    ax.set_title("Lower confidence bound of the return")
    ax.legend(fontsize="small")
    return fig


def pareto(
    performance: Mapping[str, float], dispersion: Mapping[str, float], *, dispersion_label: str = "MAD"
) -> Figure:
    """Performance (up is better) against dispersion (left is better), the Pareto front highlighted and joined.

    Args:
        performance: each method's performance, e.g. its mean return.
        dispersion: each method's dispersion, e.g. its MAD; the same methods as ``performance``.
        dispersion_label: the x axis' name.

    Raises:
        InvalidArgument: no method, or the two mappings name different methods.
    """
    for name, mapping in (("performance", performance), ("dispersion", dispersion)):
        if not isinstance(mapping, Mapping):
            raise InvalidType(f"`{name}` must be a mapping of method name -> number, received {mapping!r}")
        if not mapping:
            raise InvalidArgument(f"`{name}` must hold at least one method, received an empty mapping")
    if set(performance) != set(dispersion):
        raise InvalidArgument(
            f"`performance` and `dispersion` must name the same methods, received {sorted(map(str, performance))}"
            f" and {sorted(map(str, dispersion))}"
        )
    names = list(performance)
    p = np.array([performance[n] for n in names], dtype=np.float64)
    d = np.array([dispersion[n] for n in names], dtype=np.float64)
    if not (np.all(np.isfinite(p)) and np.all(np.isfinite(d))):
        raise InvalidArgument("`performance` and `dispersion` must be finite")
    front = pareto_front(p, d)
    fig, ax = _figure(6.4, 4.4)
    ax.scatter(d[~front], p[~front], color="0.55", s=36, label="dominated", zorder=2)
    order = np.argsort(d[front])
    ax.plot(d[front][order], p[front][order], color=_FRONT_COLOUR, marker="o", linewidth=1.5, label="Pareto front")
    for name, x, y in zip(names, d, p, strict=True):
        ax.annotate(str(name), (x, y), xytext=(5, 4), textcoords="offset points", fontsize="small")
    ax.margins(0.12)
    ax.set_xlabel(f"{dispersion_label} of the return (lower is better)")
    ax.set_ylabel("performance (higher is better)")
    ax.set_title("Performance against dispersion")
    ax.legend(fontsize="small")
    return fig


def _spread(ax: Axes, values_by_method: dict[str, NDArray[np.float64]]) -> None:
    """Draws one horizontal row per method, top to bottom: min-max whisker, IQR box, median tick, the values."""
    count = len(values_by_method)
    for i, values in enumerate(values_by_method.values()):
        y = count - 1 - i
        colour = _colour(i)
        q1, median, q3 = np.percentile(values, [25.0, 50.0, 75.0])
        ax.hlines(y, values.min(), values.max(), color=colour, linewidth=1.0)
        ax.hlines(y, q1, q3, color=colour, linewidth=8.0, alpha=0.45)
        ax.vlines(median, y - 0.3, y + 0.3, color="black", linewidth=2.0, label="median" if i == 0 else "_nolegend_")
        offsets = np.linspace(-0.15, 0.15, len(values)) if len(values) > 1 else np.zeros(1)
        ax.scatter(values, y + offsets, color=colour, s=12, alpha=0.8, zorder=3)
    ax.set_yticks(range(count), list(values_by_method)[::-1])
    ax.set_ylim(-0.7, count - 0.3)


def return_distributions(returns_by_method: Mapping[str, ArrayLike]) -> Figure:
    """The returns of each method, one row each: every return as a dot, the IQR as a bar, the median marked.

    Raises:
        InvalidArgument: no method, or a method without returns.
    """
    methods = _methods(returns_by_method)
    fig, ax = _figure(6.4, 1.2 + 0.5 * len(methods))
    _spread(ax, methods)
    ax.set_xlabel("episode return")
    ax.set_title("Distribution of returns (bar: IQR, line: min to max)")
    ax.legend(fontsize="small", loc="best")
    return fig


def paired_deltas(episodes: pd.DataFrame, *, baseline: str = "baseline") -> Figure:
    """Per shift, the paired change of return ``return - baseline_return`` over the same seeded episodes.

    Args:
        episodes: one row per episode with columns ``shift``, ``return`` and ``baseline_return`` (and
            ``agent`` to tell several agents apart), as :meth:`~rlwrappers.evaluation.Evaluation.episodes`
            gives.
        baseline: the counterfactual's shift name, left out of the plot.

    Raises:
        InvalidArgument: a column is missing, or no shifted episode has a baseline to compare with.
    """
    missing = {"shift", "return", "baseline_return"} - set(getattr(episodes, "columns", ()))
    if missing:
        raise InvalidArgument(f"`episodes` must be a DataFrame with columns {sorted(missing)}, which it lacks")
    rows = episodes[(episodes["shift"] != baseline) & episodes["baseline_return"].notna()]
    if len(rows) == 0:
        raise InvalidArgument("`episodes` holds no shifted episode with a baseline return to compare with")
    several = "agent" in rows.columns and rows["agent"].nunique() > 1
    keys = ["agent", "shift"] if several else ["shift"]
    deltas: dict[str, NDArray[np.float64]] = {}
    for key, group in rows.groupby(keys, sort=False):
        label = " / ".join(map(str, key)) if several else str(key[0] if isinstance(key, tuple) else key)
        deltas[label] = (group["return"] - group["baseline_return"]).to_numpy(dtype=np.float64)
    fig, ax = _figure(6.4, 1.2 + 0.5 * len(deltas))
    ax.axvline(0.0, color="0.3", linewidth=1.0, linestyle="--")
    _spread(ax, deltas)
    ax.set_xlabel("return - return of the same episode without shift")
    ax.set_title("Paired change of return under each shift")
    ax.legend(fontsize="small", loc="best")
    return fig
