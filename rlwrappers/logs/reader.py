"""Reading logs back: :func:`read_log` gives a :class:`Log` of pandas tables, finished or not.

A log whose writer was killed is read from its Arrow stream up to the last finished episode. Multi-agent logs
read the same way; :func:`team_returns` and :func:`who_acted` read their per-agent columns.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from rlwrappers._optional import require
from rlwrappers.error import InvalidArgument, LogError
from rlwrappers.logs.schema import EPISODE_KEY, FORMAT, META, STREAM, TABLES, log_schemas

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

__all__ = [
    "Log",
    "episode_returns",
    "frames",
    "read_episodes",
    "read_log",
    "read_meta",
    "read_stream",
    "stream_tables",
    "team_returns",
    "who_acted",
]


def read_stream(path: Path) -> tuple[pa.Table, list[dict[str, Any]]] | None:
    """The steps and episode rows of every complete batch of a log's stream.

    A torn tail, left by a killed writer, is dropped: every episode written before it is kept.
    """
    pa = require("pyarrow", purpose="reading logs")
    ipc = require("pyarrow.ipc")
    if not path.exists() or path.stat().st_size == 0:
        return None
    batches, episodes = [], []
    with pa.OSFile(str(path), "rb") as source:
        try:
            reader = ipc.open_stream(source)
        except pa.ArrowInvalid:
            return None
        while True:
            try:
                item = reader.read_next_batch_with_custom_metadata()
            except (StopIteration, pa.ArrowInvalid, OSError):
                break
            batches.append(item.batch)
            episodes.append(json.loads(item.custom_metadata[EPISODE_KEY.encode()]))
        return pa.Table.from_batches(batches, schema=reader.schema), episodes


def stream_tables(root: Path) -> dict[str, pa.Table] | None:
    """The steps and episodes tables of a log still held in its stream."""
    pa = require("pyarrow")
    read = read_stream(root / STREAM)
    if read is None:
        return None
    steps, episodes = read
    _, schema = log_schemas(pa, json.loads((root / META).read_text()))
    return {"steps": steps, "episodes": pa.Table.from_pylist(episodes, schema=schema)}


@dataclass(frozen=True)
class Log:
    """A log read back: ``steps`` and ``episodes`` (pandas DataFrames) and ``meta`` (the header dict)."""

    steps: pd.DataFrame
    episodes: pd.DataFrame
    meta: dict[str, Any]
    path: Path


def read_log(path: str | os.PathLike[str]) -> Log:
    """Reads a log directory written by :class:`~rlwrappers.logs.writer.Recorder`, finished or not.

    A log whose process was killed is read from its Arrow streams up to the last finished episode.

    Raises:
        LogError: ``path`` holds no rlwrappers log.
    """
    root = Path(path)
    meta = read_meta(root)
    tables = frames(root, meta, TABLES)
    if "seeds" not in meta and "seed" in tables["episodes"]:
        meta["seeds"] = [int(s) for s in tables["episodes"]["seed"].dropna()]
    return Log(tables["steps"], tables["episodes"], meta, root)


def read_episodes(path: str | os.PathLike[str]) -> pd.DataFrame:
    """The ``episodes`` table of a log alone: what return metrics need, without reading the steps."""
    root = Path(path)
    return frames(root, read_meta(root), ("episodes",))["episodes"]


def read_meta(root: Path) -> dict[str, Any]:
    """The header of the log at ``root``; raises :class:`~rlwrappers.error.LogError` if it holds none."""
    meta_path = root / META
    if not meta_path.exists():
        raise LogError(f"no rlwrappers log at {str(root)!r}: {META} is missing")
    meta: dict[str, Any] = json.loads(meta_path.read_text())
    if meta.get("format") != FORMAT:
        raise LogError(f"{str(meta_path)!r} is not an rlwrappers log header (format {meta.get('format')!r})")
    return meta


def frames(root: Path, meta: dict[str, Any], names: tuple[str, ...]) -> dict[str, pd.DataFrame]:
    """The tables ``names`` of a log as DataFrames, from its stream while there is one, else its Parquet files.

    The writer deletes the stream only after both Parquet files are in place, so the stream is whole whenever
    it exists: a log killed at any point of its compaction reads as it was written.
    """
    pd = require("pandas", purpose="reading logs")
    pq = require("pyarrow.parquet", purpose="reading logs")
    pa = require("pyarrow")
    nullable = {pa.int64(): pd.Int64Dtype(), pa.uint64(): pd.UInt64Dtype(), pa.bool_(): pd.BooleanDtype()}.get
    if (root / STREAM).exists() or not (root / "steps.parquet").exists():
        empty = dict(zip(TABLES, (schema.empty_table() for schema in log_schemas(pa, meta)), strict=True))
        tables = stream_tables(root) or empty
    else:
        tables = {name: pq.read_table(root / f"{name}.parquet") for name in names}
    return {name: tables[name].to_pandas(types_mapper=nullable) for name in names}


def episode_returns(log: Log, *, complete_only: bool = True) -> NDArray[np.float64]:
    """The returns of a log's episodes, in order; episodes cut short (``complete`` False) are left out.

    Raises:
        LogError: the log holds no (complete) episode, so no metric can be computed from it.
    """
    episodes = log.episodes
    if complete_only and len(episodes):
        episodes = episodes[episodes["complete"].astype(bool)]
    if len(episodes) == 0:
        raise LogError(f"the log at {str(log.path)!r} holds no complete episode")
    return episodes["return"].to_numpy(dtype=np.float64)


# -- multi-agent logs ----------------------------------------------------------------------------------------
def _meta(root: Path) -> dict[str, Any]:
    meta = read_meta(root)
    if "agents" not in meta:
        raise LogError(f"{str(root)!r} holds a single-agent log: it has no `agents` in its header")
    return meta


def _frame(path: str | os.PathLike[str] | Log, table: str) -> tuple[pd.DataFrame, dict[str, Any]]:
    if isinstance(path, Log):
        if "agents" not in path.meta:
            raise LogError(f"{str(path.path)!r} holds a single-agent log: it has no `agents` in its header")
        return getattr(path, table), path.meta
    root = Path(path)
    meta = _meta(root)
    return frames(root, meta, (table,))[table], meta


def team_returns(log: str | os.PathLike[str] | Log) -> pd.DataFrame:
    """Per-agent and team returns of a multi-agent log, one row per episode (indexed by ``episode``).

    Columns: one per agent (its return: the sum of its rewards), then ``team`` (the sum over agents). Reads
    finished logs and logs of runs still going or killed.
    """
    episodes, meta = _frame(log, "episodes")
    agents = list(meta["agents"])
    out = episodes[[f"return.{a}" for a in agents]].astype(np.float64)
    out.columns = agents
    out.insert(len(agents), "team", episodes["return"].astype(np.float64).to_numpy())
    out.index = episodes["episode"].astype(np.int64).to_numpy()
    out.index.name = "episode"
    return out


def who_acted(log: str | os.PathLike[str] | Log, episode: int = 0) -> pd.DataFrame:
    """The policy that chose each agent's action at each step of one episode: rows are steps, columns agents."""
    steps, meta = _frame(log, "steps")
    rows = steps[steps["episode"] == episode]
    if rows.empty:
        raise InvalidArgument(f"`episode` {episode!r} is not in the log")
    table = rows.pivot(index="step", columns="agent", values="policy")
    table = table[[a for a in meta["agents"] if a in table.columns]]
    table.columns.name = None
    return table
