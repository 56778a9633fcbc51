"""Saliency maps (seed 003): known relevant pixels ranked first, the equations by hand, seeds, batching, errors."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch

from rlwrappers.agents import CallableAgent, TorchAgent, load_sb3
from rlwrappers.error import (
    IncompatibleSpace,
    InvalidArgument,
    InvalidProbability,
    InvalidType,
    NotDifferentiable,
    UnknownName,
)
from rlwrappers.explain import maps
from rlwrappers.explain.insertion import insertion_order

SHARED_AGENTS = Path(__file__).resolve().parents[2] / "shared" / "agents"
SIDE = 16
ROWS, COLS = slice(5, 8), slice(9, 12)  # the 3 x 3 block the block agents look at
IN_BLOCK = np.zeros((SIDE, SIDE), bool)
IN_BLOCK[ROWS, COLS] = True
FEATURES = (2, 5)  # the features the vector agent looks at


class BlockNet(torch.nn.Module):
    """q_0 = a weighted mean of a 3 x 3 block of pixels (all channels, in [0, 1] units); q_1, q_2 constant.

    Counts its forward passes and the batch sizes it sees.
    """

    weight: torch.Tensor

    def __init__(self, layout: str, channels: int = 4) -> None:
        super().__init__()
        shape = {"chw": (channels, SIDE, SIDE), "hwc": (SIDE, SIDE, channels), "hw": (SIDE, SIDE)}[layout]
        weight = torch.zeros(shape)
        block = (slice(None), ROWS, COLS) if layout == "chw" else (ROWS, COLS)
        weight[block] = torch.linspace(1.0, 2.0, weight[block].numel()).reshape(weight[block].shape)
        self.register_buffer("weight", weight / weight.sum())
        self.calls = 0
        self.batch_sizes: list[int] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        self.batch_sizes.append(len(x))
        q0 = 2.0 * (x * self.weight).flatten(1).sum(1) / 255.0
        return torch.stack([q0, torch.zeros_like(q0), torch.full_like(q0, 0.5)], dim=1)


class VectorNet(torch.nn.Module):
    """q_0 = 0.3 x_2 + 0.2 x_5; q_1, q_2 constant."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        q0 = 0.3 * x[:, FEATURES[0]] + 0.2 * x[:, FEATURES[1]]
        return torch.stack([q0, torch.zeros_like(q0), torch.full_like(q0, 0.5)], dim=1)


def block_agent(layout: str = "chw", channels: int = 4) -> TorchAgent:
    net = BlockNet(layout, channels)
    space = gym.spaces.Box(0, 255, tuple(net.weight.shape), np.uint8)
    return TorchAgent(net, space, gym.spaces.Discrete(3), head="q_values")


def block_obs(layout: str = "chw", channels: int = 4, seed: int = 0) -> np.ndarray:
    """A dark noisy frame stack with a bright block where the agent looks."""
    shape = {"chw": (channels, SIDE, SIDE), "hwc": (SIDE, SIDE, channels), "hw": (SIDE, SIDE)}[layout]
    obs = np.random.default_rng(seed).integers(0, 60, shape).astype(np.uint8)
    obs[(slice(None), ROWS, COLS) if layout == "chw" else (ROWS, COLS)] = 200
    return obs


def vector_agent() -> TorchAgent:
    space = gym.spaces.Box(-np.inf, np.inf, (8,), np.float32)
    return TorchAgent(VectorNet(), space, gym.spaces.Discrete(3), head="q_values")


def vector_obs() -> np.ndarray:
    obs = np.ones(8, np.float32)
    obs[list(FEATURES)] = 10.0
    return obs


def calls(agent: TorchAgent) -> int:
    return int(agent.module.calls)


# Parameters under which each method ranks the block first on a 16 x 16 frame: its k most relevant pixels lie in
# the block (k = 9, the whole block, unless the method is too noisy or too coarse for that).
IMAGE_CASES = [
    ("occlusion", {"patch": 1}, 9),
    ("occlusion", {"patch": 3, "stride": 1}, 9),
    ("occlusion", {"patch": 1, "color": "gray", "softmax": True}, 9),
    ("noise_sensitivity", {"radius": 1}, 9),
    ("noise_sensitivity", {"radius": 2}, 9),
    ("noise_sensitivity", {"radius": 1, "variant": "black"}, 9),
    ("noise_sensitivity", {"radius": 1, "chosen_action": True}, 9),
    ("rise", {"masks": 1000, "size": 8}, 9),
    ("rise", {"masks": 1000, "size": 8, "p": 0.3, "softmax": True}, 1),
    ("lime", {"segmentation": "slic", "samples": 300}, 9),
    ("lime", {"segmentation": "felzenszwalb", "samples": 300}, 9),
    ("sarfa", {"radius": 1}, 9),
    ("sarfa", {"radius": 2}, 6),  # a grid step of 2 blurs the block's corners into its neighbours
    ("sarfa", {"radius": 1, "variant": "blur"}, 9),
]


def top(values: np.ndarray, k: int) -> np.ndarray:
    return np.argsort(-values.ravel(), kind="stable")[:k]


@pytest.mark.parametrize(("method", "params", "k"), IMAGE_CASES, ids=[f"{m}-{p}" for m, p, _ in IMAGE_CASES])
def test_block_pixels_rank_first(method: str, params: dict[str, Any], k: int) -> None:
    if method == "lime":
        pytest.importorskip("skimage")
    agent = block_agent()
    result = maps.saliency_map(agent, block_obs(), method, **params)
    assert result.shape == (SIDE, SIDE) and result.method == method and result.layout == "chw"
    assert np.all(np.isfinite(result.values))
    assert result.action == 0  # the greedy action: q_0 is about 1.6 > 0.5 > 0
    assert IN_BLOCK.ravel()[top(result.values, k)].all(), np.round(result.values, 3)


@pytest.mark.parametrize("layout", ["hwc", "hw"])
@pytest.mark.parametrize("method", sorted(maps.METHODS))
def test_every_layout(layout: str, method: str) -> None:
    if method == "lime":
        pytest.importorskip("skimage")
    cases: dict[str, dict[str, Any]] = {
        "occlusion": {"patch": 1},
        "noise_sensitivity": {"radius": 1},
        "rise": {"masks": 1000},
        "lime": {"segmentation": "felzenszwalb", "samples": 300},
        "sarfa": {"radius": 1},
    }
    params = cases[method]
    result = maps.saliency_map(block_agent(layout), block_obs(layout), method, **params)
    assert result.shape == (SIDE, SIDE) and result.layout == layout
    assert result.broadcast().shape == result.observation_shape == block_obs(layout).shape
    assert IN_BLOCK.ravel()[top(result.values, 6 if method == "rise" else 9)].all()


def test_lime_quickshift_ranks_the_block_segments_first() -> None:
    pytest.importorskip("skimage")
    result = maps.lime(block_agent(), block_obs(), samples=300)
    assert result.segments is not None and result.segments.shape == (SIDE, SIDE)
    assert result.params["segmentation"] == "quickshift" and result.params["max_dist"] == 2
    touching = np.isin(result.segments, np.unique(result.segments[IN_BLOCK]))
    assert result.values[IN_BLOCK].min() > result.values[~touching].max()
    # Each pixel carries its superpixel's weight, and the insertion order puts whole superpixels first.
    for label in np.unique(result.segments):
        assert np.ptp(result.values[result.segments == label]) == 0.0
    order = insertion_order(result.values, result.segments, seed=0)
    assert sorted(order.tolist()) == list(range(SIDE * SIDE))
    assert touching.ravel()[order[: touching.sum()]].all()


@pytest.mark.parametrize("method", sorted(maps.METHODS))
def test_vector_features_rank_first(method: str) -> None:
    variants = [{}, {"variant": "black"}] if method in ("noise_sensitivity", "sarfa") else [{}]
    for params in variants:
        result = maps.saliency_map(vector_agent(), vector_obs(), method, **params)
        assert result.shape == (8,) and result.layout is None
        assert set(top(result.values, 2).tolist()) == set(FEATURES), (params, result.values)
    if method == "lime":
        assert result.segments is not None and result.segments.tolist() == list(range(8))


def test_occlusion_is_the_drop_of_the_score() -> None:
    """Equation 1 as q(I) - q(I'): on a linear agent, exactly the occluded pixels' contribution."""
    agent = block_agent()
    obs = block_obs()
    result = maps.occlusion(agent, obs, patch=1)
    weight = agent.module.weight.numpy()
    expected = 2.0 * (weight * obs).sum(axis=0) / 255.0
    np.testing.assert_allclose(result.values, expected, atol=1e-5)
    # Overlapping patches average: with stride 1 and patch 2, an inner pixel is covered by 4 patches.
    overlapping = maps.occlusion(agent, obs, patch=2, stride=1)
    assert overlapping.params == {"patch": 2, "stride": 1, "color": 0.0, "softmax": False}
    covering = [expected[r : r + 2, c : c + 2].sum() for r in (5, 6) for c in (9, 10)]  # patches over (6, 10)
    np.testing.assert_allclose(overlapping.values[6, 10], np.mean(covering), atol=1e-5)
    # Patches are cut at the border: on a vector, windows of 3 features with stride 2 start at 0, 2, 4, 6.
    windows = maps.occlusion(vector_agent(), vector_obs(), patch=3, stride=2)
    drops = {start: 0.3 * 10 * (start <= 2 < start + 3) + 0.2 * 10 * (start <= 5 < start + 3) for start in (0, 2, 4, 6)}
    covering_last = [drops[4], drops[6]]  # feature 6 lies in the windows starting at 4 and 6 (cut: 6..7)
    np.testing.assert_allclose(windows.values[6], np.mean(covering_last), atol=1e-5)
    np.testing.assert_allclose(windows.values[7], drops[6], atol=1e-5)


def test_noise_sensitivity_equals_greydanus_reference() -> None:
    """Equation 2 against SciPy's Gaussian filters, built the way Greydanus et al. build the mask."""
    ndimage = pytest.importorskip("scipy.ndimage")
    agent, obs, r = block_agent(), block_obs(), 2
    result = maps.noise_sensitivity(agent, obs, radius=r)
    x = obs.astype(np.float64)
    blurred = np.stack([ndimage.gaussian_filter(frame, sigma=3) for frame in x])
    weight = agent.module.weight.numpy().astype(np.float64)
    for cy, cx in [(0, 0), (6, 10), (14, 2)]:
        yy, xx = np.ogrid[-cy : SIDE - cy, -cx : SIDE - cx]
        mask = ndimage.gaussian_filter((yy * yy + xx * xx <= 1).astype(float), sigma=r)
        mask /= mask.max()
        perturbed = x * (1 - mask) + blurred * mask
        dq = 2.0 * (weight * (x - perturbed)).sum() / 255.0
        np.testing.assert_allclose(result.values[cy, cx], 0.5 * dq**2, rtol=1e-4, atol=1e-9)
    # Between centres the map interpolates linearly: (1, 0) is halfway between (0, 0) and (2, 0).
    np.testing.assert_allclose(result.values[1, 0], result.values[[0, 2], 0].mean(), rtol=1e-12)


def test_rise_is_equation_3() -> None:
    agent, obs = block_agent(), block_obs()
    result = maps.rise(agent, obs, masks=64, size=4, p=0.3, seed=5)
    masks = maps.rise_masks((SIDE, SIDE), masks=64, cells=4, p=0.3, seed=5)
    with torch.no_grad():
        q = agent.module(torch.as_tensor(obs[None] * masks[:, None], dtype=torch.float32))[:, 0].double().numpy()
    expected = np.einsum("n,nhw->hw", q, masks.astype(np.float64)) / (0.3 * 64)
    np.testing.assert_allclose(result.values, expected, rtol=1e-5)


def test_rise_masks_follow_the_reference_upsampling() -> None:
    """Cells drawn first, then offsets; linear upsampling to (cells + 1) * cell, cropped at the offset."""
    transform = pytest.importorskip("skimage.transform")
    shape, n, cells, p = (84, 84), 5, 8, 0.5
    masks = maps.rise_masks(shape, masks=n, cells=cells, p=p, seed=3)
    rng = np.random.default_rng(3)
    grid = (rng.random((n, cells, cells)) < p).astype(float)
    cell = math.ceil(84 / cells)
    shifts = np.stack([rng.integers(0, cell, size=n), rng.integers(0, cell, size=n)], axis=1)
    for i in range(n):
        up = transform.resize(grid[i], ((cells + 1) * cell,) * 2, order=1, mode="reflect", anti_aliasing=False)
        ref = up[shifts[i, 0] : shifts[i, 0] + 84, shifts[i, 1] : shifts[i, 1] + 84]
        np.testing.assert_allclose(masks[i], ref, atol=1e-6)


def test_sarfa_is_equations_4_to_6() -> None:
    original = np.array([2.0, 1.0, 0.0, -1.0])
    perturbed = np.array([[1.0, 1.5, 0.0, -1.0], [3.0, 1.0, 0.0, -1.0], [2.0, 1.0, 0.0, -1.0]])
    got = maps._sarfa_relevance(original, perturbed, 0)
    p = np.exp(original) / np.exp(original).sum()
    q = np.exp(perturbed[0]) / np.exp(perturbed[0]).sum()
    dp = p[0] - q[0]
    p_rem, q_rem = np.exp(original[1:]) / np.exp(original[1:]).sum(), np.exp(perturbed[0, 1:])
    q_rem = q_rem / q_rem.sum()
    k = 1 / (1 + np.sum(p_rem * np.log(p_rem / q_rem)))
    assert got[0] == pytest.approx(2 * k * dp / (k + dp), rel=1e-12)
    assert got[1] == 0.0 and got[2] == 0.0  # the action became likelier, or nothing changed: relevance 0


def test_same_seed_same_map_bit_for_bit() -> None:
    pytest.importorskip("skimage")
    agent, obs = block_agent(), block_obs()
    for method, params in [("rise", {"masks": 200}), ("lime", {"samples": 200})]:
        first = maps.saliency_map(agent, obs, method, seed=7, **params)
        again = maps.saliency_map(agent, obs, method, seed=7, **params)
        other = maps.saliency_map(agent, obs, method, seed=8, **params)
        assert np.array_equal(first.values, again.values) and first.params == again.params
        assert not np.array_equal(first.values, other.values)
    for method in ("occlusion", "noise_sensitivity", "sarfa"):
        assert np.array_equal(
            maps.saliency_map(agent, obs, method).values, maps.saliency_map(agent, obs, method).values
        )


@pytest.mark.parametrize(
    ("method", "params", "perturbations"),
    [
        ("occlusion", {"patch": 1}, SIDE * SIDE),
        ("noise_sensitivity", {"radius": 1}, SIDE * SIDE),
        ("rise", {"masks": 300}, 300),
        ("lime", {"segmentation": "felzenszwalb", "samples": 300}, 300),
        ("sarfa", {"radius": 1}, SIDE * SIDE),
    ],
)
def test_perturbations_are_batched(method: str, params: dict[str, Any], perturbations: int) -> None:
    if method == "lime":
        pytest.importorskip("skimage")
    agent, obs = block_agent(), block_obs()
    result = maps.saliency_map(agent, obs, method, batch_size=128, **params)
    net: BlockNet = agent.module
    assert net.calls == 1 + math.ceil(perturbations / 128) <= 4  # the original, then full batches
    assert net.batch_sizes[0] == 1 and max(net.batch_sizes[1:]) == 128 and sum(net.batch_sizes) == 1 + perturbations
    small = maps.saliency_map(agent, obs, method, batch_size=50, **params)  # batching leaves the map alone
    np.testing.assert_allclose(small.values, result.values, rtol=1e-5, atol=1e-7)


def test_analysed_action() -> None:
    agent, obs = block_agent(), block_obs()
    greedy = maps.occlusion(agent, obs, patch=1)
    assert greedy.action == 0 and greedy.scores.shape == (3,) and greedy.scores.argmax() == 0
    constant = maps.occlusion(agent, obs, patch=1, action=2)  # q_2 never changes
    assert constant.action == 2 and np.all(constant.values == 0.0)
    chosen = maps.noise_sensitivity(agent, obs, radius=2, chosen_action=True, action=1)
    assert np.all(chosen.values == 0.0)
    # SARFA on the constant action: its probability only rises when q_0 falls, so every relevance is 0.
    assert np.all(maps.sarfa(agent, obs, radius=2, action=2).values == 0.0)


def test_logits_stand_in_for_q_values() -> None:
    """An actor-critic agent's logits are its scores; a value-based agent's q-values are."""
    net = BlockNet("chw")
    space = gym.spaces.Box(0, 255, (4, SIDE, SIDE), np.uint8)
    policy = TorchAgent(net, space, gym.spaces.Discrete(3), head="logits")
    q_agent = block_agent()
    obs = block_obs()
    for method in ("occlusion", "rise", "sarfa"):
        a = maps.saliency_map(policy, obs, method)
        b = maps.saliency_map(q_agent, obs, method)
        assert np.array_equal(a.values, b.values) and np.array_equal(a.scores, b.scores)
    np.testing.assert_allclose(maps.advantages(a.scores), a.scores - a.scores.mean())
    scores = maps.action_scores(policy, np.stack([obs, obs]), batch_size=1)
    assert scores.shape == (2, 3) and np.array_equal(scores[0], a.scores)


ERRORS = [
    ("occlusion", {"patch": 17}, InvalidArgument, "`patch` must be <= 16"),
    ("occlusion", {"patch": 0}, InvalidArgument, "`patch` must be >= 1"),
    ("occlusion", {"patch": "4"}, InvalidType, "`patch` must be an integer"),
    ("occlusion", {"patch": 2, "stride": 3}, InvalidArgument, "`stride` must be <= `patch`"),
    ("occlusion", {"color": "grey"}, UnknownName, "Did you mean `gray`?"),
    ("occlusion", {"color": float("nan")}, InvalidArgument, "`color` must be finite"),
    ("occlusion", {"softmax": 1}, InvalidType, "`softmax` must be a bool"),
    ("occlusion", {"action": 3}, InvalidArgument, "`action` must be < 3"),
    ("occlusion", {"action": 1.0}, InvalidType, "`action` must be an integer"),
    ("occlusion", {"batch_size": 0}, InvalidArgument, "`batch_size` must be >= 1"),
    ("occlusion", {"layout": "whc"}, UnknownName, "`layout` must be one of"),
    ("noise_sensitivity", {"radius": 16}, InvalidArgument, "`radius` must be < 16"),
    ("noise_sensitivity", {"variant": "blurr"}, UnknownName, "Did you mean `blur`?"),
    ("sarfa", {"radius": 0}, InvalidArgument, "`radius` must be >= 1"),
    ("rise", {"p": 0.0}, InvalidProbability, "`p` must be a probability in (0, 1), received 0.0"),
    ("rise", {"p": 1.5}, InvalidProbability, "`p` must be a probability in (0, 1), received 1.5"),
    ("rise", {"masks": 0}, InvalidArgument, "`masks` must be >= 1"),
    ("rise", {"size": 17}, InvalidArgument, "`size` must be <= 16"),
    ("rise", {"seed": -1}, InvalidArgument, "`seed` must be >= 0"),
    ("lime", {"samples": 0}, InvalidArgument, "`samples` must be >= 1"),
    ("lime", {"segmentation": "slick"}, UnknownName, "Did you mean `slic`?"),
    ("lime", {"segmentation": "features"}, InvalidArgument, "applies to vectors"),
    ("lime", {"segmentation": "slic", "n_segment": 10}, UnknownName, "Did you mean `n_segments`?"),
    ("lime", {"sample": 10}, UnknownName, "Did you mean `samples`?"),
    ("lime", {"kernel_width": 0.0}, InvalidArgument, "`kernel_width` must be > 0"),
    ("lime", {"segment_on": "first"}, UnknownName, "`segment_on` must be one of"),
]


@pytest.mark.parametrize(("method", "params", "error", "message"), ERRORS, ids=[f"{m}-{p}" for m, p, *_ in ERRORS])
def test_bad_arguments_raise_before_any_forward_pass(
    method: str, params: dict[str, Any], error: type[Exception], message: str
) -> None:
    agent = block_agent()
    with pytest.raises(error, match=re.escape(message)):
        maps.saliency_map(agent, block_obs(), method, **params)
    assert calls(agent) == 0


def test_bad_agents_and_observations() -> None:
    obs = block_obs()
    box = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    continuous = TorchAgent(torch.nn.Flatten(), gym.spaces.Box(0, 255, obs.shape, np.uint8), box, head="action")
    with pytest.raises(IncompatibleSpace, match="Discrete action space"):
        maps.occlusion(continuous, obs)
    with pytest.raises(InvalidType, match="must be an rlwrappers Agent"):
        maps.rise(torch.nn.Flatten(), obs)  # type: ignore[arg-type]
    plain = CallableAgent(lambda o: 0, gym.spaces.Box(0, 255, obs.shape, np.uint8), gym.spaces.Discrete(3))
    with pytest.raises(NotDifferentiable):
        maps.occlusion(plain, obs)
    with pytest.raises(InvalidArgument, match=r"shape \(4, 16, 16\)"):
        maps.occlusion(block_agent(), obs[:3])
    with pytest.raises(InvalidType, match="array of numbers"):
        maps.occlusion(block_agent(), np.full(obs.shape, "x"))
    with pytest.raises(IncompatibleSpace, match="segments images"):
        maps.lime(vector_agent(), vector_obs(), segmentation="slic")
    with pytest.raises(InvalidArgument, match="`layout` applies to images only"):
        maps.occlusion(vector_agent(), vector_obs(), layout="hw")
    gray = TorchAgent(
        VectorNet(), gym.spaces.Box(-np.inf, np.inf, (8,), np.float32), gym.spaces.Discrete(3), head="q_values"
    )
    with pytest.raises(InvalidArgument, match="finite bounds"):
        maps.occlusion(gray, vector_obs(), color="gray")
    cube = gym.spaces.Box(0, 1, (2, 2, 2, 2), np.float32)
    with pytest.raises(IncompatibleSpace, match="must be an image"):
        maps.occlusion(
            TorchAgent(torch.nn.Flatten(), cube, gym.spaces.Discrete(16), head="q_values"), np.zeros((2, 2, 2, 2))
        )


def test_explain_by_name() -> None:
    assert set(maps.METHODS) == {"occlusion", "noise_sensitivity", "rise", "lime", "sarfa"}
    with pytest.raises(UnknownName, match=re.escape("Did you mean `sarfa`?")):
        maps.saliency_map(block_agent(), block_obs(), "sarf")
    with pytest.raises(UnknownName, match=re.escape("Did you mean `radius`?")):
        maps.saliency_map(block_agent(), block_obs(), "sarfa", radios=2)
    with pytest.raises(InvalidType, match="`method` must be a name"):
        maps.saliency_map(block_agent(), block_obs(), maps.rise)  # type: ignore[arg-type]


def test_insertion_order_and_broadcast() -> None:
    result = maps.occlusion(block_agent(), block_obs(), patch=1)
    order = insertion_order(result.values)
    assert order.dtype == np.int64 and IN_BLOCK.ravel()[order[:9]].all()
    assert np.all(np.diff(result.values.ravel()[order]) <= 0)
    full = result.broadcast()
    assert full.shape == (4, SIDE, SIDE) and all(np.array_equal(frame, result.values) for frame in full)


# -- real agents -------------------------------------------------------------------------------------------
def shared_agent(name: str) -> Path:
    path = SHARED_AGENTS / name
    if not path.exists():
        pytest.skip(f"{path} is not here (the trained Atari agents live in shared/agents beside the repository)")
    return path


@pytest.fixture(scope="module")
def breakout() -> gym.Env:
    ale_py = pytest.importorskip("ale_py")
    pytest.importorskip("stable_baselines3")
    from rlwrappers.wrappers import atari

    gym.register_envs(ale_py)
    return atari.atari_wrapper(gym.make("BreakoutNoFrameskip-v4"))


@pytest.fixture(scope="module")
def breakout_state(breakout: gym.Env) -> np.ndarray:
    """A stacked observation from a real Breakout game, a few steps after the serve."""
    obs, _ = breakout.reset(seed=0)
    for t in range(30):
        obs, *_ = breakout.step(1 if t < 2 else t % 4)
    return np.asarray(obs)


FAST = {
    "occlusion": {"patch": 4},
    "noise_sensitivity": {"radius": 6},
    "rise": {"masks": 100},
    "lime": {"samples": 100},
    "sarfa": {"radius": 6},
}


@pytest.mark.slow
@pytest.mark.parametrize("algorithm", ["dqn", "ppo"])
def test_real_breakout_agents(algorithm: str, breakout: gym.Env, breakout_state: np.ndarray) -> None:
    pytest.importorskip("skimage")

    path = shared_agent(f"{algorithm}-BreakoutNoFrameskip-v4-seed0.zip")
    agent = load_sb3(path, observation_space=breakout.observation_space)
    assert breakout_state.shape == (4, 84, 84) and breakout_state.dtype == np.uint8
    with torch.no_grad():
        out = agent.outputs(agent.tensor(breakout_state[None]))
    scores = (out.q_values if algorithm == "dqn" else out.logits).double().numpy()[0]  # type: ignore[union-attr]
    for method, params in FAST.items():
        result = maps.saliency_map(agent, breakout_state, method, **params)
        assert result.shape == (84, 84) and result.layout == "chw", method
        assert np.all(np.isfinite(result.values)) and np.ptp(result.values) > 0, method
        assert result.action == int(scores.argmax())
        np.testing.assert_allclose(result.scores, scores, rtol=1e-5)
