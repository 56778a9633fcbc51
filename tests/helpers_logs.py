"""Comparing logs written by two runs: what must be equal, and what differs on every run (times, versions)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from rlwrappers.logs import read_log

#: Columns that hold wall-clock times: they differ on every run and every machine.
TIME_COLUMNS = ["start_time", "wall_time"]
#: Header keys that differ whenever a log is written again: times and the versions of the software installed.
VOLATILE_META = {"start_time", "end_time", "rlwrappers", "gymnasium", "numpy", "python", "pettingzoo"}


def plain_stack(text: str) -> str:
    """A stack's text as plain Gymnasium names it: rl_zoo3, once imported in the process (the integration tests
    import it), replaces Gymnasium's TimeLimit by its own PatchedTimeLimit for every env made after."""
    return text.replace("<PatchedTimeLimit<", "<TimeLimit<")


def lasting(path: Path) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """A log's steps, its episodes without the wall-clock columns and its header without the volatile keys.

    The header's stack is named as plain Gymnasium names it, whichever process wrote it (:func:`plain_stack`).
    """
    log = read_log(path)
    meta = {k: v for k, v in log.meta.items() if k not in VOLATILE_META}
    if "stack" in meta:
        meta["stack"] = plain_stack(meta["stack"])
    return log.steps, log.episodes.drop(columns=TIME_COLUMNS), meta


def assert_same_logs(new: Path, old: Path) -> None:
    """The log folders under ``new`` and ``old`` are the same logs, bit for bit, but for times and versions."""
    logs = sorted(p.parent.relative_to(old) for p in old.rglob("meta.json"))
    assert logs, f"no log under {old}"
    assert logs == sorted(p.parent.relative_to(new) for p in new.rglob("meta.json"))
    for log in logs:
        (steps, episodes, meta), (old_steps, old_episodes, old_meta) = lasting(new / log), lasting(old / log)
        pd.testing.assert_frame_equal(steps, old_steps, check_exact=True, obj=f"{log} steps")
        pd.testing.assert_frame_equal(episodes, old_episodes, check_exact=True, obj=f"{log} episodes")
        assert meta == old_meta, log


def assert_same_run_logs(a: Any, b: Any) -> None:
    """Two evaluations wrote the same runs, with the same logs: every value, but the wall-clock times."""
    assert list(a.index["path"]) == list(b.index["path"])
    for path in a.index["path"]:
        left, right = read_log(a.path / path), read_log(b.path / path)
        pd.testing.assert_frame_equal(
            left.episodes.drop(columns=TIME_COLUMNS), right.episodes.drop(columns=TIME_COLUMNS), obj=path
        )
        pd.testing.assert_frame_equal(left.steps, right.steps, obj=path)
