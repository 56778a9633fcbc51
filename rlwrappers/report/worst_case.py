"""The report of a worst-case search: the returns over the set (a curve, a heatmap or pair plots) and the numbers.

:func:`worst_case_map` draws the grid's mean returns over the set: a curve for one parameter, a heatmap for two,
and for three a heatmap per pair of parameters, each the mean over the third. The points the refinement played
are marked, and the argmin starred. :func:`write_worst_case_report` writes it with the summary into one page.
"""

from __future__ import annotations

import html
import itertools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rlwrappers.report.html import figures_html, html_page, png
from rlwrappers.report.plots import figure, figure_row
from rlwrappers.studies.worst_case import WorstCase

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["worst_case_map", "write_worst_case_report"]


def worst_case_map(points: pd.DataFrame, names: list[str], argmin: dict[str, float]) -> Figure:
    """The grid's mean returns over the set, the refined points and the argmin (see the module's docs)."""
    grid = points[points["phase"] == "grid"]
    refined = points[points["phase"] != "grid"]
    if len(names) == 1:
        fig, ax = figure(6.0, 3.8)
        (name,) = names
        ax.plot(grid[name], grid["mean"], marker="o", label="grid")
        ax.scatter(refined[name], refined["mean"], color="tab:orange", s=16, label="refinement", zorder=3)
        ax.scatter([argmin[name]], [points["mean"].min()], marker="*", s=160, color="tab:red", label="argmin", zorder=4)
        ax.set_xlabel(name)
        ax.set_ylabel("mean return")
        ax.legend(fontsize="small")
        return fig
    pairs = list(itertools.combinations(names, 2))
    fig, axes = figure_row(len(pairs), 5.0, 4.2)
    for ax, (x, y) in zip(axes, pairs, strict=True):
        _heatmap(ax, grid, refined, x, y, argmin)
    if len(pairs) > 1:
        fig.suptitle("mean return over each pair of parameters (averaged over the third)")
    return fig


def _heatmap(ax: Axes, grid: pd.DataFrame, refined: pd.DataFrame, x: str, y: str, argmin: dict[str, float]) -> None:
    table = grid.groupby([y, x])["mean"].mean().unstack(x)
    xs, ys = table.columns.to_numpy(dtype=float), table.index.to_numpy(dtype=float)
    mesh = ax.pcolormesh(_edges(xs), _edges(ys), table.to_numpy(dtype=float), cmap="viridis", shading="flat")
    ax.figure.colorbar(mesh, ax=ax, label="mean return")
    ax.scatter(refined[x], refined[y], s=10, color="white", edgecolor="black", linewidth=0.4, label="refinement")
    ax.scatter([argmin[x]], [argmin[y]], marker="*", s=180, color="tab:red", edgecolor="white", label="argmin")
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.grid(False)
    ax.legend(fontsize="x-small", loc="upper right")


def _edges(centres: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Cell edges around grid values: halfway between neighbours, and half a step beyond the ends."""
    middle = (centres[1:] + centres[:-1]) / 2
    first, last = centres[0] - (middle[0] - centres[0]), centres[-1] + (centres[-1] - middle[-1])
    return np.concatenate([[first], middle, [last]])


def write_worst_case_report(result: WorstCase, out_dir: str | os.PathLike[str]) -> Path:
    """Writes ``report.html`` and ``worst_case.png`` into ``out_dir``; returns the page's path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    names = list(result.argmin)
    fig = worst_case_map(result.points, names, dict(result.argmin))
    caption = (
        f"Mean return at each point of the grid over {result.set_name}, the points the refinement played, and the"
        " argmin (the lowest mean)."
    )
    images = {"worst_case.png": (caption, png(fig, out / "worst_case.png", None))}
    summary = result.summary()
    rows = {
        "worst case (held-out)": f"{result.worst:.2f} [{result.ci[0]:.2f}, {result.ci[1]:.2f}]",
        "held-out episodes": str(result.holdout),
        "argmin": ", ".join(f"{k} = {v:.4g}" for k, v in result.argmin.items()),
        "search minimum (biased low)": f"{result.search_min:.2f}",
        "grid minimum": f"{result.grid_min:.2f}",
        "mean over the set (grid)": f"{result.set_mean:.2f}",
        "nominal env (held-out)": f"{result.nominal:.2f}",
        "points played": str(summary["points"]),
    }
    table = (
        "<table>"
        + "".join(f"<tr><th>{html.escape(name)}</th><td>{html.escape(value)}</td></tr>" for name, value in rows.items())
        + "</table>\n"
    )
    body = (
        f"<p>The worst case of the agent over the uncertainty set <code>{html.escape(result.set_name)}</code>: the"
        " argmin of the search, played again on held-out episodes (seeds the search never used), with a 95% Student"
        " t interval. The search's own minimum is biased low: it picks the point whose episodes were unlucky as"
        " well as the one that is bad.</p>\n" + table + figures_html(images)
    )
    page = out / "report.html"
    page.write_text(html_page(f"Worst case over {result.set_name}", body))
    return page
