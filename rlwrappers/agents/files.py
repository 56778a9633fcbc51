"""Agents from files: Stable-Baselines3 zips, and Python files that build an agent (CleanRL networks).

Loading an SB3 ``.zip`` unpickles code stored in the file, so :func:`load_sb3` opens only files you trust, and
says so once per file with an :class:`~rlwrappers.error.UntrustedFileWarning` unless told ``trusted=True``.
The agent zoo (:func:`rlwrappers.zoo.load_agent`) ships weights that load without running code, and never warns.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import inspect
import json
import os
import sys
import warnings
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import gymnasium as gym
import numpy as np

from rlwrappers._optional import require
from rlwrappers.agents.adapters import SB3Agent
from rlwrappers.agents.protocol import Agent, fits, stack_observations
from rlwrappers.agents.training import Normalization
from rlwrappers.error import (
    IncompatibleSpace,
    InvalidArgument,
    InvalidType,
    MissingFile,
    NotDifferentiable,
    UntrustedFileWarning,
)

__all__ = ["check_device", "load_script", "load_sb3", "sb3_algorithm", "script_source", "warn_untrusted"]

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


def warn_untrusted(path: str | os.PathLike[str], what: str) -> None:
    """Warns once per file that reading ``path`` ``what`` (runs code), pointing at the user's line."""
    resolved = Path(path).resolve()
    if resolved in _WARNED:
        return
    _WARNED.add(resolved)
    warnings.warn(
        f"loading {str(path)!r} {what}: load only files you trust, and pass trusted=True to say you do",
        UntrustedFileWarning,
        stacklevel=_outside_the_package(),
    )


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
    normalization: Normalization | None = None,
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
        normalization: the ``VecNormalize`` statistics the model was trained behind
            (:mod:`rlwrappers.agents.rl_zoo` finds them beside it).

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
    if not trusted:
        warn_untrusted(path, "unpickles and so runs code stored in it (an SB3 zip is a pickle)")
    where = check_device(device)
    sb3 = require("stable_baselines3", purpose="loading SB3 agents")
    model = getattr(sb3, sb3_algorithm(path)).load(path, device=where)
    return SB3Agent(
        model, deterministic=deterministic, observation_space=observation_space, normalization=normalization
    )


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


def script_source(source: str | os.PathLike[str]) -> tuple[str, str] | None:
    """``(file, function)`` when ``source`` reads ``FILE.py:FUNCTION`` (an agent a Python file makes), else None."""
    script, colon, function = str(source).rpartition(":")
    return (script, function) if colon and script.endswith(".py") else None


def load_script(
    path: str | os.PathLike[str],
    name: str,
    observation_space: gym.Space[Any] | None,
    action_space: gym.Space[Any] | None,
    *,
    trusted: bool = False,
) -> Agent:
    """The agent that ``name(observation_space, action_space)`` in the Python file ``path`` returns.

    This is how a CleanRL network is played from the command line (``--agent agent.py:make_agent``): the file
    builds the network, loads its checkpoint and returns an :class:`~rlwrappers.agents.Agent` (a
    :class:`~rlwrappers.agents.TorchAgent` with its head, for instance). Running the file runs its code: load only
    files you trust (it warns once, unless ``trusted=True``). The agent is checked on one observation of the
    space: its outputs must fit ``action_space``.

    Raises:
        MissingFile: no file at ``path``.
        InvalidArgument: the file has no callable ``name``, or the spaces are missing.
        InvalidType: ``name`` returned something other than an Agent.
        IncompatibleSpace: the agent's actions or outputs do not fit ``action_space``.
    """
    source = Path(path)
    if not source.is_file():
        raise MissingFile(f"`agent` file {str(path)!r} does not exist")
    if observation_space is None or action_space is None:
        raise InvalidArgument(f"`agent` {str(path)!r}:{name} is made for an env: pass the env's spaces")
    if not trusted:
        warn_untrusted(source, "runs the Python code in it")
    digest = hashlib.sha256(str(source.resolve()).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(f"_rlwrappers_agent_{source.stem}_{digest}", source)
    if spec is None or spec.loader is None:
        raise InvalidArgument(f"`agent` {str(path)!r} is not a Python file that can be imported")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as an import does: dataclasses and pickling look the module up there
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[spec.name]
        raise
    make = getattr(module, name, None)
    if not callable(make):
        found = sorted(n for n, v in vars(module).items() if inspect.isfunction(v) and v.__module__ == module.__name__)
        raise InvalidArgument(f"`agent` {str(path)!r} has no function {name!r}; its functions are {found}")
    agent = make(observation_space, action_space)
    if not isinstance(agent, Agent):
        raise InvalidType(
            f"`agent` {str(path)!r}:{name} must return a rlwrappers Agent (a TorchAgent, for instance),"
            f" received {type(agent).__name__}"
        )
    _check_outputs(agent, f"{path}:{name}", observation_space, action_space)
    return agent


def _check_outputs(agent: Agent, where: str, observation_space: gym.Space[Any], action_space: gym.Space[Any]) -> None:
    """Raises :class:`IncompatibleSpace` when ``agent``'s outputs or actions for one observation do not fit."""
    if not fits(agent.action_space, action_space):
        raise IncompatibleSpace(f"`agent` {where} acts in {agent.action_space}, the env in {action_space}")
    sampler = copy.deepcopy(observation_space)  # the caller's space keeps its generator
    sampler.seed(0)
    obs = stack_observations([sampler.sample()])
    try:
        out = agent.outputs(agent.tensor(obs))
    except NotDifferentiable:
        out = None
    if out is not None:
        if isinstance(action_space, gym.spaces.Discrete) and out.scores.shape[-1] != action_space.n:
            raise IncompatibleSpace(
                f"`agent` {where} scores {out.scores.shape[-1]} actions, and the env has {action_space.n}"
            )
        if isinstance(action_space, gym.spaces.Box) and out.action is not None:
            if tuple(out.action.shape[1:]) != action_space.shape:
                raise IncompatibleSpace(
                    f"`agent` {where} outputs actions of shape {tuple(out.action.shape[1:])},"
                    f" and the env's are {action_space.shape}"
                )
    action = agent.act(obs, np.random.default_rng(0))[0]
    if not action_space.contains(np.asarray(action, dtype=action_space.dtype)):
        raise IncompatibleSpace(f"`agent` {where} acted {action!r}, outside the env's action space {action_space}")
