"""Reports of a real (small) evaluation: files, numbers, embedded figures, partial runs; and the plots' checks."""

from __future__ import annotations

import base64
import itertools
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import rlwrappers as rw
from rlwrappers import metrics
from rlwrappers.error import InvalidArgument, LogError
from rlwrappers.report import plots
from rlwrappers.report.evaluation import write_report
from rlwrappers.report.tables import format_table
from rlwrappers.studies import Execution
from rlwrappers.studies.results import Evaluation

pytest.importorskip("matplotlib")

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
FIGURES = ("lcb.png", "pareto.png", "returns.png", "deltas.png")
SHIFTS = ["obs_noise(std=0.2)", "action_noise(p=0.3)"]


def _agent() -> Any:
    if "ppo-CartPole-v1" in rw.zoo.names():
        return "ppo-CartPole-v1"
    ppo = pytest.importorskip("stable_baselines3").PPO
    return ppo("MlpPolicy", "CartPole-v1", seed=0, device="cpu")


@pytest.fixture(scope="module")
def evaluation(tmp_path_factory: pytest.TempPathFactory) -> Evaluation:
    out = tmp_path_factory.mktemp("report") / "run"
    return rw.evaluate(
        _agent(), "CartPole-v1", SHIFTS, episodes=2, seeds=2, out=out, execution=Execution(workers=1, progress=False)
    )


@pytest.fixture(scope="module")
def report(evaluation: Evaluation) -> Path:
    return write_report(evaluation)


def _rows(table: str) -> dict[str, list[str]]:
    """format_table's body lines by shift name (names hold no double spaces)."""
    return {cells[0]: cells[1:] for cells in (re.split(r" {2,}", line) for line in table.splitlines()[2:])}


def test_report_writes_every_file_into_the_run_directory(evaluation: Evaluation, report: Path) -> None:
    assert report == evaluation.path / "report" / "report.html"
    for name in FIGURES:
        data = (report.parent / name).read_bytes()
        assert data.startswith(PNG_SIGNATURE) and len(data) > 5_000, name
    assert not (report.parent / "PARTIAL.txt").exists()
    csv = pd.read_csv(report.parent / "summary.csv", index_col=["agent", "shift"])
    pd.testing.assert_frame_equal(csv, evaluation.summary(), check_dtype=False)


def test_html_holds_the_request_the_table_and_the_figures(evaluation: Evaluation, report: Path) -> None:
    page = report.read_text(encoding="utf-8")
    assert "PARTIAL" not in page
    assert "<title>Evaluation report: CartPole-v1</title>" in page
    rows = _rows(format_table(evaluation.summary()))
    assert set(rows) == {"baseline", *SHIFTS}
    header = format_table(evaluation.summary()).splitlines()[0].split()
    mean = header.index("mean") - 1
    for shift, cells in rows.items():
        assert f'<td class="num">{cells[mean]}</td>' in page, shift
    assert "obs_noise(std=0.2, dist=&#x27;gaussian&#x27;" in page  # full spec, escaped
    assert "median(|R - median(R)|)" in page and "P - alpha * sigma" in page
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == len(FIGURES)
    assert base64.b64decode(images[0]) == (report.parent / "lcb.png").read_bytes()


def _copy_with_status(evaluation: Evaluation, target: Path, pending: int | None) -> Path:
    """A copy of the run directory whose index marks one run (or, with None, every run) pending."""
    shutil.copytree(evaluation.path, target, ignore=shutil.ignore_patterns("report"))
    index = json.loads((target / "index.json").read_text())
    for i, row in enumerate(index["runs"]):
        if pending is None or i == pending:
            row["status"] = "pending"
    (target / "index.json").write_text(json.dumps(index))
    return target


def test_a_partial_evaluation_is_marked_partial(evaluation: Evaluation, tmp_path: Path) -> None:
    runs = evaluation.index
    pending = int(np.flatnonzero(runs["shift"] == SHIFTS[0])[0])
    run_dir = _copy_with_status(evaluation, tmp_path / "run", pending)
    page = write_report(run_dir, tmp_path / "out", alphas=[0.25]).read_text(encoding="utf-8")
    assert "<title>PARTIAL Evaluation report: CartPole-v1</title>" in page
    assert f"1 of {len(runs)} runs have not finished" in page
    row = runs.iloc[pending]
    assert f"<li>{row['agent']} / {SHIFTS[0]} / seed {row['seed']} (pending)</li>" in page
    assert "PARTIAL" in (tmp_path / "out" / "PARTIAL.txt").read_text()
    csv = pd.read_csv(tmp_path / "out" / "summary.csv", index_col=["agent", "shift"])
    assert "LCB(0.25)" in csv.columns
    assert csv.xs(SHIFTS[0], level="shift")["episodes"].item() == 2  # one of its two runs left out


def test_no_evaluation_or_no_finished_run_is_refused(evaluation: Evaluation, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(LogError, match="no rlwrappers evaluation"):
        write_report(tmp_path / "empty")
    run_dir = _copy_with_status(evaluation, tmp_path / "run", None)
    with pytest.raises(LogError, match="no finished run"):
        write_report(run_dir)
    assert not (run_dir / "report").exists()


def test_negative_alphas_are_refused_before_writing(evaluation: Evaluation, tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="`alphas`"):
        write_report(evaluation, tmp_path / "out", alphas=[1.0, -0.5])
    assert not (tmp_path / "out").exists()


def test_format_table_names_every_shift_and_keeps_several_agents_apart(evaluation: Evaluation) -> None:
    table = format_table(evaluation.summary())
    assert all(shift in table for shift in ["baseline", *SHIFTS])
    assert len({len(line) for line in table.splitlines()[:2]}) == 1  # header and rule line up
    two = metrics.reproducibility_table({("a", "clean"): [1.0, 3.0], ("b", "clean"): [2.0, 2.0]})
    two.index = two.index.set_names(["agent", "shift"])
    lines = format_table(two).splitlines()
    assert lines[0].split()[:2] == ["agent", "shift"]
    assert lines[2].split()[:4] == ["a", "clean", "2", "2.00"]


def test_lcb_curves_plot_the_metric() -> None:
    returns = {"clean": [10.0, 10.0, 12.0], "noisy": [2.0, 10.0, 12.0]}
    alphas = [0.0, 1.0, 3.0]
    fig = plots.lcb_curves(returns, alphas)
    lines = fig.axes[0].get_lines()
    assert [line.get_label() for line in lines] == ["clean", "noisy"]
    np.testing.assert_allclose(lines[1].get_ydata(), metrics.lcb(returns["noisy"], alphas))


def test_pareto_joins_the_front_only() -> None:
    fig = plots.pareto({"a": 10.0, "b": 8.0, "c": 9.0}, {"a": 5.0, "b": 1.0, "c": 6.0})
    (front,) = [line for line in fig.axes[0].get_lines() if line.get_label() == "Pareto front"]
    assert front.get_xdata().tolist() == [1.0, 5.0] and front.get_ydata().tolist() == [8.0, 10.0]
    assert {t.get_text() for t in fig.axes[0].texts} == {"a", "b", "c"}


def test_pareto_labels_of_close_points_never_overlap() -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text

    performance = {"baseline": 500.0, "reward_noise": 501.7, "dynamics": 436.0, "init_noise": 396.0}
    performance |= {"param_noise": 382.6, "action_noise": 382.4, "obs_noise": 252.6, "same_as_param": 382.6}
    dispersion = {name: 0.0 for name in performance} | {"reward_noise": 15.7, "obs_noise": 149.7}
    fig = plots.pareto(performance, dispersion)
    canvas = FigureCanvasAgg(fig)
    for dpi in (100, 110):  # the screen's and the report's
        fig.set_dpi(dpi)
        canvas.draw()
        renderer = canvas.get_renderer()
        ax = fig.axes[0]
        boxes = {t.get_text(): Text.get_window_extent(t, renderer) for t in ax.texts}  # the text, not its line
        assert sorted(boxes) == sorted(performance)
        for (a, box_a), (b, box_b) in itertools.combinations(boxes.items(), 2):
            assert not box_a.overlaps(box_b), (a, b, dpi)
        frame = ax.get_window_extent(renderer)
        assert all(frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1) for box in boxes.values())


def test_plots_refuse_bad_input() -> None:
    with pytest.raises(InvalidArgument, match="`alphas` must be finite and >= 0"):
        plots.lcb_curves({"a": [1.0, 2.0]}, [0.0, -1.0])
    with pytest.raises(InvalidArgument, match="empty mapping"):
        plots.lcb_curves({}, [0.0, 1.0])
    with pytest.raises(InvalidArgument, match="empty mapping"):
        plots.return_distributions({})
    with pytest.raises(InvalidArgument, match="at least one return"):
        plots.return_distributions({"a": []})
    with pytest.raises(InvalidArgument, match="empty mapping"):
        plots.pareto({}, {})
    with pytest.raises(InvalidArgument, match="same methods"):
        plots.pareto({"a": 1.0}, {"b": 1.0})
    empty = pd.DataFrame({"shift": ["baseline"], "return": [1.0], "baseline_return": [1.0]})
    with pytest.raises(InvalidArgument, match="no shifted episode"):
        plots.paired_deltas(empty)


def test_importing_the_report_modules_leaves_matplotlib_unloaded() -> None:
    modules = ", ".join(f"rlwrappers.report.{name}" for name in ("evaluation", "robustness", "saliency", "plots"))
    code = f"import sys, {modules}; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
