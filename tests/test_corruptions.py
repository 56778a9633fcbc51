"""The six natural image corruptions of seed 004: each function against its definition, identities, layouts,
no mutation, bad arguments; the wrappers under the shipped contract on raw and preprocessed Atari frames."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import ale_py
import cv2
import gymnasium as gym
import numpy as np
import pytest
from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation
from scipy import ndimage

import rlwrappers as rw
from rlwrappers import error
from rlwrappers.core import Entry
from rlwrappers.functional import corruptions
from rlwrappers.testing import SpaceEnv, check_spec_roundtrip, check_wrapper
from rlwrappers.wrappers.corruption import (
    JPEG,
    BrightnessContrast,
    MedianBlur,
    Perspective,
    PerspectivePerturbation,
    Rotate,
    Translate,
)

gym.register_envs(ale_py)

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

RNG = np.random.default_rng(4)
GRAY = RNG.integers(0, 256, (23, 19), dtype=np.uint8)  # odd, unequal sides catch swapped axes
RGB = RNG.integers(0, 256, (23, 19, 3), dtype=np.uint8)
STACK = RNG.integers(0, 256, (4, 23, 19), dtype=np.uint8)  # four grayscale frames
SMOOTH = np.add.outer(np.arange(32) * 3, np.arange(40) * 2).astype(np.uint8)  # a gradient, for JPEG
DIRECTIONS = [(0.6, -0.2), (-1.0, 0.0), (0.3, 0.5), (0.0, -0.7)]


def raw_breakout() -> gym.Env:
    return gym.make("ALE/Breakout-v5")


def stacked_breakout() -> gym.Env:
    return FrameStackObservation(AtariPreprocessing(gym.make("ALE/Breakout-v5", frameskip=1)), 4)


def image_env(shape: tuple[int, ...]) -> Callable[[], gym.Env]:
    def env_fn() -> gym.Env:
        return SpaceEnv(gym.spaces.Box(0, 255, shape, np.uint8), gym.spaces.Discrete(4), episode_length=7)

    return env_fn


# -- each function against its definition -----------------------------------------------------------------


@pytest.mark.parametrize(("alpha", "beta"), [(1.2, 40), (0.9, 20), (1.7, 40), (2.4, -275), (2.4, -260), (0.5, 0.25)])
def test_brightness_contrast_is_the_saturated_linear_map(alpha, beta):
    expected = np.clip(np.rint(RGB.astype(np.float64) * alpha + beta), 0, 255).astype(np.uint8)
    assert np.array_equal(corruptions.brightness_contrast(RGB, alpha, beta), expected)


def test_brightness_contrast_saturates_instead_of_taking_the_absolute_value():
    dark = np.array([[0, 50, 100, 200]], np.uint8)
    out = corruptions.brightness_contrast(dark, 2.4, -275)
    assert out.tolist() == [[0, 0, 0, 205]]
    # opencv's convertScaleAbs would turn the dark pixels bright: |0 * 2.4 - 275| saturates to 255.
    assert cv2.convertScaleAbs(dark, alpha=2.4, beta=-275).tolist()[0][0] == 255


@pytest.mark.parametrize("k", [3, 5, 7])
@pytest.mark.parametrize("frame", [GRAY, RGB], ids=["gray", "rgb"])
def test_median_blur_is_the_median_of_each_k_by_k_neighbourhood(k, frame):
    size = (k, k) if frame.ndim == 2 else (k, k, 1)
    expected = ndimage.median_filter(frame, size=size, mode="nearest")
    assert np.array_equal(corruptions.median_blur(frame, k), expected)


def test_median_blur_matches_a_numpy_median_in_the_interior():
    out = corruptions.median_blur(GRAY, 3)
    for r, c in [(1, 1), (5, 7), (21, 17), (11, 9)]:
        assert out[r, c] == np.median(GRAY[r - 1 : r + 2, c - 1 : c + 2])


def test_rotate_by_quarter_turns_is_exact():
    square = RNG.integers(0, 256, (17, 17, 3), dtype=np.uint8)
    assert np.array_equal(corruptions.rotate(square, 90), np.rot90(square))  # counter-clockwise as displayed
    assert np.array_equal(corruptions.rotate(square, -90), np.rot90(square, -1))
    assert np.array_equal(corruptions.rotate(GRAY, 180), GRAY[::-1, ::-1])  # about the centre, also for unequal sides


@pytest.mark.parametrize("degrees", [1.4, -3.0, 5.0])
def test_rotate_is_the_bilinear_warp_about_the_centre(degrees):
    h, w = RGB.shape[:2]
    cx, cy = (w - 1) / 2, (h - 1) / 2
    a, b = math.cos(math.radians(degrees)), math.sin(math.radians(degrees))
    matrix = np.array([[a, b, (1 - a) * cx - b * cy], [-b, a, b * cx + (1 - a) * cy]])
    expected = cv2.warpAffine(RGB, matrix, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
    assert np.array_equal(corruptions.rotate(RGB, degrees), expected)


def shifted(frame: np.ndarray, ti: int, tj: int) -> np.ndarray:
    """Pixel (r, c) moves to (r + tj, c + ti), one pixel at a time."""
    out = np.zeros_like(frame)
    h, w = frame.shape[:2]
    for r in range(h):
        for c in range(w):
            if 0 <= r + tj < h and 0 <= c + ti < w:
                out[r + tj, c + ti] = frame[r, c]
    return out


@pytest.mark.parametrize(("ti", "tj"), [(1, 1), (0, 1), (2, 1), (1, 2), (2, 2), (-3, 0), (0, -5), (19, 0), (-40, 7)])
def test_translate_moves_content_by_ti_columns_and_tj_rows(ti, tj):
    assert np.array_equal(corruptions.translate(RGB, ti, tj), shifted(RGB, ti, tj))
    h, w = GRAY.shape
    matrix = np.array([[1.0, 0.0, ti], [0.0, 1.0, tj]])
    expected = cv2.warpAffine(GRAY, matrix, (w, h), flags=cv2.INTER_NEAREST, borderMode=cv2.BORDER_CONSTANT)
    assert np.array_equal(corruptions.translate(GRAY, ti, tj), expected)


def test_perspective_moves_each_corner_by_norm_times_its_direction():
    frame = np.zeros((30, 40), np.uint8)
    for value, (r, c) in zip((10, 20, 30, 40), [(0, 0), (0, 39), (29, 39), (29, 0)], strict=True):
        frame[r, c] = value
    out = corruptions.perspective(frame, 3.0, [(1, 0), (0, 1), (-1, 0), (0, -1)])
    # top-left moves 3 right, top-right 3 down, bottom-right 3 left, bottom-left 3 up
    assert [out[0, 3], out[3, 39], out[29, 36], out[26, 0]] == [10, 20, 30, 40]


def test_perspective_is_the_warp_of_the_corner_map():
    h, w = RGB.shape[:2]
    source = np.float32([[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]])
    target = source + np.float32(2.5) * np.float32(DIRECTIONS)
    matrix = cv2.getPerspectiveTransform(source, target)
    expected = cv2.warpPerspective(RGB, matrix, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
    assert np.array_equal(corruptions.perspective(RGB, 2.5, DIRECTIONS), expected)


def test_perspective_directions_lie_in_the_unit_disk_with_the_largest_on_the_circle():
    for seed in range(20):
        d = corruptions.perspective_directions(np.random.default_rng(seed))
        norms = np.hypot(d[:, 0], d[:, 1])
        assert d.shape == (4, 2) and norms.max() == pytest.approx(1.0) and np.all(norms <= 1.0 + 1e-12)
    same = (
        corruptions.perspective_directions(np.random.default_rng(3)),
        corruptions.perspective_directions(np.random.default_rng(3)),
    )
    assert np.array_equal(*same)
    assert not np.array_equal(same[0], corruptions.perspective_directions(np.random.default_rng(4)))


def direct_jpeg(frame: np.ndarray, quality: int) -> np.ndarray:
    params = [cv2.IMWRITE_JPEG_QUALITY, quality]
    if frame.ndim == 2:
        return cv2.imdecode(cv2.imencode(".jpg", frame, params)[1], cv2.IMREAD_GRAYSCALE)
    bgr = np.ascontiguousarray(frame[..., ::-1])
    return np.ascontiguousarray(cv2.imdecode(cv2.imencode(".jpg", bgr, params)[1], cv2.IMREAD_COLOR)[..., ::-1])


@pytest.mark.parametrize("quality", [5, 20, 75])
@pytest.mark.parametrize("frame", [GRAY, RGB, SMOOTH], ids=["gray", "rgb", "smooth"])
def test_jpeg_is_an_encode_decode_round_trip(quality, frame):
    out = corruptions.jpeg(frame, quality)
    assert np.array_equal(out, direct_jpeg(frame, quality))
    assert not np.array_equal(out, frame)


def test_jpeg_quality_100_is_close_but_not_an_identity():
    frame, _ = raw_breakout().reset(seed=0)
    errors = {q: np.abs(corruptions.jpeg(frame, q).astype(int) - frame).mean() for q in (10, 50, 100)}
    assert errors[100] < errors[50] < errors[10]
    assert 0 < errors[100] < 2.0  # chroma subsampling still blurs sharp colour edges
    smooth = np.stack([SMOOTH, 255 - SMOOTH, SMOOTH // 2], axis=-1)
    assert np.abs(corruptions.jpeg(smooth, 100).astype(int) - smooth).mean() < 1.0


# -- identities, layouts, no mutation ------------------------------------------------------------------------

CORRUPT: dict[str, Callable[..., np.ndarray]] = {
    "brightness_contrast": lambda x, **kw: corruptions.brightness_contrast(x, 1.7, -40, **kw),
    "median_blur": lambda x, **kw: corruptions.median_blur(x, 5, **kw),
    "rotate": lambda x, **kw: corruptions.rotate(x, 3.0, **kw),
    "translate": lambda x, **kw: corruptions.translate(x, 2, -1, **kw),
    "perspective": lambda x, **kw: corruptions.perspective(x, 2.0, DIRECTIONS, **kw),
    "jpeg": lambda x, **kw: corruptions.jpeg(x, 30, **kw),
}
IDENTITY: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "brightness_contrast": lambda x: corruptions.brightness_contrast(x, 1, 0),
    "median_blur": lambda x: corruptions.median_blur(x, 1),
    "rotate": lambda x: corruptions.rotate(x, 0),
    "translate": lambda x: corruptions.translate(x, 0, 0),
    "perspective": lambda x: corruptions.perspective(x, 0, DIRECTIONS),
}


@pytest.mark.parametrize("name", list(IDENTITY))
@pytest.mark.parametrize("x", [GRAY, RGB, STACK], ids=["gray", "rgb", "stack"])
def test_identity_parameters_return_an_equal_new_array(name, x):
    out = IDENTITY[name](x)
    assert np.array_equal(out, x) and out.dtype == np.uint8 and not np.shares_memory(out, x)


def test_identities_through_opencv_are_exact_too():
    # The warps and the table give the identity at these parameters even without the shortcut.
    assert np.array_equal(
        corruptions._warp(RGB.shape, "hwc", corruptions._rotation_matrix(RGB.shape, "hwc", 0.0))(RGB), RGB
    )
    assert np.array_equal(
        corruptions._warp(RGB.shape, "hwc", corruptions._perspective_matrix(RGB.shape, "hwc", 0.0, np.eye(4, 2)))(RGB),
        RGB,
    )
    assert np.array_equal(cv2.LUT(RGB, np.arange(256, dtype=np.uint8)), RGB)


@pytest.mark.parametrize("name", list(CORRUPT))
def test_a_stack_is_corrupted_frame_by_frame_in_every_layout(name):
    fn = CORRUPT[name]
    each = np.stack([fn(frame) for frame in STACK])  # (4, H, W), one grayscale frame at a time
    assert np.array_equal(fn(STACK), each)  # channels first (inferred)
    assert np.array_equal(fn(np.ascontiguousarray(STACK.transpose(1, 2, 0))), each.transpose(1, 2, 0))  # last
    two = np.ascontiguousarray(STACK[:2].transpose(1, 2, 0))  # two channels: split for median blur
    assert np.array_equal(fn(two, layout="hwc"), each[:2].transpose(1, 2, 0))
    many = np.concatenate([STACK, STACK[:2]])  # six channels, more than opencv takes at once
    assert np.array_equal(
        fn(np.ascontiguousarray(many.transpose(1, 2, 0)), layout="hwc"),
        np.concatenate([each, each[:2]]).transpose(1, 2, 0),
    )
    assert np.array_equal(fn(STACK[:1].transpose(1, 2, 0)), each[:1].transpose(1, 2, 0))  # (H, W, 1), SB3's
    assert np.array_equal(fn(STACK, layout="hw"), each)  # a batch of grayscale frames


@pytest.mark.parametrize("name", list(CORRUPT))
def test_rgb_frames_agree_in_both_layouts_and_with_batch_axes(name):
    fn = CORRUPT[name]
    expected = fn(RGB)
    assert np.array_equal(fn(np.ascontiguousarray(RGB.transpose(2, 0, 1))), expected.transpose(2, 0, 1))
    batch = np.stack([RGB, RGB[::-1], 255 - RGB]).reshape(3, 1, *RGB.shape)  # batch axes (3, 1)
    out = fn(batch)
    assert out.shape == batch.shape
    for i in range(3):
        assert np.array_equal(out[i, 0], fn(np.ascontiguousarray(batch[i, 0])))
    stacks = np.stack([STACK, 255 - STACK])  # two chw stacks
    assert np.array_equal(fn(stacks)[1], fn(255 - STACK))


@pytest.mark.parametrize("name", list(CORRUPT))
@pytest.mark.parametrize(
    "x", [GRAY, RGB, STACK, RGB[:, ::-1], STACK.transpose(1, 2, 0)], ids=["gray", "rgb", "stack", "view", "hwc"]
)
def test_the_input_is_never_modified_and_views_are_read_correctly(name, x):
    before = x.copy()
    out = CORRUPT[name](x)
    assert np.array_equal(x, before)
    assert not np.shares_memory(out, x)
    assert out.shape == x.shape and out.dtype == np.uint8
    assert np.array_equal(out, CORRUPT[name](np.ascontiguousarray(x)))


def test_empty_batches_pass_through():
    empty = np.zeros((0, 84, 84, 4), np.uint8)
    for fn in CORRUPT.values():
        assert fn(empty).shape == empty.shape


# -- bad arguments ------------------------------------------------------------------------------------------

# (id, call, error class, substrings of the message)
BAD: list[tuple[str, Callable[[], Any], type[Exception], tuple[str, ...]]] = [
    ("x-float", lambda: corruptions.rotate(RGB.astype(np.float32), 1.0), error.InvalidType, ("`x`", "float32")),
    ("x-list", lambda: corruptions.jpeg(GRAY.tolist(), 20), error.InvalidType, ("`x`", "list")),
    ("x-1d", lambda: corruptions.median_blur(np.zeros(5, np.uint8), 3), error.InvalidArgument, ("`x`", "(5,)")),
    (
        "x-ambiguous",
        lambda: corruptions.rotate(np.zeros((4, 4, 4), np.uint8), 1.0),
        error.InvalidArgument,
        ("layout", "(4, 4, 4)"),
    ),
    (
        "layout-unknown",
        lambda: corruptions.rotate(RGB, 1.0, layout="hwcc"),
        error.UnknownName,
        ("`layout`", "'hwcc'", "`hwc`"),
    ),
    (
        "layout-axes",
        lambda: corruptions.rotate(GRAY, 1.0, layout="chw"),
        error.InvalidArgument,
        ("`layout`", "'chw'", "(23, 19)"),
    ),
    ("alpha-type", lambda: corruptions.brightness_contrast(RGB, "1", 0), error.InvalidType, ("`alpha`", "'1'")),
    ("beta-nan", lambda: corruptions.brightness_contrast(RGB, 1, math.nan), error.InvalidArgument, ("`beta`", "nan")),
    (
        "k-even",
        lambda: corruptions.median_blur(GRAY, 4),
        error.InvalidArgument,
        ("`k` must be an odd integer >= 1, received 4",),
    ),
    ("k-zero", lambda: corruptions.median_blur(GRAY, 0), error.InvalidArgument, ("`k`", "received 0")),
    ("k-negative", lambda: corruptions.median_blur(GRAY, -3), error.InvalidArgument, ("`k`", "received -3")),
    ("k-huge", lambda: corruptions.median_blur(GRAY, 1001), error.InvalidArgument, ("`k` must be at most 255", "1001")),
    ("k-float", lambda: corruptions.median_blur(GRAY, 3.0), error.InvalidType, ("`k`", "3.0", "float")),
    ("k-bool", lambda: corruptions.median_blur(GRAY, True), error.InvalidType, ("`k`", "True")),
    ("degrees-inf", lambda: corruptions.rotate(GRAY, math.inf), error.InvalidArgument, ("`degrees`", "inf")),
    ("ti-float", lambda: corruptions.translate(GRAY, 1.5, 0), error.InvalidType, ("`ti`", "integer", "1.5")),
    ("tj-str", lambda: corruptions.translate(GRAY, 1, "2"), error.InvalidType, ("`tj`", "'2'")),
    ("quality-zero", lambda: corruptions.jpeg(GRAY, 0), error.InvalidArgument, ("`quality`", "[1, 100]", "received 0")),
    ("quality-high", lambda: corruptions.jpeg(GRAY, 101), error.InvalidArgument, ("`quality`", "101")),
    ("quality-float", lambda: corruptions.jpeg(GRAY, 50.0), error.InvalidType, ("`quality`", "50.0")),
    (
        "norm-negative",
        lambda: corruptions.perspective(GRAY, -1.0, DIRECTIONS),
        error.InvalidArgument,
        ("`norm`", ">= 0", "-1.0"),
    ),
    (
        "directions-shape",
        lambda: corruptions.perspective(GRAY, 1.0, DIRECTIONS[:3]),
        error.InvalidArgument,
        ("`directions`", "(4, 2)", "(3, 2)"),
    ),
    (
        "directions-norm",
        lambda: corruptions.perspective(GRAY, 1.0, np.array(DIRECTIONS) / 2),
        error.InvalidArgument,
        ("`directions`", "norm 1", "0.5"),
    ),
    ("directions-text", lambda: corruptions.perspective(GRAY, 1.0, "up"), error.InvalidType, ("`directions`", "'up'")),
    (
        "directions-nan",
        lambda: corruptions.perspective(GRAY, 1.0, [(1, 0), (0, math.nan), (0, 0), (0, 0)]),
        error.InvalidArgument,
        ("`directions`", "finite"),
    ),
    (
        "norm-folds",
        lambda: corruptions.perspective(GRAY, 30.0, [(1, 0), (-1, 0), (1, 0), (-1, 0)]),
        error.InvalidArgument,
        ("`norm`", "30.0", "convex"),
    ),
    ("rng-type", lambda: corruptions.perspective_directions(0), error.InvalidType, ("`rng`", "int")),
    ("wrapper-k", lambda: MedianBlur(image_env((210, 160, 3))(), k=4), error.InvalidArgument, ("`k`", "received 4")),
    ("wrapper-quality", lambda: JPEG(image_env((210, 160, 3))(), quality=0), error.InvalidArgument, ("`quality`", "0")),
    ("wrapper-norm", lambda: Perspective(image_env((210, 160, 3))(), norm=-2), error.InvalidArgument, ("`norm`", "-2")),
    ("wrapper-seed", lambda: Perspective(image_env((210, 160, 3))(), seed=-1), error.InvalidArgument, ("`seed`", "-1")),
    ("wrapper-shift", lambda: Translate(image_env((210, 160, 3))(), ti=0.5), error.InvalidType, ("`ti`", "0.5")),
    (
        "wrapper-layout",
        lambda: Rotate(image_env((210, 160, 3))(), layout="cwh"),
        error.UnknownName,
        ("`layout`", "'cwh'"),
    ),
    (
        "wrapper-cartpole",
        lambda: Rotate(gym.make("CartPole-v1")),
        error.IncompatibleSpace,
        ("rotate", "image", "float32"),
    ),
    (
        "wrapper-discrete",
        lambda: JPEG(SpaceEnv(gym.spaces.Discrete(3), gym.spaces.Discrete(2))),
        error.IncompatibleSpace,
        ("jpeg", "Discrete(3)"),
    ),
    (
        "wrapper-float-image",
        lambda: MedianBlur(SpaceEnv(gym.spaces.Box(0, 1, (8, 8), np.float32), gym.spaces.Discrete(2))),
        error.IncompatibleSpace,
        ("median_blur", "uint8"),
    ),
    (
        "wrapper-bounds",
        lambda: Translate(SpaceEnv(gym.spaces.Box(1, 255, (8, 8), np.uint8), gym.spaces.Discrete(2))),
        error.IncompatibleSpace,
        ("translate", "[0, 255]"),
    ),
    (
        "wrapper-perspective-folds",
        lambda: Perspective(image_env((8, 8))(), norm=9, directions=[(1, 0), (-1, 0), (1, 0), (-1, 0)]),
        error.InvalidArgument,
        ("`norm`", "8x8"),
    ),
    (
        "spec-k",
        lambda: rw.wrap(image_env((210, 160, 3))(), "median_blur(k=2)"),
        error.InvalidArgument,
        ("`k`", "received 2"),
    ),
]


@pytest.mark.parametrize(("call", "cls", "parts"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_arguments_raise_typed_errors(call, cls, parts):
    with pytest.raises(cls) as info:
        call()
    assert isinstance(info.value, error.Error)
    for part in parts:
        assert part in str(info.value), f"{part!r} not in {str(info.value)!r}"


# -- the wrappers -------------------------------------------------------------------------------------------

WRAPPERS: dict[str, Callable[[gym.Env], gym.Env]] = {
    "brightness_contrast": lambda e: BrightnessContrast(e, alpha=2.4, beta=-260),
    "median_blur": lambda e: MedianBlur(e, k=5),
    "rotate": lambda e: Rotate(e, degrees=1.8),
    "translate": lambda e: Translate(e, ti=2, tj=1),
    "perspective": lambda e: Perspective(e, norm=3, seed=7),
    "jpeg": lambda e: JPEG(e, quality=15),
}
PURE: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "brightness_contrast": lambda x: corruptions.brightness_contrast(x, 2.4, -260),
    "median_blur": lambda x: corruptions.median_blur(x, 5),
    "rotate": lambda x: corruptions.rotate(x, 1.8),
    "translate": lambda x: corruptions.translate(x, 2, 1),
    "perspective": lambda x: corruptions.perspective(
        x, 3.0, corruptions.perspective_directions(np.random.default_rng(7))
    ),
    "jpeg": lambda x: corruptions.jpeg(x, 15),
}


def all_six(env: gym.Env) -> gym.Env:
    """The six wrappers stacked, at levels mild enough that no layer hides what the others do."""
    env = Translate(env, ti=-1, tj=2)
    env = Rotate(env, degrees=-1.4)
    env = Perspective(env, norm=2, seed=3)
    env = MedianBlur(env, k=3)
    env = JPEG(env, quality=40)
    return BrightnessContrast(env, alpha=1.1, beta=-5)


@pytest.mark.parametrize("name", list(WRAPPERS))
@pytest.mark.parametrize("shape", [(210, 160, 3), (4, 84, 84), (84, 84, 4), (84, 84)], ids=str)
def test_each_wrapper_passes_the_contract_on_image_spaces(name, shape):
    ran = check_wrapper(image_env(shape), WRAPPERS[name], steps=10, async_vector=False)
    assert ran[-1] == "check_vector_equivalence"


@pytest.mark.slow
def test_the_wrappers_pass_the_contract_on_raw_atari_frames():
    ran = check_wrapper(raw_breakout, all_six, steps=25, async_vector=False)
    assert ran[-2:] == ["check_vector_equivalence", "check_spec_roundtrip"]


@pytest.mark.slow
def test_the_wrappers_pass_the_contract_on_preprocessed_stacks():
    ran = check_wrapper(stacked_breakout, all_six, steps=12, vector=False)
    assert ran[-1] == "check_spec_roundtrip"


@pytest.mark.slow
def test_explicit_perspective_directions_survive_the_spec_round_trip():
    check_spec_roundtrip(raw_breakout, lambda e: Perspective(e, norm=2, directions=np.array(DIRECTIONS)), steps=5)


class Keep(gym.Wrapper):
    """Keeps a copy of every observation passing through, unchanged."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self.seen: list[np.ndarray] = []

    def reset(self, **kwargs: Any) -> Any:
        obs, info = self.env.reset(**kwargs)
        self.seen.append(obs.copy())
        return obs, info

    def step(self, action: Any) -> Any:
        result = self.env.step(action)
        self.seen.append(result[0].copy())
        return result


@pytest.mark.parametrize("make", [raw_breakout, stacked_breakout], ids=["raw", "stacked"])
def test_each_wrapper_applies_its_function_to_every_observation(make):
    base = make()
    for name, wrap in WRAPPERS.items():
        keep = Keep(base)
        env = wrap(keep)
        obs, _ = env.reset(seed=3)
        seen = [obs] + [env.step(t % 4)[0] for t in range(4)]
        for clean, corrupted in zip(keep.seen, seen, strict=True):
            assert corrupted.shape == clean.shape and corrupted.dtype == np.uint8
            assert np.array_equal(corrupted, PURE[name](clean)), name
            assert not np.array_equal(corrupted, clean), name


def test_on_raw_frames_the_corruption_must_sit_under_preprocessing_that_takes_observations():
    # AtariPreprocessing reads the emulator's screen, so whatever is wrapped below it never arrives.
    clean = AtariPreprocessing(gym.make("ALE/Breakout-v5", frameskip=1)).reset(seed=0)[0]
    bypassed = AtariPreprocessing(Rotate(gym.make("ALE/Breakout-v5", frameskip=1), degrees=5)).reset(seed=0)[0]
    assert np.array_equal(clean, bypassed)
    keep = Keep(gym.make("ALE/Breakout-v5", frameskip=1))
    env = gym.wrappers.MaxAndSkipObservation(Rotate(keep, degrees=5), skip=4)
    obs, _ = env.reset(seed=0)
    assert np.array_equal(obs, corruptions.rotate(keep.seen[-1], 5.0))
    obs = env.step(1)[0]
    assert np.array_equal(
        obs, np.maximum(corruptions.rotate(keep.seen[-1], 5.0), corruptions.rotate(keep.seen[-2], 5.0))
    )


def test_the_same_perspective_holds_in_every_episode_and_run():
    first, second = Perspective(raw_breakout(), norm=2), Perspective(raw_breakout(), norm=2)
    assert np.array_equal(first.perturbations[0].corner_directions(), second.perturbations[0].corner_directions())
    keep = Keep(raw_breakout())
    env = Perspective(keep, norm=2)
    drawn = corruptions.perspective_directions(np.random.default_rng(0))
    for seed in (None, 1, None):  # episodes of several seeds: the camera stays the same
        obs, _ = env.reset(seed=seed)
        assert np.array_equal(obs, corruptions.perspective(keep.seen[-1], 2.0, drawn))
    other = Perspective(raw_breakout(), norm=2, seed=1).perturbations[0].corner_directions()
    assert not np.array_equal(other, first.perturbations[0].corner_directions())


@pytest.mark.parametrize(
    ("spec", "wrapper"),
    [
        ("brightness_contrast(alpha=2.4, beta=-275.0)", lambda e: BrightnessContrast(e, alpha=2.4, beta=-275)),
        ("median_blur(k=5)", lambda e: MedianBlur(e, k=5)),
        ("rotate(degrees=3.0)", lambda e: Rotate(e, degrees=3)),
        ("translate(ti=-2, tj=1)", lambda e: Translate(e, ti=-2, tj=1)),
        ("perspective(norm=2.0, seed=5)", lambda e: Perspective(e, norm=2, seed=5)),
        (
            "perspective(norm=1.0, directions=((1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0)))",
            lambda e: Perspective(e, directions=[(1, 0), (0, 1), (-1, 0), (0, -1)]),
        ),
        ("jpeg(quality=20)", lambda e: JPEG(e, quality=20)),
        ("jpeg(quality=50, layout='hwc')", lambda e: JPEG(e, quality=50, layout="hwc")),
    ],
)
def test_spec_strings_round_trip(spec, wrapper):
    entry = Entry.parse(spec)
    assert Entry.parse(str(entry)).perturbation == entry.perturbation
    json.dumps(entry.to_dict())  # JSON-ready
    assert Entry.parse(entry.to_dict()).perturbation == entry.perturbation
    make = image_env((210, 160, 3))
    by_spec, by_class = rw.wrap(make(), spec), wrapper(make())
    assert by_spec.perturbations == by_class.perturbations
    a, _ = by_spec.reset(seed=0)
    b, _ = by_class.reset(seed=0)
    assert np.array_equal(a, b)


def test_the_corruptions_are_listed_with_their_wrappers():
    listed = {info.name: info for info in rw.perturbations()}
    expected = {
        "brightness_contrast": "BrightnessContrast",
        "median_blur": "MedianBlur",
        "rotate": "Rotate",
        "translate": "Translate",
        "perspective": "Perspective",
        "jpeg": "JPEG",
    }
    for name, wrapper in expected.items():
        assert listed[name].channel == "observation" and listed[name].wrapper == wrapper
        assert listed[name].summary and all(doc for _, doc in listed[name].params.values())
    assert listed["jpeg"].params["quality"][0] == 20
    assert PerspectivePerturbation(norm=2).params() == {"norm": 2.0, "directions": None, "seed": 0, "layout": None}


def test_the_space_and_dtype_are_kept():
    for make in (raw_breakout, stacked_breakout):
        base = make()
        for wrap in WRAPPERS.values():
            assert wrap(base).observation_space == base.observation_space


def test_importing_the_modules_does_not_import_opencv():
    code = "import sys, rlwrappers.functional.corruptions, rlwrappers.wrappers.corruption; print('cv2' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.strip() == "False"


def test_the_largest_median_kernel_blurs_and_a_larger_one_is_refused_when_built():
    env = SpaceEnv(gym.spaces.Box(0, 255, (84, 84, 3), np.uint8), gym.spaces.Discrete(2))
    blurred, _ = rw.MedianBlur(env, k=255).reset(seed=0)
    assert blurred.shape == (84, 84, 3)
    with pytest.raises(error.InvalidArgument, match="`k` must be at most 255, received 1001"):
        rw.MedianBlur(env, k=1001)  # opencv's own filter fails on it at the first frame
