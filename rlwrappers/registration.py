"""Perturbed env IDs: :func:`register` and the catalogue registered when ``rlwrappers`` is imported.

A perturbed ID is a copy of the base env's spec with one more entry in Gymnasium's ``additional_wrappers``
(a :class:`~rlwrappers.core.Perturb` layer), so ``gym.make``, vector envs, SB3 and RL Zoo build it like any
other ID. IDs are derived from the spec text alone, so they are the same in every process.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec, WrapperSpec

from rlwrappers.core import Entry, Perturb, Perturbation
from rlwrappers.error import InvalidArgument, UnknownName, did_you_mean

__all__ = [
    "CATALOGUE",
    "NAMESPACE",
    "CatalogueEntry",
    "EnvFactory",
    "base_ids",
    "catalogue",
    "make_fn",
    "register",
    "register_catalogue",
]

NAMESPACE: Final = "rlwrappers"
_PERTURB_ENTRY_POINT: Final = f"{Perturb.__module__}:{Perturb.__name__}"
_BASES: dict[str, str] = {}


def base_ids() -> dict[str, str]:
    """Every ID registered through :func:`register` in this process, mapped to its base env's ID."""
    return dict(_BASES)


def _base_spec(base_id: str) -> EnvSpec:
    try:
        return gym.spec(base_id)
    except gym.error.Error:
        known = list(gym.registry)
        raise UnknownName(f"no env registered as `{base_id}`.{did_you_mean(base_id, known)}") from None


def _slug(entries: list[Entry], kwargs: Mapping[str, Any]) -> str:
    """A readable name for the perturbations plus a digest of the full spec.

    The digest covers every parameter (defaults too) and the base env's keyword arguments.

    The readable part alone can be ambiguous (``label='a-b'`` and ``label='a_b'`` read the same); the digest
    tells them apart, and it changes whenever any parameter does, so an ID never changes meaning.
    """
    readable = re.sub(r"[^\w.]+", "_", "-".join(str(e) for e in entries)).strip("_")
    spec: list[Any] = [e.to_dict() for e in entries]
    full = json.dumps([spec, dict(kwargs)] if kwargs else spec, sort_keys=True, default=repr)
    return f"{readable}-{hashlib.sha1(full.encode()).hexdigest()[:8]}"


def register(
    base_id: str,
    *specs: str | Mapping[str, Any] | Perturbation,
    when: Any = None,
    name: str | None = None,
    **kwargs: Any,
) -> str:
    """Registers ``base_id`` with perturbations added, and returns the new ID.

    The ID is ``rlwrappers/<BaseName>-<perturbations>-<digest>-v<version>`` unless ``name`` is given, in which
    case it is ``rlwrappers/<name>-v<version>``. ``<perturbations>`` is the spec text made ID-safe and
    ``<digest>`` the first 8 hex digits of the SHA-1 of the full spec (every parameter and the base env's
    keyword arguments): the same in every process, and distinct for distinct perturbations. Registering the
    same ID again with the same perturbations is a no-op; with different ones it is an error.

    Args:
        base_id: a registered env ID, e.g. "CartPole-v1".
        *specs: perturbation spec strings, dicts or objects, as for :func:`rlwrappers.wrap`.
        when: schedule for the specs that do not set their own.
        name: the new env's name (without namespace and version).
        **kwargs: keyword arguments for the base env (e.g. ``frameskip=1``), stored in the new spec.

    Example:
        >>> import gymnasium as gym, rlwrappers as rw
        >>> env_id = rw.register("CartPole-v1", "obs_noise(std=0.1)")
        >>> env_id
        'rlwrappers/CartPole-obs_noise-2ce917cd-v1'
        >>> gym.make(env_id).spec.additional_wrappers[-1].kwargs
        {'perturbations': [{'name': 'obs_noise', 'std': 0.1, 'dist': 'gaussian', 'clip': True, 'when': 'always'}]}
    """
    base = _base_spec(base_id)
    entries = [Entry.parse(s, when) for s in specs]
    if not entries:
        raise InvalidArgument(f"`register` needs at least one perturbation spec for `{base_id}`, received none")
    if name is None:
        name = f"{base.name}-{_slug(entries, kwargs)}"
    elif not re.fullmatch(r"[\w.-]+", name):
        raise InvalidArgument(f"`name` must use letters, digits, '_', '.' and '-', received {name!r}")
    env_id = gym.envs.registration.get_env_id(NAMESPACE, name, base.version)
    layer = WrapperSpec(Perturb.__name__, _PERTURB_ENTRY_POINT, {"perturbations": [e.to_dict() for e in entries]})
    new: dict[str, Any] = dict(
        id=env_id,
        entry_point=base.entry_point,
        reward_threshold=base.reward_threshold,
        nondeterministic=base.nondeterministic,
        max_episode_steps=base.max_episode_steps,
        order_enforce=base.order_enforce,
        disable_env_checker=base.disable_env_checker,
        additional_wrappers=(*base.additional_wrappers, layer),
        kwargs={**base.kwargs, **kwargs},
    )
    existing = gym.registry.get(env_id)
    if existing is not None:
        if existing.additional_wrappers == new["additional_wrappers"] and existing.kwargs == new["kwargs"]:
            return env_id
        raise InvalidArgument(
            f"`{env_id}` is already registered with a different spec: wrappers "
            f"{[w.kwargs for w in existing.additional_wrappers]} and kwargs {existing.kwargs}"
        )
    gym.register(**new)
    _BASES[env_id] = base_id
    caller = inspect.currentframe()
    if caller is not None and caller.f_back is not None and caller.f_back.f_globals.get("__name__") == "__main__":
        warnings.warn(
            f"`{env_id}` is registered by the main script, so worker processes started with spawn or forkserver"
            " (SB3's SubprocVecEnv on macOS and Windows, or with CUDA) will not know it: give them"
            f" rlwrappers.registration.make_fn({env_id!r}) instead of the ID",
            UserWarning,
            stacklevel=2,
        )
    return env_id


@dataclass(frozen=True)
class EnvFactory:
    """A picklable ``env_fn`` that makes an env from its full registered spec, in any process.

    A worker started with spawn or forkserver imports the library afresh: an ID that the main script registered
    does not exist there, but the spec this factory carries makes the same env.
    """

    spec: EnvSpec
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __call__(self, **kwargs: Any) -> gym.Env[Any, Any]:
        """Makes the env, with the factory's keyword arguments updated by ``kwargs``."""
        return gym.make(self.spec, **{**self.kwargs, **kwargs})


def make_fn(env_id: str, **kwargs: Any) -> EnvFactory:
    """A picklable factory of the registered env ``env_id`` (with ``kwargs`` for ``gym.make``), for workers.

    Pass it where a vector env wants an ``env_fn``: ``SubprocVecEnv([make_fn(env_id)] * 8, start_method="spawn")``
    or ``make_vec_env(make_fn(env_id), n_envs=8, vec_env_cls=SubprocVecEnv)``.

    Raises:
        UnknownName: ``env_id`` is not registered in this process.
    """
    if env_id not in gym.registry:
        raise UnknownName(f"`env_id` {env_id!r} is not registered.{did_you_mean(env_id, gym.registry)}")
    return EnvFactory(gym.spec(env_id), dict(kwargs))


@dataclass(frozen=True)
class CatalogueEntry:
    """One ID of the catalogue: its base env, its perturbation and what it models."""

    id: str
    base_id: str
    spec: str
    doc: str


_CLASSIC: Final = ("CartPole-v1", "Pendulum-v1", "MountainCar-v0", "MountainCarContinuous-v0", "Acrobot-v1")
_MUJOCO: Final = ("InvertedPendulum-v5", "Hopper-v5", "HalfCheetah-v5", "Walker2d-v5", "Ant-v5")
_CONTINUOUS: Final = ("Pendulum-v1", "MountainCarContinuous-v0", *_MUJOCO)

#: A dynamics shift per base env: the constant changed and by how much.
_SHIFTS: Final[Mapping[str, str]] = {
    "CartPole-v1": "dynamics_shift(scales={'length': 2.0})",
    "Pendulum-v1": "dynamics_shift(values={'g': 12.0})",
    "MountainCar-v0": "dynamics_shift(scales={'force': 0.8})",
    "MountainCarContinuous-v0": "dynamics_shift(scales={'power': 0.8})",
    "Acrobot-v1": "dynamics_shift(scales={'LINK_MASS_2': 1.5})",
    **{env_id: "dynamics_shift(scales={'body_mass': 1.25})" for env_id in _MUJOCO},
}

#: Observation-noise scale per base env, about a tenth of a typical observation's spread.
_OBS_STD: Final[Mapping[str, float]] = {
    "CartPole-v1": 0.05,
    "Pendulum-v1": 0.05,
    "MountainCar-v0": 0.01,
    "MountainCarContinuous-v0": 0.01,
    "Acrobot-v1": 0.05,
    **{env_id: 0.05 for env_id in _MUJOCO},
}


def _catalogue_rows() -> list[tuple[str, str, str, str]]:
    """(base id, name suffix, spec, doc) for every catalogue ID."""
    rows = []
    for base in (*_CLASSIC, *_MUJOCO):
        action = "action_noise(std=0.1)" if base in _CONTINUOUS else "action_noise(p=0.1)"
        action_doc = (
            "Gaussian noise, std 0.1, on every action"
            if base in _CONTINUOUS
            else "a uniformly random action replaces the agent's with probability 0.1"
        )
        rows += [
            (base, "ObsNoise", f"obs_noise(std={_OBS_STD[base]})", f"Gaussian observation noise, std {_OBS_STD[base]}"),
            (base, "ActionNoise", action, action_doc),
            (base, "RewardNoise", "reward_noise(std=0.1)", "Gaussian reward noise, std 0.1"),
            (base, "InitNoise", "init_noise(std=0.1)", "Gaussian noise, std 0.1, on the state right after reset"),
            (base, "Sticky", "sticky_action(p=0.25)", "sticky actions with probability 0.25 (Machado et al.)"),
            (base, "Shifted", _SHIFTS[base], f"dynamics shift from reset on: {_SHIFTS[base][15:-1]}"),
        ]
    return rows


CATALOGUE: list[CatalogueEntry] = []


def register_catalogue() -> None:
    """Registers the catalogue's IDs (importing ``rlwrappers`` does it; registering again changes nothing)."""
    listed = {entry.id for entry in CATALOGUE}
    for base, suffix, spec, doc in _catalogue_rows():
        base_name = gym.envs.registration.parse_env_id(base)[1]
        env_id = register(base, spec, name=f"{base_name}-{suffix}")
        if env_id not in listed:
            CATALOGUE.append(CatalogueEntry(env_id, base, spec, doc))


def catalogue() -> list[CatalogueEntry]:
    """The IDs registered when ``rlwrappers`` is imported, each with its base env, perturbation and doc.

    Example:
        >>> import rlwrappers as rw
        >>> entry = rw.catalogue()[0]
        >>> entry.id, entry.spec
        ('rlwrappers/CartPole-ObsNoise-v1', 'obs_noise(std=0.05)')
    """
    return list(CATALOGUE)
