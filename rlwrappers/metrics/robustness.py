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
- :func:`sampled_robustness` is Algorithm 1 with its t draws: each agent acts on every state t times through
  :meth:`rlwrappers.agents.Agent.act` with a seeded generator, and R is averaged over the draws. Greedy agents
  (``agent.deterministic``) are asked once (t = 1), as in the paper.
- :func:`robustness_matrix` is Algorithm 2: the p x (m + 1) matrix of R over p sampled states (rows) and m + 1
  interventions (columns, the null intervention first). :func:`normalized_robustness` subtracts the null
  column, giving R(I_j(s)) - R(I_0(s)) in [-1, 1] (Appendix D); :func:`pipeline_summary` gives Appendix E's
  means per pipeline.
- :func:`generalized_jsd_robustness` is the same normalization applied to the agents' full action
  distributions, ``H(mean_i P_i) - mean_i H(P_i)`` in bits. It equals :func:`offline_robustness` for greedy
  agents (one-hot distributions) and differs for stochastic ones: it is not the mean of Algorithm 1 over draws.
  :func:`action_distributions` reads those distributions from the agents' networks.

Every JSD here is the divergence in bits, never SciPy's ``jensenshannon``, which returns the Jensen-Shannon
*distance* (the square root of the divergence) for two distributions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import gymnasium as gym
import numpy as np
from numpy.typing import ArrayLike, NDArray

from rlwrappers import _check
from rlwrappers._optional import require
from rlwrappers.agents import Agent
from rlwrappers.error import IncompatibleSpace, InvalidArgument, InvalidType

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "DRAWS",
    "OVERALL",
    "action_distributions",
    "generalized_jsd_robustness",
    "normalized_robustness",
    "offline_robustness",
    "pipeline_summary",
    "robustness_matrix",
    "sampled_robustness",
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


def action_distributions(agents: Sequence[Agent], states: ArrayLike) -> NDArray[np.float64]:
    """Each agent's distribution over its discrete actions on each state, for :func:`generalized_jsd_robustness`.

    A greedy agent puts all its mass on its argmax action. A stochastic agent with logits gives their softmax;
    an epsilon-greedy one (``agent.epsilon``) gives ``1 - epsilon`` on the argmax plus ``epsilon / n_actions``
    on every action. One forward pass per agent, through :meth:`rlwrappers.agents.Agent.outputs`.

    Args:
        agents: n >= 2 agents with Discrete action spaces of one size and differentiable outputs.
        states: a batch of p observations, shape (p, *observation shape).

    Returns:
        Shape (p, n_agents, n_actions).

    Raises:
        NotDifferentiable: an agent has no network outputs (a :class:`~rlwrappers.agents.CallableAgent`).
    """
    group = _agents(agents)
    sizes = {int(agent.action_space.n) for agent in group}  # type: ignore[attr-defined]
    if len(sizes) != 1:
        raise IncompatibleSpace(f"`agents` must have action spaces of one size, received sizes {sorted(sizes)}")
    batch = _batch("states", states)
    return np.stack([_distribution(agent, batch) for agent in group], axis=1)


def _distribution(agent: Agent, batch: NDArray[Any]) -> NDArray[np.float64]:
    """One agent's action distribution on each observation of ``batch``, shape (p, n_actions): one forward pass."""
    torch = require("torch", purpose="agents' action distributions")
    with torch.no_grad():
        outputs = agent.outputs(agent.tensor(batch))
    scores = outputs.scores.detach().double().numpy()
    greedy = np.eye(scores.shape[-1])[scores.argmax(axis=-1)]
    epsilon = getattr(agent, "epsilon", None)
    if agent.deterministic:
        return greedy
    if epsilon is not None:
        return (1.0 - epsilon) * greedy + epsilon / scores.shape[-1]
    return np.asarray(outputs.probs.detach().double().numpy())


def sampled_robustness(
    agents: Sequence[Agent], states: ArrayLike, t: int = DRAWS, rng: np.random.Generator | None = None
) -> NDArray[np.float64]:
    """Algorithm 1 with its draws: R on each state, averaged over t sampled actions per agent.

    :func:`robustness_matrix` with one batch: each agent runs one forward pass over the p states. A greedy
    agent's one action stands for every draw; a stochastic agent draws t actions per state from its action
    distribution, with a generator seeded from ``rng``. When every agent is greedy, t is 1.

    Args:
        agents: n >= 2 agents from one pipeline, with Discrete action spaces.
        states: a batch of p observations, shape (p, *observation shape).
        t: draws per state for stochastic agents (the paper uses 30).
        rng: the generator the agents' seeds are drawn from; required when an agent is stochastic. Same seed,
            same result.

    Returns:
        R per state, shape (p,).
    """
    return robustness_matrix(agents, [states], t, rng)[:, 0]


def robustness_matrix(
    agents: Sequence[Agent],
    states_by_intervention: Sequence[ArrayLike] | NDArray[Any],
    t: int = DRAWS,
    rng: np.random.Generator | None = None,
) -> NDArray[np.float64]:
    """Algorithm 2: R over p states (rows) and m + 1 interventions (columns, the null intervention first).

    Agents are batched: each runs **one** forward pass over all (m + 1) * p observations. A greedy agent acts
    on them once (t = 1, as in the paper). A stochastic agent draws t actions per state from its action
    distribution (:func:`action_distributions`) by inverting its cumulative distribution at t * p uniform
    numbers from its own generator; the same numbers serve every intervention (common random numbers), so
    column j equals ``sampled_robustness(agents, states_by_intervention[j], t, rng)`` for a generator seeded
    alike, and the differences of :func:`normalized_robustness` carry less sampling noise. A stochastic agent
    without a network (a :class:`~rlwrappers.agents.CallableAgent` taking ``rng``) acts on each batch repeated
    t times, with its generator seeded alike for every batch.

    Args:
        agents: n >= 2 agents from one pipeline, with Discrete action spaces.
        states_by_intervention: m + 1 batches of p observations of one shape, null intervention first: batch j
            holds ``I_j(S_k)`` for the sampled states S_1..S_p. An array of shape (m + 1, p, *obs) works too.
        t: draws per state for stochastic agents (1 when every agent is greedy).
        rng: the generator the agents' seeds are drawn from; required when an agent is stochastic.

    Returns:
        R, shape (p, m + 1), in [0, 1].
    """
    group = _agents(agents)
    if isinstance(states_by_intervention, str) or not isinstance(states_by_intervention, (Sequence, np.ndarray)):
        raise InvalidType(
            "`states_by_intervention` must be a list of observation batches (null intervention first), received"
            f" {type(states_by_intervention).__name__}"
        )
    batches = [_batch(f"states_by_intervention[{j}]", s) for j, s in enumerate(states_by_intervention)]
    if not batches:
        raise InvalidArgument("`states_by_intervention` needs at least the null intervention's batch, received none")
    for j, b in enumerate(batches[1:], start=1):
        if b.shape != batches[0].shape:
            raise InvalidArgument(
                f"`states_by_intervention[{j}]` has shape {b.shape}, but the null intervention's batch has shape"
                f" {batches[0].shape}: every intervention must hold the same p states"
            )
    draws = _draws(group, t, rng)
    seeds = _agent_seeds(group, rng)
    actions = _sample(group, np.stack(batches), draws, seeds)  # (m + 1, draws, p, n)
    return np.asarray(offline_robustness(actions), dtype=np.float64).mean(axis=1).T


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
        matrices: each pipeline's :func:`robustness_matrix`, shape (p, m + 1) with m >= 1 (p may differ).
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


def _agents(agents: Sequence[Agent]) -> list[Agent]:
    """``agents`` as a list of at least two Agents with Discrete action spaces."""
    if isinstance(agents, Agent) or not isinstance(agents, Sequence):
        raise InvalidType(f"`agents` must be a list of Agents, received {type(agents).__name__}")
    group = list(agents)
    if len(group) < 2:
        raise InvalidArgument(
            f"`agents` needs at least 2 agents (R divides the JSD by log2(n_agents)), received {len(group)}"
        )
    for i, agent in enumerate(group):
        if not isinstance(agent, Agent):
            raise InvalidType(
                f"`agents[{i}]` must be an Agent (see rlwrappers.agents.adapt), received {type(agent).__name__}"
            )
        if not isinstance(agent.action_space, gym.spaces.Discrete):
            raise IncompatibleSpace(f"`agents[{i}]` must have a Discrete action space, received {agent.action_space}")
    return group


def _batch(name: str, states: ArrayLike) -> NDArray[Any]:
    batch = np.asarray(states)
    if batch.ndim == 0 or len(batch) == 0:
        raise InvalidArgument(f"`{name}` must be a batch of at least one observation, received shape {batch.shape}")
    return batch


def _draws(group: Sequence[Agent], t: int, rng: np.random.Generator | None) -> int:
    """How many draws each state gets: t, or 1 when every agent is greedy."""
    _check.integer("t", t, minimum=1)
    stochastic = [i for i, agent in enumerate(group) if not agent.deterministic]
    if rng is not None and not isinstance(rng, np.random.Generator):
        raise InvalidType(f"`rng` must be a numpy Generator (np.random.default_rng(seed)), received {rng!r}")
    if stochastic and rng is None:
        raise InvalidArgument(f"`rng` is required: agents {stochastic} sample their actions, received rng=None")
    return t if stochastic else 1


def _agent_seeds(group: Sequence[Agent], rng: np.random.Generator | None) -> list[int | None]:
    """One seed per agent, drawn from ``rng`` in agent order (None without a generator)."""
    if rng is None:
        return [None] * len(group)
    return [int(s) for s in rng.integers(0, 2**63 - 1, size=len(group))]


def _sample(
    group: Sequence[Agent], batches: NDArray[Any], draws: int, seeds: Sequence[int | None]
) -> NDArray[np.int64]:
    """The agents' actions on ``batches`` (shape (J, p, *obs)), shape (J, draws, p, n_agents)."""
    n_batches, p = batches.shape[:2]
    flat = batches.reshape(n_batches * p, *batches.shape[2:])
    out = np.empty((n_batches, draws, p, len(group)), dtype=np.int64)
    for i, (agent, seed) in enumerate(zip(group, seeds, strict=True)):
        if agent.deterministic:
            out[..., i] = _checked(i, agent.act(flat), len(flat)).reshape(n_batches, 1, p)
        elif type(agent).outputs is not Agent.outputs:  # a network: one forward pass, then t draws per state
            cdf = np.cumsum(_distribution(agent, flat), axis=-1).reshape(n_batches, 1, p, -1)
            u = np.random.default_rng(seed).random((draws, p))[None, :, :, None] * cdf[..., -1:]
            out[..., i] = np.minimum((cdf <= u).sum(axis=-1), cdf.shape[-1] - 1)
        else:
            for j, batch in enumerate(batches):
                repeated = np.broadcast_to(batch, (draws, *batch.shape)).reshape(draws * p, *batch.shape[1:])
                actions = agent.act(repeated, np.random.default_rng(seed))
                out[j, ..., i] = _checked(i, actions, draws * p).reshape(draws, p)
    return out


def _checked(i: int, actions: Any, size: int) -> NDArray[Any]:
    """Agent i's actions for a batch of ``size``, checked to be one discrete action per observation."""
    actions = np.asarray(actions)
    if actions.shape != (size,):
        raise IncompatibleSpace(
            f"`agents[{i}]` returned actions of shape {actions.shape} for a batch of {size}, expected ({size},):"
            " one discrete action per observation"
        )
    return actions


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
