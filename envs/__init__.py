"""Environment mods, installed as ``rlwrappers.envs``.

Intervenable Toybox games and a cooperative multi-agent env, registered in Gymnasium under the
``rlwrappers`` namespace as they land.

Registered here, when this package is imported:

- ``rlwrappers/Catch-v0``: :class:`rlwrappers.envs.catch.Catch`, a ball to catch on a 10 x 5 grid drawn as
  (84, 84, 1) uint8 frames.
- ``rlwrappers/ToyboxBreakout-v0``, ``rlwrappers/ToyboxAmidar-v0``, ``rlwrappers/ToyboxSpaceInvaders-v0``:
  :class:`rlwrappers.envs.toybox.ToyboxEnv`, Toybox's Atari games, ALE-compatible (one frame per step, like
  ``NoFrameskip-v4``), whose game state is read and written as JSON. Registered only when ``ctoybox`` is
  installed (the ``toybox`` extra), which loads on the first ``gym.make``.

Multi-agent (PettingZoo's parallel API, the ``multiagent`` extra; imported on first use, not registered):

- ``coordinated_buildings_v0``: :class:`rlwrappers.envs.powergrid.CoordinatedBuildings`, buildings that cool
  their zones and share one feeder bus whose voltage must stay in 0.95-1.05 p.u.
  (``rlwrappers.envs.powergrid.parallel_env``).
"""

from __future__ import annotations

import importlib.util
from typing import Any

import gymnasium as gym
from rlwrappers.envs.catch import Catch
from rlwrappers.envs.toybox import MAX_EPISODE_FRAMES, TOYBOX_IDS, ToyboxEnv

__all__ = ["CATCH_ID", "TOYBOX_IDS", "Catch", "ToyboxEnv"]  # CoordinatedBuildings too, on first use (see __getattr__)

CATCH_ID = "rlwrappers/Catch-v0"

if CATCH_ID not in gym.registry:
    gym.register(id=CATCH_ID, entry_point="rlwrappers.envs.catch:Catch")

if importlib.util.find_spec("ctoybox") is not None:  # the toybox extra; ctoybox itself loads on gym.make
    for _game, _env_id in TOYBOX_IDS.items():
        if _env_id not in gym.registry:
            gym.register(
                id=_env_id,
                entry_point="rlwrappers.envs.toybox:ToyboxEnv",
                kwargs={"game": _game},
                max_episode_steps=MAX_EPISODE_FRAMES,
            )


def __getattr__(name: str) -> Any:
    if name == "CoordinatedBuildings":  # lazily: it needs pettingzoo, an extra
        from rlwrappers.envs.powergrid import CoordinatedBuildings

        return CoordinatedBuildings
    raise AttributeError(f"module 'rlwrappers.envs' has no attribute {name!r}")
