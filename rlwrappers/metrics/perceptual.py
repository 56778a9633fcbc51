"""Perceptual distance between clean and perturbed image observations: LPIPS and SSIM.

From *Assessing Reinforcement Learning Policies via Natural Corruptions at the Edge of Imperceptibility*,
Section 2.4: P_similarity(s, s_0) is LPIPS (Zhang et al. 2018, "The Unreasonable Effectiveness of Deep Features
as a Perceptual Metric"), eq. 2::

    P(s, s_0) = sum_l 1 / (H_l W_l) sum_{h,w} || w_l * (y^l_hw - y^l_0hw) ||_2^2

where y^l are a trunk network's activations at layer l, unit-normalized over channels, and w_l the learned
per-channel weights (the "lin" layers). :class:`LPIPS` runs the ``lpips`` package (version 0.1) on an AlexNet,
VGG16 or SqueezeNet trunk whose ImageNet weights are read from a local file, never downloaded;
:func:`ssim` is the weight-free companion, scikit-image's structural similarity.

Both take uint8 observations of any layout of :mod:`rlwrappers.functional.images` (``"hw"``, ``"hwc"``, ``"chw"``,
with any leading batch axes) and return one value per observation, float64, of the batch shape:

- a grayscale frame is compared as it is (LPIPS repeats it to 3 channels);
- an RGB frame is compared as one colour image;
- a stack (``(84, 84, 4)`` or ``(4, 84, 84)``) is compared frame by frame, and its value is the **mean over
  its frames**.

With ``layout=None`` the layout is inferred by :func:`rlwrappers.functional.images.batch_layout`: a 3-D array with no
channel axis at either end is a batch of grayscale frames; pass ``layout="hw"`` for a batch of at most four.
"""

from __future__ import annotations

import os
import warnings
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rlwrappers import _check
from rlwrappers._optional import require
from rlwrappers.error import InvalidArgument, InvalidType, MissingFile
from rlwrappers.functional.images import batch_layout, frames

if TYPE_CHECKING:
    import torch

__all__ = [
    "LPIPS",
    "LPIPS_NETS",
    "MIN_SIDE",
    "SSIM_SETTINGS",
    "TRUNK_FILES",
    "TRUNK_URL",
    "ssim",
    "trunk_places",
]

#: The trunks LPIPS runs on, by their ``lpips`` names.
LPIPS_NETS: Final = ("alex", "vgg", "squeeze")
#: torchvision's ImageNet weights of each trunk: the file torch.hub caches under ``<hub dir>/checkpoints/``.
TRUNK_FILES: Final = {
    "alex": "alexnet-owt-7be5be79.pth",
    "vgg": "vgg16-397923af.pth",
    "squeeze": "squeezenet1_1-b8a52dc0.pth",
}
#: Where torchvision downloads the trunk files from (append the file name).
TRUNK_URL: Final = "https://download.pytorch.org/models/"
#: The smallest frame height and width each trunk takes (its pooling must leave at least one pixel).
MIN_SIDE: Final = {"alex": 31, "vgg": 16, "squeeze": 17}
#: What :func:`ssim` passes to ``skimage.metrics.structural_similarity``, for every frame.
SSIM_SETTINGS: Final = {"win_size": 7, "gaussian_weights": False, "use_sample_covariance": True, "data_range": 255}
#: The LPIPS version whose linear layers are used (0.0 had a normalization bug).
_VERSION: Final = "0.1"


def _pair(
    clean: ArrayLike, perturbed: ArrayLike, layout: str | None
) -> tuple[NDArray[np.uint8], NDArray[np.uint8], str]:
    """Both batches as uint8 arrays of one shape, and their layout (checked, or inferred from the last axes)."""
    a, b = np.asarray(clean), np.asarray(perturbed)
    for name, x in (("clean", a), ("perturbed", b)):
        if x.dtype != np.uint8:
            raise InvalidType(f"`{name}` must be uint8 observations (0..255), received dtype {x.dtype}")
    if a.shape != b.shape:
        raise InvalidArgument(f"`clean` and `perturbed` must have the same shape, received {a.shape} and {b.shape}")
    return a, b, batch_layout(a.shape, layout, "clean")


def _per_observation(per_frame: NDArray[np.float64], batch: tuple[int, ...]) -> NDArray[np.float64]:
    """Per-frame values averaged over each observation's frames, in the batch shape."""
    observations = int(np.prod(batch, dtype=np.int64))
    if observations == 0:
        return np.zeros(batch, np.float64)
    return per_frame.reshape(observations, -1).mean(axis=1).reshape(batch)


def _frame_pairs(
    clean: ArrayLike, perturbed: ArrayLike, layout: str | None, min_side: int, who: str
) -> tuple[NDArray[np.uint8], NDArray[np.uint8], tuple[int, ...]]:
    """The frames of both batches, (M, H, W) or (M, H, W, 3), and the batch shape of the results."""
    a, b, layout = _pair(clean, perturbed, layout)
    image = a.shape[-len(layout) :]
    height, width = image[layout.index("h")], image[layout.index("w")]
    if min(height, width) < min_side:
        raise InvalidArgument(
            f"{who} needs frames of at least {min_side} x {min_side} pixels, received {height} x {width}"
            f" (shape {a.shape}, layout {layout!r})"
        )
    return frames(a, layout), frames(b, layout), a.shape[: -len(layout)]


def ssim(clean: ArrayLike, perturbed: ArrayLike, layout: str | None = None) -> NDArray[np.float64]:
    """Mean structural similarity (Wang et al. 2004) of each clean observation and its perturbed version.

    Runs ``skimage.metrics.structural_similarity`` on every frame with :data:`SSIM_SETTINGS`: a 7 x 7 uniform
    window, sample covariance (N - 1), K1 = 0.01, K2 = 0.03, ``data_range=255``, the mean taken over the frame
    without its 3-pixel border; an RGB frame with ``channel_axis=-1`` (the mean over its channels). A stack's
    value is the mean over its frames. 1 means identical; it can go below 0.

    Args:
        clean: uint8 observations of any layout, with any leading batch axes; frames at least 7 x 7.
        perturbed: the same shape as ``clean``.
        layout: ``"hw"``, ``"hwc"`` or ``"chw"``; inferred from the last axes when None.

    Returns:
        float64, one value per observation: the batch shape (``()`` for one observation).

    Example:
        >>> import numpy as np
        >>> frame = np.random.default_rng(0).integers(0, 256, (84, 84), dtype=np.uint8)
        >>> ssim(np.stack([frame, 255 - frame]), np.stack([frame, frame]), layout="hw").round(3)  # 2 frames
        array([ 1.   , -0.975])
        >>> stack = np.stack([frame] * 4, axis=-1)  # (84, 84, 4): one observation, 4 frames
        >>> negated = stack.copy()
        >>> negated[..., 3] = 255 - frame
        >>> round(float(ssim(stack, negated)), 3)  # (1 + 1 + 1 - 0.975) / 4
        0.506
    """
    metrics = require("skimage.metrics", purpose="SSIM")
    fa, fb, batch = _frame_pairs(clean, perturbed, layout, SSIM_SETTINGS["win_size"], "SSIM")
    channel_axis = -1 if fa.ndim == 4 else None
    per_frame = np.array(
        [
            metrics.structural_similarity(x, y, channel_axis=channel_axis, **SSIM_SETTINGS)
            for x, y in zip(fa, fb, strict=True)
        ],
        dtype=np.float64,
    )
    return _per_observation(per_frame, batch)


def trunk_places(net: str, weights: str | os.PathLike[str] | None = None) -> list[Path]:
    """The files :class:`LPIPS` looks for the trunk weights of ``net`` in, in order.

    ``weights`` when given (a file, or a directory holding :data:`TRUNK_FILES` [net]); otherwise
    ``$TORCH_HOME/hub/checkpoints/<file>`` when ``TORCH_HOME`` is set, then ``<torch.hub.get_dir()>/checkpoints/
    <file>``, torch's hub cache (which honours ``torch.hub.set_dir``, ``TORCH_HOME`` and ``XDG_CACHE_HOME`` and
    defaults to ``~/.cache/torch/hub``).
    """
    _check.choice("net", net, LPIPS_NETS)
    name = TRUNK_FILES[net]
    if weights is not None:
        path = Path(weights).expanduser()
        return [path / name if path.is_dir() else path]
    places = []
    if os.environ.get("TORCH_HOME"):
        places.append(Path(os.environ["TORCH_HOME"]).expanduser() / "hub" / "checkpoints" / name)
    torch = require("torch", purpose="LPIPS")
    places.append(Path(torch.hub.get_dir()).expanduser() / "checkpoints" / name)
    return list(dict.fromkeys(places))


def _find_trunk(net: str, weights: str | os.PathLike[str] | None) -> Path:
    """The first of :func:`trunk_places` that exists; raises :class:`MissingFile` naming them all."""
    places = trunk_places(net, weights)
    for path in places:
        if path.is_file():
            return path
    name = TRUNK_FILES[net]
    looked = ", ".join(str(p) for p in places)
    where = (
        "Pass `weights=` the path of the file"
        if weights is not None
        else f"Put the file in {places[-1].parent}/ (or in $TORCH_HOME/hub/checkpoints/ with TORCH_HOME set), or"
        " pass `weights=` its path"
    )
    raise MissingFile(
        f"LPIPS needs torchvision's ImageNet weights of its {net!r} trunk, `{name}`, and found no file at: {looked}."
        f" {where}; download it on a machine with network from {TRUNK_URL}{name} (it is never downloaded here)."
        " For tests only, `random_backbone=True` gives a random trunk (not LPIPS)."
    )


def _load_trunk(model: Any, path: Path, net: str) -> None:
    """Loads the trunk of ``path`` into ``model``: torchvision's ``features.{i}.*`` renamed ``slice{k}.{i}.*``.

    The slices are read from the lpips trunk itself (``lpips/pretrained_networks.py``: for AlexNet, features
    0-1, 2-4, 5-7, 8-9 and 10-11 make slices 1 to 5), so the renaming follows the installed lpips.
    """
    torch = require("torch", purpose="LPIPS")
    slice_of = {
        index: f"slice{k}"
        for k in range(1, model.net.N_slices + 1)
        for index, _ in getattr(model.net, f"slice{k}").named_children()
    }
    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=zipfile.is_zipfile(path))
    except Exception as exc:
        raise InvalidArgument(f"`weights` {path} is not a torch state dict that loads: {exc}") from exc
    if not isinstance(state, dict):
        raise InvalidArgument(f"`weights` {path} must hold a state dict, received a {type(state).__name__}")
    renamed = {}
    for key, value in state.items():
        head, _, rest = str(key).partition(".")
        index, _, name = rest.partition(".")
        if head == "features" and index in slice_of:
            renamed[f"{slice_of[index]}.{index}.{name}"] = value
    try:
        model.net.load_state_dict(renamed, strict=True)
    except RuntimeError as exc:
        raise InvalidArgument(
            f"`weights` {path} does not hold torchvision's {net!r} trunk (`features.<i>.*` keys of"
            f" `{TRUNK_FILES[net]}`): {exc}"
        ) from exc


class LPIPS:
    """LPIPS, the paper's P_similarity (Section 2.4, eq. 2): learned perceptual distance, 0 for identical frames.

    Runs ``lpips.LPIPS(net, version="0.1")`` with the linear layers its wheel ships, on a trunk whose ImageNet
    weights come from a local file: ``weights=`` when given, else ``$TORCH_HOME/hub/checkpoints/<file>``, else
    torch's hub cache ``<torch.hub.get_dir()>/checkpoints/<file>`` (see :func:`trunk_places` and
    :data:`TRUNK_FILES`). Nothing is downloaded: a missing file raises :class:`~rlwrappers.error.MissingFile`
    naming the file, every place looked and the download URL.

    ``random_backbone=True`` is for tests only: the trunk keeps torchvision's initialisation drawn from ``seed``
    (for AlexNet, the weights of ``torchvision.models.alexnet()`` after ``torch.manual_seed(seed)``), without
    touching torch's global generator. The linear layers are still the real ones, but the values are **not
    LPIPS**: :attr:`random_backbone` is True and :attr:`label` and the repr say so.

    The model is in eval mode and every call runs under ``torch.no_grad``, ``batch_size`` frame pairs per
    forward pass, so equal inputs give equal distances.

    Args:
        net: the trunk, ``"alex"`` (the paper's and lpips' default), ``"vgg"`` or ``"squeeze"``.
        weights: the trunk file (or a directory holding it), in torchvision's format: a state dict with
            ``features.<i>.*`` keys, as ``torchvision.models.alexnet(weights="DEFAULT").state_dict()``.
        random_backbone: use a seeded random trunk instead of the ImageNet one (labelled; not LPIPS).
        seed: the random trunk's seed (only with ``random_backbone=True``; 0 when None).
        device: the torch device to run on.
        batch_size: frame pairs per forward pass (bounds memory).

    Example:
        >>> import numpy as np
        >>> metric = LPIPS(random_backbone=True, seed=0)
        >>> metric.label
        'random-backbone LPIPS v0.1 (alex, seed 0): not LPIPS'
        >>> frame = np.full((84, 84), 100, np.uint8)
        >>> float(metric.distance(frame, frame))
        0.0
    """

    def __init__(
        self,
        net: str = "alex",
        *,
        weights: str | os.PathLike[str] | None = None,
        random_backbone: bool = False,
        seed: int | None = None,
        device: str = "cpu",
        batch_size: int = 128,
    ) -> None:
        _check.choice("net", net, LPIPS_NETS)
        if not isinstance(random_backbone, bool):
            raise InvalidType(f"`random_backbone` must be a bool, received {random_backbone!r}")
        if random_backbone and weights is not None:
            raise InvalidArgument("`weights` and `random_backbone=True` exclude each other: pass one of them")
        if seed is not None and not random_backbone:
            raise InvalidArgument(f"`seed` applies only with `random_backbone=True`, received seed={seed!r}")
        seed = 0 if seed is None else _check.integer("seed", seed, minimum=0)
        self.batch_size = _check.integer("batch_size", batch_size, minimum=1)
        path = None if random_backbone else _find_trunk(net, weights)
        torch = require("torch", purpose="LPIPS")
        lpips = require("lpips", purpose="LPIPS")
        require("torchvision", purpose="LPIPS")

        self.net = net
        self.version = _VERSION
        self.random_backbone = random_backbone
        self.seed = seed if random_backbone else None
        #: The trunk file loaded, or None for a random backbone.
        self.weights = path
        self.device = torch.device(device)
        with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
            # lpips asks torchvision for `pretrained=False`, which torchvision answers with deprecation warnings.
            warnings.filterwarnings("ignore", message=".*(pretrained|weight enum).*", category=UserWarning)
            torch.manual_seed(seed)
            model = lpips.LPIPS(net=net, version=_VERSION, pnet_rand=True, verbose=False)
        if path is not None:
            _load_trunk(model, path, net)
        # Channels-last weights and inputs take oneDNN's fast convolutions on CPUs; the values are the same.
        self._model = model.eval().to(self.device, memory_format=torch.channels_last)

    @property
    def module(self) -> torch.nn.Module:
        """The ``lpips.LPIPS`` torch module (its trunk is ``module.net``, its linear layers ``module.lins``)."""
        return self._model

    @property
    def label(self) -> str:
        """What the values are: ``"LPIPS v0.1 (alex)"``, or a random-backbone label that says it is not LPIPS."""
        if self.random_backbone:
            return f"random-backbone LPIPS v{self.version} ({self.net}, seed {self.seed}): not LPIPS"
        return f"LPIPS v{self.version} ({self.net})"

    def __repr__(self) -> str:
        if self.random_backbone:
            return f"LPIPS(net={self.net!r}, random_backbone=True, seed={self.seed})  # random trunk: not LPIPS"
        return f"LPIPS(net={self.net!r}, weights={str(self.weights)!r})"

    def distance(self, clean: ArrayLike, perturbed: ArrayLike, layout: str | None = None) -> NDArray[np.float64]:
        """P_similarity of each clean observation and its perturbed version (0 when they are equal).

        Frames are scaled from 0..255 to [-1, 1] (lpips' ``normalize=True``); a grayscale frame is repeated to
        3 channels; a stack's distance is the mean over its frames.

        Args:
            clean: uint8 observations of any layout, with any leading batch axes; frames of at least
                :data:`MIN_SIDE` [net] pixels a side (31 for AlexNet).
            perturbed: the same shape as ``clean``.
            layout: ``"hw"``, ``"hwc"`` or ``"chw"``; inferred from the last axes when None.

        Returns:
            float64, one distance per observation: the batch shape (``()`` for one observation).
        """
        fa, fb, batch = _frame_pairs(clean, perturbed, layout, MIN_SIDE[self.net], "LPIPS")
        torch = require("torch", purpose="LPIPS")
        per_frame = np.empty(len(fa), np.float64)
        with torch.no_grad():
            for start in range(0, len(fa), self.batch_size):
                stop = start + self.batch_size
                value = self._model(self._tensor(fa[start:stop]), self._tensor(fb[start:stop]), normalize=True)
                per_frame[start:stop] = value.reshape(-1).double().cpu().numpy()
        return _per_observation(per_frame, batch)

    def _tensor(self, f: NDArray[np.uint8]) -> torch.Tensor:
        """Frames (n, H, W) or (n, H, W, 3) as a float (n, 3, H, W) tensor in [0, 1] on the device."""
        torch = require("torch", purpose="LPIPS")
        x = torch.from_numpy(f.astype(np.float32)).to(self.device).div_(255.0)
        x = x.unsqueeze(1).expand(-1, 3, -1, -1) if x.ndim == 3 else x.permute(0, 3, 1, 2)
        return x.contiguous(memory_format=torch.channels_last)
