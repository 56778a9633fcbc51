"""Parameter sweeps: how impact, action flips and perceptual distance grow with a perturbation's parameter.

From *Assessing Reinforcement Learning Policies via Natural Corruptions at the Edge of Imperceptibility*
(Figures 2-3 and Table 1): each perturbation is run at several strengths, and at each one we measure

- **impact** (eq. 3, :func:`~rlwrappers.metrics.impact.normalized_impact`) from the episode returns of the
  shifted runs and their same-seed counterfactuals;
- the **flip rate**, the share of probed states where the shift changes the agent's action;
- the **perceptual distance** between the agent's clean and shifted inputs at those states: LPIPS (with local
  weights, :class:`~rlwrappers.metrics.perceptual.LPIPS`) and SSIM, and the perturbation's L-inf and L2 size.

A sweep is an ordinary evaluation (:func:`~rlwrappers.studies.run.evaluate`) whose shifts are one perturbation at
several values of one parameter, with a probe (``probe=``) at each: :func:`sweep` builds and runs it.
:func:`curves` finds the sweeps in any evaluation: shifts of one perturbation whose stored parameters differ in
exactly one number form a curve over it. :func:`edge` reads off the **edge of imperceptibility**: the mildest
value that reaches a target impact or flip rate.

Values are listed from the mildest to the strongest (JPEG quality falls, every other parameter grows away from
its identity); :func:`edge` walks them in that order. :data:`SWEEPS` holds a default range per parameter,
spanning the values of the paper's Table 1 and Figures 2-3.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from rlwrappers._optional import require
from rlwrappers.core import Entry
from rlwrappers.error import InvalidArgument, InvalidType, UnknownName, did_you_mean
from rlwrappers.functional.images import infer_layout
from rlwrappers.metrics.impact import min_score, normalized_impact
from rlwrappers.spec import format_call
from rlwrappers.spec import parse as parse_spec
from rlwrappers.studies.design import BASELINE
from rlwrappers.studies.probes import Probe
from rlwrappers.studies.results import Evaluation
from rlwrappers.studies.run import evaluate

if TYPE_CHECKING:
    import pandas as pd

    from rlwrappers.metrics.perceptual import LPIPS

__all__ = [
    "EDGE_METRICS",
    "SWEEPS",
    "Curve",
    "Sweep",
    "curves",
    "edge",
    "impacts",
    "resolve_minimum",
    "specs",
    "state_metrics",
    "sweep",
    "sweep_table",
]


@dataclass(frozen=True)
class Sweep:
    """A default sweep: a base spec, the parameter varied and its values, mildest first."""

    base: str
    param: str
    values: tuple[float, ...]


#: Default sweeps by name. The natural corruptions span the values of the paper's Table 1 (rotation 1.4-5
#: degrees, blur kernels 3-5, shifts of 1-2 pixels, perspective norms 1-3, alpha 0.9-2.4) and its Figure 3's
#: brightness range (beta 3.1-20); the attacks span seed 001's smallest eps and below, where re-quantized uint8
#: inputs first change (half a grey level is about 0.002).
SWEEPS: Final[Mapping[str, Sweep]] = MappingProxyType(
    {
        "fgsm": Sweep("fgsm", "eps", (0.001, 0.002, 0.004, 0.006, 0.01, 0.02, 0.05)),
        "pgd": Sweep("pgd", "eps", (0.001, 0.002, 0.004, 0.006, 0.01, 0.02, 0.05)),
        "contrast": Sweep("brightness_contrast(beta=0.0)", "alpha", (1.05, 1.1, 1.2, 1.4, 1.7, 2.0, 2.4)),
        "brightness": Sweep("brightness_contrast(alpha=1.0)", "beta", (3.1, 5.0, 10.0, 20.0, 40.0, 80.0)),
        "blur": Sweep("median_blur", "k", (3, 5, 7, 9)),
        "rotation": Sweep("rotate", "degrees", (0.5, 1.0, 1.4, 2.0, 3.0, 5.0)),
        "shift": Sweep("translate(tj=0)", "ti", (1, 2, 3, 4)),
        "perspective": Sweep("perspective", "norm", (0.5, 1.0, 2.0, 3.0, 5.0)),
        "jpeg": Sweep("jpeg", "quality", (90, 70, 50, 30, 20, 10, 5)),
    }
)

#: The metrics :func:`edge` can target, with the direction in which they grow with the shift's strength.
EDGE_METRICS: Final = ("impact", "flip_rate", "lpips", "ssim_loss")


def specs(shift: str, param: str | None = None, values: Sequence[Any] | None = None) -> list[str]:
    """The spec of each value of a sweep, mildest first: what :func:`sweep` evaluates.

    Arguments as in :func:`sweep`. Join the specs of several sweeps to run them in one evaluation.

    Example:
        >>> specs("jpeg", values=[50, 10])
        ['jpeg(quality=50)', 'jpeg(quality=10)']
    """
    return _sweep_specs(shift, param, values)[1]


def _sweep_specs(shift: str, param: str | None, values: Sequence[Any] | None) -> tuple[str, list[str]]:
    """The parameter and the spec of each value of a sweep."""
    if not isinstance(shift, str) or not shift:
        raise InvalidType(f"`shift` must be a sweep name or a perturbation spec string, received {shift!r}")
    default = SWEEPS.get(shift)
    base = default.base if default else shift
    call = parse_spec(base, what="perturbation spec")
    if param is None:
        if default is None:
            raise InvalidArgument(
                f"`param` must name the parameter to sweep for {shift!r}; default sweeps: {sorted(SWEEPS)}"
                + did_you_mean(shift, SWEEPS)
            )
        param = default.param
    if values is None:
        if default is None or default.param != param:
            known = [s.values for s in SWEEPS.values() if s.base.split("(")[0] == call.name and s.param == param]
            if not known:
                raise InvalidArgument(f"`values` must list the values of {param!r} to sweep for {shift!r}")
            values = known[0]
        else:
            values = default.values
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not values:
        raise InvalidArgument(f"`values` must be a non-empty list of numbers, received {values!r}")
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) or not math.isfinite(v):
            raise InvalidArgument(f"`values` must hold finite numbers, received {v!r}")
    if len(set(values)) != len(values):
        raise InvalidArgument(f"`values` must not repeat, received {list(values)!r}")
    specs = [format_call(call.name, {**call.kwargs, param: v}) for v in values]
    for spec in specs:
        Entry.parse(spec)  # unknown parameters and bad values fail here, before any run
    return param, specs


def sweep(
    agent: Any,
    env_id: str,
    shift: str,
    param: str | None = None,
    values: Sequence[float] | None = None,
    *,
    out: str | os.PathLike[str],
    probe: int = 64,
    **options: Any,
) -> Evaluation:
    """Evaluates ``agent`` under one perturbation at each value of one parameter, with a probe at each.

    Args:
        agent: as in :func:`~rlwrappers.studies.run.evaluate` (a dict of agents sweeps each of them).
        env_id: a Gymnasium ID.
        shift: a name in :data:`SWEEPS` (``"jpeg"``, ``"rotation"``, ...) or a perturbation spec, whose fixed
            parameters stay as given (``"brightness_contrast(alpha=1.0)"``).
        param: the parameter to vary (default: the sweep's own).
        values: its values, mildest first (default: the sweep's range).
        out: the run directory.
        probe: states per value at which flips and perceptual distances are measured.
        **options: any other option of :func:`~rlwrappers.studies.run.evaluate` (episodes, seeds, env,
            execution, ...).

    Returns:
        The evaluation; :func:`sweep_table` and :func:`edge` read it.

    Raises:
        InvalidArgument: an unknown sweep without ``param``, a parameter the perturbation lacks, or bad values.

    Example:
        >>> import tempfile
        >>> from rlwrappers.studies import Execution
        >>> result = sweep("ppo-CartPole-v1", "CartPole-v1", "obs_noise", "std", [0.05, 0.5], episodes=1,
        ...                seeds=1, probe=8, out=tempfile.mkdtemp(), execution=Execution(workers=1, progress=False))
        >>> [c.values for c in curves(result)]
        [(0.05, 0.5)]
    """
    return evaluate(agent, env_id, specs(shift, param, values), out=out, probe=probe, **options)


# -- curves ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Curve:
    """Shifts of one perturbation that differ only in one numeric parameter.

    Attributes:
        perturbation: the perturbation's name.
        param: the parameter that varies.
        values: its values, in the order the shifts were listed (mildest first by convention).
        shifts: the shift names, in the same order.
        fixed: the other parameters, as stored.
    """

    perturbation: str
    param: str
    values: tuple[float, ...]
    shifts: tuple[str, ...]
    fixed: Mapping[str, Any]

    @property
    def title(self) -> str:
        """``name(fixed parameters that differ from their defaults)`` over ``param``."""
        defaults = Entry.parse({"name": self.perturbation}).to_dict()
        shown = {k: v for k, v in self.fixed.items() if defaults.get(k, not v) != v}
        return f"{format_call(self.perturbation, shown)} over {self.param}"


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def curves(evaluation: Evaluation) -> list[Curve]:
    """The sweeps in an evaluation.

    A curve is every group of two or more single-perturbation shifts that share the perturbation and all
    stored parameters but one number. A shift may lie on several curves: ``brightness_contrast`` at alpha 1.2,
    beta 0 lies on an alpha curve with the other beta-0 shifts and on a beta curve with the other alpha-1.2
    shifts.
    """
    stored = evaluation.request.get("shifts") or {}
    single = {name: entries[0] for name, entries in stored.items() if len(entries) == 1}
    found: list[Curve] = []
    params = sorted({(e["name"], k) for e in single.values() for k in e if k != "name"})
    for perturbation, param in params:
        groups: dict[str, list[tuple[str, float]]] = {}
        fixed_of: dict[str, dict[str, Any]] = {}
        for name, entry in single.items():
            if entry["name"] != perturbation or not _number(entry.get(param)):
                continue
            fixed = {k: v for k, v in entry.items() if k not in ("name", param)}
            key = repr(sorted(fixed.items()))
            groups.setdefault(key, []).append((name, float(entry[param])))
            fixed_of[key] = fixed
        for key, members in groups.items():
            if len({v for _, v in members}) >= 2:
                found.append(
                    Curve(
                        perturbation,
                        param,
                        tuple(v for _, v in members),
                        tuple(n for n, _ in members),
                        MappingProxyType(fixed_of[key]),
                    )
                )
    return found


# -- tables ------------------------------------------------------------------------------------------------
def resolve_minimum(env_id: str, env_kwargs: Mapping[str, Any] | None = None) -> float | None:
    """The fixed minimum score of an env, or None when it has none (impact is then undefined).

    An Atari game's comes from :data:`~rlwrappers.metrics.impact.MIN_SCORES`; any other env may declare its own
    as ``env.unwrapped.min_score``.
    """
    try:
        return min_score(env_id)
    except UnknownName:
        pass
    try:
        env = gym.make(env_id, **dict(env_kwargs or {}))
    except gym.error.Error:
        return None
    try:
        value = getattr(env.unwrapped, "min_score", None)
    finally:
        env.close()
    return float(value) if isinstance(value, (int, float)) and _number(value) else None


def impacts(evaluation: Evaluation, minimum: float | str | None = None) -> pd.DataFrame:
    """Impact per (agent, shift): the clean and shifted mean returns and eq. 3 on them.

    ``impact`` is eq. 3 on the mean returns over all finished episodes (as the paper's Table 1 computes it from
    raw scores); ``impact_sem`` is the standard error over run seeds of each seed's own impact (NaN with one
    seed). Without a known minimum (see :func:`resolve_minimum`) both are NaN.

    Args:
        evaluation: a finished (or partly finished) evaluation.
        minimum: the fixed minimum score: a number, a game name, or None to resolve it from the env ID.

    Returns:
        A DataFrame indexed by (agent, shift) with columns clean, shifted, impact, impact_sem, seeds.
    """
    pd = require("pandas", purpose="sweep tables")
    if minimum is None:
        minimum = resolve_minimum(str(evaluation.request.get("env_id")), evaluation.request.get("env_kwargs"))
    episodes = evaluation.episodes()
    rows = []
    for (agent, shift), group in episodes[episodes["shift"] != BASELINE].groupby(["agent", "shift"], sort=False):
        paired = group.dropna(subset=["baseline_return"])
        clean, shifted = float(paired["baseline_return"].mean()), float(paired["return"].mean())
        per_seed = paired.groupby("run_seed")[["baseline_return", "return"]].mean()
        if minimum is None or paired.empty:
            impact, sem = math.nan, math.nan
        else:
            impact = float(normalized_impact(clean, shifted, minimum))
            seeds = np.atleast_1d(normalized_impact(per_seed["baseline_return"], per_seed["return"], minimum))
            seeds = seeds[np.isfinite(seeds)]
            sem = float(seeds.std(ddof=1) / math.sqrt(len(seeds))) if len(seeds) > 1 else math.nan
        rows.append((agent, shift, clean, shifted, impact, sem, len(per_seed)))
    table = pd.DataFrame(rows, columns=["agent", "shift", "clean", "shifted", "impact", "impact_sem", "seeds"])
    return table.set_index(["agent", "shift"])


def _pixel_scale(probe: Probe) -> float:
    return 255.0 if probe.clean.dtype == np.uint8 else 1.0


def _image_layout(shape: tuple[int, ...]) -> str | None:
    try:
        return infer_layout(shape)
    except InvalidArgument:
        return None


def state_metrics(evaluation: Evaluation, lpips: LPIPS | None = None) -> pd.DataFrame:
    """Per (agent, shift) with a probe: flip rate, the perturbation's size, SSIM and LPIPS at the probed states.

    Columns: ``states``; ``flip_rate``; ``linf`` and ``l2``, the mean over states of the size of
    shifted - clean input (uint8 images in [0, 1] pixel scale, as attacks' eps; other inputs in their units);
    ``ssim`` and ``lpips``, means over states (uint8 images only; stacks average their frames), and their
    standard errors ``ssim_sem`` and ``lpips_sem``. ``lpips`` is NaN unless an LPIPS model is given.
    """
    pd = require("pandas", purpose="sweep tables")
    rows = []
    for (agent, shift), probe in evaluation.probes().items():
        scale = _pixel_scale(probe)
        difference = (probe.shifted.astype(np.float64) - probe.clean.astype(np.float64)) / scale
        flat = difference.reshape(len(difference), -1)
        row: dict[str, Any] = {
            "agent": agent,
            "shift": shift,
            "states": len(flat),
            "flip_rate": float(probe.flipped.mean()),
            "linf": float(np.abs(flat).max(axis=1).mean()),
            "l2": float(np.linalg.norm(flat, axis=1).mean()),
        }
        layout = _image_layout(probe.clean.shape[1:]) if probe.clean.dtype == np.uint8 else None
        for name, measure in (("ssim", _ssim), ("lpips", lpips.distance if lpips is not None else None)):
            values = measure(probe.clean, probe.shifted, layout) if measure is not None and layout else None
            row[name] = float(np.mean(values)) if values is not None else math.nan
            row[f"{name}_sem"] = _sem(values) if values is not None else math.nan
        rows.append(row)
    columns = ["agent", "shift", "states", "flip_rate", "linf", "l2", "ssim", "ssim_sem", "lpips", "lpips_sem"]
    return pd.DataFrame(rows, columns=columns).set_index(["agent", "shift"])


def _ssim(clean: NDArray[Any], shifted: NDArray[Any], layout: str) -> NDArray[np.float64]:
    from rlwrappers.metrics.perceptual import ssim

    return ssim(clean, shifted, layout)


def _sem(values: NDArray[np.float64]) -> float:
    return float(np.std(values, ddof=1) / math.sqrt(len(values))) if len(values) > 1 else math.nan


def sweep_table(evaluation: Evaluation, minimum: float | str | None = None, lpips: LPIPS | None = None) -> pd.DataFrame:
    """:func:`impacts` and :func:`state_metrics` side by side, one row per (agent, shift).

    Shifts without a probe have NaN state metrics; ``ssim_loss`` is ``1 - ssim``, a distance that grows with
    the shift like the others.
    """
    table = impacts(evaluation, minimum).join(state_metrics(evaluation, lpips), how="left")
    table["ssim_loss"] = 1.0 - table["ssim"]
    return table


def edge(
    table: pd.DataFrame, curve: Curve, target: float, metric: str = "impact", agent: str | None = None
) -> dict[str, Any]:
    """The edge of imperceptibility on one curve: the mildest value whose ``metric`` reaches ``target``.

    Values are walked in the curve's order (mildest first). Beside the first value that reaches the target,
    the result gives the crossing interpolated linearly between it and the value before, and the LPIPS and
    SSIM there.

    Args:
        table: a :func:`sweep_table`.
        curve: one of :func:`curves`.
        target: the level to reach, e.g. 0.5 for half the possible impact or 0.9 for nine flips in ten.
        metric: one of :data:`EDGE_METRICS`.
        agent: whose curve (default: the table's only agent).

    Returns:
        A dict with ``value`` (None when no value reaches the target), ``interpolated``, ``shift``,
        ``metric_value``, ``lpips`` and ``ssim``.

    Raises:
        InvalidArgument: an unknown metric, a non-finite target, or several agents and no ``agent``.
    """
    if metric not in EDGE_METRICS:
        raise InvalidArgument(
            f"`metric` must be one of {EDGE_METRICS}, received {metric!r}" + did_you_mean(metric, EDGE_METRICS)
        )
    if not _number(target):
        raise InvalidArgument(f"`target` must be a finite number, received {target!r}")
    agents = list(table.index.get_level_values("agent").unique())
    if agent is None:
        if len(agents) != 1:
            raise InvalidArgument(f"`agent` must name one of {agents} when the table holds several, received None")
        agent = agents[0]
    elif agent not in agents:
        raise InvalidArgument(f"`agent` must be one of {agents}, received {agent!r}" + did_you_mean(agent, agents))
    previous: tuple[float, float] | None = None
    for value, shift in zip(curve.values, curve.shifts, strict=True):
        if (agent, shift) not in table.index:
            continue
        row = table.loc[(agent, shift)]
        level = float(row[metric])
        if math.isfinite(level) and level >= target:
            crossing = value
            if previous is not None and level != previous[1]:
                crossing = previous[0] + (target - previous[1]) * (value - previous[0]) / (level - previous[1])
            return {
                "value": value,
                "interpolated": float(crossing),
                "shift": shift,
                "metric_value": level,
                "lpips": float(row["lpips"]),
                "ssim": float(row["ssim"]),
            }
        if math.isfinite(level):
            previous = (value, level)
    return {"value": None, "interpolated": None, "shift": None, "metric_value": None, "lpips": None, "ssim": None}
