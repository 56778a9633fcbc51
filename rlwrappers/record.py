"""Self-describing logs: :class:`Recorder` writes them, :func:`load` reads them back.

A log is a directory::

    run/
      meta.json          the header: library version, env id, the full wrapper spec, perturbations with
                         their schedules, spaces, start time; seeds and end time are added on close
      steps.parquet      one row per step call
      episodes.parquet   one row per episode

While the run goes on, rows go to ``stream.arrows``, an Arrow IPC stream that gets one record batch per
finished episode (its steps, with the episode's row in the batch's metadata), written straight to the operating
system: one write per episode. A process killed at any point (even by ``kill -9``) leaves every finished
episode readable: :func:`load` reads the stream up to its last complete batch. :meth:`Recorder.close` compacts
the stream into Parquet files that carry the header in their metadata.

Columns of ``steps``: ``episode``, ``step`` (the index of the step call in its episode), ``action`` (as the
agent gave it), ``reward`` (as the agent received it), ``terminated``, ``truncated``, then for every
perturbation ``<label>.active`` and its declared fields ``<label>.<field>`` (null where it did not act).
Columns of ``episodes``: ``episode``, ``seed`` (given to reset, or null), ``entropy`` (what each perturbation
layer seeded from, outermost first), ``return``, ``length``, ``terminated``, ``truncated``, ``complete``
(False for an episode cut short by ``close`` or a new ``reset``), ``start_time``, ``wall_time``, then for
every perturbation what it did at reset: ``<label>.active`` and its declared reset fields.

Multi-agent logs (:class:`rlwrappers.multiagent.ParallelRecorder`) keep this layout with one ``steps`` row per
agent per step, adding ``agent``, ``policy`` and ``switched`` columns, and per-agent ``return.<agent>`` columns
to ``episodes``. Planned additions keep it too: interventions are declared fields, and restorable state
snapshots go to a ``snapshots`` table beside the other two.
"""

from __future__ import annotations

import json
import os
import platform
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from numbers import Integral
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, SupportsFloat

import gymnasium as gym
import numpy as np

from rlwrappers._optional import require
from rlwrappers._version import __version__
from rlwrappers.core import INFO_KEY, layers
from rlwrappers.error import InvalidArgument, InvalidType, LogError

if TYPE_CHECKING:
    import pandas as pd
    import pyarrow as pa

__all__ = ["FORMAT", "FORMAT_VERSION", "Log", "LogStream", "Recorder", "compact", "load", "load_episodes", "schemas"]

FORMAT: Final = "rlwrappers-log"
FORMAT_VERSION: Final = 1
META: Final = "meta.json"
TABLES: Final = ("steps", "episodes")
STREAM: Final = "stream.arrows"
EPISODE_KEY: Final = "episode"


def _arrow_type(pa: Any, kind: str, action_type: Any) -> Any:
    return {
        "bool": pa.bool_(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "float64[]": pa.list_(pa.float64()),
        "action": action_type,
    }[kind]


def _action_kind(space: gym.Space[Any]) -> str:
    if isinstance(space, gym.spaces.Discrete):
        return "int"
    if isinstance(space, (gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)):
        return "int[]"
    if isinstance(space, gym.spaces.Box):
        return "float[]"
    return "text"


class _Column:
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
        pa = self.pa
        if self.kind == "int":
            if None not in values:
                return pa.array(np.asarray(values, dtype=np.int64))
            return pa.array([None if v is None else int(v) for v in values], type=self.type)
        if self.kind == "text":
            return pa.array([None if v is None else repr(v) for v in values], type=self.type)
        dtype = np.int64 if self.kind == "int[]" else np.float64
        return pa.array([None if v is None else np.asarray(v, dtype=dtype).ravel() for v in values], type=self.type)


def _schemas(pa: Any, meta: Mapping[str, Any]) -> tuple[pa.Schema, pa.Schema]:
    """The steps and episodes schemas of a log, from its header."""
    if "agents" in meta:  # a multi-agent log (rlwrappers.multiagent.ParallelRecorder)
        from rlwrappers import multiagent

        return multiagent.schemas(pa, meta)
    action = _Column(pa, meta["action_kind"]).type
    perturbations = meta["perturbations"]

    def declared(key: str) -> list[Any]:
        return [
            pa.field(f"{p['label']}.{f}", _arrow_type(pa, kind, action))
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


class Recorder(gym.Wrapper[Any, Any, Any, Any]):
    """Records every step and episode of an env, with what each perturbation did, to a log directory.

    Put it outermost, so that it sees the agent's actions and the rewards the agent receives, and every
    perturbation layer below it. Rows reach the disk when each episode ends; see the module docstring for
    the layout. ``env.spec`` passes through: a Recorder is not part of the stack that a spec rebuilds.

    Args:
        env: the (perturbed) env.
        path: the log directory; created if missing.
        overwrite: replace an existing log at ``path`` instead of raising.
        metadata: extra JSON-ready entries for the header (an agent name, a run seed, ...).

    Example:
        >>> import tempfile, gymnasium as gym, rlwrappers as rw
        >>> path = tempfile.mkdtemp()
        >>> env = rw.Recorder(rw.wrap(gym.make("CartPole-v1"), "obs_noise(std=0.1)"), path)
        >>> _ = env.reset(seed=0)
        >>> for _ in range(5): _ = env.step(0)
        >>> env.close()
        >>> log = rw.load(path)
        >>> log.steps[["episode", "step", "action", "obs_noise.active"]].shape
        (5, 4)
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        path: str | os.PathLike[str],
        *,
        overwrite: bool = False,
        metadata: Mapping[str, Any] | None = None,
    ):
        self._log = LogStream(path, overwrite=overwrite, metadata=metadata)
        super().__init__(env)
        self.path, self.pa = self._log.path, self._log.pa

        pa = self.pa
        self._layers = list(layers(env))
        self._action = _Column(pa, _action_kind(env.action_space))
        self._step_fields: list[tuple[str, str]] = []
        self._reset_fields: list[tuple[str, str]] = []
        perturbations: list[dict[str, Any]] = []
        for depth, layer in enumerate(self._layers):
            for label, entry, p in zip(layer.labels, layer.entries, layer.perturbations, strict=True):
                self._step_fields += [(label, f) for f in p.step_fields]
                self._reset_fields += [(label, f) for f in p.reset_fields]
                perturbations.append(
                    {
                        "label": label,
                        "layer": depth,
                        "name": p.name,
                        "channel": p.channel,
                        "params": p.params(),
                        "when": str(entry.when),
                        "spec": str(entry),
                        "step_fields": dict(p.step_fields),
                        "reset_fields": dict(p.reset_fields),
                    }
                )
        self._labels = [p["label"] for p in perturbations]
        self._kinds = {(p["label"], f): k for p in perturbations for f, k in p["step_fields"].items()}

        self.meta: dict[str, Any] = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "rlwrappers": __version__,
            "gymnasium": gym.__version__,
            "numpy": np.__version__,
            "python": platform.python_version(),
            "env_id": env.spec.id if env.spec is not None else None,
            "spec": _spec_json(env),
            "stack": str(env),
            "perturbations": perturbations,
            "observation_space": str(env.observation_space),
            "action_space": str(env.action_space),
            "action_kind": self._action.kind,
            "start_time": time.time(),
            "metadata": dict(metadata or {}),
        }
        self._steps, _ = _schemas(pa, self.meta)
        self._log.write_meta(self.meta)
        self._episode = -1
        self._seeds: list[int] = []
        self._open = False
        self._closed = False

    @property
    def spec(self) -> Any:  # type: ignore[override]
        """The spec of the recorded env: a Recorder is not part of the stack a spec rebuilds."""
        return self.env.spec

    # -- the loop ---------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Resets the env; an episode still open is written first, marked incomplete."""
        if self._open:
            self._end_episode(terminated=False, truncated=False)
        if seed is not None and not (isinstance(seed, Integral) and 0 <= seed < 2**64):
            raise InvalidArgument(f"`seed` must be an int in [0, 2**64) to be logged, received {seed!r}")
        obs, info = self.env.reset(seed=seed, options=options)
        self._episode += 1
        if seed is not None:
            self._seeds.append(int(seed))
        self._seed = seed
        self._reset_records = info.get(INFO_KEY)
        self._start = time.time()
        self._rows: list[tuple[Any, SupportsFloat, bool, bool]] = []
        self._events: list[tuple[int, dict[str, Any]]] = []
        self._open = True
        return obs, info

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Steps the env and keeps the row; the episode's rows are written when it ends."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        if self._open:
            rows = self._rows
            rows.append((action.copy() if type(action) is np.ndarray else action, reward, terminated, truncated))
            records = info.get(INFO_KEY)
            if records:
                self._events.append((len(rows) - 1, records))
            if terminated or truncated:
                self._end_episode(terminated=bool(terminated), truncated=bool(truncated))
        return obs, reward, terminated, truncated, info

    def _end_episode(self, *, terminated: bool, truncated: bool) -> None:
        """Writes the episode: its steps as one record batch, its episode row in that batch's metadata."""
        pa = self.pa
        n = len(self._rows)
        actions, rewards, terminations, truncations = zip(*self._rows, strict=True) if n else ((), (), (), ())
        reward_array = np.asarray(rewards, dtype=np.float64)
        columns = [
            pa.array(np.full(n, self._episode, dtype=np.int64)),
            pa.array(np.arange(n, dtype=np.int64)),
            self._action.array(list(actions)),
            pa.array(reward_array),
            pa.array(np.asarray(terminations, dtype=bool)),
            pa.array(np.asarray(truncations, dtype=bool)),
        ]
        values: dict[tuple[str, str], list[Any]] = {key: [None] * n for key in self._step_fields}
        fields = {
            label: [(f, values[label, f]) for (owner, f) in self._step_fields if owner == label]
            for label in self._labels
        }
        acted: dict[str, list[int]] = {label: [] for label in self._labels}
        for t, records in self._events:  # one pass, no per-step numpy calls: this runs for every step
            for label, record in records.items():
                steps = acted.get(label)
                if steps is not None:
                    steps.append(t)
                    for f, column in fields[label]:
                        column[t] = record.get(f)
        for label in self._labels:
            active = np.zeros(n, dtype=bool)
            active[acted[label]] = True
            columns.append(pa.array(active))
        columns += [self._field_array(self._kinds[key], values[key]) for key in self._step_fields]

        reset = self._reset_records or {}
        episode: dict[str, Any] = {
            "episode": self._episode,
            "seed": None if self._seed is None else int(self._seed),
            "entropy": [layer.entropy for layer in self._layers],
            "return": float(reward_array.sum()),
            "length": n,
            "terminated": terminated,
            "truncated": truncated,
            "complete": terminated or truncated,
            "start_time": self._start,
            "wall_time": time.time() - self._start,
        }
        for label in self._labels:
            episode[f"{label}.active"] = label in reset
        for label, f in self._reset_fields:
            episode[f"{label}.{f}"] = _jsonable(reset.get(label, {}).get(f))
        self._log.write(pa.record_batch(columns, schema=self._steps), episode)
        self._open = False

    def _field_array(self, kind: str, values: list[Any]) -> Any:
        if kind == "action":
            return self._action.array(values)
        if kind == "float64[]":
            values = [None if v is None else np.asarray(v, np.float64).ravel() for v in values]
        return self.pa.array(values, type=_arrow_type(self.pa, kind, None))

    # -- closing ----------------------------------------------------------------------------------------
    def close(self) -> None:
        """Writes an open episode (marked incomplete), compacts the log to Parquet, then closes the env."""
        if not self._closed:
            self._closed = True
            if self._open:
                self._end_episode(terminated=False, truncated=False)
            self._log.close(self.meta, episodes=self._episode + 1, seeds=self._seeds)
        super().close()


class LogStream:
    """A log directory being written: its header, one record batch per finished episode, Parquet at the end.

    Both recorders write through it (:class:`Recorder`, :class:`rlwrappers.multiagent.ParallelRecorder`). It
    checks ``path`` and ``metadata`` and clears an earlier log there (only with ``overwrite``) when built.
    Each batch goes straight to the operating system, so a killed process leaves every finished episode
    readable; :meth:`close` writes the final header and compacts the stream (:func:`compact`).
    """

    def __init__(self, path: str | os.PathLike[str], *, overwrite: bool, metadata: Mapping[str, Any] | None):
        if not isinstance(path, (str, os.PathLike)):
            raise InvalidType(f"`path` must be a directory path, received {path!r}")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidType(f"`metadata` must be a dict, received {metadata!r}")
        self.pa = require("pyarrow", purpose="writing logs")
        require("pyarrow.ipc")
        self.path = Path(path)
        if (self.path / META).exists() and not overwrite:
            raise LogError(f"`path` {str(self.path)!r} already holds a log; pass overwrite=True or choose another path")
        self.path.mkdir(parents=True, exist_ok=True)
        for name in (META, STREAM, *(f"{t}.parquet" for t in TABLES)):
            (self.path / name).unlink(missing_ok=True)
        self._writer: Any = None
        self._sink: Any = None

    def write_meta(self, meta: Mapping[str, Any]) -> None:
        """Replaces the header in one step: a reader never sees half of it."""
        tmp = self.path / f"{META}.tmp"
        tmp.write_text(json.dumps(meta, indent=2, default=str))
        tmp.replace(self.path / META)

    def write(self, batch: Any, episode: Mapping[str, Any]) -> None:
        """Appends one episode: its steps as ``batch``, its episode row in the batch's metadata."""
        if self._writer is None:
            self._sink = self.pa.OSFile(str(self.path / STREAM), "wb")
            self._writer = self.pa.ipc.new_stream(self._sink, batch.schema)
        self._writer.write_batch(batch, custom_metadata={EPISODE_KEY: json.dumps(episode)})
        self._sink.flush()

    def close(self, meta: dict[str, Any], *, episodes: int, seeds: list[int]) -> None:
        """Closes the stream, adds the end time, episode count and seeds to ``meta``, and compacts the log."""
        if self._writer is not None:
            self._writer.close()
            self._sink.close()
        meta.update(end_time=time.time(), episodes=episodes, seeds=seeds)
        self.write_meta(meta)
        compact(self.path)


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _spec_json(env: gym.Env[Any, Any]) -> Any:
    spec = env.spec
    if spec is None:
        return None
    try:
        return json.loads(spec.to_json())
    except (gym.error.Error, TypeError, ValueError):
        return None


def _read_stream(path: Path) -> tuple[pa.Table, list[dict[str, Any]]] | None:
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


def _tables(root: Path) -> dict[str, pa.Table] | None:
    """The steps and episodes tables of a log still held in its stream."""
    pa = require("pyarrow")
    read = _read_stream(root / STREAM)
    if read is None:
        return None
    steps, episodes = read
    _, schema = _schemas(pa, json.loads((root / META).read_text()))
    return {"steps": steps, "episodes": pa.Table.from_pylist(episodes, schema=schema)}


def compact(path: str | os.PathLike[str]) -> None:
    """Rewrites a log's stream as ``steps.parquet`` and ``episodes.parquet``, with the header in their metadata.

    :meth:`Recorder.close` calls it; call it yourself to tidy up the log of a process that was killed.
    """
    pq = require("pyarrow.parquet", purpose="writing logs")
    root = Path(path)
    tables = _tables(root)
    if tables is None:
        return
    header = (root / META).read_bytes()
    for name, table in tables.items():
        tmp = root / f"{name}.parquet.tmp"
        pq.write_table(table.replace_schema_metadata({b"rlwrappers": header}), tmp)
        tmp.replace(root / f"{name}.parquet")
    (root / STREAM).unlink()


@dataclass(frozen=True)
class Log:
    """A log read back: ``steps`` and ``episodes`` (pandas DataFrames) and ``meta`` (the header dict)."""

    steps: pd.DataFrame
    episodes: pd.DataFrame
    meta: dict[str, Any]
    path: Path


def load(path: str | os.PathLike[str]) -> Log:
    """Reads a log directory written by :class:`Recorder`, finished or not.

    A log whose process was killed is read from its Arrow streams up to the last finished episode.

    Raises:
        LogError: ``path`` holds no rlwrappers log.
    """
    root = Path(path)
    meta = _read_meta(root)
    frames = _frames(root, meta, TABLES)
    if "seeds" not in meta and "seed" in frames["episodes"]:
        meta["seeds"] = [int(s) for s in frames["episodes"]["seed"].dropna()]
    return Log(frames["steps"], frames["episodes"], meta, root)


def load_episodes(path: str | os.PathLike[str]) -> pd.DataFrame:
    """The ``episodes`` table of a log alone: what return metrics need, without reading the steps."""
    root = Path(path)
    return _frames(root, _read_meta(root), ("episodes",))["episodes"]


def _read_meta(root: Path) -> dict[str, Any]:
    meta_path = root / META
    if not meta_path.exists():
        raise LogError(f"no rlwrappers log at {str(root)!r}: {META} is missing")
    meta: dict[str, Any] = json.loads(meta_path.read_text())
    if meta.get("format") != FORMAT:
        raise LogError(f"{str(meta_path)!r} is not an rlwrappers log header (format {meta.get('format')!r})")
    return meta


def _frames(root: Path, meta: dict[str, Any], names: tuple[str, ...]) -> dict[str, pd.DataFrame]:
    """The tables ``names`` of a log as DataFrames, from its Parquet files or, unfinished, its stream."""
    pd = require("pandas", purpose="reading logs")
    pq = require("pyarrow.parquet", purpose="reading logs")
    pa = require("pyarrow")
    nullable = {pa.int64(): pd.Int64Dtype(), pa.uint64(): pd.UInt64Dtype(), pa.bool_(): pd.BooleanDtype()}.get
    if (root / "steps.parquet").exists():
        tables = {name: pq.read_table(root / f"{name}.parquet") for name in names}
    else:
        empty = dict(zip(TABLES, (schema.empty_table() for schema in _schemas(pa, meta)), strict=True))
        tables = _tables(root) or empty
    return {name: tables[name].to_pandas(types_mapper=nullable) for name in names}
