"""The layout of a log: its files, its header's format, and the Arrow schemas of its tables.

A log is a directory::

    run/
      meta.json          the header: library version, env id, the full wrapper spec, perturbations with
                         their schedules, spaces, start time; seeds and end time are added on close
      steps.parquet      one row per step call
      episodes.parquet   one row per episode

While the run goes on, rows go to ``stream.arrows``, an Arrow IPC stream that gets one record batch per
finished episode (its steps, with the episode's row in the batch's metadata). The writer
(:mod:`rlwrappers.logs.writer`) and the reader (:mod:`rlwrappers.logs.reader`) share what is here.

Columns of ``steps``: ``episode``, ``step`` (the index of the step call in its episode), ``action`` (as the
agent gave it), ``reward`` (as the agent received it), ``terminated``, ``truncated``, then for every
perturbation ``<label>.active`` and its declared fields ``<label>.<field>`` (null where it did not act).
Columns of ``episodes``: ``episode``, ``seed`` (given to reset, or null), ``entropy`` (what each perturbation
layer seeded from, outermost first), ``return``, ``length``, ``terminated``, ``truncated``, ``complete``
(False for an episode cut short by ``close`` or a new ``reset``), ``start_time``, ``wall_time``, then for
every perturbation what it did at reset: ``<label>.active`` and its declared reset fields.

Multi-agent logs (:class:`rlwrappers.logs.parallel.ParallelRecorder`) keep this layout with one ``steps`` row
per agent per step, adding ``agent``, ``policy`` and ``switched`` columns, and per-agent ``return.<agent>``
columns to ``episodes``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

import gymnasium as gym
import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "CHECKSUM_KEY",
    "EPISODE_CHECKSUM_KEY",
    "EPISODE_KEY",
    "FORMAT",
    "FORMAT_VERSION",
    "META",
    "STREAM",
    "TABLES",
    "Column",
    "action_kind",
    "arrow_type",
    "log_schemas",
    "schemas",
    "team_schemas",
]

FORMAT: Final = "rlwrappers-log"
FORMAT_VERSION: Final = 1
META: Final = "meta.json"
TABLES: Final = ("steps", "episodes")
STREAM: Final = "stream.arrows"
EPISODE_KEY: Final = "episode"
#: The key of a stream batch's CRC-32 (of its serialized steps); streams written without it still read.
CHECKSUM_KEY: Final = "crc32"
#: The key of the CRC-32 of a stream batch's episode row (its JSON bytes); streams written without it still read.
EPISODE_CHECKSUM_KEY: Final = "episode_crc32"


def arrow_type(pa: Any, kind: str, action_type: Any) -> Any:
    """The Arrow type of a declared field kind (one of :data:`rlwrappers.core.FIELD_TYPES`)."""
    return {
        "bool": pa.bool_(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "float64[]": pa.list_(pa.float64()),
        "action": action_type,
    }[kind]


def action_kind(space: gym.Space[Any]) -> str:
    """How a log stores actions of ``space``: ``int``, ``int[]``, ``float[]`` or ``text``."""
    if isinstance(space, gym.spaces.Discrete):
        return "int"
    if isinstance(space, (gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)):
        return "int[]"
    if isinstance(space, gym.spaces.Box):
        return "float[]"
    return "text"


class Column:
    """Converts a list of raw values (actions, field values) into one Arrow array of a fixed type."""

    def __init__(self, pa: Any, kind: str) -> None:
        self.pa, self.kind = pa, kind
        self.type = {
            "int": pa.int64(),
            "int[]": pa.list_(pa.int64()),
            "float[]": pa.list_(pa.float64()),
            "text": pa.string(),
        }[kind]

    def array(self, values: list[Any]) -> Any:
        """``values`` as one Arrow array of this column's type (None becomes null)."""
        pa = self.pa
        if self.kind == "int":
            if None not in values:
                return pa.array(np.asarray(values, dtype=np.int64))
            return pa.array([None if v is None else int(v) for v in values], type=self.type)
        if self.kind == "text":
            return pa.array([None if v is None else repr(v) for v in values], type=self.type)
        dtype = np.int64 if self.kind == "int[]" else np.float64
        return pa.array([None if v is None else np.asarray(v, dtype=dtype).ravel() for v in values], type=self.type)


def log_schemas(pa: Any, meta: Mapping[str, Any]) -> tuple[pa.Schema, pa.Schema]:
    """The steps and episodes schemas of a log, from its header."""
    if "agents" in meta:  # a multi-agent log (rlwrappers.logs.parallel.ParallelRecorder)
        return team_schemas(pa, meta)
    action = Column(pa, meta["action_kind"]).type
    perturbations = meta["perturbations"]

    def declared(key: str) -> list[Any]:
        return [
            pa.field(f"{p['label']}.{f}", arrow_type(pa, kind, action))
            for p in perturbations
            for f, kind in p[key].items()
        ]

    active = [pa.field(f"{p['label']}.active", pa.bool_()) for p in perturbations]
    return schemas(
        pa, action, step_fields=[*active, *declared("step_fields")], episode_fields=[*active, *declared("reset_fields")]
    )


def schemas(
    pa: Any,
    action: Any,
    *,
    who: Sequence[Any] = (),
    step_fields: Sequence[Any] = (),
    episode_fields: Sequence[Any] = (),
) -> tuple[pa.Schema, pa.Schema]:
    """The ``steps`` and ``episodes`` schemas every log shares, with a log kind's own fields.

    Args:
        pa: the pyarrow module.
        action: the Arrow type of the ``action`` column.
        who: fields between ``step`` and ``action`` that say who acted (multi-agent logs).
        step_fields: fields after the steps' common columns.
        episode_fields: fields after the episodes' common columns.
    """
    steps = pa.schema(
        [
            pa.field("episode", pa.int64()),
            pa.field("step", pa.int64()),
            *who,
            pa.field("action", action),
            pa.field("reward", pa.float64()),
            pa.field("terminated", pa.bool_()),
            pa.field("truncated", pa.bool_()),
            *step_fields,
        ]
    )
    episodes = pa.schema(
        [
            pa.field("episode", pa.int64()),
            pa.field("seed", pa.uint64()),
            pa.field("entropy", pa.list_(pa.uint64())),
            pa.field("return", pa.float64()),
            pa.field("length", pa.int64()),
            pa.field("terminated", pa.bool_()),
            pa.field("truncated", pa.bool_()),
            pa.field("complete", pa.bool_()),
            pa.field("start_time", pa.float64()),
            pa.field("wall_time", pa.float64()),
            *episode_fields,
        ]
    )
    return steps, episodes


def team_schemas(pa: Any, meta: Mapping[str, Any]) -> tuple[pa.Schema, pa.Schema]:
    """The ``steps`` and ``episodes`` schemas of a multi-agent log, from its header (which lists ``agents``)."""
    who = [pa.field("agent", pa.string()), pa.field("policy", pa.string()), pa.field("switched", pa.bool_())]
    returns = [pa.field(f"return.{agent}", pa.float64()) for agent in meta["agents"]]
    action = Column(pa, meta["action_kind"]).type
    return schemas(pa, action, who=who, episode_fields=returns)
