"""What an agent was trained behind: its env's wrappers, frame stack and observation normalization.

An agent only behaves as trained when it is played behind the same pipeline. RL Zoo builds that pipeline in one
order, and :class:`Training` keeps it in that order:

1. ``env_wrappers``: the config's ``env_wrapper`` entries (``AtariWrapper``, ``TimeFeatureWrapper``, ...), each an
   import path and its keyword arguments; they change time, episodes or rewards, so they run env-side, under the
   shifts;
2. ``normalization``: the observation statistics of SB3's ``VecNormalize`` (:class:`Normalization`), a stateless
   input step of the agent (between the shifts and the network);
3. ``frame_stack``: SB3's ``VecFrameStack``, in the env's slot above the shifts
   (:class:`~rlwrappers.wrappers.frames.StackFrames`);
4. the image transposition of SB3's ``VecTransposeImage``, an input step of the agent
   (:class:`~rlwrappers.agents.adapters.SB3Agent`).

:meth:`Training.record` is what ``evaluation.json`` and ``card.json`` store of it: the steps applied, with the
statistics' SHA-256. The readers of RL Zoo's folders are in :mod:`rlwrappers.agents.rl_zoo`.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import pickle
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from rlwrappers._optional import require
from rlwrappers.error import IncompatibleSpace, InvalidArgument, InvalidType, MissingFile

if TYPE_CHECKING:
    import torch

__all__ = ["RAW", "Normalization", "Training", "WrapperSpec", "describe", "read_normalization"]

#: What :meth:`Training.record` says of the observations when no statistics were applied.
RAW: Final = "raw"


@dataclass(frozen=True)
class Normalization:
    """Observation normalization exactly as SB3's ``VecNormalize`` applies it, frozen.

    ``clip((obs - mean) / sqrt(var + epsilon), -clip_obs, clip_obs)`` computed in float64, then cast to float32.
    For a Dict observation, ``mean`` and ``var`` hold one array per normalized key. Reward statistics are not
    kept: logs hold the env's own rewards.

    Attributes:
        mean: the running mean of the observations (per key for a Dict).
        var: their running variance.
        clip_obs: the bound of the normalized values.
        epsilon: added to the variance.
        file: where the statistics were read from.
        sha256: the file's SHA-256.
    """

    mean: Any
    var: Any
    clip_obs: float
    epsilon: float
    file: str
    sha256: str
    _made: dict[Any, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def scale(self, key: str | None = None) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """The mean and ``sqrt(var + epsilon)`` of the observations (of one key of a Dict) in float64."""
        mean, var = (self.mean, self.var) if key is None else (self.mean[key], self.var[key])
        return np.asarray(mean, dtype=np.float64), np.sqrt(np.asarray(var, dtype=np.float64) + self.epsilon)

    def stacked(self, frames: int, axis: int) -> Normalization:
        """The statistics of ``frames`` observations stacked along ``axis``, as a frame stack of them gives."""
        if isinstance(self.mean, Mapping):
            raise IncompatibleSpace("frame stacking applies to Box observations; these statistics are per key")
        return Normalization(
            np.concatenate([np.asarray(self.mean)] * frames, axis=axis),
            np.concatenate([np.asarray(self.var)] * frames, axis=axis),
            self.clip_obs,
            self.epsilon,
            self.file,
            self.sha256,
        )

    def apply(self, x: Any) -> Any:
        """A batch (a tensor, or a dict of them) normalized as ``VecNormalize.normalize_obs`` does; differentiable."""
        if isinstance(self.mean, Mapping):
            return {key: self._apply(value, key) if key in self.mean else value for key, value in x.items()}
        return self._apply(x, None)

    def _apply(self, x: torch.Tensor, key: str | None) -> torch.Tensor:
        mean, std = self._tensors(key, x.device)
        return ((x.double() - mean) / std).clamp(-self.clip_obs, self.clip_obs).float()

    def _tensors(self, key: str | None, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`scale` as float64 tensors on ``device``, made once per key and device."""
        made = self._made.get((key, device))
        if made is None:
            torch = require("torch", purpose="agent networks")
            mean, std = (torch.as_tensor(a, device=device) for a in self.scale(key))
            made = self._made[(key, device)] = (mean, std)
        return made

    def record(self) -> dict[str, Any]:
        """What ``evaluation.json`` stores of it."""
        return {"file": self.file, "sha256": self.sha256, "clip_obs": self.clip_obs, "epsilon": self.epsilon}


def read_normalization(path: str | os.PathLike[str]) -> Normalization | None:
    """The observation statistics of a ``VecNormalize`` pickle, or None when it does not normalize observations.

    The file is unpickled, which runs code stored in it: read only files you trust.

    Raises:
        MissingFile: no file at ``path``.
        InvalidArgument: the file holds no ``VecNormalize``.
    """
    path = Path(path)
    if not path.is_file():
        raise MissingFile(f"the normalization statistics {str(path)!r} do not exist")
    data = path.read_bytes()
    try:
        stats = pickle.loads(data)  # the caller has said the file is trusted
    except Exception as error:  # unpickling raises many types
        raise InvalidArgument(f"{str(path)!r} is not a VecNormalize pickle: {error}") from error
    if not all(hasattr(stats, name) for name in ("norm_obs", "obs_rms", "clip_obs", "epsilon")):
        raise InvalidArgument(f"{str(path)!r} holds a {type(stats).__name__}, not SB3's VecNormalize")
    if not stats.norm_obs:
        return None
    rms = stats.obs_rms
    if isinstance(rms, Mapping):
        keys = getattr(stats, "norm_obs_keys", None) or list(rms)
        mean: Any = {k: np.asarray(rms[k].mean, dtype=np.float64) for k in keys}
        var: Any = {k: np.asarray(rms[k].var, dtype=np.float64) for k in keys}
    else:
        mean, var = np.asarray(rms.mean, dtype=np.float64), np.asarray(rms.var, dtype=np.float64)
    return Normalization(
        mean, var, float(stats.clip_obs), float(stats.epsilon), str(path), hashlib.sha256(data).hexdigest()
    )


@dataclass(frozen=True)
class WrapperSpec:
    """An env wrapper by import path and keyword arguments: ``module.Class`` and its ``kwargs``."""

    path: str
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.path, str) or "." not in self.path:
            raise InvalidArgument(f"a wrapper must be named by its import path 'module.Class', received {self.path!r}")
        if not isinstance(self.kwargs, Mapping):
            raise InvalidType(f"the kwargs of wrapper {self.path!r} must be a dict, received {self.kwargs!r}")

    def load(self) -> Any:
        """The wrapper class (or function) the path names."""
        module, _, name = self.path.rpartition(".")
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as error:
            raise InvalidArgument(f"the agent's wrapper {self.path!r} cannot be imported: {error}") from error

    def __call__(self, env: gym.Env[Any, Any]) -> gym.Env[Any, Any]:
        """``env`` under the wrapper."""
        return self.load()(env, **dict(self.kwargs))

    def record(self) -> dict[str, Any]:
        """The wrapper as JSON: its path and keyword arguments."""
        return {"wrapper": self.path, "kwargs": dict(self.kwargs)}

    @classmethod
    def parse(cls, entries: Any, key: str) -> tuple[WrapperSpec, ...]:
        """RL Zoo's ``env_wrapper`` or ``vec_env_wrapper`` entry: a path, ``{path: kwargs}``, or a list of them."""
        if entries is None:
            return ()
        out = []
        for entry in entries if isinstance(entries, list) else [entries]:
            if isinstance(entry, Mapping):
                if len(entry) != 1:
                    raise InvalidArgument(f"each `{key}` entry names one wrapper, received {dict(entry)!r}")
                ((path, kwargs),) = entry.items()
                out.append(cls(path, dict(kwargs or {})))
            elif isinstance(entry, type):
                out.append(cls(f"{entry.__module__}.{entry.__qualname__}"))
            else:
                out.append(cls(entry))
        return tuple(out)


@dataclass(frozen=True)
class Training:
    """What an agent was trained behind, in RL Zoo's order, and where it was read from.

    Attributes:
        source: what the agent was read from: ``"rl-zoo-run"`` (``logs/ALGO/ENV_N/``), ``"rl-zoo-published"``
            (the flat layout of RL Zoo's published agents) or ``"sb3-zip"``.
        model: the model's file.
        env_id: the env the agent was trained on, when the source says (None for a zip alone).
        env_kwargs: its ``gym.make`` keyword arguments.
        gym_packages: the modules imported to register the env (RL Zoo's ``--gym-packages``).
        env_wrappers: the env-side wrappers, applied in order right after ``gym.make``.
        vec_env_wrappers: RL Zoo's ``vec_env_wrapper`` entries as env-side wrappers, applied after them (SB3's
            ``VecFrameStack`` as a :class:`~rlwrappers.wrappers.frames.StackFrames`).
        frame_stack: how many observations SB3's ``VecFrameStack`` stacked (0: none).
        normalization: the observation statistics, or None.
        raw_why: why the agent is played on raw observations, when it is and a reason is known.
        best: whether the model is RL Zoo's ``best_model.zip`` (with the run's final statistics).
        raw_observations: whether raw observations were asked for, whatever statistics were found.
    """

    source: str
    model: str
    env_id: str | None = None
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    gym_packages: tuple[str, ...] = ()
    env_wrappers: tuple[WrapperSpec, ...] = ()
    vec_env_wrappers: tuple[WrapperSpec, ...] = ()
    frame_stack: int = 0
    normalization: Normalization | None = None
    raw_why: str | None = None
    best: bool = False
    raw_observations: bool = False

    def record(self) -> dict[str, Any]:
        """The steps applied, for ``evaluation.json`` and ``card.json``, in RL Zoo's order."""
        out: dict[str, Any] = {"source": self.source, "model": self.model}
        if self.best:
            out["best_model"] = True
        if self.raw_observations:
            out["raw_observations"] = True
        if self.env_id is not None:
            out["env_id"] = self.env_id
        if self.env_kwargs:
            out["env_kwargs"] = dict(self.env_kwargs)
        if self.gym_packages:
            out["gym_packages"] = list(self.gym_packages)
        if self.env_wrappers:
            out["env_wrappers"] = [w.record() for w in self.env_wrappers]
        if self.vec_env_wrappers:
            out["vec_env_wrappers"] = [w.record() for w in self.vec_env_wrappers]
        if self.normalization is not None:
            out["normalization"] = self.normalization.record()
        else:
            out["observations"] = RAW
            if self.raw_why is not None:
                out["raw_because"] = self.raw_why
        if self.frame_stack:
            out["frame_stack"] = self.frame_stack
        return out


def describe(record: Mapping[str, Any]) -> str:
    """What an agent was played behind, in words, from its record (:meth:`Training.record`)."""
    parts = [f"{record['model']} ({'best model, ' if record.get('best_model') else ''}{record['source']})"]
    if "env_id" in record:
        parts.append(f"trained on {record['env_id']}")
    for key in ("env_wrappers", "vec_env_wrappers"):
        parts += [f"env wrapper {w['wrapper']}({_kwargs(w['kwargs'])})" for w in record.get(key, ())]
    if "normalization" in record:
        stats = record["normalization"]
        parts.append(f"VecNormalize statistics {stats['file']} (SHA-256 {stats['sha256'][:12]})")
    else:
        parts.append(f"raw observations ({record.get('raw_because', 'no statistics')})")
    if record.get("frame_stack"):
        parts.append(f"{record['frame_stack']} stacked frames")
    if record.get("transposed"):
        parts.append("images transposed to channel-first")
    return "; ".join(parts)


def _kwargs(kwargs: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
