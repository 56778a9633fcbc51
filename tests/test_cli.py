"""The ``rlwrappers`` command line, run as the installed console script and as a module."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import rlwrappers as rw
from rlwrappers import cli, schedule

HEADINGS = ("Registered IDs", "Perturbations (", "Schedules (")


def _console_script() -> list[str]:
    local = Path(sys.executable).with_name("rlwrappers")
    found = str(local) if local.exists() else shutil.which("rlwrappers")
    return [found] if found else [sys.executable, "-m", "rlwrappers.cli"]


COMMANDS = {"script": _console_script(), "module": [sys.executable, "-m", "rlwrappers.cli"]}


def run(*args: str, how: str = "script") -> subprocess.CompletedProcess[str]:
    return subprocess.run([*COMMANDS[how], *args], capture_output=True, text=True, timeout=120)


def _ids(out: str) -> list[str]:
    return [line.split()[0] for line in out.splitlines() if line.startswith("  rlwrappers/")]


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
    assert "60 in the catalogue" in out
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
