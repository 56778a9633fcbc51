"""Applying one intervention to a Toybox game's state against the bare JSON round trip (limit 1.2x).

The bare arm reads the state with ``state_json()`` and writes it back with ``write_state_json()``. The
intervention arm does what the ``Intervene`` wrapper does when its schedule switches on: the same read,
``rlwrappers.interventions.apply`` of a catalogue intervention, and the write. Both start from the same
mid-game state (restored with ``restore_state`` before every call, outside the timing of neither arm: both
pay it), so every call meets the same state.

The wrapper also renders the new frame once (``observe()``), which the bare round trip does not need; a third
arm adds that render to show its share.

Run: python benchmarks/bench_interventions.py
"""

from __future__ import annotations

import sys

import gymnasium as gym
from _timing import report
from rlwrappers.envs import ToyboxEnv
from rlwrappers.envs.toybox import interventions as catalogues

import rlwrappers  # noqa: F401  (registers the Toybox IDs)
from rlwrappers.state import interventions as iv

CALLS = 20
#: One catalogue intervention per game, and the frames played before the timed state.
GAMES = {
    "breakout": ("rlwrappers/ToyboxBreakout-v0", "drop_row_2"),
    "amidar": ("rlwrappers/ToyboxAmidar-v0", "drop_enemy_1"),
    "space_invaders": ("rlwrappers/ToyboxSpaceInvaders-v0", "drop_enemy_row_1"),
}
WARMUP = 200


def main() -> bool:
    ok = True
    for game, (env_id, name) in GAMES.items():
        env = gym.make(env_id).unwrapped
        assert isinstance(env, ToyboxEnv)
        env.reset(seed=0)
        for t in range(WARMUP):
            env.step(t % env.action_space.n)
        snapshot = env.clone_state()
        intervention = catalogues.get(game, name)

        def bare(env: ToyboxEnv = env, snapshot: object = snapshot) -> int:
            for _ in range(CALLS):
                env.restore_state(snapshot)
                env.write_state_json(env.state_json())
            return CALLS

        def intervene(
            env: ToyboxEnv = env,
            snapshot: object = snapshot,
            render: bool = False,
            intervention: iv.Intervention = intervention,
        ) -> int:
            for _ in range(CALLS):
                env.restore_state(snapshot)
                env.write_state_json(iv.apply(env.state_json(), intervention))
                if render:
                    env.observe()
            return CALLS

        ok &= report(
            f"{game}: one intervention ({name}) against a bare state_json + write_state_json round trip",
            {
                "bare round trip": bare,
                "read, apply, write": intervene,
                "read, apply, write, render": lambda env=env, snapshot=snapshot: intervene(env, snapshot, True),
            },
            limits={"read, apply, write": 1.2},
            rounds=15,
        )
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
