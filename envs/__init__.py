"""Environment mods, installed as ``rlwrappers.envs``.

Intervenable Toybox games and a cooperative multi-agent env, registered in Gymnasium under the
``rlwrappers`` namespace as they land.

Registered here, when this package is imported:

- ``rlwrappers/Catch-v0``: :class:`rlwrappers.envs.catch.Catch`, a ball to catch on a 10 x 5 grid drawn as
  (84, 84, 1) uint8 frames.
"""

from __future__ import annotations

import gymnasium as gym
from rlwrappers.envs.catch import Catch

__all__ = ["CATCH_ID", "Catch"]

CATCH_ID = "rlwrappers/Catch-v0"

if CATCH_ID not in gym.registry:
    gym.register(id=CATCH_ID, entry_point="rlwrappers.envs.catch:Catch")
