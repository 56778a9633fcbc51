"""Hypothesis strategies for Gymnasium spaces, to test wrappers on spaces no simulator offers.

Needs Hypothesis (the ``test`` extra). Pair them with :class:`rlwrappers.testing.SpaceEnv` and the contract
checks::

    from hypothesis import given
    from rlwrappers.testing import SpaceEnv, check_spaces
    from rlwrappers.testing.strategies import box_spaces, discrete_spaces

    @given(box_spaces(), discrete_spaces())
    def test_noise_keeps_observations_in_their_space(obs_space, action_space):
        check_spaces(lambda: SpaceEnv(obs_space, action_space), lambda env: MyNoise(env), steps=10)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import gymnasium as gym
import numpy as np

from rlwrappers._optional import require

if TYPE_CHECKING:
    from hypothesis.strategies import DrawFn, SearchStrategy

st = require("hypothesis.strategies", purpose="rlwrappers.testing.strategies")
hnp = require("hypothesis.extra.numpy", purpose="rlwrappers.testing.strategies")

__all__ = [
    "BOX_DTYPES",
    "FLOAT_DTYPES",
    "INT_DTYPES",
    "box_spaces",
    "discrete_spaces",
    "multi_discrete_spaces",
    "spaces",
    "action_spaces",
    "scales",
]

FLOAT_DTYPES: Final = ("float16", "float32", "float64")
INT_DTYPES: Final = ("uint8", "int16", "int32")
#: The Box dtypes drawn by default.
BOX_DTYPES: Final = FLOAT_DTYPES + INT_DTYPES


def _dtype_range(dtype: np.dtype[Any]) -> tuple[float, float]:
    info: Any = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    return float(info.min), float(info.max)


@st.composite
def box_spaces(
    draw: DrawFn,
    dtypes: Sequence[str] = BOX_DTYPES,
    *,
    max_dims: int = 3,
    max_side: int = 4,
    infinite: bool = True,
    full_range: bool = True,
    degenerate: bool = True,
) -> gym.spaces.Box:
    """Box spaces of the given dtypes, with random shapes and per-element bounds.

    Args:
        draw: supplied by Hypothesis.
        dtypes: the dtypes to draw from.
        max_dims: the most dimensions a shape has (shapes may have none, like ``()``).
        max_side: the longest a dimension is.
        infinite: float bounds may be infinite (on either side, per element).
        full_range: bounds may span the dtype's whole finite range.
        degenerate: bounds may be equal (``low == high``); if False, they are at least 1 apart.

    Returns:
        A strategy of :class:`gymnasium.spaces.Box`.
    """
    dtype = np.dtype(draw(st.sampled_from(list(dtypes))))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=max_dims, min_side=1, max_side=max_side))
    lowest, highest = _dtype_range(dtype)
    if full_range and draw(st.booleans()):
        low = np.full(shape, lowest)
        high = np.full(shape, highest)
    else:
        centers = st.floats(max(lowest, -1000.0), min(highest, 1000.0))
        center = draw(hnp.arrays(np.float64, shape, elements=centers))
        half = draw(hnp.arrays(np.float64, shape, elements=st.floats(0.0 if degenerate else 1.0, 1000.0)))
        low = np.clip(center - half, lowest, highest)
        high = np.clip(center + half, lowest, highest)
        if dtype.kind != "f":
            low = np.ceil(low)
            high = np.maximum(np.floor(high), low)
    if infinite and dtype.kind == "f":
        low = np.where(draw(hnp.arrays(np.bool_, shape)), -np.inf, low)
        high = np.where(draw(hnp.arrays(np.bool_, shape)), np.inf, high)
    return gym.spaces.Box(low.astype(dtype), high.astype(dtype), shape=shape, dtype=dtype)


def discrete_spaces(*, max_n: int = 10, starts: tuple[int, int] = (-5, 5)) -> SearchStrategy[gym.spaces.Discrete]:
    """Discrete spaces with ``n`` in ``[1, max_n]`` and ``start`` in the range ``starts`` (both ends included).

    Args:
        max_n: the largest number of values.
        starts: the range of ``start``.

    Returns:
        A strategy of :class:`gymnasium.spaces.Discrete`.
    """
    return st.builds(gym.spaces.Discrete, st.integers(1, max_n), start=st.integers(*starts))


@st.composite
def multi_discrete_spaces(
    draw: DrawFn, *, max_dims: int = 2, max_side: int = 3, max_n: int = 10, starts: tuple[int, int] = (-5, 5)
) -> gym.spaces.MultiDiscrete:
    """MultiDiscrete spaces with random shapes, ``nvec`` in ``[1, max_n]`` and ``start`` in ``starts``.

    Args:
        draw: supplied by Hypothesis.
        max_dims: the most dimensions ``nvec`` has (at least one).
        max_side: the longest a dimension is.
        max_n: the largest number of values of an element.
        starts: the range of each element's ``start``.

    Returns:
        A strategy of :class:`gymnasium.spaces.MultiDiscrete`.
    """
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=max_dims, min_side=1, max_side=max_side))
    nvec = draw(hnp.arrays(np.int64, shape, elements=st.integers(1, max_n)))
    start = draw(hnp.arrays(np.int64, shape, elements=st.integers(*starts)))
    return gym.spaces.MultiDiscrete(nvec, start=start)


def spaces(dtypes: Sequence[str] = BOX_DTYPES, **box: Any) -> SearchStrategy[gym.Space[Any]]:
    """Box, Discrete and MultiDiscrete spaces.

    Args:
        dtypes: the Box dtypes to draw from.
        **box: further arguments of :func:`box_spaces`.

    Returns:
        A strategy of spaces.
    """
    return st.one_of(box_spaces(dtypes, **box), discrete_spaces(), multi_discrete_spaces())


def action_spaces(dtypes: Sequence[str] = BOX_DTYPES) -> SearchStrategy[gym.Space[Any]]:
    """Action spaces: Discrete, MultiDiscrete, and Box spaces with finite bounds (so random actions exist).

    Args:
        dtypes: the Box dtypes to draw from.

    Returns:
        A strategy of spaces.
    """
    return spaces(dtypes, infinite=False)


def scales(shape: tuple[int, ...], *, max_value: float = 100.0) -> SearchStrategy[float | tuple[float, ...]]:
    """Noise scales for arrays of ``shape``: a number, or (for one-dimensional shapes) one per element.

    Args:
        shape: the shape of the arrays the noise is added to.
        max_value: the largest scale.

    Returns:
        A strategy of floats and tuples of floats.
    """
    scale = st.floats(0.0, max_value)
    if len(shape) != 1:
        return scale
    return st.one_of(scale, st.lists(scale, min_size=shape[0], max_size=shape[0]).map(tuple))
