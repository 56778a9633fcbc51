"""Frame stacking with the semantics of SB3's ``VecFrameStack``, for one env.

Agents trained behind ``VecFrameStack`` (RL Zoo's ``frame_stack: N``) see the last N observations concatenated
along the channel axis: the first axis of a channel-first image, the last axis of anything else (a channel-last
image, a vector). At a reset the stack is zeros and the reset's observation; at each step the oldest slot
drops out and the new observation comes in last. Gymnasium's ``FrameStackObservation`` stacks on a new axis
and pads with the reset's observation by default, which such an agent has never seen.
"""

from __future__ import annotations

from typing import Any, Final

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from rlwrappers.error import IncompatibleSpace, InvalidArgument, InvalidType

__all__ = ["CHANNEL_ORDERS", "StackFrames", "channels_first"]

#: How :class:`StackFrames` may be told the channel axis: "first", "last", or None to infer it as SB3 does.
CHANNEL_ORDERS: Final = ("first", "last", None)


def channels_first(space: gym.spaces.Box) -> bool:
    """Whether SB3 reads ``space`` as a channel-first image: 3-D, uint8 in [0, 255], its first axis the smallest."""
    image = space.dtype == np.uint8 and len(space.shape) == 3 and (space.low == 0).all() and (space.high == 255).all()
    return bool(image and int(np.argmin(space.shape)) == 0)


def _padding(pad: Any, dtype: np.dtype[Any]) -> NDArray[Any]:
    """``pad`` as an array of ``dtype``: finite numbers that ``dtype`` holds exactly (whole ones for integers)."""
    given = np.asarray(pad)
    if given.dtype.kind not in "biuf":
        raise InvalidType(f"`pad` must be a number or an array of numbers, received {pad!r}")
    wide = given.astype(np.float64)
    if not np.all(np.isfinite(wide)):
        raise InvalidArgument(f"`pad` must be finite, received {pad!r}")
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if not (np.all(wide == np.round(wide)) and np.all((wide >= info.min) & (wide <= info.max))):
            raise InvalidArgument(
                f"`pad` must be whole numbers from {info.min} to {info.max} for {dtype}, received {pad!r}"
            )
    elif dtype.kind == "f" and not np.all(np.abs(wide) <= np.finfo(dtype).max):
        raise InvalidArgument(f"`pad` must be finite in {dtype} (at most {np.finfo(dtype).max:g}), received {pad!r}")
    return given.astype(dtype)


class StackFrames(gym.ObservationWrapper[Any, Any, Any], gym.utils.RecordConstructorArgs):
    """The last ``frames`` observations, concatenated along the channel axis, as SB3's ``VecFrameStack`` gives.

    The observations equal ``VecFrameStack``'s, bit for bit. The space's bounds are the observation's bounds
    concatenated as the observations are (``VecFrameStack``'s space repeats each bound in place instead, which
    its own observations do not follow when the bounds differ between entries).

    Args:
        env: an env with a Box observation space.
        frames: how many observations to stack (>= 1).
        channels_order: "first" or "last" (the axis the observations are stacked along), or None to read it
            from the space as SB3 does (:func:`channels_first`).
        pad: the value of the empty slots after a reset (default 0, as SB3); an array of one observation's
            shape pads each slot with it.
        dtype: the stack's dtype (default: the observations'); a wider one holds a padding the observations'
            cannot, such as the float64 mean of ``VecNormalize`` statistics.

    Example:
        >>> import gymnasium as gym
        >>> from rlwrappers.wrappers.frames import StackFrames
        >>> env = StackFrames(gym.make("CartPole-v1"), 4)
        >>> obs, _ = env.reset(seed=0)
        >>> obs.shape, bool((obs[:12] == 0).all())
        ((16,), True)
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        frames: int,
        *,
        channels_order: str | None = None,
        pad: float | NDArray[Any] = 0.0,
        dtype: Any = None,
    ):
        space = env.observation_space
        if not isinstance(space, gym.spaces.Box):
            raise IncompatibleSpace(f"StackFrames needs a Box observation space, the env has {space}")
        if not isinstance(frames, int) or isinstance(frames, bool) or frames < 1:
            raise InvalidArgument(f"`frames` must be an int >= 1, received {frames!r}")
        if channels_order not in CHANNEL_ORDERS:
            raise InvalidArgument(f"`channels_order` must be one of {CHANNEL_ORDERS}, received {channels_order!r}")
        try:
            dtype = np.dtype(space.dtype if dtype is None else dtype)
        except TypeError:
            raise InvalidType(f"`dtype` must be a numpy dtype, received {dtype!r}") from None
        if not np.can_cast(space.dtype, dtype, casting="safe"):
            raise InvalidArgument(f"`dtype` must hold the observations' {space.dtype}, received {dtype}")
        padding = _padding(pad, dtype)
        if padding.shape not in ((), space.shape):
            raise InvalidArgument(f"`pad` must be a number or an array of shape {space.shape}, received {pad!r}")
        gym.utils.RecordConstructorArgs.__init__(self, frames=frames, channels_order=channels_order, dtype=str(dtype))
        super().__init__(env)
        first = channels_first(space) if channels_order is None else channels_order == "first"
        #: The axis of one observation the frames are stacked along.
        self.axis = 0 if first else len(space.shape) - 1
        self.frames = frames
        self._size = space.shape[self.axis] if space.shape else 1
        self.observation_space = gym.spaces.Box(
            np.concatenate([space.low] * frames, axis=self.axis).astype(dtype),
            np.concatenate([space.high] * frames, axis=self.axis).astype(dtype),
            dtype=dtype,
        )
        self._empty = np.concatenate([np.broadcast_to(padding, space.shape)] * frames, axis=self.axis)
        self._stack = self._empty.copy()
        kept = self._empty.shape[self.axis] - self._size
        #: Where the older frames go, where they come from, and where the newest goes, along the stacking axis.
        self._older = self._along(0, kept)
        self._newer = self._along(self._size, None)
        self._last = self._along(kept, None)

    def _along(self, start: int, stop: int | None) -> tuple[slice, ...]:
        """The index of ``start:stop`` along the stacking axis."""
        index = [slice(None)] * self._empty.ndim
        index[self.axis] = slice(start, stop)
        return tuple(index)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Resets the env; the stack holds the padding and the reset's observation."""
        self._stack = self._empty.copy()
        return super().reset(seed=seed, options=options)

    def observation(self, observation: Any) -> NDArray[Any]:
        """The stack with the oldest observation dropped and ``observation`` last."""
        stack = self._stack
        stack[self._older] = stack[self._newer]  # numpy copies overlapping slices as if through a buffer
        stack[self._last] = observation
        return stack.copy()
