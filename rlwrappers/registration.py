"""Perturbed env IDs: :func:`register` and the catalogue registered when ``rlwrappers`` is imported.

A perturbed ID is a copy of the base env's spec with one more entry in Gymnasium's ``additional_wrappers``
(a :class:`~rlwrappers.core.Perturb` layer), so ``gym.make``, vector envs, SB3 and RL Zoo build it like any
other ID. IDs are derived from the spec text alone, so they are the same in every process.

:func:`register` also writes each new spec, as JSON, into the environment variable ``RLWRAPPERS_REGISTERED``.
Child processes inherit it (workers started with spawn or forkserver included), and importing ``rlwrappers``
there registers the IDs it holds, so an ID registered by a main script can be passed to workers as is.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import os
import re
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec, WrapperSpec

from rlwrappers.core import Entry, Perturb, Perturbation
from rlwrappers.error import InvalidArgument, InvalidType, UnknownName, did_you_mean
from rlwrappers.uncertainty import uncertainty_set

__all__ = [
    "CATALOGUE",
    "NAMESPACE",
    "REGISTERED_VAR",
    "CatalogueEntry",
    "EnvFactory",
    "base_ids",
    "catalogue",
    "make_fn",
    "register",
    "register_catalogue",
]

NAMESPACE: Final = "rlwrappers"
#: The environment variable holding the specs of the IDs :func:`register` added, for child processes.
REGISTERED_VAR: Final = "RLWRAPPERS_REGISTERED"
#: The most characters :data:`REGISTERED_VAR` holds, about 500 a spec: Linux caps one environment variable at
#: 128 KiB, Windows at 32,767 characters.
_VAR_LIMIT: Final = 30_000 if sys.platform == "win32" else 120_000
_PERTURB_ENTRY_POINT: Final = f"{Perturb.__module__}:{Perturb.__name__}"
_BASES: dict[str, str] = {}
#: IDs registered from :data:`REGISTERED_VAR`; this process's own :func:`register` calls replace them.
_INHERITED: set[str] = set()
#: Whether :func:`register` has warned that an ID from the main script cannot reach workers.
_WARNED = False


def base_ids() -> dict[str, str]:
    """Every ID registered through :func:`register` here or in a parent process, mapped to its base env's ID."""
    return dict(_BASES)


def _base_spec(base_id: str) -> EnvSpec:
    if not isinstance(base_id, str):
        raise InvalidType(f"`base_id` must be a registered env ID (a string), received {base_id!r}")
    try:
        return gym.spec(base_id)
    except gym.error.Error:
        known = list(gym.registry)
        raise UnknownName(f"no env registered as `{base_id}`.{did_you_mean(base_id, known)}") from None


def _check_kwargs(base: EnvSpec, kwargs: Mapping[str, Any]) -> None:
    """Raises :class:`InvalidArgument` for a keyword argument the base env's entry point does not take."""
    entry: Any = base.entry_point
    creator = gym.envs.registration.load_env_creator(entry) if isinstance(entry, str) else entry
    try:
        parameters = inspect.signature(creator).parameters
    except (TypeError, ValueError):  # a callable without a signature to read: gym.make will say
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    taken = [name for name, p in parameters.items() if p.kind is not inspect.Parameter.POSITIONAL_ONLY]
    for key in kwargs:
        if key not in taken:
            raise InvalidArgument(
                f"`{base.id}` takes no keyword argument `{key}`; it takes {taken}.{did_you_mean(key, taken)}"
            )


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

    The new spec is also written, as JSON, into the environment variable ``RLWRAPPERS_REGISTERED``. Child
    processes started from then on (SubprocVecEnv workers, whatever their start method) register it when they
    import ``rlwrappers``, and give way where they register the same ID themselves. Called from the main script
    for an ID that some workers cannot know (its spec is not JSON, or a forkserver started earlier), it warns
    once per process, naming :func:`make_fn`.

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
    env_id, added = _register(base_id, specs, when, name, kwargs)
    if added:
        unreachable = _record(env_id)
        caller = inspect.currentframe()
        if caller is not None and caller.f_back is not None and caller.f_back.f_globals.get("__name__") == "__main__":
            _warn_unreachable(env_id, unreachable)
    return env_id


def _register(
    base_id: str,
    specs: tuple[str | Mapping[str, Any] | Perturbation, ...],
    when: Any,
    name: str | None,
    kwargs: Mapping[str, Any],
) -> tuple[str, bool]:
    """Registers the perturbed env; returns its ID and whether this call added it."""
    base = _base_spec(base_id)
    entries = [Entry.parse(s, when) for s in specs]
    if not entries:
        raise InvalidArgument(f"`register` needs at least one perturbation spec for `{base_id}`, received none")
    if kwargs:
        _check_kwargs(base, kwargs)
    if name is None:
        name = f"{base.name}-{_slug(entries, kwargs)}"
    elif not isinstance(name, str):
        raise InvalidType(f"`name` must be a string, received {name!r}")
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
    if existing is not None and env_id not in _INHERITED:
        if existing.additional_wrappers == new["additional_wrappers"] and existing.kwargs == new["kwargs"]:
            return env_id, False
        raise InvalidArgument(
            f"`{env_id}` is already registered with a different spec: wrappers "
            f"{[w.kwargs for w in existing.additional_wrappers]} and kwargs {existing.kwargs}"
        )
    gym.registry.pop(env_id, None)  # a registration inherited from a parent process gives way to this one
    _INHERITED.discard(env_id)
    gym.register(**new)
    _BASES[env_id] = base_id
    return env_id, True


def _survives_json(value: Any) -> bool:
    """Whether ``value`` comes back from JSON equal to itself."""
    try:
        return bool(json.loads(json.dumps(value)) == value)
    except (TypeError, ValueError):
        return False


def _portable(spec: EnvSpec) -> dict[str, Any] | str:
    """The spec as a JSON object that rebuilds the same env, or why there is none.

    A perturbation layer's tuples come back as lists, which the layer parses the same; every other keyword
    argument must come back equal.
    """
    try:
        data: dict[str, Any] = json.loads(spec.to_json())
    except (TypeError, ValueError):
        return "its spec holds Python objects (an entry point or keyword argument) that JSON cannot carry"
    others = [w.kwargs for w in spec.additional_wrappers if w.entry_point != _PERTURB_ENTRY_POINT]
    if not _survives_json([spec.kwargs, others]):
        return "its keyword arguments do not come back equal from JSON (tuples, keys that are not strings)"
    return data


def _read() -> dict[str, Any]:
    """The entries of :data:`REGISTERED_VAR`, or none where it is unset or not a JSON object."""
    try:
        found = json.loads(os.environ.get(REGISTERED_VAR) or "{}")
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _record(env_id: str) -> str | None:
    """Adds the spec of ``env_id`` to :data:`REGISTERED_VAR`; returns why child processes cannot make it, if so.

    An ID whose spec cannot go is still listed, with the reason, so that a worker making it says what to do.
    """
    entries = _read()
    spec = _portable(gym.spec(env_id))
    if isinstance(spec, dict):
        entries[env_id] = {"base": _BASES[env_id], "spec": spec}
        if _write(entries):
            return _workers_started_before()
        reason = f"{REGISTERED_VAR} is full (it holds at most {_VAR_LIMIT} characters)"
    else:
        reason = spec
    entries[env_id] = {"base": _BASES[env_id], "unavailable": reason}
    _write(entries)
    return reason


def _write(entries: dict[str, Any]) -> bool:
    """Sets :data:`REGISTERED_VAR` to ``entries``, unless they take more than its limit; returns whether it did."""
    text = json.dumps(entries, separators=(",", ":"))
    if len(text) > _VAR_LIMIT:
        return False
    os.environ[REGISTERED_VAR] = text
    return True


def _workers_started_before() -> str | None:
    """Why processes already running will not see a new ID, when this process has started such processes."""
    forkserver = sys.modules.get("multiprocessing.forkserver")
    # multiprocessing's private `_forkserver._forkserver_pid`: it says whether the forkserver runs only there.
    if getattr(getattr(forkserver, "_forkserver", None), "_forkserver_pid", None) is not None:
        return "the forkserver process started before it (by a SubprocVecEnv or a process pool) keeps its environment"
    ray = sys.modules.get("ray")
    if ray is not None and getattr(ray, "is_initialized", lambda: False)():
        return "Ray's workers do not inherit this process's environment"
    return None


def _warn_unreachable(env_id: str, reason: str | None) -> None:
    """Warns, once per process, that workers will not know an ID the main script registered."""
    global _WARNED
    if reason is None or _WARNED:
        return
    _WARNED = True
    warnings.warn(
        f"`{env_id}` is registered by the main script, but {reason}, so worker processes will not know it:"
        f" give them rlwrappers.registration.make_fn({env_id!r}) instead of the ID",
        UserWarning,
        stacklevel=3,
    )


def _unavailable(env_id: str = "", reason: str = "", **kwargs: Any) -> gym.Env[Any, Any]:
    """The entry point of an ID a parent process registered but could not pass on: raises why, whatever ``kwargs``."""
    raise UnknownName(
        f"`{env_id}` was registered in a parent process, but {reason}, so this process cannot make it:"
        f" give it rlwrappers.registration.make_fn({env_id!r}), made in that process, instead of the ID"
    )


_UNAVAILABLE_ENTRY_POINT: Final = f"{__name__}:{_unavailable.__name__}"


def _inherit() -> None:
    """Registers the IDs of :data:`REGISTERED_VAR` that this process does not know yet.

    Entries that do not read as specs of this library's namespace are left out.
    """
    for env_id, entry in _read().items():
        if env_id in gym.registry or not isinstance(entry, dict):
            continue
        try:
            if "spec" in entry:
                spec = EnvSpec.from_json(json.dumps(entry["spec"]))
            else:
                reason = {"env_id": env_id, "reason": str(entry["unavailable"])}
                spec = EnvSpec(env_id, _UNAVAILABLE_ENTRY_POINT, kwargs=reason)
        except (AttributeError, KeyError, TypeError, ValueError):
            continue
        if spec.id != env_id or spec.namespace != NAMESPACE:
            continue
        gym.register(**{f.name: getattr(spec, f.name) for f in dataclasses.fields(spec) if f.init})
        _INHERITED.add(env_id)
        if "spec" in entry:
            _BASES[env_id] = str(entry.get("base", env_id))


@dataclass(frozen=True)
class EnvFactory:
    """A picklable ``env_fn`` that makes an env from its full registered spec, in any process.

    A process that does not inherit the registering process's environment (a Ray worker, a forkserver started
    earlier, a process on another host) does not know the ID, and an ID whose spec is not JSON reaches no other
    process; the spec this factory carries makes the same env anyway.
    """

    spec: EnvSpec
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __call__(self, **kwargs: Any) -> gym.Env[Any, Any]:
        """Makes the env, with the factory's keyword arguments updated by ``kwargs``."""
        return gym.make(self.spec, **{**self.kwargs, **kwargs})


def make_fn(env_id: str, **kwargs: Any) -> EnvFactory:
    """A picklable factory of the registered env ``env_id`` (with ``kwargs`` for ``gym.make``), for workers.

    Pass it where a vector env wants an ``env_fn``: ``SubprocVecEnv([make_fn(env_id)] * 8, start_method="spawn")``
    or ``make_vec_env(make_fn(env_id), n_envs=8, vec_env_cls=SubprocVecEnv)``. Workers that inherit this
    process's environment know the ID itself (see :func:`register`); the factory reaches every other process.

    Raises:
        UnknownName: ``env_id`` is not registered in this process, or a parent process could not pass it on.
    """
    if env_id not in gym.registry:
        raise UnknownName(f"`env_id` {env_id!r} is not registered.{did_you_mean(env_id, gym.registry)}")
    spec = gym.spec(env_id)
    if spec.entry_point == _UNAVAILABLE_ENTRY_POINT:
        _unavailable(**spec.kwargs)
    return EnvFactory(spec, dict(kwargs))


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
        box = uncertainty_set(base)
        rows.append((base, "Randomized", box.spec(), f"domain randomization over {box.name}, drawn per episode"))
    return rows


CATALOGUE: list[CatalogueEntry] = []


def register_catalogue() -> None:
    """Registers the catalogue's IDs (importing ``rlwrappers`` does it; registering again changes nothing)."""
    listed = {entry.id for entry in CATALOGUE}
    for base, suffix, spec, doc in _catalogue_rows():
        base_name = gym.envs.registration.parse_env_id(base)[1]
        env_id, _ = _register(base, (spec,), None, f"{base_name}-{suffix}", {})  # every process registers these
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


_inherit()
