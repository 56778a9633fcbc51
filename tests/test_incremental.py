"""The incremental forward pass of occlusion: the plain forward's scores, at borders and corners, and its fallback."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import torch
from torch import nn

from rlwrappers.agents import Agent, SB3Agent, TorchAgent, load_sb3
from rlwrappers.error import InvalidArgument, InvalidType
from rlwrappers.explain import incremental as incremental_pass
from rlwrappers.explain import maps

pytestmark = pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel lengths")

SHARED_AGENTS = Path(__file__).resolve().parents[2] / "shared" / "agents"
SHAPE = (3, 20, 20)
TOLERANCE = 1e-4  # relative to the largest score


def with_linear(convs: list[nn.Module], head: list[nn.Module]) -> nn.Sequential:
    """``convs``, then Flatten, a Linear layer sized to their output, and ``head``."""
    torch.manual_seed(0)
    with torch.no_grad():
        features = nn.Sequential(*convs, nn.Flatten())(torch.zeros(1, *SHAPE)).shape[1]
    return nn.Sequential(*convs, nn.Flatten(), nn.Linear(features, 16), *head)


NETS: dict[str, Callable[[], nn.Sequential]] = {
    # zero padding, stride, dilation; an activation after Flatten
    "padded": lambda: with_linear(
        [
            nn.Conv2d(3, 8, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(8, 8, 4, stride=2),
            nn.LeakyReLU(0.1),
            nn.Conv2d(8, 6, 3, dilation=2, padding=2),
            nn.Tanh(),
        ],
        [nn.ReLU(), nn.Linear(16, 3)],
    ),
    # "same" padding, grouped and strided convolutions, nested Sequentials, dropout in evaluation mode
    "same": lambda: with_linear(
        [
            nn.Sequential(nn.Conv2d(3, 6, 4, padding="same"), nn.ELU()),
            nn.Conv2d(6, 6, 3, stride=3, groups=3),
            nn.Dropout(0.5),
            nn.GELU(),
        ],
        [nn.Sigmoid(), nn.Linear(16, 4)],
    ),
    # Flatten and Linear on the frame itself
    "linear": lambda: with_linear([], [nn.Tanh(), nn.Linear(16, 2)]),
}


def torch_agent(net: nn.Module) -> TorchAgent:
    net.eval()
    space = gym.spaces.Box(0.0, 1.0, SHAPE, np.float32)
    return TorchAgent(net, space, gym.spaces.Discrete(int(net(torch.zeros(1, *SHAPE)).shape[1])), head="q_values")


def frame(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).random(SHAPE, dtype=np.float32)


def windows(size: tuple[int, int], window: tuple[int, int]) -> np.ndarray:
    """Corners of ``window``-sized windows in a ``size`` frame: the four corners, the border midpoints, inside."""
    (height, width), (h, w) = size, window
    rows, cols = [0, (height - h) // 2, height - h], [0, (width - w) // 3, width - w]
    return np.array([(r, c) for r in rows for c in cols], dtype=np.int64)


def assert_scores_match(agent: Agent, obs: np.ndarray, window: tuple[int, int], fill: float, layout: str) -> None:
    """The incremental scores of windows set to ``fill`` equal the plain forward pass on those observations."""
    chain, why = incremental_pass.decompose(agent, layout)
    assert chain is not None, why
    size = obs.shape[1:] if layout == "chw" else obs.shape[:2]
    corners = windows(size, window)
    perturbed = np.repeat(obs[None].astype(np.float32), len(corners), axis=0)
    values = []
    for b, (r, c) in enumerate(corners):
        spatial = (slice(r, r + window[0]), slice(c, c + window[1]))
        region: tuple[Any, ...] = (b, *spatial) if layout == "hwc" else (b, slice(None), *spatial)
        perturbed[region] = fill
        values.append(perturbed[region])
    expected = maps.action_scores(agent, perturbed)
    got = chain.run(obs.astype(np.float32)).scores(corners, np.stack(values))
    assert got.shape == expected.shape
    assert np.abs(got - expected).max() < TOLERANCE * max(1.0, np.abs(expected).max())


def assert_maps_match(agent: Agent, obs: np.ndarray, **params: Any) -> None:
    fast = maps.occlusion(agent, obs, incremental=True, **params)
    plain = maps.occlusion(agent, obs, incremental=False, **params)
    assert fast.action == plain.action and np.array_equal(fast.scores, plain.scores)
    assert np.abs(fast.values - plain.values).max() < TOLERANCE * max(1.0, np.abs(plain.scores).max())
    assert np.ptp(plain.values) > 0  # the patches moved the score: the maps compared are not flat


# -- hand-built networks -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(NETS))
@pytest.mark.parametrize("window", [(1, 1), (3, 3), (4, 7), (20, 5)])
def test_windows_at_borders_and_corners(name: str, window: tuple[int, int]) -> None:
    agent = torch_agent(NETS[name]())
    assert_scores_match(agent, frame(), window, fill=0.0, layout="chw")
    assert_scores_match(agent, frame(1), window, fill=0.7, layout="chw")


@pytest.mark.parametrize("name", sorted(NETS))
@pytest.mark.parametrize(("patch", "stride"), [(2, 2), (3, 3), (4, 3), (7, 4), (5, 1)])
def test_occlusion_maps(name: str, patch: int, stride: int) -> None:
    """Patches cut at the right and bottom borders (20 is no multiple of 3 or 7) and stride != patch."""
    assert_maps_match(torch_agent(NETS[name]()), frame(), patch=patch, stride=stride, color=0.5)


def test_batches_of_any_size() -> None:
    agent = torch_agent(NETS["padded"]())
    whole = maps.occlusion(agent, frame(), patch=3, incremental=True)
    for batch_size in (1, 7, 50):
        part = maps.occlusion(agent, frame(), patch=3, incremental=True, batch_size=batch_size)
        np.testing.assert_allclose(part.values, whole.values, rtol=1e-5, atol=1e-6)


def test_same_observation_same_map_bit_for_bit() -> None:
    agent = torch_agent(NETS["padded"]())
    first = maps.occlusion(agent, frame(), patch=3, stride=2, incremental=True)
    again = maps.occlusion(agent, frame(), patch=3, stride=2, incremental=True)
    assert np.array_equal(first.values, again.values) and first.params == again.params


# -- the fallback ------------------------------------------------------------------------------------------
class Residual(nn.Module):
    """x + conv(x): the changed window does not simply flow through a chain."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(1)
        self.conv = nn.Conv2d(3, 3, 3, padding=1)
        self.head = nn.Linear(3 * 20 * 20, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head((x + self.conv(x)).flatten(1))


def hooked() -> nn.Sequential:
    net = NETS["padded"]()
    net[0].register_forward_hook(lambda module, args, out: out * 2.0)  # the incremental pass convolves itself
    return net


UNFIT: dict[str, tuple[Callable[[], nn.Module], str]] = {
    "max-pool": (lambda: with_linear([nn.Conv2d(3, 4, 3), nn.MaxPool2d(2), nn.ReLU()], []), "MaxPool2d"),
    "residual": (Residual, "not a torch.nn.Sequential"),
    "batch-norm": (lambda: with_linear([nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)], []), "BatchNorm2d"),
    "reflect": (lambda: with_linear([nn.Conv2d(3, 4, 3, padding=1, padding_mode="reflect")], []), "reflect"),
}


@pytest.mark.parametrize("name", sorted(UNFIT))
def test_networks_it_cannot_split_fall_back(name: str) -> None:
    make, reason = UNFIT[name]
    agent, obs = torch_agent(make()), frame()
    chain, why = incremental_pass.decompose(agent, "chw")
    assert chain is None and reason in why
    with pytest.raises(InvalidArgument, match=re.escape(reason)):
        maps.occlusion(agent, obs, patch=4, incremental=True)
    auto = maps.occlusion(agent, obs, patch=4)
    assert np.array_equal(auto.values, maps.occlusion(agent, obs, patch=4, incremental=False).values)
    # and the map is the right one: the drop of the score when the patch at (8, 12) is black
    occluded = obs.copy()
    occluded[:, 8:12, 12:16] = 0.0
    drop = auto.scores[auto.action] - maps.action_scores(agent, occluded[None])[0, auto.action]
    assert auto.values[9, 13] == pytest.approx(drop, rel=1e-5, abs=1e-6)


def test_a_hook_that_changes_the_scores_falls_back() -> None:
    agent, obs = torch_agent(hooked()), frame()
    assert incremental_pass.decompose(agent, "chw")[0] is not None  # the layers split, but the hook is not theirs
    with pytest.raises(InvalidArgument, match="a hook or an override"):
        maps.occlusion(agent, obs, patch=4, incremental=True)
    auto = maps.occlusion(agent, obs, patch=4)
    assert np.array_equal(auto.values, maps.occlusion(agent, obs, patch=4, incremental=False).values)
    occluded = obs.copy()
    occluded[:, 8:12, 12:16] = 0.0
    drop = auto.scores[auto.action] - maps.action_scores(agent, occluded[None])[0, auto.action]
    assert auto.values[9, 13] == pytest.approx(drop, rel=1e-5, abs=1e-6)


def test_what_else_falls_back() -> None:
    vector = TorchAgent(
        nn.Sequential(nn.Linear(4, 2)), gym.spaces.Box(0.0, 1.0, (4,)), gym.spaces.Discrete(2), head="q_values"
    )
    assert incremental_pass.decompose(vector, None) == (None, "the observation is a vector, not a frame")
    with pytest.raises(InvalidArgument, match="a vector, not a frame"):
        maps.occlusion(vector, np.ones(4, np.float32), incremental=True)
    own_forward = TorchAgent(
        NETS["padded"](),
        torch_agent(NETS["padded"]()).observation_space,
        gym.spaces.Discrete(3),
        head="q_values",
        forward=lambda m, x: m(x),
    )
    assert "own `forward`" in incremental_pass.decompose(own_forward, "chw")[1]
    assert "'hwc'" in incremental_pass.decompose(torch_agent(NETS["padded"]()), "hwc")[1]
    training = torch_agent(NETS["same"]())
    training.module.train()  # its Dropout draws at random
    assert "layer 3 (Dropout) is in training mode" in incremental_pass.decompose(training, "chw")[1]
    with pytest.raises(InvalidType, match="`incremental` must be a bool"):
        maps.occlusion(torch_agent(NETS["padded"]()), frame(), incremental="yes")  # type: ignore[arg-type]


def test_windows_must_lie_inside_the_frame() -> None:
    agent = torch_agent(NETS["padded"]())
    chain, _ = incremental_pass.decompose(agent, "chw")
    assert chain is not None
    run = chain.run(frame())
    with pytest.raises(InvalidArgument, match="must lie inside"):
        run.scores(np.array([[18, 0]]), np.zeros((1, 3, 3, 3), np.float32))


# -- Stable-Baselines3 agents ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def breakout() -> tuple[gym.Env, np.ndarray]:
    ale_py = pytest.importorskip("ale_py")
    pytest.importorskip("stable_baselines3")
    from rlwrappers.wrappers import atari

    gym.register_envs(ale_py)
    env = atari.atari_wrapper(gym.make("BreakoutNoFrameskip-v4"))
    obs, _ = env.reset(seed=0)
    for t in range(30):
        obs, *_ = env.step(1 if t < 2 else t % 4)
    return env, np.asarray(obs)


@pytest.fixture(scope="module")
def dqn(breakout: tuple[gym.Env, np.ndarray]) -> Agent:

    path = SHARED_AGENTS / "dqn-BreakoutNoFrameskip-v4-seed0.zip"
    if not path.exists():
        pytest.skip(f"{path} is not here (the trained Atari agents live in shared/agents beside the repository)")
    return load_sb3(path, observation_space=breakout[0].observation_space)


@pytest.mark.parametrize("window", [(4, 4), (5, 3), (84, 2)])
def test_real_dqn_scores(dqn: Agent, breakout: tuple[gym.Env, np.ndarray], window: tuple[int, int]) -> None:
    """uint8 frames divided by 255 inside the policy: the fill is in frame units, as the plain path takes it."""
    assert_scores_match(dqn, breakout[1], window, fill=0.0, layout="chw")
    assert_scores_match(dqn, breakout[1], window, fill=200.0, layout="chw")


def test_real_dqn_map(dqn: Agent, breakout: tuple[gym.Env, np.ndarray]) -> None:
    """Patches of 5 in steps of 3: overlapping, and cut at the right and bottom borders (84 = 27 * 3 + 3)."""
    assert_maps_match(dqn, breakout[1], patch=5, stride=3)
    assert_maps_match(dqn, breakout[1], patch=4, color="gray", softmax=True)


def test_channel_last_frames(dqn: Agent, breakout: tuple[gym.Env, np.ndarray]) -> None:
    """SB3's policy reads channel-first frames; the agent transposes channel-last ones, and so does the chain."""
    assert isinstance(dqn, SB3Agent)
    space = gym.spaces.Box(0, 255, (84, 84, 4), np.uint8)
    agent = SB3Agent(dqn.policy, observation_space=space)
    obs = np.moveaxis(breakout[1], 0, -1)
    assert "layout" in incremental_pass.decompose(agent, "chw")[1]
    assert_scores_match(agent, obs, (6, 4), fill=0.0, layout="hwc")
    assert_maps_match(agent, obs, patch=6)


def test_fresh_actor_critic_policy(breakout: tuple[gym.Env, np.ndarray]) -> None:
    """An actor-critic's action logits: NatureCNN, then the actor's MLP and the action head."""
    from stable_baselines3 import A2C

    env, obs = breakout
    model = A2C("CnnPolicy", env, policy_kwargs={"net_arch": {"pi": [32], "vf": [8]}}, seed=0, device="cpu")
    agent = SB3Agent(model)
    assert_scores_match(agent, obs, (7, 7), fill=0.0, layout="chw")
    assert_maps_match(agent, obs, patch=7)
    separate = A2C("CnnPolicy", env, policy_kwargs={"share_features_extractor": False}, seed=1, device="cpu")
    assert_scores_match(SB3Agent(separate), obs, (3, 9), fill=255.0, layout="chw")


# -- black discs of Noise Sensitivity and SARFA ----------------------------------------------------------------
def assert_disc_maps_match(method: str, agent: Agent, obs: np.ndarray, **params: Any) -> None:
    explain = getattr(maps, method)
    fast = explain(agent, obs, variant="black", incremental=True, **params)
    plain = explain(agent, obs, variant="black", incremental=False, **params)
    assert fast.action == plain.action
    np.testing.assert_allclose(fast.values, plain.values, rtol=1e-4, atol=1e-6 * max(1.0, np.abs(plain.values).max()))


@pytest.mark.parametrize("name", sorted(NETS))
@pytest.mark.parametrize("radius", [1, 3, 8])
def test_black_discs_score_incrementally(name: str, radius: int) -> None:
    """Discs cut by the borders (centres on the edge rows and columns) and discs wider than a stride."""
    agent = torch_agent(NETS[name]())
    assert_disc_maps_match("noise_sensitivity", agent, frame(), radius=radius)
    assert_disc_maps_match("noise_sensitivity", agent, frame(1), radius=radius, chosen_action=True)
    assert_disc_maps_match("sarfa", agent, frame(), radius=radius)


def test_black_discs_on_the_real_dqn(dqn: Agent, breakout: tuple[gym.Env, np.ndarray]) -> None:
    assert_disc_maps_match("sarfa", dqn, breakout[1], radius=2)
    assert_disc_maps_match("noise_sensitivity", dqn, breakout[1], radius=5)


def test_only_black_discs_on_images_can_be_incremental() -> None:
    agent = torch_agent(NETS["padded"]())
    with pytest.raises(InvalidArgument, match="black discs on an image"):
        maps.noise_sensitivity(agent, frame(), variant="blur", incremental=True)
    with pytest.raises(InvalidType, match="`incremental` must be a bool"):
        maps.sarfa(agent, frame(), incremental="yes")  # type: ignore[arg-type]
    blurred = maps.noise_sensitivity(agent, frame(), radius=4)  # the plain pass, chosen by itself
    assert blurred.values.shape == frame().shape[1:]
