"""Sanity checks of saliency maps: cascading randomization of the agent's layers (Adebayo et al. 2018).

From *Benchmarking Perturbation-based Saliency Maps for Explaining Atari Agents* (seed 003, Section 3.3.1):
:func:`cascading_randomization` re-initializes the layers that decide the agent's outputs from the output layer
down, one more per copy, with a seeded ``torch.Generator``; :func:`sanity_check` compares each copy's maps with
the original's by :func:`rlwrappers.metrics.saliency.similarities`, and
:func:`rlwrappers.metrics.saliency.sanity_check_summary` averages them per layer. The similarities compare 2-D
maps, so the sanity check needs an agent whose observations are images: a vector, Dict or Tuple observation space
raises :class:`~rlwrappers.error.IncompatibleSpace` before any layer is randomized.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rlwrappers import _check
from rlwrappers._optional import require
from rlwrappers.agents import Agent, SB3Agent
from rlwrappers.error import InvalidArgument, InvalidType, NotDifferentiable
from rlwrappers.explain.maps import check_observations
from rlwrappers.metrics.saliency import SIMILARITIES, similarities

if TYPE_CHECKING:
    import pandas as pd
    import torch

__all__ = ["cascading_randomization", "randomization_layers", "sanity_check"]


def _layer_groups(agent: Agent) -> dict[str, list[str]]:
    """The agent's layers, output layer first: layer name -> the names of its parameters in ``agent.parameters()``.

    A layer is a submodule that holds parameters itself; the order is the reverse of registration. A parameter
    the root module holds directly is a layer of its own (for a :class:`~rlwrappers.agents.TorchAgent`), except
    for SB3 policies, whose only such parameter (the Gaussian policy's state-independent ``log_std``) is left as
    trained.
    """
    if not isinstance(agent, Agent):
        raise InvalidType(f"`agent` must be an rlwrappers Agent, received {type(agent).__name__}")
    params = agent.parameters()
    if not params:
        raise NotDifferentiable(f"{agent} has no network parameters to randomize")
    groups: dict[str, list[str]] = {}
    for name in params:
        prefix = name.rpartition(".")[0]
        if isinstance(agent, SB3Agent) and agent.kind in ("actor_critic", "sac", "td3") and "." not in name:
            continue
        groups.setdefault(prefix or name, []).append(name)
    return dict(reversed(groups.items()))


def randomization_layers(agent: Agent) -> list[str]:
    """The layers :func:`cascading_randomization` re-initializes, in its order: the output layer first.

    For an :class:`SB3Agent`, the parameters of :meth:`SB3Agent.parameters` grouped by module: DQN's online
    ``q_net`` only (never ``q_net_target``); for PPO and A2C the actor path (``action_net``, the policy half of
    the ``mlp_extractor``, the features extractor), never the critic. For a
    :class:`~rlwrappers.agents.TorchAgent`, every module of ``module`` that holds parameters, in reverse
    registration order.

    Example:
        >>> import gymnasium as gym, torch
        >>> from rlwrappers.agents import TorchAgent
        >>> net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        >>> space = gym.spaces.Box(-1.0, 1.0, (4,))
        >>> randomization_layers(TorchAgent(net, space, gym.spaces.Discrete(2), head="q_values"))
        ['2', '0']
    """
    return list(_layer_groups(agent))


def _reinitialize(tensors: Mapping[str, torch.Tensor], generator: torch.Generator) -> None:
    """Draws new values for one layer's parameters from ``generator``, on the CPU, then copies them in place.

    Weights of two or more dimensions get PyTorch's default for ``Linear`` and ``Conv`` layers,
    ``kaiming_uniform_(a=sqrt(5))``, that is U(-1/sqrt(fan_in), 1/sqrt(fan_in)); the layer's other parameters
    (biases) the same bound from the weight's fan-in; a layer without such a weight (a normalization layer)
    gets standard normal values.
    """
    torch = require("torch", purpose="cascading randomization")
    matrices = [t for t in tensors.values() if t.dim() >= 2]
    fan_in = int(np.prod(matrices[0].shape[1:])) if matrices else 0
    with torch.no_grad():
        for tensor in tensors.values():
            new = torch.empty(tensor.shape, dtype=tensor.dtype)
            if tensor.dim() >= 2:
                torch.nn.init.kaiming_uniform_(new, a=math.sqrt(5), generator=generator)
            elif fan_in > 0:
                bound = 1.0 / math.sqrt(fan_in)
                torch.nn.init.uniform_(new, -bound, bound, generator=generator)
            else:
                torch.nn.init.normal_(new, generator=generator)
            tensor.copy_(new.to(tensor.device))


def cascading_randomization(
    agent: Agent, seed: int = 0, *, layers: Sequence[str] | None = None
) -> list[tuple[str, Agent]]:
    """Copies of ``agent`` with its layers re-initialized one more at a time, from the output layer down.

    The k-th copy has the first k of :func:`randomization_layers` (or of ``layers``, a subset in that order)
    re-initialized: weights of two or more dimensions with PyTorch's default for ``Linear`` and ``Conv``,
    ``kaiming_uniform_(a=sqrt(5))`` (U(-1/sqrt(fan_in), 1/sqrt(fan_in))), the layer's biases from the same
    bound, and the parameters of a layer without such a weight (a normalization layer) from N(0, 1). Every draw
    comes from one ``torch.Generator`` seeded with ``seed`` and carried down the cascade: a layer gets the same
    random weights in every copy that randomizes it, and the same seed gives bit-identical copies. ``agent`` is
    deep-copied and stays unchanged; torch's global generator is not used. Buffers (batch-norm statistics) are
    kept.

    Returns:
        ``[(layer, copy), ...]``, the output layer first; the last copy has every layer randomized.

    Example:
        >>> import gymnasium as gym, torch
        >>> from rlwrappers.agents import TorchAgent
        >>> net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        >>> agent = TorchAgent(net, gym.spaces.Box(-1.0, 1.0, (4,)), gym.spaces.Discrete(2), head="q_values")
        >>> cascade = cascading_randomization(agent, seed=0)
        >>> [name for name, _ in cascade]
        ['2', '0']
        >>> bool(torch.equal(cascade[0][1].module[0].weight, net[0].weight))  # only the output layer so far
        True
    """
    torch = require("torch", purpose="cascading randomization")
    groups = _layer_groups(agent)
    if layers is not None:
        wanted = list(layers)
        unknown = [name for name in wanted if name not in groups]
        if unknown:
            raise InvalidArgument(f"`layers` must be among {list(groups)}, received unknown {unknown}")
        if sorted(wanted, key=list(groups).index) != wanted or len(set(wanted)) != len(wanted):
            raise InvalidArgument(f"`layers` must be distinct and in the order {list(groups)}, received {wanted}")
        groups = {name: groups[name] for name in wanted}
    generator = torch.Generator().manual_seed(_check.integer("seed", seed, minimum=0))
    work = copy.deepcopy(agent)
    params = work.parameters()
    cascade: list[tuple[str, Agent]] = []
    for layer, names in groups.items():
        _reinitialize({name: params[name] for name in names}, generator)
        cascade.append((layer, copy.deepcopy(work)))
    return cascade


def sanity_check(
    explain: Callable[[Agent, NDArray[Any]], ArrayLike],
    agent: Agent,
    states: ArrayLike,
    seed: int = 0,
    *,
    layers: Sequence[str] | None = None,
    sign_invariant: bool = True,
    flatten_ssim: bool = False,
) -> pd.DataFrame:
    """Adebayo et al.'s model-parameter randomization test: the original maps against those of randomized copies.

    ``explain(agent, obs)`` returns the (H, W) saliency map of one observation. It is called for ``agent`` and
    for every copy of :func:`cascading_randomization` (``seed``, ``layers``) on each state; each copy's map is
    compared with the original's by :func:`similarities` (``sign_invariant``, ``flatten_ssim``: SSIM on the 2-D
    maps by default, on the flattened maps as the paper's reference code with True). In the paper, the
    randomized networks explain the action the original agent chose: let ``explain`` pick it from the original
    agent to do the same.

    Returns:
        One row per (state, randomized layer): ``state`` (the index in ``states``), ``level`` (how many layers
        are randomized, 1 = the output layer), ``layer``, and the :data:`SIMILARITIES`.

    Raises:
        IncompatibleSpace: the agent's observations are not images (a vector, a Dict or a Tuple space): the
            similarities compare 2-D maps.
    """
    pd = require("pandas", purpose="sanity-check tables")
    if not callable(explain):
        raise InvalidType(f"`explain` must be a callable explain(agent, obs) -> map, received {explain!r}")
    if not isinstance(agent, Agent):
        raise InvalidType(f"`agent` must be an rlwrappers Agent, received {type(agent).__name__}")
    check_observations(agent, image="the sanity check")
    batch = np.asarray(states)
    shape = agent.observation_space.shape
    if shape is not None and batch.shape[1:] != shape:
        raise InvalidArgument(f"`states` must have shape (n, *{shape}), received {batch.shape}")
    cascade = cascading_randomization(agent, seed, layers=layers)
    rows = []
    for i, obs in enumerate(batch):
        original = explain(agent, obs)
        for level, (layer, randomized) in enumerate(cascade, 1):
            values = similarities(
                original, explain(randomized, obs), sign_invariant=sign_invariant, flatten_ssim=flatten_ssim
            )
            rows.append({"state": i, "level": level, "layer": layer, **values})
    return pd.DataFrame(rows, columns=["state", "level", "layer", *SIMILARITIES])
