"""Image observations: their layouts, and how to view a batch of them as frames.

An image observation is one of:

- ``"hw"``: a grayscale frame, shape (H, W);
- ``"hwc"``: channels last, shape (H, W, C): an RGB frame when C is 3, otherwise a stack of C grayscale
  frames (SB3's ``VecFrameStack`` gives (84, 84, 4));
- ``"chw"``: channels first, shape (C, H, W): an RGB frame when C is 3, otherwise a stack of C grayscale
  frames (Gymnasium's ``FrameStackObservation`` and SB3's ``VecTransposeImage`` give (4, 84, 84)).

Leading axes beyond these are batch axes. :func:`frames` views any batch as a plain batch of frames, (M, H, W)
for grayscale or (M, H, W, 3) for RGB, which is what per-frame functions (opencv, LPIPS, spectra) take, and
:func:`unframe` puts frames back into the observations' layout.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from rlwrappers.error import InvalidArgument

__all__ = [
    "LAYOUTS",
    "batch_layout",
    "check_layout",
    "frames",
    "infer_layout",
    "is_rgb",
    "unframe",
]

#: The layouts of one image observation.
LAYOUTS: Final = ("hw", "hwc", "chw")
#: Most channels a stack is taken to have when inferring a layout (SB3 and Atari stacks have 4).
_MAX_STACK: Final = 4


def infer_layout(shape: tuple[int, ...]) -> str:
    """The layout of an observation of this shape; raises :class:`InvalidArgument` when it is ambiguous.

    Example:
        >>> infer_layout((84, 84, 4)), infer_layout((4, 84, 84)), infer_layout((210, 160, 3))
        ('hwc', 'chw', 'hwc')
    """
    if len(shape) == 2:
        return "hw"
    if len(shape) == 3:
        last, first = shape[-1] <= _MAX_STACK, shape[0] <= _MAX_STACK
        if last and not first:
            return "hwc"
        if first and not last:
            return "chw"
    raise InvalidArgument(
        f"cannot tell the image layout of shape {shape}: pass `layout=` as one of {LAYOUTS} (H, W; H, W, C; or C, H, W)"
    )


def check_layout(layout: str | None, shape: tuple[int, ...]) -> str:
    """``layout`` checked against ``shape``, or inferred from it when None."""
    if layout is None:
        return infer_layout(shape)
    if layout not in LAYOUTS:
        raise InvalidArgument(f"`layout` must be one of {LAYOUTS}, received {layout!r}")
    if len(shape) != len(layout):
        raise InvalidArgument(f"`layout` {layout!r} needs {len(layout)} axes, received shape {shape}")
    return layout


def batch_layout(shape: tuple[int, ...], layout: str | None, name: str = "x") -> str:
    """The layout of the observations in a batch of this shape: ``layout`` checked, or inferred when None.

    Inference reads the last axes: a 2-D array is one grayscale frame, a 3-D array with no channel axis at
    either end (both ends longer than 4) is a batch of grayscale frames, and otherwise :func:`infer_layout`
    decides on the last three axes. ``name`` names the array in error messages.

    Example:
        >>> batch_layout((8, 84, 84), None), batch_layout((8, 4, 84, 84), None), batch_layout((8, 84, 84), "chw")
        ('hw', 'chw', 'chw')
    """
    if layout is not None:
        if layout not in LAYOUTS or len(shape) < len(layout):
            check_layout(layout, shape)  # raises: an unknown layout, or fewer axes than it needs
        return check_layout(layout, shape[-len(layout) :])
    if len(shape) < 2:
        raise InvalidArgument(f"`{name}` must have at least 2 axes (H, W), received shape {shape}")
    if len(shape) == 2 or (len(shape) == 3 and shape[0] > _MAX_STACK and shape[-1] > _MAX_STACK):
        return "hw"
    return infer_layout(shape[-3:])


def is_rgb(shape: tuple[int, ...], layout: str) -> bool:
    """Whether an observation of this shape and layout is one RGB frame (rather than grayscale frames)."""
    return layout != "hw" and shape[layout.index("c") - len(layout)] == 3


def frames(x: NDArray[Any], layout: str) -> NDArray[Any]:
    """A batch of observations (any leading axes) as frames: (M, H, W) grayscale or (M, H, W, 3) RGB.

    Views where the layout allows it; channel-last stacks and channel-first RGB need a transposed copy.

    Example:
        >>> import numpy as np
        >>> frames(np.zeros((8, 84, 84, 4), np.uint8), "hwc").shape
        (32, 84, 84)
    """
    x = np.asarray(x)
    image = x.shape[-len(layout) :]
    if layout == "hw":
        return x.reshape(-1, *image)
    rgb = is_rgb(image, layout)
    if layout == "hwc":
        return x.reshape(-1, *image) if rgb else np.moveaxis(x, -1, -3).reshape(-1, *image[:2])
    return np.moveaxis(x, -3, -1).reshape(-1, *image[1:], 3) if rgb else x.reshape(-1, *image[1:])


def unframe(f: NDArray[Any], shape: tuple[int, ...], layout: str) -> NDArray[Any]:
    """The inverse of :func:`frames`: frames back into observations of ``shape`` (batch axes included)."""
    image = shape[-len(layout) :]
    batch = shape[: -len(layout)]
    if layout == "hw":
        return f.reshape(shape)
    rgb = is_rgb(image, layout)
    if layout == "hwc":
        if rgb:
            return f.reshape(shape)
        return np.moveaxis(f.reshape(*batch, image[2], *image[:2]), -3, -1)
    if rgb:
        return np.moveaxis(f.reshape(*batch, *image[1:], 3), -1, -3)
    return f.reshape(shape)
