"""Plots of evaluation results, kept apart from computing them (rliable's ``plot_utils`` spirit).

Every function takes plain data (mappings of arrays, a DataFrame) and returns a new
:class:`matplotlib.figure.Figure`; none touches pyplot's global state or the active backend, so the figures
can be saved (``fig.savefig("lcb.png")``), shown in a notebook, or embedded in a report. matplotlib comes
with the ``report`` extra and is imported only when a plot is drawn.

Example:
    >>> from rlwrappers.report import plots
    >>> fig = plots.lcb_curves({"clean": [10.0, 10.0, 12.0], "noisy": [2.0, 10.0, 12.0]}, [0.0, 1.0, 2.0])
    >>> [line.get_label() for line in fig.axes[0].get_lines()]
    ['clean', 'noisy']
"""

from __future__ import annotations

import itertools
import textwrap
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rlwrappers._optional import require
from rlwrappers.error import InvalidArgument, InvalidType
from rlwrappers.metrics.did import difference_in_differences
from rlwrappers.metrics.forecast import Forecast
from rlwrappers.metrics.reproducibility import lcb, pareto_front
from rlwrappers.metrics.spectra import band_energy, difference_spectrum, log_spectrum

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "figure",
    "figure_row",
    "palette_colour",
    "band_energy_curves",
    "band_energy_differences",
    "forecasts",
    "fourier_spectra",
    "impact_panels",
    "lcb_curves",
    "paired_deltas",
    "pareto",
    "return_distributions",
    "rolling_mean",
    "sweep_curves",
    "sweep_measures",
]

#: Methods past this many share colours again.
_PALETTE: Final = "tab10"
_FRONT_COLOUR: Final = "tab:red"
_CLEAN_COLOUR: Final = "black"
_SPECTRUM_MAP: Final = "magma"


def figure(width: float, height: float) -> tuple[Figure, Axes]:
    """A new figure with one axes, outside pyplot (no backend is selected, no figure is registered)."""
    figure_module = require("matplotlib.figure", purpose="plots")
    fig = figure_module.Figure(figsize=(width, height), layout="constrained")
    ax = fig.add_subplot()
    ax.grid(True, alpha=0.3)
    return fig, ax


def palette_colour(i: int) -> Any:
    """The ``i``-th colour of the reports' palette (it repeats after 10)."""
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
    fig, ax = figure(6.4, 4.0)
    for i, (method, returns) in enumerate(methods.items()):
        values = np.atleast_1d(lcb(returns, a, performance_kind=performance_kind, dispersion_kind=dispersion_kind))
        ax.plot(a, values, label=method, color=palette_colour(i), linewidth=1.8)
    sigma = {"mad": "MAD", "iqr": "IQR", "std": "std"}[dispersion_kind]
    ax.set_xlabel("alpha (weight of dispersion)")
    ax.set_ylabel(f"LCB = {performance_kind} - alpha * {sigma}")
    ax.set_title("Lower confidence bound of the return")
    _legend(fig, ax, len(methods))
    return fig


#: Legends longer than this go beside the axes, in columns of this many entries.
_LEGEND_INSIDE: Final = 10
_LEGEND_COLUMN: Final = 30


def _legend(fig: Figure, ax: Axes, count: int, inside: int = _LEGEND_INSIDE) -> None:
    """A legend inside the axes, or beside them in columns past ``inside`` entries (the figure widens for it)."""
    if count <= inside:
        ax.legend(fontsize="small")
        return
    columns = -(-count // _LEGEND_COLUMN)
    width, height = fig.get_size_inches()
    fig.set_size_inches(width + 3.4 * columns, max(height, 0.16 * min(count, _LEGEND_COLUMN) + 1.0))
    handles, labels = ax.get_legend_handles_labels()  # this axes' lines only, not the other panels'
    fig.legend(handles, labels, loc="outside right upper", fontsize="x-small", ncols=columns)


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
    fig, ax = figure(6.4, 4.4)
    ax.scatter(d[~front], p[~front], color="0.55", s=36, label="dominated", zorder=2)
    order = np.argsort(d[front])
    ax.plot(d[front][order], p[front][order], color=_FRONT_COLOUR, marker="o", linewidth=1.5, label="Pareto front")
    ax.margins(0.12)
    ax.set_xlabel(f"{dispersion_label} of the return (lower is better)")
    ax.set_ylabel("performance (higher is better)")
    ax.set_title("Performance against dispersion")
    ax.legend(fontsize="small")
    _label_points(ax, [str(n) for n in names], d, p)
    return fig


#: Where :func:`_label_points` tries a label: each distance from the point (in points), in each direction.
_LABEL_DISTANCES: Final = (5.0, 12.0, 20.0, 30.0, 42.0, 56.0)
_LABEL_DIRECTIONS: Final = ((1, 1), (1, -1), (-1, 1), (-1, -1), (1, 0), (-1, 0), (0, 1), (0, -1))
#: Labels placed farther than this (in points) get a line to their point.
_LABEL_NEAR: Final = 12.0
#: The radius (in points) kept clear around every point: the markers' own, 3, and a little more.
_MARKER_RADIUS: Final = 4.0


def _label_points(ax: Axes, names: list[str], xs: NDArray[np.float64], ys: NDArray[np.float64]) -> None:
    """Labels every point so that no two labels overlap, nor a label a point, the legend or the axes' edge.

    Greedy and deterministic: each label in turn takes the first place, nearest first, whose rendered box
    meets none of those; a label that finds none takes the place that overlaps least. A label placed farther
    than :data:`_LABEL_NEAR` gets a thin line to its point. The figure is laid out first, so the boxes are
    those it will draw.
    """
    agg = require("matplotlib.backends.backend_agg", purpose="plots")
    transforms = require("matplotlib.transforms", purpose="plots")
    fig = ax.get_figure()
    if fig is None:
        raise InvalidArgument("`ax` must belong to a figure")
    canvas = agg.FigureCanvasAgg(fig)  # a renderer to measure the text with
    canvas.draw()
    renderer = canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    radius = renderer.points_to_pixels(_MARKER_RADIUS)
    centres = ax.transData.transform(np.column_stack([xs, ys]))
    taken = [transforms.Bbox.from_extents(x - radius, y - radius, x + radius, y + radius) for x, y in centres]
    legend = ax.get_legend()
    if legend is not None:
        taken.append(legend.get_window_extent(renderer))

    def overlap(box: Any) -> float:
        outside = box.width * box.height - _area(transforms.Bbox.intersection(box, frame))
        return float(outside + sum(_area(transforms.Bbox.intersection(box, other)) for other in taken))

    for name, x, y in zip(names, xs, ys, strict=True):
        probe = ax.annotate(name, (x, y), xytext=(0.0, 0.0), textcoords="offset points", fontsize="small")
        places = []
        for distance, (dx, dy) in itertools.product(_LABEL_DISTANCES, _LABEL_DIRECTIONS):
            ha = "left" if dx > 0 else "right" if dx < 0 else "center"
            va = "bottom" if dy > 0 else "top" if dy < 0 else "center"
            probe.set(position=(dx * distance, dy * distance), horizontalalignment=ha, verticalalignment=va)
            box = probe.get_window_extent(renderer).padded(1.0)
            places.append((overlap(box), distance, (dx * distance, dy * distance), ha, va, box))
            if places[-1][0] == 0.0:
                break
        probe.remove()
        _, distance, offset, ha, va, box = min(places, key=lambda place: place[0])  # the first of the least
        line = {"arrowstyle": "-", "color": "0.6", "linewidth": 0.6, "shrinkA": 0.0, "shrinkB": 3.0}
        label = ax.annotate(
            name,
            (x, y),
            xytext=offset,
            textcoords="offset points",
            horizontalalignment=ha,
            verticalalignment=va,
            fontsize="small",
            arrowprops=line if distance > _LABEL_NEAR else None,
        )
        label.set_in_layout(False)
        taken.append(box)


def _area(box: Any) -> float:
    """The area of a box, 0 for None (no intersection)."""
    return 0.0 if box is None else float(box.width * box.height)


def _spread(ax: Axes, values_by_method: dict[str, NDArray[np.float64]]) -> None:
    """Draws one horizontal row per method, top to bottom: min-max whisker, IQR box, median tick, the values."""
    count = len(values_by_method)
    for i, values in enumerate(values_by_method.values()):
        y = count - 1 - i
        colour = palette_colour(i)
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
    fig, ax = figure(6.4, 1.2 + 0.5 * len(methods))
    _spread(ax, methods)
    ax.set_xlabel("episode return")
    ax.set_title("Distribution of returns (bar: IQR, line: min to max)")
    ax.legend(fontsize="small", loc="best")
    return fig


def paired_deltas(episodes: pd.DataFrame, *, baseline: str = "baseline") -> Figure:
    """Per shift, the paired change of return ``return - baseline_return`` over the same seeded episodes.

    Args:
        episodes: one row per episode with columns ``shift``, ``return`` and ``baseline_return`` (and
            ``agent`` to tell several agents apart), as :meth:`~rlwrappers.studies.results.Evaluation.episodes`
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
    fig, ax = figure(6.4, 1.2 + 0.5 * len(deltas))
    ax.axvline(0.0, color="0.3", linewidth=1.0, linestyle="--")
    _spread(ax, deltas)
    ax.set_xlabel("return - return of the same episode without shift")
    ax.set_title("Paired change of return under each shift")
    ax.legend(fontsize="small", loc="best")
    return fig


def figure_row(count: int, width: float, height: float) -> tuple[Figure, list[Axes]]:
    """A new figure with ``count`` axes side by side, each ``width`` wide, outside pyplot."""
    figure_module = require("matplotlib.figure", purpose="plots")
    fig = figure_module.Figure(figsize=(width * count, height), layout="constrained")
    return fig, list(fig.subplots(1, count, squeeze=False)[0])


def _states(clean: ArrayLike, perturbed: Any, clean_label: str) -> list[tuple[str, NDArray[Any]]]:
    """``(label, observations)`` for the clean observations, then each perturbed version (same shape)."""
    if not isinstance(perturbed, Mapping):
        raise InvalidType(f"`perturbed` must be a mapping of perturbation name -> observations, received {perturbed!r}")
    if not perturbed:
        raise InvalidArgument("`perturbed` must hold at least one perturbation, received an empty mapping")
    c = np.asarray(clean)
    out = [(clean_label, c)]
    for name, observations in perturbed.items():
        a = np.asarray(observations)
        if a.shape != c.shape:
            raise InvalidArgument(
                f"`perturbed[{name!r}]` must have the shape of `clean`, {c.shape}, received {a.shape}"
            )
        out.append((str(name), a))
    return out


def _frame_mean(values: NDArray[np.float64], trailing: int) -> NDArray[np.float64]:
    """The mean over every leading axis (batch, stack channels), keeping the last ``trailing`` axes."""
    return values.reshape(-1, *values.shape[values.ndim - trailing :]).mean(axis=0)


def fourier_spectra(
    clean: ArrayLike,
    perturbed: Mapping[str, ArrayLike],
    *,
    layout: str | None = None,
    clean_label: str = "unperturbed",
) -> Figure:
    """A row of centred log-magnitude Fourier spectra: the clean state, then each perturbed state (Figure 4).

    Each panel is :func:`~rlwrappers.metrics.spectra.log_spectrum`, ``log(1 + |F|)``, averaged over the
    frames when given a batch, with the zero frequency at the centre and frequencies (cycles per image)
    growing outward. All panels share one colour scale, so brighter means more energy in every panel.

    Args:
        clean: the observations without perturbation, of any layout of :mod:`rlwrappers.functional.images`.
        perturbed: perturbation name -> the same observations perturbed (the shape of ``clean``).
        layout: the observations' layout; inferred when None, as in :func:`~rlwrappers.metrics.spectra.spectrum`.
        clean_label: the first panel's title.

    Raises:
        InvalidArgument: no perturbation, or a perturbed entry whose shape differs from ``clean``.
    """
    states = _states(clean, perturbed, clean_label)
    images = [_frame_mean(log_spectrum(x, layout), 2) for _, x in states]
    top = max(float(image.max()) for image in images)
    height, width = images[0].shape
    extent = (-(width // 2) - 0.5, width - width // 2 - 0.5, -(height // 2) - 0.5, height - height // 2 - 0.5)
    fig, axes = figure_row(len(states), 2.4, 2.8)
    for ax, (name, _), image in zip(axes, states, images, strict=True):
        ax.imshow(image, cmap=_SPECTRUM_MAP, vmin=0.0, vmax=top, origin="lower", extent=extent)
        ax.set_title(textwrap.fill(name, 24), fontsize="medium")  # long specs wrap instead of overlapping
        ax.set_xlabel("cycles per image (x)")
    axes[0].set_ylabel("cycles per image (y)")
    fig.suptitle("Fourier spectrum log(1 + |F|), zero frequency at the centre")
    return fig


def band_energy_curves(
    clean: ArrayLike,
    perturbed: Mapping[str, ArrayLike],
    *,
    layout: str | None = None,
    clean_label: str = "unperturbed",
) -> Figure:
    """Total energy E(f) per spatial-frequency band, the clean state and each perturbation, log y axis (Figure 5).

    Each line is :func:`~rlwrappers.metrics.spectra.band_energy` averaged over the frames; bands with no
    energy (0 on a log axis) are left blank.

    Args:
        clean: the observations without perturbation, of any layout of :mod:`rlwrappers.functional.images`.
        perturbed: perturbation name -> the same observations perturbed (the shape of ``clean``).
        layout: the observations' layout; inferred when None.
        clean_label: the clean line's label.

    Raises:
        InvalidArgument: no perturbation, or a perturbed entry whose shape differs from ``clean``.
    """
    states = _states(clean, perturbed, clean_label)
    fig, ax = figure(6.4, 4.0)
    for i, (name, x) in enumerate(states):
        energy = _frame_mean(band_energy(x, layout), 1)
        colour = _CLEAN_COLOUR if i == 0 else palette_colour(i - 1)
        ax.plot(np.arange(len(energy)), energy, label=name, color=colour, linewidth=2.2 if i == 0 else 1.4)
    ax.set_yscale("log")
    ax.set_xlabel("spatial frequency f (cycles per image)")
    ax.set_ylabel("total energy E(f)")
    ax.set_title("Energy per spatial-frequency band")
    ax.legend(fontsize="small")
    return fig


def band_energy_differences(
    clean: ArrayLike, perturbed: Mapping[str, ArrayLike], *, layout: str | None = None
) -> Figure:
    """``E_perturbed(f) - E_clean(f)`` per band, one line per perturbation: which bands each adds or removes.

    Each line is :func:`~rlwrappers.metrics.spectra.difference_spectrum` averaged over the frames. The y axis
    is matplotlib's ``asinh`` scale, linear near 0 (up to the median size of the changes) and logarithmic
    beyond, so gains and losses of very different sizes show together.

    Args:
        clean: the observations without perturbation, of any layout of :mod:`rlwrappers.functional.images`.
        perturbed: perturbation name -> the same observations perturbed (the shape of ``clean``).
        layout: the observations' layout; inferred when None.

    Raises:
        InvalidArgument: no perturbation, or a perturbed entry whose shape differs from ``clean``.
    """
    states = _states(clean, perturbed, "clean")
    c = states[0][1]
    differences = {name: difference_spectrum(c, x, layout, average=True) for name, x in states[1:]}
    fig, ax = figure(6.4, 4.0)
    ax.axhline(0.0, color="0.3", linewidth=1.0, linestyle="--", label="_nolegend_")
    for i, (name, difference) in enumerate(differences.items()):
        ax.plot(np.arange(len(difference)), difference, label=name, color=palette_colour(i), linewidth=1.4)
    sizes = np.abs(np.concatenate(list(differences.values())))
    sizes = sizes[sizes > 0]
    ax.set_yscale("asinh", linear_width=float(np.median(sizes)) if sizes.size else 1.0)
    ax.set_xlabel("spatial frequency f (cycles per image)")
    ax.set_ylabel("E_perturbed(f) - E_clean(f)")
    ax.set_title("Change of energy per spatial-frequency band")
    ax.legend(fontsize="small")
    return fig


#: The panels of :func:`sweep_curves`: column, its standard error's column, the y label.
_SWEEP_PANELS: Final = (
    ("impact", "impact_sem", "impact I"),
    ("flip_rate", None, "action flip rate"),
    ("lpips", "lpips_sem", "LPIPS"),
    ("ssim_loss", "ssim_sem", "1 - SSIM"),
)


def sweep_measures(table: pd.DataFrame) -> list[str]:
    """The columns of a sweep table that :func:`sweep_curves` can draw: those holding a number."""
    return [c for c, _, _ in _SWEEP_PANELS if c in table.columns and np.isfinite(table[c].to_numpy(np.float64)).any()]


def sweep_curves(
    table: pd.DataFrame,
    values: ArrayLike,
    shifts: list[str],
    *,
    param: str,
    title: str = "",
    edges: Mapping[str, float] | None = None,
) -> Figure:
    """Impact, flip rate and perceptual distance against one parameter, one line per agent (Figures 2-3).

    Panels whose column holds no number (no minimum score, no probe, no LPIPS weights) are left out. Error
    bars are standard errors. When the values fall as the shift grows stronger (JPEG quality), the x axis is
    reversed so that strength always grows to the right.

    Args:
        table: a :func:`rlwrappers.studies.sweep.sweep_table`, indexed by (agent, shift).
        values: the parameter's value of each shift.
        shifts: the shifts, in the order of ``values``.
        param: the parameter's name (the x label).
        title: the figure's title.
        edges: agent -> the edge of imperceptibility on this curve, drawn as a dotted vertical line.

    Raises:
        InvalidArgument: ``values`` and ``shifts`` differ in length, or fewer than two values.
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    if len(x) != len(shifts) or len(x) < 2:
        raise InvalidArgument(
            f"`values` and `shifts` must list the same two or more shifts, received {len(x)} and {len(shifts)}"
        )
    agents = list(dict.fromkeys(str(a) for a in table.index.get_level_values("agent")))
    drawable = sweep_measures(table)
    panels = [p for p in _SWEEP_PANELS if p[0] in drawable]
    if not panels:
        raise InvalidArgument("`table` holds no impact, flip rate or perceptual distance to draw")
    fig, axes = figure_row(len(panels), 3.6, 3.2)
    for ax, (column, sem, label) in zip(axes, panels, strict=True):
        ax.grid(True, alpha=0.3)
        for i, agent in enumerate(agents):
            rows = [table.loc[(agent, s)] if (agent, s) in table.index else None for s in shifts]
            y = np.array([float(r[column]) if r is not None else np.nan for r in rows])
            err = np.array([float(r[sem]) if r is not None and sem else np.nan for r in rows])
            ax.errorbar(
                x,
                y,
                yerr=np.where(np.isfinite(err), err, 0.0),
                label=agent,
                color=palette_colour(i),
                marker="o",
                markersize=3.5,
                capsize=2.5,
                linewidth=1.4,
            )
            if edges and agent in edges and column == "impact":
                ax.axvline(edges[agent], color=palette_colour(i), linestyle=":", linewidth=1.2)
        ax.set_xlabel(param)
        ax.set_ylabel(label)
        if x[-1] < x[0]:
            ax.invert_xaxis()
    if len(agents) > 1:
        axes[0].legend(fontsize="small")
    if title:
        fig.suptitle(title)
    return fig


def rolling_mean(values: ArrayLike, window: int) -> NDArray[np.float64]:
    """The trailing mean over the last ``window`` values (fewer at the start), for display only.

    Example:
        >>> rolling_mean([1.0, 3.0, 5.0, 7.0], 2).tolist()
        [1.0, 2.0, 4.0, 6.0]
    """
    v = np.asarray(values, dtype=np.float64).ravel()
    if not isinstance(window, int) or isinstance(window, bool) or window < 1:
        raise InvalidArgument(f"`window` must be an int >= 1, received {window!r}")
    sums = np.cumsum(np.r_[0.0, v])
    starts = np.maximum(np.arange(1, len(v) + 1) - window, 0)
    return (sums[1:] - sums[starts]) / (np.arange(1, len(v) + 1) - starts)


def impact_panels(treated: Mapping[str, ArrayLike], control: ArrayLike, shift_at: int, *, window: int = 25) -> Figure:
    """Seed 001's three panels (Figures 3 and 5): returns with their rolling mean, pointwise and cumulative impact.

    Each array holds returns of shape (seeds, episodes) (or (episodes,) for one seed); the panels show means
    over seeds. The left panel draws the control and each shift level as faint per-episode returns under their
    rolling mean (``window`` episodes, trailing), with the shift's start dashed. The middle and right panels draw
    :func:`~rlwrappers.metrics.did.difference_in_differences`'s pointwise impact (treated minus control) and
    its running sum from episode ``shift_at`` on, one line per level.

    Args:
        treated: shift level name -> returns of the runs shifted from ``shift_at``.
        control: the same seeds' returns without the shift.
        shift_at: the first shifted episode.
        window: the rolling mean's width (seed 001: 25).

    Raises:
        InvalidArgument: no level, shapes that differ, or ``shift_at`` outside the episodes.
    """
    if not isinstance(treated, Mapping) or not treated:
        raise InvalidArgument(f"`treated` must map at least one shift level to its returns, received {treated!r}")
    c = np.asarray(control, dtype=np.float64)
    results = {str(name): difference_in_differences(t, c, shift_at) for name, t in treated.items()}
    clean_series = np.atleast_2d(c).mean(axis=0)
    episodes = np.arange(len(clean_series))
    after = np.arange(shift_at, len(clean_series))
    fig, axes = figure_row(3, 4.2, 3.4)
    series = {"control": clean_series} | {
        n: np.atleast_2d(np.asarray(t, np.float64)).mean(axis=0) for n, t in treated.items()
    }
    for i, (name, y) in enumerate(series.items()):
        colour = _CLEAN_COLOUR if i == 0 else palette_colour(i - 1)
        axes[0].plot(episodes, y, color=colour, alpha=0.25, linewidth=0.8)
        axes[0].plot(episodes, rolling_mean(y, window), color=colour, linewidth=1.6, label=name)
    for i, (name, result) in enumerate(results.items()):
        axes[1].plot(after, result.pointwise, color=palette_colour(i), linewidth=1.4, label=name)
        axes[2].plot(after, result.cumulative, color=palette_colour(i), linewidth=1.6, label=name)
    titles = (f"Return (rolling mean of {window})", "Pointwise impact", "Cumulative impact")
    labels = ("return", "treated - control", "sum of pointwise impact")
    for ax, title, label in zip(axes, titles, labels, strict=True):
        ax.grid(True, alpha=0.3)
        ax.axvline(shift_at, color="0.3", linestyle="--", linewidth=1.0)
        ax.set_title(title)
        ax.set_xlabel("episode")
        ax.set_ylabel(label)
    axes[1].axhline(0.0, color="0.3", linewidth=0.8)
    axes[2].axhline(0.0, color="0.3", linewidth=0.8)
    _legend(fig, axes[0], len(series), inside=4)  # more lines would hide the returns
    return fig


def forecasts(
    series: Mapping[str, ArrayLike], forecast: Mapping[str, Forecast | None], *, window: int = 25, title: str = ""
) -> Figure:
    """Seed 001's observational plot (Figures 4 and 6): each series' rolling mean, then its forecast and interval.

    Args:
        series: line name -> the per-episode returns the forecast was fitted to (mean or IQM over seeds).
        forecast: line name -> its :class:`~rlwrappers.metrics.forecast.Forecast`, or None to draw the series
            alone (a series too short to fit).
        window: the rolling mean's width (seed 001: 25), for display only.
        title: the figure's title.

    Raises:
        InvalidArgument: no series, or a forecast for a line without a series.
    """
    if not isinstance(series, Mapping) or not series:
        raise InvalidArgument(f"`series` must map at least one line name to returns, received {series!r}")
    unknown = set(forecast) - set(series)
    if unknown:
        raise InvalidArgument(f"`forecast` names lines that `series` does not: {sorted(unknown)}")
    fig, ax = figure(6.4, 3.8)
    for i, (name, values) in enumerate(series.items()):
        y = np.asarray(values, dtype=np.float64).ravel()
        colour = palette_colour(i)
        ax.plot(np.arange(len(y)), rolling_mean(y, window), color=colour, linewidth=1.6, label=name)
        f = forecast.get(name)
        if f is not None:
            ahead = np.arange(len(y), len(y) + len(f.mean))
            ax.plot(ahead, f.mean, color=colour, linewidth=1.4, linestyle="--")
            ax.fill_between(ahead, f.lower, f.upper, color=colour, alpha=0.15, linewidth=0)
    ax.grid(True, alpha=0.3)
    ax.set_xlabel("episode")
    ax.set_ylabel(f"return (rolling mean of {window}), then forecast")
    if title:
        ax.set_title(title)
    _legend(fig, ax, len(series))
    return fig
