"""One writer per log folder, and nothing lost when the writer dies while closing.

Real processes: a writer paused inside an episode holds its folder against a second one; two writers started
at once leave one whole log and one typed error; a writer killed with SIGKILL before each file operation of
``close`` leaves a log that reads exactly as an uninterrupted one, and a folder the next writer can take.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pandas as pd
import pytest

import rlwrappers as rw
from rlwrappers import logs
from rlwrappers.error import LogError
from rlwrappers.logs.lock import LOCK_FILE

HELPER = Path(__file__).with_name("helpers_kill_recorder.py")
TIME_COLUMNS = ["start_time", "wall_time"]
EPISODES = 3


def helper(*args: object) -> list[str]:
    return [sys.executable, str(HELPER), *map(str, args)]


def assert_same_log(log: logs.Log, expected: logs.Log) -> None:
    pd.testing.assert_frame_equal(log.steps, expected.steps, check_exact=True)
    pd.testing.assert_frame_equal(
        log.episodes.drop(columns=TIME_COLUMNS), expected.episodes.drop(columns=TIME_COLUMNS), check_exact=True
    )


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> logs.Log:
    path = tmp_path_factory.mktemp("reference") / "log"
    subprocess.run(helper(path, "--episodes", EPISODES), check=True, capture_output=True, timeout=120)
    log = rw.read_log(path)
    assert list(log.episodes["episode"]) == list(range(EPISODES))
    return log


def test_a_second_recorder_in_the_same_process_is_refused(tmp_path: Path) -> None:
    first = rw.Recorder(gym.make("CartPole-v1"), tmp_path)
    with pytest.raises(LogError, match=rf"being written by another writer \(pid {os.getpid()} on "):
        rw.Recorder(gym.make("CartPole-v1"), tmp_path, overwrite=True)
    first.reset(seed=0)
    first.step(0)
    first.close()
    assert not (tmp_path / LOCK_FILE).exists()  # released and removed
    assert list(rw.read_log(tmp_path).episodes["episode"]) == [0]
    second = rw.Recorder(gym.make("CartPole-v1"), tmp_path, overwrite=True)  # the folder is free again
    second.close()


@pytest.mark.slow
def test_a_writer_holds_its_folder_until_it_dies(tmp_path: Path) -> None:
    path = tmp_path / "log"
    writer = subprocess.Popen(helper(path, 1), stdout=subprocess.PIPE, text=True)  # pauses inside episode 1
    try:
        assert writer.stdout is not None
        assert [writer.stdout.readline().strip() for _ in range(2)] == ["finished 0", "midway"]
        holder = rf"being written by another writer \(pid {writer.pid} on "
        with pytest.raises(LogError, match=holder):
            rw.Recorder(gym.make("CartPole-v1"), path, overwrite=True)
        with pytest.raises(LogError, match=holder):
            logs.compact(path)
        assert list(rw.read_log(path).episodes["episode"]) == [0]  # the writer's log is untouched
    finally:
        writer.kill()
        writer.wait()
    assert writer.returncode == -signal.SIGKILL
    logs.compact(path)  # the lock died with its writer
    assert list(rw.read_log(path).episodes["episode"]) == [0]
    env = rw.Recorder(gym.make("CartPole-v1"), path, overwrite=True)
    env.close()


@pytest.mark.slow
def test_two_writers_started_at_once_leave_one_whole_log(tmp_path: Path, reference: logs.Log) -> None:
    path = tmp_path / "log"
    writers = [subprocess.Popen(helper(path, "--episodes", EPISODES), stderr=subprocess.PIPE, text=True)]
    writers.append(subprocess.Popen(helper(path, "--episodes", EPISODES), stderr=subprocess.PIPE, text=True))
    errors = [writer.communicate(timeout=120)[1] for writer in writers]
    codes = sorted(writer.returncode for writer in writers)
    assert codes == [0, 1], errors
    refused = next(error for writer, error in zip(writers, errors, strict=True) if writer.returncode)
    assert "rlwrappers.error.LogError" in refused  # "being written by another writer" or "already holds a log"
    assert_same_log(rw.read_log(path), reference)


@pytest.mark.slow
def test_a_kill_at_any_point_of_close_loses_nothing(tmp_path: Path, reference: logs.Log) -> None:
    k = 1
    while True:
        path = tmp_path / f"killed-before-{k}"
        done = subprocess.run(
            helper(path, "--episodes", EPISODES, "--kill-in-close", k), capture_output=True, text=True, timeout=120
        )
        assert_same_log(rw.read_log(path), reference)  # whatever the files are now, they read as written
        if done.returncode == 0:
            break
        assert done.returncode == -signal.SIGKILL, done.stderr
        logs.compact(path)  # the lock died with the writer: the log can be tidied
        assert_same_log(rw.read_log(path), reference)
        assert sorted(os.listdir(path)) == ["episodes.parquet", "meta.json", "steps.parquet"]
        k += 1
    # header, steps, episodes, stream, lock file: a kill before each of the five was survived
    assert f"closed after {k - 1} operations" in done.stdout and k == 6
