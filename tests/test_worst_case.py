"""Worst-case search over an uncertainty set: a known argmin found, the held-out re-evaluation, resume, CLI, report."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from helpers_processes import children

from rlwrappers import cli
from rlwrappers.report.worst_case import worst_case_map, write_worst_case_report
from rlwrappers.studies import EnvSetup, Execution
from rlwrappers.studies.worst_case import worst_case
from rlwrappers.testing.bowl import BOWL_ID
from rlwrappers.uncertainty import Dimension, UncertaintySet

BOWL = UncertaintySet("Bowl", BOWL_ID, (Dimension("x", "x", 0.0, 1.0), Dimension("y", "y", 0.0, 1.0)), "tests")
SERIAL = Execution(workers=1, progress=False)


def idle(obs: np.ndarray) -> int:
    return 0


def height(x: float, y: float) -> float:
    """The bowl's return at (x, y): its bottom, 0, is at (0.3, 0.7)."""
    return (x - 0.3) ** 2 + (y - 0.7) ** 2


def test_the_search_finds_the_known_argmin_between_grid_points(tmp_path: Path) -> None:
    found = worst_case(idle, BOWL, out=tmp_path, points=5, episodes=1, seeds=2, budget=200, execution=SERIAL)
    grid = found.points[found.points["phase"] == "grid"]
    assert len(grid) == 25 and set(grid["x"]) == {0.0, 0.25, 0.5, 0.75, 1.0}  # both bounds included
    assert found.grid_min == pytest.approx(height(0.25, 0.75))
    assert found.search_min <= found.grid_min  # never above the worst grid point
    assert abs(found.argmin["x"] - 0.3) < 0.02 and abs(found.argmin["y"] - 0.7) < 0.02
    assert found.search_min == pytest.approx(height(found.argmin["x"], found.argmin["y"]))
    spent = (found.points["phase"] != "grid").sum() * 2
    assert spent <= 200
    assert found.worst == pytest.approx(found.search_min) and found.ci[0] == pytest.approx(found.ci[1])
    assert found.nominal == pytest.approx(height(0.5, 0.5))  # the env's own parameters, on held-out seeds
    assert found.set_mean == pytest.approx(np.mean([height(x, y) for x, y in zip(grid["x"], grid["y"], strict=True)]))
    assert json.loads((tmp_path / "worst_case.json").read_text())["argmin"] == found.argmin


def test_the_held_out_worst_case_is_unbiased_where_the_search_minimum_is_not(tmp_path: Path) -> None:
    noisy = EnvSetup(kwargs={"noise": 0.2, "independent": True})
    found = worst_case(idle, BOWL, out=tmp_path, points=5, episodes=2, seeds=2, budget=0, env=noisy, execution=SERIAL)
    truth = height(found.argmin["x"], found.argmin["y"])
    assert found.search_min < truth  # the unlucky point wins the search
    assert found.ci[0] <= truth <= found.ci[1]  # the held-out interval holds the argmin's true return
    assert found.holdout == 50


def test_a_search_resumes_without_playing_again(tmp_path: Path) -> None:
    first = worst_case(idle, BOWL, out=tmp_path, points=3, episodes=1, seeds=1, budget=24, execution=SERIAL)
    logs = sorted(tmp_path.rglob("steps.parquet"))
    stamps = {p: p.stat().st_mtime_ns for p in logs}
    again = worst_case(idle, BOWL, out=tmp_path, points=3, episodes=1, seeds=1, budget=24, execution=SERIAL)
    assert {p: p.stat().st_mtime_ns for p in logs} == stamps
    pd.testing.assert_frame_equal(again.points, first.points)
    assert again.summary() == first.summary()


def test_the_map_draws_a_curve_a_heatmap_or_pair_plots(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    for names, panels in [(["a"], 1), (["a", "b"], 1), (["a", "b", "c"], 3)]:
        axes = [np.linspace(0, 1, 3)] * len(names)
        grid = pd.DataFrame(list(np.array(np.meshgrid(*axes, indexing="ij")).reshape(len(names), -1).T), columns=names)
        points = grid.assign(phase="grid", mean=rng.random(len(grid)))
        points = pd.concat([points, points.iloc[:2].assign(phase="refine1")], ignore_index=True)
        fig = worst_case_map(points, names, dict(points.iloc[0][names]))
        assert len([ax for ax in fig.axes if ax.get_label() != "<colorbar>"]) == panels
    found = worst_case(idle, BOWL, out=tmp_path, points=3, episodes=1, seeds=1, budget=0, execution=SERIAL)
    page = write_worst_case_report(found, tmp_path / "report")
    assert (tmp_path / "report" / "worst_case.png").stat().st_size > 0
    assert "worst case (held-out)" in page.read_text()


@pytest.mark.slow
def test_the_command_line_searches_a_shipped_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["worst-case", "--agent", "ppo-CartPole-v1", "--set", "CartPole:1", "--points", "3", "--episodes", "1"]
    args += ["--seeds", "1", "--budget", "2", "--holdout", "5", "--workers", "1", "--quiet", "--out", str(tmp_path)]
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "Worst case:" in out and "on 5 held-out episodes, at length = " in out
    assert (tmp_path / "report" / "report.html").exists() and (tmp_path / "points.csv").exists()
    assert cli.main([*args[:5], "--env", "Pendulum-v1", *args[5:]]) == 2
    assert "--set CartPole:1 is a set of CartPole-v1, but --env is 'Pendulum-v1'" in capsys.readouterr().err


def _search_in_child(out: Path, ready: Any) -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    ready.set()
    try:
        worst_case(
            idle,
            BOWL,
            out=out,
            points=4,
            episodes=1,
            seeds=2,
            budget=40,
            execution=Execution(workers=2, progress=False),
        )
    except KeyboardInterrupt:
        os._exit(130)
    os._exit(0)


@pytest.mark.slow
def test_a_search_stopped_by_sigint_resumes_to_the_uninterrupted_result(tmp_path: Path) -> None:
    options = {"points": 4, "episodes": 1, "seeds": 2, "budget": 40, "execution": SERIAL}
    expected = worst_case(idle, BOWL, out=tmp_path / "whole", **options)
    stopped = 0
    for n, delay in enumerate((0.2, 0.4, 0.6, 0.8, 1.0)):  # in the grid, the refinement and the held-out check
        out = tmp_path / f"cut{n}"
        context = children()
        ready = context.Event()
        child = context.Process(target=_search_in_child, args=(out, ready))
        child.start()
        assert ready.wait(timeout=120), delay
        time.sleep(delay)
        if child.pid is not None and child.is_alive():
            os.kill(child.pid, signal.SIGINT)
        child.join(timeout=60)
        assert child.exitcode in (0, 130), delay
        stopped += child.exitcode == 130
        resumed = worst_case(idle, BOWL, out=out, **options)
        pd.testing.assert_frame_equal(resumed.points, expected.points)
        assert resumed.summary() == expected.summary()
    assert stopped >= 2  # most signals landed while the search ran
