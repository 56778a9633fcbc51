"""The agent protocol: one small interface for acting and for differentiable outputs.

Every part of the library that needs an agent (evaluation runs, parameter noise, attacks, offline robustness,
saliency) speaks to it through :class:`Agent`:

- :meth:`Agent.act` maps a batch of observations to a batch of actions. A stochastic agent draws its
  randomness from the generator it is given, never from numpy's or torch's global state, so the runner can
  seed it from the run's seed.
- :meth:`Agent.outputs` maps a float tensor of observations (in the units and layout of
  :attr:`Agent.observation_space`) to the network's differentiable :class:`Outputs`: action logits, q-values,
  state values, or the deterministic continuous action.
- :meth:`Agent.parameters` names the tensors that decide the agent's actions (what parameter noise perturbs).

The adapters to it are in :mod:`rlwrappers.agents.adapters`.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from rlwrappers._optional import require
from rlwrappers.error import IncompatibleSpace, InvalidArgument, NotDifferentiable

if TYPE_CHECKING:
    import torch

    from rlwrappers.agents.training import Training

__all__ = ["Agent", "Outputs", "check_compatible", "fits", "stack_observations"]


@dataclass(frozen=True)
class Outputs:
    """What an agent's network gives for a batch of observations; heads the agent lacks are None.

    Attributes:
        logits: action preferences of a discrete policy, shape (batch, n); softmax gives the probabilities.
        q_values: action values of a value-based agent, shape (batch, n).
        values: state values, shape (batch,).
        action: the deterministic continuous action in the action space's units, before clipping.
        log_std: log standard deviation of a Gaussian policy (pre-squash for SAC).
    """

    logits: torch.Tensor | None = None
    q_values: torch.Tensor | None = None
    values: torch.Tensor | None = None
    action: torch.Tensor | None = None
    log_std: torch.Tensor | None = None

    @property
    def scores(self) -> torch.Tensor:
        """What a discrete agent maximises: its logits, or its q-values for a value-based agent."""
        scores = self.logits if self.logits is not None else self.q_values
        if scores is None:
            raise NotDifferentiable("this agent has neither action logits nor q-values (continuous actions)")
        return scores

    @property
    def probs(self) -> torch.Tensor:
        """Action probabilities of a discrete policy: the softmax of its logits."""
        if self.logits is None:
            raise NotDifferentiable("this agent has no action logits, so no action probabilities")
        return self.logits.softmax(-1)

    def cpu(self) -> Outputs:
        """The outputs on the CPU (differentiably): a network on a GPU hands its outputs back this way."""
        moved = {f.name: getattr(self, f.name) for f in fields(self)}
        return Outputs(**{name: None if t is None else t.cpu() for name, t in moved.items()})


class Agent(abc.ABC):
    """An agent that acts on batches of observations and exposes its network's outputs.

    Attributes:
        observation_space: the space of one observation the agent accepts.
        action_space: the space of one action it returns.
        deterministic: whether :meth:`act` is a function of the observation alone.
        training: what the agent was trained behind that its env must rebuild (env wrappers, frame stack),
            when the files it was read from say (:mod:`rlwrappers.agents.rl_zoo`); None otherwise.
    """

    observation_space: gym.Space[Any]
    action_space: gym.Space[Any]
    deterministic: bool
    training: Training | None = None

    def act(self, obs: Any, rng: np.random.Generator | None = None) -> NDArray[Any]:
        """The actions for a batch of observations (leading axis); ``rng`` is required when stochastic.

        A batch of Dict observations is a dict of batches, one per key (:func:`stack_observations` makes one).
        """
        if not self.deterministic and rng is None:
            raise InvalidArgument(f"`rng` is required: {self} samples its actions, received rng=None")
        if type(obs) is not np.ndarray:  # arrays go straight on: this is every step's path
            if isinstance(self.observation_space, gym.spaces.Dict):
                return self._act(self._checked_dict(obs), rng)
            obs = np.asarray(obs)
        shape = self.observation_space.shape
        if shape is not None and obs.shape[1:] != shape:
            raise InvalidArgument(
                f"`obs` must be a batch of observations of shape (n, *{shape}), received shape {obs.shape};"
                " use act_one for a single observation"
            )
        return self._act(obs, rng)

    def _checked_dict(self, obs: Any) -> dict[str, NDArray[Any]]:
        """A batch of Dict observations with the keys and shapes of the agent's space."""
        space = self.observation_space
        assert isinstance(space, gym.spaces.Dict)
        if not isinstance(obs, Mapping) or set(obs) != set(space.spaces):
            got = sorted(obs) if isinstance(obs, Mapping) else type(obs).__name__
            raise InvalidArgument(f"`obs` must be a dict of batches with keys {sorted(space.spaces)}, received {got}")
        batch = {key: np.asarray(obs[key]) for key in space.spaces}
        for key, value in batch.items():
            shape = space[key].shape
            if shape is not None and value.shape[1:] != shape:
                raise InvalidArgument(
                    f"`obs[{key!r}]` must be a batch of shape (n, *{shape}), received shape {value.shape};"
                    " use act_one for a single observation"
                )
        return batch

    @abc.abstractmethod
    def _act(self, obs: Any, rng: np.random.Generator | None) -> NDArray[Any]: ...

    def act_one(self, obs: Any, rng: np.random.Generator | None = None) -> Any:
        """The action for a single observation."""
        return self.act(stack_observations([obs]), rng)[0]

    def outputs(self, x: torch.Tensor) -> Outputs:
        """The network's outputs for ``x``, a float tensor batch in observation units; differentiable."""
        raise NotDifferentiable(f"{self} has no network to differentiate")

    def parameters(self) -> dict[str, torch.Tensor]:
        """The tensors that decide the agent's actions, by name (empty if it has none)."""
        return {}

    def tensor(self, obs: Any) -> Any:
        """A batch of observations as the float32 tensor :meth:`outputs` takes (a dict of them for a Dict batch)."""
        torch = require("torch", purpose="agent networks")
        if type(obs) is not np.ndarray and isinstance(obs, Mapping):
            return {key: torch.as_tensor(np.asarray(value), dtype=torch.float32) for key, value in obs.items()}
        return torch.as_tensor(np.asarray(obs), dtype=torch.float32)

    def __str__(self) -> str:
        return f"{type(self).__name__}({self.action_space})"


def check_compatible(agent: Agent, env: gym.Env[Any, Any]) -> None:
    """Raises :class:`IncompatibleSpace` when ``agent``'s spaces do not fit ``env``'s."""
    for name in ("action_space", "observation_space"):
        mine, theirs = getattr(agent, name), getattr(env, name)
        if not fits(mine, theirs):
            raise IncompatibleSpace(f"the agent's {name} {mine} does not match the env's {theirs}")


def stack_observations(observations: Sequence[Any]) -> Any:
    """Single observations as one batch: an array with a leading axis, or for Dict observations a dict of them."""
    first = observations[0]
    if type(first) is not np.ndarray and isinstance(first, Mapping):  # arrays, every step's path, skip the check
        return {key: stack_observations([o[key] for o in observations]) for key in first}
    if len(observations) == 1:
        return np.asarray(first)[None]
    return np.stack([np.asarray(o) for o in observations])


def fits(agent_space: gym.Space[Any], env_space: gym.Space[Any]) -> bool:
    """Whether an agent with ``agent_space`` can act in an env with ``env_space``: the same kind and shape."""
    if isinstance(agent_space, gym.spaces.Discrete) and isinstance(env_space, gym.spaces.Discrete):
        return bool(agent_space.n == env_space.n and agent_space.start == env_space.start)
    if isinstance(agent_space, gym.spaces.Box) and isinstance(env_space, gym.spaces.Box):
        # Bounds may differ (an agent trained under widened noise bounds still fits); shapes may not.
        return agent_space.shape == env_space.shape
    if isinstance(agent_space, gym.spaces.Dict) and isinstance(env_space, gym.spaces.Dict):
        return set(agent_space.spaces) == set(env_space.spaces) and all(
            fits(space, env_space[key]) for key, space in agent_space.spaces.items()
        )
    return bool(agent_space == env_space)
