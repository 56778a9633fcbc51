"""Artifacts written by rlwrappers 0.1.0 before its subpackage layout still read, resume, rebuild and reproduce.

``tests/data/flat-layout`` holds an evaluation run folder, its episode table and report tables, three logs and what
the reader of that version returned for them; its README says how they were made. These tests check that the
present package reads them the same way, resumes the old run folder without redoing a run, rebuilds each
logged env from the spec in the log's header (old entry points included) and replays it to the same steps,
and that the same evaluation run today gives a bit-identical episode table and the same logs: every value
exactly, but the parameter-noise norm that the recorded run summed with a BLAS dot (:data:`BLAS_COLUMNS`).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest
from gymnasium.envs.registration import EnvSpec, load_env_creator
from helpers_logs import TIME_COLUMNS, VOLATILE_META, plain_stack

import rlwrappers as rw
from rlwrappers.logs import Recorder, read_log, team_returns, who_acted
from rlwrappers.report.evaluation import write_report
from rlwrappers.studies import Execution
from rlwrappers.studies.results import open_evaluation

DATA = Path(__file__).parent / "data" / "flat-layout"
LOGS = ("log", "log-atari", "log-team")

#: The evaluation the artifacts hold, as the recording script asked for it.
AGENT, ENV_ID = "ppo-CartPole-v1", "CartPole-v1"
SHIFTS: dict[str, Any] = {
    "obs noise": "obs_noise(std=0.2)",
    "action noise": "action_noise(p=0.2)",
    "reward noise": "reward_noise(std=0.5)",
    "init noise": "init_noise(std=0.05)",
    "heavy pole": "dynamics_shift(scales={'masspole': 3.0})",
    "param noise": "param_noise(std=0.1)",
    "fgsm": "fgsm(eps=0.05)",
    "sticky bursts": {"name": "sticky_action", "p": 0.5, "when": "bursts(p=0.1, duration=(2, 4))"},
}
#: Columns the recorded run computed with a float32 BLAS dot, whose last bits depend on the CPU's OpenBLAS kernel
#: (docs/seeding.md). rlwrappers now sums them in float64 in an order numpy fixes, so these are compared to a
#: relative 1e-6 and every other value exactly.
BLAS_COLUMNS = ["param_noise.norm"]
#: The entry points the old logs store for classes that have moved, and where the classes live now.
MOVED = {
    "rlwrappers.interventions:Intervene": "rlwrappers.wrappers.state:Intervene",
    "rlwrappers.evaluation:LivesAsEpisodes": "rlwrappers.wrappers.atari:LivesAsEpisodes",
}
#: The arguments wrappers have gained since the logs were recorded, by class: a rebuilt wrapper records them at
#: these defaults.
ADDED: dict[str, dict[str, Any]] = {
    name: {"allow_nonfinite": False}
    for name in (
        "ObservationNoise",
        "RewardNoise",
        "InitialStateNoise",
        "DynamicsShift",
        "Intervene",
        "FGSM",
        "PGD",
        "CarliniWagner",
    )
}


def evaluate(out: Path, workers: int) -> Any:
    """The recorded evaluation, with the arguments the recording script passed (but ``out`` and ``workers``)."""
    return rw.evaluate(
        AGENT,
        ENV_ID,
        SHIFTS,
        episodes=3,
        seeds=2,
        out=out,
        probe=8,
        execution=Execution(workers=workers, progress=False),
    )


def recorded_episodes() -> pd.DataFrame:
    return pd.read_parquet(DATA / "evaluation-episodes.parquet")


def files(root: Path) -> dict[str, int]:
    """Every file under ``root`` with its modification time in nanoseconds."""
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in sorted(root.rglob("*")) if p.is_file()}


def runs(root: Path) -> list[dict[str, Any]]:
    return json.loads((root / "index.json").read_text())["runs"]


def assert_csv_equal(written: Path, stored: Path) -> None:
    """Two CSV tables hold the same rows and columns and the same numbers."""
    new, old = pd.read_csv(written), pd.read_csv(stored)
    assert list(new.columns) == list(old.columns)
    pd.testing.assert_frame_equal(new, old, check_exact=False, rtol=1e-12, atol=0.0)


def never_filled(written: pd.DataFrame, recorded: pd.DataFrame) -> list[str]:
    """The columns of ``recorded`` that ``written`` lacks, each empty in every row.

    Logs leave out the columns that a perturbation's schedule can never fill (docs/distributions.md); the recorded
    ones hold such a column for parameter noise, whose norm is recorded at reset only, as every step row's null.
    """
    gone = [column for column in recorded.columns if column not in written.columns]
    assert all(recorded[column].isna().all() for column in gone), f"columns with values are missing: {gone}"
    return gone


def assert_episodes_equal(written: pd.DataFrame, recorded: pd.DataFrame) -> None:
    """Episode tables alike: every value exactly, but the wall-clock times and the BLAS columns (see above)."""
    blas = [column for column in BLAS_COLUMNS if column in recorded.columns]
    written, recorded = written.drop(columns=TIME_COLUMNS), recorded.drop(columns=TIME_COLUMNS)
    pd.testing.assert_frame_equal(written.drop(columns=blas), recorded.drop(columns=blas), check_exact=True)
    pd.testing.assert_frame_equal(written[blas], recorded[blas], check_exact=False, rtol=1e-6, atol=0.0)


def same_log(new: Path, old: Path) -> None:
    """The log at ``new`` holds the steps and episodes of the one at ``old``, and the same header."""
    written, recorded = read_log(new), read_log(old)
    gone = never_filled(written.steps, recorded.steps)
    pd.testing.assert_frame_equal(written.steps, recorded.steps.drop(columns=gone), check_exact=True)
    assert_episodes_equal(written.episodes, recorded.episodes)
    meta = {k: v for k, v in written.meta.items() if k not in VOLATILE_META}
    if "stack" in meta:
        meta["stack"] = plain_stack(meta["stack"])
    expected = {k: v for k, v in recorded.meta.items() if k not in VOLATILE_META}
    for perturbation in expected.get("perturbations", []):  # the header lists the fields the columns hold
        fields = perturbation["step_fields"]
        perturbation["step_fields"] = {
            f: kind for f, kind in fields.items() if f"{perturbation['label']}.{f}" not in gone
        }
    if expected.get("spec") is not None:  # the header names the classes where they live now, and what they take
        for wrapper in expected["spec"]["additional_wrappers"]:
            wrapper["entry_point"] = MOVED.get(wrapper["entry_point"], wrapper["entry_point"])
            if wrapper["kwargs"] is not None:
                wrapper["kwargs"] = {**wrapper["kwargs"], **ADDED.get(wrapper["name"], {})}
    assert meta == expected


def replay(env: gym.Env[Any, Any], log_path: Path, out: Path) -> None:
    """Records ``env`` reset with the logged seeds and stepped with the logged actions, into ``out``."""
    log = read_log(log_path)
    env = Recorder(env, out, metadata=log.meta["metadata"])
    for episode in log.episodes.itertuples():
        env.reset(seed=int(episode.seed))
        for action in log.steps.loc[log.steps["episode"] == episode.episode, "action"]:
            env.step(int(action))
    env.close()


# -- 1. the same evaluation today --------------------------------------------------------------------------
@pytest.mark.slow
def test_evaluate_reproduces_the_recorded_run(tmp_path: Path) -> None:
    # The recording ran with workers=2: runs do not depend on which process plays them.
    result = evaluate(tmp_path / "evaluation", workers=1)
    pd.testing.assert_frame_equal(result.episodes(), recorded_episodes(), check_exact=True)

    new, old = tmp_path / "evaluation", DATA / "evaluation"
    request, recorded = (json.loads((d / "evaluation.json").read_text()) for d in (new, old))
    assert request.pop("rlwrappers") == rw.__version__  # the version that ran it; the rest is what was asked
    assert request == {k: v for k, v in recorded.items() if k != "rlwrappers"}
    seconds = "seconds"  # each run's wall-clock time
    assert [{k: v for k, v in r.items() if k != seconds} for r in runs(new)] == [
        {k: v for k, v in r.items() if k != seconds} for r in runs(old)
    ]
    for run in runs(old):
        same_log(new / run["path"], old / run["path"])
    probes = sorted(p.relative_to(old) for p in (old / "probes").rglob("*.npz"))
    assert probes == sorted(p.relative_to(new) for p in (new / "probes").rglob("*.npz"))
    assert len(probes) == 2  # obs noise and fgsm change the agent's input
    for path in probes:
        with np.load(new / path) as now, np.load(old / path) as then:
            assert sorted(now.files) == sorted(then.files)
            for key in then.files:
                np.testing.assert_array_equal(now[key], then[key], strict=True)


# -- 2. the recorded run folder ----------------------------------------------------------------------------
@pytest.fixture
def run_folder(tmp_path: Path) -> Path:
    """A copy of the recorded run folder: resuming writes into it."""
    return Path(shutil.copytree(DATA / "evaluation", tmp_path / "evaluation"))


def test_recorded_run_folder_opens(run_folder: Path) -> None:
    evaluation = open_evaluation(run_folder)
    assert evaluation.complete
    assert len(evaluation.index) == 2 * (1 + len(SHIFTS))
    pd.testing.assert_frame_equal(evaluation.episodes(), recorded_episodes(), check_exact=True)
    summary = pd.read_csv(DATA / "evaluation-report" / "summary.csv", index_col=["agent", "shift"])
    pd.testing.assert_frame_equal(evaluation.summary(), summary, check_exact=False, rtol=1e-12, atol=0.0)
    assert set(evaluation.probes()) == {(AGENT, "obs noise"), (AGENT, "fgsm")}


def test_report_of_recorded_run_folder(run_folder: Path, tmp_path: Path) -> None:
    write_report(open_evaluation(run_folder), tmp_path / "report", lpips=None)
    for table in ("summary.csv", "impact.csv"):
        assert_csv_equal(tmp_path / "report" / table, DATA / "evaluation-report" / table)


@pytest.mark.slow
def test_evaluate_resumes_recorded_run_folder(run_folder: Path, tmp_path: Path) -> None:
    before, index = files(run_folder), runs(run_folder)
    result = evaluate(run_folder, workers=2)
    assert result.complete
    after = files(run_folder)
    assert sorted(after) == sorted(before), "resuming a finished evaluation wrote new files"
    # Only the index is rewritten, with the rows it held: no run was redone, no probe taken again.
    assert {path for path in after if after[path] != before[path]} <= {"index.json"}
    assert runs(run_folder) == index
    pd.testing.assert_frame_equal(result.episodes(), recorded_episodes(), check_exact=True)

    write_report(result, tmp_path / "report", lpips=None)
    for table in ("summary.csv", "impact.csv"):
        assert_csv_equal(tmp_path / "report" / table, DATA / "evaluation-report" / table)


# -- 3. the recorded logs read as the old reader read them ------------------------------------------------
@pytest.mark.parametrize("name", LOGS)
def test_recorded_log_reads_as_before(name: str) -> None:
    log = read_log(DATA / name)
    reads = DATA / "reads"
    pd.testing.assert_frame_equal(log.episodes, pd.read_parquet(reads / f"{name}-episodes.parquet"), check_exact=True)
    pd.testing.assert_frame_equal(log.steps, pd.read_parquet(reads / f"{name}-steps.parquet"), check_exact=True)
    # The old reader's header went through json.dumps(sort_keys=True, default=str); so does this one.
    assert json.loads(json.dumps(log.meta, sort_keys=True, default=str)) == json.loads(
        (reads / f"{name}-meta.json").read_text()
    )


def stored(frame: pd.DataFrame, tmp_path: Path) -> pd.DataFrame:
    """``frame`` stored as the recorded tables were (Parquet) and read back.

    Parquet keeps the ``Int64`` dtype of columns but gives a nullable-integer index back as ``int64``, so a
    table with such an index is compared once it has taken the same path as the recorded one.
    """
    path = tmp_path / "table.parquet"
    frame.to_parquet(path)
    return pd.read_parquet(path)


def test_recorded_team_log_reads_as_before(tmp_path: Path) -> None:
    reads = DATA / "reads"
    returns = team_returns(DATA / "log-team")
    pd.testing.assert_frame_equal(returns, pd.read_parquet(reads / "team_returns.parquet"), check_exact=True)
    pd.testing.assert_frame_equal(team_returns(read_log(DATA / "log-team")), returns, check_exact=True)
    acted = who_acted(DATA / "log-team", episode=2)
    assert list(acted["agent_0"]) == ["wander"] * 12  # switched from episode 1 on
    pd.testing.assert_frame_equal(
        stored(acted, tmp_path), pd.read_parquet(reads / "who_acted.parquet"), check_exact=True
    )


# -- 4. the recorded logs rebuild their env and replay -----------------------------------------------------
@pytest.mark.parametrize(("old", "new"), MOVED.items())
def test_old_entry_points_still_import(old: str, new: str) -> None:
    assert load_env_creator(old) is load_env_creator(new)


def test_cartpole_log_rebuilds_and_replays(tmp_path: Path) -> None:
    log = read_log(DATA / "log")
    spec = log.meta["spec"]
    assert "rlwrappers.interventions:Intervene" in [w["entry_point"] for w in spec["additional_wrappers"]]
    env = gym.make(EnvSpec.from_json(json.dumps(spec)))
    assert plain_stack(str(env)) == log.meta["stack"]
    replay(env, DATA / "log", tmp_path / "replay")
    # Rewards, ends and every perturbation's fields (executed actions, noise drawn) step for step.
    same_log(tmp_path / "replay", DATA / "log")


def test_atari_log_rebuilds_and_replays(tmp_path: Path) -> None:
    ale_py = pytest.importorskip("ale_py")
    gym.register_envs(ale_py)
    log = read_log(DATA / "log-atari")
    spec = EnvSpec.from_json(json.dumps(log.meta["spec"]))
    # LivesAsEpisodes records no constructor arguments, so the header stores `kwargs: null` for it, which
    # `gym.make` refuses to rebuild. It takes none: the stack is rebuilt as `gym.make` does, without them.
    lives = spec.additional_wrappers[-1]
    assert (lives.entry_point, lives.kwargs) == ("rlwrappers.evaluation:LivesAsEpisodes", None)

    def rebuild() -> gym.Env[Any, Any]:
        env = gym.make(dataclasses.replace(spec, additional_wrappers=()))
        for wrapper in spec.additional_wrappers:
            env = load_env_creator(wrapper.entry_point)(env=env, **(wrapper.kwargs or {}))
        return env

    env = rebuild()
    assert plain_stack(str(env)) == log.meta["stack"]
    replay(env, DATA / "log-atari", tmp_path / "replay")
    same_log(tmp_path / "replay", DATA / "log-atari")


def test_team_log_records_again(tmp_path: Path) -> None:
    # A team log's header stores no spec (PettingZoo has none): the recording script's team part, run again.
    simple_spread_v3 = pytest.importorskip("mpe2.simple_spread_v3")
    from rlwrappers.logs import ParallelRecorder
    from rlwrappers.wrappers.multiagent import AgentSwitch

    assert read_log(DATA / "log-team").meta["spec"] is None

    def wander(obs: Any, rng: np.random.Generator) -> int:
        return int(rng.integers(5))

    team = simple_spread_v3.parallel_env(N=3, max_cycles=12)
    team = AgentSwitch(team, {"agent_0": wander}, k=1, when="starting(episode=1)")
    team = ParallelRecorder(team, tmp_path / "log-team", metadata={"team": "fixed"})
    for seed in range(3):
        team.reset(seed=seed)
        while team.agents:
            team.step({agent: 3 for agent in team.agents})
    team.close()
    same_log(tmp_path / "log-team", DATA / "log-team")
