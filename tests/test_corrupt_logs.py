"""Damaged logs never read as data: each damage gives a LogError, or every complete episode before it, exactly.

Real logs are damaged in many ways: truncated at random offsets, bytes flipped, garbage appended, each file
deleted, headers of the wrong JSON type or encoding. The random choices come from one seed, printed by each
failing assertion.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import rlwrappers as rw
from rlwrappers.error import LogError
from rlwrappers.logs import Log

HELPER = Path(__file__).with_name("helpers_kill_recorder.py")
SEED = 20261125
TIME_COLUMNS = ["start_time", "wall_time"]
Damage = Callable[[Path, np.random.Generator], None]


@pytest.fixture(scope="module")
def closed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log closed normally: Parquet files and a header."""
    path = tmp_path_factory.mktemp("closed") / "log"
    subprocess.run([sys.executable, str(HELPER), str(path), "--episodes", "4"], check=True, capture_output=True)
    return path


@pytest.fixture(scope="module")
def killed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A log whose writer was killed inside its fourth episode: the stream holds three whole episodes."""
    path = tmp_path_factory.mktemp("killed") / "log"
    writer = subprocess.Popen([sys.executable, str(HELPER), str(path), "3"], stdout=subprocess.PIPE, text=True)
    assert writer.stdout is not None
    while writer.stdout.readline().strip() != "midway":
        pass
    writer.send_signal(signal.SIGKILL)
    writer.wait()
    return path


def copy(log: Path, tmp_path: Path) -> Path:
    target = tmp_path / "damaged"
    shutil.copytree(log, target)
    return target


def recovered_or_refused(damaged: Path, original: Log, what: str) -> str:
    """Reads the damaged log: a LogError, or a prefix of the original's complete episodes, bit for bit."""
    try:
        log = rw.read_log(damaged)
    except LogError as error:
        assert str(damaged) in str(error) and "Traceback" not in str(error), what
        return "refused"
    episodes = original.episodes[original.episodes["complete"].astype(bool)]
    kept = len(log.episodes)
    assert kept <= len(episodes), what
    pd.testing.assert_frame_equal(
        log.episodes.drop(columns=TIME_COLUMNS),
        episodes.iloc[:kept].drop(columns=TIME_COLUMNS),
        check_exact=True,
        obj=what,
    )
    steps = original.steps[original.steps["episode"].isin(log.episodes["episode"])].reset_index(drop=True)
    pd.testing.assert_frame_equal(log.steps, steps, check_exact=True, obj=what)
    return "recovered" if kept == len(episodes) else "prefix"


def truncate(name: str) -> Damage:
    def damage(root: Path, rng: np.random.Generator) -> None:
        data = (root / name).read_bytes()
        (root / name).write_bytes(data[: int(rng.integers(0, len(data)))])

    return damage


def flip(name: str) -> Damage:
    def damage(root: Path, rng: np.random.Generator) -> None:
        data = bytearray((root / name).read_bytes())
        at = int(rng.integers(0, len(data)))
        data[at] ^= 1 << int(rng.integers(8))
        (root / name).write_bytes(bytes(data))

    return damage


def append_garbage(name: str) -> Damage:
    def damage(root: Path, rng: np.random.Generator) -> None:
        with (root / name).open("ab") as file:
            file.write(rng.integers(0, 256, int(rng.integers(1, 4096)), dtype=np.uint8).tobytes())

    return damage


def delete(name: str) -> Damage:
    return lambda root, rng: (root / name).unlink()


def header(text: bytes) -> Damage:
    return lambda root, rng: (root / "meta.json").write_bytes(text)


CLOSED: dict[str, tuple[Damage, int]] = {
    "truncated steps.parquet": (truncate("steps.parquet"), 8),
    "truncated episodes.parquet": (truncate("episodes.parquet"), 8),
    "flipped steps.parquet": (flip("steps.parquet"), 24),
    "flipped episodes.parquet": (flip("episodes.parquet"), 24),
    "garbage after steps.parquet": (append_garbage("steps.parquet"), 4),
    "no steps.parquet": (delete("steps.parquet"), 1),
    "no episodes.parquet": (delete("episodes.parquet"), 1),
    "both tables gone": (lambda root, rng: [delete(n)(root, rng) for n in ("steps.parquet", "episodes.parquet")], 1),
    "no header": (delete("meta.json"), 1),
    "truncated header": (truncate("meta.json"), 4),
    "header is a list": (header(b"[]"), 1),
    "header is a string": (header(b'"rlwrappers-log"'), 1),
    "header format is a number": (header(b'{"format": 3}'), 1),
    "header is not UTF-8": (header(b"\xff\xfe{"), 1),
}
KILLED: dict[str, tuple[Damage, int]] = {
    "truncated stream": (truncate("stream.arrows"), 12),
    "flipped stream": (flip("stream.arrows"), 32),
    "garbage after the stream": (append_garbage("stream.arrows"), 4),
    "no stream": (delete("stream.arrows"), 1),
    "no header": (delete("meta.json"), 1),
}


@pytest.mark.slow
@pytest.mark.parametrize("which", ["closed", "killed"])
def test_damaged_logs_are_refused_or_recovered_exactly(
    which: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    log_path: Path = request.getfixturevalue(which)
    original = rw.read_log(log_path)
    assert len(original.episodes) >= 3
    rng = np.random.default_rng(SEED)
    outcomes: dict[str, int] = {}
    for name, (damage, trials) in (CLOSED if which == "closed" else KILLED).items():
        for trial in range(trials):
            damaged = copy(log_path, tmp_path / f"{name}-{trial}")
            damage(damaged, rng)
            what = f"{which} log, {name}, trial {trial} (seed {SEED})"
            outcome = recovered_or_refused(damaged, original, what)
            outcomes[outcome] = outcomes.get(outcome, 0) + 1
            if name == "garbage after the stream":
                assert outcome == "recovered", what  # appended bytes hide no episode
    assert outcomes.get("refused", 0) > 0 and sum(outcomes.values()) >= 50


def test_each_refusal_names_the_file_and_what_is_wrong(closed: Path, tmp_path: Path) -> None:
    cases = {
        "no steps.parquet": (delete("steps.parquet"), "steps.parquet' is damaged or missing"),
        "header is a list": (header(b"[]"), "meta.json' is damaged: the header is a list, not an object"),
        "header is not UTF-8": (header(b"\xff\xfe{"), "meta.json' is damaged: not a JSON header"),
        "both tables gone": (
            lambda root, rng: [delete(n)(root, rng) for n in ("steps.parquet", "episodes.parquet")],
            "closed with episodes, but holds no table",
        ),
    }
    rng = np.random.default_rng(SEED)
    for name, (damage, message) in cases.items():
        damaged = copy(closed, tmp_path / name)
        damage(damaged, rng)
        with pytest.raises(LogError, match=message.replace(".", r"\.")):
            rw.read_log(damaged)


def test_steps_that_break_the_invariants_are_refused(closed: Path, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    damaged = copy(closed, tmp_path)
    table = pq.read_table(damaged / "steps.parquet")
    steps = table.column("step").to_numpy().copy()
    steps[5] = -7  # a value that reads well but cannot be
    pq.write_table(table.set_column(table.schema.get_field_index("step"), "step", [steps]), damaged / "steps.parquet")
    with pytest.raises(LogError, match="steps are not numbered from 0 in each episode"):
        rw.read_log(damaged)
    meta = json.loads((damaged / "meta.json").read_text())
    assert meta["format"] == "rlwrappers-log"  # the header itself is fine


def test_a_flipped_bit_in_any_episode_row_of_the_stream_is_never_read(killed: Path, tmp_path: Path) -> None:
    """Each byte of the second episode's row flipped in turn: a LogError or the first episode, never a wrong row."""
    original = rw.read_log(killed)
    data = (killed / "stream.arrows").read_bytes()
    row = b'{"episode": 1,'
    start = data.index(row)
    end = data.index(b"}", start) + 1
    damaged = copy(killed, tmp_path)
    outcomes = set()
    for at in range(start, end):
        flipped = bytearray(data)
        flipped[at] ^= 1 << (at % 8)
        (damaged / "stream.arrows").write_bytes(bytes(flipped))
        what = f"killed log, byte {at - start} of the second episode row flipped"
        outcome = recovered_or_refused(damaged, original, what)
        assert outcome != "recovered", what
        outcomes.add(outcome)
    assert "prefix" in outcomes


@pytest.mark.parametrize(
    ("runs", "reason"),
    [
        ('{"runs": [{"agent": 1}]}', r"run 0 lacks \['shift', 'seed', 'path', 'status'\]"),
        ('{"runs": "x"}', "lists its runs as str, not a list"),
        ('{"runs": [5]}', "run 0 lacks"),
    ],
)
def test_an_index_whose_rows_are_damaged_is_named_corrupt(tmp_path, runs, reason):
    (tmp_path / "evaluation.json").write_text("{}")
    (tmp_path / "index.json").write_text(runs)
    with pytest.raises(rw.error.LogError, match=rf"is corrupt: index.json {reason}"):
        rw.open_evaluation(tmp_path)
