"""Pure, batched transforms behind the perturbations.

Every function here is a pure function of its inputs, its parameters and the generator it is given: it never
modifies its inputs and never touches global random state. Leading axes are batch axes, so the same call
serves one observation or a whole vector env's batch.

Integer arrays (uint8 images) take noise quantized to whole grey levels, drawn through a table: the noise is
``round(X)`` for ``X`` Gaussian or uniform, exact to 1/65536 in probability, at a fraction of the cost of
float noise (see ``benchmarks/bench_observation_noise.py``).
"""

from __future__ import annotations

import functools
import math
from typing import Any, Final

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rlwrappers.error import InvalidType, UnknownName, did_you_mean

__all__ = [
    "DISTRIBUTIONS",
    "MAX_DRAW",
    "add_noise",
    "FloatNoise",
    "TableNoise",
    "integer_noise_table",
    "noise",
    "replace_random",
    "scalar_noise",
    "sticky",
    "tight_bounds",
]

#: Noise distributions, each parameterized by its standard deviation.
DISTRIBUTIONS: Final = ("gaussian", "uniform")
#: No draw of :func:`noise` lies beyond this many standard deviations: numpy's Gaussian sampler (a ziggurat)
#: cannot exceed about 13.7 in float64 and 8.3 in float32, uniform noise stops at sqrt(3).
MAX_DRAW: Final = 16.0
_TABLE_BITS: Final = 16
#: Tables reach 9 standard deviations (beyond any of their 65536 quantiles), within int16 with room for any
#: 8-bit value; larger scales round float noise instead.
_TABLE_REACH: Final = 9.0
_TABLE_LIMIT: Final = 32000
_SQRT3: Final = math.sqrt(3.0)


def noise(
    shape: tuple[int, ...], std: ArrayLike, dist: str, rng: np.random.Generator, dtype: Any = np.float64
) -> NDArray[Any]:
    """Zero-mean noise of standard deviation ``std`` (broadcast over ``shape``).

    ``uniform`` noise is uniform on ``[-a, a]`` with ``a = std * sqrt(3)``, so both distributions have
    standard deviation ``std``.
    """
    dtype = np.dtype(np.float32) if np.dtype(dtype) == np.float32 else np.dtype(np.float64)  # numpy draws only these
    unit = _unit_noise(shape, dist, rng, dtype)
    unit *= np.asarray(std, dtype=dtype)
    return unit


def _unit_noise(shape: tuple[int, ...], dist: str, rng: np.random.Generator, dtype: np.dtype[Any]) -> NDArray[Any]:
    """Noise of standard deviation 1 in ``dtype`` (float32 or float64), a new array."""
    if dist == "gaussian":
        return rng.standard_normal(shape, dtype=dtype)
    if dist != "uniform":
        raise _unknown(dist)
    unit = rng.random(shape, dtype=dtype)
    unit *= 2.0
    unit -= 1.0
    unit *= _SQRT3
    return unit


def _unknown(dist: Any) -> UnknownName:
    return UnknownName(
        f"`dist` must be one of {list(DISTRIBUTIONS)}, received {dist!r}.{did_you_mean(str(dist), DISTRIBUTIONS)}"
    )


def scalar_noise(std: float, dist: str, rng: np.random.Generator) -> float:
    """One draw of :func:`noise` with ``shape=()``, as a float, without building an array (per-step rewards)."""
    if dist == "gaussian":
        return float(rng.standard_normal()) * std
    if dist != "uniform":
        raise _unknown(dist)
    return (float(rng.random()) * 2.0 - 1.0) * _SQRT3 * std


@functools.lru_cache(maxsize=64)
def integer_noise_table(std: float, dist: str) -> NDArray[np.signedinteger[Any]]:
    """A table of 65536 integers whose empirical distribution is that of ``round(X)``, ``X`` of std ``std``.

    Entry ``j`` is the quantile of ``round(X)`` at probability ``(j + 0.5) / 65536``. The table is int8 when
    its values fit (cheaper to gather), int16 otherwise.
    """
    size = 1 << _TABLE_BITS
    if dist not in DISTRIBUTIONS:
        raise _unknown(dist)
    if std == 0.0:
        return np.zeros(size, dtype=np.int8)
    reach = min(math.ceil(_TABLE_REACH * std) + 1, _TABLE_LIMIT)
    k = np.arange(-reach, reach + 1)
    upper = (k + 0.5) / std
    if dist == "gaussian":
        cdf = np.array([0.5 * (1.0 + math.erf(u / math.sqrt(2.0))) for u in upper])
    else:
        cdf = np.clip((upper + _SQRT3) / (2.0 * _SQRT3), 0.0, 1.0)
    quantiles = (np.arange(size) + 0.5) / size
    table = k[np.searchsorted(cdf, quantiles, side="right").clip(0, len(k) - 1)]
    return table.astype(np.int8 if np.abs(table).max() <= 127 else np.int16)


def _random_indices(size: int, rng: np.random.Generator) -> NDArray[np.uint16]:
    words = rng.bit_generator.random_raw((size + 3) // 4)
    return np.asarray(words).view(np.uint16)[:size]


def add_noise(
    x: NDArray[Any],
    std: ArrayLike,
    dist: str,
    rng: np.random.Generator,
    low: ArrayLike | None = None,
    high: ArrayLike | None = None,
) -> NDArray[Any]:
    """Returns ``x`` plus noise, clipped to ``[low, high]`` when given, in ``x``'s dtype.

    Float arrays take float noise of their own precision. Integer arrays take integer noise (see the module
    docstring) and are always clipped to their dtype's range; a scalar ``std`` below about 3500 uses the table,
    larger or per-element scales round float noise.

    Example:
        >>> import numpy as np
        >>> frame = np.full((2, 2), 100, dtype=np.uint8)
        >>> out = add_noise(frame, 3.0, "gaussian", np.random.default_rng(0))
        >>> out.dtype, frame[0, 0]  # the input is untouched
        (dtype('uint8'), np.uint8(100))
    """
    x = np.asarray(x)
    if x.dtype.kind in "iub":
        return _add_integer_noise(x, std, dist, rng, low, high)
    out = np.asarray(x + noise(x.shape, std, dist, rng, x.dtype))
    if low is not None or high is not None:
        np.clip(out, low, high, out=out)
    return out.astype(x.dtype, copy=False)


def _add_integer_noise(
    x: NDArray[Any], std: ArrayLike, dist: str, rng: np.random.Generator, low: ArrayLike | None, high: ArrayLike | None
) -> NDArray[Any]:
    std_array = np.asarray(std, dtype=np.float64)
    if std_array.ndim == 0 and TableNoise.covers(float(std_array)):
        return TableNoise(float(std_array), dist).add(x, rng, low, high)
    wide = _wide(x.dtype)
    reach = np.iinfo(wide).max // 2  # any step this large takes every value of x's dtype out of its range
    step = np.clip(np.rint(noise(x.shape, std_array, dist, rng)), -reach, reach).astype(wide)
    return _saturate(np.add(x, step, dtype=wide), x, low, high)


def _wide(dtype: np.dtype[Any]) -> type[np.signedinteger[Any]]:
    """A signed integer type that holds any value of ``dtype`` plus any table noise."""
    if dtype.itemsize == 1:
        return np.int16
    return np.int32 if dtype.itemsize == 2 else np.int64


def _saturate(total: NDArray[Any], x: NDArray[Any], low: ArrayLike | None, high: ArrayLike | None) -> NDArray[Any]:
    """``total`` clipped to ``[low, high]`` and to ``x``'s dtype range, in a new array of ``x``'s dtype and shape."""
    info = np.iinfo(x.dtype) if x.dtype.kind != "b" else np.iinfo(np.uint8)
    lo = _bound(low, info.min, max)
    hi = _bound(high, info.max, min)
    out = np.empty_like(x)
    np.clip(total.reshape(x.shape), lo, hi, out=out, casting="unsafe")
    return out


def _bound(bound: ArrayLike | None, limit: int, tighter: Any) -> Any:
    """A clipping bound inside the dtype's ``limit``: a Python int when scalar (numpy's clip is fastest then)."""
    if bound is None:
        return limit
    if np.ndim(bound) == 0:
        return tighter(int(bound), limit)  # type: ignore[arg-type]
    return np.maximum(bound, limit) if tighter is max else np.minimum(bound, limit)


class TableNoise:
    """Integer noise drawn through :func:`integer_noise_table`, reusing its scratch buffers from call to call.

    The observation-noise perturbation keeps one per wrapper, so a stream of frames of one shape allocates only
    the output of each call. Not thread-safe: one owner, one thread.
    """

    def __init__(self, std: float, dist: str) -> None:
        self.table = integer_noise_table(std, dist)
        self._scratch: dict[tuple[int, str], tuple[NDArray[np.intp], NDArray[Any], NDArray[Any]]] = {}

    @staticmethod
    def covers(std: float) -> bool:
        """Whether a table can represent noise of this scale (larger scales round float noise instead)."""
        return _TABLE_REACH * std < _TABLE_LIMIT

    def add(
        self, x: NDArray[Any], rng: np.random.Generator, low: ArrayLike | None = None, high: ArrayLike | None = None
    ) -> NDArray[Any]:
        """Returns ``x`` plus table noise, clipped to ``[low, high]`` and ``x``'s dtype range, as a new array."""
        key = (x.size, x.dtype.str)
        scratch = self._scratch.get(key)
        if scratch is None:
            scratch = (np.empty(x.size, np.intp), np.empty(x.size, self.table.dtype), np.empty(x.size, _wide(x.dtype)))
            self._scratch[key] = scratch
        indices, step, total = scratch
        np.copyto(indices, _random_indices(x.size, rng))
        np.take(self.table, indices, out=step)
        np.add(x.reshape(-1), step, out=total)
        return _saturate(total, x, low, high)


class FloatNoise:
    """:func:`add_noise` on float32 or float64 arrays of one dtype, its scale and bounds read once.

    The same draws, products, sums and clips as :func:`add_noise` on arrays of :attr:`dtype` (whose scale and
    bounds are cast to it), without reading its arguments on every call: on a short vector that reading is about a
    quarter of the cost. The scale and bounds broadcast to the arrays' shape.

    Example:
        >>> import numpy as np
        >>> x = np.zeros(3, dtype=np.float32)
        >>> prepared = FloatNoise(0.5, "gaussian", np.float32, low=-1.0, high=1.0)
        >>> bool(np.array_equal(prepared.add(x, np.random.default_rng(0)),
        ...                     add_noise(x, 0.5, "gaussian", np.random.default_rng(0), -1.0, 1.0)))
        True
    """

    def __init__(
        self, std: ArrayLike, dist: str, dtype: Any, low: ArrayLike | None = None, high: ArrayLike | None = None
    ) -> None:
        self.dtype = np.dtype(dtype)
        if not self.covers(self.dtype):
            raise InvalidType(f"`dtype` must be float32 or float64 (numpy draws only these), received {self.dtype}")
        if dist not in DISTRIBUTIONS:
            raise _unknown(dist)
        self.dist = dist
        # 0-d arrays rather than numpy scalars: a ufunc takes them at about two thirds of the cost.
        self._std = np.asarray(std, dtype=self.dtype)
        self._low = None if low is None else np.asarray(low, dtype=self.dtype)
        self._high = None if high is None else np.asarray(high, dtype=self.dtype)
        self._clips = low is not None or high is not None

    @staticmethod
    def covers(dtype: np.dtype[Any]) -> bool:
        """Whether arrays of ``dtype`` take float noise of their own dtype (numpy draws float32 and float64)."""
        return dtype == np.float32 or dtype == np.float64

    def add(self, x: NDArray[Any], rng: np.random.Generator) -> NDArray[Any]:
        """``x`` plus noise, clipped, as a new array; ``x`` has :attr:`dtype`."""
        out = self._noise(x.shape, rng)
        np.add(x, out, out=out)
        if self._clips:
            np.clip(out, self._low, self._high, out=out)
        return out

    def add_in_place(self, x: NDArray[Any], rng: np.random.Generator) -> None:
        """Adds noise to ``x`` and clips it, in place; ``x`` has :attr:`dtype`."""
        x += self._noise(x.shape, rng)
        if self._clips:
            np.clip(x, self._low, self._high, out=x)

    def _noise(self, shape: tuple[int, ...], rng: np.random.Generator) -> NDArray[Any]:
        unit = _unit_noise(shape, self.dist, rng, self.dtype)
        unit *= self._std
        return unit


def tight_bounds(low: NDArray[Any], high: NDArray[Any]) -> tuple[Any, Any]:
    """A Box's bounds as scalars when they are the same everywhere (clipping to scalars is much cheaper)."""
    lo = low.flat[0] if low.size and np.all(low == low.flat[0]) else low
    hi = high.flat[0] if high.size and np.all(high == high.flat[0]) else high
    return lo, hi


def replace_random(
    actions: NDArray[Any],
    p: float,
    low: ArrayLike,
    high: ArrayLike,
    rng: np.random.Generator,
    *,
    per_element: bool = False,
) -> tuple[NDArray[Any], NDArray[np.bool_]]:
    """Replaces each action, with probability ``p``, by one drawn uniformly from ``[low, high]``.

    Integer actions draw integers (both ends included), float actions draw floats. ``actions`` has shape
    ``(batch, *action_shape)``; with ``per_element`` each element of an action is replaced on its own,
    otherwise the whole action is. Returns the new actions and the boolean mask of replaced ones (one per
    action, or per element).
    """
    actions = np.asarray(actions)
    batch = actions.shape[0]
    mask_shape = actions.shape if per_element else (batch,)
    replaced = rng.random(mask_shape) < p
    if actions.dtype.kind in "iu":
        draws = rng.integers(np.asarray(low), np.asarray(high), size=actions.shape, endpoint=True).astype(actions.dtype)
    else:
        draws = rng.uniform(np.asarray(low), np.asarray(high), size=actions.shape).astype(actions.dtype)
    mask = replaced if per_element else replaced.reshape((batch,) + (1,) * (actions.ndim - 1))
    return np.where(mask, draws, actions), replaced


def sticky(
    actions: NDArray[Any],
    previous: NDArray[Any],
    remaining: NDArray[np.int64],
    p: float,
    duration: tuple[int, int],
    rng: np.random.Generator,
) -> tuple[NDArray[Any], NDArray[np.int64], NDArray[np.bool_]]:
    """One step of sticky actions for a batch: the env repeats its previous action instead of the new one.

    A repetition that is under way (``remaining > 0``) goes on; otherwise one starts with probability ``p`` and
    lasts a number of steps drawn uniformly from ``duration`` (both ends included). Returns the executed
    actions, the steps of repetition left after this one, and which actions were stuck.
    """
    remaining = np.asarray(remaining, dtype=np.int64)
    starts = (remaining == 0) & (rng.random(remaining.shape) < p)
    lengths = rng.integers(duration[0], duration[1], size=remaining.shape, endpoint=True)
    remaining = np.where(starts, lengths, remaining)
    stuck = remaining > 0
    mask = stuck.reshape(stuck.shape + (1,) * (np.ndim(actions) - stuck.ndim))
    executed = np.where(mask, previous, actions)
    return executed, np.where(stuck, remaining - 1, 0), stuck
