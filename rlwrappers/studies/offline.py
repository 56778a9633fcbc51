"""Offline robustness of training pipelines (seed 000): the agents act on sampled, intervened states.

:func:`measure` runs Algorithms 2 and 3 for each :class:`Pipeline`: its guide samples p states
(:func:`rlwrappers.studies.states.sample_states`), the observations of those states under every intervention
are rendered once (:func:`rlwrappers.studies.states.observations`), and each checkpoint's agents act on them
in one forward pass per agent (:func:`robustness_matrix`); :mod:`rlwrappers.metrics.robustness` turns their
actions into R. A :class:`Measurement` saves itself to a directory that
:func:`rlwrappers.report.robustness.write_robustness_report` turns into a report.

- :func:`sampled_robustness` is Algorithm 1 with its t draws: each agent acts on every state t times through
  :meth:`rlwrappers.agents.Agent.act` with a seeded generator, and R is averaged over the draws. Greedy agents
  (``agent.deterministic``) are asked once (t = 1), as in the paper.
- :func:`robustness_matrix` is Algorithm 2: R over p sampled states and m + 1 interventions, every agent
  running one forward pass over all of them.
- :func:`action_distributions` reads the agents' full action distributions from their networks, for
  :func:`rlwrappers.metrics.robustness.generalized_jsd_robustness`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import gymnasium as gym
import numpy as np
from numpy.typing import ArrayLike, NDArray

from rlwrappers import _check
from rlwrappers._optional import require
from rlwrappers.agents import Agent
from rlwrappers.error import IncompatibleSpace, InvalidArgument, InvalidType, MissingFile
from rlwrappers.metrics.robustness import DRAWS, normalized_robustness, pipeline_summary, robustness_from_actions
from rlwrappers.state.interventions import Intervention
from rlwrappers.studies.states import StateSample, observations, resolve_interventions, sample_states
from rlwrappers.zoo import card, load_agent

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "REQUEST_FILE",
    "Measurement",
    "Pipeline",
    "action_distributions",
    "measure",
    "read_runs",
    "robustness_matrix",
    "sampled_robustness",
    "zoo_pipeline",
]

#: The file in a measurement's directory that says what was measured.
REQUEST_FILE: Final = "robustness.json"


def action_distributions(agents: Sequence[Agent], states: ArrayLike) -> NDArray[np.float64]:
    """Each agent's distribution over its discrete actions on each state, for the generalized JSD.

    The result is what :func:`~rlwrappers.metrics.robustness.generalized_jsd_robustness` takes. A greedy agent puts all
    its mass on its argmax action. A stochastic agent with logits gives their softmax; an epsilon-greedy one
    (``agent.epsilon``) gives ``1 - epsilon`` on the argmax plus ``epsilon / n_actions`` on every action. One forward
    pass per agent, through :meth:`rlwrappers.agents.Agent.outputs`.

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
    return robustness_from_actions(actions)


# -- helpers ---------------------------------------------------------------------------------------------
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


# -- pipelines and the whole measurement ------------------------------------------------------------------
@dataclass(frozen=True)
class Pipeline:
    """A training pipeline's agents: n measured at each checkpoint, and the guide that samples the states.

    Attributes:
        name: the pipeline's name.
        checkpoints: per checkpoint label (``"final"`` when there is one), the sources of its n >= 2 measured
            agents: zoo names (``"ppo-CartPole-v1@1"``) or SB3 zips, as :func:`rlwrappers.zoo.load_agent` takes.
        guide: the source of the guide, an agent of the pipeline not among those measured; the same sampled
            states serve every checkpoint, so their heatmaps compare column by column.
        returns: per checkpoint, the agents' mean return where known (the report plots it beside R).
    """

    name: str
    checkpoints: Mapping[str, Sequence[str]]
    guide: str
    returns: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or "/" in self.name:
            raise InvalidArgument(f"`name` must be a non-empty name without '/', received {self.name!r}")
        if not isinstance(self.checkpoints, Mapping) or not self.checkpoints:
            raise InvalidArgument(f"pipeline {self.name!r}: `checkpoints` must map labels to agents, received none")
        for label, sources in self.checkpoints.items():
            if isinstance(sources, str) or len(sources) < 2:
                raise InvalidArgument(
                    f"pipeline {self.name!r} at checkpoint {label!r} needs at least 2 measured agents (R divides "
                    f"by log2(n)), received {sources!r}"
                )
            if self.guide in sources:
                raise InvalidArgument(
                    f"pipeline {self.name!r}: the guide {self.guide!r} is also measured at checkpoint {label!r}; "
                    "Algorithm 3 samples states from an agent that is not among those measured"
                )
        unknown = sorted(set(self.returns) - set(self.checkpoints))
        if unknown:
            raise InvalidArgument(f"pipeline {self.name!r}: `returns` names unknown checkpoints {unknown}")


def zoo_pipeline(name: str) -> Pipeline:
    """The zoo agents ``name`` as a pipeline: the last training seed guides, the others are measured.

    Example:
        >>> pipeline = zoo_pipeline("ppo-CartPole-v1")
        >>> pipeline.checkpoints, pipeline.guide
        ({'final': ['ppo-CartPole-v1@0', 'ppo-CartPole-v1@1']}, 'ppo-CartPole-v1@2')
    """
    seeds = sorted(int(s) for s in card(name)["seeds"])
    if len(seeds) < 3:
        raise InvalidArgument(f"zoo agent {name!r} has {len(seeds)} seeds; a pipeline needs 3 (2 measured, 1 guide)")
    return Pipeline(name, {"final": [f"{name}@{s}" for s in seeds[:-1]]}, f"{name}@{seeds[-1]}")


def read_runs(directory: str | os.PathLike[str]) -> tuple[str, bool, list[Pipeline]]:
    """The pipelines that ``scripts/train_toybox.py`` trained into ``directory`` (its ``manifest.json``).

    Per pipeline, the last training seed's final checkpoint guides and the other seeds are measured at every
    checkpoint (labelled by their step); each checkpoint's returns are the mean over the measured agents.

    Returns:
        The env ID, whether the agents take SB3's Atari preprocessing, and the pipelines.

    Raises:
        MissingFile: no manifest, or a checkpoint's file is missing.
        InvalidArgument: the manifest lacks a field (the message names it).
    """
    root = Path(directory)
    path = root / "manifest.json"
    if not path.is_file():
        raise MissingFile(f"no training manifest at {str(path)!r}: run scripts/train_toybox.py --out {str(root)!r}")
    manifest = json.loads(path.read_text())
    try:
        env_id, atari = str(manifest["env_id"]), manifest["preprocessing"] == "atari"
        steps = [str(step) for step in manifest["checkpoints"]]
        pipelines = []
        for name, agents in manifest["agents"].items():
            seeds = sorted(agents, key=int)
            measured, guide = seeds[:-1], seeds[-1]
            files = {(seed, step): root / agents[seed]["checkpoints"][step]["file"] for seed in seeds for step in steps}
            returns = {
                step: float(np.mean([agents[seed]["checkpoints"][step]["return"] for seed in measured]))
                for step in steps
            }
            missing = [str(file) for file in files.values() if not file.is_file()]
            if missing:
                raise MissingFile(f"the manifest names {missing[0]!r}, which does not exist")
            checkpoints = {step: [str(files[seed, step]) for seed in measured] for step in steps}
            pipelines.append(Pipeline(name, checkpoints, str(files[guide, steps[-1]]), returns))
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidArgument(f"{str(path)!r} is not a complete training manifest: missing {exc}") from None
    return env_id, atari, pipelines


@dataclass(frozen=True)
class Measurement:
    """R per pipeline and checkpoint over the same interventions (null first), and the sampled states.

    Attributes:
        matrices: R of shape (p, m + 1) per (pipeline, checkpoint).
        interventions: the m + 1 names, ``"none"`` first.
        samples: the sampled states per pipeline.
        returns: per (pipeline, checkpoint), the mean return where known.
        request: what was measured: the env, the pipelines' agents, the interventions and the settings.
    """

    matrices: Mapping[tuple[str, str], NDArray[np.float64]]
    interventions: tuple[str, ...]
    samples: Mapping[str, StateSample]
    returns: Mapping[tuple[str, str], float] = field(default_factory=dict)
    request: Mapping[str, Any] = field(default_factory=dict)

    def table(self) -> pd.DataFrame:
        """One row per (pipeline, checkpoint, state, intervention): R and normalized R, the state's decision."""
        pandas = require("pandas", purpose="robustness tables")
        frames = []
        for (pipeline, checkpoint), matrix in self.matrices.items():
            p, columns = matrix.shape
            decisions = self.samples[pipeline].indices
            frames.append(
                pandas.DataFrame(
                    {
                        "pipeline": pipeline,
                        "checkpoint": checkpoint,
                        "state": np.repeat(np.arange(p), columns),
                        "decision": np.repeat(decisions, columns),
                        "intervention": np.tile(self.interventions, p),
                        "R": matrix.ravel(),
                        "normalized": normalized_robustness(matrix).ravel(),
                    }
                )
            )
        return pandas.concat(frames, ignore_index=True)

    def summary(self) -> pd.DataFrame:
        """Appendix E's means per pipeline and checkpoint, labelled ``pipeline@checkpoint``.

        See :func:`~rlwrappers.metrics.robustness.pipeline_summary`.
        """
        matrices = {f"{pipeline}@{checkpoint}": m for (pipeline, checkpoint), m in self.matrices.items()}
        return pipeline_summary(matrices, list(self.interventions))

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Writes the measurement into ``directory`` and returns it.

        Files: ``robustness.csv`` (:meth:`table`), ``summary.csv`` (:meth:`summary`), ``returns.csv``,
        ``robustness.json`` (the request) and ``states/<pipeline>.json`` (:meth:`StateSample.save`).
        """
        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        (out / REQUEST_FILE).write_text(json.dumps(self.request, indent=1) + "\n")
        self.table().to_csv(out / "robustness.csv", index=False)
        self.summary().to_csv(out / "summary.csv")
        pandas = require("pandas", purpose="robustness tables")
        rows = [{"pipeline": k[0], "checkpoint": k[1], "return": v} for k, v in self.returns.items()]
        pandas.DataFrame(rows, columns=["pipeline", "checkpoint", "return"]).to_csv(out / "returns.csv", index=False)
        for pipeline, sample in self.samples.items():
            sample.save(out / "states" / f"{pipeline}.json")
        return out

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> Measurement:
        """The measurement :meth:`save` wrote to ``directory``.

        Raises:
            MissingFile: ``robustness.csv`` or a pipeline's states are missing.
        """
        pandas = require("pandas", purpose="robustness tables")
        source = Path(directory)
        path = source / "robustness.csv"
        if not path.is_file():
            raise MissingFile(f"no robustness measurement in {str(source)!r}: {str(path)!r} is missing")
        table = pandas.read_csv(path, dtype={"pipeline": str, "checkpoint": str, "intervention": str})
        names = tuple(dict.fromkeys(table["intervention"]))
        matrices = {
            (str(pipeline), str(checkpoint)): group["R"].to_numpy(np.float64).reshape(-1, len(names))
            for (pipeline, checkpoint), group in table.groupby(["pipeline", "checkpoint"], sort=False)
        }
        samples = {p: StateSample.load(source / "states" / f"{p}.json") for p in dict.fromkeys(k[0] for k in matrices)}
        returns: dict[tuple[str, str], float] = {}
        if (source / "returns.csv").is_file():
            saved = pandas.read_csv(source / "returns.csv", dtype={"pipeline": str, "checkpoint": str})
            returns = {
                (pipeline, checkpoint): float(value)
                for pipeline, checkpoint, value in zip(
                    saved["pipeline"], saved["checkpoint"], saved["return"], strict=True
                )
            }
        request_path = source / REQUEST_FILE
        request = json.loads(request_path.read_text()) if request_path.is_file() else {}
        return cls(matrices, names, samples, returns, request)


def measure(
    make_env: Callable[[], gym.Env[Any, Any]],
    pipelines: Sequence[Pipeline],
    interventions: Sequence[Intervention | str],
    *,
    p: int = 30,
    seed: int = 0,
    stochastic: bool = False,
    t: int = DRAWS,
    progress: Callable[[str], None] | None = None,
) -> Measurement:
    """Algorithms 2 and 3 for each pipeline: sample p states with its guide, then R at every checkpoint.

    Per pipeline: the guide plays one game in ``make_env()`` (:func:`sample_states`), the observations of the
    sampled states under every intervention are rendered once in a fresh ``make_env()``
    (:func:`observations`), and each checkpoint's agents are measured on them
    (:func:`robustness_matrix`: one forward pass per agent).

    Args:
        make_env: makes the env as the agents see it (``lambda: atari_wrapper(gym.make(ID))`` for Atari agents).
        pipelines: the pipelines, with distinct names.
        interventions: catalogue names or one-line forms (see :func:`observations`); the null one comes first
            by itself.
        p: states per pipeline.
        seed: seeds the guide's game, the draws of states and the stochastic agents' draws.
        stochastic: agents sample their actions (t draws per state) instead of acting greedily.
        t: draws per state for stochastic agents.
        progress: called with a line of text as each step finishes.
    """
    if isinstance(pipelines, Pipeline) or not pipelines or not all(isinstance(x, Pipeline) for x in pipelines):
        raise InvalidType(f"`pipelines` must be a non-empty list of Pipeline, received {pipelines!r}")
    names = [x.name for x in pipelines]
    if len(set(names)) != len(names):
        raise InvalidArgument(f"pipeline names must differ, received {names}")
    say = progress or (lambda line: None)
    env = make_env()
    resolved = resolve_interventions(env, interventions)
    columns = ("none", *(iv.name for iv in resolved))
    if len(set(columns)) != len(columns):
        raise InvalidArgument(f"intervention names must differ (and none may be 'none'), received {list(columns)}")
    matrices: dict[tuple[str, str], NDArray[np.float64]] = {}
    samples: dict[str, StateSample] = {}
    returns: dict[tuple[str, str], float] = {}
    for pipeline in pipelines:
        guide = load_agent(pipeline.guide, observation_space=env.observation_space, deterministic=not stochastic)
        sample = samples[pipeline.name] = sample_states(env, guide, p, seed=seed, guide=pipeline.guide)
        seen = observations(make_env(), sample, resolved)
        say(f"{pipeline.name}: {p} states from a game of {sample.length} decisions, {len(seen)} x {p} observations")
        for checkpoint, sources in pipeline.checkpoints.items():
            agents = [
                load_agent(source, observation_space=env.observation_space, deterministic=not stochastic)
                for source in sources
            ]
            rng = np.random.default_rng(seed) if stochastic else None
            matrix = robustness_matrix(agents, seen, t=t, rng=rng)
            matrices[pipeline.name, checkpoint] = matrix
            if checkpoint in pipeline.returns:
                returns[pipeline.name, checkpoint] = float(pipeline.returns[checkpoint])
            say(f"{pipeline.name} at {checkpoint}: mean R {matrix.mean():.3f} over {len(agents)} agents")
    request = {
        "env_id": env.spec.id if env.spec is not None else None,
        "env": str(env),
        "pipelines": [
            {"name": x.name, "guide": x.guide, "checkpoints": {k: list(v) for k, v in x.checkpoints.items()}}
            for x in pipelines
        ],
        "interventions": [{"name": iv.name, "doc": iv.doc, "assignments": str(iv)} for iv in resolved],
        "p": p,
        "seed": seed,
        "stochastic": stochastic,
        "t": t if stochastic else 1,
    }
    return Measurement(matrices, columns, samples, returns, request)
