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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from rlwrappers import _optional
from rlwrappers.core import Entry
from rlwrappers.error import IncompatibleSpace, UnknownName, did_you_mean
from rlwrappers.ladders import definition as card
from rlwrappers.ladders.preprocessing import preprocessing_wrappers
from rlwrappers.state.simulators import simulator
from rlwrappers.uncertainty import uncertainty_set
from rlwrappers.wrappers.atari import without_reloads

__all__ = [
    "DIRECTORY",
    "Measurement",
    "calibrate",
    "env_kind",
    "file_name",
    "make_env",
    "measure",
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
    wrappers = preprocessing_wrappers(card.ENV_PREPROCESSING.get(env_id))  # first: it may register the env's ID
    env = without_reloads(gym.make(env_id, **card.ENV_KWARGS.get(env_id, {})))  # a seeded reset loads no ROM
    for wrapper in wrappers:
        env = wrapper(env)
    return env


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


def measure(env_id: str, steps: int = card.CALIBRATION_STEPS, seed: int = card.CALIBRATION_SEED) -> Measurement:
    """Plays ``steps`` uniform-random steps of ``env_id`` (built by :func:`make_env`) and measures it.

    ``action_space.seed(seed)``, and episode ``i`` (from 0) resets with ``seed + i``. The standard deviations
    are over every observation (and state) seen, those after each reset included; the return is the mean over
    the episodes that ended (terminated or truncated) within ``steps``.
    """
    env = make_env(env_id)
    try:
        vector = env_kind(env) == "vector"
        sim = simulator(env, purpose="the ladder's calibration") if vector else None
        env.action_space.seed(seed)
        observations: list[NDArray[np.float64]] = []
        states: list[NDArray[np.float64]] = []

        def seen(obs: Any) -> None:
            if vector:
                observations.append(np.asarray(obs, dtype=np.float64).ravel())
            if sim is not None:
                states.append(sim.get_state())

        episode, total, returns = 0, 0.0, []
        seen(env.reset(seed=seed)[0])
        for t in range(steps):
            obs, reward, terminated, truncated, _ = env.step(env.action_space.sample())
            total += float(reward)
            seen(obs)
            if terminated or truncated:
                returns.append(total)
                episode, total = episode + 1, 0.0
                if t + 1 < steps:
                    seen(env.reset(seed=seed + episode)[0])
    finally:
        env.close()
    return Measurement(
        _std(np.stack(observations)) if vector else None,
        _std(np.stack(states)) if states else None,
        _measured(math.fsum(returns) / len(returns)),
        len(returns),
    )


def _entry(name: str, when: str = "always", **params: Any) -> dict[str, Any]:
    """The JSON form of one perturbation entry, as :meth:`Entry.to_dict` writes it (tuples as lists)."""
    entry: dict[str, Any] = json.loads(json.dumps(Entry.parse({"name": name, **params, "when": when}).to_dict()))
    return entry


def _scaled(ks: Sequence[float], scales: Sequence[float]) -> list[list[float]]:
    """``k * scale_d`` for each level's ``k``."""
    return [[_derived(k * s) for s in scales] for k in ks]


def _family(name: str, unit_kind: str, levels: Iterable[list[dict[str, Any]]]) -> dict[str, Any]:
    family = card.FAMILIES[name]
    return {"title": family.title, "unit": family.units[unit_kind], "levels": list(levels)}


def _dynamics_levels(env_id: str) -> list[list[dict[str, Any]]]:
    """The dynamics shift's levels over the env's largest uncertainty set (see :mod:`rlwrappers.ladders`)."""
    box = uncertainty_set(env_id)
    nominal = box.nominal()
    levels: list[list[dict[str, Any]]] = []
    for level in card.LEVELS:
        values: dict[str, Any] = {}
        for d in box.dims:
            n = nominal[d.name]
            low, high = min(d.low, n), max(d.high, n)
            if level == card.LEVELS[-1]:
                a, b = low, high  # exactly the hull, free of the rounding of n * (low / n)
            elif n > 0 and low > 0:
                a, b = n * (low / n) ** (level / 5), n * (high / n) ** (level / 5)
            else:
                a, b = n + (low - n) * level / 5, n + (high - n) * level / 5
            values[d.key] = n if a == b else {"distribution": "uniform", "low": a, "high": b}
        levels.append([_entry("dynamics_shift", values=values, resample="episode")])
    return levels


def _corruption_levels(name: str) -> list[list[dict[str, Any]]]:
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


def _recovery(env_id: str, obs_noise: Sequence[list[dict[str, Any]]]) -> dict[str, Any]:
    w = card.RECOVERY[env_id]
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


def calibrate(env_id: str) -> dict[str, Any]:
    """The ladder of ``env_id`` for the current version, measured now: what its shipped file holds.

    Raises:
        UnknownName: the version has no ladder for ``env_id``.
    """
    if env_id not in card.ENVS:
        raise UnknownName(
            f"`env_id` {env_id!r} has no {card.LADDER} ladder; ladders exist for {list(card.ENVS)}."
            + did_you_mean(str(env_id), card.ENVS)
        )
    env = make_env(env_id)
    kind, actions = env_kind(env), env.action_space
    env.close()
    m = measure(env_id)
    discrete = isinstance(actions, gym.spaces.Discrete)
    if not discrete and not isinstance(actions, gym.spaces.Box):
        raise IncompatibleSpace(f"a ladder needs Discrete or Box actions, received {actions}")
    action_kind = "discrete" if discrete else "box"

    families: dict[str, Any] = {}
    if kind == "vector":
        assert m.obs_std is not None and m.state_std is not None  # measured for every vector env
        obs_noise = [[_entry("obs_noise", std=std)] for std in _scaled(card.OBS_NOISE_K, m.obs_std)]
    else:
        obs_noise = [[_entry("obs_noise", std=std)] for std in card.IMAGE_OBS_NOISE_STD]
    families["obs_noise"] = _family("obs_noise", kind, obs_noise)
    if discrete:
        action_noise = [[_entry("action_noise", p=p)] for p in card.ACTION_NOISE_P]
    else:
        assert isinstance(actions, gym.spaces.Box)
        ranges = (actions.high.astype(np.float64) - actions.low.astype(np.float64)).ravel().tolist()
        action_noise = [[_entry("action_noise", std=std)] for std in _scaled(card.ACTION_NOISE_RANGE_K, ranges)]
    families["action_noise"] = _family("action_noise", action_kind, action_noise)
    families["sticky_action"] = _family("sticky_action", kind, ([_entry("sticky_action", p=p)] for p in card.STICKY_P))
    if kind == "vector":
        assert m.state_std is not None
        init = [[_entry("init_noise", std=std)] for std in _scaled(card.INIT_NOISE_K, m.state_std)]
        families["init_noise"] = _family("init_noise", kind, init)
        families["dynamics"] = _family("dynamics", kind, _dynamics_levels(env_id))
    families["param_noise"] = _family(
        "param_noise", kind, ([_entry("param_noise", std=s)] for s in card.PARAM_NOISE_STD)
    )
    if kind == "vector":
        assert m.obs_std is not None
        eps = _scaled(card.ATTACK_K, m.obs_std)
        attack = [[_entry("fgsm", eps=e)] if discrete else [_entry("pgd", eps=e, steps=card.ATTACK_STEPS)] for e in eps]
    else:
        attack = [[_entry("fgsm", eps=card.IMAGE_ATTACK_EPS, when=f"prob(p={p!r})")] for p in card.IMAGE_ATTACK_P]
    families["attack"] = _family("attack", kind, attack)
    if kind == "image":
        family = card.FAMILIES["corruptions"]
        families["corruptions"] = {
            "title": family.title,
            "unit": family.units[kind],
            "sub_families": {
                name: {"title": sub.title, "unit": sub.units[kind], "levels": _corruption_levels(name)}
                for name, sub in card.CORRUPTIONS.items()
            },
        }

    published = card.PUBLISHED_RANDOM.get(env_id)
    measured_random = card.Reference(
        m.random_return,
        f"measured: a uniform-random policy's mean return over the {m.episodes} episodes that ended within"
        f" {card.CALIBRATION_STEPS:,} steps (seeds from {card.CALIBRATION_SEED})",
        "the card's own episodes",
    )
    random = published or measured_random
    return {
        "ladder": card.LADDER,
        "env_id": env_id,
        "env_kwargs": dict(card.ENV_KWARGS.get(env_id, {})),
        "preprocessing": card.ENV_PREPROCESSING.get(env_id),
        "kind": kind,
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
        "random": _reference(random),
        "reference": _reference(card.REFERENCES[env_id]),
        "reference_agents": [_reference_agent(agent) for agent in card.REFERENCE_AGENTS[env_id]],
        "families": families,
        "recovery": _recovery(env_id, obs_noise),
        "interventions": _interventions(env_id),
    }


def _reference(reference: card.Reference) -> dict[str, Any]:
    return {"return": reference.value, "source": reference.source, "protocol": reference.protocol}


def _reference_agent(agent: card.ReferenceAgent) -> dict[str, Any]:
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
        path.write_text(to_json(calibrate(env_id)), encoding="utf-8")
        written.append(path)
    return written
