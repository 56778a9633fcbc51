"""Provisional ladders: a card-v2 ladder for any registered Gymnasium env, calibrated on first use and cached.

An env without a shipped ladder gets one the first time a card or ``rlwrappers ladder --env ID`` asks for it
(:func:`rlwrappers.ladders.provisional_ladder`). It follows card-v2's shipped files, with what only the env can
say measured and what needs trained agents replaced by written rules (:data:`RULES` names their version):

- **Families.** Those the env supports: observation noise, action noise, sticky actions, parameter noise and the
  attack always; initial-state noise where the env's state can be read and set
  (:func:`rlwrappers.state.simulators.simulator`); the dynamics shift where an uncertainty set exists for the env
  (:func:`rlwrappers.uncertainty.uncertainty_set`, the largest, on an env of the same entry point); the natural
  corruptions where the observation is a pixel image (:func:`rlwrappers.structure.is_image`). Each family that
  is absent is named in the file with the reason (``provisional.absent``).
- **Levels.** card-v1's constants (no reference agents, so no levels by effect): ``k * unit_d`` for vector
  envs, grey levels and seed 004's Table 1 for images (see :mod:`rlwrappers.ladders`).
- **Units.** A uniform-random policy plays :data:`~rlwrappers.ladders.definition.CALIBRATION_STEPS` steps with
  card-v2's seeds. Each observation dimension's unit is its standard deviation, raised to :data:`RANGE_FLOOR`
  of the dimension's declared range where the random policy spreads less and that range is finite (a random
  MountainCar barely leaves the valley: its position spreads over 0.04 of the track, the unit over 0.1).
  The measured spreads stay in the file beside the units (``calibration.measured_obs_std``).
- **Recovery.** With ``T`` the episode's step limit (the env's ``max_episode_steps``, else the longest episode
  the random policy played), the level-4 observation noise acts from step ``T / 5`` to ``3 T / 10``; recovery
  is a trailing window of ``T / 25`` steps within ``2 T / 5`` steps after (each rounded, at least one step).
  CartPole (``T = 500``) gets card-v2's own window: 100, 150, 20, 200.
- **Skill.** The random return is the one measured; the reference return (skill 1) is ``reference_return`` when
  given (``--reference-return``), else the env's ``spec.reward_threshold``.

The ladder is cached in the user's cache folder (:func:`cache_folder`) under the SHA-256 of its file's text, its
**hash** (:attr:`rlwrappers.ladders.Ladder.sha256`); a card records it, says "provisional ladder, calibrated on
first use", and ranks (``rlwrappers card --compare``) only beside cards of the same hash. The calibration is
deterministic, so the same env, arguments and package give the same hash on any machine. An env that cannot be
calibrated raises :class:`~rlwrappers.error.CannotCalibrate`, naming the reason and the option that fixes it.

Example:
    >>> record = calibrate_provisional("Acrobot-v1")  # what the cached file holds (no cache written here)
    >>> record["provisional"]["origin"], record["reference"]["return"], list(record["families"])[:3]
    ('calibrated on first use', -100.0, ['obs_noise', 'action_noise', 'sticky_action'])
    >>> {key: record["recovery"][key] for key in ("start", "stop", "window", "horizon")}
    {'start': 100, 'stop': 150, 'window': 20, 'horizon': 200}
"""

from __future__ import annotations

import hashlib
import importlib
import json
import math
import os
import tempfile
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import gymnasium as gym
import numpy as np

from rlwrappers import _check, structure
from rlwrappers.error import (
    CannotCalibrate,
    InvalidArgument,
    InvalidType,
    UnknownName,
    did_you_mean,
)
from rlwrappers.ladders import definition as card
from rlwrappers.ladders.calibration import (
    Measurement,
    Scales,
    env_kind,
    family_record,
    measure,
    recovery_record,
    reference_record,
    to_json,
    vector_absent,
)
from rlwrappers.ladders.preprocessing import build_env, preprocessing_wrappers

__all__ = [
    "CACHE_VARIABLE",
    "ORIGIN",
    "RANGE_FLOOR",
    "RULES",
    "SHIPPED",
    "Recipe",
    "cache_folder",
    "calibrate_provisional",
    "given_reference",
    "provisional_file",
    "recovery_window",
]

#: The version of the rules above: part of every provisional file, so a change of rule changes the hash.
RULES: Final = "provisional-1"
#: The least unit of an observation dimension, as a share of its declared (finite) range.
RANGE_FLOOR: Final = 0.1
#: The environment variable that moves the cache (default: ``$XDG_CACHE_HOME/rlwrappers``, else
#: ``~/.cache/rlwrappers``).
CACHE_VARIABLE: Final = "RLWRAPPERS_CACHE"
#: What the card says of a provisional ladder made on first use.
ORIGIN: Final = "calibrated on first use"
#: What the card says of a shipped ladder made by the same rules (a suite without reference agents).
SHIPPED: Final = "shipped, calibrated without reference agents"
#: The protocol of a return measured or given for the card: the card's own episodes.
_OWN_EPISODES: Final = "the card's own episodes"


def cache_folder() -> Path:
    """Where provisional ladders are kept: ``<cache>/ladders/<version>/``, the cache as :data:`CACHE_VARIABLE` says."""
    root = os.environ.get(CACHE_VARIABLE)
    if not root:
        root = str(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rlwrappers")
    return Path(root) / "ladders" / card.LADDER


def provisional_file(
    env_id: str,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    reference_return: float | None = None,
    steps: int = card.CALIBRATION_STEPS,
    refresh: bool = False,
) -> dict[str, Any]:
    """The provisional ladder of ``env_id``, as its file holds it: read from the cache, or calibrated now and cached.

    :func:`rlwrappers.ladders.provisional_ladder`, which reads it as a :class:`~rlwrappers.ladders.Ladder`, says
    what the arguments are and what it raises.
    """
    kwargs = _kwargs(env_kwargs)
    if reference_return is not None:
        reference_return = _check.number("reference_return", reference_return)
    _check.integer("steps", steps, minimum=1)
    if not isinstance(refresh, bool):
        raise InvalidType(f"`refresh` must be a bool, received {refresh!r}")
    inputs = {"rules": RULES, "env_id": env_id, "env_kwargs": kwargs, "reference_return": reference_return}
    inputs["steps"] = steps
    key = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()
    folder = cache_folder()
    if not refresh:
        cached = _cached(folder, key)
        if cached is not None:
            return cached
    record = calibrate_provisional(env_id, env_kwargs=kwargs, reference_return=reference_return, steps=steps)
    text = to_json(record)
    digest = hashlib.sha256(text.encode()).hexdigest()
    _write(folder / f"{digest}.json", text)
    _write(folder / "inputs" / key, digest + "\n")
    return record


def _kwargs(env_kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    if env_kwargs is None:
        return {}
    if not isinstance(env_kwargs, Mapping) or not all(isinstance(k, str) for k in env_kwargs):
        raise InvalidType(f"`env_kwargs` must be a dict of keyword arguments, received {env_kwargs!r}")
    try:
        kwargs: dict[str, Any] = json.loads(json.dumps(dict(env_kwargs), allow_nan=False))
    except (TypeError, ValueError):
        raise InvalidArgument(
            f"`env_kwargs` must hold JSON values (a ladder's file keeps them), received {env_kwargs!r}"
        ) from None
    limit = kwargs.get("max_episode_steps")
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise InvalidArgument(f"`max_episode_steps` (--max-episode-steps) must be an int >= 1, received {limit!r}")
    return kwargs


def _cached(folder: Path, key: str) -> dict[str, Any] | None:
    """The cached ladder of ``key``, or None where it is absent or its file does not match its hash."""
    try:
        digest = (folder / "inputs" / key).read_text(encoding="utf-8").strip()
        text = (folder / f"{digest}.json").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    if hashlib.sha256(text.encode()).hexdigest() != digest:
        warnings.warn(
            f"the cached ladder {folder / digest}.json does not match its hash (changed or cut short); calibrating"
            " it again",
            RuntimeWarning,
            stacklevel=3,
        )
        return None
    data: dict[str, Any] = json.loads(text)
    return data


def _write(path: Path, text: str) -> None:
    """Writes ``text`` to ``path`` whole or not at all: a reader never sees half a file, two writers never mix."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(name, path)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


@dataclass(frozen=True)
class Recipe:
    """How a ladder without reference agents is made for one env, beyond what the rules measure.

    Attributes:
        env_id: the env's Gymnasium ID (``"module:ID"`` imports the module that registers it).
        env_kwargs: ``gym.make``'s keyword arguments (JSON values).
        preprocessing: the name of the preprocessing its agents see (:func:`rlwrappers.ladders.
            preprocessing_wrappers`), or None.
        reference: the return of skill 1 with its source; None for the env's ``reward_threshold``.
        random: a published random return that replaces the measured one (the Atari-57's), or None.
        recovery: the recovery window, or None for the rule of the episode limit.
        origin: how the ladder came to be: :data:`ORIGIN`, or :data:`SHIPPED`.
    """

    env_id: str
    env_kwargs: Mapping[str, Any] = field(default_factory=dict)
    preprocessing: str | None = None
    reference: card.Reference | None = None
    random: card.Reference | None = None
    recovery: card.RecoveryWindow | None = None
    origin: str = ORIGIN


def calibrate_provisional(
    env_id: str | Recipe,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    reference_return: float | None = None,
    steps: int = card.CALIBRATION_STEPS,
) -> dict[str, Any]:
    """The provisional ladder of ``env_id`` (or of a :class:`Recipe`) measured now, as its file holds it.

    See the module docstring. A recipe of a shipped ladder may have no reference return at all (no
    ``reward_threshold``, no published score): its file says so, and its cards need one given.
    """
    recipe = env_id if isinstance(env_id, Recipe) else Recipe(env_id, _kwargs(env_kwargs))
    if reference_return is not None:
        recipe = replace(recipe, reference=given_reference(reference_return))
    env_id, kwargs = recipe.env_id, dict(recipe.env_kwargs)
    preprocessing_wrappers(recipe.preprocessing)  # first: it may register the env's ID (ale-py's, MiniGrid's)
    spec = _spec(env_id)
    env = _make(env_id, kwargs, recipe.preprocessing)
    kind = _kind(env_id, env, recipe.preprocessing)
    actions = env.action_space
    if not isinstance(actions, (gym.spaces.Discrete, gym.spaces.Box)):
        env.close()
        raise CannotCalibrate(
            f"{env_id} cannot be calibrated: a card needs Discrete or Box actions, and its action space is {actions}"
        )
    absent = vector_absent(env, spec) if kind == "vector" else {}
    state = kind == "vector" and "init_noise" not in absent
    if kind == "image":
        absent["init_noise"] = absent["dynamics"] = "an image env's state is not a vector of physical quantities"
    else:
        absent["corruptions"] = "its observations are not pixel images"
    measured = measure(env_id, steps, card.CALIBRATION_SEED, env=env, state=state)
    limit = _limit(spec, kwargs, measured, steps)
    random = recipe.random or card.Reference(
        measured.random_return,
        f"measured: a uniform-random policy's mean return over the {measured.episodes} episodes that ended within"
        f" {steps:,} steps (seeds from {card.CALIBRATION_SEED})",
        _OWN_EPISODES,
    )
    reference = _reference(recipe, spec, random.value)
    units = _units(measured.obs_std, env.observation_space) if kind == "vector" else None
    measurement = Measurement(units, measured.state_std, measured.random_return, 0)
    scales = Scales(spec.id, kind, actions, measurement, absent)
    families = {name: family_record(scales, name, {}) for name in scales.families()}
    return {
        "ladder": card.LADDER,
        "env_id": env_id,
        "env_kwargs": kwargs,
        "preprocessing": recipe.preprocessing,
        "kind": kind,
        "calibration": {
            "policy": card.CALIBRATION_POLICY,
            "steps": steps,
            "seed": card.CALIBRATION_SEED,
            "obs_std": units,
            "measured_obs_std": measured.obs_std,
            "range_floor": RANGE_FLOOR if kind == "vector" else None,
            "state_std": measured.state_std,
            "random_episodes": measured.episodes,
            "random_return": measured.random_return,
            "episode_limit": limit,
        },
        "random_return": random.value,
        "random": reference_record(random),
        "reference": None if reference is None else reference_record(reference),
        "reference_agents": [],
        "families": families,
        "recovery": recovery_record(recipe.recovery or recovery_window(limit), families["obs_noise"]["levels"]),
        "interventions": [],
        "provisional": {"origin": recipe.origin, "rules": RULES, "absent": dict(sorted(absent.items()))},
    }


def given_reference(value: float) -> card.Reference:
    """A reference return given for a card (``--reference-return``): skill 1 on the card's own episodes."""
    return card.Reference(value, "given for this card (--reference-return)", _OWN_EPISODES)


def _spec(env_id: str) -> gym.envs.registration.EnvSpec:
    """The registered spec of ``env_id``, which may name the module that registers it (``"module:ID"``)."""
    if not isinstance(env_id, str):
        raise InvalidType(f"`env_id` must be a Gymnasium ID such as 'Acrobot-v1', received {env_id!r}")
    module, _, name = env_id.rpartition(":")
    if module:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise UnknownName(
                f"`env_id` {env_id!r} names the module {module!r}, which does not import: {exc}"
            ) from None
    if name not in gym.registry:
        raise UnknownName(
            f"`env_id` {env_id!r} is not a registered Gymnasium ID; register the env first (gym.register), or name"
            f" the module that does as 'module:ID'.{did_you_mean(name, list(gym.registry))}"
        )
    return gym.registry[name]


def _make(env_id: str, kwargs: Mapping[str, Any], preprocessing: str | None) -> gym.Env[Any, Any]:
    try:
        return build_env(env_id, kwargs, preprocessing)
    except TypeError as exc:
        raise InvalidArgument(f"`env_kwargs` {dict(kwargs)!r} do not build {env_id}: {exc}") from None


def _kind(env_id: str, env: gym.Env[Any, Any], preprocessing: str | None) -> str:
    """The ladder kind of an env's observations, or :class:`CannotCalibrate` saying what is supported.

    Behind a preprocessing (Atari's stacked frames, channel first) uint8 observations are images.
    """
    space = env.observation_space
    if preprocessing is not None:
        return env_kind(env)
    if isinstance(space, gym.spaces.Box) and space.dtype.kind == "f":
        return "vector"
    if structure.is_image(space):
        return "image"
    if structure.is_structured(space):
        raise CannotCalibrate(
            f"{env_id} cannot be calibrated: a card needs one Box observation, and its observations are a"
            f" {type(space).__name__}, so an agent that takes them whole gets no card; an agent trained on the env"
            f" wrapped in gymnasium.wrappers.FlattenObservation (or on its image entry alone, through an observation"
            f" wrapper) gets one on that env, registered under an ID of its own"
        )
    raise CannotCalibrate(
        f"{env_id} cannot be calibrated: a card needs float vector observations or uint8 pixel images (H, W, 3 or"
        f" 1, at least {structure.MIN_IMAGE_SIDE} pixels a side), and its observation space is {space}"
    )


def _limit(spec: gym.envs.registration.EnvSpec, kwargs: Mapping[str, Any], measured: Measurement, steps: int) -> int:
    """The episode's step limit ``T`` of the recovery rule; :class:`CannotCalibrate` if no episode ended."""
    if measured.episodes == 0:
        raise CannotCalibrate(
            f"{spec.id} cannot be calibrated: no episode ended within the random policy's {steps:,} steps, so it"
            " has no random return; give it a step limit (--max-episode-steps N, or env_kwargs"
            " {'max_episode_steps': N}), or more steps (--calibration-steps)"
        )
    limit = kwargs.get("max_episode_steps", spec.max_episode_steps)
    return int(limit) if limit else measured.longest


def _reference(recipe: Recipe, spec: gym.envs.registration.EnvSpec, random_return: float) -> card.Reference | None:
    """Skill 1: the recipe's, else the env's ``reward_threshold``; above the random return.

    None only for a shipped ladder of an env that states none (its cards need one given).
    """
    reference = recipe.reference
    env_id = recipe.env_id
    if reference is None:
        threshold = spec.reward_threshold
        if threshold is None:
            if recipe.origin == SHIPPED:
                return None
            raise CannotCalibrate(
                f"{env_id} cannot be calibrated: its spec has no reward_threshold, so no return stands for skill 1;"
                " give one with --reference-return R (reference_return=R), e.g. a trained agent's return"
            )
        reference = card.Reference(
            float(threshold),
            f"the env's reward_threshold ({env_id}'s registration): the return its authors count as solving it",
            _OWN_EPISODES,
        )
    if not reference.value > random_return:
        raise CannotCalibrate(
            f"{env_id} cannot be calibrated: the reference return {reference.value:g} must lie above the random"
            f" policy's {random_return:g} for skill to run from 0 to 1; give a higher one with --reference-return"
        )
    return reference


def _units(measured: list[float] | None, space: gym.Space[Any]) -> list[float]:
    """Each dimension's unit: its measured spread, or :data:`RANGE_FLOOR` of its finite declared range if larger."""
    assert measured is not None and isinstance(space, gym.spaces.Box)
    spans = (space.high.astype(np.float64) - space.low.astype(np.float64)).ravel().tolist()
    return [
        float(f"{RANGE_FLOOR * span:.6g}") if math.isfinite(span) and RANGE_FLOOR * span > std else std
        for std, span in zip(measured, spans, strict=True)
    ]


def recovery_window(limit: int) -> card.RecoveryWindow:
    """The recovery test of an episode limited to ``limit`` steps: see the module docstring.

    Example:
        >>> recovery_window(500)
        RecoveryWindow(start=100, stop=150, window=20, horizon=200)
    """
    start = max(1, round(limit / 5))
    stop = max(start + 1, round(3 * limit / 10))
    return card.RecoveryWindow(start, stop, max(1, round(limit / 25)), max(1, round(2 * limit / 5)))
