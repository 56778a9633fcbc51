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

A batch of observations is an array with a leading batch axis. For a Dict or Tuple observation space it has the
space's structure with a batch in place of each entry: a dict of batches for a Dict space, a tuple of batches
for a Tuple space, nested as the space nests (what SB3's ``MultiInputPolicy`` takes);
:func:`stack_observations` makes one from single observations, :func:`rlwrappers.structure.take` takes items
back out, and :meth:`Agent.tensor` turns one into float32 tensors of the same structure.

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

from rlwrappers import structure
from rlwrappers._optional import require
from rlwrappers.error import IncompatibleSpace, InvalidArgument, NotDifferentiable
from rlwrappers.structure import is_structured

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

        For a Dict or Tuple observation space the batch is a dict or tuple of batches, one per entry, nested as
        the space nests (:func:`stack_observations` makes one).

        Raises:
            InvalidArgument: ``obs`` is not a batch of the agent's observation space (a missing or unknown
                key, a Tuple batch of another length, an entry of another shape).
        """
        if not self.deterministic and rng is None:
            raise InvalidArgument(f"`rng` is required: {self} samples its actions, received rng=None")
        space = self.observation_space
        if type(obs) is not np.ndarray:  # arrays go straight on: this is every step's path
            if is_structured(space):
                return self._act(_checked_batch(space, obs), rng)
            obs = np.asarray(obs)
        shape = space.shape
        if shape is not None:
            if obs.shape[1:] != shape:
                raise InvalidArgument(
                    f"`obs` must be a batch of observations of shape (n, *{shape}), received shape {obs.shape};"
                    " use act_one for a single observation"
                )
        elif is_structured(space):
            _checked_batch(space, obs)  # raises: one array is no batch of a Dict or Tuple space
        return self._act(obs, rng)

    @abc.abstractmethod
    def _act(self, obs: Any, rng: np.random.Generator | None) -> NDArray[Any]: ...

    def act_one(self, obs: Any, rng: np.random.Generator | None = None) -> Any:
        """The action for a single observation (a dict or tuple of entries for a Dict or Tuple space)."""
        if type(obs) is not np.ndarray and not is_structured(self.observation_space):
            obs = np.asarray(obs)  # a list or tuple of numbers is one observation of a plain space
        return self.act(stack_observations([obs]), rng)[0]

    def outputs(self, x: torch.Tensor) -> Outputs:
        """The network's outputs for ``x``, a float tensor batch in observation units; differentiable.

        For a Dict or Tuple observation space ``x`` is a dict or tuple of tensors, as :meth:`tensor` gives it.
        """
        raise NotDifferentiable(f"{self} has no network to differentiate")

    def parameters(self) -> dict[str, torch.Tensor]:
        """The tensors that decide the agent's actions, by name (empty if it has none)."""
        return {}

    def tensor(self, obs: Any) -> Any:
        """A batch of observations as the float32 tensor :meth:`outputs` takes.

        A batch of Dict or Tuple observations becomes a dict or tuple of tensors, nested as the batch nests.
        """
        torch = require("torch", purpose="agent networks")
        if type(obs) is np.ndarray:
            return torch.as_tensor(obs, dtype=torch.float32)
        return structure.map_entries(lambda value: torch.as_tensor(np.asarray(value), dtype=torch.float32), obs)

    def __str__(self) -> str:
        return f"{type(self).__name__}({self.action_space})"


def _checked_batch(space: gym.Space[Any], obs: Any, name: str = "obs") -> Any:
    """A batch of ``space``'s observations, each entry an array, after checking it has the space's structure.

    ``space`` is a Dict or Tuple space (nested ones too): the batch must be a dict with its keys, or a tuple of its
    length, and every entry an array of shape (n, *entry shape), the same n throughout. ``name`` names the batch
    in errors. Dict entries come back in the space's order.

    Raises:
        InvalidArgument: the batch lacks a key or holds another, is a tuple of another length, is no dict or
            tuple where the space has one, or holds an entry of another shape or batch size.
    """
    batch = _checked_entries(space, obs, name)
    sizes = {path: leaf.shape[0] for path, leaf in _leaves_by_path(batch, name) if leaf.ndim}
    if len(set(sizes.values())) > 1:
        raise InvalidArgument(f"`{name}` must hold the same number of observations in every entry, received {sizes}")
    return batch


def _checked_entries(space: gym.Space[Any], obs: Any, name: str) -> Any:
    """:func:`_checked_batch` without the check that every entry holds as many observations."""
    if isinstance(space, gym.spaces.Dict):
        if not isinstance(obs, Mapping):
            raise InvalidArgument(
                f"`{name}` must be a dict of batches with keys {list(space.spaces)}, received {_kind(obs)};"
                " stack_observations makes one from single observations"
            )
        missing = [key for key in space.spaces if key not in obs]
        unknown = [key for key in obs if key not in space.spaces]
        if missing or unknown:
            raise InvalidArgument(
                f"`{name}` must be a dict of batches with keys {list(space.spaces)}, received keys {list(obs)}"
                f" (missing {missing}, unknown {unknown})"
            )
        return {key: _checked_entries(sub, obs[key], f"{name}[{key!r}]") for key, sub in space.spaces.items()}
    if isinstance(space, gym.spaces.Tuple):
        if not isinstance(obs, tuple):
            raise InvalidArgument(
                f"`{name}` must be a tuple of {len(space.spaces)} batches, one per entry of {space}, received"
                f" {_kind(obs)}; stack_observations makes one from single observations"
            )
        if len(obs) != len(space.spaces):
            raise InvalidArgument(
                f"`{name}` must be a tuple of {len(space.spaces)} batches, one per entry of {space}, received a"
                f" tuple of {len(obs)}"
            )
        return tuple(
            _checked_entries(sub, value, f"{name}[{i}]")
            for i, (sub, value) in enumerate(zip(space.spaces, obs, strict=True))
        )
    value = np.asarray(obs)
    shape = space.shape
    if shape is not None and (value.ndim == 0 or value.shape[1:] != shape):
        raise InvalidArgument(
            f"`{name}` must be a batch of shape (n, *{shape}), received shape {value.shape};"
            " use act_one for a single observation"
        )
    return value


def _kind(obs: Any) -> str:
    """What ``obs`` is, for errors: an array's shape, or its type."""
    return f"an array of shape {obs.shape}" if isinstance(obs, np.ndarray) else f"a {type(obs).__name__}"


def _leaves_by_path(batch: Any, name: str) -> list[tuple[str, NDArray[Any]]]:
    """The arrays of a checked batch, each with its name in errors."""
    if isinstance(batch, dict):
        return [leaf for key, value in batch.items() for leaf in _leaves_by_path(value, f"{name}[{key!r}]")]
    if isinstance(batch, tuple):
        return [leaf for i, value in enumerate(batch) for leaf in _leaves_by_path(value, f"{name}[{i}]")]
    return [(name, batch)]


def check_compatible(agent: Agent, env: gym.Env[Any, Any]) -> None:
    """Raises :class:`IncompatibleSpace` when ``agent``'s spaces do not fit ``env``'s."""
    for name in ("action_space", "observation_space"):
        mine, theirs = getattr(agent, name), getattr(env, name)
        if not fits(mine, theirs):
            raise IncompatibleSpace(f"the agent's {name} {mine} does not match the env's {theirs}")


def stack_observations(observations: Sequence[Any]) -> Any:
    """Single observations as one batch: :func:`rlwrappers.structure.stack`.

    The batch is an array with a leading axis, or for Dict and Tuple observations a dict or tuple of batches,
    nested as the observations nest.

    Example:
        >>> import numpy as np
        >>> batch = stack_observations([{"x": np.zeros(2), "y": (np.ones(3), 1)}] * 4)
        >>> batch["x"].shape, batch["y"][0].shape, batch["y"][1].tolist()
        ((4, 2), (4, 3), [1, 1, 1, 1])
    """
    return structure.stack(observations)


def fits(agent_space: gym.Space[Any], env_space: gym.Space[Any]) -> bool:
    """Whether an agent with ``agent_space`` can act in an env with ``env_space``: the same kind and shape.

    Dict spaces fit when they have the same keys and each entry fits; Tuple spaces when they have the same length
    and each entry fits its counterpart.
    """
    if isinstance(agent_space, gym.spaces.Discrete) and isinstance(env_space, gym.spaces.Discrete):
        return bool(agent_space.n == env_space.n and agent_space.start == env_space.start)
    if isinstance(agent_space, gym.spaces.Box) and isinstance(env_space, gym.spaces.Box):
        # Bounds may differ (an agent trained under widened noise bounds still fits); shapes may not.
        return agent_space.shape == env_space.shape
    if isinstance(agent_space, gym.spaces.Dict) and isinstance(env_space, gym.spaces.Dict):
        return set(agent_space.spaces) == set(env_space.spaces) and all(
            fits(space, env_space[key]) for key, space in agent_space.spaces.items()
        )
    if isinstance(agent_space, gym.spaces.Tuple) and isinstance(env_space, gym.spaces.Tuple):
        return len(agent_space.spaces) == len(env_space.spaces) and all(
            fits(mine, theirs) for mine, theirs in zip(agent_space.spaces, env_space.spaces, strict=True)
        )
    return bool(agent_space == env_space)
