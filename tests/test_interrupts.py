"""SIGINT and SIGTERM stop an evaluation cleanly, wherever they land, and a resume gives the uninterrupted table.

Each trial plays a real two-worker evaluation in a child process and signals it at a point drawn from a fixed
seed: at a random time, or at a random step of some run's last episode. The signal goes to the evaluating
process (``kill``) or to its whole process group (Ctrl-C in a terminal). The evaluation is then resumed, and
its episode table must be the uninterrupted one, bit for bit.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
from helpers_processes import children

import rlwrappers as rw
from rlwrappers.logs.lock import LOCK_FILE, FolderLock
from rlwrappers.studies import EnvSetup, Execution
from rlwrappers.studies.design import episode_seed

SEED = 20261125
TRIALS = 40
EPISODES, SEEDS = 4, (0, 1)
SHIFTS = ["obs_noise(std=0.1)", "action_noise(p=0.2)"]
STEPS = 200  # per episode at most, to keep each trial short


class SignalAt(gym.Wrapper[Any, Any, Any, Any]):
    """Sends ``signum`` to ``pid`` (a negative one: a process group) at step ``step`` of the episode reset with
    ``seed``; passes everything else through unchanged."""

    def __init__(self, env: gym.Env[Any, Any], *, seed: int, step: int, pid: int, signum: int):
        super().__init__(env)
        self.target, self.at, self.pid, self.signum = seed, step, pid, signum
        self.armed, self.steps = False, 0

    def reset(self, **kwargs: Any) -> Any:
        self.armed, self.steps = kwargs.get("seed") == self.target, 0
        return super().reset(**kwargs)

    def step(self, action: Any) -> Any:
        self.steps += 1
        if self.armed and self.steps == self.at:
            self.armed = False
            os.kill(self.pid, self.signum)
        return super().step(action)


def _evaluate(out: Path, wrappers: tuple[Any, ...] = ()) -> rw.Evaluation:
    return rw.evaluate(
        "ppo-CartPole-v1",
        "CartPole-v1",
        SHIFTS,
        episodes=EPISODES,
        seeds=list(SEEDS),
        out=out,
        env=EnvSetup(kwargs={"max_episode_steps": STEPS}, wrappers=wrappers),
        execution=Execution(workers=2, progress=False),
    )


def _interrupted_child(out: Path, trigger: dict[str, int] | None, group: bool, ready: Any) -> None:
    """Evaluates in a process group of its own, as a terminal runs a command; the trigger signals this process
    (or its group) from inside a worker. ``ready`` is set once the child has its group and handlers."""
    os.setpgid(0, 0)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    ready.set()
    wrappers = ()
    if trigger is not None:
        wrappers = (functools.partial(SignalAt, **trigger, pid=-os.getpid() if group else os.getpid()),)
    try:
        _evaluate(out, wrappers)
    except KeyboardInterrupt:
        os._exit(130)
    os._exit(0)


def _group_is_gone(pgid: int, seconds: float = 15.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def _interrupt(rng: np.random.Generator, out: Path, duration: float, trial: str) -> str:
    """Interrupts one evaluation at a point drawn from ``rng``; returns the trial and where, for failure messages."""
    signum = int(rng.choice([signal.SIGINT, signal.SIGTERM]))
    group = bool(rng.integers(2))
    trigger = None
    if rng.integers(2):
        seed, step = int(rng.choice(SEEDS)), int(rng.integers(1, 20))
        trigger = {"seed": episode_seed(seed, EPISODES - 1), "step": step, "signum": signum}
        where = f"at step {step} of the last episode of a seed-{seed} run"
    else:
        delay = float(rng.uniform(0.0, duration))
        where = f"{delay:.2f} s in"
    context = children()
    ready = context.Event()
    child = context.Process(target=_interrupted_child, args=(out, trigger, group, ready))
    child.start()
    assert ready.wait(timeout=120), f"{trial}: the child did not start"
    if trigger is None:
        time.sleep(delay)
        try:
            os.killpg(child.pid, signum) if group else os.kill(child.pid, signum)
        except ProcessLookupError:  # it finished first
            pass
    child.join(timeout=120)
    what = f"{trial}: {signal.Signals(signum).name} to the {'process group' if group else 'process'} {where}"
    if child.exitcode is None:
        os.killpg(child.pid, signal.SIGKILL)
        child.join()
        pytest.fail(f"{what}: the evaluation did not stop")
    assert child.pid is not None and _group_is_gone(child.pid), f"{what}: workers outlived the evaluation"
    return what


def _timed_child(out: Path) -> float:
    """Seconds an uninterrupted evaluation takes in a child like the trials' children, once it is ready."""
    context = children()
    ready = context.Event()
    child = context.Process(target=_interrupted_child, args=(out, None, False, ready))
    child.start()
    ready.wait(timeout=120)
    started = time.monotonic()  # the evaluation's own time, from when the child is ready
    child.join(timeout=120)
    assert child.exitcode == 0
    return time.monotonic() - started


@pytest.mark.slow
def test_random_interrupts_then_resume_give_the_uninterrupted_table(tmp_path: Path) -> None:
    expected = _evaluate(tmp_path / "uninterrupted").episodes()
    duration = _timed_child(tmp_path / "timed")
    pd.testing.assert_frame_equal(rw.open_evaluation(tmp_path / "timed").episodes(), expected)
    rng = np.random.default_rng(SEED)
    stopped = 0
    for trial in range(TRIALS):
        out = tmp_path / f"trial{trial}"
        context = _interrupt(rng, out, duration, f"trial {trial} of seed {SEED}")
        for lock in out.rglob(LOCK_FILE):  # a file an interrupted writer left, but never a lock held
            FolderLock(lock.parent).release()
        index = json.loads((out / "index.json").read_text())["runs"] if (out / "index.json").exists() else []
        stopped += any(run["status"] != "complete" for run in index)
        for run in index:  # the index says what the logs hold
            finished = rw.read_log(out / run["path"]).episodes if run["status"] == "complete" else None
            assert finished is None or len(finished) == EPISODES, context
        resumed = _evaluate(out)
        assert resumed.complete, context
        pd.testing.assert_frame_equal(resumed.episodes(), expected, obj=context)
    print(f"{stopped} of {TRIALS} interruptions stopped runs part-way (seed {SEED})")
    assert stopped >= TRIALS // 2  # most signals landed while runs were being played


def _as_from_a_terminal() -> None:
    """Gives the command the signals a terminal's command gets: a test worker may hold SIGINT blocked (an earlier
    test's library left it so), and a child inherits the mask, so its SIGINT would never arrive."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_the_command_line_stops_on_a_signal_and_says_how_to_resume(tmp_path: Path, signum: int) -> None:
    out = tmp_path / "run"
    command = [sys.executable, "-m", "rlwrappers.cli", "evaluate", "--env", "CartPole-v1"]
    command += ["--agent", "ppo-CartPole-v1", "--episodes", "30", "--seeds", "2", "--workers", "2"]
    command += ["--quiet", "--no-report", "--out", str(out)] + [a for s in SHIFTS for a in ("--shift", s)]
    cli = subprocess.Popen(
        command, stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=_as_from_a_terminal
    )
    for _ in range(1200):  # until the first run finished
        if (out / "index.json").exists() and '"complete"' in (out / "index.json").read_text():
            break
        time.sleep(0.05)
    cli.send_signal(signum)
    _, stderr = cli.communicate(timeout=60)
    assert cli.returncode == 128 + signum
    runs = json.loads((out / "index.json").read_text())["runs"]
    finished = sum(run["status"] == "complete" for run in runs)
    assert 0 < finished < len(runs)
    name = signal.Signals(signum).name
    assert stderr.strip() == (
        f"rlwrappers evaluate: stopped by {name}; {finished} of {len(runs)} runs finished and are kept in"
        f" {str(out)!r}. Run the same command again to play the rest"
    )
    assert _group_is_gone(cli.pid)
    resumed = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert rw.open_evaluation(out).complete
