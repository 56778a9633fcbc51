"""Saliency-map evaluation: similarities, calibration, cascading randomization, insertion, state selection, search.

Hand computations on tiny hand-built networks, and checks on the trained Breakout DQN from shared/agents.
"""

from __future__ import annotations

import math
from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

from rlwrappers.agents import TorchAgent, load_sb3
from rlwrappers.error import IncompatibleSpace, InvalidArgument, InvalidType, UnknownName
from rlwrappers.explain import insertion, sanity, selection
from rlwrappers.metrics import saliency as sal
from rlwrappers.report import saliency as saliency_report

torch = pytest.importorskip("torch")
skimage_metrics = pytest.importorskip("skimage.metrics")
skimage_feature = pytest.importorskip("skimage.feature")

SHARED_AGENTS = Path(__file__).resolve().parents[2] / "shared" / "agents"
RNG = np.random.default_rng(0)


def shared_agent(name: str) -> Path:
    path = SHARED_AGENTS / name
    if not path.exists():
        pytest.skip(f"{path} is not here (the trained Atari agents live in shared/agents beside the repository)")
    return path


# -- similarities ----------------------------------------------------------------------------------------
def blob(shape: tuple[int, int] = (84, 84), centre: tuple[float, float] = (30.0, 50.0)) -> np.ndarray:
    """A smooth map with one bump, like a saliency map."""
    y, x = np.mgrid[: shape[0], : shape[1]]
    return np.exp(-((y - centre[0]) ** 2 + (x - centre[1]) ** 2) / 60.0)


@pytest.mark.parametrize("make", [lambda: RNG.random((84, 84)), blob, lambda: RNG.standard_normal((20, 30))])
def test_a_map_compared_with_itself_scores_one_on_all_three(make) -> None:
    a = make()
    for sign_invariant in (True, False):
        values = sal.similarities(a, a, sign_invariant=sign_invariant)
        assert list(values) == list(sal.SIMILARITIES)
        assert all(v == pytest.approx(1.0, abs=1e-12) for v in values.values()), values


def test_sign_invariance_takes_the_max_over_b_and_minus_b() -> None:
    a = blob()
    flipped = sal.similarities(a, -a)
    assert all(v == pytest.approx(1.0, abs=1e-12) for v in flipped.values())
    plain = sal.similarities(a, -a, sign_invariant=False)
    assert plain["spearman"] == pytest.approx(-1.0, abs=1e-12)
    assert plain["ssim"] < 0
    # HOG orientations are unsigned: a flip leaves the descriptor as it was.
    assert plain["hog_pearson"] == pytest.approx(1.0, abs=1e-9)
    b = RNG.random((84, 84))
    assert sal.spearman(a, b) == pytest.approx(abs(sal.spearman(a, b, sign_invariant=False)), abs=1e-12)


def test_ssim_runs_on_the_min_max_normalized_2d_maps_with_a_7_window() -> None:
    a, b = blob(), blob(centre=(40.0, 45.0)) + 0.1 * RNG.random((84, 84))
    norm_a, norm_b = (a - a.min()) / np.ptp(a), (b - b.min()) / np.ptp(b)
    expected = skimage_metrics.structural_similarity(norm_a, norm_b, win_size=7, data_range=1.0)
    assert sal.ssim(a, b, sign_invariant=False) == pytest.approx(expected, abs=1e-12)
    # Scaling and shifting a map changes nothing: both are min-max normalized first.
    assert sal.ssim(3.0 * a + 7.0, b, sign_invariant=False) == pytest.approx(expected, abs=1e-9)
    # The reference code's flattened maps give another value.
    flat = skimage_metrics.structural_similarity(norm_a.ravel(), norm_b.ravel(), win_size=7, data_range=1.0)
    assert sal.ssim(a, b, sign_invariant=False, flatten=True) == pytest.approx(flat, abs=1e-12)
    assert abs(flat - expected) > 1e-3


def test_hog_pearson_is_the_correlation_of_3x3_cell_descriptors() -> None:
    a, b = blob(), RNG.random((84, 84))
    ha = skimage_feature.hog((a - a.min()) / np.ptp(a), pixels_per_cell=(3, 3))
    hb = skimage_feature.hog((b - b.min()) / np.ptp(b), pixels_per_cell=(3, 3))
    assert len(ha) == 26 * 26 * 3 * 3 * 9  # 28 x 28 cells, 3 x 3 blocks, 9 orientations
    assert sal.hog_pearson(a, b, sign_invariant=False) == pytest.approx(np.corrcoef(ha, hb)[0, 1], abs=1e-12)


def test_a_constant_map_has_no_similarity() -> None:
    a = blob()
    for b in (np.zeros((84, 84)), np.full((84, 84), 3.0)):
        assert all(math.isnan(v) for v in sal.similarities(a, b).values())
        assert all(math.isnan(v) for v in sal.similarities(b, a).values())
    assert np.isnan(sal.min_max(np.ones((3, 3)))).all()


def test_bad_maps_are_refused() -> None:
    with pytest.raises(InvalidArgument, match="same shape"):
        sal.similarities(np.ones((10, 10)), np.ones((10, 11)))
    with pytest.raises(InvalidArgument, match=r"shape \(H, W\)"):
        sal.spearman(np.ones(100), np.ones(100))
    with pytest.raises(InvalidArgument, match="finite"):
        sal.ssim(np.full((10, 10), np.nan), np.ones((10, 10)))
    with pytest.raises(InvalidArgument, match="at least 9 x 9"):
        sal.hog_pearson(np.ones((8, 8)), np.ones((8, 8)))


def test_calibration_of_random_maps_is_low_and_seeded() -> None:
    table = sal.calibration((84, 84), pairs=8, seed=0)
    assert list(table.index) == ["uniform", "gaussian"] and list(table.columns) == list(sal.SIMILARITIES)
    assert (table.to_numpy() < 0.06).all() and (table.to_numpy() > -0.06).all()
    # E|rho| of independent maps is sqrt(2 / (pi n)) = 0.0095 for n = 84 * 84.
    assert table["spearman"].between(0.004, 0.02).all()
    pd.testing.assert_frame_equal(table, sal.calibration((84, 84), pairs=8, seed=0))
    assert not table.equals(sal.calibration((84, 84), pairs=8, seed=1))


# -- cascading randomization -----------------------------------------------------------------------------
OBS = gym.spaces.Box(0, 255, (2, 12, 12), np.uint8)
ACTIONS = gym.spaces.Discrete(3)


def conv_agent(seed: int = 0) -> TorchAgent:
    """A small conv net on (2, 12, 12) frames, seeded: conv, conv, linear, linear."""
    generator = torch.Generator().manual_seed(seed)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(2, 4, 3),
        torch.nn.ReLU(),
        torch.nn.Conv2d(4, 4, 3, stride=2),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(64, 16),
        torch.nn.ReLU(),
        torch.nn.Linear(16, 3),
    )
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=generator) * 0.3)
    return TorchAgent(net, OBS, ACTIONS, head="q_values")


def weights(agent: TorchAgent) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in agent.parameters().items()}


def test_cascading_randomization_changes_exactly_the_layers_above_each_level() -> None:
    agent = conv_agent()
    before = weights(agent)
    layers = sanity.randomization_layers(agent)
    assert layers == ["7", "5", "2", "0"]
    cascade = sanity.cascading_randomization(agent, seed=3)
    assert [name for name, _ in cascade] == layers
    for level, (_, copy) in enumerate(cascade, 1):
        assert copy is not agent and copy.module is not agent.module
        for name, tensor in copy.parameters().items():
            randomized = name.split(".")[0] in layers[:level]
            assert torch.equal(tensor, before[name]) != randomized, (level, name)
    # A layer keeps the same random weights all the way down the cascade.
    for name in ("7.weight", "7.bias"):
        assert all(torch.equal(c.parameters()[name], cascade[0][1].parameters()[name]) for _, c in cascade)
    # The original is untouched.
    assert all(torch.equal(t, before[n]) for n, t in agent.parameters().items())


def test_cascading_randomization_is_seeded_and_leaves_the_global_generator_alone() -> None:
    agent = conv_agent()
    state = torch.random.get_rng_state()
    first = sanity.cascading_randomization(agent, seed=5)
    assert torch.equal(torch.random.get_rng_state(), state)
    again = sanity.cascading_randomization(agent, seed=5)
    other = sanity.cascading_randomization(agent, seed=6)
    for (_, a), (_, b), (_, c) in zip(first, again, other, strict=True):
        assert all(torch.equal(a.parameters()[n], b.parameters()[n]) for n in a.parameters())
        assert not all(torch.equal(a.parameters()[n], c.parameters()[n]) for n in a.parameters())


def test_re_initialization_follows_pytorchs_default_bounds() -> None:
    (_, copy) = sanity.cascading_randomization(conv_agent(), seed=0, layers=["7"])[0]
    weight, bias = copy.parameters()["7.weight"], copy.parameters()["7.bias"]
    bound = 1 / math.sqrt(16)  # kaiming_uniform_(a=sqrt(5)) on fan_in 16
    assert float(weight.detach().abs().max()) <= bound and float(bias.detach().abs().max()) <= bound
    assert float(weight.detach().abs().max()) > 0.8 * bound


def test_a_subset_of_layers_in_cascade_order() -> None:
    cascade = sanity.cascading_randomization(conv_agent(), seed=0, layers=["7", "2"])
    assert [name for name, _ in cascade] == ["7", "2"]
    before = weights(conv_agent())
    last = cascade[-1][1].parameters()
    assert torch.equal(last["5.weight"], before["5.weight"]) and not torch.equal(last["2.weight"], before["2.weight"])
    with pytest.raises(InvalidArgument, match="order"):
        sanity.cascading_randomization(conv_agent(), layers=["2", "7"])
    with pytest.raises(InvalidArgument, match="unknown"):
        sanity.cascading_randomization(conv_agent(), layers=["8"])
    with pytest.raises(InvalidType):
        sanity.cascading_randomization(conv_agent().module)  # type: ignore[arg-type]


def gradient_map(agent: TorchAgent, obs: np.ndarray) -> np.ndarray:
    """|d q(greedy) / d x| summed over the stacked frames: a real, simple saliency map."""
    x = agent.tensor(obs[None]).requires_grad_(True)
    q = agent.outputs(x).scores
    q[0, int(q[0].argmax())].backward()
    return x.grad.abs().sum(1)[0].numpy()


def test_sanity_check_table_and_summary() -> None:
    agent = conv_agent()
    states = np.random.default_rng(1).integers(0, 256, (3, *OBS.shape), dtype=np.uint8)
    table = sanity.sanity_check(gradient_map, agent, states, seed=0)
    assert list(table.columns) == ["state", "level", "layer", *sal.SIMILARITIES]
    assert len(table) == 3 * 4 and list(table["level"][:4]) == [1, 2, 3, 4]
    assert list(table["layer"][:4]) == sanity.randomization_layers(agent)
    row = table.iloc[5]  # state 1, two layers randomized: computed by hand
    copy = sanity.cascading_randomization(agent, seed=0)[1][1]
    expected = sal.similarities(gradient_map(agent, states[1]), gradient_map(copy, states[1]))
    assert (row["state"], row["level"]) == (1, 2)
    assert [row[k] for k in sal.SIMILARITIES] == pytest.approx(list(expected.values()), abs=1e-12)
    pd.testing.assert_frame_equal(table, sanity.sanity_check(gradient_map, agent, states, seed=0))

    # A map that ignores the network passes through every randomization unchanged: the check flags it.
    blind = sanity.sanity_check(lambda ag, obs: obs[-1].astype(float), agent, states[:1], seed=0)
    assert np.allclose(blind[list(sal.SIMILARITIES)], 1.0)

    summary = sal.sanity_check_summary(table)
    assert list(summary.index.get_level_values("layer")) == sanity.randomization_layers(agent)
    assert summary["spearman"].iloc[0] == pytest.approx(table.loc[table["level"] == 1, "spearman"].mean())
    assert (summary["ssim_count"] == 3).all()

    fig = saliency_report.sanity_check_curves({"gradient": table, "blind": blind.assign(state=0)})
    assert len(fig.axes) == 3 and len(fig.axes[0].get_lines()) >= 2
    with pytest.raises(InvalidType, match="non-empty mapping"):
        saliency_report.sanity_check_curves({})


def test_the_sanity_check_and_its_report_offer_the_reference_codes_flattened_ssim(tmp_path: Path) -> None:
    from rlwrappers.studies import saliency as saliency_study

    agent = conv_agent()
    states = np.random.default_rng(1).integers(0, 256, (2, *OBS.shape), dtype=np.uint8)
    flat = sanity.sanity_check(gradient_map, agent, states, seed=0, flatten_ssim=True)
    plain = sanity.sanity_check(gradient_map, agent, states, seed=0)
    # By hand: the maps of state 0 before and after the output layer's randomization, min-max scaled and
    # flattened; the sign-invariant SSIM is the larger of SSIM(u, v) and SSIM(u, 1 - v).
    copy = sanity.cascading_randomization(agent, seed=0)[0][1]
    a, b = gradient_map(agent, states[0]), gradient_map(copy, states[0])
    u, v = ((m - m.min()) / np.ptp(m) for m in (a.ravel().astype(np.float64), b.ravel().astype(np.float64)))
    by_hand = max(skimage_metrics.structural_similarity(u, w, win_size=7, data_range=1.0) for w in (v, 1.0 - v))
    assert flat.loc[0, "ssim"] == pytest.approx(by_hand, abs=1e-12)
    assert not np.allclose(flat["ssim"], plain["ssim"])
    pd.testing.assert_frame_equal(flat.drop(columns="ssim"), plain.drop(columns="ssim"))

    default = saliency_study.study(agent, states, {"occlusion": {"patch": 4}}, sanity=1)
    result = saliency_study.study(agent, states, {"occlusion": {"patch": 4}}, sanity=1, flatten_ssim=True)
    assert not np.allclose(result.sanity["ssim"], default.sanity["ssim"])
    pd.testing.assert_frame_equal(result.sanity.drop(columns="ssim"), default.sanity.drop(columns="ssim"))
    loaded = saliency_study.Study.load(result.save(tmp_path))
    assert loaded.flatten_ssim and not default.flatten_ssim
    assert "SSIM compared the flattened maps" in saliency_report.write_saliency_report(tmp_path).read_text()
    assert "SSIM compared the 2-D maps" in saliency_report.write_saliency_report(default, tmp_path / "2d").read_text()


# -- insertion -------------------------------------------------------------------------------------------
class TwoPixelQ(torch.nn.Module):
    """q0 = 1 + (x[:, 0, 0] summed over the frames) / 100 and q1 = 0.5 + (x[:, 1, 1] summed) / 50, on (2, 3, 3)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(18, 2)
        with torch.no_grad():
            w = torch.zeros(2, 2, 3, 3)
            w[0, :, 0, 0] = 0.01
            w[1, :, 1, 1] = 0.02
            self.linear.weight.copy_(w.reshape(2, 18))
            self.linear.bias.copy_(torch.tensor([1.0, 0.5]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x.flatten(1))


def two_pixel() -> tuple[TorchAgent, np.ndarray, np.ndarray]:
    """The agent, a (2, 3, 3) uint8 state, and a map ranking pixel (0, 0) first and (1, 1) second."""
    agent = TorchAgent(
        TwoPixelQ(), gym.spaces.Box(0, 255, (2, 3, 3), np.uint8), gym.spaces.Discrete(2), head="q_values"
    )
    obs = np.full((2, 3, 3), 7, np.uint8)
    obs[:, 0, 0] = [10, 30]  # q0 = 1 + 40 / 100 = 1.4
    obs[:, 1, 1] = [50, 50]  # q1 = 0.5 + 100 / 50 = 2.5
    saliency = np.zeros((3, 3))
    saliency[0, 0], saliency[1, 1] = 1.0, 0.5
    return agent, obs, saliency


def test_auc_is_the_trapezoid_rule_over_the_uncovered_fraction() -> None:
    assert sal.auc([0.0, 0.5, 1.0, 1.0]) == pytest.approx((0.25 + 0.75 + 1.0) / 3, abs=1e-15)
    assert sal.auc([0.0, 0.5, 1.0], [0.0, 0.8, 1.0]) == pytest.approx(0.8 * 0.25 + 0.2 * 0.75, abs=1e-15)
    assert sal.auc([2.0, 2.0]) == 2.0
    with pytest.raises(InvalidArgument, match="two points"):
        sal.auc([1.0])
    with pytest.raises(InvalidArgument, match="non-decreasing"):
        sal.auc([1.0, 2.0], [1.0, 0.0])


def test_insertion_on_a_hand_built_network_equals_the_hand_computation() -> None:
    agent, obs, saliency = two_pixel()
    assert insertion.insertion_order(saliency).tolist() == [0, 4, 1, 2, 3, 5, 6, 7, 8]
    q = insertion.insertion_curve(agent, obs, saliency, action=0, step=1, measure="q")
    # Black start: q0 = 1; after pixel (0, 0) q0 = 1.4 = t, and so on to the end.
    assert q.fractions == pytest.approx(np.arange(10) / 9)
    assert q.values == pytest.approx([1 / 1.4] + [1.0] * 9, abs=1e-6)
    assert q.auc == pytest.approx(((1 / 1.4 + 1) / 2 + 8) / 9, abs=1e-6)
    adv = insertion.insertion_curve(agent, obs, saliency, action=0, step=1, measure="advantage")
    # q0 - (q0 + q1) / 2 = (q0 - q1) / 2: (1 - 0.5) / 2, then (1.4 - 0.5) / 2, then (1.4 - 2.5) / 2.
    assert adv.values == pytest.approx([0.25, 0.45] + [-0.55] * 8, abs=1e-6)
    assert adv.auc == pytest.approx(((0.25 + 0.45) / 2 + (0.45 - 0.55) / 2 - 0.55 * 7) / 9, abs=1e-6)
    # Two pixels per step: 0, 2, 4, 6, 8, 9 pixels, so the last step is half as wide.
    two = insertion.insertion_curve(agent, obs, saliency, action=0, step=2)
    assert two.fractions == pytest.approx([0, 2 / 9, 4 / 9, 6 / 9, 8 / 9, 1])
    assert two.auc == pytest.approx(2 / 9 * (1 / 1.4 + 1) / 2 + 7 / 9, abs=1e-6)
    # The default action is the state's best: q1 = 2.5 > q0 = 1.4.
    assert insertion.insertion_curve(agent, obs, saliency, step=1).action == 1


def test_insertion_gives_the_four_variants_from_shared_passes() -> None:
    agent, obs, saliency = two_pixel()
    row = insertion.insertion(agent, obs, saliency, action=0, step=1, seed=4)
    assert list(row) == ["action", *sal.INSERTION_COLUMNS] and row["action"] == 0
    for column in sal.INSERTION_COLUMNS:
        measure, _, substrate = column.partition("_")
        curve = insertion.insertion_curve(
            agent, obs, saliency, action=0, step=1, seed=4, measure=measure, substrate=substrate
        )
        assert row[column] == curve.auc
    assert row["q_black"] == pytest.approx(((1 / 1.4 + 1) / 2 + 8) / 9, abs=1e-6)


def test_the_random_substrate_is_seeded_uniform_in_the_observations_range() -> None:
    agent, obs, saliency = two_pixel()
    batches: list[np.ndarray] = []

    def score(batch: np.ndarray) -> np.ndarray:
        batches.append(batch.copy())
        return insertion.scorer(agent)(batch)

    curve = insertion.insertion_curve(score, obs, saliency, action=0, step=1, substrate="random", seed=0, batch_size=4)
    assert [len(b) for b in batches] == [4, 4, 2]  # ten points, four per call
    states = np.concatenate(batches)
    assert states.dtype == np.uint8 and np.array_equal(states[-1], obs)
    base = states[0]
    assert len(np.unique(base)) > 10  # noise over 0..255, not a constant
    uncovered = np.zeros((3, 3), bool)
    for k, order in enumerate([None, *insertion.insertion_order(saliency)]):
        if order is not None:
            uncovered.flat[order] = True
        assert np.array_equal(states[k], np.where(uncovered, obs, base))
    assert curve.values[-1] == 1.0
    again = insertion.insertion_curve(agent, obs, saliency, action=0, step=1, substrate="random", seed=0)
    assert np.array_equal(again.values, curve.values)
    other = insertion.insertion_curve(agent, obs, saliency, action=0, step=1, substrate="random", seed=1)
    assert not np.array_equal(other.values, curve.values)


def test_float_observations_get_uniform_noise_in_0_1_or_the_bounds() -> None:
    seen: list[np.ndarray] = []

    def score(batch: np.ndarray) -> np.ndarray:
        seen.append(batch)
        return np.ones((len(batch), 2))

    obs = np.full((9, 9), 0.5, np.float32)
    insertion.insertion_curve(score, obs, blob((9, 9), (4.0, 4.0)), substrate="random", step=81)
    assert seen[0].dtype == np.float32 and 0 <= seen[0][0].min() and seen[0][0].max() < 1
    seen.clear()
    insertion.insertion_curve(score, obs, blob((9, 9), (4.0, 4.0)), substrate="random", step=81, bounds=(-3.0, -2.0))
    assert -3 <= seen[0][0].min() and seen[0][0].max() < -2


def test_superpixels_are_uncovered_by_relevance_with_pixels_shuffled_inside() -> None:
    segments = np.zeros((6, 6), np.int64)
    segments[:, 3:] = 1
    saliency = np.where(segments == 1, 2.0, 1.0)

    def score(batch: np.ndarray) -> np.ndarray:  # how many pixels of each half are uncovered
        shown = batch != 0
        return np.stack([shown[:, :, 3:].sum((1, 2)), shown[:, :, :3].sum((1, 2))], axis=1).astype(float)

    curve = insertion.insertion_curve(score, np.ones((6, 6), np.uint8), saliency, step=1, segments=segments, action=0)
    right, left = curve.scores[:, 0], curve.scores[:, 1]
    assert right.tolist() == [*range(19), *[18] * 18] and left.tolist() == [0] * 19 + list(range(1, 19))
    order = insertion.insertion_order(saliency, segments, seed=0)
    assert set(order[:18]) == set(np.flatnonzero(segments == 1))
    assert np.array_equal(order, insertion.insertion_order(saliency, segments, seed=0))
    assert not np.array_equal(order, insertion.insertion_order(saliency, segments, seed=1))
    assert not np.array_equal(order[:18], np.flatnonzero(segments == 1))  # shuffled, not raster order


def test_channel_last_observations_uncover_all_channels_of_a_pixel() -> None:
    agent, obs, saliency = two_pixel()
    hwc = np.ascontiguousarray(obs.transpose(1, 2, 0))
    score = insertion.scorer(agent)

    def score_hwc(batch: np.ndarray) -> np.ndarray:
        return score(np.ascontiguousarray(batch.transpose(0, 3, 1, 2)))

    chw_curve = insertion.insertion_curve(agent, obs, saliency, action=0, step=1)
    hwc_curve = insertion.insertion_curve(score_hwc, hwc, saliency, action=0, step=1)
    assert np.array_equal(chw_curve.values, hwc_curve.values)
    assert hwc_curve.values == pytest.approx([1 / 1.4] + [1.0] * 9, abs=1e-6)
    with pytest.raises(IncompatibleSpace):
        insertion.insertion_curve(agent, obs, np.zeros((4, 4)))
    with pytest.raises(InvalidArgument, match="pass `layout=`"):
        insertion.insertion_curve(lambda b: np.ones((len(b), 2)), np.zeros((3, 3, 3)), np.zeros((3, 3)))
    with pytest.raises(IncompatibleSpace, match="no 'hwc' layout"):
        insertion.insertion_curve(agent, obs, saliency, layout="hwc")


def test_insertion_arguments_are_checked() -> None:
    agent, obs, saliency = two_pixel()
    with pytest.raises(UnknownName, match="Did you mean `black`"):
        insertion.insertion_curve(agent, obs, saliency, substrate="blak")
    with pytest.raises(UnknownName):
        insertion.insertion_curve(agent, obs, saliency, measure="value")
    with pytest.raises(InvalidArgument, match="`step` must be >= 1"):
        insertion.insertion_curve(agent, obs, saliency, step=0)
    with pytest.raises(InvalidArgument, match="`action` must be < 2"):
        insertion.insertion_curve(agent, obs, saliency, action=2)
    with pytest.raises(InvalidArgument, match="one row of action scores"):
        insertion.insertion_curve(lambda b: np.ones(len(b)), obs, saliency)
    with pytest.raises(InvalidType):
        insertion.insertion_curve("agent", obs, saliency)  # type: ignore[arg-type]


def test_a_zero_state_value_gives_a_nan_q_curve() -> None:
    obs, saliency = np.zeros((9, 9), np.uint8), blob((9, 9), (4.0, 4.0))
    curve = insertion.insertion_curve(lambda b: np.zeros((len(b), 2)), obs, saliency, step=9)
    assert np.isnan(curve.values).all() and math.isnan(curve.auc)


def test_insertion_table_is_one_row_per_state_with_seeds_counted_up() -> None:
    agent, obs, saliency = two_pixel()
    states, maps = np.stack([obs, obs // 2]), np.stack([saliency, saliency.T])
    table = insertion.insertion_table(agent, states, maps, actions=[0, 1], step=1, seed=10)
    assert list(table.columns) == ["state", "action", *sal.INSERTION_COLUMNS]
    second = insertion.insertion(agent, obs // 2, saliency.T, action=1, step=1, seed=11)
    assert table.iloc[1][list(sal.INSERTION_COLUMNS)].tolist() == [second[c] for c in sal.INSERTION_COLUMNS]
    with pytest.raises(InvalidArgument, match="one entry each"):
        insertion.insertion_table(agent, states, maps[:1])


# -- state selection -------------------------------------------------------------------------------------
def test_importance_is_the_spread_of_the_q_values() -> None:
    assert selection.importance([[1.0, 4.0, 2.0], [3.0, 3.0, 3.0]]).tolist() == [3.0, 0.0]
    with pytest.raises(InvalidArgument):
        selection.importance([1.0, 2.0])


def test_highlights_div_picks_important_states_that_are_far_apart() -> None:
    # Two near-duplicates of the most important state, a far state of medium importance, and two more.
    features = np.array([[0.0, 0.0], [0.1, 0.0], [0.0, 0.2], [10.0, 0.0], [5.0, 5.0], [0.0, 10.0]])
    imp = np.array([9.0, 8.0, 7.0, 1.0, 3.0, 0.5])
    distances = [np.hypot(*(features[i] - features[j])) for i in range(6) for j in range(i + 1, 6)]
    low, high = min(distances), max(distances)
    assert selection.diversity_threshold(features, 30) == pytest.approx(low + 0.3 * (high - low))
    assert selection.diversity_threshold(features, 30) != pytest.approx(np.percentile(distances, 30))
    # Threshold 30 %: 4.3. Order by importance 0, 1, 2, 4, 3, 5: 1 and 2 sit next to 0 and are skipped.
    assert selection.highlights_div(imp, features, k=3, threshold=30).tolist() == [0, 4, 3]
    assert selection.highlights_div(imp, features, k=10, threshold=30).tolist() == [0, 4, 3, 5]
    # Threshold 0 is the smallest distance: only the closest pair (0 and 1, 0.1 apart) is kept apart.
    assert selection.highlights_div(imp, features, k=3, threshold=0).tolist() == [0, 2, 4]
    # A very high threshold leaves fewer than k: the top state only.
    assert selection.highlights_div(imp, features, k=3, threshold=100).tolist() == [0]
    # Feature rows may be whole observations: they are flattened.
    frames = np.zeros((6, 2, 2, 2))
    frames[:, 0, 0, :] = features
    assert selection.highlights_div(imp, frames, k=3).tolist() == [0, 4, 3]
    with pytest.raises(InvalidArgument, match="one row per state"):
        selection.highlights_div(imp[:5], features)


def test_random_subsets_are_seeded_distinct_and_sorted() -> None:
    subsets = selection.random_subsets(1000, 10, 10, seed=0)
    assert subsets.shape == (10, 10) and subsets.dtype == np.int64
    assert all(len(set(s)) == 10 and (np.diff(s) > 0).all() for s in subsets)
    assert subsets.min() >= 0 and subsets.max() < 1000
    assert np.array_equal(subsets, selection.random_subsets(1000, 10, 10, seed=0))
    assert not np.array_equal(subsets, selection.random_subsets(1000, 10, 10, seed=1))
    with pytest.raises(InvalidArgument, match="<= 5"):
        selection.random_subsets(5, 6, 1)


# -- parameter search ------------------------------------------------------------------------------------
def auc_table() -> pd.DataFrame:
    """Three parameter sets, two states each, with a time per map."""
    rows = []
    per_set = {"p4": (1.0, 0.0, 3.0), "p6": (2.0, 1.0, 0.5), "p8": (3.0, -1.0, 1.0)}  # q, advantage, seconds
    for params, (q, adv, seconds) in per_set.items():
        for state, shift in ((0, -0.5), (1, 0.5)):
            rows.append(
                {
                    "params": params,
                    "state": state,
                    "q_black": q + shift,
                    "q_random": q - shift + 0.2,
                    "advantage_black": adv,
                    "advantage_random": adv + 2 * shift,
                    "seconds": seconds + shift / 10,
                }
            )
    return pd.DataFrame(rows)


def test_standardized_scores_by_hand() -> None:
    table = sal.standardized_scores(auc_table())
    q = np.array([1.1, 2.1, 3.1])  # the means over states and both substrates
    adv = np.array([0.0, 1.0, -1.0])
    z_q = (q - q.mean()) / q.std()  # population std (ddof 0)
    z_adv = (adv - adv.mean()) / adv.std()
    expected = pd.Series(z_q + z_adv, index=["p4", "p6", "p8"])
    assert table.index.tolist() == ["p6", "p8", "p4"]  # best first
    assert table["q"].loc[["p4", "p6", "p8"]].to_numpy() == pytest.approx(q)
    assert table["score"].loc[["p4", "p6", "p8"]].to_numpy() == pytest.approx(expected.to_numpy())
    assert table["seconds"].loc[["p4", "p6", "p8"]].to_numpy() == pytest.approx([3.0, 0.5, 1.0])
    # Grouping by several columns gives a MultiIndex.
    wide = auc_table().assign(kind="occlusion")
    assert sal.standardized_scores(wide, by=["kind", "params"]).index.nlevels == 2
    # A single parameter set has nothing to be standardized against.
    assert sal.standardized_scores(auc_table().query("params == 'p4'"))["score"].tolist() == [0.0]
    with pytest.raises(InvalidArgument, match="lacks the AUC columns"):
        sal.standardized_scores(auc_table().drop(columns="q_random"))


def test_select_takes_the_best_within_the_time_budget() -> None:
    table = sal.standardized_scores(auc_table())
    assert sal.select(table, 3.0).name == "p6"
    assert sal.select(table, 0.6).name == "p6"
    assert sal.select(table.drop(index="p6"), 2.0).name == "p8"
    with pytest.raises(InvalidArgument, match=r"fastest takes 0\.5"):
        sal.select(table, 0.1)
    with pytest.raises(InvalidArgument, match="'seconds' column"):
        sal.select(table.drop(columns="seconds"), 3.0)


# -- the trained Breakout DQN ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def breakout_dqn() -> tuple[object, np.ndarray]:
    """The DQN agent and three stacked (4, 84, 84) observations of a real Breakout game it plays."""
    ale_py = pytest.importorskip("ale_py")
    from rlwrappers.wrappers.atari import atari_wrapper

    gym.register_envs(ale_py)
    path = shared_agent("dqn-BreakoutNoFrameskip-v4-seed0.zip")
    env = atari_wrapper(gym.make("BreakoutNoFrameskip-v4"))
    agent = load_sb3(path, observation_space=env.observation_space)
    obs, _ = env.reset(seed=0)
    states = []
    for t in range(30):
        obs, *_ = env.step(1 if t < 2 else int(agent.act_one(obs)))
        if t % 10 == 9:
            states.append(obs)
    env.close()
    return agent, np.stack(states)


def test_cascading_randomization_of_the_dqn_walks_its_online_q_net_only(breakout_dqn) -> None:
    agent, states = breakout_dqn
    target = {k: v.clone() for k, v in agent.policy.q_net_target.state_dict().items()}
    original = {k: v.clone() for k, v in agent.policy.q_net.state_dict().items()}
    cascade = sanity.cascading_randomization(agent, seed=0)
    assert [name for name, _ in cascade] == [
        "q_net.q_net.0",
        "q_net.features_extractor.linear.0",
        "q_net.features_extractor.cnn.4",
        "q_net.features_extractor.cnn.2",
        "q_net.features_extractor.cnn.0",
    ]
    q = insertion.scorer(agent)(states)
    for _, copy in cascade:
        assert all(torch.equal(copy.policy.q_net_target.state_dict()[k], v) for k, v in target.items())
        assert not np.allclose(insertion.scorer(copy)(states), q)
    assert not np.array_equal(cascade[-1][1].act(states), agent.act(states))
    assert all(torch.equal(agent.policy.q_net.state_dict()[k], v) for k, v in original.items())


def test_cascading_randomization_of_ppo_walks_the_actor_path_only() -> None:

    agent = load_sb3(shared_agent("ppo-BreakoutNoFrameskip-v4-seed0.zip"))
    names = sanity.randomization_layers(agent)
    assert names == [
        "action_net",
        "features_extractor.linear.0",
        "features_extractor.cnn.4",
        "features_extractor.cnn.2",
        "features_extractor.cnn.0",
    ]
    value = agent.policy.value_net.weight.detach().clone()
    last = sanity.cascading_randomization(agent, seed=0)[-1][1]
    assert torch.equal(last.policy.value_net.weight, value)


def test_sanity_check_of_gradient_maps_on_the_dqn(breakout_dqn) -> None:
    agent, states = breakout_dqn
    table = sanity.sanity_check(gradient_map, agent, states[:1], seed=0)
    first, last = table.iloc[0], table.iloc[-1]
    for name in sal.SIMILARITIES:
        assert last[name] < first[name] <= 1.0


def test_insertion_on_a_real_state_with_a_frame_difference_map(breakout_dqn) -> None:
    agent, states = breakout_dqn
    obs = states[0]
    saliency = np.abs(obs[-1].astype(float) - obs[-2].astype(float))
    score = insertion.scorer(agent)
    q, black = score(obs[None])[0], score(np.zeros_like(obs)[None])[0]
    curve = insertion.insertion_curve(agent, obs, saliency)
    a = int(q.argmax())
    assert curve.action == a and len(curve.values) == 84 * 84 // 84 + 1
    assert curve.values[-1] == 1.0
    assert curve.values[0] == pytest.approx(black[a] / q[a], rel=1e-5)
    adv = insertion.insertion_curve(agent, obs, saliency, measure="advantage")
    assert adv.values[-1] == pytest.approx(q[a] - q.mean(), abs=1e-6)
    row = insertion.insertion(agent, obs, saliency)
    assert row["q_black"] == pytest.approx(curve.auc) and row["advantage_black"] == pytest.approx(adv.auc)
    assert row == insertion.insertion(agent, obs, saliency)
    assert all(np.isfinite(row[c]) for c in sal.INSERTION_COLUMNS)


def test_insertion_on_a_vector_uncovers_one_feature_per_step() -> None:
    # q_0 = 2 x_1 + x_3: uncovering feature 1 then 3 (then the rest) from black.
    net = torch.nn.Linear(4, 2, bias=False)
    with torch.no_grad():
        net.weight.copy_(torch.tensor([[0.0, 2.0, 0.0, 1.0], [0.0, 0.0, 0.0, 0.0]]))
    box = gym.spaces.Box(-10.0, 10.0, (4,), np.float32)
    agent = TorchAgent(net, box, gym.spaces.Discrete(2), head="q_values")
    obs = np.array([5.0, 1.0, 7.0, 1.0], np.float32)
    curve = insertion.insertion_curve(agent, obs, [0.0, 2.0, 0.1, 1.0], action=0, step=1)
    np.testing.assert_allclose(curve.values, [0.0, 2 / 3, 1.0, 1.0, 1.0])
    assert curve.auc == pytest.approx((0 / 2 + 2 / 3 + 1 + 1 + 1 / 2) / 4)
