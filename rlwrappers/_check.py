"""Argument checks shared by schedules and perturbations; each raises a typed :mod:`rlwrappers.error`."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from numbers import Integral, Real
from typing import Any, Final

import numpy as np

from rlwrappers.error import InvalidArgument, InvalidProbability, InvalidType, UnknownName, did_you_mean
from rlwrappers.functional.noise import MAX_DRAW


def number(name: str, value: Any) -> float:
    """Returns ``value`` as a finite float, or raises naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise InvalidType(f"`{name}` must be a number, received {value!r} ({type(value).__name__})")
    if not math.isfinite(value):
        raise InvalidArgument(f"`{name}` must be finite, received {value!r}")
    return float(value)


def nonnegative(name: str, value: Any) -> float:
    """Returns ``value`` as a float >= 0."""
    x = number(name, value)
    if x < 0:
        raise InvalidArgument(f"`{name}` must be >= 0, received {value!r}")
    return x


def probability(name: str, value: Any) -> float:
    """Returns ``value`` as a float in [0, 1]."""
    x = number(name, value)
    if not 0.0 <= x <= 1.0:
        raise InvalidProbability(f"`{name}` must be a probability in [0, 1], received {value!r}")
    return x


def integer(name: str, value: Any, *, minimum: int | None = None) -> int:
    """Returns ``value`` as an int, at least ``minimum`` when given."""
    if isinstance(value, bool) or not isinstance(value, Integral):
        raise InvalidType(f"`{name}` must be an integer, received {value!r} ({type(value).__name__})")
    if minimum is not None and value < minimum:
        raise InvalidArgument(f"`{name}` must be >= {minimum}, received {value!r}")
    return int(value)


def choice(name: str, value: Any, choices: Sequence[str]) -> str:
    """Returns ``value`` if it is one of ``choices``."""
    if not isinstance(value, str):
        raise InvalidType(f"`{name}` must be one of {list(choices)}, received {value!r}")
    if value not in choices:
        raise UnknownName(f"`{name}` must be one of {list(choices)}, received {value!r}.{did_you_mean(value, choices)}")
    return value


def scale(name: str, value: Any) -> float | tuple[float, ...]:
    """Returns a non-negative scale: a float, or a tuple of floats for per-dimension scales."""
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        if len(value) == 0:
            raise InvalidArgument(f"`{name}` must not be empty, received {value!r}")
        return tuple(nonnegative(f"{name}[{i}]", v) for i, v in enumerate(value))
    return nonnegative(name, value)


def noise_scale(name: str, std: float | tuple[float, ...], dtype: Any, what: str, unclipped: Any = True) -> None:
    """Raises unless noise of scale ``std`` added to values of ``dtype`` cannot overflow to inf.

    Where values are clipped to finite bounds (``unclipped`` False) any ``std`` that ``dtype`` can hold is
    fine. Elsewhere, ``std`` must be at most the dtype's largest value over ``2 * MAX_DRAW``: no draw of
    :func:`rlwrappers.functional.noise.noise` exceeds ``MAX_DRAW`` standard deviations, so the noise stays
    below half the largest value, and added to any value below the other half it stays finite. Integer
    values always saturate at their dtype's range, so any ``std`` is fine for them.

    Args:
        name: the argument's name, for the message.
        std: a non-negative scale, or one per element of the values' last axis.
        dtype: the values' dtype.
        what: what the values are ("observations"), for the message.
        unclipped: a bool, or a mask of the values' shape, True where values are not clipped to finite bounds.
    """
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        return
    stds = np.asarray(std, dtype=np.float64)
    largest = float(np.finfo(dtype).max)
    limit = largest / (2.0 * MAX_DRAW)
    mask = np.asarray(unclipped, dtype=bool)
    mask = np.broadcast_to(mask, np.broadcast_shapes(mask.shape, stds.shape))
    # which entries of `std` act on some unclipped value
    exposed = np.asarray(mask.reshape(-1, stds.shape[-1]).any(axis=0) if stds.ndim else mask.any())
    for index in np.ndindex(stds.shape):
        s = float(stds[index])
        label = f"{name}[{index[0]}]" if index else name
        if s > limit and bool(exposed[index]):
            where = f"{dtype} {what}" if np.all(mask) else f"{dtype} {what} not clipped to finite bounds"
            raise InvalidArgument(
                f"`{label}` must be at most {limit:.3g} on {where}, or the noise can overflow to inf; received {s!r}"
            )
        if s > largest:
            raise InvalidArgument(f"`{label}` must be at most {largest:.3g}, the largest {dtype} value, received {s!r}")


#: The largest value of an integer range: its values are drawn as 64-bit integers.
INT_RANGE_MAX: Final = int(np.iinfo(np.int64).max)


def int_range(name: str, value: Any, *, minimum: int = 0) -> tuple[int, int]:
    """Returns ``(low, high)`` from an int (low == high) or a pair with ``minimum <= low <= high``.

    Both are at most :data:`INT_RANGE_MAX`, since values are drawn between them as 64-bit integers.
    """
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise InvalidArgument(f"`{name}` must be an int or a pair (low, high), received {value!r}")
        low = _bounded(f"{name}[0]", value[0], minimum)
        high = _bounded(f"{name}[1]", value[1], minimum)
        if low > high:
            raise InvalidArgument(f"`{name}` must have low <= high, received {value!r}")
        return low, high
    n = _bounded(name, value, minimum)
    return n, n


def _bounded(name: str, value: Any, minimum: int) -> int:
    n = integer(name, value, minimum=minimum)
    if n > INT_RANGE_MAX:
        raise InvalidArgument(f"`{name}` must be at most {INT_RANGE_MAX} (2**63 - 1), received {value!r}")
    return n


def keys(name: str, given: Iterable[str], known: Sequence[str]) -> None:
    """Raises :class:`UnknownName` for the first of ``given`` that is not in ``known``."""
    for key in given:
        if key not in known:
            raise UnknownName(f"`{name}` has no entry `{key}`; known: {sorted(known)}.{did_you_mean(key, known)}")


def finite_array(name: str, values: Any) -> np.ndarray[Any, np.dtype[np.float64]]:
    """Returns ``values`` as a float64 array whose entries are all finite, or raises naming ``name``."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidType(f"`{name}` must be a number or an array of numbers, received {values!r}") from None
    if not np.all(np.isfinite(array)):
        raise InvalidArgument(f"`{name}` must be finite, received {int((~np.isfinite(array)).sum())} non-finite")
    return array
