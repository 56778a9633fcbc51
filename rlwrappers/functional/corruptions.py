"""Natural corruptions of image observations, as pure functions of a batch of uint8 frames.

The six corruptions of the natural perturbation framework of Korkmaz (2023), *Assessing Reinforcement Learning
Policies via Natural Corruptions at the Edge of Imperceptibility* (Section 3, Table 1): brightness and
contrast, median blurring, rotation, shifting, perspective transformation and JPEG compression artifacts.
Each models a change of the environment or of the agent's camera, not an adversary.

Every function takes ``x``, a uint8 array of frames with any leading batch axes, and its ``layout`` (one of
:data:`rlwrappers.functional.images.LAYOUTS`; None infers it from the last axes), and returns a new uint8 array of the
same shape; ``x`` is never modified. Grayscale frames, RGB frames and stacks of grayscale frames, channels last
(84, 84, 4) or first (4, 84, 84), all work: a stack is corrupted frame by frame with the same parameters.
Layout inference is :func:`rlwrappers.functional.images.batch_layout`: when neither end of the last three axes is a
channel axis, the array is a batch of grayscale frames (pass ``layout="hw"`` to say so for a batch
of at most four of them). The observation wrappers of :mod:`rlwrappers.wrappers.corruption` apply the same
functions to each observation.

Frame axes follow opencv's image coordinates: ``x`` runs along the columns (to the right) and ``y`` along the
rows (downwards), with ``(0, 0)`` the centre of the top-left pixel. The functions need opencv, the
``corruptions`` extra, which is imported on first use.

Example:
    >>> import numpy as np
    >>> from rlwrappers.functional import corruptions
    >>> stack = np.full((2, 4, 84, 84), 100, np.uint8)  # a batch of two channel-first stacks
    >>> out = corruptions.brightness_contrast(stack, alpha=2.4, beta=-275)
    >>> out.shape, int(out.max()), int(stack.max())
    ((2, 4, 84, 84), 0, 100)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Integral
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from rlwrappers import _check
from rlwrappers._optional import require
from rlwrappers.error import InvalidArgument, InvalidType
from rlwrappers.functional import images

__all__ = [
    "Kernel",
    "brightness_contrast",
    "brightness_contrast_kernel",
    "jpeg",
    "jpeg_kernel",
    "median_blur",
    "median_blur_kernel",
    "perspective",
    "perspective_directions",
    "perspective_kernel",
    "rotate",
    "rotate_kernel",
    "translate",
    "translate_kernel",
]

#: A corruption prepared for one frame shape and layout: takes a batch of such frames, returns a new one.
Kernel = Callable[[NDArray[np.uint8]], NDArray[np.uint8]]
#: Channel counts that opencv's warps take in one call and warp exactly as frame by frame (others are split).
_WARP_CHANNELS: Final = (1, 3, 4)
#: Channel counts that opencv's median blur takes in one call for every kernel size.
_MEDIAN_CHANNELS: Final = (1, 3, 4)
#: How far the largest row norm of perspective directions may be from 1.
_UNIT_TOLERANCE: Final = 1e-6


def _cv2() -> Any:
    return require("cv2", purpose="image corruptions")


# -- arguments ----------------------------------------------------------------------------------------------


def check_layout_arg(layout: Any) -> str | None:
    """``layout`` if it is None or one of :data:`rlwrappers.functional.images.LAYOUTS`; raises otherwise."""
    return None if layout is None else _check.choice("layout", layout, images.LAYOUTS)


def _frames_arg(x: Any, layout: str | None) -> tuple[NDArray[np.uint8], str]:
    """``x`` checked to be a uint8 array of frames, and its layout (inferred when None)."""
    if not isinstance(x, np.ndarray):
        raise InvalidType(f"`x` must be a uint8 numpy array of frames, received {type(x).__name__}")
    if x.dtype != np.uint8:
        raise InvalidType(f"`x` must be a uint8 array of frames, received dtype {x.dtype}")
    return x, images.batch_layout(x.shape, check_layout_arg(layout))


def _image_shape(x: NDArray[np.uint8], layout: str) -> tuple[int, ...]:
    return tuple(x.shape[-len(layout) :])


def _size(image: tuple[int, ...], layout: str) -> tuple[int, int]:
    """The height and width of a frame of this shape and layout."""
    return (image[0], image[1]) if layout == "hwc" else (image[-2], image[-1])


#: The largest median kernel: opencv's median filter fails on some larger ones (from about 360 pixels on the
#: smallest frames), and one this wide already takes its median over most of an Atari frame.
MAX_KERNEL_SIZE: Final = 255


def check_kernel_size(k: Any) -> int:
    """``k`` as an odd int from 1 to :data:`MAX_KERNEL_SIZE` (a median blur's kernel size); raises otherwise."""
    if isinstance(k, bool) or not isinstance(k, Integral):
        raise InvalidType(f"`k` must be an odd integer >= 1, received {k!r} ({type(k).__name__})")
    if int(k) < 1 or int(k) % 2 == 0:
        raise InvalidArgument(f"`k` must be an odd integer >= 1, received {k!r}")
    if int(k) > MAX_KERNEL_SIZE:
        raise InvalidArgument(f"`k` must be at most {MAX_KERNEL_SIZE}, received {k!r}")
    return int(k)


def check_shift(name: str, t: Any) -> int:
    """``t`` as an int number of pixels; raises otherwise."""
    if isinstance(t, bool) or not isinstance(t, Integral):
        raise InvalidType(f"`{name}` must be an integer number of pixels, received {t!r} ({type(t).__name__})")
    return int(t)


def check_quality(quality: Any) -> int:
    """``quality`` as an int in [1, 100] (a JPEG quality); raises otherwise."""
    if isinstance(quality, bool) or not isinstance(quality, Integral):
        raise InvalidType(f"`quality` must be an integer in [1, 100], received {quality!r} ({type(quality).__name__})")
    if not 1 <= int(quality) <= 100:
        raise InvalidArgument(f"`quality` must be an integer in [1, 100], received {quality!r}")
    return int(quality)


def check_directions(directions: Any) -> NDArray[np.float64]:
    """``directions`` as a (4, 2) float array of finite corner directions whose largest row norm is 1."""
    try:
        d = np.asarray(directions, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidType(f"`directions` must be four pairs (dx, dy) of numbers, received {directions!r}") from None
    if d.shape != (4, 2):
        raise InvalidArgument(f"`directions` must have shape (4, 2), one (dx, dy) per corner, received shape {d.shape}")
    if not np.all(np.isfinite(d)):
        raise InvalidArgument(f"`directions` must be finite, received {d.tolist()}")
    largest = float(np.max(np.hypot(d[:, 0], d[:, 1])))
    if abs(largest - 1.0) > _UNIT_TOLERANCE:
        raise InvalidArgument(
            f"`directions` must have largest row norm 1 (so that `norm` is the largest corner displacement),"
            f" received largest norm {largest!r}"
        )
    return d


# -- kernels: a corruption prepared for one frame shape and layout -----------------------------------------


def _copy(x: NDArray[np.uint8]) -> NDArray[np.uint8]:
    return np.array(x, dtype=np.uint8, order="C", copy=True)


def _into(call: Callable[[NDArray[np.uint8], NDArray[np.uint8]], Any], src: NDArray[Any], dst: NDArray[Any]) -> None:
    """Runs ``call(src, dst)``, an opencv function given ``dst=``, making sure the result lands in ``dst``."""
    result = call(src, dst)
    if result is not None and result.__array_interface__["data"][0] != dst.__array_interface__["data"][0]:
        dst[...] = np.reshape(result, dst.shape)


def _per_image(
    image: tuple[int, ...],
    layout: str,
    call: Callable[[NDArray[np.uint8], NDArray[np.uint8]], Any],
    channels: tuple[int, ...],
) -> Kernel:
    """A kernel applying a channel-wise opencv function once per frame, or once per multi-channel image.

    ``call(src, dst)`` corrupts one contiguous (H, W) frame or (H, W, C) image into ``dst``. Channels-last
    images whose channel count is in ``channels`` go to opencv whole; every other layout is a run of
    contiguous (H, W) planes (grayscale frames, stacked frames or the planes of a channel-first RGB frame).
    """
    height, width = _size(image, layout)
    whole = layout == "hwc" and image[-1] > 1 and image[-1] in channels
    split = layout == "hwc" and image[-1] > 1 and not whole

    def planes(x: NDArray[np.uint8]) -> NDArray[np.uint8]:
        src = np.ascontiguousarray(x)
        out = np.empty_like(src)
        s, d = src.reshape(-1, height, width), out.reshape(-1, height, width)
        for i in range(s.shape[0]):
            _into(call, s[i], d[i])
        return out

    def whole_images(x: NDArray[np.uint8]) -> NDArray[np.uint8]:
        src = np.ascontiguousarray(x)
        out = np.empty_like(src)
        s, d = src.reshape(-1, *image), out.reshape(-1, *image)
        for i in range(s.shape[0]):
            _into(call, s[i], d[i])
        return out

    def channelwise(x: NDArray[np.uint8]) -> NDArray[np.uint8]:
        out = planes(np.moveaxis(x, -1, -3))
        return np.ascontiguousarray(np.moveaxis(out, -3, -1))

    return whole_images if whole else channelwise if split else planes


def brightness_contrast_kernel(alpha: float, beta: float) -> Kernel:
    """The kernel of :func:`brightness_contrast` (one lookup table for any frame shape)."""
    if alpha == 1.0 and beta == 0.0:
        return _copy
    cv2 = _cv2()
    levels = np.arange(256, dtype=np.float64) * alpha + beta
    table = np.clip(np.rint(levels), 0, 255).astype(np.uint8)

    def apply(x: NDArray[np.uint8]) -> NDArray[np.uint8]:
        src = np.ascontiguousarray(x)
        out = np.empty_like(src)
        if src.size:
            flat = src.reshape(-1, src.shape[-1])
            _into(lambda s, d: cv2.LUT(s, table, dst=d), flat, out.reshape(flat.shape))
        return out

    return apply


def median_blur_kernel(image: tuple[int, ...], layout: str, k: int) -> Kernel:
    """The kernel of :func:`median_blur` for frames of shape ``image`` in ``layout``."""
    if k == 1:
        return _copy
    cv2 = _cv2()
    return _per_image(image, layout, lambda s, d: cv2.medianBlur(s, k, dst=d), _MEDIAN_CHANNELS)


def _warp(image: tuple[int, ...], layout: str, matrix: NDArray[np.float64]) -> Kernel:
    """Bilinear warp of every frame by an affine (2, 3) or perspective (3, 3) matrix, black outside."""
    cv2 = _cv2()
    height, width = _size(image, layout)
    warp = cv2.warpAffine if matrix.shape == (2, 3) else cv2.warpPerspective
    flags, border = cv2.INTER_LINEAR, cv2.BORDER_CONSTANT

    def call(s: NDArray[np.uint8], d: NDArray[np.uint8]) -> Any:
        return warp(s, matrix, (width, height), dst=d, flags=flags, borderMode=border, borderValue=0)

    return _per_image(image, layout, call, _WARP_CHANNELS)


def _rotation_matrix(image: tuple[int, ...], layout: str, degrees: float) -> NDArray[np.float64]:
    height, width = _size(image, layout)
    centre = ((width - 1) / 2.0, (height - 1) / 2.0)
    return np.asarray(_cv2().getRotationMatrix2D(centre, degrees, 1.0), dtype=np.float64)


def rotate_kernel(image: tuple[int, ...], layout: str, degrees: float) -> Kernel:
    """The kernel of :func:`rotate` for frames of shape ``image`` in ``layout``."""
    if degrees == 0.0:
        return _copy
    return _warp(image, layout, _rotation_matrix(image, layout, degrees))


def translate_kernel(image: tuple[int, ...], layout: str, ti: int, tj: int) -> Kernel:
    """The kernel of :func:`translate` for frames of shape ``image`` in ``layout``."""
    if ti == 0 and tj == 0:
        return _copy
    height, width = _size(image, layout)

    def spans(t: int, n: int) -> tuple[slice, slice]:
        kept = max(n - abs(t), 0)
        to, start = max(t, 0), max(-t, 0)
        return slice(to, to + kept), slice(start, start + kept)

    rows_to, rows_from = spans(tj, height)
    cols_to, cols_from = spans(ti, width)
    tail = (slice(None),) if layout == "hwc" else ()
    to = (Ellipsis, rows_to, cols_to, *tail)
    start = (Ellipsis, rows_from, cols_from, *tail)

    def apply(x: NDArray[np.uint8]) -> NDArray[np.uint8]:
        out = np.zeros(x.shape, dtype=np.uint8)
        out[to] = x[start]
        return out

    return apply


def _corners(height: int, width: int) -> NDArray[np.float64]:
    """The centres of a frame's corner pixels: top-left, top-right, bottom-right, bottom-left, as (x, y)."""
    return np.array([[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]], dtype=np.float64)


def _perspective_matrix(
    image: tuple[int, ...], layout: str, norm: float, directions: NDArray[np.float64]
) -> NDArray[np.float64]:
    height, width = _size(image, layout)
    source = _corners(height, width)
    target = source + norm * directions
    edges = np.roll(target, -1, axis=0) - target
    turns = edges[:, 0] * np.roll(edges, -1, axis=0)[:, 1] - edges[:, 1] * np.roll(edges, -1, axis=0)[:, 0]
    if not np.all(turns > 0):
        raise InvalidArgument(
            f"`norm` {norm!r} moves the corners of a {height}x{width} frame past each other; the displaced"
            " corners must stay a convex quadrangle in the same order"
        )
    matrix = _cv2().getPerspectiveTransform(source.astype(np.float32), target.astype(np.float32))
    return np.asarray(matrix, dtype=np.float64)


def perspective_kernel(image: tuple[int, ...], layout: str, norm: float, directions: NDArray[np.float64]) -> Kernel:
    """The kernel of :func:`perspective` for frames of shape ``image`` in ``layout``."""
    if norm == 0.0:
        return _copy
    return _warp(image, layout, _perspective_matrix(image, layout, norm, directions))


def jpeg_kernel(image: tuple[int, ...], layout: str, quality: int) -> Kernel:
    """The kernel of :func:`jpeg` for frames of shape ``image`` in ``layout``."""
    cv2 = _cv2()
    params = [int(cv2.IMWRITE_JPEG_QUALITY), quality]
    rgb = images.is_rgb(image, layout)
    read_rgb = getattr(cv2, "IMREAD_COLOR_RGB", None)  # opencv >= 4.10 decodes straight to RGB

    def gray(frame: NDArray[np.uint8]) -> NDArray[np.uint8]:
        _, buffer = cv2.imencode(".jpg", frame, params)
        return np.asarray(cv2.imdecode(buffer, cv2.IMREAD_GRAYSCALE))

    def color(frame: NDArray[np.uint8]) -> NDArray[np.uint8]:
        # opencv reads three channels as BGR: swap so that the luma and chroma are those of the RGB frame.
        _, buffer = cv2.imencode(".jpg", cv2.cvtColor(frame, cv2.COLOR_RGB2BGR), params)
        if read_rgb is not None:
            return np.asarray(cv2.imdecode(buffer, read_rgb))
        return np.asarray(cv2.cvtColor(cv2.imdecode(buffer, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB))

    one = color if rgb else gray

    def apply(x: NDArray[np.uint8]) -> NDArray[np.uint8]:
        frames = images.frames(x, layout)
        out = np.empty(frames.shape, dtype=np.uint8)
        for i in range(frames.shape[0]):
            out[i] = one(np.ascontiguousarray(frames[i]))
        return np.ascontiguousarray(images.unframe(out, x.shape, layout))

    return apply


# -- the corruptions ----------------------------------------------------------------------------------------


def brightness_contrast(
    x: NDArray[np.uint8], alpha: float, beta: float, layout: str | None = None
) -> NDArray[np.uint8]:
    """Linear brightness and contrast change: ``s * alpha + beta``, rounded and saturated to [0, 255].

    Seed 004's equation (4), ``s_adv(i, j) = s(i, j) * alpha + beta``, on every pixel and channel. The result
    is rounded to the nearest level (halves to even) and saturated: values below 0 become 0, values above
    255 become 255. Saturation is what a camera does; opencv's ``convertScaleAbs`` is not used because it
    takes the absolute value before saturating, which would turn dark pixels bright for a negative ``beta``
    (Table 1 uses ``beta=-275``). The map is one 256-entry lookup table applied with ``cv2.LUT``.

    Args:
        x: uint8 frames, any leading batch axes.
        alpha: the contrast gain (1 keeps it).
        beta: the brightness offset, in grey levels (0 keeps it).
        layout: the layout of one observation (``"hw"``, ``"hwc"``, ``"chw"``); None infers it.

    Returns:
        A new uint8 array of ``x``'s shape. ``alpha=1, beta=0`` returns an equal copy.

    Raises:
        InvalidType: ``x`` is not a uint8 array, or ``alpha``/``beta`` are not numbers.
        InvalidArgument: ``alpha`` or ``beta`` is not finite, or the layout does not fit ``x``.

    Example:
        >>> import numpy as np
        >>> brightness_contrast(np.array([[0, 100, 200]], np.uint8), alpha=1.2, beta=40)
        array([[ 40, 160, 255]], dtype=uint8)
    """
    x, layout = _frames_arg(x, layout)
    return brightness_contrast_kernel(_check.number("alpha", alpha), _check.number("beta", beta))(x)


def median_blur(x: NDArray[np.uint8], k: int, layout: str | None = None) -> NDArray[np.uint8]:
    """Median blurring: each pixel becomes the median of the ``k`` x ``k`` neighbourhood around it.

    Applied to each channel of each frame with ``cv2.medianBlur``; borders replicate the edge pixels. RGB and
    channels-last stacks of 3 or 4 frames go to opencv in one call per image.

    Args:
        x: uint8 frames, any leading batch axes.
        k: the kernel size in pixels, odd, from 1 (which keeps the frame) to 255.
        layout: the layout of one observation; None infers it.

    Returns:
        A new uint8 array of ``x``'s shape.

    Raises:
        InvalidType: ``x`` is not a uint8 array, or ``k`` is not an integer.
        InvalidArgument: ``k`` is even or below 1, or the layout does not fit ``x``.

    Example:
        >>> import numpy as np
        >>> frame = np.zeros((5, 5), np.uint8)
        >>> frame[2, 2] = 255  # a single bright pixel is removed by a 3 x 3 median
        >>> int(median_blur(frame, k=3).max())
        0
    """
    x, layout = _frames_arg(x, layout)
    return median_blur_kernel(_image_shape(x, layout), layout, check_kernel_size(k))(x)


def rotate(x: NDArray[np.uint8], degrees: float, layout: str | None = None) -> NDArray[np.uint8]:
    """Rotation of each frame about its centre, bilinear, black where nothing maps.

    The centre is that of the frame, ``((W - 1) / 2, (H - 1) / 2)`` in pixel coordinates; positive angles turn
    the content counter-clockwise as displayed (opencv's ``getRotationMatrix2D`` and ``warpAffine``).

    Args:
        x: uint8 frames, any leading batch axes.
        degrees: the angle in degrees (0 keeps the frame).
        layout: the layout of one observation; None infers it.

    Returns:
        A new uint8 array of ``x``'s shape.

    Raises:
        InvalidType: ``x`` is not a uint8 array, or ``degrees`` is not a number.
        InvalidArgument: ``degrees`` is not finite, or the layout does not fit ``x``.

    Example:
        >>> import numpy as np
        >>> frame = np.arange(9, dtype=np.uint8).reshape(3, 3)
        >>> np.array_equal(rotate(frame, 90.0), np.rot90(frame))  # a quarter turn of a square frame is exact
        True
    """
    x, layout = _frames_arg(x, layout)
    return rotate_kernel(_image_shape(x, layout), layout, _check.number("degrees", degrees))(x)


def translate(x: NDArray[np.uint8], ti: int, tj: int, layout: str | None = None) -> NDArray[np.uint8]:
    """Shifting: moves the content of each frame by ``ti`` pixels along x and ``tj`` along y, black behind.

    Seed 004's ``[t_i, t_j]``: ``ti`` moves the content along the columns (positive: to the right), ``tj`` along
    the rows (positive: downwards). Pixel ``(row, col)`` moves to ``(row + tj, col + ti)``; what leaves the
    frame is lost and what enters is black. Whole pixels need no interpolation: one numpy slice copy for the
    whole batch.

    Args:
        x: uint8 frames, any leading batch axes.
        ti: the shift along x (columns), in whole pixels.
        tj: the shift along y (rows), in whole pixels.
        layout: the layout of one observation; None infers it.

    Returns:
        A new uint8 array of ``x``'s shape.

    Raises:
        InvalidType: ``x`` is not a uint8 array, or a shift is not an integer.
        InvalidArgument: the layout does not fit ``x``.

    Example:
        >>> import numpy as np
        >>> translate(np.array([[1, 2, 3], [4, 5, 6]], np.uint8), ti=1, tj=0)
        array([[0, 1, 2],
               [0, 4, 5]], dtype=uint8)
    """
    x, layout = _frames_arg(x, layout)
    return translate_kernel(_image_shape(x, layout), layout, check_shift("ti", ti), check_shift("tj", tj))(x)


def perspective(x: NDArray[np.uint8], norm: float, directions: Any, layout: str | None = None) -> NDArray[np.uint8]:
    """Perspective transformation: the frame's corners move by ``norm * directions``, bilinear, black outside.

    The transformation is the unique perspective map sending the centres of the four corner pixels (top-left,
    top-right, bottom-right, bottom-left) to those points displaced by ``norm * directions[k]``. Since the
    largest row of ``directions`` has length 1, ``norm`` is the largest distance a corner moves: seed 004's
    perspective norm. Table 1 uses norms of 1 to 3 pixels; :func:`perspective_directions` draws directions.

    Args:
        x: uint8 frames, any leading batch axes.
        norm: the largest corner displacement, in pixels, >= 0 (0 keeps the frame).
        directions: shape (4, 2): one (dx, dy) per corner, in the order above, largest row norm 1.
        layout: the layout of one observation; None infers it.

    Returns:
        A new uint8 array of ``x``'s shape.

    Raises:
        InvalidType: ``x`` is not a uint8 array, or an argument is not numeric.
        InvalidArgument: ``norm`` is negative, ``directions`` has another shape or largest norm, the displaced
            corners are no longer a convex quadrangle, or the layout does not fit ``x``.

    Example:
        >>> import numpy as np
        >>> frame = np.full((84, 84), 200, np.uint8)
        >>> out = perspective(frame, 3.0, [(1, 0), (0, 1), (-1, 0), (0, -1)])
        >>> int(out[0, 0]), int(out[0, 3]), int(out[42, 42])  # the top-left corner moved 3 pixels right
        (0, 200, 200)
    """
    x, layout = _frames_arg(x, layout)
    norm = _check.nonnegative("norm", norm)
    return perspective_kernel(_image_shape(x, layout), layout, norm, check_directions(directions))(x)


def perspective_directions(rng: np.random.Generator) -> NDArray[np.float64]:
    """Four random corner directions for :func:`perspective`: uniform in the unit disk, the largest rescaled to 1.

    Each corner's direction is drawn uniformly in the unit disk (radius ``sqrt(u)``, then an angle), and all
    four are divided by the largest length, so that the perspective ``norm`` is exactly the largest corner
    displacement.

    Args:
        rng: the generator to draw from.

    Returns:
        A (4, 2) float array of (dx, dy) rows, largest row norm 1.

    Raises:
        InvalidType: ``rng`` is not a numpy Generator.

    Example:
        >>> import numpy as np
        >>> d = perspective_directions(np.random.default_rng(0))
        >>> d.shape, round(float(np.hypot(d[:, 0], d[:, 1]).max()), 12)
        ((4, 2), 1.0)
    """
    if not isinstance(rng, np.random.Generator):
        raise InvalidType(f"`rng` must be a numpy Generator, received {type(rng).__name__}")
    radius = np.sqrt(rng.random(4))
    angle = rng.uniform(0.0, 2.0 * math.pi, 4)
    d = np.stack([radius * np.cos(angle), radius * np.sin(angle)], axis=1)
    return np.asarray(d / np.max(np.hypot(d[:, 0], d[:, 1])), dtype=np.float64)


def jpeg(x: NDArray[np.uint8], quality: int, layout: str | None = None) -> NDArray[np.uint8]:
    """JPEG compression artifacts: each frame encoded as JPEG at ``quality`` and decoded back.

    Uses ``cv2.imencode``/``cv2.imdecode`` with opencv's default 4:2:0 chroma subsampling, per RGB frame
    (encoded as colour, its channels passed in opencv's BGR order so that luma and chroma are right) or per
    grayscale frame (a stack's frames one by one). JPEG has no identity: even ``quality=100`` rounds the
    colour conversion and the DCT, so it returns a frame close to ``x`` but not always equal.

    Args:
        x: uint8 frames, any leading batch axes.
        quality: the JPEG quality, an integer in [1, 100] (lower: stronger artifacts).
        layout: the layout of one observation; None infers it.

    Returns:
        A new uint8 array of ``x``'s shape.

    Raises:
        InvalidType: ``x`` is not a uint8 array, or ``quality`` is not an integer.
        InvalidArgument: ``quality`` is outside [1, 100], or the layout does not fit ``x``.

    Example:
        >>> import numpy as np
        >>> frame = np.tile(np.arange(0, 256, 4, dtype=np.uint8), (64, 1))
        >>> out = jpeg(frame, quality=10)
        >>> out.shape == frame.shape and not np.array_equal(out, frame)
        True
    """
    x, layout = _frames_arg(x, layout)
    return jpeg_kernel(_image_shape(x, layout), layout, check_quality(quality))(x)
