"""The report of an offline-robustness measurement (seed 000): heatmaps of R per pipeline and checkpoint.

:func:`write_robustness_report` reads a :class:`~rlwrappers.studies.offline.Measurement` (or its directory)
and writes one self-contained page; the figures are :func:`robustness_heatmap`, :func:`robustness_grid`
(Figures 3-4) and :func:`robustness_training`.
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from numpy.typing import ArrayLike

from rlwrappers import _check
from rlwrappers._optional import require
from rlwrappers._version import __version__
from rlwrappers.error import InvalidArgument
from rlwrappers.metrics.robustness import OVERALL, normalized_robustness
from rlwrappers.report.html import figures_html, file_label, html_page, opened, png
from rlwrappers.report.plots import figure, figure_row, palette_colour
from rlwrappers.report.tables import html_table
from rlwrappers.studies.offline import Measurement

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["robustness_grid", "robustness_heatmap", "robustness_training", "write_robustness_report"]


def robustness_heatmap(
    matrix: ArrayLike,
    states: list[str] | None = None,
    interventions: list[str] | None = None,
    *,
    normalized: bool = False,
    limit: float | None = None,
    title: str = "",
) -> Figure:
    """Seed 000's heatmap of offline robustness (Figures 2-4, Appendices C-D): interventions x sampled states.

    Args:
        matrix: R of shape (states, interventions), the null intervention first, as
            :func:`~rlwrappers.studies.offline.robustness_matrix` returns it; or its normalized form.
        states: the states' labels (default 0, 1, ...).
        interventions: the interventions' labels, null first (default "none", 1, 2, ...).
        normalized: draw ``R(I_j(s)) - R(I_0(s))`` on a diverging map centred on 0 (Appendix D) instead of R on
            [0, 1]; the null row, all zeros, is left out.
        limit: with ``normalized``, the colour range ``[-limit, limit]`` (Appendix D cuts at 0.5); the share of
            cells beyond it is added to the title. Default 1.
        title: the figure's title.

    Raises:
        InvalidArgument: not a 2-D matrix with at least one intervention besides the null one, labels of the
            wrong length, or a limit outside (0, 1].
    """
    values = _check.finite_array("matrix", matrix)
    if values.ndim != 2 or values.shape[1] < 2 or values.shape[0] < 1:
        raise InvalidArgument(f"`matrix` must have shape (states, interventions >= 2), received {values.shape}")
    n_states, n_interventions = values.shape
    states = [str(s) for s in states] if states is not None else [str(i) for i in range(n_states)]
    interventions = (
        [str(i) for i in interventions] if interventions is not None else ["none", *map(str, range(1, n_interventions))]
    )
    if len(states) != n_states or len(interventions) != n_interventions:
        raise InvalidArgument(
            f"`states` and `interventions` must label {n_states} states and {n_interventions} interventions, "
            f"received {len(states)} and {len(interventions)}"
        )
    if limit is not None and not (isinstance(limit, (int, float)) and 0.0 < limit <= 1.0):
        raise InvalidArgument(f"`limit` must lie in (0, 1], received {limit!r}")
    shown, rows = (values[:, 1:].T, interventions[1:]) if normalized else (values.T, interventions)
    width = min(2.0 + 0.28 * n_states, 16.0)
    fig, ax = figure(width, 1.2 + 0.28 * len(rows))
    if normalized:
        bound = float(limit or 1.0)
        clipped = float(np.mean(np.abs(shown) > bound))
        image = ax.imshow(shown, cmap="RdBu", vmin=-bound, vmax=bound, aspect="auto", interpolation="nearest")
        label = "normalized R"
        if clipped:
            title = f"{title} ({clipped:.0%} of cells beyond ±{bound:g})".strip()
    else:
        image = ax.imshow(shown, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
        label = "offline robustness R"
    fig.colorbar(image, ax=ax, label=label)
    ax.set_yticks(range(len(rows)), rows, fontsize="small")
    step = max(1, n_states // 20)
    ax.set_xticks(range(0, n_states, step), states[::step], fontsize="small")
    ax.set_xlabel("sampled state")
    ax.set_ylabel("intervention")
    if title:
        ax.set_title(title)
    return fig


def robustness_grid(
    matrices: Mapping[tuple[str, str], ArrayLike],
    returns: Mapping[tuple[str, str], float] | None = None,
    *,
    normalized: bool = False,
    limit: float | None = None,
) -> Figure:
    """Seed 000's Figures 3-4: one row of heatmaps per pipeline, one column per checkpoint, returns on the right.

    Each cell draws interventions (rows, the null one on top) against sampled states (columns), as
    :func:`robustness_heatmap` does, on one colour scale for the whole grid.

    Args:
        matrices: R of shape (states, interventions), null first, per (pipeline, checkpoint), checkpoints in
            training order.
        returns: the mean return per (pipeline, checkpoint); when given, a last column plots it per pipeline.
        normalized: draw ``R(I_j(s)) - R(I_0(s))`` (the null row left out) on a diverging scale.
        limit: with ``normalized``, the colour range ``[-limit, limit]`` (the paper cuts at 0.5); the share of
            cells beyond it goes into the title.
    """
    if not isinstance(matrices, Mapping) or not matrices:
        raise InvalidArgument(f"`matrices` must map (pipeline, checkpoint) to R matrices, received {matrices!r}")
    if limit is not None and not (isinstance(limit, (int, float)) and 0.0 < limit <= 1.0):
        raise InvalidArgument(f"`limit` must lie in (0, 1], received {limit!r}")
    pipelines: dict[str, list[str]] = {}
    for pipeline, checkpoint in matrices:
        pipelines.setdefault(pipeline, []).append(checkpoint)
    columns = max(len(c) for c in pipelines.values())
    known = returns or {}
    extra = 1 if known else 0
    figure_module = require("matplotlib.figure", purpose="plots")
    fig = figure_module.Figure(
        figsize=(2.6 * (columns + extra) + 1.0, 2.2 * len(pipelines) + 0.6), layout="constrained"
    )
    axes = fig.subplots(len(pipelines), columns + extra, squeeze=False)
    bound = float(limit or 1.0)
    shown_cells, beyond = 0, 0
    image = None
    for row, (pipeline, checkpoints) in enumerate(pipelines.items()):
        for col in range(columns):
            ax = axes[row][col]
            if col >= len(checkpoints):
                ax.set_axis_off()
                continue
            values = _check.finite_array("matrices", matrices[pipeline, checkpoints[col]])
            if normalized:
                shown = (values[:, 1:] - values[:, :1]).T
                shown_cells += shown.size
                beyond += int(np.sum(np.abs(shown) > bound))
                image = ax.imshow(shown, cmap="RdBu", vmin=-bound, vmax=bound, aspect="auto", interpolation="nearest")
            else:
                image = ax.imshow(values.T, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto", interpolation="nearest")
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(checkpoints[col], fontsize="small")
            if col == 0:
                ax.set_ylabel(pipeline)
        if extra:
            ax = axes[row][columns]
            ax.plot(checkpoints, [known.get((pipeline, c), np.nan) for c in checkpoints], marker="o")
            ax.set_title("mean return", fontsize="small")
            ax.grid(True, alpha=0.3)
    label = "normalized R" if normalized else "offline robustness R"
    fig.colorbar(image, ax=[axes[r][c] for r in range(len(pipelines)) for c in range(columns)], label=label)
    title = f"{label} per pipeline (rows) and checkpoint (columns): interventions x sampled states"
    if normalized and beyond:
        title += f" ({beyond / shown_cells:.1%} of cells beyond ±{bound:g})"
    fig.suptitle(title, fontsize="medium")
    return fig


def robustness_training(
    matrices: Mapping[tuple[str, str], ArrayLike], returns: Mapping[tuple[str, str], float] | None = None
) -> Figure | None:
    """Seed 000's view along training (the right-hand column of Figures 3-4), one line per pipeline.

    Against the checkpoints: the mean R under the interventions, the mean normalized R and, where known, the
    mean return.

    Args:
        matrices: R of shape (states, interventions), null first, per (pipeline, checkpoint), checkpoints in
            training order.
        returns: the mean return per (pipeline, checkpoint), where known.

    Returns:
        The figure, or None when no pipeline has two checkpoints.
    """
    by_pipeline: dict[str, list[str]] = {}
    for pipeline, checkpoint in matrices:
        by_pipeline.setdefault(pipeline, []).append(checkpoint)
    if all(len(checkpoints) < 2 for checkpoints in by_pipeline.values()):
        return None
    returns = returns or {}
    labels = ["mean R under interventions", "mean normalized R"] + (["mean return"] if returns else [])
    fig, axes = figure_row(len(labels), 4.0, 3.2)
    for i, (pipeline, checkpoints) in enumerate(by_pipeline.items()):
        r = [_check.finite_array("matrices", matrices[pipeline, c]) for c in checkpoints]
        series = [[m[:, 1:].mean() for m in r], [(m[:, 1:] - m[:, :1]).mean() for m in r]]
        if returns:
            series.append([returns.get((pipeline, c), np.nan) for c in checkpoints])
        for ax, values in zip(axes, series, strict=True):
            ax.plot(checkpoints, values, marker="o", color=palette_colour(i), label=pipeline)
    for ax, label in zip(axes, labels, strict=True):
        ax.set_xlabel("checkpoint")
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    axes[0].legend(fontsize="small")
    return fig


_ROBUSTNESS_EXPLANATION: Final = """
<p><b>R</b> (seed 000, Algorithm 1): at a state, each of the n agents of a pipeline picks an action; R = 1 - JSD /
log2(n), where the JSD of the n one-hot choices is the entropy, in bits, of the histogram of their actions. R = 1
when all agree, 0 when n agents take n different actions. Stochastic agents average R over t draws.</p>
<p><b>Heatmaps</b>: one column per sampled state (in the order the guide played them), one row per intervention, the
null intervention on top. <b>Normalized R</b> is <code>R(I_j(s)) - R(I_0(s))</code> (Appendix D): above 0 the agents
agree more under the intervention than on the original state; its colour range is cut at +-0.5 and the title says
how many cells lie beyond.</p>
<p><b>Summary</b> (Appendix E): per pipeline and checkpoint, the mean R on the original states, the mean R under the
interventions, and their difference.</p>
"""


def write_robustness_report(
    measurement: Any, out_dir: str | os.PathLike[str] | None = None, *, limit: float = 0.5
) -> Path:
    """Writes an offline-robustness report: ``report.html`` with the heatmaps per pipeline and checkpoint.

    Args:
        measurement: an :class:`~rlwrappers.studies.offline.Measurement` or the directory it was saved to.
        out_dir: where to write (default: ``<directory>/report``, or ``./robustness-report``).
        limit: the colour range of the normalized heatmaps, ``[-limit, limit]`` (Appendix D uses 0.5).

    Writes ``report.html``, ``summary.csv``, ``grid-r.png`` and ``grid-normalized.png`` (every pipeline and
    checkpoint in one figure, as Figures 3-4), ``r-<pipeline>-<checkpoint>.png`` and
    ``normalized-<pipeline>-<checkpoint>.png``, and ``training.png`` when a pipeline has several checkpoints.

    Returns:
        The path of ``report.html``.
    """
    measurement, out = opened("measurement", measurement, Measurement, out_dir, "robustness-report")
    summary = measurement.summary()
    summary.to_csv(out / "summary.csv")
    overall = summary.xs(OVERALL, level="intervention")
    if measurement.returns:
        overall = overall.assign(
            **{"return": [measurement.returns.get(tuple(label.rsplit("@", 1)), np.nan) for label in overall.index]}
        )
    images: dict[str, tuple[str, str]] = {}
    names = list(measurement.interventions)
    for (pipeline, checkpoint), matrix in measurement.matrices.items():
        states = [str(i) for i in measurement.samples[pipeline].indices]
        label = file_label(f"{pipeline}-{checkpoint}")
        where = f"{pipeline} at {checkpoint}"
        fig = robustness_heatmap(matrix, states, names, title=f"R: {where}")
        images[f"r-{label}.png"] = (f"R, {where}", png(fig, out / f"r-{label}.png", None))
        fig = robustness_heatmap(
            normalized_robustness(matrix), states, names, normalized=True, limit=limit, title=f"normalized R: {where}"
        )
        images[f"normalized-{label}.png"] = (f"normalized R, {where}", png(fig, out / f"normalized-{label}.png", None))
    grids = {
        "grid-r.png": (
            "R per pipeline and checkpoint (Figure 3)",
            robustness_grid(measurement.matrices, measurement.returns),
        ),
        "grid-normalized.png": (
            "normalized R per pipeline and checkpoint (Figure 4)",
            robustness_grid(measurement.matrices, measurement.returns, normalized=True, limit=limit),
        ),
    }
    images = {name: (caption, png(fig, out / name, None)) for name, (caption, fig) in grids.items()} | images
    training = robustness_training(measurement.matrices, measurement.returns)
    if training is not None:
        images = {
            "training.png": ("mean R and return per checkpoint", png(training, out / "training.png", None)),
            **images,
        }
    request = measurement.request
    rows = "".join(
        f"<tr><td>{html.escape(x['name'])}</td><td>{html.escape(x['guide'])}</td><td>"
        + "<br>".join(html.escape(f"{k}: {', '.join(v)}") for k, v in x["checkpoints"].items())
        + "</td></tr>"
        for x in request.get("pipelines", [])
    )
    interventions = "".join(
        f"<tr><td>{html.escape(x['name'])}</td><td><code>{html.escape(x['assignments'])}</code></td>"
        f"<td>{html.escape(x['doc'])}</td></tr>"
        for x in request.get("interventions", [])
    )
    settings = ", ".join(f"{k} = {request[k]}" for k in ("p", "seed", "stochastic", "t") if k in request)
    title = f"Offline robustness: {request.get('env_id') or 'env'}"
    page = html_page(
        title,
        f"""<h2>What was measured</h2>
<p>Env: <code>{html.escape(str(request.get("env", "?")))}</code>. {html.escape(settings)}.</p>
<table><thead><tr><th>pipeline</th><th>guide (samples the states)</th><th>measured agents per checkpoint</th></tr>
</thead><tbody>{rows}</tbody></table>
<h2>Summary</h2>
{html_table(overall)}
<h2>Figures</h2>
{figures_html(images)}
<h2>Interventions</h2>
<table><thead><tr><th>name</th><th>assignments</th><th>what it does</th></tr></thead>
<tbody>{interventions}</tbody></table>
<h2>How to read the numbers</h2>
{_ROBUSTNESS_EXPLANATION.replace("+-0.5", f"+-{limit:g}")}
<p><small>Written by rlwrappers {html.escape(__version__)}.</small></p>
""",
    )
    path = out / "report.html"
    path.write_text(page, encoding="utf-8")
    return path
