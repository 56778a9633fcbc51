"""Evaluating saliency maps: sanity checks, the insertion metric, and the parameter search around them.

From *Benchmarking Perturbation-based Saliency Maps for Explaining Atari Agents* (Huber, Limmer and André 2022),
Sections 3.3-3.4. Every function takes saliency maps as arrays of shape (H, W) and the network either as an
:class:`rlwrappers.agents.Agent` or as a scoring callable ``score(batch) -> (N, A)`` (one row of action scores,
q-values or logits, per observation of the batch); nothing here computes a saliency map.

- **Similarities** of two maps (Section 3.3.1): :func:`spearman` (rank correlation), :func:`ssim` (structural
  similarity with a 7 x 7 window on the 2-D maps, both min-max normalized, ``data_range=1``) and
  :func:`hog_pearson` (Pearson correlation of scikit-image HOG descriptors with 3 x 3 pixels per cell).
  With ``sign_invariant=True`` (the default, after Sixt et al. 2020) each is the maximum over ``b`` and ``-b``.
  A constant map has no ranks, no contrast and no gradients: every similarity involving one is NaN.
  :func:`calibration` gives their means over pairs of random maps (uniform and Gaussian), which should be low.
- **Cascading randomization** (Adebayo et al. 2018): :func:`cascading_randomization` re-initializes the
  layers that decide the agent's outputs from the output layer down, one more per copy, with a seeded
  ``torch.Generator``; :func:`sanity_check` compares each copy's maps with the original's.
- **Insertion** (Petsiuk et al. 2018): :func:`insertion_curve` starts from a fully perturbed observation
  (black, or uniform noise) and uncovers ``step`` pixels at a time in decreasing saliency; ``measure="q"`` is
  ``q(I_k, a) / q(I, a)`` and ``measure="advantage"`` is ``q(I_k, a) - mean_a' q(I_k, a')`` (eq. 7). Its area
  :func:`auc` is the trapezoid rule with the uncovered fraction on the x axis, from 0 to 1.
  :func:`insertion` gives the paper's four variants for one state and :func:`insertion_table` for many.
- **State selection** (Section 3.4.2): :func:`importance` (HIGHLIGHTS' max q - min q), :func:`highlights_div`
  with the diversity threshold as footnote 6's percentile of the pairwise distances, :func:`random_subsets`.
- **Parameter search** (Section 3.4.1): :func:`standardized_scores` (mean AUC over both substrates,
  standardized across parameter sets, summed over the two measures) and :func:`select` (the best set whose
  time per map fits a budget).

Every draw comes from a generator seeded by the call's ``seed``; numpy's and torch's global generators are
never touched.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from numpy.typing import ArrayLike, NDArray

from rlwrappers import _check
from rlwrappers._optional import require
from rlwrappers.agents import Agent, SB3Agent
from rlwrappers.error import IncompatibleSpace, InvalidArgument, InvalidType, NotDifferentiable

if TYPE_CHECKING:
    import pandas as pd
    import torch

__all__ = [
    "HOG_PIXELS_PER_CELL",
    "INSERTION_COLUMNS",
    "MEASURES",
    "SIMILARITIES",
    "SSIM_WINDOW",
    "STEP",
    "SUBSTRATES",
    "InsertionCurve",
    "auc",
    "calibration",
    "cascading_randomization",
    "diversity_threshold",
    "highlights_div",
    "hog_pearson",
    "importance",
    "insertion",
    "insertion_curve",
    "insertion_order",
    "insertion_table",
    "min_max",
    "random_subsets",
    "randomization_layers",
    "sanity_check",
    "sanity_check_summary",
    "scorer",
    "select",
    "similarities",
    "spearman",
    "ssim",
    "standardized_scores",
]

#: The similarity measures of the sanity checks, in the paper's order (the columns of :func:`sanity_check`).
SIMILARITIES: Final = ("spearman", "ssim", "hog_pearson")
#: The SSIM window side (Section 3.3.1).
SSIM_WINDOW: Final = 7
#: The HOG cell size (Section 3.3.1); the other HOG settings are scikit-image's defaults.
HOG_PIXELS_PER_CELL: Final = (3, 3)
#: The insertion substrates: black (0) and uniform noise.
SUBSTRATES: Final = ("black", "random")
#: What the insertion metric measures: the normalized q-value or the advantage (eq. 7).
MEASURES: Final = ("q", "advantage")
#: The columns of :func:`insertion` and :func:`insertion_table`: one AUC per measure and substrate.
INSERTION_COLUMNS: Final = ("q_black", "q_random", "advantage_black", "advantage_random")
#: Pixels uncovered per insertion step in the paper (about 1.2 % of an 84 x 84 frame).
STEP: Final = 84
#: Observations scored per forward pass by default.
_BATCH: Final = 128
#: The smallest map side SSIM (7 x 7 window) and HOG (3 x 3 blocks of 3 x 3-pixel cells) take.
_MIN_SIDE: Final = 9


# -- similarities ----------------------------------------------------------------------------------------
def _map(x: ArrayLike, name: str) -> NDArray[np.float64]:
    """``x`` as a finite 2-D float64 map."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2:
        raise InvalidArgument(f"`{name}` must be a saliency map of shape (H, W), received shape {a.shape}")
    if not np.isfinite(a).all():
        raise InvalidArgument(f"`{name}` must hold finite values, received {int((~np.isfinite(a)).sum())} non-finite")
    return a


def _pair(a: ArrayLike, b: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    x, y = _map(a, "a"), _map(b, "b")
    if x.shape != y.shape:
        raise InvalidArgument(f"`a` and `b` must have the same shape, received {x.shape} and {y.shape}")
    if min(x.shape) < _MIN_SIDE:
        raise InvalidArgument(f"saliency maps must be at least {_MIN_SIDE} x {_MIN_SIDE}, received {x.shape}")
    return x, y


def _constant(x: NDArray[np.float64]) -> bool:
    return bool(x.max() == x.min())


def min_max(saliency: ArrayLike) -> NDArray[np.float64]:
    """The map scaled to [0, 1]: ``(x - min) / (max - min)``; a constant map has no scale and gives NaN.

    Example:
        >>> min_max([[1.0, 3.0], [2.0, 5.0]]).tolist()
        [[0.0, 0.5], [0.25, 1.0]]
    """
    x = np.asarray(saliency, dtype=np.float64)
    low, high = float(x.min()), float(x.max())
    if high == low:
        return np.full(x.shape, np.nan)
    return (x - low) / (high - low)


def _sign_max(
    measure: Callable[[NDArray[np.float64], NDArray[np.float64]], float],
    a: ArrayLike,
    b: ArrayLike,
    sign_invariant: bool,
) -> float:
    x, y = _pair(a, b)
    if _constant(x) or _constant(y):
        return math.nan
    value = measure(x, y)
    if not sign_invariant:
        return value
    flipped = measure(x, -y)
    return math.nan if math.isnan(value) or math.isnan(flipped) else max(value, flipped)


def _spearman(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    stats = require("scipy.stats", purpose="Spearman rank correlation")
    return float(stats.spearmanr(x.ravel(), y.ravel()).statistic)


def spearman(a: ArrayLike, b: ArrayLike, *, sign_invariant: bool = True) -> float:
    """Spearman rank correlation of two maps' pixels; with ``sign_invariant``, ``max(rho(a, b), rho(a, -b))``.

    Since ``rho(a, -b) = -rho(a, b)``, the sign-invariant value is ``|rho(a, b)|``. NaN if a map is constant.

    Example:
        >>> import numpy as np
        >>> a = np.arange(100.0).reshape(10, 10)
        >>> [round(v, 12) for v in (spearman(a, a), spearman(a, -a), spearman(a, -a, sign_invariant=False))]
        [1.0, 1.0, -1.0]
    """
    return _sign_max(_spearman, a, b, sign_invariant)


def _ssim_of(flatten: bool) -> Callable[[NDArray[np.float64], NDArray[np.float64]], float]:
    metrics = require("skimage.metrics", purpose="SSIM")

    def measure(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
        u, v = min_max(x), min_max(y)
        if flatten:
            u, v = u.ravel(), v.ravel()
        return float(metrics.structural_similarity(u, v, win_size=SSIM_WINDOW, data_range=1.0))

    return measure


def ssim(a: ArrayLike, b: ArrayLike, *, sign_invariant: bool = True, flatten: bool = False) -> float:
    """Structural similarity of two min-max normalized maps: a 7 x 7 window over the 2-D maps, ``data_range=1``.

    Each map is scaled to [0, 1] by :func:`min_max` first, so flipping the sign of ``b`` gives ``1 - b``
    after scaling: the paper's multiplication by -1 and the reference code's ``1 - map`` agree here. The
    other settings are scikit-image's defaults (uniform window, sample covariance, K1 = 0.01, K2 = 0.03).
    ``flatten=True`` runs the window along the flattened maps instead, as the paper's reference code did.
    NaN if a map is constant.

    Example:
        >>> import numpy as np
        >>> a = np.random.default_rng(0).random((12, 12))
        >>> round(ssim(a, a), 6), round(ssim(a, 1 - a), 6), ssim(a, 1 - a, sign_invariant=False) < 0
        (1.0, 1.0, True)
    """
    return _sign_max(_ssim_of(flatten), a, b, sign_invariant)


def _hog(x: NDArray[np.float64]) -> NDArray[np.float64]:
    feature = require("skimage.feature", purpose="HOG descriptors")
    return np.asarray(feature.hog(min_max(x), pixels_per_cell=HOG_PIXELS_PER_CELL), dtype=np.float64)


def _hog_pearson(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    u, v = _hog(x), _hog(y)
    if u.std() == 0 or v.std() == 0:
        return math.nan
    return float(np.corrcoef(u, v)[0, 1])


def hog_pearson(a: ArrayLike, b: ArrayLike, *, sign_invariant: bool = True) -> float:
    """Pearson correlation of the HOG descriptors of two min-max normalized maps.

    ``skimage.feature.hog`` with ``pixels_per_cell=(3, 3)`` and its defaults otherwise (9 unsigned orientations,
    3 x 3 cells per block, L2-Hys). Unsigned orientations make HOG blind to a sign flip, so the sign-invariant
    maximum differs from the plain value only by rounding. NaN if a map is constant.

    Example:
        >>> import numpy as np
        >>> a = np.random.default_rng(0).random((12, 12))
        >>> round(hog_pearson(a, a), 6)
        1.0
    """
    return _sign_max(_hog_pearson, a, b, sign_invariant)


def similarities(a: ArrayLike, b: ArrayLike, *, sign_invariant: bool = True) -> dict[str, float]:
    """The three similarities of the sanity checks: ``{"spearman": ..., "ssim": ..., "hog_pearson": ...}``.

    Example:
        >>> import numpy as np
        >>> a = np.random.default_rng(0).random((12, 12))
        >>> {k: round(v, 6) for k, v in similarities(a, a).items()}
        {'spearman': 1.0, 'ssim': 1.0, 'hog_pearson': 1.0}
    """
    return {
        "spearman": spearman(a, b, sign_invariant=sign_invariant),
        "ssim": ssim(a, b, sign_invariant=sign_invariant),
        "hog_pearson": hog_pearson(a, b, sign_invariant=sign_invariant),
    }


def calibration(
    shape: tuple[int, int] = (84, 84), pairs: int = 100, seed: int = 0, *, sign_invariant: bool = True
) -> pd.DataFrame:
    """Mean similarities of pairs of random maps (Adebayo et al. 2018): low values mean the measures discriminate.

    ``pairs`` pairs of independent uniform U[0, 1) maps and ``pairs`` pairs of standard Gaussian maps, drawn
    from ``np.random.default_rng(seed)`` (uniform pairs first). The paper reports (0.0087, 0.0136, 0.0096) for
    uniform and (0.0093, 0.0374, 0.0087) for Gaussian maps of 84 x 84.

    Returns:
        A DataFrame indexed by distribution ("uniform", "gaussian") with the :data:`SIMILARITIES` as columns.

    Example:
        >>> table = calibration((20, 20), pairs=5)
        >>> list(table.index), list(table.columns), bool((table.abs() < 0.3).all().all())
        (['uniform', 'gaussian'], ['spearman', 'ssim', 'hog_pearson'], True)
    """
    pd = require("pandas", purpose="calibration tables")
    if not (isinstance(shape, tuple) and len(shape) == 2):
        raise InvalidArgument(f"`shape` must be a pair (H, W), received {shape!r}")
    for i, side in enumerate(shape):
        _check.integer(f"shape[{i}]", side, minimum=_MIN_SIDE)
    pairs = _check.integer("pairs", pairs, minimum=1)
    rng = np.random.default_rng(_check.integer("seed", seed, minimum=0))
    draws: dict[str, Callable[[], NDArray[np.float64]]] = {
        "uniform": lambda: rng.random(shape),
        "gaussian": lambda: rng.standard_normal(shape),
    }
    rows = {}
    for name, draw in draws.items():
        values = [similarities(draw(), draw(), sign_invariant=sign_invariant) for _ in range(pairs)]
        rows[name] = {k: float(np.mean([v[k] for v in values])) for k in SIMILARITIES}
    return pd.DataFrame.from_dict(rows, orient="index")[list(SIMILARITIES)]


# -- cascading randomization -----------------------------------------------------------------------------
def _layer_groups(agent: Agent) -> dict[str, list[str]]:
    """The agent's layers, output layer first: layer name -> the names of its parameters in ``agent.parameters()``.

    A layer is a submodule that holds parameters itself; the order is the reverse of registration. A parameter
    the root module holds directly is a layer of its own (for a :class:`TorchAgent`), except for SB3 policies,
    whose only such parameter (the Gaussian policy's state-independent ``log_std``) is left as trained.
    """
    if not isinstance(agent, Agent):
        raise InvalidType(f"`agent` must be an rlwrappers Agent, received {type(agent).__name__}")
    params = agent.parameters()
    if not params:
        raise NotDifferentiable(f"{agent} has no network parameters to randomize")
    groups: dict[str, list[str]] = {}
    for name in params:
        prefix = name.rpartition(".")[0]
        if isinstance(agent, SB3Agent) and agent.kind in ("actor_critic", "sac", "td3") and "." not in name:
            continue
        groups.setdefault(prefix or name, []).append(name)
    return dict(reversed(groups.items()))


def randomization_layers(agent: Agent) -> list[str]:
    """The layers :func:`cascading_randomization` re-initializes, in its order: the output layer first.

    For an :class:`SB3Agent`, the parameters of :meth:`SB3Agent.parameters` grouped by module: DQN's online
    ``q_net`` only (never ``q_net_target``); for PPO and A2C the actor path (``action_net``, the policy half of
    the ``mlp_extractor``, the features extractor), never the critic. For a :class:`TorchAgent`, every module
    of ``module`` that holds parameters, in reverse registration order.

    Example:
        >>> import gymnasium as gym, torch
        >>> from rlwrappers.agents import TorchAgent
        >>> net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        >>> space = gym.spaces.Box(-1.0, 1.0, (4,))
        >>> randomization_layers(TorchAgent(net, space, gym.spaces.Discrete(2), head="q_values"))
        ['2', '0']
    """
    return list(_layer_groups(agent))


def _reinitialize(tensors: Mapping[str, torch.Tensor], generator: torch.Generator) -> None:
    """Draws new values for one layer's parameters from ``generator``, on the CPU, then copies them in place.

    Weights of two or more dimensions get PyTorch's default for ``Linear`` and ``Conv`` layers,
    ``kaiming_uniform_(a=sqrt(5))``, that is U(-1/sqrt(fan_in), 1/sqrt(fan_in)); the layer's other parameters
    (biases) the same bound from the weight's fan-in; a layer without such a weight (a normalization layer)
    gets standard normal values.
    """
    torch = require("torch", purpose="cascading randomization")
    matrices = [t for t in tensors.values() if t.dim() >= 2]
    fan_in = int(np.prod(matrices[0].shape[1:])) if matrices else 0
    with torch.no_grad():
        for tensor in tensors.values():
            new = torch.empty(tensor.shape, dtype=tensor.dtype)
            if tensor.dim() >= 2:
                torch.nn.init.kaiming_uniform_(new, a=math.sqrt(5), generator=generator)
            elif fan_in > 0:
                bound = 1.0 / math.sqrt(fan_in)
                torch.nn.init.uniform_(new, -bound, bound, generator=generator)
            else:
                torch.nn.init.normal_(new, generator=generator)
            tensor.copy_(new.to(tensor.device))


def cascading_randomization(
    agent: Agent, seed: int = 0, *, layers: Sequence[str] | None = None
) -> list[tuple[str, Agent]]:
    """Copies of ``agent`` with its layers re-initialized one more at a time, from the output layer down.

    The k-th copy has the first k of :func:`randomization_layers` (or of ``layers``, a subset in that order)
    re-initialized: weights of two or more dimensions with PyTorch's default for ``Linear`` and ``Conv``,
    ``kaiming_uniform_(a=sqrt(5))`` (U(-1/sqrt(fan_in), 1/sqrt(fan_in))), the layer's biases from the same
    bound, and the parameters of a layer without such a weight (a normalization layer) from N(0, 1). Every draw
    comes from one ``torch.Generator`` seeded with ``seed`` and carried down the cascade: a layer gets the same
    random weights in every copy that randomizes it, and the same seed gives bit-identical copies. ``agent`` is
    deep-copied and stays unchanged; torch's global generator is not used. Buffers (batch-norm statistics) are
    kept.

    Returns:
        ``[(layer, copy), ...]``, the output layer first; the last copy has every layer randomized.

    Example:
        >>> import gymnasium as gym, torch
        >>> from rlwrappers.agents import TorchAgent
        >>> net = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
        >>> agent = TorchAgent(net, gym.spaces.Box(-1.0, 1.0, (4,)), gym.spaces.Discrete(2), head="q_values")
        >>> cascade = cascading_randomization(agent, seed=0)
        >>> [name for name, _ in cascade]
        ['2', '0']
        >>> bool(torch.equal(cascade[0][1].module[0].weight, net[0].weight))  # only the output layer so far
        True
    """
    torch = require("torch", purpose="cascading randomization")
    groups = _layer_groups(agent)
    if layers is not None:
        wanted = list(layers)
        unknown = [name for name in wanted if name not in groups]
        if unknown:
            raise InvalidArgument(f"`layers` must be among {list(groups)}, received unknown {unknown}")
        if sorted(wanted, key=list(groups).index) != wanted or len(set(wanted)) != len(wanted):
            raise InvalidArgument(f"`layers` must be distinct and in the order {list(groups)}, received {wanted}")
        groups = {name: groups[name] for name in wanted}
    generator = torch.Generator().manual_seed(_check.integer("seed", seed, minimum=0))
    work = copy.deepcopy(agent)
    params = work.parameters()
    cascade: list[tuple[str, Agent]] = []
    for layer, names in groups.items():
        _reinitialize({name: params[name] for name in names}, generator)
        cascade.append((layer, copy.deepcopy(work)))
    return cascade


def sanity_check(
    explain: Callable[[Agent, NDArray[Any]], ArrayLike],
    agent: Agent,
    states: ArrayLike,
    seed: int = 0,
    *,
    layers: Sequence[str] | None = None,
    sign_invariant: bool = True,
) -> pd.DataFrame:
    """Adebayo et al.'s model-parameter randomization test: the original maps against those of randomized copies.

    ``explain(agent, obs)`` returns the (H, W) saliency map of one observation. It is called for ``agent`` and
    for every copy of :func:`cascading_randomization` (``seed``, ``layers``) on each state; each copy's map is
    compared with the original's by :func:`similarities`. In the paper, the randomized networks explain the
    action the original agent chose: let ``explain`` pick it from the original agent to do the same.

    Returns:
        One row per (state, randomized layer): ``state`` (the index in ``states``), ``level`` (how many layers
        are randomized, 1 = the output layer), ``layer``, and the :data:`SIMILARITIES`.
    """
    pd = require("pandas", purpose="sanity-check tables")
    if not callable(explain):
        raise InvalidType(f"`explain` must be a callable explain(agent, obs) -> map, received {explain!r}")
    batch = np.asarray(states)
    shape = agent.observation_space.shape
    if shape is not None and batch.shape[1:] != shape:
        raise InvalidArgument(f"`states` must have shape (n, *{shape}), received {batch.shape}")
    cascade = cascading_randomization(agent, seed, layers=layers)
    rows = []
    for i, obs in enumerate(batch):
        original = explain(agent, obs)
        for level, (layer, randomized) in enumerate(cascade, 1):
            values = similarities(original, explain(randomized, obs), sign_invariant=sign_invariant)
            rows.append({"state": i, "level": level, "layer": layer, **values})
    return pd.DataFrame(rows, columns=["state", "level", "layer", *SIMILARITIES])


def sanity_check_summary(table: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard error of each similarity per randomized layer, in cascade order (Figures 5-6).

    NaN similarities (constant maps) are left out of the means; ``count`` says how many values remain.

    Returns:
        A DataFrame indexed by (level, layer) with columns ``<similarity>`` (the mean), ``<similarity>_sem`` and
        ``<similarity>_count`` for each of the :data:`SIMILARITIES`.
    """
    missing = [c for c in ("level", "layer", *SIMILARITIES) if c not in table.columns]
    if missing:
        raise InvalidArgument(f"`table` must be a sanity_check table, it lacks the columns {missing}")
    grouped = table.groupby(["level", "layer"], sort=True)[list(SIMILARITIES)]
    means, sems, counts = grouped.mean(), grouped.sem(), grouped.count()
    out = means.copy()
    for name in SIMILARITIES:
        out[f"{name}_sem"] = sems[name]
        out[f"{name}_count"] = counts[name]
    return out


# -- insertion -------------------------------------------------------------------------------------------
Score = Callable[[NDArray[Any]], ArrayLike]


def scorer(agent: Agent) -> Callable[[NDArray[Any]], NDArray[np.float64]]:
    """``score(batch) -> (N, A)``: the agent's action scores (q-values, or logits) for a batch, without gradients.

    Example:
        >>> import gymnasium as gym, numpy as np, torch
        >>> from rlwrappers.agents import TorchAgent
        >>> net = torch.nn.Linear(3, 2)
        >>> score = scorer(TorchAgent(net, gym.spaces.Box(0.0, 1.0, (3,)), gym.spaces.Discrete(2), head="q_values"))
        >>> score(np.zeros((5, 3), np.float32)).shape
        (5, 2)
    """
    from rlwrappers.saliency import action_scores

    if not isinstance(agent, Agent):
        raise InvalidType(f"`agent` must be an rlwrappers Agent, received {type(agent).__name__}")

    def score(batch: NDArray[Any]) -> NDArray[np.float64]:
        return action_scores(agent, batch)

    return score


def _scoring(score: Score | Agent) -> Score:
    if isinstance(score, Agent):
        return scorer(score)
    if not callable(score):
        raise InvalidType(f"`score` must be an Agent or a callable score(batch) -> (N, A), received {score!r}")
    return score


def _streams(seed: int) -> tuple[np.random.Generator, np.random.Generator]:
    """Independent generators for the pixel order and the random substrate, from one seed."""
    order, substrate = np.random.SeedSequence(_check.integer("seed", seed, minimum=0)).spawn(2)
    return np.random.default_rng(order), np.random.default_rng(substrate)


def _order(s: NDArray[np.float64], segments: ArrayLike | None, rng: np.random.Generator) -> NDArray[np.int64]:
    flat = s.ravel()
    if segments is None:
        return np.argsort(-flat, kind="stable").astype(np.int64)
    seg = np.asarray(segments)
    if seg.shape != s.shape or not np.issubdtype(seg.dtype, np.integer):
        raise InvalidArgument(
            f"`segments` must be integer labels of the map's shape {s.shape}, received {seg.dtype} {seg.shape}"
        )
    _, inverse = np.unique(seg.ravel(), return_inverse=True)
    relevance = np.bincount(inverse, weights=flat) / np.bincount(inverse)
    parts = [rng.permutation(np.flatnonzero(inverse == label)) for label in np.argsort(-relevance, kind="stable")]
    return np.concatenate(parts).astype(np.int64)


def insertion_order(saliency: ArrayLike, segments: ArrayLike | None = None, seed: int = 0) -> NDArray[np.int64]:
    """The flat pixel indices of the map in the order the insertion metric uncovers them.

    Without ``segments``: decreasing saliency, ties in raster order. With ``segments`` (integer superpixel
    labels of the map's shape, as LIME uses): superpixels by decreasing mean saliency (ties by label), and the
    pixels within each superpixel in a random order drawn from ``seed``.

    Example:
        >>> insertion_order([[0.1, 0.9], [0.5, 0.5]]).tolist()
        [1, 2, 3, 0]
    """
    s = _map(saliency, "saliency")
    return _order(s, segments, _streams(seed)[0])


def auc(values: ArrayLike, fractions: ArrayLike | None = None) -> float:
    """Area under an insertion curve by the trapezoid rule, x being the uncovered fraction from 0 to 1.

    ``sum_k (x_{k+1} - x_k) (y_k + y_{k+1}) / 2``; ``fractions`` default to evenly spaced points from 0 to 1, where
    the area is ``(sum_k y_k - (y_0 + y_K) / 2) / K`` for K steps.

    Example:
        >>> round(auc([0.0, 0.5, 1.0, 1.0]), 12)  # (0.25 + 0.75 + 1.0) / 3
        0.666666666667
    """
    y = np.asarray(values, dtype=np.float64).ravel()
    if len(y) < 2:
        raise InvalidArgument(f"`values` must hold at least two points, received {len(y)}")
    x = np.linspace(0.0, 1.0, len(y)) if fractions is None else np.asarray(fractions, dtype=np.float64).ravel()
    if x.shape != y.shape or np.any(np.diff(x) < 0):
        raise InvalidArgument(f"`fractions` must be {len(y)} non-decreasing values, received {x.tolist()!r}")
    return float(np.sum(np.diff(x) * (y[1:] + y[:-1]) / 2.0))


@dataclass(frozen=True)
class InsertionCurve:
    """One insertion curve.

    Attributes:
        fractions: the uncovered fraction of the pixels at each point, 0 (fully perturbed) to 1 (the state).
        values: the measure at each point.
        scores: the raw action scores at each point, shape (points, actions).
        action: the action measured.
        substrate: "black" or "random".
        measure: "q" or "advantage".
    """

    fractions: NDArray[np.float64]
    values: NDArray[np.float64]
    scores: NDArray[np.float64]
    action: int
    substrate: str
    measure: str

    @property
    def auc(self) -> float:
        """The area under the curve, :func:`auc`."""
        return auc(self.values, self.fractions)


def _layout(obs: NDArray[Any], shape: tuple[int, ...], layout: str | None) -> str:
    """Where the map's (H, W) axes lie in the observation: "hw", "chw" or "hwc"."""
    fits = {
        "hw": obs.shape == shape,
        "chw": obs.ndim == 3 and obs.shape[1:] == shape,
        "hwc": obs.ndim == 3 and obs.shape[:2] == shape,
    }
    if layout is not None:
        _check.choice("layout", layout, tuple(fits))
        if not fits[layout]:
            raise IncompatibleSpace(f"an observation of shape {obs.shape} has no {layout!r} layout for a {shape} map")
        return layout
    matching = [name for name, ok in fits.items() if ok]
    if not matching:
        raise IncompatibleSpace(
            f"the saliency map's shape {shape} is not the (H, W) of the observation's shape {obs.shape}"
        )
    if len(matching) > 1:
        raise InvalidArgument(f"observation {obs.shape} and map {shape} fit layouts {matching}: pass `layout=`")
    return matching[0]


def _substrate(
    obs: NDArray[Any], kind: str, bounds: tuple[float, float] | None, rng: np.random.Generator
) -> NDArray[Any]:
    """The fully perturbed observation: zeros, or uniform noise in ``bounds`` of the observation's dtype."""
    if kind == "black":
        return np.zeros_like(obs)
    if bounds is None:
        if obs.dtype == np.uint8:
            bounds = (0, 255)
        elif np.issubdtype(obs.dtype, np.floating):
            bounds = (0.0, 1.0)
        else:
            raise InvalidArgument(f"`bounds` is required for a random substrate of dtype {obs.dtype}")
    low, high = bounds
    if not low < high:
        raise InvalidArgument(f"`bounds` must be (low, high) with low < high, received {bounds!r}")
    if np.issubdtype(obs.dtype, np.integer):
        return rng.integers(int(low), int(high), size=obs.shape, endpoint=True).astype(obs.dtype)
    return rng.uniform(low, high, size=obs.shape).astype(obs.dtype)


def _insertion_scores(
    score: Score,
    obs: NDArray[Any],
    saliency: ArrayLike,
    substrates: Iterable[str],
    *,
    step: int,
    segments: ArrayLike | None,
    seed: int,
    bounds: tuple[float, float] | None,
    batch_size: int,
    layout: str | None,
) -> tuple[NDArray[np.float64], dict[str, NDArray[np.float64]]]:
    """The uncovered fractions and, per substrate, the scores of every insertion step, (K + 1, A)."""
    s = np.asarray(saliency, dtype=np.float64)
    if s.ndim == 1:  # a vector observation's feature relevances: one "pixel" per feature
        if not np.isfinite(s).all():
            raise InvalidArgument("`saliency` must hold finite values")
    else:
        s = _map(s, "saliency")
    where = _layout(obs, s.shape, layout)
    step = _check.integer("step", step, minimum=1)
    batch_size = _check.integer("batch_size", batch_size, minimum=1)
    order_rng, substrate_rng = _streams(seed)
    n = s.size
    rank = np.empty(n, np.int64)
    rank[_order(s, segments, order_rng)] = np.arange(n)
    rank_map = rank.reshape(s.shape)
    counts = np.minimum(np.arange(-(-n // step) + 1) * step, n)
    out = {}
    for kind in substrates:
        base = _substrate(obs, kind, bounds, substrate_rng)
        chunks = []
        for start in range(0, len(counts), batch_size):
            shown = rank_map[None] < counts[start : start + batch_size].reshape(-1, *([1] * s.ndim))  # (b, *map)
            shown = {"hw": shown, "chw": shown[:, None], "hwc": shown[..., None]}[where]
            batch = np.where(shown, obs[None], base[None])
            scores = np.asarray(score(batch), dtype=np.float64)
            if scores.ndim != 2 or scores.shape[0] != len(batch):
                raise InvalidArgument(
                    f"`score` must return one row of action scores per observation, shape ({len(batch)}, A),"
                    f" received {scores.shape}"
                )
            chunks.append(scores)
        out[kind] = np.concatenate(chunks)
    return counts / n, out


def _measure(scores: NDArray[np.float64], action: int, measure: str) -> NDArray[np.float64]:
    """The measured values of one curve: ``q / t`` (``t`` the state's own score, NaN if 0) or the advantage."""
    q = scores[:, action]
    if measure == "advantage":
        return q - scores.mean(axis=1)
    t = q[-1]
    return np.full(q.shape, np.nan) if t == 0 else q / t


def _action(scores: NDArray[np.float64], action: int | None) -> int:
    if action is None:
        return int(np.argmax(scores[-1]))
    a = _check.integer("action", action, minimum=0)
    if a >= scores.shape[1]:
        raise InvalidArgument(f"`action` must be < {scores.shape[1]} (the number of scores), received {a}")
    return a


def insertion_curve(
    score: Score | Agent,
    obs: ArrayLike,
    saliency: ArrayLike,
    *,
    action: int | None = None,
    substrate: str = "black",
    measure: str = "q",
    step: int = STEP,
    segments: ArrayLike | None = None,
    seed: int = 0,
    bounds: tuple[float, float] | None = None,
    batch_size: int = _BATCH,
    layout: str | None = None,
) -> InsertionCurve:
    """The insertion curve of one saliency map (Section 3.3.2).

    The curve starts from the fully perturbed observation I_0 and uncovers ``step`` pixels per step in
    :func:`insertion_order`, every channel of a pixel at once (the stacked frames), until the observation
    I_K = I itself: K = ceil(H W / step) steps and K + 1 points. All points are scored in batches of
    ``batch_size`` observations.

    Substrates: ``"black"`` is 0 (not the observation's minimum, as in Quantus); ``"random"`` is uniform noise
    drawn once per curve, per pixel and channel: U{0, ..., 255} for uint8 observations (the paper's U[0, 1] on
    inputs scaled to [0, 1]), U[0, 1) for float observations, or U over ``bounds`` when given.

    Measures, with ``a`` the action and ``t = q(I, a)`` the state's own score: ``"q"`` is ``q(I_k, a) / t``
    (every curve ends at 1; all NaN when t = 0; a negative t flips the curve), ``"advantage"`` is
    ``q(I_k, a) - mean_a' q(I_k, a')``, unnormalized (eq. 7).

    Args:
        score: ``score(batch) -> (N, A)`` action scores for a batch of observations (given in ``obs``'s dtype),
            or an :class:`Agent`, scored by :func:`scorer`.
        obs: one observation: (H, W), channel-first (C, H, W) or channel-last (H, W, C); or a vector (n,).
        saliency: its map, shape (H, W), or (n,) for a vector (one feature per "pixel": pass ``step=1``);
            larger means more relevant.
        action: the action the map explains (default: the highest-scoring action on ``obs``).
        substrate: "black" or "random".
        measure: "q" or "advantage".
        step: pixels uncovered per step (the paper's 84).
        segments: superpixel labels of shape (H, W) for maps that are constant per superpixel (LIME).
        seed: seeds the pixel order within superpixels and the random substrate (separate streams).
        bounds: (low, high) of the random substrate.
        batch_size: observations per call of ``score``.
        layout: "hw", "chw" or "hwc", when the shapes alone cannot tell.
    """
    _check.choice("substrate", substrate, SUBSTRATES)
    _check.choice("measure", measure, MEASURES)
    x = np.asarray(obs)
    fractions, scores = _insertion_scores(
        _scoring(score),
        x,
        saliency,
        [substrate],
        step=step,
        segments=segments,
        seed=seed,
        bounds=bounds,
        batch_size=batch_size,
        layout=layout,
    )
    a = _action(scores[substrate], action)
    values = _measure(scores[substrate], a, measure)
    return InsertionCurve(fractions, values, scores[substrate], a, substrate, measure)


def insertion(
    score: Score | Agent,
    obs: ArrayLike,
    saliency: ArrayLike,
    *,
    action: int | None = None,
    step: int = STEP,
    segments: ArrayLike | None = None,
    seed: int = 0,
    bounds: tuple[float, float] | None = None,
    batch_size: int = _BATCH,
    layout: str | None = None,
) -> dict[str, float]:
    """The paper's four insertion AUCs of one map (Section 3.3.2.3): {q, advantage} x {black, random}.

    Arguments as :func:`insertion_curve`; both measures share each substrate's forward passes.

    Returns:
        ``{"action": a, "q_black": ..., "q_random": ..., "advantage_black": ..., "advantage_random": ...}``.
    """
    x = np.asarray(obs)
    fractions, scores = _insertion_scores(
        _scoring(score),
        x,
        saliency,
        SUBSTRATES,
        step=step,
        segments=segments,
        seed=seed,
        bounds=bounds,
        batch_size=batch_size,
        layout=layout,
    )
    a = _action(scores["black"], action)
    out: dict[str, float] = {"action": a}
    for column in INSERTION_COLUMNS:
        measure, _, substrate = column.partition("_")
        out[column] = auc(_measure(scores[substrate], a, measure), fractions)
    return out


def insertion_table(
    score: Score | Agent,
    states: ArrayLike,
    maps: ArrayLike,
    *,
    actions: ArrayLike | None = None,
    step: int = STEP,
    segments: Sequence[ArrayLike] | None = None,
    seed: int = 0,
    bounds: tuple[float, float] | None = None,
    batch_size: int = _BATCH,
    layout: str | None = None,
) -> pd.DataFrame:
    """:func:`insertion` for many states: one row per state, ``state`` (its index), ``action`` and the four AUCs.

    State i uses ``seed + i``, ``actions[i]`` (default: each state's highest-scoring action) and
    ``segments[i]`` when given.
    """
    pd = require("pandas", purpose="insertion tables")
    xs, ms = np.asarray(states), np.asarray(maps)
    if len(xs) != len(ms):
        raise InvalidArgument(f"`states` and `maps` must have one entry each, received {len(xs)} and {len(ms)}")
    acts = None if actions is None else np.asarray(actions).ravel()
    for name, given in (("actions", acts), ("segments", segments)):
        if given is not None and len(given) != len(xs):
            raise InvalidArgument(f"`{name}` must have one entry per state ({len(xs)}), received {len(given)}")
    fn = _scoring(score)
    rows = []
    for i, (x, m) in enumerate(zip(xs, ms, strict=True)):
        row = insertion(
            fn,
            x,
            m,
            action=None if acts is None else int(acts[i]),
            step=step,
            segments=None if segments is None else segments[i],
            seed=seed + i,
            bounds=bounds,
            batch_size=batch_size,
            layout=layout,
        )
        rows.append({"state": i, **row})
    return pd.DataFrame(rows, columns=["state", "action", *INSERTION_COLUMNS])


# -- state selection -------------------------------------------------------------------------------------
def importance(q_values: ArrayLike) -> NDArray[np.float64]:
    """HIGHLIGHTS' state importance (Amir and Amir 2018): ``max_a q(s, a) - min_a q(s, a)`` per state.

    Example:
        >>> importance([[1.0, 3.0, 2.0], [0.5, 0.5, 0.6]]).round(2).tolist()
        [2.0, 0.1]
    """
    q = np.asarray(q_values, dtype=np.float64)
    if q.ndim != 2 or q.shape[1] < 2:
        raise InvalidArgument(f"`q_values` must have shape (states, actions >= 2), received {q.shape}")
    return q.max(axis=1) - q.min(axis=1)


def _features(features: ArrayLike, n: int | None = None) -> NDArray[np.float64]:
    f = np.asarray(features, dtype=np.float64)
    if f.ndim < 2 or len(f) < 2:
        raise InvalidArgument(f"`features` must hold at least two states, one row each, received shape {f.shape}")
    if n is not None and len(f) != n:
        raise InvalidArgument(f"`features` must have one row per state ({n}), received {len(f)}")
    return f.reshape(len(f), -1)


def _distances(f: NDArray[np.float64]) -> NDArray[np.float64]:
    distance = require("scipy.spatial.distance", purpose="HIGHLIGHTS-DIV")
    return np.asarray(distance.squareform(distance.pdist(f, "euclidean")), dtype=np.float64)


def diversity_threshold(features: ArrayLike, percentile: float) -> float:
    """Footnote 6's n-percentile of the states' pairwise Euclidean distances: n/100 of the way from min to max.

    ``features`` holds one row per state (any trailing shape, flattened).

    This is not the usual percentile of the distribution (``np.percentile``): it depends on the two extremes.

    Example:
        >>> round(diversity_threshold([[0.0], [1.0], [3.0], [10.0]], 30), 12)  # distances 1 ... 10
        3.7
    """
    p = _check.number("percentile", percentile)
    if not 0 <= p <= 100:
        raise InvalidArgument(f"`percentile` must be in [0, 100], received {percentile!r}")
    d = _distances(_features(features))
    pairs = d[np.triu_indices(len(d), 1)]
    low, high = float(pairs.min()), float(pairs.max())
    return low + p / 100.0 * (high - low)


def highlights_div(
    importance: ArrayLike, features: ArrayLike, k: int = 10, threshold: float = 30.0
) -> NDArray[np.int64]:
    """HIGHLIGHTS-DIV (Amir and Amir 2018): important states, each far enough from those already chosen.

    States are visited by decreasing importance (ties in stream order); a state joins the summary when its
    Euclidean distance to every state already in it exceeds the diversity threshold, until ``k`` are chosen.
    The threshold is :func:`diversity_threshold` at the percentile ``threshold`` (footnote 6; 30 did best in
    the paper). A high threshold may leave fewer than ``k`` states. ``features`` are what the distance compares:
    the flattened observations or the network's features (a hidden layer's activations).

    Returns:
        The indices of the chosen states, in the order they were chosen (decreasing importance).

    Example:
        >>> imp = [5.0, 4.9, 1.0, 3.0]
        >>> pts = [[0.0, 0.0], [0.1, 0.0], [10.0, 0.0], [5.0, 5.0]]  # state 1 sits next to state 0
        >>> highlights_div(imp, pts, k=3).tolist()
        [0, 3, 2]
    """
    imp = np.asarray(importance, dtype=np.float64).ravel()
    f = _features(features, len(imp))
    k = _check.integer("k", k, minimum=1)
    limit = diversity_threshold(f, threshold)
    d = _distances(f)
    chosen: list[int] = []
    for i in np.argsort(-imp, kind="stable"):
        if all(d[i, j] > limit for j in chosen):
            chosen.append(int(i))
            if len(chosen) == k:
                break
    return np.asarray(chosen, dtype=np.int64)


def random_subsets(n_states: int, k: int, count: int, seed: int = 0) -> NDArray[np.int64]:
    """``count`` random subsets of ``k`` distinct states out of ``n_states``, each sorted; shape (count, k).

    Drawn from ``np.random.default_rng(seed)``, one subset after the other.

    Example:
        >>> random_subsets(1000, 10, 3, seed=0).shape
        (3, 10)
    """
    n = _check.integer("n_states", n_states, minimum=1)
    k = _check.integer("k", k, minimum=1)
    count = _check.integer("count", count, minimum=1)
    if k > n:
        raise InvalidArgument(f"`k` must be <= {n} (the number of states), received {k}")
    rng = np.random.default_rng(_check.integer("seed", seed, minimum=0))
    return np.stack([np.sort(rng.choice(n, size=k, replace=False)) for _ in range(count)]).astype(np.int64)


# -- parameter search ------------------------------------------------------------------------------------
def _standardize(x: pd.Series) -> pd.Series:
    """``(x - mean) / std`` with the population std (N, as footnote 4); all 0 when the std is 0."""
    std = float(x.std(ddof=0))
    if not np.isfinite(std) or std == 0:
        return x * 0.0
    return (x - x.mean()) / std


def standardized_scores(auc_table: pd.DataFrame, by: str | Sequence[str] = "params") -> pd.DataFrame:
    """Section 3.4.1: one score per parameter set from its insertion AUCs.

    For each parameter set (rows grouped by ``by``, columns or index levels), ``q`` is the mean AUC of
    ``q_black`` and ``q_random`` over its states and ``advantage`` the same for the advantage columns (NaN AUCs
    are skipped). Across parameter sets each is standardized, ``z = (x - mean) / std`` (footnote 5, population
    std; 0 when every set has the same value), and ``score = z_q + z_advantage``. A ``seconds`` column (time
    per map) is averaged alongside.

    Returns:
        A DataFrame indexed by parameter set with ``q``, ``advantage``, ``z_q``, ``z_advantage``, ``score``
        (and ``seconds``), best score first.

    Example:
        >>> import pandas as pd
        >>> t = pd.DataFrame({"params": ["a", "a", "b", "b"], "q_black": [1.0, 1.0, 0.0, 0.0],
        ...                   "q_random": [1.0, 1.0, 0.0, 0.0], "advantage_black": [0.0, 0.0, 2.0, 2.0],
        ...                   "advantage_random": [0.0, 0.0, 2.0, 2.0]})
        >>> standardized_scores(t)["score"].tolist()
        [0.0, 0.0]
    """
    pd = require("pandas", purpose="parameter search")
    if not isinstance(auc_table, pd.DataFrame):
        raise InvalidType(f"`auc_table` must be a pandas DataFrame, received {type(auc_table).__name__}")
    missing = [c for c in INSERTION_COLUMNS if c not in auc_table.columns]
    if missing:
        raise InvalidArgument(f"`auc_table` lacks the AUC columns {missing}")
    keys = [by] if isinstance(by, str) else list(by)
    grouped = auc_table.groupby(keys, sort=False)
    means = grouped[list(INSERTION_COLUMNS)].mean()
    out = pd.DataFrame(index=means.index)
    out["q"] = (means["q_black"] + means["q_random"]) / 2.0
    out["advantage"] = (means["advantage_black"] + means["advantage_random"]) / 2.0
    out["z_q"] = _standardize(out["q"])
    out["z_advantage"] = _standardize(out["advantage"])
    out["score"] = out["z_q"] + out["z_advantage"]
    if "seconds" in auc_table.columns:
        out["seconds"] = grouped["seconds"].mean()
    return out.sort_values("score", ascending=False, kind="stable")


def select(table: pd.DataFrame, time_budget: float, *, time: str = "seconds") -> pd.Series:
    """The best-scoring parameter set whose time per map is within ``time_budget`` (the paper's 3 seconds).

    Args:
        table: a :func:`standardized_scores` table with a time column.
        time_budget: the most seconds one map may take.
        time: the column holding the time per map.

    Returns:
        The chosen row; its ``name`` is the parameter set.
    """
    budget = _check.nonnegative("time_budget", time_budget)
    for column in ("score", time):
        if column not in table.columns:
            raise InvalidArgument(f"`table` must have a {column!r} column, it has {list(table.columns)}")
    fits = table[table[time] <= budget]
    if fits.empty:
        raise InvalidArgument(
            f"no parameter set takes <= {budget} s per map; the fastest takes {float(table[time].min())} s"
        )
    return fits.sort_values("score", ascending=False, kind="stable").iloc[0]
