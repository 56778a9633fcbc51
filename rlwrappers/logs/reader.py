"""Reading logs back: :func:`read_log` gives a :class:`Log` of pandas tables, finished or not.

A log whose writer was killed is read from its Arrow stream up to the last finished episode. Multi-agent logs
read the same way; :func:`team_returns` and :func:`who_acted` read their per-agent columns.

A damaged log never reads as data: an unreadable header, a damaged Parquet file (their pages carry
checksums), a stream whose schema cannot be read, or tables that break the log's invariants (episode ids in
order, each episode's steps numbered from 0, as many as its length) raise a
:class:`~rlwrappers.error.LogError` naming the file and what is wrong. A stream is read up to its first
unreadable batch, which keeps every complete episode before the damage: a killed writer leaves such a tail.
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from rlwrappers._optional import require
from rlwrappers.error import InvalidArgument, LogError
from rlwrappers.logs.schema import (
    CHECKSUM_KEY,
    EPISODE_CHECKSUM_KEY,
    EPISODE_KEY,
    FORMAT,
    META,
    STREAM,
    TABLES,
    log_schemas,
)

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
    """The steps and episode rows of a log's stream, up to its first torn or damaged batch.

    A torn tail, left by a killed writer, is dropped: every episode written before it is kept. A batch is
    damaged when either checksum (of its steps, of its episode row) fails or its steps do not match its row.
    """
    pa = require("pyarrow", purpose="reading logs")
    ipc = require("pyarrow.ipc")
    if not path.exists() or path.stat().st_size == 0:
        return None
    batches, episodes = [], []
    with pa.OSFile(str(path), "rb") as source:
        try:
            reader = ipc.open_stream(source)
        except (pa.ArrowException, OSError) as exc:
            raise LogError(f"{str(path)!r} is damaged: its schema cannot be read ({_first_line(exc)})") from None
        while True:
            try:
                item = reader.read_next_batch_with_custom_metadata()
                row = item.custom_metadata[EPISODE_KEY.encode()]
                episode = json.loads(row)
                damaged = _fails_checksum(item.custom_metadata, CHECKSUM_KEY, item.batch.serialize())
                damaged |= _fails_checksum(item.custom_metadata, EPISODE_CHECKSUM_KEY, row)
            except StopIteration:
                break
            except (pa.ArrowException, OSError, KeyError, TypeError, ValueError):
                break  # a torn or damaged batch: the episodes before it are whole
            if damaged or not _fits(item.batch, episode):
                break
            batches.append(item.batch)
            episodes.append(episode)
        return pa.Table.from_batches(batches, schema=reader.schema), episodes


def _fails_checksum(metadata: Any, key: str, data: Any) -> bool:
    """Whether a batch carries a checksum under ``key`` that ``data`` does not match."""
    checksum = metadata.get(key.encode())
    return checksum is not None and int(checksum) != zlib.crc32(data)


def _fits(batch: Any, episode: Any) -> bool:
    """Whether a stream batch holds the steps of its episode row: one episode, numbered from 0, all of them."""
    if not isinstance(episode, dict) or not isinstance(episode.get("episode"), int):
        return False
    names = batch.schema.names
    if "episode" not in names or ("agent" not in names and "step" not in names):
        return False
    if "agent" in names:  # multi-agent steps: one row per agent, checked by episode only
        return bool(np.all(batch.column("episode").to_numpy(zero_copy_only=False) == episode["episode"]))
    ids = batch.column("episode").to_numpy(zero_copy_only=False)
    steps = batch.column("step").to_numpy(zero_copy_only=False)
    return bool(
        len(steps) == episode.get("length")
        and np.all(ids == episode["episode"])
        and np.array_equal(steps, np.arange(len(steps)))
    )


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


def stream_tables(root: Path) -> dict[str, pa.Table] | None:
    """The steps and episodes tables of a log still held in its stream."""
    pa = require("pyarrow")
    read = read_stream(root / STREAM)
    if read is None:
        return None
    steps, episodes = read
    steps_schema, schema = log_schemas(pa, read_meta(root))
    if steps.schema.names != steps_schema.names:
        raise LogError(f"{str(root / STREAM)!r} is damaged: its columns are not its header's")
    try:
        return {"steps": steps, "episodes": pa.Table.from_pylist(episodes, schema=schema)}
    except (pa.ArrowException, TypeError, ValueError) as exc:
        raise LogError(f"{str(root / STREAM)!r} is damaged: its episode rows do not fit the header ({exc})") from None


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
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LogError(f"{str(meta_path)!r} is damaged: not a JSON header ({_first_line(exc)})") from None
    if not isinstance(meta, dict):
        raise LogError(f"{str(meta_path)!r} is damaged: the header is a {type(meta).__name__}, not an object")
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
    compacted = any((root / f"{name}.parquet").exists() for name in TABLES)
    if (root / STREAM).exists() or not compacted:
        if not compacted and not (root / STREAM).exists() and meta.get("episodes"):
            raise LogError(f"the log at {str(root)!r} is damaged: it was closed with episodes, but holds no table")
        empty = dict(zip(TABLES, (schema.empty_table() for schema in log_schemas(pa, meta)), strict=True))
        tables = stream_tables(root) or empty
    else:
        tables = {}
        for name in names:
            file = root / f"{name}.parquet"
            try:
                tables[name] = pq.read_table(file, page_checksum_verification=True)
            except (pa.ArrowException, OSError) as exc:
                raise LogError(f"{str(file)!r} is damaged or missing ({_first_line(exc)})") from None
        expected = dict(zip(TABLES, log_schemas(pa, meta), strict=True))
        for name in names:
            if tables[name].schema.names != expected[name].names:
                raise LogError(f"{str(root / f'{name}.parquet')!r} is damaged: its columns are not its header's")
    _check_invariants(root, {name: tables[name] for name in names})
    return {name: tables[name].to_pandas(types_mapper=nullable) for name in names}


def _check_invariants(root: Path, tables: dict[str, pa.Table]) -> None:
    """Refuses tables that break what every log holds, so that damage never reads as data."""
    episodes, steps = tables.get("episodes"), tables.get("steps")

    def column(table: pa.Table, name: str) -> NDArray[np.int64]:
        values = table.column(name)
        if values.null_count:
            raise LogError(f"the log at {str(root)!r} is damaged: its `{name}` column has gaps")
        return np.asarray(values.to_numpy(), dtype=np.int64)

    if episodes is not None and episodes.num_rows:
        ids = column(episodes, "episode")
        if ids.min() < 0 or np.any(np.diff(ids) <= 0):
            raise LogError(f"the log at {str(root)!r} is damaged: its episode ids are not increasing from 0")
    if steps is None or not steps.num_rows or "agent" in steps.schema.names:
        return
    ids = column(steps, "episode")
    numbers = column(steps, "step")
    starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
    expected = np.arange(len(numbers)) - np.repeat(starts, np.diff(np.r_[starts, len(numbers)]))
    if np.any(np.diff(ids) < 0) or not np.array_equal(numbers, expected):
        raise LogError(f"the log at {str(root)!r} is damaged: its steps are not numbered from 0 in each episode")
    if episodes is not None:
        listed = column(episodes, "episode")
        lengths = column(episodes, "length")
        counted = np.zeros_like(lengths)
        found, counts = np.unique(ids, return_counts=True)
        where = np.searchsorted(listed, found)
        known = (where < len(listed)) & (listed[np.minimum(where, len(listed) - 1)] == found)
        counted[where[known]] = counts[known]
        wrong = np.flatnonzero(counted != lengths)
        if not known.all() or len(wrong):
            at = int(found[~known][0]) if not known.all() else int(listed[wrong[0]])
            raise LogError(f"the log at {str(root)!r} is damaged: the steps of episode {at} do not match its length")


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
