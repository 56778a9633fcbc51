"""Self-describing logs: the format, the writers and the reader.

- :mod:`~rlwrappers.logs.schema`: the files of a log, its header's format and its tables' Arrow schemas.
- :mod:`~rlwrappers.logs.writer`: :class:`Recorder`, a wrapper that writes an env's steps and episodes.
- :mod:`~rlwrappers.logs.parallel`: :class:`ParallelRecorder`, the same for PettingZoo parallel envs
  (the ``multiagent`` extra; imported on first use).
- :mod:`~rlwrappers.logs.reader`: :func:`read_log`, :func:`read_episodes`, :func:`team_returns` and
  :func:`who_acted`.
- :mod:`~rlwrappers.logs.training`: ``PerturbationCallback``, what the perturbations did during SB3 training,
  in SB3's logger (the ``sb3`` extra; import it from there).
"""

from __future__ import annotations

from typing import Any

from rlwrappers.logs.reader import Log, episode_returns, read_episodes, read_log, team_returns, who_acted
from rlwrappers.logs.writer import Recorder, compact

__all__ = [
    "Log",
    "ParallelRecorder",
    "Recorder",
    "compact",
    "episode_returns",
    "read_episodes",
    "read_log",
    "team_returns",
    "who_acted",
]


def __getattr__(name: str) -> Any:
    if name == "ParallelRecorder":  # lazily: it needs pettingzoo, an extra
        from rlwrappers.logs.parallel import ParallelRecorder

        return ParallelRecorder
    raise AttributeError(f"module 'rlwrappers.logs' has no attribute {name!r}")
