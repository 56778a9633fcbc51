"""Toybox's Atari games (Breakout, Amidar, Space Invaders) as Gymnasium envs, and their intervention catalogues.

- :mod:`rlwrappers.envs.toybox.game`: :class:`ToyboxEnv`, ALE-compatible envs whose game state is read and
  written as JSON, registered as ``rlwrappers/ToyboxBreakout-v0`` and its siblings.
- :mod:`rlwrappers.envs.toybox.interventions`: seed 000's Appendix A catalogues of interventions on the games'
  states (Breakout 39, Amidar 70, Space Invaders 88), and :func:`~rlwrappers.envs.toybox.interventions.define`
  for your own.

``rlwrappers.envs.toybox:ToyboxEnv`` is the entry point the registered IDs store.
"""

from rlwrappers.envs.toybox.game import ACTION_MEANINGS, GAMES, MAX_EPISODE_FRAMES, TOYBOX_IDS, ToyboxALE, ToyboxEnv

__all__ = ["ACTION_MEANINGS", "GAMES", "MAX_EPISODE_FRAMES", "TOYBOX_IDS", "ToyboxALE", "ToyboxEnv"]
