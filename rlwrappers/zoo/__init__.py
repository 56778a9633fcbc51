"""The agent zoo: small SB3 agents trained by ``scripts/train_zoo.py``, shipped with the package.

Each agent has a card, ``rlwrappers/zoo/agents/<name>.json``, with its algorithm, env, the perturbation it
was trained under (none for the clean agents), every training setting, and per training seed the weights'
file and SHA-256 and its measured returns (clean, and under its training perturbation). The weights are
plain state dicts read with ``torch.load(weights_only=True)``: loading them runs no code from the file.

Names read ``<algo>-<env id>`` for agents trained on the clean env and ``<algo>-<env id>-<kind>`` for those
trained under one kind of uncertainty (seed 002 trains and evaluates under the same noise), e.g.
``ppo-CartPole-v1`` and ``ppo-CartPole-v1-obs_noise``.

:func:`load_agent` also takes ``NAME@SEED`` and the path of an SB3 ``.zip``: what the command line's
``--agent`` and the evaluation runner accept. The shipped teams are in :mod:`rlwrappers.zoo.teams`
(:func:`load_team`), and RL Zoo's hyperparameters for perturbed IDs in :mod:`rlwrappers.zoo.hyperparams`.

Example:
    >>> from rlwrappers import zoo
    >>> agent = zoo.load_agent("ppo-CartPole-v1", seed=0)
    >>> zoo.card("ppo-CartPole-v1")["algo"]
    'PPO'
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import gymnasium as gym
import numpy as np

from rlwrappers._optional import require
from rlwrappers.agents import Agent, SB3Agent, load_sb3
from rlwrappers.agents.files import check_device, load_script, script_source, warn_untrusted
from rlwrappers.agents.rl_zoo import AgentFiles, read_training
from rlwrappers.agents.training import Normalization, Training
from rlwrappers.error import IncompatibleSpace, InvalidArgument, InvalidType, MissingFile
from rlwrappers.zoo.cards import find_card, read_cards
from rlwrappers.zoo.teams import load_team

__all__ = ["DIRECTORY", "UNCERTAINTIES", "card", "cards", "load_agent", "load_team", "names"]

#: Where the cards and weights live.
DIRECTORY: Final = Path(__file__).parent / "agents"

#: Seed 002's six kinds of uncertainty (Flageat et al. 2023, Section 2.2) as perturbation specs, per env:
#: the zoo trains under them, and ``rlwrappers demo`` evaluates under them.
UNCERTAINTIES: Final[Mapping[str, Mapping[str, str]]] = {
    "CartPole-v1": {
        "obs_noise": "obs_noise(std=0.05)",
        "action_noise": "action_noise(p=0.1)",
        "reward_noise": "reward_noise(std=1.0)",
        "init_noise": "init_noise(std=0.05)",
        "dynamics": "dynamics_shift(scales={'length': 1.5}, when=prob(p=0.5))",
        "param_noise": "param_noise(std=0.05)",
    },
    "Pendulum-v1": {
        "obs_noise": "obs_noise(std=0.05)",
        "action_noise": "action_noise(std=0.2)",
        "reward_noise": "reward_noise(std=1.0)",
        "init_noise": "init_noise(std=0.5)",
        "dynamics": "dynamics_shift(scales={'m': 1.3}, when=prob(p=0.5))",
        "param_noise": "param_noise(std=0.02)",
    },
}


@functools.cache
def cards() -> dict[str, dict[str, Any]]:
    """Every agent's card, by name."""
    return read_cards(DIRECTORY)


def names() -> list[str]:
    """The names of the zoo's agents."""
    return list(cards())


def card(name: str) -> dict[str, Any]:
    """The card of agent ``name``: settings, seeds, files and measured returns."""
    return find_card(cards(), name, "a zoo agent; `rlwrappers list agents` shows them")


def load_agent(
    source: str | os.PathLike[str],
    *,
    seed: int | None = None,
    observation_space: gym.Space[Any] | None = None,
    action_space: gym.Space[Any] | None = None,
    deterministic: bool = True,
    trusted: bool = False,
    device: str = "cpu",
    best: bool = False,
    raw_observations: bool = False,
) -> Agent:
    """An agent from the zoo by name, from RL Zoo's folders or an SB3 ``.zip``, or from a Python file.

    A zoo name may end in ``@k`` to pick training seed ``k`` (``"ppo-CartPole-v1@2"``), or take ``seed=k``;
    the default is seed 0. A zoo agent loads its weights without running code. A folder of the same name as a
    zoo agent (a published agent's, say) is taken for the folder, unless a seed is given.

    An RL Zoo run folder (``logs/ppo/CartPole-v1_1``), a folder in the flat layout of RL Zoo's published agents, or
    an SB3 zip loads with what it was trained behind (:func:`rlwrappers.agents.rl_zoo.read_training`): its
    ``VecNormalize`` statistics become the agent's input step, and the rest (env wrappers, frame stack) is on
    the agent's :attr:`~rlwrappers.agents.SB3Agent.training` for the evaluation to build its env with. Reading
    these files unpickles them, which runs code stored in them: load only files you trust
    (:func:`rlwrappers.agents.load_sb3`).

    ``"path/to/file.py:make_agent"`` runs the file and returns ``make_agent(observation_space, action_space)``,
    an Agent (a CleanRL network in a :class:`~rlwrappers.agents.TorchAgent`, for instance;
    :func:`rlwrappers.agents.files.load_script`).

    Args:
        source: a zoo name (``rlwrappers list agents`` shows them), an RL Zoo folder, an SB3 zip, or
            ``FILE.py:FUNCTION``.
        seed: the zoo agent's training seed.
        observation_space: the env's observation space (as the agent sees it, frame stack included): SB3 image
            agents trained on channel-first input transpose it, and a Python file's function receives it.
        action_space: the env's action space, for a Python file's function.
        deterministic: act greedily (an agent made by a Python file keeps its own). A zoo DQN agent that is
            not deterministic acts epsilon-greedily with its final exploration rate (``exploration_final_eps``).
        trusted: say that the files are trusted, which silences their warning (zoo agents never warn).
        device: where the network runs, a torch device such as "cpu" or "cuda" (it must be there); actions
            and outputs come back on the CPU either way.
        best: RL Zoo's ``best_model.zip`` of a run folder instead of its final model (with the final statistics).
        raw_observations: play an SB3 agent on raw observations even where ``VecNormalize`` statistics are found.

    Raises:
        UnknownName: ``source`` is neither a zoo name nor a file or folder (with a suggestion).
        MissingFile: the file, or the zoo agent's weights, are missing.
    """
    if not isinstance(source, (str, os.PathLike)):
        raise InvalidType(f"`agent` must be a zoo name or a file path, received {source!r}")
    for name, flag in (("best", best), ("raw_observations", raw_observations)):
        if not isinstance(flag, bool):
            raise InvalidType(f"`{name}` must be a bool, received {flag!r}")
    script = script_source(source)
    if script is not None:
        return load_script(*script, observation_space, action_space, trusted=trusted)
    path = Path(source)
    if isinstance(source, AgentFiles):
        best, raw_observations = best or source.best, raw_observations or source.raw_observations
    if path.suffix == ".zip" or (path.is_dir() and seed is None):  # a seed names a zoo agent, as NAME@SEED does
        if seed is not None:
            raise InvalidArgument(f"`seed` applies to zoo agents only, and {str(source)!r} is a file")
        return _trained_agent(path, observation_space, deterministic, trusted, device, best, raw_observations)
    if path.is_file():
        raise InvalidArgument(f"`agent` {str(source)!r} is a file but neither an SB3 .zip nor FILE.py:FUNCTION")
    if best or raw_observations:
        raise InvalidArgument(f"`best` and `raw_observations` apply to RL Zoo folders and zips, not {str(source)!r}")
    name, at, given = str(source).partition("@")
    if at and not given.isdigit():
        raise InvalidArgument(f"`agent` {str(source)!r}: the part after '@' must be a training seed")
    if at and seed is not None:
        raise InvalidArgument(f"`agent` {str(source)!r} names its seed; pass seed={seed!r} or '@', not both")
    return _zoo_agent(name, int(given) if at else 0 if seed is None else seed, deterministic, check_device(device))


def _trained_agent(
    path: Path,
    observation_space: gym.Space[Any] | None,
    deterministic: bool,
    trusted: bool,
    device: str,
    best: bool,
    raw_observations: bool,
) -> SB3Agent:
    """The SB3 agent of an RL Zoo folder or a zip, with its statistics and what it was trained behind."""
    if path.is_dir() and not trusted:  # one warning for the folder, its model included
        warn_untrusted(path, "reads RL Zoo's YAML files and pickles, which runs code stored in them")
        trusted = True
    training = read_training(path, best=best, raw_observations=raw_observations)
    agent = load_sb3(
        training.model, observation_space=observation_space, deterministic=deterministic, trusted=trusted, device=device
    )
    normalization = training.normalization
    if normalization is not None and training.frame_stack:
        normalization = normalization.stacked(training.frame_stack, _stack_axis(normalization, agent, training))
    agent.normalization = normalization
    agent.training = training
    return agent


def _stack_axis(normalization: Normalization, agent: SB3Agent, training: Training) -> int:
    """The axis along which frames of the statistics' shape stack to the agent's observations."""
    single, stacked = np.shape(normalization.mean), agent.observation_space.shape or ()
    frames = training.frame_stack
    axes = [
        k
        for k in range(len(single))
        if len(stacked) == len(single)
        and stacked[k] == single[k] * frames
        and all(stacked[j] == single[j] for j in range(len(single)) if j != k)
    ]
    if not axes:
        raise IncompatibleSpace(
            f"the statistics of {training.model!r} have shape {single}, and {frames} stacked frames of it"
            f" cannot make the agent's observations of shape {stacked}"
        )
    return axes[-1]


def _zoo_agent(name: str, seed: int, deterministic: bool, device: str = "cpu") -> SB3Agent:
    """The zoo agent ``name`` trained with ``seed``."""
    info = card(name)
    seeds = info["seeds"]
    if str(seed) not in seeds:
        raise InvalidArgument(f"`seed` must be one of {sorted(int(s) for s in seeds)} for {name!r}, received {seed!r}")
    entry = seeds[str(seed)]
    path = DIRECTORY / entry["file"]
    if not path.exists():
        raise MissingFile(
            f"the weights of {name!r} seed {seed} are missing: expected {str(path)!r};"
            " run `python scripts/train_zoo.py` to train them"
        )
    data = path.read_bytes()
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise InvalidArgument(
            f"{str(path)!r} does not match the SHA-256 on its card; retrain with scripts/train_zoo.py"
        )
    torch = require("torch", purpose="zoo agents")
    sb3 = require("stable_baselines3", purpose="zoo agents")
    algo = getattr(sb3, info["algo"])
    from rlwrappers.ladders.preprocessing import build_env

    env = build_env(info["env_id"], {}, info.get("preprocessing"))  # the env as the agent saw it in training
    space = env.observation_space
    policy = algo.policy_aliases[info["policy"]](
        _policy_space(space), env.action_space, lambda _: 0.0, **_policy_kwargs(info["policy_kwargs"])
    )
    env.close()
    state = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    module = policy if info["module"] == "policy" else getattr(policy, info["module"])
    module.load_state_dict(state)
    epsilon = None if deterministic or info["algo"] != "DQN" else _final_epsilon(algo, info["hyperparameters"])
    return SB3Agent(policy.to(device), deterministic=deterministic, epsilon=epsilon, observation_space=space)


def _final_epsilon(algo: Any, hyperparameters: dict[str, Any]) -> float:
    """A DQN agent's exploration rate at the end of its training: what its model's ``exploration_rate`` was."""
    default = inspect.signature(algo).parameters["exploration_final_eps"].default
    return float(hyperparameters.get("exploration_final_eps", default))


def _policy_space(space: gym.Space[Any]) -> gym.Space[Any]:
    """The space SB3 built the policy on: channel-last images are transposed (SB3's ``VecTransposeImage``)."""
    from stable_baselines3.common.preprocessing import is_image_space, is_image_space_channels_first
    from stable_baselines3.common.vec_env import VecTransposeImage

    if isinstance(space, gym.spaces.Box) and is_image_space(space) and not is_image_space_channels_first(space):
        return VecTransposeImage.transpose_space(space)
    return space


def _policy_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    """Policy keyword arguments from a card: activation functions are stored by name."""
    out = dict(kwargs)
    if "activation_fn" in out:
        torch = require("torch")
        out["activation_fn"] = getattr(torch.nn, out["activation_fn"])
    return out
