"""Vector-level attacks: the batch a vector env gives the network, attacked in one batched pass.

An agent whose frames are stacked outside the env (SB3's ``VecFrameStack``) sees observations that no single
env produces; only a wrapper around the vector env can attack what the network really sees. :class:`Attack`
wraps a Gymnasium vector env and :class:`rlwrappers.wrappers.sb3.AttackVecEnv` an SB3 ``VecEnv``; both attack every
active sub-env's observation in one forward and one backward pass, with the perturbations of
:mod:`rlwrappers.wrappers.adversarial` (``"fgsm(eps=0.01)"``, ``"pgd(...)"``, ``"cw(...)"``).

Each sub-env keeps its own episodes and its own draws of the schedule (``"starting(episode=50)"``,
``"prob(p=0.1)"``), seeded like the single-env wrappers: sub-env ``i`` of a vector env reset with seed ``s``
decides as a single env reset with seed ``s + i``. FGSM is deterministic, so a vector attack gives each
sub-env exactly the observations the single-env wrapper gives it; PGD's random start draws from one
generator for the whole batch.

What it did is kept in rows, one per attacked decision: ``env``, ``episode``,
``step``, ``clean_action``, ``action`` (what the agent then did, read from the next ``step`` call),
``flipped``, ``linf`` and ``l2`` (attack units); :meth:`Attack.log` returns them as a DataFrame and
:meth:`Attack.save` writes them to Parquet.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from rlwrappers import seeding, structure
from rlwrappers._optional import require
from rlwrappers.core import Entry, Perturbation
from rlwrappers.error import InvalidArgument
from rlwrappers.schedule import Plan, Schedule
from rlwrappers.wrappers.adversarial import AttackPerturbation, Entries

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Attack", "BatchAttacker"]

#: The columns of an attack log, in order.
LOG_COLUMNS = ("env", "episode", "step", "clean_action", "action", "flipped", "linf", "l2")


class BatchAttacker:
    """Attacks the batches of ``num_envs`` sub-envs under a schedule per sub-env, and logs each decision.

    The vector wrappers drive it: :meth:`reset` when the vector env resets, :meth:`observe` on every batch of
    observations, :meth:`decide` with every batch of actions, :meth:`advance` after every step.

    Args:
        attack: an attack spec string, dict or :class:`AttackPerturbation`.
        agent: the agent to attack (anything :func:`rlwrappers.agents.adapt` takes).
        observation_space: the space of one sub-env's observation (as the agent receives it).
        action_space: the space of one sub-env's action.
        num_envs: the number of sub-envs.
        when: the schedule, for specs that do not set their own (default: always).
        label: the attack's name in the log (default: its spec name).
    """

    def __init__(
        self,
        attack: str | Mapping[str, Any] | Perturbation,
        agent: Any,
        observation_space: gym.Space[Any],
        action_space: gym.Space[Any],
        num_envs: int,
        *,
        when: str | Schedule | Mapping[str, Any] | None = None,
        label: str | None = None,
    ):
        entry = Entry.parse(attack, when)
        perturbation = entry.perturbation.copy()
        if not isinstance(perturbation, AttackPerturbation):
            raise InvalidArgument(f"`attack` must be a gradient attack (fgsm, pgd, cw), received {entry}")
        perturbation.bind_spaces(observation_space, action_space)
        perturbation.attach(agent)
        self.perturbation = perturbation
        self.entry = Entry(perturbation, entry.when, label or entry.label)
        self.label = label or entry.label or perturbation.name
        self.num_envs = num_envs
        self.observation_space = perturbation.observation_space(observation_space)
        self._discrete = isinstance(action_space, gym.spaces.Discrete)
        self._rng = np.random.default_rng(0)
        #: One clock per sub-env; sub-env ``i`` of a vector env reset with seed ``s`` derives from ``s + i``.
        self._clocks = [seeding.EpisodeClock() for _ in range(num_envs)]
        self._plans: list[Plan] = []
        #: The sub-envs attacked in the last batch, their clean actions, and the sizes of their changes by column.
        self._pending: tuple[NDArray[np.intp], NDArray[Any], dict[str, NDArray[np.float64]]] | None = None
        #: The log's columns: :data:`LOG_COLUMNS`, then each attacked entry's ``linf[<key>]`` and ``l2[<key>]``.
        self.columns = (*LOG_COLUMNS, *(f"{n}[{key}]" for key in perturbation.chosen or () for n in ("linf", "l2")))
        self._rows: list[dict[str, NDArray[Any]]] = []

    # -- episodes ---------------------------------------------------------------------------------------
    def reset(self, seed: int | None) -> None:
        """Every sub-env starts an episode; a seed restarts the generators from it."""
        if seed is None and self._clocks[0].entropy is None:
            seed = seeding.fresh_entropy()  # drawn once, for every sub-env
        for i, clock in enumerate(self._clocks):
            clock.reset(None if seed is None else seed + i)
        self._rng = self._clocks[0].generator(self.label, seeding.EFFECT)
        self._pending = None
        self._plans = [self._plan(clock) for clock in self._clocks]

    def _plan(self, clock: seeding.EpisodeClock) -> Plan:
        when = self.entry.when
        rng = clock.generator(self.label, seeding.SCHEDULE) if when.random else None
        return when.plan(clock.episode, clock.total_step, rng)

    def advance(self, starts: NDArray[np.bool_], *, reset_step: bool = False) -> None:
        """One step passed; sub-envs where ``starts`` is True now show the first observation of a new episode.

        ``reset_step`` says that for those sub-envs the step was an autoreset rather than a step of an episode
        (Gymnasium's next-step mode), so it does not move their clocks on before the new episode starts.
        """
        for i, (clock, start) in enumerate(zip(self._clocks, starts.tolist(), strict=True)):
            if not (start and reset_step):
                clock.tick()
            if start:
                clock.reset(None)
                self._plans[i] = self._plan(clock)

    # -- attacking and logging --------------------------------------------------------------------------
    def observe(self, obs: Any) -> Any:
        """The batch with the active sub-envs' observations attacked (a Dict or Tuple batch: their chosen entries)."""
        active = np.fromiter((plan.active(c.t) for plan, c in zip(self._plans, self._clocks, strict=True)), bool)
        if not active.any():
            self._pending = None
            return self._delivered(obs, copy=False)
        envs = np.flatnonzero(active)
        every = len(envs) == self.num_envs
        result = self.perturbation.attack(obs if every else structure.take(obs, envs), self._rng)
        if every:
            out = result.observations
        else:
            out = self._delivered(obs, copy=True)
            for rows, attacked in zip(self._attacked(out), self._attacked(result.observations), strict=True):
                rows[envs] = attacked
        sizes = {"linf": result.linf, "l2": result.l2}
        for key, (linf, l2) in result.entries.items():
            sizes[f"linf[{key}]"], sizes[f"l2[{key}]"] = linf, l2
        self._pending = (envs, result.clean_action, sizes)
        return out

    def _attacked(self, batch: Any) -> list[Any]:
        """The arrays of a batch that the attack changes: the batch, or its chosen entries."""
        domain = self.perturbation.domain
        return list(domain.access.gather(batch)) if isinstance(domain, Entries) else [batch]

    def _delivered(self, obs: Any, *, copy: bool) -> Any:
        """A batch in the dtypes the attack delivers (float32 for an integer space it does not re-quantize)."""
        domain = self.perturbation.domain
        if not isinstance(domain, Entries):
            return obs.astype(domain.dtype, copy=copy)
        arrays = zip(domain.access.gather(obs), domain.domains, strict=True)
        return domain.access.scatter(obs, [a.astype(d.dtype, copy=copy) for a, d in arrays])

    def decide(self, actions: NDArray[Any], ignored: NDArray[np.bool_] | None = None) -> None:
        """Logs the decisions the agent made on the attacked observations of the last batch.

        ``ignored`` marks sub-envs whose action the vector env ignores (it resets them instead): the
        observation they acted on was a final one, and no row records it.
        """
        if self._pending is None:
            return
        envs, clean, sizes = self._pending
        self._pending = None
        if ignored is not None and ignored[envs].any():
            keep = ~ignored[envs]
            envs, clean, sizes = envs[keep], clean[keep], {name: size[keep] for name, size in sizes.items()}
        taken = np.asarray(actions)[envs]
        flipped = taken != clean if self._discrete else np.full(len(envs), False)
        self._rows.append(
            {
                "env": envs,
                "episode": np.array([self._clocks[i].episode for i in envs], np.int64),
                "step": np.array([self._clocks[i].t for i in envs], np.int64),
                "clean_action": clean,
                "action": taken,
                "flipped": flipped,
                **sizes,
            }
        )

    def log(self) -> pd.DataFrame:
        """Every attacked decision so far, one row each (columns :attr:`columns`)."""
        pd = require("pandas")
        if not self._rows:
            return pd.DataFrame({name: [] for name in self.columns})
        columns: dict[str, Any] = {}
        for name in self.columns:
            values = np.concatenate([row[name] for row in self._rows])
            columns[name] = list(values) if values.ndim > 1 else values
        return pd.DataFrame(columns)

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes :meth:`log` to a Parquet file, with the attack's spec in its metadata."""
        pa = require("pyarrow")
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(self.log(), preserve_index=False)
        meta = {b"rlwrappers.attack": str(self.entry).encode(), b"rlwrappers.label": self.label.encode()}
        pq.write_table(table.replace_schema_metadata({**(table.schema.metadata or {}), **meta}), path)


class Attack(gym.vector.VectorWrapper):
    """Attacks the observations of a Gymnasium vector env, batched across sub-envs.

    Args:
        env: the vector env (autoreset mode next-step, the default, or same-step).
        attack: an attack spec (``"fgsm(eps=0.01)"``) or :class:`AttackPerturbation`.
        agent: the agent to attack (an :class:`rlwrappers.agents.Agent`, an SB3 model or policy, ...).
        when: the schedule per sub-env (default: always).
        label: the attack's name in the log.

    Example:
        >>> import gymnasium as gym, rlwrappers as rw
        >>> from rlwrappers.wrappers.vector import Attack
        >>> agent = rw.load_agent("ppo-CartPole-v1")
        >>> envs = Attack(gym.make_vec("CartPole-v1", num_envs=4, vectorization_mode="sync"), "fgsm(eps=0.2)", agent)
        >>> obs, _ = envs.reset(seed=0)
        >>> for _ in range(10):
        ...     obs, *_ = envs.step(agent.act(obs))
        >>> log = envs.log()
        >>> len(log), bool((log["flipped"] == (log["action"] != log["clean_action"])).all())
        (40, True)
    """

    def __init__(
        self,
        env: gym.vector.VectorEnv[Any, Any, Any],
        attack: str | Mapping[str, Any] | Perturbation,
        agent: Any,
        *,
        when: str | Schedule | Mapping[str, Any] | None = None,
        label: str | None = None,
    ):
        mode = env.metadata.get("autoreset_mode", gym.vector.AutoresetMode.NEXT_STEP)
        if mode not in (gym.vector.AutoresetMode.NEXT_STEP, gym.vector.AutoresetMode.SAME_STEP):
            raise InvalidArgument(f"`env` must autoreset (next-step or same-step mode), received {mode}")
        attacker = BatchAttacker(
            attack, agent, env.single_observation_space, env.single_action_space, env.num_envs, when=when, label=label
        )
        super().__init__(env)
        self.attacker = attacker
        self._next_step = mode == gym.vector.AutoresetMode.NEXT_STEP
        self._done = np.zeros(env.num_envs, dtype=bool)
        self.single_observation_space = attacker.observation_space
        self.observation_space = gym.vector.utils.batch_space(attacker.observation_space, env.num_envs)

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Resets every sub-env; ``seed`` (an int) seeds the schedules and the attack's generator."""
        if isinstance(seed, list):
            raise InvalidArgument("`seed` must be an int or None for an attacked vector env, received a list")
        obs, info = self.env.reset(seed=seed, options=options)
        self.attacker.reset(seed)
        self._done[:] = False
        return self.attacker.observe(obs), info

    def step(self, actions: Any) -> tuple[Any, Any, Any, Any, dict[str, Any]]:
        """Logs the decisions on the last observations, steps, and attacks the new ones."""
        obs, rewards, terminated, truncated, info = self.env.step(actions)
        done = np.logical_or(terminated, truncated)
        if self._next_step:  # sub-envs that were done reset in this step, ignoring their actions
            self.attacker.decide(actions, ignored=self._done)
            self.attacker.advance(self._done, reset_step=True)
            self._done = done
        else:
            self.attacker.decide(actions)
            self.attacker.advance(done)
        return self.attacker.observe(obs), rewards, terminated, truncated, info

    def log(self) -> pd.DataFrame:
        """Every attacked decision so far (see :meth:`BatchAttacker.log`)."""
        return self.attacker.log()

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the log to a Parquet file."""
        self.attacker.save(path)
