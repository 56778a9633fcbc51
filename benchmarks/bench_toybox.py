"""A Toybox Breakout step against an ALE ``BreakoutNoFrameskip-v4`` step, and a Toybox state round trip.

Both envs come from ``gym.make`` and play one frame per step. Every round replays the same 200 random actions
from the same mid-game state (ALE: ``restoreState``; Toybox: ``restore_state``), so rounds compare like
with like. Limits: an RGB Toybox step costs at most 0.8 of an RGB ALE step, a grayscale Toybox step at most
0.3 of a grayscale ALE step.

Also timed, with no limit, against the RGB ALE step: ``state_json()`` followed by ``write_state_json()`` on
each game (what an intervention on the game's state costs at least), each half alone on Breakout, and the
JSON-free ``clone_state()`` + ``restore_state()``.

Run: python benchmarks/bench_toybox.py
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import ale_py
import gymnasium as gym
import numpy as np
from _timing import report
from rlwrappers.envs import ToyboxEnv

gym.register_envs(ale_py)

CALLS = 200
ROUNDS = 21
WARMUP = 60  # frames of FIRE and RIGHT before the timed stretch, so the ball is in play
RGB_LIMIT = 0.8
GRAYSCALE_LIMIT = 0.3


def unwrapped(env: gym.Env) -> ToyboxEnv:
    game = env.unwrapped
    assert isinstance(game, ToyboxEnv)
    return game


def ale_steps(obs_type: str) -> Callable[[], int]:
    env = gym.make("BreakoutNoFrameskip-v4", obs_type=obs_type)
    env.reset(seed=0)
    for i in range(WARMUP):
        env.step(1 if i % 2 == 0 else 2)
    atari = env.unwrapped
    assert isinstance(atari, ale_py.AtariEnv)
    ale = atari.ale
    start = ale.cloneState(include_rng=True)
    actions = np.random.default_rng(0).integers(0, 4, CALLS).tolist()

    def steps() -> int:
        ale.restoreState(start)
        for action in actions:
            env.step(action)
        return CALLS

    return steps


def toybox_steps(obs_type: str) -> Callable[[], int]:
    env = gym.make("rlwrappers/ToyboxBreakout-v0", obs_type=obs_type)
    env.reset(seed=0)
    for i in range(WARMUP):
        env.step(1 if i % 2 == 0 else 2)
    game = unwrapped(env)
    start = game.clone_state()
    actions = np.random.default_rng(0).integers(0, 4, CALLS).tolist()

    def steps() -> int:
        game.restore_state(start)
        for action in actions:
            env.step(action)
        return CALLS

    return steps


def round_trip(game_id: str) -> Callable[[], int]:
    env = unwrapped(gym.make(game_id))
    env.reset(seed=0)
    for i in range(WARMUP):
        env.step(1 if i % 2 == 0 else 2)
    calls = CALLS // 10

    def trips() -> int:
        for _ in range(calls):
            env.write_state_json(env.state_json())
        return calls

    return trips


def main() -> bool:
    ok = report(
        "Breakout, one frame per step, RGB observations",
        {"ALE BreakoutNoFrameskip-v4 step (rgb)": ale_steps("rgb"), "Toybox Breakout step (rgb)": toybox_steps("rgb")},
        {"Toybox Breakout step (rgb)": RGB_LIMIT},
        rounds=ROUNDS,
    )
    ok &= report(
        "Breakout, one frame per step, grayscale observations",
        {
            "ALE BreakoutNoFrameskip-v4 step (grayscale)": ale_steps("grayscale"),
            "Toybox Breakout step (grayscale)": toybox_steps("grayscale"),
        },
        {"Toybox Breakout step (grayscale)": GRAYSCALE_LIMIT},
        rounds=ROUNDS,
    )
    breakout = unwrapped(gym.make("rlwrappers/ToyboxBreakout-v0"))
    breakout.reset(seed=0)
    state = breakout.state_json()
    calls = CALLS // 10

    def read() -> int:
        for _ in range(calls):
            breakout.state_json()
        return calls

    def write() -> int:
        for _ in range(calls):
            breakout.write_state_json(state)
        return calls

    def snapshot() -> int:
        for _ in range(calls):
            breakout.restore_state(breakout.clone_state())
        return calls

    report(
        "state_json() + write_state_json() round trip, against one ALE Breakout step (no limit)",
        {
            "ALE BreakoutNoFrameskip-v4 step (rgb)": ale_steps("rgb"),
            "Breakout round trip": round_trip("rlwrappers/ToyboxBreakout-v0"),
            "Breakout state_json()": read,
            "Breakout write_state_json()": write,
            "Breakout clone_state() + restore_state()": snapshot,
            "Amidar round trip": round_trip("rlwrappers/ToyboxAmidar-v0"),
            "SpaceInvaders round trip": round_trip("rlwrappers/ToyboxSpaceInvaders-v0"),
        },
        {},
        rounds=ROUNDS,
    )
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
