"""Perturbation-based saliency maps for agents with discrete actions.

*Benchmarking Perturbation-based Saliency Maps for Explaining Atari Agents* (seed 003, Section 3.2) compares
five ways of asking which pixels an agent's decision rests on. Each feeds perturbed copies of one observation
to the agent and compares its outputs with those on the original:

- :func:`occlusion` (Zeiler and Fergus): a square patch set to one colour; the drop of the analysed action's
  score is the relevance of every pixel under the patch (equation 1).
- :func:`noise_sensitivity` (Greydanus et al.): a soft circle blurred (or blacked out) around every r-th pixel;
  half the squared distance between all the actions' scores before and after (equation 2), upsampled.
- :func:`rise` (Petsiuk et al.): N random smooth masks; each pixel's relevance is the mean score under the
  masks weighted by how much each mask keeps of it, divided by p (equation 3).
- :func:`lime` (Ribeiro et al.): superpixels switched off at random; a weighted ridge regression of the score
  on which superpixels were on gives every superpixel a weight.
- :func:`sarfa` (Puri et al.): the perturbation of Noise Sensitivity, scored by how much the analysed action's
  probability falls and how little the other actions' probabilities change among themselves (equations 4-6).

**Scores.** ``q(I)`` is the agent's q-value where it has q-values (DQN). An actor-critic agent (PPO, A2C) has
none; its action logits stand in for them (the preferences its softmax policy acts on), and the advantage of
an action is its logit minus the mean logit, as :func:`advantages` gives it. The analysed action is the
greedy one, the argmax of the scores on the unperturbed observation, unless ``action=`` names another.

**Inputs.** One observation at a time, as the agent's observation space holds it: an image in one of the layouts of
:mod:`rlwrappers.functional.images` (``"hw"``, ``"hwc"``, ``"chw"``; a stack of frames or one RGB frame), or a 1-D
vector of features. An image's map has shape (H, W): a pixel's relevance is shared by all its channels, as the paper
perturbs all stacked frames at once. A vector's map has shape (n,): each feature is a "pixel". Perturbed
observations are float and are not rounded back to the observation's dtype.

**Observation spaces.** Every map perturbs one array, so the agent's observation space must be a Box (or another
space of arrays) of shape (n,), (H, W), (H, W, C) or (C, H, W): :func:`check_observations` says which, and raises
:class:`~rlwrappers.error.IncompatibleSpace` for a Dict or Tuple space (or any other) before any map is computed.
Occlusion, Noise Sensitivity, RISE, SARFA and LIME with ``segmentation="features"`` work on any such Box, image
or vector. What needs an image (:data:`NEEDS_IMAGE`): LIME's image segmentations (``"quickshift"``, ``"slic"``,
``"felzenszwalb"``: a vector raises :class:`~rlwrappers.error.IncompatibleSpace`), the incremental forward pass
(``incremental=True``: a vector raises :class:`~rlwrappers.error.InvalidArgument`, the option cannot apply) and
the sanity check (:func:`rlwrappers.explain.sanity.sanity_check`, whose similarities compare 2-D maps).

**Batching.** Every method builds its perturbed observations in batches of ``batch_size`` and runs each batch
through the network in one forward pass under ``torch.no_grad()``: a map costs one forward pass for the
original observation and ``ceil(perturbations / batch_size)`` more. Occlusion on a network that is a chain of
Conv2d, elementwise activations, Flatten and Linear layers (SB3's Nature CNN) does less: one clean pass keeps
every activation, and each patch recomputes only the activations whose receptive field it touches (see
:func:`occlusion`), about five times faster than the plain batched pass for 4 x 4 patches; the black discs of
Noise Sensitivity and SARFA are scored the same way.

Every function returns a :class:`SaliencyMap`; :data:`METHODS` names them and :func:`saliency_map` calls one
by name. The defaults are the parameters the paper settled on for Atari after its tuning (Section 3.4.3).
"""

from __future__ import annotations

import inspect
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

import gymnasium as gym
import numpy as np
from numpy.typing import ArrayLike, NDArray

from rlwrappers import _check
from rlwrappers._optional import require
from rlwrappers.agents import Agent
from rlwrappers.error import (
    IncompatibleSpace,
    InvalidArgument,
    InvalidProbability,
    InvalidType,
    NotDifferentiable,
    UnknownName,
    did_you_mean,
)
from rlwrappers.explain import incremental as incremental_pass
from rlwrappers.functional import images
from rlwrappers.structure import is_structured

__all__ = [
    "BATCH_SIZE",
    "METHODS",
    "NEEDS_IMAGE",
    "SEGMENTATIONS",
    "SaliencyMap",
    "action_scores",
    "advantages",
    "check_observations",
    "lime",
    "noise_sensitivity",
    "occlusion",
    "rise",
    "rise_masks",
    "saliency_map",
    "sarfa",
]

#: Perturbed observations per forward pass, unless ``batch_size`` says otherwise.
BATCH_SIZE: Final = 512
#: What needs an image observation, (H, W), (H, W, C) or (C, H, W), rather than a vector (n,).
NEEDS_IMAGE: Final = (
    "lime with segmentation 'quickshift', 'slic' or 'felzenszwalb'",
    "incremental=True (occlusion, and noise_sensitivity and sarfa with variant='black')",
    "the sanity check (rlwrappers.explain.sanity.sanity_check), whose similarities compare 2-D maps",
)
#: Greydanus et al.'s blur: a Gaussian of this standard deviation (pixels) over each frame.
BLUR_SIGMA: Final = 3.0
#: Where a Gaussian's kernel is cut, in standard deviations (SciPy's ``gaussian_filter`` default).
_TRUNCATE: Final = 4.0
#: The variants of Noise Sensitivity's and SARFA's perturbation.
VARIANTS: Final = ("blur", "black")
#: Which channels of an image LIME segments.
SEGMENT_ON: Final = ("stack", "last", "mean")
#: LIME's segmentations, each with its tuned defaults and number of samples (the paper's Tables 5-7).
SEGMENTATIONS: Final[Mapping[str, tuple[Mapping[str, Any], int]]] = {
    "quickshift": ({"kernel_size": 1, "max_dist": 2, "ratio": 0.0}, 1500),
    "slic": ({"n_segments": 200, "compactness": 10.0, "sigma": 0.25}, 2000),
    "felzenszwalb": ({"scale": 21.0, "sigma": 0.5, "min_size": 4}, 1000),
    "features": ({}, 1000),
}
#: The keyword arguments each segmentation passes on to scikit-image.
_SEGMENTATION_KEYS: Final[Mapping[str, tuple[str, ...]]] = {
    "quickshift": ("kernel_size", "max_dist", "ratio", "sigma"),
    "slic": ("n_segments", "compactness", "sigma", "max_num_iter", "enforce_connectivity"),
    "felzenszwalb": ("scale", "sigma", "min_size"),
    "features": (),
}
#: LIME's ridge penalty (``lime_base`` fits ``Ridge(alpha=1)``).
_RIDGE_ALPHA: Final = 1.0


# -- the result --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SaliencyMap:
    """A saliency map for one observation, with what is needed to use and reproduce it.

    Attributes:
        values: the relevance of each pixel, shape (H, W) for an image and (n,) for a vector; higher is more
            relevant.
        action: the analysed action.
        method: the name of the method in :data:`METHODS`.
        params: the method's parameters, defaults resolved (``batch_size`` left out: it never changes the map
            beyond float rounding).
        scores: the agent's scores (q-values, or logits for actor-critic agents) on the original observation.
        layout: the observation's image layout, or None for a vector.
        observation_shape: the shape of the observation the map explains.
        segments: LIME's superpixel of each pixel (labels 0..K-1, the map's shape); None for other methods.
    """

    values: NDArray[np.float64]
    action: int
    method: str
    params: Mapping[str, Any]
    scores: NDArray[np.float64]
    layout: str | None
    observation_shape: tuple[int, ...]
    segments: NDArray[np.int64] | None = field(default=None)

    @property
    def shape(self) -> tuple[int, ...]:
        """The map's shape: (H, W) or (n,)."""
        return tuple(self.values.shape)

    def broadcast(self) -> NDArray[np.float64]:
        """The map repeated over the observation's channels: an array of :attr:`observation_shape`."""
        return np.broadcast_to(_expand(self.values[None], self.layout)[0], self.observation_shape).copy()


# -- scores ------------------------------------------------------------------------------------------------
def action_scores(agent: Agent, obs: ArrayLike, *, batch_size: int = BATCH_SIZE) -> NDArray[np.float64]:
    """The agent's action scores for a batch of observations, shape (batch, actions).

    Q-values where the agent has them, otherwise its action logits (actor-critic agents), computed under
    ``torch.no_grad()`` in forward passes of at most ``batch_size`` observations.
    """
    _check_agent(agent)
    batch_size = _check.integer("batch_size", batch_size, minimum=1)
    x = np.asarray(obs, dtype=np.float32)
    return np.concatenate([_forward(agent, x[i : i + batch_size]) for i in range(0, max(len(x), 1), batch_size)])


def advantages(scores: ArrayLike) -> NDArray[np.float64]:
    """Each action's score minus the mean score over the actions (last axis), Wang et al.'s advantage.

    Example:
        >>> advantages([1.0, 2.0, 6.0]).tolist()
        [-2.0, -1.0, 3.0]
    """
    s = _check.finite_array("scores", scores)
    if s.ndim == 0:
        raise InvalidArgument(f"`scores` must have an actions axis, received a scalar {s!r}")
    return s - s.mean(axis=-1, keepdims=True)


def _forward(agent: Agent, batch: NDArray[np.float32]) -> NDArray[np.float64]:
    """One forward pass: the scores of a batch of (perturbed) observations."""
    torch = require("torch", purpose="saliency maps")
    with torch.no_grad():
        out = agent.outputs(agent.tensor(batch))
    scores = out.q_values if out.q_values is not None else out.logits
    if scores is None:
        raise NotDifferentiable(f"{agent} gives neither q-values nor action logits, which saliency maps compare")
    return np.asarray(scores.detach().cpu().double().numpy(), dtype=np.float64).reshape(len(batch), -1)


def _softmax(scores: NDArray[np.float64]) -> NDArray[np.float64]:
    z = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return np.asarray(z / z.sum(axis=-1, keepdims=True), dtype=np.float64)


def _evaluate(
    agent: Agent, total: int, make: Callable[[int, int], NDArray[np.float32]], batch_size: int
) -> NDArray[np.float64]:
    """The scores of ``total`` perturbed observations, ``make(start, stop)`` building each batch."""
    parts = [_forward(agent, make(i, min(i + batch_size, total))) for i in range(0, total, batch_size)]
    return np.concatenate(parts)


# -- arguments ---------------------------------------------------------------------------------------------
def check_observations(agent: Agent, *, image: str | None = None) -> str:
    """What the agent's observations are to a saliency map: ``"image"`` or ``"vector"``.

    Args:
        agent: the agent to explain.
        image: what needs an image, named in the error when the observations are a vector (None: a vector will do).

    Raises:
        IncompatibleSpace: the observation space is a Dict or Tuple space, or any space whose observations are
            neither an image (H, W), (H, W, C), (C, H, W) nor a vector (n,); or a vector where ``image`` needs
            an image.

    Example:
        >>> import gymnasium as gym, torch
        >>> from rlwrappers.agents import TorchAgent
        >>> vector, actions = gym.spaces.Box(0.0, 1.0, (3,)), gym.spaces.Discrete(3)
        >>> check_observations(TorchAgent(torch.nn.Identity(), vector, actions, head="q_values"))
        'vector'
        >>> agent = TorchAgent(torch.nn.Identity(), gym.spaces.Dict({"x": vector}), actions, head="q_values")
        >>> check_observations(agent)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        rlwrappers.error.IncompatibleSpace: saliency maps perturb one image or vector: ... received Dict('x': ...
    """
    space = agent.observation_space
    shape = None if is_structured(space) else space.shape
    if shape is None or len(shape) not in (1, 2, 3):
        raise IncompatibleSpace(
            "saliency maps perturb one image or vector: the agent's observation space must be an image (H, W),"
            f" (H, W, C) or (C, H, W) or a vector (n,), received {space}. Any image or vector takes"
            f" {sorted(METHODS)}; an image is needed by {list(NEEDS_IMAGE)}"
        )
    if len(shape) == 1:
        if image is not None:
            raise IncompatibleSpace(
                f"{image} needs an image observation of shape (H, W), (H, W, C) or (C, H, W), and the agent's"
                f" observation space is a vector: {space}. What needs an image: {list(NEEDS_IMAGE)}"
            )
        return "vector"
    return "image"


def _check_agent(agent: Any) -> int:
    """The number of actions of ``agent``; raises unless it is an Agent with a Discrete action space.

    Its observations must be an image or a vector (:func:`check_observations`).
    """
    if not isinstance(agent, Agent):
        raise InvalidType(
            f"`agent` must be an rlwrappers Agent (see rlwrappers.agents.adapt), received {type(agent).__name__}"
        )
    if not isinstance(agent.action_space, gym.spaces.Discrete):
        raise IncompatibleSpace(
            f"saliency maps need a Discrete action space (action scores to compare), the agent has {agent.action_space}"
        )
    check_observations(agent)
    return int(agent.action_space.n)


@dataclass(frozen=True)
class _Input:
    """One observation prepared for perturbing, and the agent's scores on it once :func:`_scored` ran."""

    x: NDArray[np.float32]  # the observation, float, in its own layout
    layout: str | None  # None: a vector
    size: tuple[int, ...]  # the map's shape: (H, W) or (n,)
    action: int | None  # the analysed action; None: the greedy one, once scored
    scores: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))

    @property
    def target(self) -> int:
        """The analysed action, known once :func:`_scored` ran."""
        if self.action is None:
            raise RuntimeError("the observation has not been scored yet")
        return self.action


def _prepare(agent: Agent, obs: Any, layout: str | None, action: Any) -> _Input:
    """Checks the agent, the observation, its layout and the action, before any forward pass."""
    n_actions = _check_agent(agent)
    try:
        x = np.asarray(obs)
    except (TypeError, ValueError):
        raise InvalidType(f"`obs` must be an array of numbers, received {type(obs).__name__}") from None
    if x.dtype.kind not in "biuf":
        raise InvalidType(f"`obs` must be an array of numbers, received dtype {x.dtype}")
    expected = agent.observation_space.shape
    if expected is not None and x.shape != tuple(expected):
        raise InvalidArgument(
            f"`obs` must be one observation of shape {tuple(expected)} (the agent's observation space),"
            f" received shape {x.shape}"
        )
    if layout is not None:
        layout = _check.choice("layout", layout, images.LAYOUTS)
    if x.ndim == 1:
        if layout is not None:
            raise InvalidArgument(
                f"`layout` applies to images only, received {layout!r} for a vector of shape {x.shape}"
            )
        size: tuple[int, ...] = x.shape
    elif x.ndim in (2, 3):
        layout = images.check_layout(layout, x.shape)
        size = x.shape[:2] if layout in ("hw", "hwc") else x.shape[1:]
    else:
        raise IncompatibleSpace(
            f"`obs` must be an image (H, W), (H, W, C) or (C, H, W), or a vector (n,), received shape {x.shape}"
        )
    x32 = x.astype(np.float32)
    if not np.all(np.isfinite(x32)):
        raise InvalidArgument("`obs` must be finite, received non-finite values")
    if action is not None:
        action = _check.integer("action", action, minimum=0)
        if action >= n_actions:
            raise InvalidArgument(f"`action` must be < {n_actions} (the agent's actions), received {action!r}")
    return _Input(x32, layout, tuple(int(n) for n in size), action)


def _scored(agent: Agent, inp: _Input) -> _Input:
    """``inp`` with the agent's scores on the original observation (one forward pass) and the analysed action."""
    scores = _forward(agent, inp.x[None])[0]
    action = int(np.argmax(scores)) if inp.action is None else inp.action
    return replace(inp, scores=scores, action=action)


def _open_probability(name: str, value: Any) -> float:
    p = _check.number(name, value)
    if not 0.0 < p < 1.0:
        raise InvalidProbability(f"`{name}` must be a probability in (0, 1), received {value!r}")
    return p


def _fits(name: str, value: int, inp: _Input, what: str, *, strict: bool = False) -> int:
    """Raises unless ``value`` (a patch, radius or grid size) fits the map's smallest side."""
    side = min(inp.size)
    limit = side - 1 if strict else side
    if value > limit:
        kind = "frame" if inp.layout is not None else "vector"
        relation = "<" if strict else "<="
        raise InvalidArgument(
            f"`{name}` must be {relation} {side} (the {kind}'s {'smallest side' if kind == 'frame' else 'length'})"
            f" {what}, received {value}"
        )
    return value


def _expand(masks: NDArray[Any], layout: str | None) -> NDArray[Any]:
    """Spatial masks (B, *size) broadcastable against a batch of observations in ``layout``."""
    if layout == "hwc":
        return masks[..., None]
    if layout == "chw":
        return masks[:, None]
    return masks


def _result(method: str, inp: _Input, values: NDArray[Any], params: dict[str, Any], **extra: Any) -> SaliencyMap:
    return SaliencyMap(
        values=np.asarray(values, dtype=np.float64),
        action=inp.target,
        method=method,
        params=params,
        scores=inp.scores,
        layout=inp.layout,
        observation_shape=tuple(inp.x.shape),
        **extra,
    )


def _target(scores: NDArray[np.float64], action: int, softmax: bool) -> NDArray[np.float64]:
    """The analysed action's score (or probability, with ``softmax``) in each row of ``scores``."""
    return (_softmax(scores) if softmax else scores)[..., action]


# -- smoothing and upsampling ------------------------------------------------------------------------------
def _gaussian_matrix(n: int, sigma: float) -> NDArray[np.float64]:
    """The (n, n) matrix of a 1-D Gaussian filter, as SciPy's ``gaussian_filter1d`` (mode "reflect")."""
    radius = int(_TRUNCATE * sigma + 0.5)
    offsets = np.arange(-radius, radius + 1)
    weights = np.exp(-0.5 * (offsets / sigma) ** 2)
    weights /= weights.sum()
    rows = np.repeat(np.arange(n), len(offsets))
    source = (np.arange(n)[:, None] + offsets[None]).ravel() % (2 * n)
    source = np.where(source < n, source, 2 * n - 1 - source)  # half-sample symmetric reflection
    out = np.zeros((n, n))
    np.add.at(out, (rows, source), np.tile(weights, n))
    return out


def _interpolation_matrix(points: NDArray[np.int64], n: int) -> NDArray[np.float64]:
    """(n, len(points)): linear interpolation at every index from values at ``points``, flat beyond them."""
    eye = np.eye(len(points))
    return np.stack([np.interp(np.arange(n), points, eye[k]) for k in range(len(points))], axis=1)


def _resize_matrix(n_in: int, n_out: int) -> NDArray[np.float64]:
    """(n_out, n_in): linear resizing with pixel centres aligned, mirrored at the borders.

    This is scikit-image's ``resize(order=1, mode="reflect", anti_aliasing=False)`` along one axis, which
    RISE's reference code uses to upsample its masks.
    """
    out = np.zeros((n_out, n_in))
    if n_in == 1:
        out[:, 0] = 1.0
        return out
    coord = (np.arange(n_out) + 0.5) * n_in / n_out - 0.5
    low = np.floor(coord).astype(np.int64)
    frac = coord - low
    period = 2 * (n_in - 1)
    for index, weight in ((low, 1.0 - frac), (low + 1, frac)):
        m = np.abs(index) % period
        m = np.where(m < n_in, m, period - m)
        np.add.at(out, (np.arange(n_out), m), weight)
    return out


def _blur(inp: _Input) -> NDArray[np.float32]:
    """Each frame of the image blurred by a Gaussian of :data:`BLUR_SIGMA` pixels (mode "reflect")."""
    h, w = inp.size
    fy, fx = _gaussian_matrix(h, BLUR_SIGMA), _gaussian_matrix(w, BLUR_SIGMA)
    x = inp.x.astype(np.float64)
    if inp.layout == "hwc":
        out = np.moveaxis(fy @ np.moveaxis(x, -1, 0) @ fx.T, 0, -1)
    else:  # "hw" or "chw": the frames are the last two axes
        out = fy @ x @ fx.T
    return np.asarray(out, dtype=np.float32)


def _moving_average(x: NDArray[np.float32], radius: int) -> NDArray[np.float32]:
    """Each feature replaced by the mean of the features within ``radius`` of it (cut at the ends)."""
    csum = np.concatenate([[0.0], np.cumsum(x, dtype=np.float64)])
    i = np.arange(len(x))
    low, high = np.maximum(i - radius, 0), np.minimum(i + radius + 1, len(x))
    return np.asarray((csum[high] - csum[low]) / (high - low), dtype=np.float32)


# -- 1. Occlusion Sensitivity ------------------------------------------------------------------------------
def occlusion(
    agent: Agent,
    obs: ArrayLike,
    *,
    patch: int | None = None,
    stride: int | None = None,
    color: float | str = 0.0,
    softmax: bool = False,
    action: int | None = None,
    layout: str | None = None,
    batch_size: int = BATCH_SIZE,
    incremental: bool | None = None,
) -> SaliencyMap:
    """Occlusion Sensitivity (Zeiler and Fergus, 2014): the score's drop when a patch is painted over.

    A ``patch`` x ``patch`` square (all channels) is set to ``color``, its top-left corner moved over the frame
    in steps of ``stride``; patches are cut at the right and bottom borders. Every pixel under a patch gets
    ``S = q(I) - q(I')``, the drop of the analysed action's score, averaged over the patches that cover it.
    The paper writes equation 1 as ``1 - q(I')``; the two differ by the constant ``q(I) - 1``, so they rank
    pixels alike and agree once normalized. The drop is used here: 0 means the patch changed nothing.

    The reference the paper follows (tf-explain) uses non-overlapping patches (``stride = patch``, the default
    here) and resizes the grid of patch scores to the frame bilinearly; here every pixel takes its patch's
    score, as the paper's text says, so a map is constant over each patch. On a vector a patch is a window of
    ``patch`` consecutive features.

    **Incremental forward.** A patch changes a small window of the frame, and in a convolutional network only
    the activations whose receptive field touches it change. When the agent's network is a chain of ``Conv2d``
    layers, elementwise activations (ReLU, Tanh, ...), one ``Flatten`` and ``Linear`` layers (SB3's
    ``NatureCNN`` under DQN's q-network or an actor-critic's action head, or a
    :class:`~rlwrappers.agents.TorchAgent` whose module is a ``torch.nn.Sequential`` of such layers), the
    network runs once on the observation, keeping every layer's input; then for each patch every convolution
    computes only the output window its changed input window reaches (on the crop of the window and the
    receptive field's margin, all patches of a batch as one convolution), and the first ``Linear`` layer runs
    on its clean input with each window pasted in. The agent's own preprocessing (SB3 divides uint8 frames by
    255) and transpose apply as in its forward pass. The scores equal the plain forward pass's up to float
    rounding (about 1e-6 relative); on the Nature-DQN a patch-4 map costs about a quarter of the plain batched
    one (``benchmarks/bench_saliency.py``). ``incremental=None`` (the default) takes this path whenever the
    network fits it and the plain batched forward pass otherwise (pooling, residual connections,
    normalization layers, hooks, a custom ``forward``, a vector observation); ``True`` requires it and raises,
    naming what does not fit, when the network does not; ``False`` always runs the plain batched forward pass.

    Args:
        agent: an agent with a Discrete action space.
        obs: one observation: an image or a 1-D vector.
        patch: the patch's side, in pixels (default 2, the paper's tuned value; 1 on vectors).
        stride: the step between patches, 1 to ``patch`` (default ``patch``).
        color: the patch's value in the observation's units, e.g. 0 (black) or 127.5 (the paper's gray on
            uint8 frames), or ``"black"`` (0) or ``"gray"`` (midway between the observation space's bounds).
        softmax: compare action probabilities, ``softmax(scores)``, instead of raw scores.
        action: the analysed action (default: the greedy one).
        layout: the image's layout (default: inferred from its shape).
        batch_size: perturbed observations per forward pass.
        incremental: score the patches with the incremental forward pass: None (whenever the network fits
            it), True (always; raises :class:`~rlwrappers.error.InvalidArgument` when the network does not fit
            it) or False (never: the plain batched forward pass).

    Example:
        >>> import gymnasium as gym, numpy as np, torch
        >>> from rlwrappers.agents import TorchAgent
        >>> from rlwrappers.explain.maps import occlusion
        >>> space = gym.spaces.Box(0.0, 1.0, (4,))
        >>> net = torch.nn.Linear(4, 2, bias=False)
        >>> _ = net.weight.data.copy_(torch.tensor([[0.0, 3.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]]))
        >>> agent = TorchAgent(net, space, gym.spaces.Discrete(2), head="q_values")
        >>> occlusion(agent, np.ones(4, np.float32)).values.tolist()
        [0.0, 3.0, 0.0, 0.0]
    """
    inp = _prepare(agent, obs, layout, action)
    if patch is None:
        patch = 2 if inp.layout is not None else 1
    patch = _fits("patch", _check.integer("patch", patch, minimum=1), inp, "so that a patch fits inside it")
    stride = patch if stride is None else _check.integer("stride", stride, minimum=1)
    if stride > patch:
        raise InvalidArgument(
            f"`stride` must be <= `patch` ({patch}) so that patches cover every pixel, received {stride}"
        )
    fill = _color(agent, color)
    softmax = _check_bool("softmax", softmax)
    batch_size = _check.integer("batch_size", batch_size, minimum=1)
    chain = _chain(agent, inp, incremental)
    inp = _scored(agent, inp)
    run = _verified(chain, inp, incremental)

    starts = [np.arange(0, n, stride) for n in inp.size]
    grid = tuple(len(s) for s in starts)
    total = math.prod(grid)

    def corners(k: NDArray[np.int64]) -> list[NDArray[np.int64]]:
        return [s[i] for s, i in zip(starts, np.unravel_index(k, grid), strict=True)]

    def make(start: int, stop: int) -> NDArray[np.float32]:
        k = np.arange(start, stop)
        masks = np.zeros((len(k), *inp.size), np.float32)
        for b, corner in enumerate(zip(*corners(k), strict=True)):
            window: tuple[Any, ...] = (b, *(slice(int(c), int(c) + patch) for c in corner))
            masks[window] = 1.0
        m = _expand(masks, inp.layout)
        return np.asarray(inp.x * (1.0 - m) + np.float32(fill) * m, dtype=np.float32)

    if run is None:
        perturbed = _evaluate(agent, total, make, batch_size)
    else:
        parts = []
        for start in range(0, total, batch_size):
            tops, values = _occluded_windows(
                inp, np.stack(corners(np.arange(start, min(start + batch_size, total))), 1), patch, fill
            )
            parts.append(run.scores(tops, values))
        perturbed = np.concatenate(parts)
    drops = _target(inp.scores, inp.target, softmax) - _target(perturbed, inp.target, softmax)
    # Each pixel averages the drops of the patches covering it; per axis, cover[k, i] says whether patch k covers i.
    cover = [
        ((s[:, None] <= np.arange(n)) & (np.arange(n) < s[:, None] + patch)).astype(np.float64)
        for s, n in zip(starts, inp.size, strict=True)
    ]
    if len(cover) == 1:
        total_drop, count = cover[0].T @ drops, cover[0].sum(axis=0)
    else:
        total_drop = cover[0].T @ drops.reshape(grid) @ cover[1]
        count = np.outer(cover[0].sum(axis=0), cover[1].sum(axis=0))
    params = {"patch": patch, "stride": stride, "color": fill, "softmax": softmax}
    return _result("occlusion", inp, total_drop / count, params)


def _chain(agent: Agent, inp: _Input, incremental: Any) -> incremental_pass.Chain | None:
    """The chain the incremental forward pass walks, or None for the plain batched forward pass.

    ``incremental``: None picks the incremental pass where the network allows it, True demands it, False
    refuses it.
    """
    if incremental is not None:
        incremental = _check_bool("incremental", incremental)
    if incremental is False:
        return None
    chain, why = incremental_pass.decompose(agent, inp.layout)
    if chain is None and incremental:
        raise InvalidArgument(f"`incremental=True` needs a network the incremental forward pass can split, but {why}")
    return chain


def _verified(chain: incremental_pass.Chain | None, inp: _Input, incremental: Any) -> incremental_pass.Run | None:
    """The chain's clean pass on the scored observation if its scores are the network's own, bit for bit.

    A hook or an override that changes what the network computes makes the layers, called as the incremental
    pass calls them, give other scores: then the plain batched pass scores the perturbations (with
    ``incremental=True``, an error says so).
    """
    if chain is None:
        return None
    run = chain.run(inp.x)
    if np.array_equal(run.clean_scores, inp.scores):
        return run
    if incremental:
        raise InvalidArgument(
            "`incremental=True` needs the network's layers, called one by one, to give its own scores, but they"
            " differ on this observation (a hook or an override changes what the network computes)"
        )
    return None


def _occluded_windows(
    inp: _Input, corners: NDArray[np.int64], patch: int, fill: float
) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
    """For patches at ``corners`` (B, 2): patch x patch windows inside the frame holding them, and their values.

    A patch cut at the right or bottom border lies in the window that ends at the border; the window's pixels
    outside the patch keep the observation's values.
    """
    tops = np.minimum(corners, np.array(inp.size) - patch)
    rows, cols = tops[:, :1] + np.arange(patch), tops[:, 1:] + np.arange(patch)  # (B, patch) each
    occluded = (rows >= corners[:, :1])[:, :, None] & (cols >= corners[:, 1:])[:, None, :]  # (B, patch, patch)
    values = np.where(_expand(occluded, inp.layout), np.float32(fill), _windows(inp, rows, cols))
    return tops, np.asarray(values, dtype=np.float32)


def _windows(inp: _Input, rows: NDArray[np.int64], cols: NDArray[np.int64]) -> NDArray[np.float32]:
    """The observation's values in each window, rows (B, M) by columns (B, N): (B, C, M, N) or (B, M, N, C)."""
    if inp.layout == "chw":
        return np.moveaxis(inp.x[:, rows[:, :, None], cols[:, None, :]], 0, 1)
    # "hwc" ("hw" frames have no channel axis for a Conv2d and never reach here)
    return inp.x[rows[:, :, None], cols[:, None, :]]


def _disc_windows(
    inp: _Input, centres: NDArray[np.int64], radius: int
) -> tuple[NDArray[np.int64], NDArray[np.float32]]:
    """For black discs of ``radius`` at ``centres`` (B, 2): the windows holding them and their values.

    Each window is 2r + 1 wide (shifted inside the frame at its borders); the disc's pixels are set to 0.
    """
    side = np.minimum(2 * radius + 1, np.array(inp.size))
    tops = np.clip(centres - radius, 0, np.array(inp.size) - side)
    rows, cols = tops[:, :1] + np.arange(side[0]), tops[:, 1:] + np.arange(side[1])
    d2 = (rows - centres[:, :1])[:, :, None] ** 2 + (cols - centres[:, 1:])[:, None, :] ** 2
    values = np.where(_expand(d2 <= radius * radius, inp.layout), np.float32(0.0), _windows(inp, rows, cols))
    return tops, np.asarray(values, dtype=np.float32)


def _color(agent: Agent, color: Any) -> float:
    if isinstance(color, str):
        name = _check.choice("color", color, ("black", "gray"))
        if name == "black":
            return 0.0
        space = agent.observation_space
        if not isinstance(space, gym.spaces.Box) or not (
            np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high))
        ):
            raise InvalidArgument(
                f"`color` 'gray' needs an observation space with finite bounds, the agent has {space}"
            )
        return float((np.min(space.low) + np.max(space.high)) / 2)
    return _check.number("color", color)


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise InvalidType(f"`{name}` must be a bool, received {value!r}")
    return bool(value)


# -- 2. Noise Sensitivity and SARFA's perturbation ---------------------------------------------------------
def _circle_scores(
    agent: Agent, inp: _Input, radius: int, variant: str, incremental: Any, batch_size: int
) -> tuple[NDArray[np.float64], Callable[[NDArray[np.float64]], NDArray[np.float64]]]:
    """The scores of Noise Sensitivity's and SARFA's perturbed observations, and the function making the map.

    Black discs on an image are local, so where the network allows it they are scored incrementally (as
    occlusion's patches are, see :func:`occlusion`); blurred circles reach the whole frame and always take the
    plain batched pass.
    """
    total, make, to_map = _circle_perturbations(inp, radius, variant)
    chain = _chain(agent, inp, incremental) if variant == "black" and inp.layout is not None else None
    run = _verified(chain, inp, incremental)
    if run is None:
        return _evaluate(agent, total, make, batch_size), to_map
    h, w = inp.size
    cy, cx = np.arange(0, h, radius), np.arange(0, w, radius)
    parts = []
    for start in range(0, total, batch_size):
        iy, ix = np.unravel_index(np.arange(start, min(start + batch_size, total)), (len(cy), len(cx)))
        parts.append(run.scores(*_disc_windows(inp, np.stack([cy[iy], cx[ix]], 1), radius)))
    return np.concatenate(parts), to_map


def _check_incremental(incremental: Any, variant: str, inp: _Input) -> None:
    if incremental is None:
        return
    if _check_bool("incremental", incremental) and (variant != "black" or inp.layout is None):
        raise InvalidArgument(
            "`incremental=True` needs black discs on an image (variant='black'); blurred circles and vectors "
            "take the plain batched pass"
        )


def _circle_perturbations(
    inp: _Input, radius: int, variant: str
) -> tuple[int, Callable[[int, int], NDArray[np.float32]], Callable[[NDArray[np.float64]], NDArray[np.float64]]]:
    """The perturbed observations of Noise Sensitivity and SARFA, and how their scores become a map.

    Returns the number of perturbations, a batch maker and the function that turns one score per
    perturbation into the map (bilinear upsampling from the grid of circle centres, for images).
    """
    if inp.layout is None:  # a vector: one feature at a time
        n = inp.size[0]
        substrate = _moving_average(inp.x, radius) if variant == "blur" else np.zeros_like(inp.x)

        def make_vector(start: int, stop: int) -> NDArray[np.float32]:
            k = np.arange(start, stop)
            batch = np.repeat(inp.x[None], len(k), axis=0)
            batch[np.arange(len(k)), k] = substrate[k]
            return batch

        return n, make_vector, lambda s: s

    h, w = inp.size
    cy, cx = np.arange(0, h, radius), np.arange(0, w, radius)
    if variant == "blur":
        substrate = _blur(inp)
        fy, fx = _gaussian_matrix(h, float(radius)), _gaussian_matrix(w, float(radius))
    else:
        substrate = np.zeros_like(inp.x)
    rows, cols = np.arange(h), np.arange(w)

    def masks_for(k: NDArray[np.int64]) -> NDArray[np.float32]:
        iy, ix = np.unravel_index(k, (len(cy), len(cx)))
        y, x = cy[iy], cx[ix]
        if variant == "black":  # a black disc of radius r
            d2 = (rows[None, :, None] - y[:, None, None]) ** 2 + (cols[None, None, :] - x[:, None, None]) ** 2
            return (d2 <= radius * radius).astype(np.float32)
        # Greydanus: the pixels within distance 1 of the centre, Gaussian-filtered with sigma r, peak 1.
        masks = np.zeros((len(k), h, w))
        for dy, dx in ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1)):
            py, px = y + dy, x + dx
            inside = ((py >= 0) & (py < h) & (px >= 0) & (px < w)).astype(np.float64)
            col_y = fy[:, np.clip(py, 0, h - 1)].T * inside[:, None]
            col_x = fx[:, np.clip(px, 0, w - 1)].T
            masks += col_y[:, :, None] * col_x[:, None, :]
        return np.asarray(masks / masks.max(axis=(1, 2), keepdims=True), dtype=np.float32)

    def make_image(start: int, stop: int) -> NDArray[np.float32]:
        m = _expand(masks_for(np.arange(start, stop)), inp.layout)
        return np.asarray(inp.x * (1.0 - m) + substrate * m, dtype=np.float32)

    wy, wx = _interpolation_matrix(cy, h), _interpolation_matrix(cx, w)
    return len(cy) * len(cx), make_image, lambda s: wy @ s.reshape(len(cy), len(cx)) @ wx.T


def _check_radius(radius: Any, inp: _Input) -> int:
    r = _check.integer("radius", radius, minimum=1)
    if inp.layout is not None:
        _fits("radius", r, inp, "so that the grid of circle centres has two points per side", strict=True)
    return r


def noise_sensitivity(
    agent: Agent,
    obs: ArrayLike,
    *,
    radius: int = 3,
    variant: str = "blur",
    chosen_action: bool = False,
    softmax: bool = False,
    action: int | None = None,
    layout: str | None = None,
    batch_size: int = BATCH_SIZE,
    incremental: bool | None = None,
) -> SaliencyMap:
    """Noise Sensitivity (Greydanus et al., 2018): how much blurring a small circle moves the agent's scores.

    For every ``radius``-th pixel λ (rows and columns 0, r, 2r, ...), ``I'(λ) = I * (1 - M) + B * M`` where
    ``B`` is each frame blurred by a Gaussian of standard deviation 3 pixels and ``M`` is Greydanus' soft
    circle: the pixels within distance 1 of λ, filtered by a Gaussian of standard deviation r and scaled to
    peak 1 (both filters mirror the frame at its borders, as SciPy's ``gaussian_filter`` does). The relevance is
    ``S(λ) = ½‖π(I) - π(I'(λ))‖²`` over all actions' scores (equation 2). The grid of scores is interpolated
    bilinearly to every pixel, each score sitting at its circle's centre (flat past the last centre).

    ``variant="black"`` is the paper's Noise Sensitivity Black: a disc of radius r (``dy² + dx² <= r²``) set to 0
    instead of blurred. ``chosen_action=True`` is its Noise Sensitivity Chosen Action: equation 1's drop of the
    analysed action's score, ``q(I) - q(I'(λ))``, instead of equation 2. (The authors' code for it takes
    ``1 - softmax(q(I'))[a]``: pass ``softmax=True`` for that ranking.)

    On a vector, each feature is perturbed alone and scored: ``"blur"`` replaces it with the mean of the
    features within ``radius`` of it, ``"black"`` with 0.

    Args:
        agent: an agent with a Discrete action space.
        obs: one observation: an image or a 1-D vector.
        radius: r, the circle's radius and the grid's step, 1 to the frame's smallest side - 1 (default 3, the
            paper's tuned value).
        variant: ``"blur"`` or ``"black"``.
        chosen_action: score the analysed action's drop (equation 1) instead of all actions (equation 2).
        softmax: compare action probabilities, ``softmax(scores)``, instead of raw scores.
        action: the analysed action (default: the greedy one); only ``chosen_action`` uses it.
        layout: the image's layout (default: inferred from its shape).
        batch_size: perturbed observations per forward pass.
        incremental: for black discs on an image, score only what each disc changes, as :func:`occlusion` does
            (None: where the network allows it; True: required; False: the plain batched pass). Blurred
            circles reach the whole frame and always take the plain pass.
    """
    inp = _prepare(agent, obs, layout, action)
    radius = _check_radius(radius, inp)
    variant = _check.choice("variant", variant, VARIANTS)
    chosen_action = _check_bool("chosen_action", chosen_action)
    softmax = _check_bool("softmax", softmax)
    batch_size = _check.integer("batch_size", batch_size, minimum=1)
    _check_incremental(incremental, variant, inp)
    inp = _scored(agent, inp)
    perturbed, to_map = _circle_scores(agent, inp, radius, variant, incremental, batch_size)
    if chosen_action:
        relevance = _target(inp.scores, inp.target, softmax) - _target(perturbed, inp.target, softmax)
    else:
        before, after = (_softmax(inp.scores), _softmax(perturbed)) if softmax else (inp.scores, perturbed)
        relevance = 0.5 * ((before[None] - after) ** 2).sum(axis=1)
    params = {"radius": radius, "variant": variant, "chosen_action": chosen_action, "softmax": softmax}
    return _result("noise_sensitivity", inp, to_map(relevance), params)


# -- 3. RISE -----------------------------------------------------------------------------------------------
def rise_masks(
    shape: tuple[int, ...], *, masks: int = 1000, cells: int = 8, p: float = 0.5, seed: int = 0
) -> NDArray[np.float32]:
    """RISE's N random masks for a map of shape ``shape``, (H, W) or (n,), as an array (N, *shape).

    Each mask starts as a ``cells`` x ``cells`` grid (``cells`` long for vectors) whose cells are 1 with
    probability ``p`` and 0 otherwise. It is upsampled bilinearly (pixel centres aligned, mirrored at the
    borders) to ``(cells + 1) * ceil(side / cells)`` per side and cropped to ``shape`` at a random offset below
    one cell, as Petsiuk et al.'s reference code does, so cell borders fall anywhere. Draws come from
    ``numpy.random.default_rng(seed)``: the cells of all masks first, then the offsets.

    Example:
        >>> m = rise_masks((84, 84), masks=4, cells=8, p=0.5, seed=0)
        >>> m.shape, bool(m.min() >= 0.0 and m.max() <= 1.0)
        ((4, 84, 84), True)
    """
    if not isinstance(shape, (tuple, list)) or len(shape) not in (1, 2):
        raise InvalidArgument(f"`shape` must be (H, W) or (n,), received {shape!r}")
    size = tuple(_check.integer(f"shape[{i}]", side, minimum=1) for i, side in enumerate(shape))
    cells = _check.integer("cells", cells, minimum=1)
    if cells > min(size):
        raise InvalidArgument(f"`cells` must be <= {min(size)} (the smallest side of `shape`), received {cells}")
    generator = _RiseMasks(size, masks, cells, p, seed, cells_name="cells")
    return generator.make(0, len(generator.grid))


class _RiseMasks:
    """RISE's masks, drawn once and built in slices (masks k..k+B) to bound memory."""

    def __init__(self, size: tuple[int, ...], n: int, cells: int, p: float, seed: int, *, cells_name: str):
        n = _check.integer("masks", n, minimum=1)
        cells = _check.integer(cells_name, cells, minimum=1)
        p = _open_probability("p", p)
        seed = _check.integer("seed", seed, minimum=0)
        rng = np.random.default_rng(seed)
        self.grid = (rng.random((n, *([cells] * len(size)))) < p).astype(np.float64)
        cell = [math.ceil(side / cells) for side in size]
        self.shifts = np.stack([rng.integers(0, c, size=n) for c in cell], axis=1)
        self.resize = [_resize_matrix(cells, (cells + 1) * c) for c in cell]
        self.size = size

    def make(self, start: int, stop: int) -> NDArray[np.float32]:
        grid, shifts = self.grid[start:stop], self.shifts[start:stop]
        crops = [
            r[s[:, None] + np.arange(side)[None]] for r, s, side in zip(self.resize, shifts.T, self.size, strict=True)
        ]
        if len(self.size) == 1:
            out = np.matmul(crops[0], grid[..., None])[..., 0]
        else:
            out = crops[0] @ grid @ np.swapaxes(crops[1], 1, 2)
        return np.asarray(out, dtype=np.float32)


def rise(
    agent: Agent,
    obs: ArrayLike,
    *,
    masks: int = 1000,
    size: int | None = None,
    p: float = 0.5,
    softmax: bool = False,
    seed: int = 0,
    action: int | None = None,
    layout: str | None = None,
    batch_size: int = BATCH_SIZE,
) -> SaliencyMap:
    """RISE (Petsiuk et al., 2018): the score under random masks, weighted by how much each keeps of a pixel.

    ``S(λ) = 1 / (p N) * Σ_i q(I ⊙ M_i) M_i(λ)`` (equation 3), with the N masks of :func:`rise_masks`
    multiplying every channel. ``q`` is the raw score of the analysed action: no sigmoid (TorchRay's RISE
    applies one, which distorts q-values), and the sum is divided by ``p N`` as the equation says. The same
    ``seed`` gives the same masks, hence the same map, bit for bit.

    Args:
        agent: an agent with a Discrete action space.
        obs: one observation: an image or a 1-D vector.
        masks: N, the number of masks, >= 1 (default 1000, the paper's tuned value).
        size: the masks' grid, ``size`` x ``size`` cells, at most the frame's smallest side (default 8, the
            paper's value; for a vector of n features, min(8, n) cells).
        p: the probability that a cell is kept, in (0, 1).
        softmax: use the action's probability, ``softmax(scores)``, instead of its raw score.
        seed: seeds the masks.
        action: the analysed action (default: the greedy one).
        layout: the image's layout (default: inferred from its shape).
        batch_size: perturbed observations per forward pass.
    """
    inp = _prepare(agent, obs, layout, action)
    size = min(8, min(inp.size)) if size is None else _check.integer("size", size, minimum=1)
    _fits("size", size, inp, "(a cell must hold at least one pixel)")
    generator = _RiseMasks(inp.size, masks, size, p, seed, cells_name="size")
    softmax = _check_bool("softmax", softmax)
    batch_size = _check.integer("batch_size", batch_size, minimum=1)
    inp = _scored(agent, inp)
    n = len(generator.grid)
    total = np.zeros(math.prod(inp.size))
    for start in range(0, n, batch_size):
        m = generator.make(start, min(start + batch_size, n))
        q = _target(_forward(agent, np.asarray(inp.x * _expand(m, inp.layout), np.float32)), inp.target, softmax)
        total += q @ m.reshape(len(m), -1).astype(np.float64)
    p_kept = float(p)
    params = {"masks": n, "size": size, "p": p_kept, "softmax": softmax, "seed": int(seed)}
    return _result("rise", inp, (total / (p_kept * n)).reshape(inp.size), params)


# -- 4. LIME -----------------------------------------------------------------------------------------------
def lime(
    agent: Agent,
    obs: ArrayLike,
    *,
    segmentation: str | None = None,
    samples: int | None = None,
    kernel_width: float = 0.25,
    segment_on: str = "stack",
    softmax: bool = False,
    seed: int = 0,
    action: int | None = None,
    layout: str | None = None,
    batch_size: int = BATCH_SIZE,
    **segmentation_params: Any,
) -> SaliencyMap:
    """LIME (Ribeiro et al., 2016): a weighted linear model of the score on which superpixels are present.

    The image is cut into superpixels by scikit-image (``skimage.segmentation``). ``samples`` binary vectors,
    one entry per superpixel, are drawn with each entry 1 or 0 with probability ½ (the first is all ones, the
    original); each becomes an observation with its 0 superpixels set to 0 in every channel. A sample's weight
    is LIME's exponential kernel ``sqrt(exp(-d² / w²))`` of its cosine distance ``d`` to the all-ones vector,
    with ``w = kernel_width`` (LIME's image default, 0.25). A ridge regression (penalty 1, unpenalized
    intercept, as LIME's default ``Ridge(alpha=1)``) of the analysed action's score on the vectors, with those
    weights, gives each superpixel a weight, and every pixel takes its superpixel's. The segmentation is
    returned in :attr:`SaliencyMap.segments`.

    Segmentations and their defaults (the paper's tuned values for 84 x 84 Atari frames, its Tables 5-7):

    - ``"quickshift"`` (the default for images): ``kernel_size=1, max_dist=2, ratio=0.0``, 1500 samples;
    - ``"slic"``: ``n_segments=200, compactness=10.0, sigma=0.25``, 2000 samples;
    - ``"felzenszwalb"``: ``scale=21.0, sigma=0.5, min_size=4``, 1000 samples;
    - ``"features"`` (vectors only, their default): each feature its own superpixel, 1000 samples.

    The image is scaled to [0, 1] by the observation space's bounds (by its own range when they are not finite)
    before it is segmented, as the paper's frames were; ``segment_on`` picks what is segmented: ``"stack"``
    (every channel, as one multichannel image, as the paper's code does), ``"last"`` (the last channel: the
    newest frame of a stack) or ``"mean"`` (the channels' mean).

    Args:
        agent: an agent with a Discrete action space.
        obs: one observation: an image or a 1-D vector.
        segmentation: ``"quickshift"``, ``"slic"``, ``"felzenszwalb"`` or ``"features"`` (default:
            ``"quickshift"`` for images, ``"features"`` for vectors).
        samples: the number of samples, >= 1 (default: the segmentation's, above).
        kernel_width: the kernel's width, > 0.
        segment_on: ``"stack"``, ``"last"`` or ``"mean"``.
        softmax: regress the action's probability, ``softmax(scores)``, instead of its raw score.
        seed: seeds the samples (quickshift's own tie-breaking is fixed).
        action: the analysed action (default: the greedy one).
        layout: the image's layout (default: inferred from its shape).
        batch_size: perturbed observations per forward pass.
        **segmentation_params: the segmentation's parameters, overriding its defaults (quickshift:
            ``kernel_size, max_dist, ratio, sigma``; slic: ``n_segments, compactness, sigma, max_num_iter,
            enforce_connectivity``; felzenszwalb: ``scale, sigma, min_size``).
    """
    inp = _prepare(agent, obs, layout, action)
    if segmentation is None:
        segmentation = "quickshift" if inp.layout is not None else "features"
    segmentation = _check.choice("segmentation", segmentation, tuple(SEGMENTATIONS))
    if (segmentation == "features") != (inp.layout is None):
        if inp.layout is None:
            raise IncompatibleSpace(
                f"`segmentation` {segmentation!r} segments images, received a vector of shape {inp.x.shape};"
                " use segmentation='features'"
            )
        raise InvalidArgument(
            "`segmentation` 'features' applies to vectors; segment an image with quickshift, slic or felzenszwalb"
        )
    allowed = _SEGMENTATION_KEYS[segmentation]
    for key in segmentation_params:
        if key not in allowed:
            own = [name for name in inspect.signature(lime).parameters if name not in ("agent", "obs")]
            raise UnknownName(
                f"`{key}` is neither a parameter of lime nor of its {segmentation!r} segmentation (which takes"
                f" {list(allowed)}).{did_you_mean(key, [*own[:-1], *allowed])}"
            )
    defaults, default_samples = SEGMENTATIONS[segmentation]
    seg_params = {**defaults, **segmentation_params}
    samples = _check.integer("samples", default_samples if samples is None else samples, minimum=1)
    kernel_width = _check.number("kernel_width", kernel_width)
    if kernel_width <= 0:
        raise InvalidArgument(f"`kernel_width` must be > 0, received {kernel_width!r}")
    segment_on = _check.choice("segment_on", segment_on, SEGMENT_ON)
    softmax = _check_bool("softmax", softmax)
    seed = _check.integer("seed", seed, minimum=0)
    batch_size = _check.integer("batch_size", batch_size, minimum=1)

    if inp.layout is None:
        segments = np.arange(inp.size[0], dtype=np.int64)
    else:
        segments = _segment(agent, inp, segmentation, seg_params, segment_on)
    inp = _scored(agent, inp)
    k = int(segments.max()) + 1
    rng = np.random.default_rng(seed)
    present = rng.integers(0, 2, size=(samples, k)).astype(np.float64)
    present[0] = 1.0

    def make(start: int, stop: int) -> NDArray[np.float32]:
        kept = present[start:stop][:, segments].astype(np.float32)  # (B, *size): 1 where the superpixel is on
        return np.asarray(inp.x * _expand(kept, inp.layout), dtype=np.float32)

    y = _target(_evaluate(agent, samples, make, batch_size), inp.target, softmax)
    distance = 1.0 - np.sqrt(present.sum(axis=1) / k)  # cosine distance to the all-ones vector
    weight = np.sqrt(np.exp(-(distance**2) / kernel_width**2))
    coef = _weighted_ridge(present, y, weight, _RIDGE_ALPHA)
    params = {
        "segmentation": segmentation,
        "samples": samples,
        "kernel_width": kernel_width,
        "segment_on": segment_on,
        "softmax": softmax,
        "seed": seed,
        **seg_params,
    }
    return _result("lime", inp, coef[segments], params, segments=segments)


def _weighted_ridge(
    x: NDArray[np.float64], y: NDArray[np.float64], weight: NDArray[np.float64], alpha: float
) -> NDArray[np.float64]:
    """Ridge coefficients with an unpenalized intercept and sample weights (scikit-learn's ``Ridge``)."""
    mean_w = weight / weight.sum()
    xc, yc = x - mean_w @ x, y - mean_w @ y
    root = np.sqrt(weight)
    xw, yw = xc * root[:, None], yc * root
    gram = xw.T @ xw + alpha * np.eye(x.shape[1])
    return np.asarray(np.linalg.solve(gram, xw.T @ yw), dtype=np.float64)


def _segment(
    agent: Agent, inp: _Input, segmentation: str, params: Mapping[str, Any], segment_on: str
) -> NDArray[np.int64]:
    """The image's superpixels, labelled 0..K-1, shape (H, W)."""
    require("skimage", purpose="LIME's segmentations")
    from skimage import segmentation as skseg

    x = inp.x.astype(np.float64)
    space = agent.observation_space
    if isinstance(space, gym.spaces.Box) and np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high)):
        low, high = space.low.astype(np.float64), space.high.astype(np.float64)
        unit = np.clip((x - low) / np.where(high > low, high - low, 1.0), 0.0, 1.0)
    else:
        span = float(x.max() - x.min())
        unit = (x - x.min()) / span if span > 0 else np.zeros_like(x)
    image = unit[..., None] if inp.layout == "hw" else np.moveaxis(unit, 0, -1) if inp.layout == "chw" else unit
    if segment_on == "last":
        image = image[..., -1:]
    elif segment_on == "mean":
        image = image.mean(axis=-1, keepdims=True)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*third dimension.*")
        if segmentation == "quickshift":
            raw = skseg.quickshift(image, convert2lab=False, channel_axis=-1, **params)
        elif segmentation == "slic":
            raw = skseg.slic(image, channel_axis=-1, start_label=0, **params)
        else:
            raw = skseg.felzenszwalb(image, channel_axis=-1, **params)
    _, labels = np.unique(raw, return_inverse=True)
    return labels.reshape(inp.size).astype(np.int64)


# -- 5. SARFA ----------------------------------------------------------------------------------------------
def sarfa(
    agent: Agent,
    obs: ArrayLike,
    *,
    radius: int = 2,
    variant: str = "black",
    action: int | None = None,
    layout: str | None = None,
    batch_size: int = BATCH_SIZE,
    incremental: bool | None = None,
) -> SaliencyMap:
    """SARFA (Puri et al., 2020): specific and relevant feature attribution.

    With ``P = softmax(scores)`` and ``a`` the analysed action, ``Δp = P(I, a) - P(I', a)`` (equation 4) is how
    much the perturbation lowers the action's probability; ``P_rem`` is the softmax over the other actions'
    scores, and ``K = 1 / (1 + KL(P_rem(I) ‖ P_rem(I')))`` (equation 5) is near 1 when the perturbation leaves
    the other actions' relative preferences alone. The relevance is their harmonic mean
    ``S = 2 K Δp / (K + Δp)`` (equation 6), and 0 where ``Δp <= 0``, as in Puri et al.'s code: a perturbation
    that makes the action likelier says nothing about the features it is based on.

    The perturbations are Noise Sensitivity's (see :func:`noise_sensitivity`): circles around every
    ``radius``-th pixel, blurred (``"blur"``) or blacked out (``"black"``, a disc of radius r set to 0), the
    grid of relevances upsampled bilinearly; one feature at a time on vectors.

    Args:
        agent: an agent with a Discrete action space.
        obs: one observation: an image or a 1-D vector.
        radius: r, the circle's radius and the grid's step (default 2, the paper's tuned value).
        variant: ``"black"`` (the paper's tuned choice) or ``"blur"``.
        action: the analysed action (default: the greedy one).
        layout: the image's layout (default: inferred from its shape).
        batch_size: perturbed observations per forward pass.
        incremental: as for :func:`noise_sensitivity`.
    """
    inp = _prepare(agent, obs, layout, action)
    radius = _check_radius(radius, inp)
    variant = _check.choice("variant", variant, VARIANTS)
    batch_size = _check.integer("batch_size", batch_size, minimum=1)
    _check_incremental(incremental, variant, inp)
    inp = _scored(agent, inp)
    perturbed, to_map = _circle_scores(agent, inp, radius, variant, incremental, batch_size)
    relevance = _sarfa_relevance(inp.scores, perturbed, inp.target)
    return _result("sarfa", inp, to_map(relevance), {"radius": radius, "variant": variant})


def _sarfa_relevance(original: NDArray[np.float64], perturbed: NDArray[np.float64], action: int) -> NDArray[np.float64]:
    """Equations 4-6 for each row of ``perturbed`` against ``original`` (both scores, not probabilities)."""
    dp = _softmax(original)[action] - _softmax(perturbed)[:, action]
    others = np.arange(original.shape[-1]) != action
    if others.any():
        p_rem, q_rem = _softmax(original[others]), _softmax(perturbed[:, others])
        kl = (p_rem[None] * (np.log(p_rem[None]) - np.log(q_rem))).sum(axis=1)
    else:
        kl = np.zeros(len(perturbed))
    k = 1.0 / (1.0 + kl)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = 2.0 * k * dp / (k + dp)
    return np.where(dp > 0, s, 0.0)


# -- by name -----------------------------------------------------------------------------------------------
#: The saliency methods by name.
METHODS: Final[Mapping[str, Callable[..., SaliencyMap]]] = {
    "occlusion": occlusion,
    "noise_sensitivity": noise_sensitivity,
    "rise": rise,
    "lime": lime,
    "sarfa": sarfa,
}


def saliency_map(agent: Agent, obs: ArrayLike, method: str, **params: Any) -> SaliencyMap:
    """The saliency map of ``method`` (a name in :data:`METHODS`) with its keyword ``params``.

    Example:
        >>> import gymnasium as gym, numpy as np, torch
        >>> from rlwrappers.agents import TorchAgent
        >>> from rlwrappers.explain.maps import saliency_map
        >>> space = gym.spaces.Box(0.0, 1.0, (3,))
        >>> agent = TorchAgent(torch.nn.Linear(3, 2), space, gym.spaces.Discrete(2), head="q_values")
        >>> saliency_map(agent, np.ones(3, np.float32), "occlusion").shape
        (3,)
    """
    if not isinstance(method, str):
        raise InvalidType(f"`method` must be a name in {sorted(METHODS)}, received {method!r}")
    if method not in METHODS:
        raise UnknownName(
            f"`method` must be one of {sorted(METHODS)}, received {method!r}.{did_you_mean(method, METHODS)}"
        )
    fn = METHODS[method]
    signature = inspect.signature(fn).parameters
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.values()):
        known = [name for name, p in signature.items() if p.kind is inspect.Parameter.KEYWORD_ONLY]
        _check.keys(f"{method} parameters", params, known)
    return fn(agent, obs, **params)
