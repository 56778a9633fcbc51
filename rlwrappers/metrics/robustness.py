"""Offline robustness R: how alike agents from one training pipeline act on offline and intervened states.

*Measuring Offline Robustness in Reinforcement Learning* (seed 000): n agents trained by one pipeline (different
training seeds, same algorithm) face a state s; each samples an action; R is one minus the Jensen-Shannon
divergence (JSD) of the agents' action distributions, divided by its bound ``log2(n)``. R = 1 when every agent
takes the same action and R = 0 when all n take different actions.

- :func:`offline_robustness` is Algorithm 1 for one draw: each agent's sampled action is a one-hot
  distribution, and the JSD of n one-hot distributions with equal weights is the entropy, in bits, of the
  histogram of the n actions. With ``c_a`` agents on action ``a``::

      JSD = H(c / n) = log2(n) - (1/n) * sum_a c_a * log2(c_a)
      R   = 1 - JSD / log2(n) = sum_a c_a * log2(c_a) / (n * log2(n))

  The second form is computed: it gives exactly 0 and 1 at the ends. Leading axes are kept (states,
  interventions, draws); the last holds the n agents.
- :func:`robustness_from_actions` is Algorithm 2 over the agents' actions: the p x (m + 1) matrix of R over p
  sampled states (rows) and m + 1 interventions (columns, the null intervention first), averaged over t draws.
  :func:`normalized_robustness` subtracts the null column, giving R(I_j(s)) - R(I_0(s)) in [-1, 1] (Appendix
  D); :func:`pipeline_summary` gives Appendix E's means per pipeline.
- :func:`generalized_jsd_robustness` is the same normalization applied to the agents' full action
  distributions, ``H(mean_i P_i) - mean_i H(P_i)`` in bits. It equals :func:`offline_robustness` for greedy
  agents (one-hot distributions) and differs for stochastic ones: it is not the mean of Algorithm 1 over draws.

The agents themselves act in :mod:`rlwrappers.studies.offline` (``robustness_matrix``,
``sampled_robustness``, ``action_distributions``), which passes their actions and distributions here.

Every JSD here is the divergence in bits, never SciPy's ``jensenshannon``, which returns the Jensen-Shannon
*distance* (the square root of the divergence) for two distributions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rlwrappers import _check
from rlwrappers._optional import require
from rlwrappers.error import InvalidArgument, InvalidType

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DRAWS",
    "OVERALL",
    "generalized_jsd_robustness",
    "normalized_robustness",
    "offline_robustness",
    "pipeline_summary",
    "robustness_from_actions",
]

#: The paper's number of draws t per state for stochastic agents.
DRAWS: Final = 30

#: The label of :func:`pipeline_summary`'s row over every intervened cell.
OVERALL: Final = "overall"

#: How far each agent's probabilities may sum from 1 in :func:`generalized_jsd_robustness`.
_SUM_TOLERANCE: Final = 1e-6


def offline_robustness(actions: ArrayLike, n_actions: int | None = None) -> NDArray[np.float64] | float:
    """Algorithm 1 for one draw: ``R = 1 - JSD / log2(n)`` of the n agents' actions along the last axis.

    Each agent's action is a one-hot distribution; the JSD of n one-hot distributions (equal weights) is the
    entropy in bits of the actions' histogram, ``H(c / n)`` with ``c_a`` agents on action ``a``, so
    ``R = sum_a c_a * log2(c_a) / (n * log2(n))``. Only which agents agree matters, not the action labels.

    Args:
        actions: integer array of shape (..., n_agents), n_agents >= 2; leading axes (states, interventions,
            draws) are kept.
        n_actions: when given, every action must lie in ``[0, n_actions)``.

    Returns:
        R in [0, 1], of shape (...): a float for a 1-d input.

    Example:
        >>> offline_robustness([2, 2, 2])
        1.0
        >>> offline_robustness([[0, 1, 2, 3], [0, 0, 1, 1]]).tolist()  # all distinct, then two pairs
        [0.0, 0.5]
    """
    a = np.asarray(actions)
    if not (np.issubdtype(a.dtype, np.integer) or a.dtype == np.bool_):
        raise InvalidType(f"`actions` must be an integer array of discrete actions, received dtype {a.dtype}")
    if a.ndim == 0 or a.shape[-1] < 2:
        raise InvalidArgument(
            "`actions` needs the actions of at least 2 agents along its last axis (R divides the JSD by"
            f" log2(n_agents)), received shape {a.shape}"
        )
    if n_actions is not None:
        _check.integer("n_actions", n_actions, minimum=1)
        if a.size and (a.min() < 0 or a.max() >= n_actions):
            raise InvalidArgument(
                f"`actions` must lie in [0, {n_actions}) (`n_actions`), received values from {a.min()} to {a.max()}"
            )
    n = a.shape[-1]
    rows = a.reshape(-1, n)
    # Count the agents on each action of each row: sort the row, then number its runs of equal actions.
    ordered = np.sort(rows, axis=1)
    starts = np.ones(ordered.shape, dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    runs = np.cumsum(starts, axis=1) - 1 + n * np.arange(len(rows))[:, np.newaxis]
    counts = np.bincount(runs.ravel(), minlength=rows.size).reshape(rows.shape).astype(np.float64)
    c_log_c = counts * np.log2(np.maximum(counts, 1.0))  # 0 * log2(0) = 0 for the unused run slots
    r = c_log_c.sum(axis=1) / (n * np.log2(n))
    return _scalar(r.reshape(a.shape[:-1]))


def generalized_jsd_robustness(probs: ArrayLike) -> NDArray[np.float64] | float:
    """``1 - JSD / log2(n)`` of the agents' full action distributions, with ``JSD = H(mean_i P_i) - mean_i H(P_i)``.

    The generalized Jensen-Shannon divergence of n distributions with equal weights, in bits, normalized as in
    Algorithm 1. For greedy agents (one-hot distributions) it equals :func:`offline_robustness` of their
    actions. For stochastic agents it differs from Algorithm 1's mean over draws: two agents with
    distributions (1, 0) and (1/2, 1/2) agree on half of their joint draws, so Algorithm 1 tends to 0.5, while
    here ``JSD = H(3/4, 1/4) - 1/2`` and R = 0.689.

    Args:
        probs: shape (..., n_agents, n_actions), n_agents >= 2: each agent's action probabilities, >= 0 and
            summing to 1 (within 1e-6; rows are then divided by their sums).

    Returns:
        R in [0, 1] (clipped against rounding), of shape (...): a float for a 2-d input.

    Example:
        >>> generalized_jsd_robustness([[1.0, 0.0], [0.0, 1.0]])
        0.0
        >>> round(generalized_jsd_robustness([[1.0, 0.0], [0.5, 0.5]]), 4)
        0.6887
    """
    p = _check.finite_array("probs", probs)
    if p.ndim < 2 or p.shape[-1] < 1:
        raise InvalidArgument(f"`probs` must have shape (..., n_agents, n_actions), received shape {p.shape}")
    if p.shape[-2] < 2:
        raise InvalidArgument(
            "`probs` needs the distributions of at least 2 agents along its second-to-last axis (R divides the JSD"
            f" by log2(n_agents)), received shape {p.shape}"
        )
    if np.any(p < 0):
        raise InvalidArgument(f"`probs` must be >= 0, received a minimum of {p.min()}")
    sums = p.sum(axis=-1)
    if np.any(np.abs(sums - 1.0) > _SUM_TOLERANCE):
        raise InvalidArgument(
            f"each agent's probabilities in `probs` must sum to 1 (within {_SUM_TOLERANCE}), received sums from"
            f" {sums.min()} to {sums.max()}"
        )
    p = p / sums[..., np.newaxis]
    n = p.shape[-2]
    jsd = _entropy_bits(p.mean(axis=-2)) - _entropy_bits(p).mean(axis=-1)
    return _scalar(np.clip(1.0 - jsd / np.log2(n), 0.0, 1.0))


def robustness_from_actions(actions: ArrayLike) -> NDArray[np.float64]:
    """Algorithm 2's matrix from the agents' actions: R per state and intervention, averaged over the draws.

    Args:
        actions: the n agents' discrete actions, shape (m + 1 interventions, t draws, p states, n agents).

    Returns:
        R, shape (p, m + 1), in [0, 1].

    Example:
        >>> robustness_from_actions([[[[0, 0], [0, 1]]], [[[1, 1], [1, 1]]]]).tolist()
        [[1.0, 1.0], [0.0, 1.0]]
    """
    array = np.asarray(actions)
    if array.ndim != 4:
        raise InvalidArgument(
            f"`actions` must have shape (interventions, draws, states, agents), received {array.shape}"
        )
    return np.asarray(offline_robustness(array), dtype=np.float64).mean(axis=1).T


def normalized_robustness(matrix: ArrayLike) -> NDArray[np.float64]:
    """``R(I_j(s)) - R(I_0(s))``: each state's R relative to its null intervention (column 0), in [-1, 1].

    Positive where an intervention makes the agents act more alike than on the original state (Appendix D).

    Example:
        >>> normalized_robustness([[1.0, 0.5, 1.0], [0.25, 0.75, 0.0]]).tolist()
        [[0.0, -0.5, 0.0], [0.0, 0.5, -0.25]]
    """
    r = _matrix("matrix", matrix)
    return r - r[:, :1]


def pipeline_summary(matrices: Mapping[str, ArrayLike], interventions: Sequence[str] | None = None) -> pd.DataFrame:
    """Appendix E's means per pipeline, per intervention and over all interventions.

    Columns: ``original``, the mean R on the sampled states without intervention (column 0); ``intervened``, the
    mean R under the intervention; ``normalized``, the mean of ``R(I_j(s)) - R(I_0(s))`` (normalized per state
    and intervention before averaging, which equals ``intervened - original``). The row ``"overall"`` of each
    pipeline averages over every intervened cell: Appendix E's table is ``summary.xs("overall",
    level="intervention")``.

    Args:
        matrices: each pipeline's :func:`~rlwrappers.studies.offline.robustness_matrix`, shape (p, m + 1) with
            m >= 1 (p may differ).
        interventions: the m + 1 column names, null intervention first (default ``I0``, ``I1``, ...); the null
            one names no row.

    Returns:
        A DataFrame indexed by (pipeline, intervention), with m + 1 rows per pipeline.

    Example:
        >>> table = pipeline_summary({"dqn": [[0.5, 1.0, 0.25], [0.5, 1.0, 0.75]]}, ["none", "a", "b"])
        >>> table.loc[("dqn", "overall")].tolist()
        [0.5, 0.75, 0.25]
        >>> float(table.loc[("dqn", "b"), "normalized"])
        0.0
    """
    pd = require("pandas", purpose="robustness summaries")
    if not isinstance(matrices, Mapping) or not matrices:
        raise InvalidType(f"`matrices` must be a non-empty mapping of pipeline name to matrix, received {matrices!r}")
    checked = {str(name): _matrix(f"matrices[{name!r}]", m) for name, m in matrices.items()}
    widths = {r.shape[1] for r in checked.values()}
    if len(widths) != 1:
        raise InvalidArgument(f"every matrix in `matrices` must have the same m + 1 columns, received {sorted(widths)}")
    width = widths.pop()
    if width < 2:
        raise InvalidArgument("the matrices need at least one intervention beside the null one, received 1 column")
    names = [f"I{j}" for j in range(width)] if interventions is None else [str(x) for x in interventions]
    if len(names) != width or len(set(names)) != width:
        raise InvalidArgument(f"`interventions` must be {width} distinct names (null first), received {names!r}")
    if OVERALL in names[1:]:
        raise InvalidArgument(f"`interventions` must not use the name {OVERALL!r}: it labels the mean over all")
    rows: list[dict[str, Any]] = []
    for pipeline, r in checked.items():
        original = float(r[:, 0].mean())
        normalized = r[:, 1:] - r[:, :1]
        for j, name in enumerate(names[1:], start=1):
            rows.append(_summary_row(pipeline, name, original, r[:, j].mean(), normalized[:, j - 1].mean()))
        rows.append(_summary_row(pipeline, OVERALL, original, r[:, 1:].mean(), normalized.mean()))
    return pd.DataFrame(rows).set_index(["pipeline", "intervention"])


# -- helpers -----------------------------------------------------------------------------------------------
def _summary_row(pipeline: str, intervention: str, original: float, intervened: Any, normalized: Any) -> dict[str, Any]:
    return {
        "pipeline": pipeline,
        "intervention": intervention,
        "original": original,
        "intervened": float(intervened),
        "normalized": float(normalized),
    }


def _entropy_bits(p: NDArray[np.float64]) -> NDArray[np.float64]:
    """Shannon entropy in bits over the last axis, with 0 * log2(0) = 0."""
    return np.asarray(-(p * np.log2(np.where(p > 0, p, 1.0))).sum(axis=-1))


def _matrix(name: str, matrix: ArrayLike) -> NDArray[np.float64]:
    r = _check.finite_array(name, matrix)
    if r.ndim != 2 or r.shape[0] < 1 or r.shape[1] < 1:
        raise InvalidArgument(f"`{name}` must have shape (p states, m + 1 interventions), received {r.shape}")
    if np.any(r < 0) or np.any(r > 1):
        raise InvalidArgument(f"`{name}` must hold R values in [0, 1], received values from {r.min()} to {r.max()}")
    return r


def _scalar(value: Any) -> Any:
    """A 0-d result as a Python float, anything else unchanged."""
    array = np.asarray(value)
    return float(array) if array.ndim == 0 else array
