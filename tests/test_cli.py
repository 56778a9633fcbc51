"""The ``rlwrappers`` command line, run as the installed console script and as a module."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import rlwrappers as rw
from rlwrappers import cli, schedule
from rlwrappers.studies import shift_impact

HEADINGS = ("Registered IDs", "Perturbations (", "Schedules (")


def _console_script() -> list[str]:
    local = Path(sys.executable).with_name("rlwrappers")
    found = str(local) if local.exists() else shutil.which("rlwrappers")
    return [found] if found else [sys.executable, "-m", "rlwrappers.cli"]


COMMANDS = {"script": _console_script(), "module": [sys.executable, "-m", "rlwrappers.cli"]}


def run(*args: str, how: str = "script") -> subprocess.CompletedProcess[str]:
    return subprocess.run([*COMMANDS[how], *args], capture_output=True, text=True, timeout=120)


def _ids(out: str) -> list[str]:
    """The registered IDs `list` prints: the ``rlwrappers/`` lines of its first section (ladders list envs too)."""
    first = out.split("\nPerturbations (")[0]
    return [line.split()[0] for line in first.splitlines() if line.startswith("  rlwrappers/")]


def test_the_console_script_is_installed():
    assert Path(COMMANDS["script"][0]).name == "rlwrappers"


@pytest.mark.parametrize("how", ["script", "module"])
def test_list_prints_ids_perturbations_and_schedules(how):
    result = run("list", how=how)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    positions = [out.index(heading) for heading in HEADINGS]
    assert positions == sorted(positions)
    assert _ids(out) == [e.id for e in rw.catalogue()]
    assert "70 in the catalogue" in out
    for info in rw.perturbations():
        assert f"  {info.name} ({info.channel})" in out
    for name in schedule.names():
        assert f"  {name}: " in out


def test_list_ids():
    result = run("list", "ids")
    assert result.returncode == 0, result.stderr
    assert _ids(result.stdout) == [e.id for e in rw.catalogue()]
    assert "Perturbations (" not in result.stdout and "Schedules (" not in result.stdout
    line = next(x for x in result.stdout.splitlines() if "rlwrappers/Hopper-Shifted-v5" in x)
    assert "dynamics_shift(scales={'body_mass': 1.25})" in line


def test_list_perturbations():
    result = run("list", "perturbations")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert out.startswith("Perturbations (")
    assert "Registered IDs" not in out and "Schedules (" not in out
    for info in rw.perturbations():
        assert f"  {info.name} ({info.channel}) [rw.{info.wrapper}]: {info.summary}" in out
        for key, (default, _) in info.params.items():
            assert f"      {key}={default!r}: " in out
    assert "  obs_noise (observation) [rw.ObservationNoise]" in out
    assert "      std=0.1: " in out


def test_list_schedules_and_several_parts():
    result = run("list", "schedules")
    assert result.returncode == 0, result.stderr
    listed = [line.split(":")[0].strip() for line in result.stdout.splitlines()[1:]]
    assert listed == schedule.names() == ["always", "bursts", "never", "prob", "starting", "window"]

    both = run("list", "schedules", "ids")
    assert both.returncode == 0
    assert "Registered IDs" in both.stdout and "Schedules (" in both.stdout
    assert "Perturbations (" not in both.stdout


def test_bad_part_exits_with_2_and_says_why():
    result = run("list", "idz")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "unknown part 'idz'" in result.stderr
    assert "ids, perturbations, schedules" in result.stderr
    assert "usage: rlwrappers list" in result.stderr


def test_missing_or_unknown_command_exits_with_2():
    result = run()
    assert result.returncode == 2
    assert "required" in result.stderr and "usage: rlwrappers" in result.stderr
    result = run("lst")
    assert result.returncode == 2
    assert "invalid choice: 'lst'" in result.stderr


def test_help_exits_with_0():
    result = run("--help")
    assert result.returncode == 0
    assert "list" in result.stdout


def test_main_returns_0_and_lists_ids_registered_in_this_process(capsys):
    env_id = rw.register("CartPole-v1", "reward_noise(std=0.7)", name="CliTest-Extra")
    assert cli.main(["list", "ids"]) == 0
    out = capsys.readouterr().out
    assert "Registered in this process with rw.register:" in out
    assert f"  {env_id}\n" in out
    assert env_id not in _ids(out.split("Registered in this process")[0])


def test_main_bad_part_raises_system_exit_2(capsys):
    with pytest.raises(SystemExit) as excinfo:
        cli.main(["list", "perturbations", "nope"])
    assert excinfo.value.code == 2
    assert "unknown part 'nope'" in capsys.readouterr().err


def test_list_agents_prints_the_zoo():
    result = run("list", "agents")
    assert result.returncode == 0, result.stderr
    for name in rw.zoo.names():
        assert f"  {name} " in result.stdout
    assert "seeds 0,1,2" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--compare", "a", "./a", "--out", "board"], "`card_dirs` names one card twice, as 'a' and './a'"),
        (["--env", "CartPole-v1", "--agent", "ppo-CartPole-v1", "--families=", "--out", "c"], "`families` holds ''"),
    ],
)
def test_card_options_that_would_be_taken_silently_exit_with_2(tmp_path, args, message):
    (tmp_path / "a").mkdir()
    result = subprocess.run(
        [*COMMANDS["script"], "card", *args], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["evaluate", "--env", "CartPole-v1", "--agent", "ppo-CartPole-v1", "--aggregate", "iqm"],
            "--aggregate applies only with --observational",
        ),
        (
            [
                "robustness",
                "--env",
                "CartPole-v1",
                "--pipeline",
                "ppo-CartPole-v1",
                "--intervention",
                "x+=1",
                "--draws",
                "5",
            ],
            "--draws applies only with --stochastic",
        ),
        (
            ["explain", "--agent", "ppo-CartPole-v1", "--env", "CartPole-v1", "--threshold", "50"],
            "--threshold applies only with --select highlights",
        ),
    ],
)
def test_an_option_given_without_the_one_it_serves_exits_with_2(tmp_path, args, message):
    result = subprocess.run(
        [*COMMANDS["script"], *args, "--out", "out"], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_command_refuses_a_folder_holding_another_commands_results(tmp_path):
    run_dir = tmp_path / "run"
    made = subprocess.run(
        [*COMMANDS["script"], *CARTPOLE, "--episodes", "1", "--seeds", "1", "--quiet", "--no-report", "--out", "run"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert made.returncode == 0, made.stderr
    before = sorted(p.relative_to(run_dir) for p in run_dir.rglob("*"))
    for args in (
        ["explain", "--agent", "ppo-CartPole-v1", "--env", "CartPole-v1", "--method", "rise", "--states", "2"],
        ["robustness", "--env", "CartPole-v1", "--pipeline", "ppo-CartPole-v1", "--intervention", "x+=1.0"],
        ["card", "--env", "CartPole-v1", "--agent", "ppo-CartPole-v1", "--seeds", "1", "--episodes", "1"],
    ):
        result = subprocess.run(
            [*COMMANDS["script"], *args, "--out", "run"], capture_output=True, text=True, timeout=120, cwd=tmp_path
        )
        assert result.returncode == 2
        assert "--out 'run' holds another command's results (evaluation.json)" in result.stderr
    assert sorted(p.relative_to(run_dir) for p in run_dir.rglob("*")) == before


@pytest.mark.parametrize(
    ("out", "message"),
    [("a-file", "--out 'a-file' is a file, not a folder"), ("/proc/rlwrappers-run", "No such file or directory")],
)
def test_an_out_that_cannot_be_a_folder_exits_with_2_and_one_line(tmp_path, out, message):
    (tmp_path / "a-file").write_text("kept\n")
    args = [*CARTPOLE, "--episodes", "1", "--seeds", "1", "--quiet", "--out", out]
    result = subprocess.run([*COMMANDS["script"], *args], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert (tmp_path / "a-file").read_text() == "kept\n"


@pytest.mark.slow
def test_evaluate_then_report_from_the_command_line(tmp_path):
    out = tmp_path / "run"
    args = ["evaluate", "--env", "CartPole-v1", "--agent", "ppo-CartPole-v1@1", "--shift", "action_noise(p=0.3)"]
    result = run(*args, "--episodes", "2", "--seeds", "2", "--out", str(out), "--quiet", "--workers", "2")
    assert result.returncode == 0, result.stderr
    assert "action_noise(p=0.3)" in result.stdout and "baseline" in result.stdout
    assert (out / "report" / "report.html").exists()
    evaluation = rw.open_evaluation(out)
    assert evaluation.complete and len(evaluation.index) == 4
    assert evaluation.request["agent_sources"] == {"ppo-CartPole-v1@1": "ppo-CartPole-v1@1"}

    report = run("report", str(out), "--out", str(tmp_path / "elsewhere"))
    assert report.returncode == 0, report.stderr
    assert (tmp_path / "elsewhere" / "report.html").exists()
    assert str(tmp_path / "elsewhere" / "report.html") in report.stdout
    assert "PARTIAL" not in report.stdout

    index = json.loads((out / "index.json").read_text())
    index["runs"][-1]["status"] = "pending"  # as an interrupted sweep leaves it
    (out / "index.json").write_text(json.dumps(index))
    partial = run("report", str(out))
    assert partial.returncode == 3, partial.stderr  # written, but not the whole story
    assert partial.stdout.startswith("PARTIAL: 1 of 4 runs have not finished")
    last = index["runs"][-1]
    assert f"  {last['agent']} / {last['shift']} / seed {last['seed']} ({last['path']})" in partial.stdout


CARTPOLE = ["evaluate", "--env", "CartPole-v1", "--agent", "ppo-CartPole-v1"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["evaluate", "--env", "CartPole-v1", "--agent", "ppo-CartPol-v1"], "Did you mean `ppo-CartPole-v1`?"),
        (["evaluate", "--env", "Pendulum-v1", "--agent", "ppo-CartPole-v1"], "does not match"),
        (["evaluate", "--env", "CartPole-v1", "--agent", "ppo-CartPole-v1", "--shift", "obs_noise(std=-1)"], "`std`"),
        (["evaluate", "--env", "CartPole-v1", "--agent", "nowhere/agent.zip"], "does not exist"),
        (["evaluate", "--env", "CartPole-v1", "--agent", "."], "'.' is a folder but neither an RL Zoo run"),
        (["report", "."], "no rlwrappers evaluation"),
        ([*CARTPOLE, "--shift-at-episode", "x"], "episode number"),
        ([*CARTPOLE, "--play-pre-shift"], "--shift-at-episode"),
        (
            [*CARTPOLE, "--shift", "obs_noise(std=1)", "--shift-at-episode", "10", "--episodes", "10"],
            "`shift_at` must be an episode in 1 .. 9",
        ),
        ([*CARTPOLE, "--observational", "--when", "always"], "--observational sets when"),
        (
            ["evaluate", "--env", "CartPol-v1", "--agent", "ppo-CartPole-v1"],
            "Environment `CartPol` doesn't exist. Did you mean: `CartPole`?",
        ),
        ([*CARTPOLE, "--seeds", "3", "--seed-list", "7"], "argument --seed-list: not allowed with argument --seeds"),
        ([*CARTPOLE, "--seeds", "10000000000"], "`seeds` must be a count from 1 to 1,000,000"),
        ([*CARTPOLE, "--atari"], "needs an Atari env (ALE, or a Toybox game)"),
        ([*CARTPOLE, "--min-score", "inf"], "--min-score must be a finite score, received inf"),
    ],
)
def test_bad_input_exits_with_2_and_one_line(tmp_path, args, message):
    if args[0] == "evaluate":
        args = [*args, "--out", str(tmp_path / "run"), "--quiet"]
    result = subprocess.run([*COMMANDS["script"], *args], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "run" / "index.json").exists()


@pytest.mark.slow
def test_the_causal_and_observational_protocols_from_the_command_line(tmp_path):
    base = ["evaluate", "--env", "CartPole-v1", "--agent", "ppo-CartPole-v1", "--shift", "obs_noise(std=1.0)"]
    quick = ["--episodes", "12", "--seed-list", "0", "1", "--quiet", "--probe", "0", "--workers", "2"]
    causal = run(*base, *quick, "--shift-at-episode", "--out", str(tmp_path / "causal"))
    assert causal.returncode == 0, causal.stderr
    assert rw.open_evaluation(tmp_path / "causal").shift_at == 6  # halfway
    assert "Fixed-seed check passed: 2 shifted runs" in causal.stdout
    assert "significant: the shift lowers the mean return" in causal.stdout
    assert (tmp_path / "causal" / "report" / "impact-0.png").exists()

    observed = run(*base, *quick, "--observational", "bursts(p=0.05, duration=(5, 20))", "--out", str(tmp_path / "obs"))
    assert observed.returncode == 0, observed.stderr
    evaluation = rw.open_evaluation(tmp_path / "obs")
    assert evaluation.observational
    assert evaluation.request["shifts"]["obs_noise(std=1.0)"][0]["when"] == "bursts(p=0.05, duration=(5, 20))"
    assert "Damped-trend forecasts" in observed.stdout and "no shift" in observed.stdout
    assert (tmp_path / "obs" / "report" / "forecast-0.png").exists()


def test_the_protocols_default_to_ten_seeds():
    parser, _ = cli._parser()
    args = parser.parse_args(["evaluate", "--env", "E", "--agent", "A", "--out", "o", "--shift-at-episode"])
    assert args.shift_at_episode == cli.HALFWAY and cli._shift_at(args.shift_at_episode, 40) == 20
    assert cli._run_options(args, shift_impact.SEEDS)["seeds"] == 10
    plain = parser.parse_args(["evaluate", "--env", "E", "--agent", "A", "--out", "o"])
    assert cli._run_options(plain)["seeds"] == cli.SEEDS == 5


@pytest.mark.slow
def test_the_demo_runs_from_a_clean_folder_and_writes_the_report(tmp_path):
    result = subprocess.run(
        [*COMMANDS["script"], "demo", "--quiet"], capture_output=True, text=True, timeout=600, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    out = tmp_path / "rlwrappers-demo"
    assert f"Report: {out / 'report' / 'report.html'}" in result.stdout
    evaluation = rw.open_evaluation(out)
    assert evaluation.complete
    assert set(evaluation.index["shift"]) == {"baseline", *cli.DEMO_SHIFTS}
    assert evaluation.request["shifts"]["obs_noise"][0]["std"] == 0.1
    for name in ("lcb.png", "pareto.png", "returns.png", "deltas.png", "summary.csv"):
        assert (out / "report" / name).stat().st_size > 1000 or name == "summary.csv"
    for kind in cli.DEMO_SHIFTS:
        assert f"\n{kind} " in result.stdout  # a row of the table
    assert "flip_rate" not in result.stdout  # no probe, no minimum score: no table of n/a
