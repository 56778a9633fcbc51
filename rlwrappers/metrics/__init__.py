"""The papers' measures, under their papers' names: pure functions over arrays and tables.

Metrics take returns, model outputs, maps and observations, never agents, envs or logs: reading the logs is
:mod:`rlwrappers.logs`' work and running agents the studies' (:mod:`rlwrappers.studies`). Plotting is kept
apart, in :mod:`rlwrappers.report`.
"""

from rlwrappers.metrics import card, saliency
from rlwrappers.metrics.did import DiD, difference_in_differences
from rlwrappers.metrics.forecast import Forecast, damped_trend_forecast, episode_series, significantly_better
from rlwrappers.metrics.impact import MIN_SCORES, min_score, normalized_impact
from rlwrappers.metrics.perceptual import LPIPS, ssim
from rlwrappers.metrics.reproducibility import (
    DISPERSION,
    PERFORMANCE,
    behavioural_mad,
    dispersion,
    iqm,
    iqr,
    lcb,
    mad,
    pareto_front,
    performance,
    reproducibility_table,
    state_marginals,
    stratified_bootstrap_ci,
)
from rlwrappers.metrics.robustness import (
    generalized_jsd_robustness,
    normalized_robustness,
    offline_robustness,
    pipeline_summary,
    robustness_from_actions,
)
from rlwrappers.metrics.spectra import (
    LUMINANCE,
    band_energy,
    band_index,
    difference_spectrum,
    log_spectrum,
    spectrum,
)

__all__ = [
    "card",
    "saliency",
    "DISPERSION",
    "LPIPS",
    "DiD",
    "Forecast",
    "LUMINANCE",
    "MIN_SCORES",
    "PERFORMANCE",
    "band_energy",
    "band_index",
    "behavioural_mad",
    "difference_in_differences",
    "difference_spectrum",
    "damped_trend_forecast",
    "dispersion",
    "episode_series",
    "iqm",
    "iqr",
    "lcb",
    "log_spectrum",
    "mad",
    "min_score",
    "normalized_impact",
    "pareto_front",
    "performance",
    "reproducibility_table",
    "significantly_better",
    "spectrum",
    "ssim",
    "state_marginals",
    "stratified_bootstrap_ci",
    # offline robustness (seed 000)
    "generalized_jsd_robustness",
    "normalized_robustness",
    "offline_robustness",
    "pipeline_summary",
    "robustness_from_actions",
]
