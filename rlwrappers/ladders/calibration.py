"""Calibrates the ladders of the current version: measures each env under a uniform-random policy, writes its file.

:func:`calibrate` plays :data:`~rlwrappers.ladders.definition.CALIBRATION_STEPS` steps of a uniform-random
policy (fixed seeds), measures each observation dimension's and each simulator state dimension's standard
deviation and the policy's mean return, and builds the env's ladder from the constants of
:mod:`rlwrappers.ladders.definition`. :func:`to_json` writes it byte for byte the same every time, and
:func:`write` writes every env's file; ``scripts/calibrate_ladders.py`` runs it.

Measured values (the standard deviations and the random return) are kept to six significant digits, and
values derived from them (``k * sigma``) to ten, which drops the last-bit noise of a product: the files read
cleanly, and a change in the last bit of a platform's floating point does not change them.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from rlwrappers import _optional
from rlwrappers.core import Entry
from rlwrappers.error import IncompatibleSpace, StateNotSettable, UnknownName, did_you_mean
from rlwrappers.ladders import definition as card
from rlwrappers.ladders.effect import Effect, choose
from rlwrappers.ladders.preprocessing import build_env
from rlwrappers.state.simulators import simulator
from rlwrappers.uncertainty import uncertainty_set

__all__ = [
    "DIRECTORY",
    "Measurement",
    "FAMILY_KINDS",
    "Scales",
    "calibrate",
    "effects_path",
    "family_record",
    "env_kind",
    "env_scales",
    "file_name",
    "make_env",
    "measure",
    "read_effects",
    "recovery_record",
    "reference_record",
    "reference_agent",
    "top_of",
    "to_json",
    "write",
]

#: Where the shipped ladders live: one folder per version.
DIRECTORY: Final = Path(__file__).parent


def file_name(env_id: str) -> str:
    """The file of ``env_id``'s ladder within its version's folder: ``/`` becomes ``-``."""
    return env_id.replace("/", "-") + ".json"


def require_env(env_id: str) -> None:
    """Raises :class:`~rlwrappers.error.MissingExtra`, naming the extra, when ``env_id`` needs a missing package."""
    package = card.ENV_PACKAGES.get(env_id)
    if package is not None:
        _optional.require(package, purpose=f"the {env_id} ladder's env")


def make_env(env_id: str) -> gym.Env[Any, Any]:
    """``env_id`` as its ladder builds it: ``gym.make`` with its ``env_kwargs``, then its preprocessing's wrappers.

    Example:
        >>> from rlwrappers.ladders.calibration import make_env
        >>> make_env("BreakoutNoFrameskip-v4").observation_space.shape
        (4, 84, 84)
    """
    require_env(env_id)
    return build_env(env_id, card.ENV_KWARGS.get(env_id, {}), card.ENV_PREPROCESSING.get(env_id))


def env_kind(env: gym.Env[Any, Any]) -> str:
    """``"image"`` for uint8 observations, ``"vector"`` for float ones.

    Raises:
        IncompatibleSpace: any other observation space.
    """
    space = env.observation_space
    if isinstance(space, gym.spaces.Box) and space.dtype == np.uint8:
        return "image"
    if isinstance(space, gym.spaces.Box) and space.dtype.kind == "f":
        return "vector"
    raise IncompatibleSpace(f"a ladder needs uint8 (image) or float (vector) Box observations, received {space}")


def _significant(x: float, digits: int) -> float:
    return float(f"{x:.{digits}g}")


def _measured(x: float) -> float:
    """A measured value, to six significant digits."""
    return _significant(x, 6)


def _derived(x: float) -> float:
    """A product of a constant and a measured value, without the last-bit noise of the product."""
    return _significant(x, 10)


def _std(samples: NDArray[np.float64]) -> list[float]:
    """Each column's population standard deviation, summed exactly (:func:`math.fsum`), to six digits."""
    out = []
    for column in samples.T:
        mean = math.fsum(column) / len(column)
        out.append(_measured(math.sqrt(math.fsum((column - mean) ** 2) / len(column))))
    return out


@dataclass(frozen=True)
class Measurement:
    """What a uniform-random policy shows of one env: its scales and its mean return.

    Attributes:
        obs_std: each observation dimension's standard deviation (None for image envs).
        state_std: each simulator state dimension's standard deviation (None for image envs).
        random_return: the mean return over the complete episodes.
        episodes: how many episodes completed.
    """

    obs_std: list[float] | None
    state_std: list[float] | None
    random_return: float
    episodes: int
    #: The most steps an episode took (0 where none ended).
    longest: int = 0


def measure(
    env_id: str,
    steps: int = card.CALIBRATION_STEPS,
    seed: int = card.CALIBRATION_SEED,
    *,
    env: gym.Env[Any, Any] | None = None,
    state: bool = True,
) -> Measurement:
    """Plays ``steps`` uniform-random steps of ``env_id`` (built by :func:`make_env`) and measures it.

    ``action_space.seed(seed)``, and episode ``i`` (from 0) resets with ``seed + i``. The standard deviations
    are over every observation (and state) seen, those after each reset included; the return is the mean over
    the episodes that ended (terminated or truncated) within ``steps``, NaN where none did.

    Args:
        env_id: the env's ID.
        steps: the random policy's steps.
        seed: the first seed.
        env: the env to play, built already (it is closed after); default ``make_env(env_id)``.
        state: measure the simulator's state too (vector envs; ``False`` for an env whose state cannot be read).
    """
    env = make_env(env_id) if env is None else env
    try:
        vector = env_kind(env) == "vector"
        sim = simulator(env, purpose="the ladder's calibration") if vector and state else None
        env.action_space.seed(seed)
        observations: list[NDArray[np.float64]] = []
        states: list[NDArray[np.float64]] = []

        def seen(obs: Any) -> None:
            if vector:
                observations.append(np.asarray(obs, dtype=np.float64).ravel())
            if sim is not None:
                states.append(sim.get_state())

        episode, total, length, longest, returns = 0, 0.0, 0, 0, []
        seen(env.reset(seed=seed)[0])
        for t in range(steps):
            obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            total, length = total + float(reward), length + 1
            seen(obs)
            if terminated or truncated:
                returns.append(total)
                episode, total, longest, length = episode + 1, 0.0, max(longest, length), 0
                if t + 1 < steps:
                    seen(env.reset(seed=seed + episode)[0])
    finally:
        env.close()
    return Measurement(
        _std(np.stack(observations)) if vector else None,
        _std(np.stack(states)) if states else None,
        _measured(math.fsum(returns) / len(returns)) if returns else math.nan,
        len(returns),
        longest,
    )


def _entry(name: str, when: str = "always", **params: Any) -> dict[str, Any]:
    """The JSON form of one perturbation entry, as :meth:`Entry.to_dict` writes it (tuples as lists)."""
    entry: dict[str, Any] = json.loads(json.dumps(Entry.parse({"name": name, **params, "when": when}).to_dict()))
    return entry


@dataclass(frozen=True)
class Scales:
    """What an env's levels are built from: its kinds, its action space and the random policy's scales."""

    env_id: str
    kind: str
    actions: gym.spaces.Space[Any]
    measurement: Measurement
    #: The families of the env's kind that it lacks, with the reason (:func:`vector_absent`).
    absent: Mapping[str, str] = field(default_factory=dict)

    def families(self) -> list[str]:
        """The families of the env's ladder, in order."""
        return [name for name in card.FAMILIES if self.kind in FAMILY_KINDS[name] and name not in self.absent]

    @property
    def discrete(self) -> bool:
        """Whether the actions are Discrete (else Box)."""
        return isinstance(self.actions, gym.spaces.Discrete)

    def sub_families(self, family: str) -> Mapping[str, card.Family] | None:
        """A family's sub-families on this env (the corruptions'; the image attack's), or None."""
        if family == "corruptions":
            return card.CORRUPTIONS
        return card.ATTACK_SUBS if (family, self.kind) == ("attack", "image") else None

    def grid_key(self, family: str, sub: str | None = None) -> str:
        """The family's key in :data:`~rlwrappers.ladders.definition.GRIDS`."""
        if sub is not None:
            return f"{family}.{sub}"
        if family == "action_noise":
            return f"action_noise@{'discrete' if self.discrete else 'box'}"
        if family in ("obs_noise", "attack"):
            return f"{family}@{self.kind}"
        return family

    def entries(self, key: str, value: float) -> list[dict[str, Any]]:
        """The entries of the level of severity ``value`` of the family ``key`` (a grid key)."""
        m = self.measurement
        family, _, sub = key.partition("@")[0].partition(".")
        if key == "obs_noise@vector":
            return [_entry("obs_noise", std=_scaled(value, m.obs_std))]
        if key == "obs_noise@image":
            return [_entry("obs_noise", std=value)]
        if key == "action_noise@discrete":
            return [_entry("action_noise", p=value)]
        if key == "action_noise@box":
            assert isinstance(self.actions, gym.spaces.Box)
            ranges = (self.actions.high.astype(np.float64) - self.actions.low.astype(np.float64)).ravel().tolist()
            return [_entry("action_noise", std=_scaled(value, ranges))]
        if key == "sticky_action":
            return [_entry("sticky_action", p=value)]
        if key == "init_noise":
            return [_entry("init_noise", std=_scaled(value, m.state_std))]
        if key == "dynamics":
            return [_dynamics_entry(self.env_id, value)]
        if key == "param_noise":
            return [_entry("param_noise", std=value)]
        if key == "attack@vector":
            eps = _scaled(value, m.obs_std)
            return [_entry("fgsm", eps=eps)] if self.discrete else [_entry("pgd", eps=eps, steps=card.ATTACK_STEPS)]
        if key == "attack.share":
            return [_entry("fgsm", eps=card.IMAGE_ATTACK_EPS, when=f"prob(p={value!r})")]
        if key == "attack.budget":
            return [_entry("fgsm", eps=_derived(value / 255))]
        if family == "corruptions":
            return [_entry(sub, **_corruption(sub, value))]
        raise UnknownName(f"`key` {key!r} is not a grid of {card.LADDER}; grids: {list(card.GRIDS)}")


def _scaled(k: float, scales: Sequence[float] | None) -> list[float]:
    """``k * scale_d`` for each dimension."""
    assert scales is not None  # measured for every vector env
    return [_derived(k * s) for s in scales]


def _corruption(name: str, value: float) -> dict[str, Any]:
    """A corruption's parameters at severity ``value`` of its grid."""
    if name == "brightness_contrast":
        return {"alpha": _derived(1.0 + value), "beta": _derived(100.0 * value)}
    if name == "translate":
        return {"ti": int(value), "tj": int(value)}
    key = {"median_blur": "k", "rotate": "degrees", "perspective": "norm", "jpeg": "quality"}[name]
    return {key: int(value) if key in ("k", "quality") else value}


#: card-v1's levels of each grid, the fallback of a family whose effect was not measured (the image attack
#: and the corruptions fall back to card-v1's own families, :func:`_constant_family`).
_CONSTANTS: Final[Mapping[str, Sequence[float]]] = {
    "obs_noise@vector": card.OBS_NOISE_K,
    "obs_noise@image": card.IMAGE_OBS_NOISE_STD,
    "action_noise@discrete": card.ACTION_NOISE_P,
    "action_noise@box": card.ACTION_NOISE_RANGE_K,
    "sticky_action": card.STICKY_P,
    "init_noise": card.INIT_NOISE_K,
    "dynamics": tuple(level / card.LEVELS[-1] for level in card.LEVELS),
    "param_noise": card.PARAM_NOISE_STD,
    "attack@vector": card.ATTACK_K,
}


def family_record(scales: Scales, name: str, effects: Mapping[str, Effect]) -> dict[str, Any]:
    """A family's entry in the ladder file: its levels by effect where measured, else card-v1's."""
    family = card.FAMILIES[name]
    kind = ("discrete" if scales.discrete else "box") if name == "action_noise" else scales.kind
    subs = scales.sub_families(name)
    if subs is None:
        return {"title": family.title, "unit": family.units[kind], **_levels(scales, scales.grid_key(name), effects)}
    keys = [scales.grid_key(name, sub) for sub in subs]
    if not all(key in effects for key in keys):
        return _constant_family(scales, name)
    return {
        "title": family.title,
        "unit": family.units[kind] if name == "corruptions" else "sub-families: " + ", ".join(subs),
        "sub_families": {
            sub: {"title": info.title, "unit": info.units["image"], **_levels(scales, key, effects)}
            for (sub, info), key in zip(subs.items(), keys, strict=True)
        },
    }


def _levels(scales: Scales, key: str, effects: Mapping[str, Effect]) -> dict[str, Any]:
    """A family's levels and how they were chosen: by the measured effect, or card-v1's constants."""
    effect = effects.get(key)
    if effect is None:
        values = _CONSTANTS[key]
        return {"levels": [scales.entries(key, v) for v in values], "calibration": {"by": "constants"}}
    chosen = choose(effect, top=top_of(key, effect), continuous=key not in card.DISCRETE_GRIDS)
    record = {"by": "effect", "grid": key, **chosen.to_dict()}
    if effect.clean is not None:  # the drops' impact relative to the reference agents' clean skill
        record["clean_skill"] = effect.clean
    return {"levels": [scales.entries(key, v) for v in chosen.values], "calibration": record}


def top_of(key: str, effect: Effect) -> int | None:
    """Level 5's fixed grid index: the dynamics family's is its grid's end, the uncertainty set's hull."""
    return len(effect.grid) - 1 if key == "dynamics" else None


def _constant_family(scales: Scales, name: str) -> dict[str, Any]:
    """card-v1's image attack (a share of steps at one grey level) or corruptions (seed 004's Table 1)."""
    family = card.FAMILIES[name]
    if name == "attack":
        levels = [[_entry("fgsm", eps=card.IMAGE_ATTACK_EPS, when=f"prob(p={p!r})")] for p in card.IMAGE_ATTACK_P]
        return {
            "title": family.title,
            "unit": family.units["image"],
            "levels": levels,
            "calibration": {"by": "constants"},
        }
    return {
        "title": family.title,
        "unit": family.units["image"],
        "sub_families": {
            sub: {"title": info.title, "unit": info.units["image"], "levels": _corruption_levels(sub)}
            for sub, info in card.CORRUPTIONS.items()
        },
        "calibration": {"by": "constants"},
    }


def _corruption_levels(name: str) -> list[list[dict[str, Any]]]:
    """card-v1's levels of a corruption: seed 004's Table 1 (:mod:`rlwrappers.ladders.definition`)."""
    c = card
    table: dict[str, list[dict[str, Any]]] = {
        "brightness_contrast": [
            dict(alpha=a, beta=b) for a, b in zip(c.BRIGHTNESS_ALPHA, c.BRIGHTNESS_BETA, strict=True)
        ],
        "median_blur": [dict(k=k) for k in c.MEDIAN_BLUR_K],
        "rotate": [dict(degrees=d) for d in c.ROTATE_DEGREES],
        "translate": [dict(ti=i, tj=j) for i, j in zip(c.TRANSLATE_TI, c.TRANSLATE_TJ, strict=True)],
        "perspective": [dict(norm=n) for n in c.PERSPECTIVE_NORM],
        "jpeg": [dict(quality=q) for q in c.JPEG_QUALITY],
    }
    return [[_entry(name, **p)] for p in table[name]]


def _dynamics_entry(env_id: str, t: float) -> dict[str, Any]:
    """The dynamics shift of severity ``t`` over the env's largest uncertainty set (see :mod:`rlwrappers.ladders`).

    Each parameter is drawn per episode from ``[n (lo / n) ** t, n (hi / n) ** t]`` (linearly where ``n`` or the
    hull's bound is not positive); at ``t = 1`` the box is the hull exactly.
    """
    box = uncertainty_set(env_id)
    nominal = box.nominal()
    values: dict[str, Any] = {}
    for d in box.dims:
        n = nominal[d.name]
        low, high = min(d.low, n), max(d.high, n)
        if t >= 1.0:
            a, b = low, high  # exactly the hull, free of the rounding of n * (low / n)
        elif n > 0 and low > 0:
            a, b = n * (low / n) ** t, n * (high / n) ** t
        else:
            a, b = n + (low - n) * t, n + (high - n) * t
        values[d.key] = n if a == b else {"distribution": "uniform", "low": a, "high": b}
    return _entry("dynamics_shift", values=values, resample="episode")


def recovery_record(w: card.RecoveryWindow, obs_noise: Sequence[list[dict[str, Any]]]) -> dict[str, Any]:
    """The recovery test of a ladder file: the observation noise of :data:`RECOVERY_LEVEL` during the window."""
    shift = dict(obs_noise[card.RECOVERY_LEVEL - 1][0])
    shift["when"] = f'window(start={w.start}, stop={w.stop}, unit="step")'
    entry = json.loads(json.dumps(Entry.parse(shift).to_dict()))
    return {"entries": [entry], "start": w.start, "stop": w.stop, "window": w.window, "horizon": w.horizon}


def _interventions(env_id: str) -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            "doc": shown.doc,
            "entries": [_entry("intervene", shown.when, interventions=[shown.assignments])],
        }
        for name, shown in card.INTERVENTIONS.get(env_id, {}).items()
    ]


#: The observation kinds each family applies to (init_noise and dynamics need a simulator's state; corruptions
#: need images).
FAMILY_KINDS: Final[Mapping[str, tuple[str, ...]]] = {
    name: ("vector",)
    if name in ("init_noise", "dynamics")
    else ("image",)
    if name == "corruptions"
    else ("vector", "image")
    for name in card.FAMILIES
}


def vector_absent(env: gym.Env[Any, Any], spec: gym.envs.registration.EnvSpec) -> dict[str, str]:
    """The families a vector env lacks, each with the reason.

    Initial-state noise is absent where the env's state cannot be read and set (the env is reset to find out),
    the dynamics shift where no uncertainty set exists for its simulator (one of the same family and entry point).
    """
    absent = {}
    try:
        sim = simulator(env, purpose="initial-state noise")
        env.reset(seed=card.CALIBRATION_SEED)
        sim.get_state()
    except StateNotSettable:
        absent["init_noise"] = "its state cannot be read and set (rlwrappers.state.simulators)"
    try:
        box = uncertainty_set(spec.id)
    except UnknownName:
        box = None
    if box is None or gym.spec(box.env_id).entry_point != spec.entry_point:
        absent["dynamics"] = f"no uncertainty set exists for {spec.id} (rlwrappers list sets)"
    return absent


def env_scales(env_id: str) -> Scales:
    """What ``env_id``'s levels are built from: its kind, its action space, the random policy's scales."""
    env = make_env(env_id)
    try:
        kind, actions = env_kind(env), env.action_space
        absent = vector_absent(env, gym.spec(env_id)) if kind == "vector" else {}
    finally:
        env.close()
    if not isinstance(actions, (gym.spaces.Discrete, gym.spaces.Box)):
        raise IncompatibleSpace(f"a ladder needs Discrete or Box actions, received {actions}")
    return Scales(env_id, kind, actions, measure(env_id, state="init_noise" not in absent), absent)


def effects_path(env_id: str, directory: str | os.PathLike[str] | None = None) -> Path:
    """Where the measured effects of ``env_id``'s families are kept: ``<version>/effects/<file name>``."""
    return (DIRECTORY / card.LADDER if directory is None else Path(directory)) / "effects" / file_name(env_id)


def read_effects(env_id: str, directory: str | os.PathLike[str] | None = None) -> dict[str, Effect]:
    """The measured effect of each of ``env_id``'s grids, by grid key; empty where none was measured."""
    path = effects_path(env_id, directory)
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    return {key: Effect.from_dict(value) for key, value in data["effects"].items()}


def read_effects_protocol(env_id: str, directory: str | os.PathLike[str] | None = None) -> dict[str, Any] | None:
    """How ``env_id``'s effects were measured (agents, seeds, episodes, replicates), or None."""
    path = effects_path(env_id, directory)
    if not path.exists():
        return None
    data = json.loads(path.read_text(encoding="utf-8"))
    return {key: value for key, value in data.items() if key != "effects"}


def calibrate(env_id: str, effects: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The ladder of ``env_id`` for the current version, measured now: what its shipped file holds.

    The levels come from the effects kept in the version's folder (``effects``: another folder holding an
    ``effects/`` one), or are card-v1's for a family without one.

    Raises:
        UnknownName: ``env_id`` has no reference agents in the version (:data:`~rlwrappers.ladders.definition.ENVS`).
    """
    if env_id not in card.ENVS:
        raise UnknownName(
            f"`env_id` {env_id!r} has no {card.LADDER} reference agents to calibrate on; envs with them:"
            f" {list(card.ENVS)}. A suite's other envs are made by rlwrappers.ladders.suites.calibrate."
            + did_you_mean(str(env_id), card.ENVS)
        )
    scales = env_scales(env_id)
    measured = read_effects(card.EFFECTS_FROM.get(env_id, env_id), effects)
    families = {name: family_record(scales, name, measured) for name in scales.families()}
    m = scales.measurement
    obs_noise = families["obs_noise"]["levels"]
    published = card.PUBLISHED_RANDOM.get(env_id)
    measured_random = card.Reference(
        m.random_return,
        f"measured: a uniform-random policy's mean return over the {m.episodes} episodes that ended within"
        f" {card.CALIBRATION_STEPS:,} steps (seeds from {card.CALIBRATION_SEED})",
        "the card's own episodes",
    )
    random = published or measured_random
    record = {
        "ladder": card.LADDER,
        "env_id": env_id,
        "env_kwargs": dict(card.ENV_KWARGS.get(env_id, {})),
        "preprocessing": card.ENV_PREPROCESSING.get(env_id),
        "kind": scales.kind,
        "calibration": {
            "policy": card.CALIBRATION_POLICY,
            "steps": card.CALIBRATION_STEPS,
            "seed": card.CALIBRATION_SEED,
            "obs_std": m.obs_std,
            "state_std": m.state_std,
            "random_episodes": m.episodes,
            "random_return": m.random_return,
        },
        "random_return": random.value,
        "random": reference_record(random),
        "reference": reference_record(card.REFERENCES[env_id]),
        "reference_agents": [reference_agent(agent) for agent in card.REFERENCE_AGENTS[env_id]],
        "families": families,
        **({"absent": dict(scales.absent)} if scales.absent else {}),
        "recovery": recovery_record(card.RECOVERY[env_id], obs_noise),
        "interventions": _interventions(env_id),
    }
    protocol = read_effects_protocol(card.EFFECTS_FROM.get(env_id, env_id), effects)
    if protocol is not None:
        record["effect"] = protocol
    return record


def reference_record(reference: card.Reference) -> dict[str, Any]:
    """A reference return as a ladder file writes it: ``{"return", "source", "protocol"}``."""
    return {"return": reference.value, "source": reference.source, "protocol": reference.protocol}


def reference_agent(agent: card.ReferenceAgent) -> dict[str, Any]:
    """A reference agent's name and its weights' SHA-256 (a zoo agent's from its card)."""
    if agent.sha256 is not None:
        return {"name": agent.name, "sha256": agent.sha256}
    from rlwrappers import zoo

    name, _, seed = agent.name.partition("@")
    return {"name": agent.name, "sha256": zoo.card(name)["seeds"][seed]["sha256"]}


def to_json(ladder: Mapping[str, Any]) -> str:
    """The text of a ladder's file: keys in their order, indent 2, floats as ``repr`` writes them, a final newline."""
    return json.dumps(ladder, indent=2, ensure_ascii=True, allow_nan=False) + "\n"


def write(directory: str | os.PathLike[str] | None = None, env_ids: Iterable[str] | None = None) -> list[Path]:
    """Calibrates and writes the ladder of each of ``env_ids`` (default: every env of the current version).

    Args:
        directory: the folder to write to (default: the shipped folder of the current version).
        env_ids: the envs to calibrate.

    Returns:
        The files written, in order.
    """
    folder = DIRECTORY / card.LADDER if directory is None else Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for env_id in card.ENVS if env_ids is None else env_ids:
        path = folder / file_name(env_id)
        own = directory is not None and effects_path(env_id, directory).exists()  # measured into it
        path.write_text(to_json(calibrate(env_id, directory if own else None)), encoding="utf-8")
        written.append(path)
    return written
