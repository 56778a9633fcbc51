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
import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import gymnasium as gym

from rlwrappers._optional import require
from rlwrappers.agents import Agent, SB3Agent, load_sb3
from rlwrappers.agents.files import check_device
from rlwrappers.error import InvalidArgument, InvalidType, MissingFile
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
    deterministic: bool = True,
    trusted: bool = False,
    device: str = "cpu",
) -> Agent:
    """An agent from the zoo by name, or from an SB3 ``.zip`` file.

    A zoo name may end in ``@k`` to pick training seed ``k`` (``"ppo-CartPole-v1@2"``), or take ``seed=k``;
    the default is seed 0. A zoo agent loads its weights without running code. An SB3 zip is unpickled, which
    runs code stored in the file: load only files you trust (:func:`rlwrappers.agents.load_sb3`).

    Args:
        source: a zoo name (``rlwrappers list agents`` shows them), or the path of an SB3 zip.
        seed: the zoo agent's training seed.
        observation_space: the env's observation space, for SB3 image agents trained on channel-first input.
        deterministic: act greedily.
        trusted: say that an SB3 zip is trusted, which silences its warning (zoo agents never warn).
        device: where the network runs, a torch device such as "cpu" or "cuda" (it must be there); actions
            and outputs come back on the CPU either way.

    Raises:
        UnknownName: ``source`` is neither a zoo name nor a ``.zip`` path (with a suggestion).
        MissingFile: the zip, or the zoo agent's weights, are missing.
    """
    if not isinstance(source, (str, os.PathLike)):
        raise InvalidType(f"`agent` must be a zoo name or a file path, received {source!r}")
    path = Path(source)
    if path.suffix == ".zip":
        if seed is not None:
            raise InvalidArgument(f"`seed` applies to zoo agents only, and {str(source)!r} is a file")
        return load_sb3(
            path, observation_space=observation_space, deterministic=deterministic, trusted=trusted, device=device
        )
    if path.is_dir():
        raise InvalidArgument(_not_an_agent_folder(path))
    if path.exists():
        raise InvalidArgument(f"`agent` {str(source)!r} is a file but not an SB3 .zip")
    name, at, given = str(source).partition("@")
    if at and not given.isdigit():
        raise InvalidArgument(f"`agent` {str(source)!r}: the part after '@' must be a training seed")
    if at and seed is not None:
        raise InvalidArgument(f"`agent` {str(source)!r} names its seed; pass seed={seed!r} or '@', not both")
    return _zoo_agent(name, int(given) if at else 0 if seed is None else seed, deterministic, check_device(device))


def _not_an_agent_folder(folder: Path) -> str:
    """Why a folder given as an agent is not one, and the files in it (or one level down) that may be."""
    zips = sorted(str(p) for p in (*folder.glob("*.zip"), *folder.glob("*/*.zip")))
    if not zips:
        found = "found none"
    else:
        shown = ", ".join(repr(z) for z in zips[:5]) + (f" and {len(zips) - 5} more" if len(zips) > 5 else "")
        found = f"found {shown}: pass one of them as the agent"
    return (
        f"`agent` {str(folder)!r} is a folder, not an agent: rlwrappers loads a zoo name or an SB3 .zip file."
        f" It looked for .zip files in the folder and in its subfolders, and {found}"
    )


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
    env = gym.make(info["env_id"])
    space = env.observation_space
    policy = algo.policy_aliases[info["policy"]](
        _policy_space(space), env.action_space, lambda _: 0.0, **_policy_kwargs(info["policy_kwargs"])
    )
    env.close()
    state = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
    module = policy if info["module"] == "policy" else getattr(policy, info["module"])
    module.load_state_dict(state)
    return SB3Agent(policy.to(device), deterministic=deterministic, observation_space=space)


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
