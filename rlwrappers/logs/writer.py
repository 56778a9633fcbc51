"""Writing logs: :class:`Recorder` records an env's steps and episodes, with what each perturbation did.

Rows reach the disk when each episode ends, as one record batch of ``stream.arrows`` written straight to the
operating system, so a process killed at any point (even by ``kill -9``) leaves every finished episode
readable (:func:`rlwrappers.logs.read_log` reads the stream up to its last complete batch).
:meth:`Recorder.close` compacts the stream into Parquet files that carry the header in their metadata. The
layout is :mod:`rlwrappers.logs.schema`'s.

A folder that cannot grow (a full disk, a file-size limit, a spent quota) stops the log: the write raises a
:class:`~rlwrappers.error.LogError` naming the folder and the cause (:mod:`rlwrappers.logs.space`), every episode
written before reads back whole, and the log stays unfinished (its stream is never compacted, and its header
has no ``end_time``). Closing it then only gives the folder up.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import platform
import time
import zlib
from collections.abc import Mapping
from numbers import Integral
from pathlib import Path
from typing import Any, SupportsFloat

import gymnasium as gym
import numpy as np

from rlwrappers._optional import require
from rlwrappers._version import __version__
from rlwrappers.core import INFO_KEY, layers
from rlwrappers.error import InvalidArgument, InvalidType, LogError
from rlwrappers.logs.lock import FolderLock
from rlwrappers.logs.reader import stream_tables
from rlwrappers.logs.schema import (
    CHECKSUM_KEY,
    EPISODE_CHECKSUM_KEY,
    EPISODE_KEY,
    FORMAT,
    FORMAT_VERSION,
    META,
    STREAM,
    TABLES,
    Column,
    action_kind,
    arrow_type,
    log_schemas,
)
from rlwrappers.logs.space import replace_file, writing

__all__ = ["LogStream", "Recorder", "compact"]


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
        >>> log = rw.read_log(path)
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
        self._action = Column(pa, action_kind(env.action_space))
        self._step_fields: list[tuple[str, str]] = []
        self._reset_fields: list[tuple[str, str]] = []
        perturbations: list[dict[str, Any]] = []
        for depth, layer in enumerate(self._layers):
            for label, entry, p in zip(layer.labels, layer.entries, layer.perturbations, strict=True):
                step_fields = entry.bound_step_fields(p)
                self._step_fields += [(label, f) for f in step_fields]
                self._reset_fields += [(label, f) for f in entry.reset_fields]
                perturbations.append(
                    {
                        "label": label,
                        "layer": depth,
                        "name": p.name,
                        "channel": p.channel,
                        "params": p.params(),
                        "when": str(entry.when),
                        "spec": str(entry),
                        "step_fields": step_fields,
                        "reset_fields": entry.reset_fields,
                    }
                )
                if p.chosen is not None:  # the entries of a Dict or Tuple observation it acts on
                    perturbations[-1]["keys"] = list(p.chosen)
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
        self._steps, _ = log_schemas(pa, self.meta)
        self._log.start(self.meta)
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
            self._log.write(*self._end_episode(terminated=False, truncated=False))
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
                self._log.write(*self._end_episode(terminated=bool(terminated), truncated=bool(truncated)))
        return obs, reward, terminated, truncated, info

    def _end_episode(self, *, terminated: bool, truncated: bool) -> tuple[Any, dict[str, Any]]:
        """Ends the episode: its steps as one record batch, and its episode row, for the log to write."""
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
        for label in self._labels:  # a parameter drawn at every reset is reported while inactive too
            episode[f"{label}.active"] = bool(reset.get(label, {}).get("active", False))
        for label, f in self._reset_fields:
            episode[f"{label}.{f}"] = _jsonable(reset.get(label, {}).get(f))
        self._open = False
        return pa.record_batch(columns, schema=self._steps), episode

    def _field_array(self, kind: str, values: list[Any]) -> Any:
        if kind == "action":
            return self._action.array(values)
        if kind == "float64[]":
            values = [None if v is None else np.asarray(v, np.float64).ravel() for v in values]
        return self.pa.array(values, type=arrow_type(self.pa, kind, None))

    # -- closing ----------------------------------------------------------------------------------------
    def close(self) -> None:
        """Writes an open episode (marked incomplete), compacts the log to Parquet, then closes the env.

        After a write failed, it only gives the folder up and closes the env: the log stays unfinished.
        """
        try:
            if not self._closed:
                self._closed = True
                last = self._end_episode(terminated=False, truncated=False) if self._open else None
                self._log.close(self.meta, episodes=self._episode + 1, seeds=self._seeds, last=last)
        finally:
            super().close()


class LogStream:
    """A log directory being written: its header, one record batch per finished episode, Parquet at the end.

    Both recorders write through it (:class:`Recorder`, :class:`rlwrappers.logs.parallel.ParallelRecorder`). It
    checks ``path`` and ``metadata``, takes the folder's lock (:class:`~rlwrappers.logs.lock.FolderLock`: a
    second writer gets a :class:`~rlwrappers.error.LogError` naming this one) and clears an earlier log there
    (only with ``overwrite``) when built. Each batch goes straight to the operating system, so a killed process
    leaves every finished episode readable; :meth:`close` writes the final header, compacts the stream
    (:func:`compact`) and releases the lock. The stream is deleted last, and while it exists readers take it
    over the Parquet files, so a kill at any point of :meth:`close` loses nothing.
    """

    def __init__(self, path: str | os.PathLike[str], *, overwrite: bool, metadata: Mapping[str, Any] | None):
        if not isinstance(path, (str, os.PathLike)):
            raise InvalidType(f"`path` must be a directory path, received {path!r}")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise InvalidType(f"`metadata` must be a dict, received {metadata!r}")
        self.pa = require("pyarrow", purpose="writing logs")
        require("pyarrow.ipc")
        self.path = Path(path)
        with writing(self.path, "the log's folder"):
            self.path.mkdir(parents=True, exist_ok=True)
        self._lock = FolderLock(self.path)
        if (self.path / META).exists() and not overwrite:
            self._lock.release()
            raise LogError(f"`path` {str(self.path)!r} already holds a log; pass overwrite=True or choose another path")
        for name in (META, STREAM, *(f"{t}.parquet" for t in TABLES)):
            (self.path / name).unlink(missing_ok=True)
        self._writer: Any = None
        self._sink: Any = None
        self._written = 0  # episodes in the stream
        #: Why the log stopped: the error of a write that failed, after which nothing more is written.
        self.failure: LogError | None = None

    def start(self, meta: Mapping[str, Any]) -> None:
        """Writes the first header; gives the folder up if the folder cannot take it."""
        try:
            self.write_meta(meta)
        except BaseException:
            self._lock.release()
            raise

    def write_meta(self, meta: Mapping[str, Any]) -> None:
        """Replaces the header in one step: a reader never sees half of it."""
        text = json.dumps(meta, indent=2, default=str)
        replace_file(self.path / META, "the log's header", lambda tmp: tmp.write_text(text))

    def write(self, batch: Any, episode: Mapping[str, Any]) -> None:
        """Appends one episode: its steps as ``batch``, its episode row and both their checksums in its metadata.

        Raises:
            LogError: the folder cannot take it (or an earlier episode), and the log stops.
        """
        if self.failure is not None:
            raise LogError(
                self.failure.errno, f"{self.failure.strerror}; the log stopped there and writes no more episodes"
            )
        row = json.dumps(episode)
        metadata = {
            EPISODE_KEY: row,
            EPISODE_CHECKSUM_KEY: str(zlib.crc32(row.encode())),
            CHECKSUM_KEY: str(zlib.crc32(batch.serialize())),
        }
        kept = {0: "the log holds no episode", 1: "the episode before it reads back whole"}.get(
            self._written, f"the {self._written} episodes before it read back whole"
        )
        try:
            with writing(self.path, f"episode {episode['episode']}", then=f"{kept}, and the log stays unfinished"):
                if self._writer is None:
                    self._sink = self.pa.OSFile(str(self.path / STREAM), "wb")
                    self._writer = self.pa.ipc.new_stream(self._sink, batch.schema)
                self._writer.write_batch(batch, custom_metadata=metadata)
                self._sink.flush()
        except LogError as error:
            self._stop(error)
            raise
        self._written += 1

    def _stop(self, error: LogError) -> None:
        """Stops the log after ``error``, giving the folder up: nothing more will be written there.

        The stream is closed as it is: a torn tail is dropped on reading.
        """
        self.failure = error
        with contextlib.suppress(OSError):  # the sink may hold bytes it cannot write: they are dropped
            if self._sink is not None:
                self._sink.close()
        self._writer = self._sink = None
        self._lock.release()

    def close(
        self, meta: dict[str, Any], *, episodes: int, seeds: list[int], last: tuple[Any, dict[str, Any]] | None = None
    ) -> None:
        """Ends the log: compacts it, with the end time, episode count and seeds in ``meta``; gives the folder up.

        The ``last`` episode (a batch and its row), if given, is written first. A log whose write failed is left
        as it is, unfinished (``last`` is dropped): this only gives the folder up.

        Raises:
            LogError: the folder cannot take the last episode, the end of the stream, the header or the Parquet
                files. Every episode written before reads back whole then, and :func:`compact` finishes a log
                whose stream was whole once there is room.
        """
        try:
            if self.failure is not None:
                return
            if last is not None:
                self.write(*last)
            if self._writer is not None:
                with writing(self.path, "the end of the log's stream"):
                    try:
                        self._writer.close()
                    finally:
                        self._sink.close()
            meta.update(end_time=time.time(), episodes=episodes, seeds=seeds)
            self.write_meta(meta)
            _compact(self.path)
        finally:
            self._lock.release()


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


def compact(path: str | os.PathLike[str]) -> None:
    """Rewrites a log's stream as ``steps.parquet`` and ``episodes.parquet``, with the header in their metadata.

    :meth:`Recorder.close` does it; call it yourself to tidy up the log of a process that was killed (it also
    removes the files that process left half-written).

    Raises:
        LogError: a writer still holds the folder.
    """
    root = Path(path)
    if not (root / META).exists():
        raise LogError(f"no rlwrappers log at {str(root)!r}: {META} is missing")
    lock = FolderLock(root)
    try:
        _compact(root)
        for leftover in root.glob("*.tmp"):  # a killed writer's unfinished replacements
            leftover.unlink()
    finally:
        lock.release()


def _compact(root: Path) -> None:
    """Writes the Parquet files, each in one step, then deletes the stream: the stream stays whole until then."""
    pq = require("pyarrow.parquet", purpose="writing logs")
    tables = stream_tables(root)
    if tables is None:
        return
    header = (root / META).read_bytes()
    for name, table in tables.items():
        write = functools.partial(
            pq.write_table, table.replace_schema_metadata({b"rlwrappers": header}), write_page_checksum=True
        )
        replace_file(root / f"{name}.parquet", f"the log's {name}.parquet", write)
    (root / STREAM).unlink()
