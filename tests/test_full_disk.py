"""A folder that cannot grow loses nothing: the writers stop with a typed error, and an evaluation resumes.

Three ways a folder stops growing, each for real where the machine allows:

- a file-size limit (``EFBIG``): ``RLIMIT_FSIZE`` set in a subprocess, then raised again in that process to give
  the room back;
- a full disk (``ENOSPC``): a small tmpfs mounted for the test (skipped where mounting is not allowed), then
  remounted larger;
- a spent quota (``EDQUOT``), and ``ENOSPC`` again: the log stream's file made to refuse writes past a budget, after
  writing what fits, as a filling disk does.

Each time the writer raises a ``LogError`` naming the folder and the cause, every episode written before the
error reads back exactly as the same run writes it on a disk with room, the log stays unfinished, its folder is
free again, and an evaluation run again with the same arguments plays the runs left and ends as one that never
failed.
"""

from __future__ import annotations

import errno
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pandas as pd
import pyarrow
import pytest
from helpers_logs import TIME_COLUMNS, assert_same_logs

import rlwrappers as rw
from rlwrappers.error import LogError
from rlwrappers.logs.lock import FolderLock
from rlwrappers.logs.schema import STREAM
from rlwrappers.studies import Execution

AGENT, ENV_ID = "ppo-CartPole-v1", "CartPole-v1"
SHIFTS = {"obs": "obs_noise(std=0.3)", "action": "action_noise(p=0.3)"}

RECORD = """
import json, resource, sys
import gymnasium as gym
import rlwrappers as rw
from rlwrappers.error import LogError
from rlwrappers.logs.lock import FolderLock

folder, limit = sys.argv[1], int(sys.argv[2])
env = rw.Recorder(rw.wrap(gym.make("CartPole-v1"), "obs_noise(std=0.1)", "action_noise(p=0.1)"), folder)
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
played, caught = 0, None
try:
    for seed in range(1000):
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            obs, _, terminated, truncated, _ = env.step(int(obs[2] > 0))
            done = terminated or truncated
        played += 1
except LogError as error:
    caught = error
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))  # the room comes back
env.close()  # gives the folder up, and leaves the log as it is
FolderLock(env.path).release()  # the folder is free in this process too
print(json.dumps({"errno": caught and caught.errno, "message": str(caught), "played": played}))
"""

EVALUATE = """
import json, multiprocessing, resource, sys
import rlwrappers as rw
from rlwrappers.error import LogError
from rlwrappers.studies import Execution

out, limit, shifts = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
execution = Execution(workers=2, progress=False)
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
try:
    rw.evaluate("ppo-CartPole-v1", "CartPole-v1", shifts, episodes=3, seeds=2, out=out, execution=execution)
except LogError as error:
    caught = error
alive = [p.pid for p in multiprocessing.active_children()]  # the other worker ended its run before the error came
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))  # the room comes back: the same evaluation again
rw.evaluate("ppo-CartPole-v1", "CartPole-v1", shifts, episodes=3, seeds=2, out=out, execution=execution)
print(json.dumps({"errno": caught.errno, "message": str(caught), "alive": alive}))
"""


def record(folder: Path, episodes: int) -> Path:
    """What the RECORD script writes with room enough, for ``episodes`` episodes."""
    env = rw.Recorder(rw.wrap(gym.make("CartPole-v1"), "obs_noise(std=0.1)", "action_noise(p=0.1)"), folder)
    for seed in range(episodes):
        obs, _ = env.reset(seed=seed)
        done = False
        while not done:
            obs, _, terminated, truncated, _ = env.step(int(obs[2] > 0))
            done = terminated or truncated
    env.close()
    return folder


def evaluate(out: Path) -> Any:
    return rw.evaluate(
        AGENT, ENV_ID, SHIFTS, episodes=3, seeds=2, out=out, execution=Execution(workers=1, progress=False)
    )


def assert_unfinished(folder: Path) -> None:
    """A log stopped by its folder: read from its stream, never compacted, its header without an end time."""
    assert (folder / STREAM).exists() and not list(folder.glob("*.parquet*"))
    assert "end_time" not in rw.read_log(folder).meta
    FolderLock(folder).release()  # nobody holds it


def assert_first_episodes(folder: Path, reference: Path, episodes: int) -> None:
    """The log at ``folder`` holds exactly the first ``episodes`` episodes of the one at ``reference``."""
    log, full = rw.read_log(folder), rw.read_log(reference)
    assert len(log.episodes) == episodes
    pd.testing.assert_frame_equal(log.steps, full.steps[full.steps["episode"] < episodes], check_exact=True)
    pd.testing.assert_frame_equal(
        log.episodes.drop(columns=TIME_COLUMNS), full.episodes.drop(columns=TIME_COLUMNS)[:episodes], check_exact=True
    )


@pytest.fixture(scope="module")
def clean_evaluation(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The evaluation, played on a disk with room."""
    return evaluate(tmp_path_factory.mktemp("clean") / "evaluation")


def run(script: str, *args: object) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", script, *map(str, args)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


# -- a file-size limit ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_recorder_past_the_file_size_limit_keeps_every_episode_before(tmp_path: Path) -> None:
    folder = tmp_path / "log"
    seen = run(RECORD, folder, 200_000)
    assert seen["errno"] == errno.EFBIG
    assert f"File too large (EFBIG): cannot write episode {seen['played']} in {str(folder)!r}" in seen["message"]
    assert f"; the {seen['played']} episodes before it read back whole, and the log stays unfinished" in seen["message"]
    assert seen["played"] > 5
    assert_unfinished(folder)
    assert_first_episodes(folder, record(tmp_path / "reference", seen["played"]), seen["played"])


@pytest.mark.slow
def test_an_evaluation_past_the_file_size_limit_resumes_to_the_same_end(tmp_path: Path, clean_evaluation: Any) -> None:
    out = tmp_path / "evaluation"
    seen = run(EVALUATE, out, 40_000, json.dumps(SHIFTS))
    assert seen["errno"] == errno.EFBIG
    assert "File too large (EFBIG): cannot write episode 2 in " in seen["message"]
    assert f"the evaluation in {str(out)!r} stops with " in seen["message"]
    assert "evaluate again with the same arguments" in seen["message"]
    assert seen["alive"] == []
    resumed = rw.studies.results.open_evaluation(out)
    assert resumed.complete
    pd.testing.assert_frame_equal(resumed.episodes(), clean_evaluation.episodes(), check_exact=True)
    assert_same_logs(out / "logs", clean_evaluation.path / "logs")


# -- a full disk ----------------------------------------------------------------------------------------------
@pytest.fixture(params=["64k", "100k", "160k"])
def small_disk(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A small tmpfs at ``tmp_path / "disk"``, unmounted after the test; skips where mounting is refused.

    The evaluation below fills 64 KiB within its first run's stream, 100 KiB as a run writes its Parquet files,
    and 160 KiB as a later run's header is written.
    """
    disk = tmp_path / "disk"
    disk.mkdir()
    size = f"size={request.param}"
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", size, "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def grow(disk: Path) -> None:
    """Gives the tmpfs room."""
    subprocess.run(["mount", "-o", "remount,size=16m", str(disk)], check=True)


@pytest.mark.slow
def test_an_evaluation_on_a_full_disk_resumes_to_the_same_end(small_disk: Path, clean_evaluation: Any) -> None:
    out = small_disk / "evaluation"
    with pytest.raises(LogError, match=r"No space left on device \(ENOSPC\): cannot write .* stops with") as caught:
        evaluate(out)
    assert caught.value.errno == errno.ENOSPC
    stopped = json.loads((out / "index.json").read_text())["runs"]
    finished = [row for row in stopped if row["status"] == "complete"]
    assert len(finished) < len(stopped)
    assert f"stops with {len(finished)} of {len(stopped)} runs finished" in str(caught.value)
    for row in finished:  # what finished reads back as on a disk with room
        assert_same_logs(out / row["path"], clean_evaluation.path / row["path"])
    grow(small_disk)
    resumed = evaluate(out)
    assert resumed.complete
    pd.testing.assert_frame_equal(resumed.episodes(), clean_evaluation.episodes(), check_exact=True)
    assert_same_logs(out / "logs", clean_evaluation.path / "logs")
    assert not list(out.rglob("*.tmp"))  # no half-written file stays behind


# -- a disk that refuses writes -------------------------------------------------------------------------------
def fill(monkeypatch: pytest.MonkeyPatch, room: int, code: int) -> None:
    """Makes every file pyarrow opens for writing a :class:`FillingFile` with ``room`` bytes left."""
    real = pyarrow.OSFile
    monkeypatch.setattr(
        pyarrow, "OSFile", lambda path, mode="rb": FillingFile(path, room, code) if mode == "wb" else real(path, mode)
    )


class FillingFile(io.FileIO):
    """A file on a disk with ``room`` bytes left: a write past it writes what fits, then fails with ``code``."""

    def __init__(self, path: str, room: int, code: int):
        super().__init__(path, "wb")
        self.room, self.code = room, code

    def write(self, data: Any) -> int:
        data = memoryview(data).cast("B")
        if len(data) > self.room:
            super().write(data[: self.room])
            self.room = 0
            raise OSError(self.code, os.strerror(self.code))
        self.room -= len(data)
        return super().write(data) or 0


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT])
@pytest.mark.parametrize("room", [0, 4_000, 20_000])  # none, about one and about six episodes
def test_a_recorder_whose_disk_refuses_writes_keeps_every_episode_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, room: int
) -> None:
    reference = record(tmp_path / "reference", 12)
    fill(monkeypatch, room, code)
    folder = tmp_path / "log"
    with pytest.raises(LogError) as caught:
        record(folder, 12)
    assert caught.value.errno == code
    written = len(rw.read_log(folder).episodes)
    kept = {0: "the log holds no episode", 1: "the episode before it reads back whole"}.get(
        written, f"the {written} episodes before it read back whole"
    )
    assert str(caught.value) == (
        f"[Errno {code}] {os.strerror(code)} ({errno.errorcode[code]}): cannot write episode {written} in"
        f" {str(folder)!r}; {kept}, and the log stays unfinished"
    )
    assert written == 0 if room == 0 else 0 < written < 12
    assert_first_episodes(folder, reference, written)
    assert_unfinished(folder)


def test_a_stopped_log_writes_no_more_and_closes_quietly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fill(monkeypatch, 20_000, errno.ENOSPC)
    env = rw.Recorder(gym.make("CartPole-v1"), tmp_path / "log")
    with pytest.raises(LogError, match="No space left"):
        for seed in range(100):
            env.reset(seed=seed)
            for t in range(500):
                if env.step(t % 2)[2]:
                    break
    written = len(rw.read_log(tmp_path / "log").episodes)
    env.reset(seed=0)  # the env plays on, and the log takes nothing more
    with pytest.raises(LogError, match="the log stopped there and writes no more episodes"):
        while not env.step(0)[2]:
            pass
    env.reset(seed=1)
    env.step(0)
    env.close()  # an episode is open: it is dropped, and closing says nothing more
    assert len(rw.read_log(tmp_path / "log").episodes) == written
    assert_unfinished(tmp_path / "log")


def test_a_header_the_disk_refuses_leaves_the_folder_free(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: Path, *args: Any, **kwargs: Any) -> int:
        raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))

    monkeypatch.setattr(Path, "write_text", refuse)
    with pytest.raises(LogError, match=r"Disk quota exceeded \(EDQUOT\): cannot write the log's header in") as caught:
        rw.Recorder(gym.make("CartPole-v1"), tmp_path / "log")
    assert caught.value.errno == errno.EDQUOT
    assert sorted(p.name for p in (tmp_path / "log").iterdir()) == []  # no lock, no half header


def team(folder: Path) -> None:
    """Three MPE agents that always move the same way, recorded for 6 episodes of 25 steps (or until an error)."""
    simple_spread_v3 = pytest.importorskip("mpe2.simple_spread_v3")
    from rlwrappers.logs.parallel import ParallelRecorder

    env = ParallelRecorder(simple_spread_v3.parallel_env(N=3, max_cycles=25), folder)
    for seed in range(6):
        env.reset(seed=seed)
        while env.agents:
            env.step({agent: 1 for agent in env.agents})
    env.close()


def test_a_team_recorder_whose_disk_refuses_writes_keeps_every_episode_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    team(tmp_path / "reference")
    fill(monkeypatch, 6_000, errno.EDQUOT)
    with pytest.raises(LogError, match=r"Disk quota exceeded \(EDQUOT\): cannot write episode \d in ") as caught:
        team(tmp_path / "log")
    assert caught.value.errno == errno.EDQUOT
    assert_first_episodes(tmp_path / "log", tmp_path / "reference", len(rw.read_log(tmp_path / "log").episodes))
    assert 0 < len(rw.read_log(tmp_path / "log").episodes) < 6
    assert_unfinished(tmp_path / "log")
