"""Agents from files: Stable-Baselines3 zips.

Loading an SB3 ``.zip`` unpickles code stored in the file, so :func:`load_sb3` opens only files you trust, and
says so once per file with an :class:`~rlwrappers.error.UntrustedFileWarning` unless told ``trusted=True``.
The agent zoo (:func:`rlwrappers.zoo.load_agent`) ships weights that load without running code, and never warns.
"""

from __future__ import annotations

import inspect
import json
import os
import warnings
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import gymnasium as gym

from rlwrappers._optional import require
from rlwrappers.agents.adapters import SB3Agent
from rlwrappers.error import InvalidArgument, InvalidType, MissingFile, UntrustedFileWarning

__all__ = ["check_device", "load_sb3", "sb3_algorithm"]

#: SB3 algorithm to load a zip with, by the module of its pickled policy class.
_SB3_BY_POLICY_MODULE: Final[Mapping[str, str]] = {
    "stable_baselines3.common.policies": "PPO",  # PPO and A2C share ActorCriticPolicy: both act alike
    "stable_baselines3.dqn.policies": "DQN",
    "stable_baselines3.sac.policies": "SAC",
    "stable_baselines3.td3.policies": "TD3",
}

#: The files this process has warned about (resolved paths): each file warns once.
_WARNED: set[Path] = set()


def _outside_the_package() -> int:
    """The ``stacklevel`` of the innermost caller outside rlwrappers: a warning points at the user's line."""
    package = str(Path(__file__).parents[1])
    frame, level = inspect.currentframe(), 0
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    return level


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
    trusted: bool = False,
    device: str = "cpu",
) -> SB3Agent:
    """The agent of a Stable-Baselines3 ``.zip`` file, as an :class:`~rlwrappers.agents.adapters.SB3Agent`.

    The algorithm is read from the zip's JSON data; the model is unpickled, which runs code stored in the
    file: load only files you trust. The first load of each file warns (:class:`UntrustedFileWarning`, naming
    the file) unless ``trusted=True``.

    Args:
        path: the zip.
        observation_space: the env's observation space, for SB3 image agents trained on channel-first input.
        deterministic: act greedily.
        trusted: say that the file is trusted, which silences the warning.
        device: where the network runs, a torch device such as "cpu" or "cuda:0" (it must be there).

    Raises:
        MissingFile: no file at ``path``.
        InvalidArgument: the file is not an SB3 zip rlwrappers can load.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidType(f"`path` must be the path of an SB3 .zip, received {path!r}")
    if not Path(path).exists():
        raise MissingFile(f"`agent` file {str(path)!r} does not exist")
    if not isinstance(trusted, bool):
        raise InvalidType(f"`trusted` must be a bool, received {trusted!r}")
    resolved = Path(path).resolve()
    if not trusted and resolved not in _WARNED:
        _WARNED.add(resolved)
        warnings.warn(
            f"loading {str(path)!r} unpickles and so runs code stored in it (an SB3 zip is a pickle): load only"
            " files you trust, and pass trusted=True to say you do",
            UntrustedFileWarning,
            stacklevel=_outside_the_package(),
        )
    where = check_device(device)
    sb3 = require("stable_baselines3", purpose="loading SB3 agents")
    model = getattr(sb3, sb3_algorithm(path)).load(path, device=where)
    return SB3Agent(model, deterministic=deterministic, observation_space=observation_space)


def check_device(device: Any) -> str:
    """``device`` checked as a torch device this machine has; SB3 would quietly fall back to the CPU instead."""
    torch = require("torch", purpose="agent networks")
    if not isinstance(device, str):
        raise InvalidType(f"`device` must be a torch device name such as 'cpu' or 'cuda', received {device!r}")
    try:
        where = torch.device(device)
    except RuntimeError:
        raise InvalidArgument(
            f"`device` must be a torch device name such as 'cpu' or 'cuda', received {device!r}"
        ) from None
    if where.type == "cuda" and not torch.cuda.is_available():
        raise InvalidArgument(f"`device` {device!r} asks for a GPU, and torch sees none on this machine")
    if where.type not in ("cpu", "cuda"):
        raise InvalidArgument(f"`device` must be a CPU or CUDA device, received {device!r}")
    return device
