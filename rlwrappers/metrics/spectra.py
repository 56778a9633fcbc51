"""Fourier spectra of image observations and their energy per spatial-frequency band.

From *Assessing Reinforcement Learning Policies via Natural Corruptions at the Edge of Imperceptibility*:
Section 2.1 (the 2-D DFT of a state) and Section 5 (the total energy E(f) of the basis functions whose
maximum spatial frequency is f, clean against perturbed, Figures 4 and 5).

Every function takes observations of any layout of :mod:`rlwrappers.functional.images` (``"hw"``, ``"hwc"``, ``"chw"``,
with any leading batch axes), uint8 or float, and works on their frames:

- a grayscale frame is used as it is, in its own units (uint8 values stay 0..255, no rescaling);
- an RGB frame is reduced to its **luminance** ``0.299 R + 0.587 G + 0.114 B`` (ITU-R BT.601, the weights of
  OpenCV's ``RGB2GRAY`` and so of the usual Atari preprocessing), so one frame has one spectrum and Parseval's
  identity holds for the luminance image;
- each channel of a stack (``(84, 84, 4)`` or ``(4, 84, 84)``) is a frame of its own.

Results keep the leading axes: the batch axes, then a stack's channel axis, then the per-frame axes; a single
(H, W) frame gives an (H, W) spectrum, as ``numpy.fft.fft2`` does. Batches are transformed at once, without a
Python loop over frames.

Frequency convention: DFT index (m, n) of an H x W frame is m cycles per image height and n cycles per image
width. Folding the negative frequencies, ``m' = min(m, H - m)`` and ``n' = min(n, W - n)``, the band of (m, n)
is ``f = max(m', n')``, an integer number of cycles per image from 0 to ``max(H // 2, W // 2)``. On a
non-square frame a band counts cycles along each axis over that axis' own length; bands above
``min(H, W) // 2`` hold only frequencies along the longer axis.

Parseval: ``sum_f E(f) == sum_{m,n} |F(m, n)|^2 == H * W * sum_{k,l} s(k, l)^2``.
"""

from __future__ import annotations

from typing import Final

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rlwrappers.error import InvalidArgument, InvalidType
from rlwrappers.functional.images import batch_layout, frames, is_rgb

__all__ = [
    "LUMINANCE",
    "band_energy",
    "band_index",
    "difference_spectrum",
    "log_spectrum",
    "spectrum",
]

#: The weights of R, G and B in the luminance that stands for an RGB frame (ITU-R BT.601).
LUMINANCE: Final = (0.299, 0.587, 0.114)


def _frames(x: ArrayLike, layout: str | None) -> tuple[NDArray[np.float64], tuple[int, ...]]:
    """The frames of ``x`` as float64 (M, H, W), RGB reduced to luminance, and the leading shape of the results.

    With ``layout=None`` the layout is inferred by :func:`rlwrappers.functional.images.batch_layout`.
    """
    a = np.asarray(x)
    if a.dtype.kind not in "biuf":
        raise InvalidType(f"`x` must hold real numbers (uint8 or float frames), received dtype {a.dtype}")
    layout = batch_layout(a.shape, layout)
    image = a.shape[-len(layout) :]
    rgb = is_rgb(image, layout)
    lead = a.shape[: -len(layout)]
    if layout != "hw" and not rgb:
        lead = (*lead, image[layout.index("c")])
    f = frames(a, layout)
    out = _luminance(f) if rgb else f.astype(np.float64)
    if out.shape[-1] == 0 or out.shape[-2] == 0:
        raise InvalidArgument(f"`x` must have frames of at least 1 x 1 pixels, received shape {a.shape}")
    if not np.all(np.isfinite(out)):
        raise InvalidArgument(f"`x` must be finite, received {out.size - np.isfinite(out).sum()} non-finite pixels")
    return out, lead


def _luminance(f: NDArray[np.generic]) -> NDArray[np.float64]:
    """The luminance of channel-last RGB frames ``f``, channel by channel in float64.

    Not a matrix product (``@``): BLAS sums it in an order that depends on the CPU's kernel.
    """
    rgb = np.asarray(f, dtype=np.float64)
    r, g, b = LUMINANCE
    return rgb[..., 0] * r + rgb[..., 1] * g + rgb[..., 2] * b


def spectrum(x: ArrayLike, layout: str | None = None) -> NDArray[np.complex128]:
    """The 2-D DFT ``F(m, n) = sum_{k,l} s(k, l) exp(-2 pi j (m k / H + n l / W))`` of every frame (Section 2.1).

    Args:
        x: observations of any layout, with any leading batch axes; RGB frames are taken as their luminance.
        layout: ``"hw"``, ``"hwc"`` or ``"chw"``; inferred when None
            (:func:`rlwrappers.functional.images.batch_layout`), so pass it for a batch of at most four grayscale
            frames ((3, H, W) would read as one RGB frame).

    Returns:
        Complex, shape ``leading + (H, W)``: the batch axes, a stack's channel axis, then the frequencies, in
        numpy's order (zero frequency at [0, 0]).

    Example:
        >>> import numpy as np
        >>> spectrum(np.ones((4, 6), np.uint8))[0, 0]  # a constant frame: all of it at zero frequency
        np.complex128(24+0j)
    """
    f, lead = _frames(x, layout)
    return np.fft.fft2(f).reshape(*lead, *f.shape[-2:])


def band_index(height: int, width: int) -> NDArray[np.int64]:
    """The band ``f = max(min(m, H - m), min(n, W - n))`` of each DFT index (m, n) of an H x W frame.

    Example:
        >>> band_index(4, 4)
        array([[0, 1, 2, 1],
               [1, 1, 2, 1],
               [2, 2, 2, 2],
               [1, 1, 2, 1]])
    """
    for name, value in (("height", height), ("width", width)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise InvalidArgument(f"`{name}` must be an integer >= 1, received {value!r}")
    m = np.arange(height)
    n = np.arange(width)
    rows = np.minimum(m, height - m)
    columns = np.minimum(n, width - n)
    return np.maximum(rows[:, np.newaxis], columns[np.newaxis, :]).astype(np.int64)


def band_energy(x: ArrayLike, layout: str | None = None) -> NDArray[np.float64]:
    """E(f): the energy ``|F(m, n)|^2`` summed over the DFT indices of band f, for f = 0 .. max(H, W) // 2.

    The bands follow :func:`band_index`; their sum is the total energy ``H * W * sum s^2`` (Parseval).

    Args:
        x: observations, as for :func:`spectrum`.
        layout: as for :func:`spectrum`.

    Returns:
        Shape ``leading + (max(H // 2, W // 2) + 1,)``.

    Example:
        >>> import numpy as np
        >>> stripes = np.cos(2 * np.pi * 2 * np.arange(8) / 8) * np.ones((8, 1))  # 2 cycles along x
        >>> band_energy(stripes).round(6)
        array([   0.,    0., 2048.,    0.,    0.])
    """
    f, lead = _frames(x, layout)
    count, height, width = f.shape
    power = np.abs(np.fft.fft2(f)) ** 2
    bands = max(height, width) // 2 + 1
    index = np.arange(count)[:, np.newaxis] * bands + band_index(height, width).ravel()[np.newaxis, :]
    energy = np.bincount(index.ravel(), weights=power.ravel(), minlength=count * bands).astype(np.float64)
    return energy.reshape(*lead, bands)


def difference_spectrum(
    clean: ArrayLike, perturbed: ArrayLike, layout: str | None = None, *, average: bool = False
) -> NDArray[np.float64]:
    """``E_perturbed(f) - E_clean(f)``: where a perturbation adds (> 0) or removes (< 0) energy, per band.

    Args:
        clean: the observations without perturbation.
        perturbed: the same observations perturbed; the same shape as ``clean``.
        layout: as for :func:`spectrum`.
        average: average the differences over every leading axis (the batch and a stack's channels).

    Returns:
        Shape ``leading + (bands,)``, or ``(bands,)`` with ``average=True``.

    Example:
        >>> import numpy as np
        >>> frame = np.arange(16.0).reshape(4, 4)
        >>> difference_spectrum(frame, frame + 1.0)  # brighter: more energy at f = 0 only, 136^2 - 120^2
        array([4096.,    0.,    0.])
    """
    c, p = np.asarray(clean), np.asarray(perturbed)
    if c.shape != p.shape:
        raise InvalidArgument(f"`clean` and `perturbed` must have the same shape, received {c.shape} and {p.shape}")
    difference = band_energy(p, layout) - band_energy(c, layout)
    if average:
        return difference.reshape(-1, difference.shape[-1]).mean(axis=0)
    return difference


def log_spectrum(x: ArrayLike, layout: str | None = None) -> NDArray[np.float64]:
    """``log(1 + |F|)`` with the zero frequency moved to the centre (``fftshift``), for display (Figure 4).

    Frequencies grow outward from index ``(H // 2, W // 2)``; ``log1p`` keeps empty frequencies at 0 rather
    than -inf.

    Args:
        x: observations, as for :func:`spectrum`.
        layout: as for :func:`spectrum`.

    Returns:
        Shape ``leading + (H, W)``.

    Example:
        >>> import numpy as np
        >>> centred = log_spectrum(np.ones((4, 4)))
        >>> np.argwhere(centred > 0).tolist(), round(float(centred[2, 2]), 4)  # log(1 + 16)
        ([[2, 2]], 2.8332)
    """
    return np.log1p(np.abs(np.fft.fftshift(spectrum(x, layout), axes=(-2, -1))))
