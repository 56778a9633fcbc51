"""The six image corruption wrappers against a bare env step plus the bare operation they perform (limit 1.2).

For each wrapper, on ALE Breakout-v5's raw 210x160x3 frames and on a preprocessed 84x84 stack of 4
(``AtariPreprocessing`` + ``FrameStackObservation``): the time of a wrapped env step over the time of a bare
env step followed by the same opencv call(s) (numpy slicing for the shift) on the frame it returned, timed in
interleaved rounds of the same run. The ratio is the wrapper's whole overhead: the layer, the kernel's
allocation and dispatch.

Run: python benchmarks/bench_corruptions.py
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import ale_py
import cv2
import gymnasium as gym
import numpy as np
from _timing import paired
from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

from rlwrappers.functional.corruptions import perspective_directions
from rlwrappers.wrappers.corruption import JPEG, BrightnessContrast, MedianBlur, Perspective, Rotate, Translate

gym.register_envs(ale_py)

CALLS = 20
ROUNDS = 45
LIMIT = 1.2
# Table 1 values (seed 004); the JPEG quality is not given there.
ALPHA, BETA, K, DEGREES, TI, TJ, NORM, QUALITY = 2.4, -275.0, 5, 1.8, 2, 1, 3.0, 20

Op = Callable[[np.ndarray], Any]


def raw() -> gym.Env:
    return gym.make("ALE/Breakout-v5")


def stacked() -> gym.Env:
    return FrameStackObservation(AtariPreprocessing(gym.make("ALE/Breakout-v5", frameskip=1)), 4)


def bare_ops(shape: tuple[int, ...]) -> dict[str, Op]:
    """What each wrapper computes on one observation, written as the plain opencv (or numpy) calls."""
    rgb = len(shape) == 3 and shape[-1] == 3
    h, w = shape[:2] if rgb else shape[-2:]
    table = np.clip(np.rint(np.arange(256) * ALPHA + BETA), 0, 255).astype(np.uint8)
    centre = ((w - 1) / 2, (h - 1) / 2)
    rotation = cv2.getRotationMatrix2D(centre, DEGREES, 1.0)
    corners = np.float32([[0, 0], [w - 1, 0], [w - 1, h - 1], [0, h - 1]])
    moved = corners + np.float32(NORM * perspective_directions(np.random.default_rng(0)))
    homography = cv2.getPerspectiveTransform(corners, moved)
    jpeg_params = [cv2.IMWRITE_JPEG_QUALITY, QUALITY]
    linear, black = cv2.INTER_LINEAR, cv2.BORDER_CONSTANT

    def per_frame(op: Op) -> Op:
        return op if rgb else lambda obs: [op(frame) for frame in obs]  # a channel-first stack: frame by frame

    def shift(obs: np.ndarray) -> np.ndarray:
        out = np.zeros_like(obs)
        if rgb:
            out[TJ:, TI:] = obs[:-TJ, :-TI]
        else:
            out[:, TJ:, TI:] = obs[:, :-TJ, :-TI]
        return out

    def jpeg_rgb(obs: np.ndarray) -> np.ndarray:
        buffer = cv2.imencode(".jpg", cv2.cvtColor(obs, cv2.COLOR_RGB2BGR), jpeg_params)[1]
        return cv2.imdecode(buffer, cv2.IMREAD_COLOR_RGB)

    def jpeg_gray(frame: np.ndarray) -> np.ndarray:
        return cv2.imdecode(cv2.imencode(".jpg", frame, jpeg_params)[1], cv2.IMREAD_GRAYSCALE)

    return {
        "brightness_contrast": lambda obs: cv2.LUT(obs, table),
        "median_blur": per_frame(lambda f: cv2.medianBlur(f, K)),
        "rotate": per_frame(lambda f: cv2.warpAffine(f, rotation, (w, h), flags=linear, borderMode=black)),
        "translate": shift,
        "perspective": per_frame(lambda f: cv2.warpPerspective(f, homography, (w, h), flags=linear, borderMode=black)),
        "jpeg": jpeg_rgb if rgb else per_frame(jpeg_gray),
    }


WRAPPERS: dict[str, Callable[[gym.Env], gym.Env]] = {
    "brightness_contrast": lambda e: BrightnessContrast(e, alpha=ALPHA, beta=BETA),
    "median_blur": lambda e: MedianBlur(e, k=K),
    "rotate": lambda e: Rotate(e, degrees=DEGREES),
    "translate": lambda e: Translate(e, ti=TI, tj=TJ),
    "perspective": lambda e: Perspective(e, norm=NORM, seed=0),
    "jpeg": lambda e: JPEG(e, quality=QUALITY),
}


def stepper(env: gym.Env, after: Op | None = None) -> Callable[[], int]:
    """Steps ``env`` CALLS times from the same saved game state, applying ``after`` to each observation."""
    env.reset(seed=0)
    ale = env.unwrapped.ale
    start = ale.cloneState(include_rng=True)

    def run() -> int:
        ale.restoreState(start)  # every round replays the same stretch of game, so rounds compare like with like
        for i in range(CALLS):
            obs = env.step(i % 4)[0]
            if after is not None:
                after(obs)
        return CALLS

    return run


def main() -> bool:
    ok = True
    print(f"wrapped env step / (bare env step + bare op), median over {ROUNDS} interleaved rounds of {CALLS} steps")
    print(f"{'wrapper':<22}{'observation':<18}{'bare+op us':>12}{'wrapped us':>12}{'ratio':>8}")
    for label, make in (("raw 210x160x3", raw), ("stacked 4x84x84", stacked)):
        ops = bare_ops(make().observation_space.shape)
        for name, wrap in WRAPPERS.items():
            times, ratios = paired({"bare": stepper(make(), ops[name]), "wrapped": stepper(wrap(make()))}, ROUNDS)
            holds = ratios["wrapped"] <= LIMIT
            ok &= holds
            verdict = "ok" if holds else f"EXCEEDS {LIMIT}"
            print(
                f"{name:<22}{label:<18}{times['bare'] * 1e6:12.1f}{times['wrapped'] * 1e6:12.1f}"
                f"{ratios['wrapped']:8.3f}  {verdict}"
            )
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
