"""Trained teams: groups of decentralized PPO agents for the coordinated buildings env, shipped with the package.

``scripts/train_powergrid.py`` trains two groups of five independent PPO agents (one network each, no shared
parameters) on :mod:`rlwrappers.envs.powergrid`: ``powergrid-main`` (seed 0) and ``powergrid-outside``
(seed 1). Each team has a card, ``rlwrappers/zoo/teams/<name>.json``, with the env and its arguments, every
training setting, the budget, the wall time, the learning curve and measured returns, and per agent the
weights file and its SHA-256. A weights file, ``<name>-<agent>.pt``, is the plain state dict of the agent's
actor-mean network (see :func:`network`), read with ``torch.load(weights_only=True)``: loading it runs no code.

An agent acts deterministically: its network maps the observation, scaled as :func:`input_scaling` says, to a
``tanh`` output in [-1, 1], which is mapped linearly onto the action box.

Example:
    >>> from rlwrappers.envs.powergrid import parallel_env
    >>> from rlwrappers.zoo import teams
    >>> teams.names()
    ['powergrid-main', 'powergrid-outside']
    >>> team = teams.load_team("powergrid-main")
    >>> env = parallel_env(**teams.card("powergrid-main")["env_kwargs"])
    >>> trained = sum(teams.play(env, team, seed=0).values())
    >>> trained > sum(teams.play(env, teams.untrained(env, seed=0), seed=0).values())
    True
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from rlwrappers import _check
from rlwrappers._optional import require
from rlwrappers.agents import Agent, TorchAgent
from rlwrappers.error import InvalidArgument, InvalidType, MissingFile, UnknownName
from rlwrappers.zoo.cards import find_card, read_cards

if TYPE_CHECKING:
    import torch

    from rlwrappers.envs.powergrid import CoordinatedBuildings

__all__ = [
    "DIRECTORY",
    "HIDDEN",
    "card",
    "cards",
    "input_scaling",
    "load_team",
    "names",
    "network",
    "play",
    "untrained",
]

#: Where the cards and weights live.
DIRECTORY: Final = Path(__file__).parent / "teams"

#: Hidden units of each of the actor's two layers (seed 001, Appendix E).
HIDDEN: Final = 128

#: The envs teams are trained on, by PettingZoo name: the module that holds ``parallel_env``.
_ENVS: Final = {"coordinated_buildings_v0": "rlwrappers.envs.powergrid"}


@functools.cache
def cards() -> dict[str, dict[str, Any]]:
    """Every team's card, by name."""
    return read_cards(DIRECTORY)


def names() -> list[str]:
    """The names of the shipped teams."""
    return list(cards())


def card(name: str) -> dict[str, Any]:
    """The card of team ``name``: env, settings, budget, files and measured returns."""
    return find_card(cards(), name, "a shipped team; `rlwrappers list teams` shows them")


def network(observation_size: int, action_size: int, hidden: int = HIDDEN) -> torch.nn.Sequential:
    """An actor-mean network: two ``tanh`` layers of ``hidden`` units and a ``tanh`` output in [-1, 1].

    The layers are ``Linear(observation_size, hidden)``, ``Tanh``, ``Linear(hidden, hidden)``, ``Tanh``,
    ``Linear(hidden, action_size)``, ``Tanh``, initialized by torch's default (draws from torch's global
    generator: seed it, or use :func:`untrained`).
    """
    torch = require("torch", purpose="trained teams")
    observation_size = _check.integer("observation_size", observation_size, minimum=1)
    action_size = _check.integer("action_size", action_size, minimum=1)
    hidden = _check.integer("hidden", hidden, minimum=1)
    nn = torch.nn
    return nn.Sequential(
        nn.Linear(observation_size, hidden),
        nn.Tanh(),
        nn.Linear(hidden, hidden),
        nn.Tanh(),
        nn.Linear(hidden, action_size),
        nn.Tanh(),
    )


def input_scaling(env: CoordinatedBuildings) -> tuple[list[float], list[float]]:
    """``(center, scale)`` per observation feature: a network sees ``(observation - center) / scale``.

    From the env's documented ranges, so that typical values land in about [-1, 1]: zone temperatures by the
    comfort band (its middle and half its width), the outdoor temperature by its mean and its amplitude plus
    the largest offset, the clock as is, the power by its range, and the voltage by the ANSI range.
    """
    from rlwrappers.envs import powergrid

    if not isinstance(env, powergrid.CoordinatedBuildings):
        raise InvalidType(f"`env` must be a CoordinatedBuildings env, received {type(env).__name__}")
    low, high = env.comfort_band
    v_low, v_high = powergrid.VOLTAGE_LIMITS
    p_max = powergrid.P_BASE + powergrid.Q_MAX / powergrid.COP * env.zones
    center = [(low + high) / 2] * env.zones
    center += [powergrid.T_MEAN, 0.0, 0.0, (powergrid.P_BASE + p_max) / 2, (v_low + v_high) / 2]
    scale = [(high - low) / 2] * env.zones
    scale += [
        powergrid.T_AMPLITUDE + powergrid.OFFSET_MAX,
        1.0,
        1.0,
        (p_max - powergrid.P_BASE) / 2,
        (v_high - v_low) / 2,
    ]
    return center, scale


def untrained(env: CoordinatedBuildings, seed: int) -> dict[str, Agent]:
    """Fresh, seeded agents of the trained teams' architecture for ``env``: seed 001's "untrained agents".

    One :func:`network` per agent of ``env.possible_agents``, initialized in that order from torch's generator
    seeded with ``seed`` (the global generator is left as it was). ``scripts/train_powergrid.py`` starts each
    group from ``untrained(env, seed)`` with the group's seed.
    """
    seed = _check.integer("seed", seed, minimum=0)
    torch = require("torch", purpose="trained teams")
    center, _ = input_scaling(env)
    sizes = _sizes(env)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        modules = {agent: network(len(center), sizes[agent]) for agent in env.possible_agents}
    return _team(env, modules)


def load_team(name: str, *, directory: str | os.PathLike[str] | None = None) -> dict[str, Agent]:
    """Team ``name`` as agents, by agent name; each a deterministic :class:`~rlwrappers.agents.TorchAgent`.

    Args:
        name: a shipped team (see :func:`names`), or with ``directory`` the stem of a card in it.
        directory: where to read the card and weights instead of the shipped ones (a fresh training run).

    Raises:
        UnknownName: ``name`` is not a shipped team.
        MissingFile: the card (with ``directory``) or a weights file on the card is missing.
        InvalidArgument: a weights file does not match the SHA-256 on the card.
    """
    if directory is None:
        info, folder = card(name), DIRECTORY
    else:
        folder = Path(directory)
        path = folder / f"{name}.json"
        if not path.exists():
            raise MissingFile(f"the card of team {name!r} is missing: expected {str(path)!r}")
        info = json.loads(path.read_text())
    torch = require("torch", purpose="trained teams")
    env = _make_env(info)
    sizes = _sizes(env)
    center, _ = input_scaling(env)
    modules = {}
    for agent in env.possible_agents:
        entry = info["agents"][agent]
        path = folder / entry["file"]
        if not path.exists():
            raise MissingFile(
                f"the weights of {name!r} agent {agent!r} are missing: expected {str(path)!r};"
                " run `python scripts/train_powergrid.py` to train them"
            )
        data = path.read_bytes()
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise InvalidArgument(
                f"{str(path)!r} does not match the SHA-256 on its card; retrain with scripts/train_powergrid.py"
            )
        module = network(len(center), sizes[agent], info["network"]["hidden"])
        module.load_state_dict(torch.load(io.BytesIO(data), weights_only=True, map_location="cpu"))
        modules[agent] = module
    return _team(env, modules)


def play(env: CoordinatedBuildings, team: dict[str, Agent], seed: int) -> dict[str, float]:
    """Runs one episode of ``env`` from ``reset(seed=seed)`` with ``team`` and returns each agent's return.

    Agents act on their own observation only. The team return is the sum of the values.
    """
    missing = [agent for agent in env.possible_agents if agent not in team]
    if missing:
        raise InvalidArgument(f"`team` must hold an agent for every agent of the env; missing {missing}")
    observations, _ = env.reset(seed=seed)
    returns = dict.fromkeys(env.possible_agents, 0.0)
    while env.agents:
        actions = {agent: team[agent].act_one(observations[agent]) for agent in env.agents}
        observations, rewards, _, _, _ = env.step(actions)
        for agent, reward in rewards.items():
            returns[agent] += reward
    return returns


# -- internals -------------------------------------------------------------------------------------------
def _make_env(info: dict[str, Any]) -> CoordinatedBuildings:
    import importlib

    if info["env"] not in _ENVS:
        raise UnknownName(f"the card's env {info['env']!r} is not one of {sorted(_ENVS)}")
    module = importlib.import_module(_ENVS[info["env"]])
    env: CoordinatedBuildings = module.parallel_env(**info["env_kwargs"])
    return env


def _sizes(env: CoordinatedBuildings) -> dict[str, int]:
    import gymnasium as gym

    sizes = {}
    for agent in env.possible_agents:
        space = env.action_space(agent)
        if not isinstance(space, gym.spaces.Box) or len(space.shape) != 1:
            raise InvalidType(f"agent {agent!r} needs a flat Box action space, received {space}")
        sizes[agent] = space.shape[0]
    return sizes


def _team(env: CoordinatedBuildings, modules: Mapping[str, torch.nn.Module]) -> dict[str, Agent]:
    """The modules as deterministic agents: inputs scaled by :func:`input_scaling`, outputs mapped onto the box."""
    torch = require("torch", purpose="trained teams")
    center_list, scale_list = input_scaling(env)
    center = torch.tensor(center_list, dtype=torch.float32)
    scale = torch.tensor(scale_list, dtype=torch.float32)
    team: dict[str, Agent] = {}
    for agent, module in modules.items():
        space = env.action_space(agent)
        low = torch.as_tensor(space.low, dtype=torch.float32)
        half = torch.as_tensor((space.high - space.low) / 2, dtype=torch.float32)
        forward = functools.partial(_forward, center=center, scale=scale, low=low, half=half)
        module.eval()
        team[agent] = TorchAgent(module, env.observation_space(agent), space, head="action", forward=forward)
    return team


def _forward(
    module: torch.nn.Module,
    x: torch.Tensor,
    *,
    center: torch.Tensor,
    scale: torch.Tensor,
    low: torch.Tensor,
    half: torch.Tensor,
) -> torch.Tensor:
    """The action for a batch ``x``: scale the input, run the network, map its [-1, 1] output onto the box."""
    out: torch.Tensor = module((x - center) / scale)
    return low + (out + 1.0) * half
