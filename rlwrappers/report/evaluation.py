"""The report of an evaluation: one self-contained HTML page with its figures, and its tables as CSV.

:func:`write_report` reads a run directory written by :func:`~rlwrappers.studies.run.evaluate` and writes::

    report/
      report.html    the request, the summary table, the figures (embedded), and how to read the numbers
      summary.csv    the summary table: one row per (agent, shift)
      lcb.png, pareto.png, returns.png, deltas.png
      impact.csv     with shifts: impact, flip rate, perturbation size, SSIM and LPIPS per (agent, shift)
      sweep-<k>.png  one per sweep found (:func:`rlwrappers.studies.sweep.curves`): the measures against the parameter
      spectra.png, band-energy.png   with image probes: Fourier spectra and energy per frequency band
      did.csv, impact-<k>.png        causal evaluations (``shift_at``): the difference-in-differences table and
                                     seed 001's three impact panels per agent, one line per shift
      forecast.csv, forecast-<k>.png observational evaluations: damped-trend forecasts per agent and arm
      PARTIAL.txt    only while some runs have not finished: which ones

A report of an evaluation with unfinished runs is marked PARTIAL in its title, in a banner that lists the
missing runs, and on every figure: its numbers leave those runs out and will change when they finish.
"""

from __future__ import annotations

import html
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

import numpy as np

from rlwrappers._optional import require
from rlwrappers._version import __version__
from rlwrappers.error import InvalidArgument, InvalidType, LogError, MissingExtra, MissingFile
from rlwrappers.metrics.forecast import AGGREGATES
from rlwrappers.report import plots
from rlwrappers.report.html import figures_html, html_page, png
from rlwrappers.report.tables import html_table
from rlwrappers.spec import format_call
from rlwrappers.studies import sweep as sweep_study
from rlwrappers.studies.design import BASELINE
from rlwrappers.studies.results import Evaluation, fixed_seed_coverage, open_evaluation, summarize

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from rlwrappers.metrics.perceptual import LPIPS

__all__ = ["CURVE_ALPHAS", "TABLE_ALPHAS", "write_report"]

#: The alphas of the summary's LCB columns unless told otherwise.
TABLE_ALPHAS: Final = (0.5, 1.0, 2.0)


#: The LCB curve spans alpha in [0, CURVE_ALPHA_MAX] (further when a table alpha is larger).
CURVE_ALPHA_MAX: Final = 3.0


CURVE_ALPHAS: Final = tuple(np.linspace(0.0, CURVE_ALPHA_MAX, 61).tolist())


PARTIAL_FILE: Final = "PARTIAL.txt"


#: The edges of imperceptibility read off each sweep: measure -> the level it must reach.
EDGE_TARGETS: Final = MappingProxyType({"impact": 0.5, "flip_rate": 0.5})


#: The columns of the impact table.
IMPACT_COLUMNS: Final = ("clean", "shifted", "impact", "impact_sem", "flip_rate", "linf", "l2", "ssim", "lpips")


#: At most this many shifts share the spectrum figures.
SPECTRA_SHIFTS: Final = 8


_EXPLANATION: Final = """
<p>Every number pools the finished episodes of one (agent, shift) pair over all its seeds. Episode <i>i</i> of the
run with seed <i>s</i> starts from the same seeded state in every shift and in the <b>baseline</b> (the same seeds,
no shift), so the runs differ only by the shift.</p>
<ul>
<li><b>mean</b>, <b>median</b>: the performance P of the returns R.</li>
<li><b>MAD</b>: median absolute deviation, <code>median(|R - median(R)|)</code>, with scale 1 (not multiplied by
1.4826). The typical distance of a return from the median; a few outlying episodes barely move it.</li>
<li><b>IQR</b>: <code>Q3 - Q1</code>, the width of the middle half of the returns.</li>
<li><b>std</b>: the standard deviation of the returns (population, ddof = 0).</li>
<li><b>LCB(alpha)</b> = <code>P - alpha * sigma</code>, here the mean minus alpha times the MAD: the return one can
count on when dispersion weighs alpha times as much as performance. At alpha = 0 it is the mean; the larger
alpha, the more a consistent agent is preferred to an erratic one with a higher mean (Flageat et al. 2023,
"Beyond Expected Return").</li>
<li><b>delta</b>: the mean over episodes of <code>return - baseline return</code> of the same seeded episode;
below 0 the shift costs return.</li>
</ul>
<p>A method on the <b>Pareto front</b> has no other method with a higher (or equal) mean and a lower (or equal)
MAD.</p>
"""


def _table_alphas(alphas: Sequence[float] | None) -> list[float]:
    if alphas is None:
        return list(TABLE_ALPHAS)
    values = list(np.atleast_1d(np.asarray(alphas, dtype=np.float64)))
    if not values or not all(np.isfinite(a) and a >= 0 for a in values):
        raise InvalidArgument(f"`alphas` must be a non-empty list of finite numbers >= 0, received {alphas!r}")
    return [float(a) for a in values]


def _spec_text(entry: Mapping[str, Any]) -> str:
    """A stored perturbation dict as ``name(key=value, ...)``, every parameter written out."""
    return format_call(str(entry.get("name", "?")), {k: v for k, v in entry.items() if k != "name"})


def _label(agent: str, shift: str, several_agents: bool) -> str:
    return f"{agent} / {shift}" if several_agents else shift


def _figures(
    episodes: pd.DataFrame, summary: pd.DataFrame, several_agents: bool, table_alphas: Sequence[float]
) -> dict[str, tuple[str, Figure]]:
    """The report's figures by file name, each with its caption."""
    returns = {
        _label(str(agent), str(shift), several_agents): group["return"].to_numpy(dtype=np.float64)
        for (agent, shift), group in episodes.groupby(["agent", "shift"], sort=False)
    }
    labels = {key: _label(str(key[0]), str(key[1]), several_agents) for key in summary.index}
    curve = np.linspace(0.0, max(CURVE_ALPHA_MAX, *table_alphas), 61)
    figures = {
        "lcb.png": (
            "LCB(alpha) = mean - alpha * MAD against alpha. Where lines cross, the ranking changes with how much "
            "dispersion is weighed.",
            plots.lcb_curves(returns, curve),
        ),
        "pareto.png": (
            "Mean return against MAD. Points joined in red are on the Pareto front: no other point has a mean "
            "as high and a MAD as low, one of them strictly better.",
            plots.pareto(
                {labels[k]: float(v) for k, v in summary["mean"].items()},
                {labels[k]: float(v) for k, v in summary["MAD"].items()},
            ),
        ),
        "returns.png": (
            "Every episode's return (dots); the bar spans the IQR, the black tick is the median.",
            plots.return_distributions(returns),
        ),
    }
    shifted = (episodes["shift"] != BASELINE) & episodes["baseline_return"].notna()
    if shifted.any():
        figures["deltas.png"] = (
            "Per shift, return minus the return of the same seeded episode without shift; left of the dashed "
            "line the shift cost return.",
            plots.paired_deltas(episodes),
        )
    return figures


_SHIFT_EXPLANATION: Final = """
<p><b>impact</b> is eq. 3 of Korkmaz (2023), <code>(clean - shifted) / (clean - minimum)</code>, on the mean returns
of the shifted runs and their same-seed counterfactuals: 0 when the shift costs nothing, 1 when it drives the
return to the game's minimum score; <b>impact_sem</b> is its standard error over run seeds. The other measures come
from the probe: states visited by the agent on the clean env, each seen with and without the shift.
<b>flip_rate</b> is the share of them where the shift changes the agent's action; <b>linf</b> and <b>l2</b> are the
mean sizes of shifted minus clean input (uint8 images in [0, 1] pixel scale, like an attack's eps); <b>ssim</b>
(1 for identical images) and <b>lpips</b> (0 for identical images) compare the agent's clean and shifted inputs,
frame by frame for stacks.</p>
"""


@dataclass(frozen=True)
class _ShiftMeasures:
    """What the report shows about the shifts: the impact table, the sweeps and their edges, and notes."""

    table: pd.DataFrame
    curves: list[sweep_study.Curve]
    edges: pd.DataFrame | None
    notes: list[str]


def _lpips_model(lpips: LPIPS | str | None) -> tuple[LPIPS | None, str]:
    """The LPIPS model to use and a sentence that says which, or why there is none."""
    if lpips is None:
        return None, "LPIPS: not asked for (n/a)."
    if not isinstance(lpips, str):
        return lpips, f"LPIPS: {lpips.label}."
    if lpips != "auto":
        raise InvalidArgument(f"`lpips` must be 'auto', an LPIPS model or None, received {lpips!r}")
    from rlwrappers.metrics.perceptual import LPIPS

    try:
        model = LPIPS()
    except (MissingFile, MissingExtra) as exc:
        return None, f"LPIPS: n/a, {exc}"
    return model, f"LPIPS: {model.label}."


def _edges(table: pd.DataFrame, curves: list[sweep_study.Curve]) -> pd.DataFrame | None:
    """Per agent and sweep, the mildest value reaching each of :data:`EDGE_TARGETS`, and the LPIPS there."""
    pd = require("pandas", purpose="reports")
    rows = []
    for curve in curves:
        for agent in table.index.get_level_values("agent").unique():
            row: dict[str, Any] = {"agent": agent, "sweep": curve.title}
            for metric, target in EDGE_TARGETS.items():
                if not np.isfinite(table[metric].to_numpy(np.float64)).any():
                    continue
                found = sweep_study.edge(table, curve, target, metric, agent=str(agent))
                row[f"{metric}>={target} at"] = found["value"] if found["value"] is not None else np.nan
                row[f"{metric} LPIPS there"] = found["lpips"] if found["lpips"] is not None else np.nan
            rows.append(row)
    if not rows or all(len(r) == 2 for r in rows):
        return None
    return pd.DataFrame(rows).set_index(["agent", "sweep"])


def _shift_measures(
    evaluation: Evaluation, minimum: float | str | None, lpips: LPIPS | str | None
) -> _ShiftMeasures | None:
    if not evaluation.request.get("shifts") or evaluation.request.get("multiagent"):
        return None  # switching agents changes no observation: no probe, no impact of eq. 3
    model, lpips_note = _lpips_model(lpips)
    if minimum is None:
        request = evaluation.request
        minimum = sweep_study.resolve_minimum(str(request.get("env_id")), request.get("env_kwargs"))
    table = sweep_study.sweep_table(evaluation, minimum, model)
    notes = [lpips_note]
    notes.append(
        f"Minimum score: {minimum}."
        if minimum is not None
        else "Minimum score: unknown for this env, so impact is n/a; pass one (`rlwrappers report --min-score`)."
    )
    if not evaluation.request.get("probe"):
        notes.append("No probe was run (`--probe N`), so flip rates and perceptual distances are n/a.")
    curves = sweep_study.curves(evaluation)
    return _ShiftMeasures(table, curves, _edges(table, curves), notes)


def _spectrum_shifts(evaluation: Evaluation, measures: _ShiftMeasures) -> list[str]:
    """The shifts shown in the spectrum figures: all, or the strongest of each sweep and the others."""
    shifts = list(evaluation.request.get("shifts") or {})
    if len(shifts) <= SPECTRA_SHIFTS:
        return shifts
    on_curves = {s for c in measures.curves for s in c.shifts}
    chosen = [c.shifts[-1] for c in measures.curves] + [s for s in shifts if s not in on_curves]
    return list(dict.fromkeys(chosen))[:SPECTRA_SHIFTS]


def _shift_figures(evaluation: Evaluation, measures: _ShiftMeasures) -> dict[str, tuple[str, Figure]]:
    figures: dict[str, tuple[str, Figure]] = {}
    drawable = bool(plots.sweep_measures(measures.table))  # no minimum score and no probe: nothing to draw
    for k, curve in enumerate(measures.curves if drawable else []):
        edges = {}
        if measures.edges is not None and f"impact>={EDGE_TARGETS['impact']} at" in measures.edges:
            for (agent, title), value in measures.edges[f"impact>={EDGE_TARGETS['impact']} at"].items():
                if title == curve.title and np.isfinite(value):
                    edges[str(agent)] = float(value)
        figures[f"sweep-{k}.png"] = (
            f"{curve.title}: impact (with standard errors over seeds), flip rate and perceptual distance against "
            f"{curve.param}, strength growing to the right; a dotted line marks where impact first reaches "
            f"{EDGE_TARGETS['impact']}.",
            plots.sweep_curves(
                measures.table, curve.values, list(curve.shifts), param=curve.param, title=curve.title, edges=edges
            ),
        )
    probes = evaluation.probes()
    agents = list(dict.fromkeys(a for a, _ in probes))
    if not agents:
        return figures
    agent = agents[0]
    chosen = [s for s in _spectrum_shifts(evaluation, measures) if (agent, s) in probes]
    images = {s: probes[agent, s] for s in chosen if probes[agent, s].clean.dtype == np.uint8}
    if not images:
        return figures
    clean = next(iter(images.values())).clean
    same = {s: p.shifted for s, p in images.items() if np.array_equal(p.clean, clean)}
    if not same:
        return figures
    figures["spectra.png"] = (
        f"Fourier spectra of {agent}'s input at the probed states (Figure 4 of Korkmaz 2023), averaged over states "
        "and stacked frames.",
        plots.fourier_spectra(clean, same),
    )
    figures["band-energy.png"] = (
        "The change of total energy E(f) per spatial-frequency band that each shift makes (Figure 5): above 0 "
        "it adds energy at that frequency, below 0 it removes it.",
        plots.band_energy_differences(clean, same),
    )
    return figures


def _shift_html(measures: _ShiftMeasures, images: Mapping[str, tuple[str, str]]) -> str:
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in measures.notes)
    parts = [
        "<h2>Impact and imperceptibility</h2>",
        "<p>One row per agent and shift.</p>",
        html_table(measures.table[list(IMPACT_COLUMNS)]),
        f"<ul>{notes}</ul>",
        _SHIFT_EXPLANATION,
    ]
    if measures.edges is not None:
        targets = " and ".join(f"{m} {t}" for m, t in EDGE_TARGETS.items())
        parts += [
            "<h3>Edges of imperceptibility</h3>",
            f"<p>Per sweep, the mildest value (in the order listed) that reaches {html.escape(targets)}, and the "
            "LPIPS of the shift there; n/a where no value reaches it.</p>",
            html_table(measures.edges),
        ]
    parts.append(figures_html(images))
    return "\n".join(parts)


_DID_COLUMNS: Final = ["seeds", "estimate", "se", "lower", "upper", "cumulative"]


_FORECAST_COLUMNS: Final = ["episodes", "forecast", "lower", "upper", "damping"]


@dataclass(frozen=True)
class _Protocol:
    """What the report shows of a causal or observational evaluation."""

    title: str
    intro: str
    table: pd.DataFrame | None
    csv: str
    statements: list[str]
    figures: dict[str, tuple[str, Figure]]


def _protocol(
    evaluation: Evaluation, episodes: pd.DataFrame, aggregate: str = "mean", window: int = 25
) -> _Protocol | None:
    """The causal section (DiD table, fixed-seed check, verdicts, impact panels) or the observational one."""
    from rlwrappers.studies import shift_impact

    if evaluation.shift_at is not None:
        shift_at = evaluation.shift_at
        try:
            table = shift_impact.did_table(evaluation)
        except MissingExtra as exc:
            return _Protocol("Causal impact", "", None, "", [f"n/a: {exc}"], {})
        check = evaluation.fixed_seed_check()
        broken = check[~check["identical"]]
        statements = [
            f"FIXED-SEED CHECK FAILED for {len(broken)} of {len(check)} shifted runs: they differ from their "
            "counterfactual before the shift, so the env or the agent is not deterministic and no estimate below "
            f"is a causal effect. {fixed_seed_coverage(check)}"
            if len(broken)
            else f"Fixed-seed check passed: all {len(check)} shifted runs equal their counterfactual on the episodes "
            f"before {shift_at} that were compared. {fixed_seed_coverage(check)}"
        ]
        statements += [f"{agent} under {shift}: {row.verdict}" for (agent, shift), row in table.iterrows()]
        statements += shift_impact.impact_verdicts(table)
        figures = {}
        for k, agent in enumerate(dict.fromkeys(episodes["agent"])):
            levels = {}
            for shift in dict.fromkeys(episodes[episodes["agent"] == agent]["shift"]):
                if shift != BASELINE and (agent, shift) in table.index and np.isfinite(table.loc[(agent, shift), "se"]):
                    levels[str(shift)] = shift_impact.returns(episodes, str(agent), str(shift))
            if not levels:
                continue
            control = shift_impact.returns(episodes, str(agent), BASELINE)
            levels = {name: r for name, r in levels.items() if r.shape == control.shape}
            if levels:
                figures[f"impact-{k}.png"] = (
                    f"{agent}: returns with their rolling mean over {window} episodes (left), the pointwise impact "
                    f"(treated minus counterfactual, middle) and its running sum (right), one line per shift, "
                    f"means over seeds; the shift starts at the dashed line (episode {shift_at}).",
                    plots.impact_panels(levels, control, shift_at, window=window),
                )
        intro = (
            f"Every shift starts at episode {shift_at}; its counterfactual is the same seeds without it. The estimate "
            "is the difference-in-differences (seed 001, eq. 4, equal to eq. 5 when the fixed-seed check passes) "
            "averaged over seeds; se is its standard error over seeds; lower and upper bound its 95% t-interval; "
            "cumulative is the cumulative impact at the last episode. An agent beats another under a shift when its "
            "cumulative impact is higher at the end."
        )
        return _Protocol("Causal impact", intro, table, "did.csv", statements, figures)
    if evaluation.observational:
        try:
            arms = shift_impact.forecasts(evaluation, how=aggregate)
        except MissingExtra as exc:
            return _Protocol("Forecasts", "", None, "", [f"n/a: {exc}"], {})
        table = shift_impact.forecast_table(arms)
        statements = [f"{a} / {s}: {note}" for (a, s), note in table["note"].items() if note]
        statements += shift_impact.forecast_verdicts(arms)
        figures = {}
        for k, agent in enumerate(dict.fromkeys(a for a, _ in arms)):
            mine = {s: arm for (a, s), arm in arms.items() if a == agent and len(arm.series)}
            figures[f"forecast-{k}.png"] = (
                f"{agent}: the rolling mean over {window} episodes of each episode's {aggregate} return over seeds, "
                "then the damped-trend forecast (dashed) with its 99% prediction interval (shaded) over 100 episodes.",
                plots.forecasts(
                    {s: arm.series for s, arm in mine.items()},
                    {s: arm.forecast for s, arm in mine.items()},
                    window=window,
                    title=str(agent),
                ),
            )
        intro = (
            f"Shifts struck at random. Each arm's returns are aggregated over seeds per episode ({aggregate}); Holt's "
            "linear trend "
            "with a damped trend is fitted to that raw series (not to its rolling mean) and forecasts 100 more "
            "episodes. forecast, lower and upper are the forecast and its 99% prediction interval at the last of "
            "them; damping is the fitted phi of statsmodels' ETSModel, bounded to [0.8, 0.98] where seed 001 allows "
            "0 < phi < 1 (ETSModel's trend smoothing is the paper's alpha * beta*). An arm counts as significantly "
            "better than another when its forecast is higher and the intervals never overlap."
        )
        return _Protocol("Forecasts", intro, table, "forecast.csv", statements, figures)
    return None


def _protocol_html(section: _Protocol, images: Mapping[str, tuple[str, str]]) -> str:
    parts = [f"<h2>{html.escape(section.title)}</h2>", f"<p>{html.escape(section.intro)}</p>"]
    if section.table is not None and len(section.table):
        columns = _DID_COLUMNS if section.csv == "did.csv" else _FORECAST_COLUMNS
        parts.append(html_table(section.table[columns]))
    parts.append("<ul>" + "".join(f"<li>{html.escape(s)}</li>" for s in section.statements) + "</ul>")
    parts.append(figures_html(images))
    return "\n".join(parts)


def _request_html(evaluation: Evaluation) -> str:
    request = evaluation.request
    index = evaluation.index
    sources = request.get("agent_sources") or {a: None for a in index["agent"].unique()}
    agents = "<br>".join(
        html.escape(f"{name}: {source}" if source else f"{name} (an object passed in code)")
        for name, source in sources.items()
    )
    finished = int((index["status"] == "complete").sum())
    rows = [
        ("env id", html.escape(str(request.get("env_id", "?")))),
        ("env kwargs", html.escape(repr(request.get("env_kwargs") or {}))),
        ("agents", agents),
        ("seeds", html.escape(", ".join(map(str, request.get("seeds", []))))),
        ("episodes per run", html.escape(str(request.get("episodes", "?")))),
        ("deterministic actions", html.escape(str(request.get("deterministic", "?")))),
        ("runs finished", f"{finished} of {len(index)}"),
        ("rlwrappers version", html.escape(f"{request.get('rlwrappers', '?')} (report: {__version__})")),
    ]
    shifts = request.get("shifts") or {}
    shift_rows = [(html.escape(BASELINE), "none: the counterfactual of every shift, with the same seeds")] + [
        (html.escape(name), "<br>".join(f"<code>{html.escape(_spec_text(e))}</code>" for e in entries))
        for name, entries in shifts.items()
    ]
    first = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>\n" for k, v in rows)
    second = "".join(f"<tr><td>{k}</td><td>{v}</td></tr>\n" for k, v in shift_rows)
    return (
        f"<table>\n{first}</table>\n<h3>Shifts</h3>\n"
        f"<table>\n<thead><tr><th>shift</th><th>perturbations</th></tr></thead>\n{second}</table>"
    )


def _missing_runs(index: pd.DataFrame) -> list[str]:
    rows = index[index["status"] != "complete"]
    return [f"{r.agent} / {r.shift} / seed {r.seed} ({r.status})" for r in rows.itertuples()]


def _page(
    evaluation: Evaluation,
    summary: pd.DataFrame,
    images: Mapping[str, tuple[str, str]],
    missing: list[str],
    shift_section: str = "",
) -> str:
    env_id = str(evaluation.request.get("env_id", "?"))
    title = f"{'PARTIAL ' if missing else ''}Evaluation report: {env_id}"
    banner = ""
    if missing:
        items = "".join(f"<li>{html.escape(m)}</li>" for m in missing)
        banner = (
            f'<div class="partial"><h2>PARTIAL RESULT: {len(missing)} of {len(evaluation.index)} runs have not '
            "finished</h2><p>Every number and figure below leaves these runs out and will change when they finish; "
            f"run the same evaluation again to finish them.</p><ul>{items}</ul></div>"
        )
    figures = figures_html(images)
    return html_page(
        title,
        f"""{banner}
<h2>What was run</h2>
{_request_html(evaluation)}
<h2>Summary</h2>
<p>One row per agent and shift; returns pooled over seeds and episodes.</p>
{html_table(summary)}
<h2>Figures</h2>
{figures}
{shift_section}
<h2>How to read the numbers</h2>
{_EXPLANATION}
<p><small>Written by rlwrappers {html.escape(__version__)} from {html.escape(str(evaluation.path))}.</small></p>
""",
    )


def write_report(
    evaluation: Evaluation | str | os.PathLike[str],
    out_dir: str | os.PathLike[str] | None = None,
    *,
    alphas: Sequence[float] | None = None,
    minimum: float | str | None = None,
    lpips: LPIPS | str | None = "auto",
    aggregate: str = "mean",
) -> Path:
    """Writes an evaluation's report: ``report.html`` (self-contained), ``summary.csv`` and the PNG figures.

    Args:
        evaluation: an :class:`~rlwrappers.studies.results.Evaluation` or its run directory.
        out_dir: where to write (default: ``<run dir>/report``); created if needed, earlier files replaced.
        alphas: the alphas of the summary's LCB columns (default 0.5, 1, 2); the LCB curve spans 0 to 3, or to
            the largest of them.
        minimum: the env's fixed minimum score for impact (a number or an Atari game name); None looks it up
            (:func:`rlwrappers.studies.sweep.resolve_minimum`) and leaves impact n/a when there is none.
        lpips: the perceptual distance model: ``"auto"`` loads LPIPS from local weights and says n/a in the
            report when they are missing, an :class:`~rlwrappers.metrics.perceptual.LPIPS` uses that one, None
            skips it.
        aggregate: how an observational evaluation's forecasts aggregate each episode over seeds: "mean" or
            "iqm" (seed 001, Appendix A, Definition 1).

    Returns:
        The path of ``report.html``.

    Raises:
        LogError: the directory holds no evaluation, or no run of it has finished.
        InvalidArgument: an alpha is negative, or an unknown ``aggregate``.
    """
    if not isinstance(evaluation, Evaluation):
        if not isinstance(evaluation, (str, os.PathLike)):
            raise InvalidType(f"`evaluation` must be an Evaluation or a run directory, received {evaluation!r}")
        evaluation = open_evaluation(evaluation)
    table_alphas = _table_alphas(alphas)
    if aggregate not in AGGREGATES:
        raise InvalidArgument(f"`aggregate` must be one of {AGGREGATES}, received {aggregate!r}")
    index = evaluation.index
    if len(index) == 0 or "status" not in index or not (index["status"] == "complete").any():
        raise LogError(f"the evaluation at {str(evaluation.path)!r} has no finished run yet; nothing to report")
    missing = _missing_runs(index)
    episodes = evaluation.episodes()  # read once: the summary and the figures both come from it
    summary = summarize(episodes, table_alphas)
    out = Path(out_dir) if out_dir is not None else evaluation.path / "report"
    out.mkdir(parents=True, exist_ok=True)
    summary.to_csv(out / "summary.csv")
    partial_file = out / PARTIAL_FILE
    if missing:
        partial_file.write_text("PARTIAL: these runs have not finished and are left out:\n" + "\n".join(missing) + "\n")
    else:
        partial_file.unlink(missing_ok=True)
    note = f"PARTIAL: {len(missing)} of {len(index)} runs missing" if missing else None
    several_agents = index["agent"].nunique() > 1
    images: dict[str, tuple[str, str]] = {}
    for name, (caption, fig) in _figures(episodes, summary, several_agents, table_alphas).items():
        images[name] = (caption, png(fig, out / name, note))
    if "deltas.png" not in images:
        (out / "deltas.png").unlink(missing_ok=True)
    stale = [*out.glob("sweep-*.png"), *out.glob("impact-*.png"), *out.glob("forecast-*.png")]
    for path in [*stale, out / "spectra.png", out / "band-energy.png", out / "impact.csv"]:
        path.unlink(missing_ok=True)
    for name in ("did.csv", "forecast.csv"):
        (out / name).unlink(missing_ok=True)
    section = ""
    measures = _shift_measures(evaluation, minimum, lpips)
    if measures is not None:
        measures.table.to_csv(out / "impact.csv")
        shift_images = {
            name: (caption, png(fig, out / name, note))
            for name, (caption, fig) in _shift_figures(evaluation, measures).items()
        }
        section = _shift_html(measures, shift_images)
    protocol_section = _protocol(evaluation, episodes, aggregate)
    if protocol_section is not None:
        if protocol_section.table is not None:
            protocol_section.table.to_csv(out / protocol_section.csv)
        protocol_images = {
            name: (caption, png(fig, out / name, note)) for name, (caption, fig) in protocol_section.figures.items()
        }
        section = _protocol_html(protocol_section, protocol_images) + "\n" + section
    page = out / "report.html"
    page.write_text(_page(evaluation, summary, images, missing, section), encoding="utf-8")
    return page
