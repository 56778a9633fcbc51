"""LPIPS and SSIM between clean and perturbed observations, on the real lpips package and scikit-image.

No ImageNet weights are available offline, so the loading tests write a torchvision AlexNet with seeded random
weights where the real file would go and check that the LPIPS trunk holds exactly those weights.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ale_py
import gymnasium as gym
import numpy as np
import pytest

from rlwrappers.error import InvalidArgument, InvalidType, MissingFile, UnknownName
from rlwrappers.metrics import perceptual
from rlwrappers.metrics.perceptual import LPIPS, ssim

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")
lpips = pytest.importorskip("lpips")
structural_similarity = pytest.importorskip("skimage.metrics").structural_similarity

gym.register_envs(ale_py)
ALEXNET = "alexnet-owt-7be5be79.pth"
RNG = np.random.default_rng(0)


def noisy(x: np.ndarray, std: float, seed: int = 1) -> np.ndarray:
    """``x`` plus Gaussian noise of ``std`` grey levels, clipped to uint8."""
    noise = np.random.default_rng(seed).normal(0.0, std, x.shape)
    return np.clip(x + noise, 0, 255).astype(np.uint8)


@pytest.fixture(scope="module")
def pong_stacks() -> np.ndarray:
    """Eight real (4, 84, 84) Pong observations: AtariPreprocessing then FrameStackObservation."""
    env = gym.make("ALE/Pong-v5", frameskip=1)
    env = gym.wrappers.FrameStackObservation(gym.wrappers.AtariPreprocessing(env, screen_size=84), 4)
    obs, _ = env.reset(seed=0)
    out = []
    for t in range(40):
        obs, *_ = env.step(t % 6)
        if t % 5 == 4:
            out.append(obs)
    env.close()
    return np.stack(out)


@pytest.fixture(scope="module")
def random_metric() -> LPIPS:
    return LPIPS(random_backbone=True, seed=0)


@pytest.fixture(scope="module")
def alexnet_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    """``<tmp>/hub/checkpoints/alexnet-owt-7be5be79.pth``: a seeded random torchvision AlexNet's state dict."""
    root = tmp_path_factory.mktemp("torch_home")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(7)
        state = torchvision.models.alexnet(weights=None).state_dict()
    path = root / "hub" / "checkpoints" / ALEXNET
    path.parent.mkdir(parents=True)
    torch.save(state, path)
    yield path, {k: v for k, v in state.items() if k.startswith("features.")}
    path.unlink()


def assert_trunk_is(metric: LPIPS, features: dict[str, Any]) -> None:
    # lpips/pretrained_networks.py: AlexNet features 0-1, 2-4, 5-7, 8-9, 10-11 make slices 1-5.
    slices = {"0": 1, "3": 2, "6": 3, "8": 4, "10": 5}
    trunk = metric.module.get_submodule("net").state_dict()
    assert len(trunk) == len(features) == 10
    for key, value in features.items():
        index, name = key.split(".")[1:]
        assert torch.equal(trunk[f"slice{slices[index]}.{index}.{name}"], value), key


def assert_lins_are_shipped(metric: LPIPS) -> None:
    """The linear layers are the ones the lpips wheel ships, not random ones."""
    shipped = torch.load(Path(lpips.__file__).parent / "weights" / "v0.1" / "alex.pth", map_location="cpu")
    state = metric.module.state_dict()
    for k in range(5):
        assert torch.equal(state[f"lin{k}.model.1.weight"], shipped[f"lin{k}.model.1.weight"])


@pytest.fixture
def no_torch_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty TORCH_HOME, and torch's hub cache pointed at an empty folder too."""
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch_home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path


# Loading the trunk


def test_trunk_is_read_from_torch_home(alexnet_file: tuple[Path, dict], monkeypatch: pytest.MonkeyPatch) -> None:
    path, features = alexnet_file
    monkeypatch.setenv("TORCH_HOME", str(path.parents[2]))
    metric = LPIPS()
    assert metric.weights == path
    assert not metric.random_backbone
    assert metric.label == "LPIPS v0.1 (alex)"
    assert "not LPIPS" not in repr(metric)
    assert_trunk_is(metric, features)
    assert_lins_are_shipped(metric)


def test_trunk_is_read_from_an_explicit_path_or_folder(
    alexnet_file: tuple[Path, dict], no_torch_cache: Path, tmp_path: Path
) -> None:
    path, features = alexnet_file
    assert_trunk_is(LPIPS(weights=path), features)
    metric = LPIPS(weights=str(path.parent))  # a folder holding the file
    assert metric.weights == path
    assert_trunk_is(metric, features)


def test_trunk_is_read_from_a_legacy_format_file(alexnet_file: tuple[Path, dict], tmp_path: Path) -> None:
    # torchvision's published files predate torch's zip format; the trunk alone (no classifier) is enough.
    _, features = alexnet_file
    legacy = tmp_path / ALEXNET
    torch.save(features, legacy, _use_new_zipfile_serialization=False)
    assert_trunk_is(LPIPS(weights=legacy), features)


def test_a_squeezenet_trunk_is_renamed_layer_by_layer(tmp_path: Path) -> None:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        features = torchvision.models.squeezenet1_1(weights=None).features.state_dict()
    torch.save({f"features.{k}": v for k, v in features.items()}, tmp_path / "squeezenet1_1-b8a52dc0.pth")
    metric = LPIPS("squeeze", weights=tmp_path)
    trunk = metric.module.get_submodule("net").state_dict()  # slice<k>.<i>.squeeze.weight, ...
    assert len(trunk) == len(features) == 50
    for key, value in trunk.items():
        assert torch.equal(value, features[key.split(".", 1)[1]]), key
    frame = np.random.default_rng(0).integers(0, 256, (84, 84), dtype=np.uint8)
    assert metric.distance(frame, noisy(frame, 20.0)) > 0


def test_trunk_is_read_from_the_torch_hub_cache(
    alexnet_file: tuple[Path, dict], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    path, features = alexnet_file
    monkeypatch.delenv("TORCH_HOME", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    checkpoints = tmp_path / "torch" / "hub" / "checkpoints"
    checkpoints.mkdir(parents=True)
    (checkpoints / ALEXNET).symlink_to(path)
    assert Path(torch.hub.get_dir()) == tmp_path / "torch" / "hub"
    assert perceptual.trunk_places("alex") == [checkpoints / ALEXNET]
    metric = LPIPS()
    assert metric.weights == checkpoints / ALEXNET
    assert_trunk_is(metric, features)


def test_a_missing_trunk_raises_naming_the_file_and_every_place(
    no_torch_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = torch.get_rng_state()
    with pytest.raises(MissingFile) as info:
        LPIPS()
    message = str(info.value)
    assert isinstance(info.value, FileNotFoundError)
    assert f"`{ALEXNET}`" in message
    assert str(no_torch_cache / "torch_home" / "hub" / "checkpoints" / ALEXNET) in message
    assert "https://download.pytorch.org/models/" + ALEXNET in message
    assert "random_backbone=True" in message
    monkeypatch.delenv("TORCH_HOME")  # torch's hub cache is then $XDG_CACHE_HOME/torch/hub
    with pytest.raises(MissingFile, match=re.escape(str(no_torch_cache / "xdg" / "torch" / "hub" / "checkpoints"))):
        LPIPS()
    with pytest.raises(MissingFile, match=r"squeezenet1_1-b8a52dc0\.pth"):
        LPIPS("squeeze")
    with pytest.raises(MissingFile, match=re.escape(str(no_torch_cache / "elsewhere.pth"))):
        LPIPS(weights=no_torch_cache / "elsewhere.pth")
    assert torch.equal(torch.get_rng_state(), before)


def test_a_file_that_is_not_the_trunk_is_refused(tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.pth"
    torch.save({"features.0.weight": torch.zeros(3)}, wrong)
    with pytest.raises(InvalidArgument, match="does not hold torchvision's 'alex' trunk"):
        LPIPS(weights=wrong)
    (tmp_path / "text.pth").write_text("not a checkpoint")
    with pytest.raises(InvalidArgument, match="not a torch state dict"):
        LPIPS(weights=tmp_path / "text.pth")


def test_invalid_arguments_raise(tmp_path: Path) -> None:
    with pytest.raises(UnknownName, match="Did you mean `alex`"):
        LPIPS("alexnet", random_backbone=True)
    with pytest.raises(InvalidArgument, match="`seed` applies only"):
        LPIPS(seed=1)
    with pytest.raises(InvalidArgument, match="exclude each other"):
        LPIPS(weights=tmp_path, random_backbone=True)
    with pytest.raises(InvalidArgument, match="`batch_size` must be >= 1"):
        LPIPS(random_backbone=True, batch_size=0)


# The random backbone


def test_random_backbone_is_labelled_seeded_and_leaves_the_global_generator(random_metric: LPIPS) -> None:
    assert random_metric.random_backbone
    assert random_metric.weights is None
    assert "not LPIPS" in random_metric.label
    assert "not LPIPS" in repr(random_metric)
    assert_lins_are_shipped(random_metric)
    # the trunk is torchvision's default initialisation drawn from the seed
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        trunk = torchvision.models.alexnet(weights=None).features.state_dict()
    assert_trunk_is(random_metric, {f"features.{k}": v for k, v in trunk.items()})
    before = torch.get_rng_state()
    other = LPIPS(random_backbone=True, seed=1)
    assert torch.equal(torch.get_rng_state(), before)
    assert other.seed == 1
    clean = np.random.default_rng(2).integers(0, 256, (84, 84), dtype=np.uint8)
    perturbed = noisy(clean, 20.0)
    first = random_metric.distance(clean, perturbed)
    np.testing.assert_array_equal(random_metric.distance(clean, perturbed), first)
    assert other.distance(clean, perturbed) != pytest.approx(first)


# Distances


def test_identical_observations_are_at_distance_zero(random_metric: LPIPS, pong_stacks: np.ndarray) -> None:
    d = random_metric.distance(pong_stacks, pong_stacks.copy())
    assert d.shape == (8,)
    assert d.dtype == np.float64
    np.testing.assert_array_equal(d, 0.0)


def test_a_batch_equals_one_call_per_observation(random_metric: LPIPS, pong_stacks: np.ndarray) -> None:
    perturbed = noisy(pong_stacks, 12.0)
    batch = random_metric.distance(pong_stacks, perturbed)
    singles = [float(random_metric.distance(c, p)) for c, p in zip(pong_stacks, perturbed, strict=True)]
    np.testing.assert_allclose(batch, singles, rtol=1e-5, atol=1e-7)
    random_metric.batch_size = 3
    try:
        chunked = random_metric.distance(pong_stacks, perturbed)  # 32 frames in 11 forward passes
    finally:
        random_metric.batch_size = 128
    np.testing.assert_allclose(chunked, batch, rtol=1e-5, atol=1e-7)
    assert random_metric.distance(pong_stacks[:0], perturbed[:0]).shape == (0,)


def test_the_distance_is_lpips_module_on_plain_tensors(random_metric: LPIPS, pong_stacks: np.ndarray) -> None:
    # The metric runs channels-last for speed; the lpips module on ordinary tensors gives the same values.
    import copy

    perturbed = noisy(pong_stacks, 12.0)
    plain = copy.deepcopy(random_metric.module).to(memory_format=torch.contiguous_format)
    frames_a = torch.from_numpy(pong_stacks.reshape(-1, 84, 84).astype(np.float32) / 255.0)
    frames_b = torch.from_numpy(perturbed.reshape(-1, 84, 84).astype(np.float32) / 255.0)
    with torch.no_grad():
        expected = plain(frames_a[:, None].repeat(1, 3, 1, 1), frames_b[:, None].repeat(1, 3, 1, 1), normalize=True)
    per_stack = expected.reshape(len(pong_stacks), -1).double().mean(axis=1).numpy()
    np.testing.assert_allclose(random_metric.distance(pong_stacks, perturbed), per_stack, rtol=1e-5, atol=1e-7)


def test_a_stack_is_the_mean_of_its_frames_in_either_layout(random_metric: LPIPS, pong_stacks: np.ndarray) -> None:
    clean, perturbed = pong_stacks[:2], noisy(pong_stacks[:2], 12.0)
    per_frame = random_metric.distance(clean, perturbed, layout="hw")  # (2, 4): each frame on its own
    assert per_frame.shape == (2, 4)
    chw = random_metric.distance(clean, perturbed)
    np.testing.assert_allclose(chw, per_frame.mean(axis=1), rtol=1e-6)
    hwc = random_metric.distance(np.moveaxis(clean, 1, -1), np.moveaxis(perturbed, 1, -1))
    np.testing.assert_allclose(hwc, chw, rtol=1e-6)


def test_grayscale_is_repeated_to_rgb_and_rgb_layouts_agree(random_metric: LPIPS, pong_stacks: np.ndarray) -> None:
    gray, gray_noisy = pong_stacks[0, -1], noisy(pong_stacks[0, -1], 12.0)
    as_rgb = random_metric.distance(np.repeat(gray[..., None], 3, -1), np.repeat(gray_noisy[..., None], 3, -1))
    assert float(random_metric.distance(gray, gray_noisy)) == pytest.approx(float(as_rgb), rel=1e-6)
    rgb = RNG.integers(0, 256, (2, 96, 80, 3), dtype=np.uint8)
    rgb_noisy = noisy(rgb, 12.0)
    hwc = random_metric.distance(rgb, rgb_noisy)
    chw = random_metric.distance(np.moveaxis(rgb, -1, 1), np.moveaxis(rgb_noisy, -1, 1))
    assert hwc.shape == (2,)
    np.testing.assert_allclose(chw, hwc, rtol=1e-6)


def test_a_small_perturbation_is_nearer_than_a_large_one(random_metric: LPIPS, pong_stacks: np.ndarray) -> None:
    small = random_metric.distance(pong_stacks, noisy(pong_stacks, 3.0))
    large = random_metric.distance(pong_stacks, noisy(pong_stacks, 40.0))
    assert np.all(small > 0)
    assert np.all(small < large)


def test_distance_argument_errors(random_metric: LPIPS) -> None:
    frame = np.zeros((84, 84), np.uint8)
    with pytest.raises(InvalidArgument, match="same shape"):
        random_metric.distance(frame, frame[:80])
    with pytest.raises(InvalidType, match="uint8"):
        random_metric.distance(frame.astype(np.float32), frame)
    with pytest.raises(InvalidArgument, match="at least 31 x 31"):
        random_metric.distance(frame[:30], frame[:30])
    assert random_metric.distance(frame[:31, :31], frame[:31, :31]) == 0.0
    with pytest.raises(InvalidArgument, match="cannot tell the image layout"):
        random_metric.distance(np.zeros((4, 84, 4), np.uint8), np.zeros((4, 84, 4), np.uint8))
    batch = np.zeros((5, 84, 84), np.uint8)  # no channel axis at either end: five grayscale frames
    assert random_metric.distance(batch, batch).shape == (5,)


# SSIM


def test_ssim_of_identical_frames_is_one(pong_stacks: np.ndarray) -> None:
    s = ssim(pong_stacks, pong_stacks.copy())
    assert s.shape == (8,)
    np.testing.assert_array_equal(s, 1.0)


def test_ssim_equals_skimage_on_each_frame(pong_stacks: np.ndarray) -> None:
    perturbed = noisy(pong_stacks, 12.0)
    gray, gray_noisy = pong_stacks[3, 2], perturbed[3, 2]
    assert float(ssim(gray, gray_noisy)) == structural_similarity(gray, gray_noisy, data_range=255)
    rgb = RNG.integers(0, 256, (96, 80, 3), dtype=np.uint8)
    rgb_noisy = noisy(rgb, 12.0)
    direct = structural_similarity(rgb, rgb_noisy, data_range=255, channel_axis=-1)
    assert float(ssim(rgb, rgb_noisy)) == direct
    assert float(ssim(np.moveaxis(rgb, -1, 0), np.moveaxis(rgb_noisy, -1, 0))) == direct


def test_ssim_batch_equals_a_loop_and_stacks_average_their_frames(pong_stacks: np.ndarray) -> None:
    perturbed = noisy(pong_stacks, 12.0)
    batch = ssim(pong_stacks, perturbed)
    loop = [
        np.mean([structural_similarity(c, p, data_range=255) for c, p in zip(cs, ps, strict=True)])
        for cs, ps in zip(pong_stacks, perturbed, strict=True)
    ]
    np.testing.assert_allclose(batch, loop, rtol=1e-12)
    np.testing.assert_allclose(ssim(np.moveaxis(pong_stacks, 1, -1), np.moveaxis(perturbed, 1, -1)), batch, rtol=1e-12)
    assert np.all(batch < 1.0)
    assert np.all(ssim(pong_stacks, noisy(pong_stacks, 40.0)) < batch)
    with pytest.raises(InvalidArgument, match="at least 7 x 7"):
        ssim(np.zeros((6, 6), np.uint8), np.zeros((6, 6), np.uint8))


def test_importing_the_module_does_not_import_torch() -> None:
    import subprocess
    import sys

    code = "import sys, rlwrappers.metrics.perceptual; print('torch' in sys.modules, 'lpips' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=os.environ)
    assert out.stdout.split() == ["False", "False"]
