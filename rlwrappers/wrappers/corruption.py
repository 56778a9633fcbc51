"""Natural image corruptions as observation perturbations: brightness, blur, rotation, shifts, perspective, JPEG.

The six components of the natural perturbation framework of Korkmaz (2023), *Assessing Reinforcement Learning
Policies via Natural Corruptions at the Edge of Imperceptibility* (Section 3, Table 1). Each corrupts every
image observation the same way, with no randomness: a change of the environment or of the agent's camera.
The transforms are the pure batched functions of :mod:`rlwrappers.functional.corruptions` (the vector version:
apply them to a batch of observations), prepared once per wrapper for the observation's shape and layout.

Where to wrap: around the raw ALE env, before any Atari preprocessing (the default and recommended place, a
change of the scene or camera), or after preprocessing and frame stacking (a change of the network's input).
See ``docs/corruptions.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray
from typing_extensions import override

from rlwrappers import _check
from rlwrappers.core import Record, SingleLayer, register_wrapper
from rlwrappers.error import IncompatibleSpace
from rlwrappers.functional import corruptions
from rlwrappers.functional.images import check_layout
from rlwrappers.schedule import Schedule
from rlwrappers.wrappers.observation import Keys, ObservationPerturbation

__all__ = [
    "JPEG",
    "BrightnessContrast",
    "BrightnessContrastPerturbation",
    "JPEGPerturbation",
    "MedianBlur",
    "MedianBlurPerturbation",
    "Perspective",
    "PerspectivePerturbation",
    "Rotate",
    "RotatePerturbation",
    "Translate",
    "TranslatePerturbation",
    "image_space",
]


def image_space(space: gym.Space[Any], who: str, layout: str | None = None) -> tuple[gym.spaces.Box, str]:
    """The uint8 Box image space of ``space`` and its layout; raises :class:`IncompatibleSpace` otherwise.

    ``who`` names the caller in the error message.
    """
    if not isinstance(space, gym.spaces.Box) or space.dtype != np.uint8 or len(space.shape) not in (2, 3):
        raise IncompatibleSpace(
            f"{who} needs an image observation space (a uint8 Box of shape (H, W), (H, W, C) or (C, H, W)),"
            f" received {space}"
        )
    return space, check_layout(layout, space.shape)


@dataclass(kw_only=True)
class _Corruption(ObservationPerturbation):
    """Shared binding and hook of the image corruptions: a kernel prepared once in :meth:`bind_array`.

    On a Dict or Tuple observation a corruption acts on the pixel images (uint8, H x W x 3 or 1, at least
    32 x 32) unless ``keys`` names the entries: a symbolic grid is never taken for a picture unasked.
    """

    acts_on = "image"

    if TYPE_CHECKING:  # each corruption declares it last among its parameters
        layout: str | None

    def _kernel(self, image: tuple[int, ...], layout: str) -> corruptions.Kernel:
        """The corruption prepared for observations of this shape and layout."""
        raise NotImplementedError

    @override
    def bind_array(self, env: gym.Env[Any, Any], space: gym.Space[Any], action_space: gym.Space[Any]) -> None:
        space, layout = image_space(space, self.name, self.layout)
        if not (np.all(space.low == 0) and np.all(space.high == 255)):
            raise IncompatibleSpace(f"{self.name} needs an image space with bounds [0, 255], received {space}")
        self._apply: corruptions.Kernel = self._kernel(space.shape, layout)

    @override
    def observe(self, obs: Any, rng: np.random.Generator) -> tuple[Any, Record]:
        return self._apply(obs), {}


@dataclass(kw_only=True)
class BrightnessContrastPerturbation(_Corruption):
    """Changes brightness and contrast: every pixel ``s`` becomes ``s * alpha + beta``, saturated to [0, 255].

    Seed 004's equation (4) (Korkmaz 2023), rounded to the nearest grey level and saturated (never the
    absolute value). Table 1 uses ``[alpha, beta]`` = [1.2, 40], [0.9, 20], [1.7, 40], [2.4, -275] and
    [2.4, -260]. Vector version: :func:`rlwrappers.functional.corruptions.brightness_contrast`.

    Args:
        alpha: the contrast gain (1 keeps it).
        beta: the brightness offset in grey levels (0 keeps it).
        layout: the observation's layout, "hw", "hwc" or "chw"; None infers it from the space's shape.
    """

    name = "brightness_contrast"

    alpha: float = 1.2
    beta: float = 40.0
    layout: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self.alpha = _check.number("alpha", self.alpha)
        self.beta = _check.number("beta", self.beta)
        self.layout = corruptions.check_layout_arg(self.layout)

    @override
    def _kernel(self, image: tuple[int, ...], layout: str) -> corruptions.Kernel:
        return corruptions.brightness_contrast_kernel(self.alpha, self.beta)


@dataclass(kw_only=True)
class MedianBlurPerturbation(_Corruption):
    """Blurs every frame with a ``k`` x ``k`` median filter (seed 004's blurring; Korkmaz 2023).

    Each channel of each frame; borders replicate the edge pixels. Table 1 uses ``k`` = 3 and 5. Vector
    version: :func:`rlwrappers.functional.corruptions.median_blur`.

    Args:
        k: the kernel size in pixels, odd, from 1 (which keeps the frame) to 255.
        layout: the observation's layout, "hw", "hwc" or "chw"; None infers it from the space's shape.
    """

    name = "median_blur"

    k: int = 3
    layout: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self.k = corruptions.check_kernel_size(self.k)
        self.layout = corruptions.check_layout_arg(self.layout)

    @override
    def _kernel(self, image: tuple[int, ...], layout: str) -> corruptions.Kernel:
        return corruptions.median_blur_kernel(image, layout, self.k)


@dataclass(kw_only=True)
class RotatePerturbation(_Corruption):
    """Rotates every frame about its centre by ``degrees`` (seed 004's rotation; Korkmaz 2023).

    Bilinear, black where nothing maps; positive angles turn the content counter-clockwise as displayed.
    Table 1 uses 1.4 to 5 degrees. Vector version: :func:`rlwrappers.functional.corruptions.rotate`.

    Args:
        degrees: the angle in degrees (0 keeps the frame).
        layout: the observation's layout, "hw", "hwc" or "chw"; None infers it from the space's shape.
    """

    name = "rotate"

    degrees: float = 1.4
    layout: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self.degrees = _check.number("degrees", self.degrees)
        self.layout = corruptions.check_layout_arg(self.layout)

    @override
    def _kernel(self, image: tuple[int, ...], layout: str) -> corruptions.Kernel:
        return corruptions.rotate_kernel(image, layout, self.degrees)


@dataclass(kw_only=True)
class TranslatePerturbation(_Corruption):
    """Shifts every frame by ``ti`` pixels along x and ``tj`` along y (seed 004's shifting; Korkmaz 2023).

    Positive ``ti`` moves the content right, positive ``tj`` down; black fills what enters the frame. Table 1
    uses ``[ti, tj]`` = [1, 1], [0, 1], [2, 1], [1, 2] and [2, 2]. Vector version:
    :func:`rlwrappers.functional.corruptions.translate`.

    Args:
        ti: the shift along x (columns), in whole pixels.
        tj: the shift along y (rows), in whole pixels.
        layout: the observation's layout, "hw", "hwc" or "chw"; None infers it from the space's shape.
    """

    name = "translate"

    ti: int = 1
    tj: int = 1
    layout: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self.ti = corruptions.check_shift("ti", self.ti)
        self.tj = corruptions.check_shift("tj", self.tj)
        self.layout = corruptions.check_layout_arg(self.layout)

    @override
    def _kernel(self, image: tuple[int, ...], layout: str) -> corruptions.Kernel:
        return corruptions.translate_kernel(image, layout, self.ti, self.tj)


@dataclass(kw_only=True)
class PerspectivePerturbation(_Corruption):
    """Applies a fixed perspective transformation whose corners move at most ``norm`` pixels (Korkmaz 2023).

    Seed 004's perspective transformation: the corners of every frame move by ``norm * directions[k]``, so
    ``norm`` is the largest corner displacement (Table 1 uses 1 to 3 pixels). Without ``directions`` they are
    drawn once from ``np.random.default_rng(seed)`` with
    :func:`rlwrappers.functional.corruptions.perspective_directions`: the same camera distortion in every episode
    and every run. Vector version:
    :func:`rlwrappers.functional.corruptions.perspective`.

    Args:
        norm: the largest corner displacement in pixels, >= 0 (0 keeps the frame).
        directions: four (dx, dy) corner directions (top-left, top-right, bottom-right, bottom-left) with
            largest norm 1, or None to draw them from ``seed``.
        seed: the seed the directions are drawn from when ``directions`` is None.
        layout: the observation's layout, "hw", "hwc" or "chw"; None infers it from the space's shape.
    """

    name = "perspective"

    norm: float = 1.0
    directions: tuple[tuple[float, float], ...] | None = None
    seed: int = 0
    layout: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self.norm = _check.nonnegative("norm", self.norm)
        if self.directions is not None:
            rows = corruptions.check_directions(self.directions).tolist()
            self.directions = tuple((float(dx), float(dy)) for dx, dy in rows)
        self.seed = _check.integer("seed", self.seed, minimum=0)
        self.layout = corruptions.check_layout_arg(self.layout)

    def corner_directions(self) -> NDArray[np.float64]:
        """The (4, 2) corner directions in use: ``directions``, or those drawn from ``seed``."""
        if self.directions is not None:
            return np.array(self.directions, dtype=np.float64)
        return corruptions.perspective_directions(np.random.default_rng(self.seed))

    @override
    def _kernel(self, image: tuple[int, ...], layout: str) -> corruptions.Kernel:
        return corruptions.perspective_kernel(image, layout, self.norm, self.corner_directions())


@dataclass(kw_only=True)
class JPEGPerturbation(_Corruption):
    """Adds JPEG compression artifacts: every frame is encoded at ``quality`` and decoded (Korkmaz 2023).

    Seed 004's compression artifacts, per RGB or grayscale frame; Table 1 does not list the quality used. JPEG
    has no identity: ``quality=100`` is the mildest. Vector version: :func:`rlwrappers.functional.corruptions.jpeg`.

    Args:
        quality: the JPEG quality, an integer in [1, 100] (lower: stronger artifacts).
        layout: the observation's layout, "hw", "hwc" or "chw"; None infers it from the space's shape.
    """

    name = "jpeg"

    quality: int = 20
    layout: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        self.quality = corruptions.check_quality(self.quality)
        self.layout = corruptions.check_layout_arg(self.layout)

    @override
    def _kernel(self, image: tuple[int, ...], layout: str) -> corruptions.Kernel:
        return corruptions.jpeg_kernel(image, layout, self.quality)


# -- the named wrappers -------------------------------------------------------------------------------------


@register_wrapper("brightness_contrast")
class BrightnessContrast(SingleLayer):
    """Changes the brightness and contrast of every image observation (Korkmaz 2023, equation 4).

    ``s * alpha + beta`` on every pixel, saturated to [0, 255]; see :class:`BrightnessContrastPerturbation`.
    Any uint8 image space with bounds [0, 255]. No vector version: wrap each sub-env, or use
    :func:`rlwrappers.functional.corruptions.brightness_contrast` on batches.

    Example:
        >>> import gymnasium as gym, numpy as np
        >>> from rlwrappers.testing import SpaceEnv
        >>> from rlwrappers.wrappers.corruption import BrightnessContrast
        >>> base = SpaceEnv(gym.spaces.Box(0, 255, (210, 160, 3), np.uint8), gym.spaces.Discrete(4))
        >>> env = BrightnessContrast(base, alpha=2.4, beta=-275)
        >>> obs, info = env.reset(seed=0)
        >>> int(obs.max()), info["rlwrappers"]  # 255 * 2.4 - 275 = 337, saturated
        (255, {'brightness_contrast': {'active': True}})
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        alpha: float = 1.2,
        beta: float = 40.0,
        layout: str | None = None,
        *,
        keys: Keys = None,
        when: str | Schedule | None = None,
        label: str | None = None,
    ):
        """Wraps ``env``; ``when`` is the schedule (default: always), ``label`` names the log columns.

        ``keys`` chooses the entries of a Dict or Tuple observation (default: every pixel image entry).
        """
        self._setup(
            env, BrightnessContrastPerturbation, dict(keys=keys, alpha=alpha, beta=beta, layout=layout), when, label
        )


@register_wrapper("median_blur")
class MedianBlur(SingleLayer):
    """Median-blurs every image observation with a ``k`` x ``k`` kernel (Korkmaz 2023, blurring).

    See :class:`MedianBlurPerturbation`. Any uint8 image space with bounds [0, 255]. No vector version: wrap
    each sub-env, or use :func:`rlwrappers.functional.corruptions.median_blur` on batches.

    Example:
        >>> import gymnasium as gym, numpy as np
        >>> from rlwrappers.testing import SpaceEnv
        >>> from rlwrappers.wrappers.corruption import MedianBlur
        >>> env = MedianBlur(SpaceEnv(gym.spaces.Box(0, 255, (4, 84, 84), np.uint8), gym.spaces.Discrete(4)), k=5)
        >>> obs, info = env.reset(seed=0)
        >>> obs.shape, env.specs
        ((4, 84, 84), ['median_blur(k=5)'])
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        k: int = 3,
        layout: str | None = None,
        *,
        keys: Keys = None,
        when: str | Schedule | None = None,
        label: str | None = None,
    ):
        """Wraps ``env``; ``when`` is the schedule (default: always), ``label`` names the log columns.

        ``keys`` chooses the entries of a Dict or Tuple observation (default: every pixel image entry).
        """
        self._setup(env, MedianBlurPerturbation, dict(keys=keys, k=k, layout=layout), when, label)


@register_wrapper("rotate")
class Rotate(SingleLayer):
    """Rotates every image observation about its centre by ``degrees`` (Korkmaz 2023, rotation).

    Bilinear, black outside; see :class:`RotatePerturbation`. Any uint8 image space with bounds [0, 255]. No
    vector version: wrap each sub-env, or use :func:`rlwrappers.functional.corruptions.rotate` on batches.

    Example:
        >>> import gymnasium as gym, numpy as np
        >>> from rlwrappers.testing import SpaceEnv
        >>> from rlwrappers.wrappers.corruption import Rotate
        >>> env = Rotate(SpaceEnv(gym.spaces.Box(0, 255, (84, 84, 4), np.uint8), gym.spaces.Discrete(4)), degrees=3)
        >>> obs, info = env.reset(seed=0)
        >>> obs.shape, env.observation_space.dtype
        ((84, 84, 4), dtype('uint8'))
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        degrees: float = 1.4,
        layout: str | None = None,
        *,
        keys: Keys = None,
        when: str | Schedule | None = None,
        label: str | None = None,
    ):
        """Wraps ``env``; ``when`` is the schedule (default: always), ``label`` names the log columns.

        ``keys`` chooses the entries of a Dict or Tuple observation (default: every pixel image entry).
        """
        self._setup(env, RotatePerturbation, dict(keys=keys, degrees=degrees, layout=layout), when, label)


@register_wrapper("translate")
class Translate(SingleLayer):
    """Shifts every image observation by ``ti`` pixels along x and ``tj`` along y (Korkmaz 2023, shifting).

    Black fills what enters the frame; see :class:`TranslatePerturbation`. Any uint8 image space with bounds
    [0, 255]. No vector version: wrap each sub-env, or use :func:`rlwrappers.functional.corruptions.translate`
    on batches.

    Example:
        >>> import gymnasium as gym, numpy as np
        >>> from rlwrappers.testing import SpaceEnv
        >>> from rlwrappers.wrappers.corruption import Translate
        >>> env = Translate(SpaceEnv(gym.spaces.Box(0, 255, (84, 84), np.uint8), gym.spaces.Discrete(4)), ti=2, tj=1)
        >>> obs, info = env.reset(seed=0)
        >>> int(obs[0].max()), int(obs[:, :2].max())  # the first row and the first two columns are black
        (0, 0)
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        ti: int = 1,
        tj: int = 1,
        layout: str | None = None,
        *,
        keys: Keys = None,
        when: str | Schedule | None = None,
        label: str | None = None,
    ):
        """Wraps ``env``; ``when`` is the schedule (default: always), ``label`` names the log columns.

        ``keys`` chooses the entries of a Dict or Tuple observation (default: every pixel image entry).
        """
        self._setup(env, TranslatePerturbation, dict(keys=keys, ti=ti, tj=tj, layout=layout), when, label)


@register_wrapper("perspective")
class Perspective(SingleLayer):
    """Applies a fixed perspective transformation to every image observation (Korkmaz 2023).

    The frame's corners move by at most ``norm`` pixels, along ``directions`` or along directions drawn once
    from ``seed``; see :class:`PerspectivePerturbation`. Any uint8 image space with bounds [0, 255]. No vector
    version: wrap each sub-env, or use :func:`rlwrappers.functional.corruptions.perspective` on batches.

    Example:
        >>> import gymnasium as gym, numpy as np
        >>> from rlwrappers.testing import SpaceEnv
        >>> from rlwrappers.wrappers.corruption import Perspective
        >>> env = Perspective(SpaceEnv(gym.spaces.Box(0, 255, (84, 84), np.uint8), gym.spaces.Discrete(4)), norm=3)
        >>> obs, info = env.reset(seed=0)
        >>> env.specs, env.perturbations[0].corner_directions().shape
        (['perspective(norm=3.0)'], (4, 2))
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        norm: float = 1.0,
        directions: Any = None,
        seed: int = 0,
        layout: str | None = None,
        *,
        keys: Keys = None,
        when: str | Schedule | None = None,
        label: str | None = None,
    ):
        """Wraps ``env``; ``when`` is the schedule (default: always), ``label`` names the log columns.

        ``keys`` chooses the entries of a Dict or Tuple observation (default: every pixel image entry).
        """
        params = dict(keys=keys, norm=norm, directions=directions, seed=seed, layout=layout)
        self._setup(env, PerspectivePerturbation, params, when, label)


@register_wrapper("jpeg")
class JPEG(SingleLayer):
    """Adds JPEG compression artifacts to every image observation (Korkmaz 2023, compression artifacts).

    Each RGB or grayscale frame is encoded at ``quality`` and decoded; see :class:`JPEGPerturbation`. Any uint8
    image space with bounds [0, 255]. No vector version: wrap each sub-env, or use
    :func:`rlwrappers.functional.corruptions.jpeg` on batches.

    Example:
        >>> import gymnasium as gym, numpy as np
        >>> from rlwrappers.testing import SpaceEnv
        >>> from rlwrappers.wrappers.corruption import JPEG
        >>> env = JPEG(SpaceEnv(gym.spaces.Box(0, 255, (210, 160, 3), np.uint8), gym.spaces.Discrete(4)), quality=10)
        >>> obs, info = env.reset(seed=0)
        >>> obs.shape, info["rlwrappers"]
        ((210, 160, 3), {'jpeg': {'active': True}})
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        quality: int = 20,
        layout: str | None = None,
        *,
        keys: Keys = None,
        when: str | Schedule | None = None,
        label: str | None = None,
    ):
        """Wraps ``env``; ``when`` is the schedule (default: always), ``label`` names the log columns.

        ``keys`` chooses the entries of a Dict or Tuple observation (default: every pixel image entry).
        """
        self._setup(env, JPEGPerturbation, dict(keys=keys, quality=quality, layout=layout), when, label)
