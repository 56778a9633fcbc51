"""Agents from files: Stable-Baselines3 zips.

Loading an SB3 ``.zip`` unpickles code stored in the file, so :func:`load_sb3` opens only files you trust;
the agent zoo (:func:`rlwrappers.zoo.load_agent`) ships weights that load without running code.
"""

from __future__ import annotations

import json
import os
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import gymnasium as gym

from rlwrappers._optional import require
from rlwrappers.agents.adapters import SB3Agent
from rlwrappers.error import InvalidArgument, InvalidType, MissingFile

__all__ = ["load_sb3", "sb3_algorithm"]

#: SB3 algorithm to load a zip with, by the module of its pickled policy class.
_SB3_BY_POLICY_MODULE: Final[Mapping[str, str]] = {
    "stable_baselines3.common.policies": "PPO",  # PPO and A2C share ActorCriticPolicy: both act alike
    "stable_baselines3.dqn.policies": "DQN",
    "stable_baselines3.sac.policies": "SAC",
    "stable_baselines3.td3.policies": "TD3",
}


def sb3_algorithm(path: str | os.PathLike[str]) -> str:
    """The SB3 algorithm that loads the zip at ``path``, read from its JSON data without unpickling."""
    try:
        with zipfile.ZipFile(path) as archive:
            data = json.loads(archive.read("data"))
    except (OSError, KeyError, zipfile.BadZipFile, json.JSONDecodeError) as exc:
        raise InvalidArgument(f"{str(path)!r} is not a Stable-Baselines3 zip: {exc}") from exc
    module = data.get("policy_class", {}).get("__module__", "")
    if module not in _SB3_BY_POLICY_MODULE:
        raise InvalidArgument(f"{str(path)!r} holds a policy from {module!r}, which rlwrappers cannot load")
    return _SB3_BY_POLICY_MODULE[module]


def load_sb3(
    path: str | os.PathLike[str],
    *,
    observation_space: gym.Space[Any] | None = None,
    deterministic: bool = True,
) -> SB3Agent:
    """The agent of a Stable-Baselines3 ``.zip`` file, as an :class:`~rlwrappers.agents.adapters.SB3Agent`.

    The algorithm is read from the zip's JSON data; the model is unpickled, which runs code stored in the
    file: load only files you trust.

    Args:
        path: the zip.
        observation_space: the env's observation space, for SB3 image agents trained on channel-first input.
        deterministic: act greedily.

    Raises:
        MissingFile: no file at ``path``.
        InvalidArgument: the file is not an SB3 zip rlwrappers can load.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidType(f"`path` must be the path of an SB3 .zip, received {path!r}")
    if not Path(path).exists():
        raise MissingFile(f"`agent` file {str(path)!r} does not exist")
    sb3 = require("stable_baselines3", purpose="loading SB3 agents")
    model = getattr(sb3, sb3_algorithm(path)).load(path, device="cpu")
    return SB3Agent(model, deterministic=deterministic, observation_space=observation_space)
