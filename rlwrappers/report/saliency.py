"""The report of a saliency study (seed 003): the maps over their frames, the insertion AUCs, the sanity checks.

:func:`write_saliency_report` reads a :class:`~rlwrappers.studies.saliency.Study` (or its directory) and writes
one self-contained page; the figures are :func:`saliency_grid` and :func:`sanity_check_curves`.
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
from rlwrappers.error import InvalidArgument, InvalidType
from rlwrappers.functional import images
from rlwrappers.metrics.saliency import SIMILARITIES, sanity_check_summary
from rlwrappers.report.html import figures_html, html_page, opened, png
from rlwrappers.report.plots import figure_row, palette_colour
from rlwrappers.report.tables import html_table
from rlwrappers.spec import format_call
from rlwrappers.studies.saliency import Study

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

__all__ = ["saliency_grid", "sanity_check_curves", "write_saliency_report"]


_SIMILARITY_LABELS = {"spearman": "Spearman rank correlation", "ssim": "SSIM", "hog_pearson": "Pearson of HOGs"}


def sanity_check_curves(tables: Mapping[str, pd.DataFrame], *, title: str = "") -> Figure:
    """Mean similarity to the original maps against the randomized layer, one line per method (Figures 5-6).

    Args:
        tables: method -> its :func:`~rlwrappers.explain.sanity.sanity_check` table; all from the same
            agent's cascade.
        title: the figure's title.
    """
    if not isinstance(tables, Mapping) or not tables:
        raise InvalidType(f"`tables` must be a non-empty mapping of method -> sanity_check table, received {tables!r}")
    summaries = {str(m): sanity_check_summary(t) for m, t in tables.items()}
    layers = list(next(iter(summaries.values())).index.get_level_values("layer"))
    for method, summary in summaries.items():
        if list(summary.index.get_level_values("layer")) != layers:
            raise InvalidArgument(f"`tables[{method!r}]` randomizes other layers than the first table: {layers}")
    x = np.arange(len(layers))
    fig, axes = figure_row(len(SIMILARITIES), 3.8, 3.4)
    for ax, name in zip(axes, SIMILARITIES, strict=True):
        ax.grid(True, alpha=0.3)
        for i, (method, summary) in enumerate(summaries.items()):
            ax.errorbar(
                x,
                summary[name],
                yerr=summary[f"{name}_sem"].fillna(0.0),
                label=method,
                color=palette_colour(i),
                marker="o",
                markersize=3.5,
                capsize=2.5,
                linewidth=1.4,
            )
        ax.set_xticks(x, layers, rotation=45, ha="right", fontsize="x-small")
        ax.set_xlabel("randomized down to layer")
        ax.set_ylabel(_SIMILARITY_LABELS[name])
        ax.set_ylim(min(-0.05, ax.get_ylim()[0]), 1.05)
    axes[0].legend(fontsize="small")
    if title:
        fig.suptitle(title)
    return fig


def saliency_grid(states: ArrayLike, maps: Mapping[str, ArrayLike], *, count: int = 6) -> Figure:
    """Saliency maps over the frames they explain: one row per state, one column per method.

    Image observations show their last frame (the newest of a stack) in gray with the map over it, scaled
    per map to its own range; vector observations show the map as one bar per feature.

    Args:
        states: the observations, shape (n, *observation shape).
        maps: per method, the maps of those states, shape (n, H, W) or (n, features).
        count: how many of the states (the first ones) to show.
    """
    xs = np.asarray(states)
    if not isinstance(maps, Mapping) or not maps:
        raise InvalidType(f"`maps` must be a non-empty mapping of method -> maps, received {maps!r}")
    shown = min(_check.integer("count", count, minimum=1), len(xs))
    values = {str(m): np.asarray(v, dtype=np.float64) for m, v in maps.items()}
    for method, v in values.items():
        if len(v) != len(xs):
            raise InvalidArgument(f"`maps[{method!r}]` holds {len(v)} maps for {len(xs)} states")
    vector = next(iter(values.values())).ndim == 2
    layout = None if vector else images.infer_layout(xs.shape[1:])
    figure_module = require("matplotlib.figure", purpose="plots")
    fig = figure_module.Figure(figsize=(2.2 * len(values), 2.2 * shown), layout="constrained")
    axes = fig.subplots(shown, len(values), squeeze=False)
    for i in range(shown):
        frame = None if layout is None else images.frames(xs[i], layout)[-1]
        for j, (method, v) in enumerate(values.items()):
            ax = axes[i][j]
            if frame is None:
                ax.bar(range(v.shape[1]), v[i], color=palette_colour(j))
            else:
                ax.imshow(frame, cmap="gray", interpolation="nearest")
                ax.imshow(v[i], cmap="jet", alpha=0.5, interpolation="bilinear")
                ax.set_xticks([])
                ax.set_yticks([])
            if i == 0:
                ax.set_title(method, fontsize="small")
            if j == 0:
                ax.set_ylabel(f"state {i}", fontsize="small")
    return fig


_EXPLAIN_EXPLANATION: Final = """
<p><b>Insertion metric</b> (seed 003, Section 3.3.2): from a fully perturbed state (black, or uniform random), 84
pixels are uncovered per step in the map's order (LIME: whole superpixels by weight, pixels inside in random
order) and the agent's output for the analysed action is measured. <b>q</b> divides the q-value (or logit) by
its value on the state itself, so every curve ends at 1; <b>advantage</b> is q - mean(q), unnormalized. The AUC
is the trapezoid rule over the uncovered fraction, from 0 to 1. Higher is better: the pixels the map ranks first
restore the agent's output fastest.</p>
<p><b>Sanity check</b> (Adebayo et al.): the agent's layers are re-initialized one after the other from the
output layer down, and each randomized agent's map is compared with the original's by Spearman rank
correlation, SSIM and the Pearson correlation of HOGs, each the larger of the map's and its negation's. Maps
that depend on what the agent learned fall as layers are randomized; a map that stays similar does not explain
the agent. {ssim}</p>
"""

#: What the report says of each SSIM form (``Study.flatten_ssim``).
_SSIM_FORMS: Final = {
    False: "SSIM compared the 2-D maps, with a 7 x 7 window (the paper's reference code flattened them first).",
    True: "SSIM compared the flattened maps, with a window of 7 along the rows of pixels, as the paper's "
    "reference code did.",
}


def write_saliency_report(study: Any, out_dir: str | os.PathLike[str] | None = None) -> Path:
    """Writes a saliency study's report: ``report.html`` with the maps, the insertion table and sanity curves.

    Args:
        study: an :class:`~rlwrappers.studies.saliency.Study` or the directory it was saved to.
        out_dir: where to write (default: ``<directory>/report``, or ``./explain-report``).

    Writes ``report.html``, ``summary.csv`` (the insertion AUCs and seconds per map, per method),
    ``maps.png`` (the first states' maps over their frames) and ``sanity.png`` when the study ran the check.

    Returns:
        The path of ``report.html``.
    """
    study, out = opened("study", study, Study, out_dir, "explain-report")
    summary = study.summary()
    summary.to_csv(out / "summary.csv")
    images = {
        "maps.png": (
            "saliency maps of the first states",
            png(saliency_grid(study.states, study.maps), out / "maps.png", None),
        )
    }
    if len(study.sanity):
        tables = {method: table for method, table in study.sanity.groupby("method", sort=False)}
        fig = sanity_check_curves(tables, title="similarity to the original maps as layers are randomized")
        caption = f"sanity checks (Figures 5-6). {_SSIM_FORMS[study.flatten_ssim]}"
        images["sanity.png"] = (caption, png(fig, out / "sanity.png", None))
    else:
        (out / "sanity.png").unlink(missing_ok=True)
    params = "".join(
        f"<tr><td>{html.escape(method)}</td><td><code>{html.escape(format_call(method, dict(p)))}</code></td></tr>"
        for method, p in study.params.items()
    )
    title = f"Saliency maps: {len(study.states)} states, {len(study.maps)} methods"
    page = html_page(
        title,
        f"""<h2>Insertion metric and time per map</h2>
<p>Means over the states; higher AUC is better.</p>
{html_table(summary)}
<h2>Figures</h2>
{figures_html(images)}
<h2>Parameters</h2>
<table><thead><tr><th>method</th><th>call</th></tr></thead><tbody>{params}</tbody></table>
<h2>How to read the numbers</h2>
{_EXPLAIN_EXPLANATION.format(ssim=html.escape(_SSIM_FORMS[study.flatten_ssim]))}
<p><small>Written by rlwrappers {html.escape(__version__)}.</small></p>
""",
    )
    path = out / "report.html"
    path.write_text(page, encoding="utf-8")
    return path
