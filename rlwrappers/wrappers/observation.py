"""Observation perturbations: what they share (one array, or chosen entries of a Dict or Tuple), and noise."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from typing_extensions import override

from rlwrappers import _check, structure
from rlwrappers.core import Perturbation, Record, SingleLayer, register_wrapper
from rlwrappers.error import IncompatibleSpace, InvalidArgument, InvalidType
from rlwrappers.functional import noise
from rlwrappers.schedule import Schedule

__all__ = ["Keys", "ObservationNoise", "ObservationNoisePerturbation", "ObservationPerturbation"]

#: What a wrapper's ``keys`` argument takes: a key, several, or None for the default entries.
Keys = str | int | Sequence[str | int] | None


def _box(space: gym.Space[Any], who: str, arg: str = "observation space") -> gym.spaces.Box:
    if not isinstance(space, gym.spaces.Box):
        raise IncompatibleSpace(f"{who} needs a Box {arg}, received {space}")
    return space


def check_scale_shape(name: str, scale: float | tuple[float, ...], shape: tuple[int, ...]) -> None:
    """Raises unless a per-dimension ``scale`` broadcasts to ``shape`` (without making it larger)."""
    if isinstance(scale, tuple):
        try:
            fits = np.broadcast_shapes(np.shape(scale), shape) == shape
        except ValueError:
            fits = False
        if not fits:
            raise InvalidArgument(f"`{name}` has {len(scale)} entries, which does not broadcast to the shape {shape}")


@dataclass(kw_only=True)
class ObservationPerturbation(Perturbation):
    """Base of the observation perturbations: on a Box, the observation; on a Dict or Tuple, chosen entries.

    On a Dict or Tuple space it acts on the entries ``keys`` names, or by default on every entry of its kind
    (:attr:`acts_on`, :func:`rlwrappers.structure.choose`): sensors for noise and attacks, pixel images for
    corruptions. Each entry is perturbed as if it were the whole observation, in the space's order, drawing
    from the one generator; the others pass through untouched, and the record says which acted (``keys``).

    A subclass implements the hooks of one array, :meth:`bind_array`, :meth:`array_space` and :meth:`observe`;
    an attack, which hands the agent the whole observation, overrides :meth:`bind` and :meth:`observation`.

    Args:
        keys: the entries of a Dict or Tuple observation to act on (Dict keys, Tuple indices, "a/b" for a
            nested entry), or None for every entry of its kind.
    """

    channel = "observation"
    #: What it acts on by default in a Dict or Tuple observation: one of :data:`rlwrappers.structure.KINDS`.
    acts_on: ClassVar[str] = "sensor"

    keys: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        self.keys = structure.check_keys("keys", self.keys)

    @override
    def bind(self, env: gym.Env[Any, Any], observation_space: gym.Space[Any], action_space: gym.Space[Any]) -> None:
        chosen = self.chosen = structure.choose(observation_space, self.keys, self.acts_on, self.name)
        self._entries: dict[structure.Path, ObservationPerturbation] | None = None
        if chosen is None:
            self.bind_array(env, observation_space, action_space)
            return
        self._entries = {}
        for key in chosen:
            steps = structure.path(observation_space, key)
            entry = type(self)(**{**self.params(), "keys": None})
            try:
                entry.bind_array(env, structure.get(observation_space, steps), action_space)
            except (IncompatibleSpace, InvalidArgument) as exc:
                raise type(exc)(f"{self.name} cannot act on the entry {key!r} of {observation_space}: {exc}") from None
            self._entries[steps] = entry
        self._access = structure.Access(list(self._entries))
        self._record: Record = {"keys": chosen}

    def bind_array(self, env: gym.Env[Any, Any], space: gym.Space[Any], action_space: gym.Space[Any]) -> None:
        """:meth:`bind` on one array of ``space``: checks it can act, and prepares."""

    @override
    def observation_space(self, space: gym.Space[Any]) -> gym.Space[Any]:
        if self._entries is None:
            return self.array_space(space)
        changed = {steps: entry.array_space(structure.get(space, steps)) for steps, entry in self._entries.items()}
        return structure.replace_space(space, changed)

    def array_space(self, space: gym.Space[Any]) -> gym.Space[Any]:
        """The space of one array after the perturbation (unchanged by default)."""
        return space

    @override
    def observation(self, obs: Any, rng: np.random.Generator) -> tuple[Any, Record]:
        entries = self._entries
        if entries is None:
            return self.observe(obs, rng)
        parts = zip(entries.values(), self._access.gather(obs), strict=True)
        return self._access.scatter(obs, [entry.observe(value, rng)[0] for entry, value in parts]), self._record

    def observe(self, obs: Any, rng: np.random.Generator) -> tuple[Any, Record]:
        """Perturbs one array."""
        raise NotImplementedError


@dataclass(kw_only=True)
class ObservationNoisePerturbation(ObservationPerturbation):
    """Adds zero-mean noise to every observation (observation noise; Flageat et al. 2023).

    The noise is in the observation's own units; on integer spaces such as uint8 images it is rounded to whole
    levels. A vector version is :func:`rlwrappers.functional.noise.add_noise`, which takes batches.

    Args:
        std: the noise's standard deviation: a number, or one per observation dimension.
        dist: "gaussian", or "uniform" (on [-a, a] with a = std * sqrt(3)).
        clip: keep observations inside the space's bounds; if False, the space's bounds widen to the dtype's
            range (infinite for floats) and observations are not clipped.

    On float observations that are not clipped to finite bounds, ``std`` must be at most the dtype's largest
    value over 32 (about 1.1e37 for float32), so the noise cannot overflow to inf; the wrapper checks it when
    it is built on an env.

    On float entries of one dtype in a Dict or Tuple the noise is drawn at once for all of them, laid end to end:
    the same values as entry by entry (numpy draws a run of values the same in one call or in several), at the
    cost of noise on one array of their total size plus gathering the entries into it.
    """

    name = "obs_noise"

    std: float | tuple[float, ...] = 0.1
    dist: str = "gaussian"
    clip: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        self.std = _check.scale("std", self.std)
        self.dist = _check.choice("dist", self.dist, noise.DISTRIBUTIONS)
        if not isinstance(self.clip, bool):
            raise InvalidType(f"`clip` must be a bool, received {self.clip!r}")

    @override
    def bind_array(self, env: gym.Env[Any, Any], space: gym.Space[Any], action_space: gym.Space[Any]) -> None:
        box = _box(space, "obs_noise")
        check_scale_shape("std", self.std, box.shape)
        unclipped = ~(np.isfinite(box.low) & np.isfinite(box.high)) if self.clip else True
        _check.noise_scale("std", self.std, box.dtype, "observations", unclipped)
        self._low: Any
        self._high: Any
        self._low, self._high = noise.tight_bounds(box.low, box.high) if self.clip else (None, None)
        self._std = np.asarray(self.std, dtype=np.float64)
        self._integer = box.dtype.kind in "iub"
        self._dtype, self._shape = box.dtype, box.shape
        table = self._integer and isinstance(self.std, float) and noise.TableNoise.covers(self.std)
        self._table = noise.TableNoise(self.std, self.dist) if table else None  # type: ignore[arg-type]
        self._prepare_float()

    def _prepare_float(self) -> None:
        """The prepared noise of float32 and float64 observations (others take ``add_noise`` on every call)."""
        covered = noise.FloatNoise.covers(self._dtype)
        self._float = noise.FloatNoise(self._std, self.dist, self._dtype, self._low, self._high) if covered else None

    @override
    def bind(self, env: gym.Env[Any, Any], observation_space: gym.Space[Any], action_space: gym.Space[Any]) -> None:
        super().bind(env, observation_space, action_space)
        self._fused = _FusedNoise.of(self._entries) if self._entries else None  # type: ignore[arg-type]

    @override
    def keeps_finite(self) -> bool:
        # Clipped to finite bounds, a finite value plus noise (finite, or inf where it overflows) stays finite.
        parts = self._entries.values() if self._entries else [self]
        return all(
            isinstance(p, ObservationNoisePerturbation)
            and p.clip
            and np.isfinite(p._low).all()
            and np.isfinite(p._high).all()
            for p in parts
        )

    @override
    def observation(self, obs: Any, rng: np.random.Generator) -> tuple[Any, Record]:
        fused = self._fused
        if fused is not None:
            return fused.add(obs, rng), self._record
        if self._entries is None:  # a Box: every step's path, straight to the array
            return self.observe(obs, rng)
        return super().observation(obs, rng)

    @override
    def set_params(
        self,
        params: Mapping[str, Any],
        env: gym.Env[Any, Any],
        observation_space: gym.Space[Any],
        action_space: gym.Space[Any],
    ) -> None:
        if self.chosen is not None or self._integer or params["dist"] != self.dist or params["clip"] != self.clip:
            super().set_params(params, env, observation_space, action_space)
            return
        std = params["std"]  # on floats the noise follows from std alone
        self.std = std if isinstance(std, float) else _check.scale("std", std)
        self._std = np.asarray(self.std, dtype=np.float64)
        self._prepare_float()

    @override
    def array_space(self, space: gym.Space[Any]) -> gym.Space[Any]:
        if self.clip:
            return space
        assert isinstance(space, gym.spaces.Box)
        if space.dtype.kind == "f":
            low, high = -np.inf, np.inf
        else:
            info = np.iinfo(space.dtype)
            low, high = info.min, info.max
        return gym.spaces.Box(low, high, shape=space.shape, dtype=space.dtype)

    @override
    def observe(self, obs: Any, rng: np.random.Generator) -> tuple[Any, Record]:
        prepared = self._float
        if prepared is not None and type(obs) is np.ndarray and obs.dtype == prepared.dtype:
            return prepared.add(obs, rng), {}
        if self._table is not None:
            return self._table.add(np.asarray(obs), rng, self._low, self._high), {}
        return noise.add_noise(obs, self._std, self.dist, rng, self._low, self._high), {}


class _FusedNoise:
    """Noise on float entries of one dtype, drawn, added and clipped as one array of their total size."""

    def __init__(self, entries: Mapping[structure.Path, ObservationNoisePerturbation]) -> None:
        parts = list(entries.values())
        shapes = [p._shape for p in parts]
        ends = np.cumsum([math.prod(shape) for shape in shapes]).tolist()
        self.access = structure.Access(list(entries))
        #: Where each entry lies in the array, and the entries' shapes (None when all are vectors: no reshape).
        self.slices = [slice(start, end) for start, end in zip([0, *ends[:-1]], ends, strict=True)]
        self.shapes = shapes if any(len(shape) != 1 for shape in shapes) else None

        def flat(values: list[Any]) -> Any:
            return np.concatenate([np.broadcast_to(v, shape).ravel() for v, shape in zip(values, shapes, strict=True)])

        first = parts[0]
        self.std: Any = first.std if isinstance(first.std, float) else flat([p._std for p in parts])
        self.dist = first.dist
        self.low, self.high = (None, None)
        if first.clip:
            self.low, self.high = noise.tight_bounds(flat([p._low for p in parts]), flat([p._high for p in parts]))
        covered = noise.FloatNoise.covers(first._dtype)
        self.prepared = noise.FloatNoise(self.std, self.dist, first._dtype, self.low, self.high) if covered else None

    @classmethod
    def of(cls, entries: Mapping[structure.Path, ObservationNoisePerturbation]) -> _FusedNoise | None:
        """The fused noise of perturbations bound to entries, or None unless these are floats of one dtype."""
        parts = list(entries.values())
        if any(p._integer for p in parts) or len({p._dtype for p in parts}) != 1:
            return None
        return cls(entries)

    def add(self, obs: Any, rng: np.random.Generator) -> Any:
        """``obs`` with noise on the entries: a new structure whose noisy entries are views of one new array.

        The values of :func:`rlwrappers.functional.noise.add_noise` on each entry: the same draws, sums and clips,
        on one array of their own that takes the noise in place.
        """
        x = np.concatenate(self.access.gather(obs), axis=None if self.shapes else 0)
        prepared = self.prepared
        if prepared is not None and x.dtype == prepared.dtype:
            prepared.add_in_place(x, rng)
        else:
            x += noise.noise(x.shape, self.std, self.dist, rng, x.dtype)
            if self.low is not None:
                np.clip(x, self.low, self.high, out=x)
        if self.shapes is None:
            return self.access.scatter(obs, map(x.__getitem__, self.slices))
        return self.access.scatter(
            obs, [x[part].reshape(shape) for part, shape in zip(self.slices, self.shapes, strict=True)]
        )


@register_wrapper("obs_noise")
class ObservationNoise(SingleLayer):
    """Adds zero-mean noise to every observation (observation noise; Flageat et al. 2023).

    Any Box space, including uint8 images, or the sensor entries of a Dict or Tuple space (``keys``); see
    :class:`ObservationNoisePerturbation` for the details. No vector version: wrap each sub-env, or use
    :func:`rlwrappers.functional.noise.add_noise` on batches.

    Example:
        >>> import gymnasium as gym, rlwrappers as rw
        >>> env = rw.ObservationNoise(gym.make("CartPole-v1"), std=0.1)
        >>> obs, info = env.reset(seed=0)
        >>> info["rlwrappers"]
        {'obs_noise': {'active': True}}
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        std: float | tuple[float, ...] = 0.1,
        dist: str = "gaussian",
        clip: bool = True,
        *,
        keys: Keys = None,
        when: str | Schedule | None = None,
        label: str | None = None,
        allow_nonfinite: bool = False,
    ):
        """Wraps ``env``; ``when`` is the schedule (default: always), ``label`` names the log columns.

        ``keys`` chooses the entries of a Dict or Tuple observation (default: every float sensor entry, not
        ``desired_goal``). ``allow_nonfinite`` lets non-finite observations through instead of raising
        :class:`~rlwrappers.error.PerturbationError`.
        """
        params = dict(keys=keys, std=std, dist=dist, clip=clip)
        self._setup(env, ObservationNoisePerturbation, params, when, label, allow_nonfinite=allow_nonfinite)
