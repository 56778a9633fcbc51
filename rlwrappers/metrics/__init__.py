"""Metrics over returns and logs, under their papers' names; pure functions, plotting kept apart."""

from rlwrappers.metrics.logs import episode_returns, reproducibility_table
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
    state_marginals,
    stratified_bootstrap_ci,
)

__all__ = [
    "DISPERSION",
    "PERFORMANCE",
    "behavioural_mad",
    "dispersion",
    "episode_returns",
    "iqm",
    "iqr",
    "lcb",
    "mad",
    "pareto_front",
    "performance",
    "reproducibility_table",
    "state_marginals",
    "stratified_bootstrap_ci",
]
