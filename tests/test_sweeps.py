"""Probes, impact tables, sweeps and their edges, the report's shift section, and the ``sweep`` command."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import rlwrappers as rw
from rlwrappers import cli
from rlwrappers.error import InvalidArgument, InvalidType, UnknownName
from rlwrappers.metrics.impact import normalized_impact
from rlwrappers.report.evaluation import write_report
from rlwrappers.studies import EnvSetup, Execution
from rlwrappers.studies import sweep as sweep_study
from rlwrappers.studies.design import BASELINE
from rlwrappers.studies.probes import Probe, probe_path
from rlwrappers.studies.results import Evaluation, open_evaluation

SHARED_AGENTS = Path(__file__).resolve().parents[2] / "shared" / "agents"
PPO_BREAKOUT = SHARED_AGENTS / "ppo-BreakoutNoFrameskip-v4-seed0.zip"

SHIFTS = ["fgsm(eps=0.01)", "fgsm(eps=0.05)", "fgsm(eps=0.2)", "action_noise(p=0.3)"]


def _cartpole(out: Path, probe: int = 12) -> Evaluation:
    return rw.evaluate(
        "ppo-CartPole-v1",
        "CartPole-v1",
        SHIFTS,
        episodes=2,
        seeds=2,
        out=out,
        probe=probe,
        execution=Execution(workers=1, progress=False),
    )


@pytest.fixture(scope="module")
def cartpole(tmp_path_factory: pytest.TempPathFactory) -> Evaluation:
    return _cartpole(tmp_path_factory.mktemp("cartpole"))


# -- probes ------------------------------------------------------------------------------------------------
def test_probes_pair_clean_and_attacked_inputs_at_the_same_states(cartpole: Evaluation) -> None:
    probes = cartpole.probes()
    assert set(probes) == {("ppo-CartPole-v1", s) for s in SHIFTS[:3]}  # action noise changes no observation
    reference = probes["ppo-CartPole-v1", SHIFTS[0]]
    assert reference.clean.shape == (12, 4) and reference.shifted.shape == (12, 4)
    assert np.all(reference.step % 4 == 0)
    agent = rw.load_agent("ppo-CartPole-v1")
    for shift, eps in zip(SHIFTS[:3], (0.01, 0.05, 0.2), strict=True):
        probe = probes["ppo-CartPole-v1", shift]
        np.testing.assert_array_equal(probe.clean, reference.clean)  # one clean game for every shift
        size = np.abs(probe.shifted - probe.clean).max(axis=1)
        assert np.all(size <= eps * 1.0001) and np.all(size > eps * 0.5)
        np.testing.assert_array_equal(probe.clean_action, agent.act(probe.clean))
        np.testing.assert_array_equal(probe.shifted_action, agent.act(probe.shifted))
    flips = [probes["ppo-CartPole-v1", s].flipped.mean() for s in SHIFTS[:3]]
    assert flips[0] < flips[2] and flips[2] > 0.8


def test_probes_are_bit_identical_for_the_same_seeds(cartpole: Evaluation, tmp_path: Path) -> None:
    again = _cartpole(tmp_path)
    for key, probe in cartpole.probes().items():
        other = again.probes()[key]
        for name in Probe.__dataclass_fields__:
            np.testing.assert_array_equal(getattr(probe, name), getattr(other, name))


def test_a_resumed_evaluation_keeps_its_probes(cartpole: Evaluation) -> None:
    path = cartpole.path / probe_path("ppo-CartPole-v1", SHIFTS[0])
    before = path.stat().st_mtime_ns
    _cartpole(cartpole.path)
    assert path.stat().st_mtime_ns == before


def test_bad_probe_and_wrapper_arguments_fail_before_any_run(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match=r"`probe` must be an int >= 0.*-1"):
        rw.evaluate("ppo-CartPole-v1", "CartPole-v1", SHIFTS, out=tmp_path, probe=-1)
    with pytest.raises(InvalidType, match="`outer_wrappers` must be a list of callables"):
        rw.evaluate("ppo-CartPole-v1", "CartPole-v1", SHIFTS, out=tmp_path, env=EnvSetup(outer_wrappers=["atari"]))
    assert not any(tmp_path.iterdir())


# -- tables ------------------------------------------------------------------------------------------------
def test_impact_is_eq_3_on_the_mean_returns_with_its_seed_error(cartpole: Evaluation) -> None:
    table = sweep_study.impacts(cartpole, minimum=0.0)
    episodes = cartpole.episodes()
    for shift in SHIFTS:
        rows = episodes[episodes["shift"] == shift]
        clean, shifted = rows["baseline_return"].mean(), rows["return"].mean()
        row = table.loc[("ppo-CartPole-v1", shift)]
        assert row["clean"] == clean and row["shifted"] == shifted
        assert row["impact"] == pytest.approx(normalized_impact(clean, shifted, 0.0))
        per_seed = rows.groupby("run_seed")[["baseline_return", "return"]].mean()
        seeds = normalized_impact(per_seed["baseline_return"], per_seed["return"], 0.0)
        assert row["impact_sem"] == pytest.approx(np.std(seeds, ddof=1) / math.sqrt(2))
    assert table.loc[("ppo-CartPole-v1", "fgsm(eps=0.2)"), "impact"] > 0.2


def test_impact_needs_a_minimum_score(cartpole: Evaluation) -> None:
    assert sweep_study.resolve_minimum("CartPole-v1") is None
    assert sweep_study.resolve_minimum("PongNoFrameskip-v4") == -21.0
    assert sweep_study.impacts(cartpole)["impact"].isna().all()


def test_state_metrics_read_the_probes(cartpole: Evaluation) -> None:
    table = sweep_study.state_metrics(cartpole)
    for (agent, shift), probe in cartpole.probes().items():
        row = table.loc[(agent, shift)]
        assert row["states"] == 12
        assert row["flip_rate"] == probe.flipped.mean()
        difference = (probe.shifted - probe.clean).astype(np.float64)
        assert row["linf"] == pytest.approx(np.abs(difference).max(axis=1).mean())
        assert row["l2"] == pytest.approx(np.linalg.norm(difference, axis=1).mean())
        assert math.isnan(row["ssim"]) and math.isnan(row["lpips"])  # not images


def test_curves_group_shifts_that_differ_in_one_number(tmp_path: Path) -> None:
    def entry(**params: object) -> list[dict[str, object]]:
        return [{"name": "brightness_contrast", "layout": None, "when": "always", **params}]

    shifts = {
        "a": entry(alpha=1.2, beta=0.0),
        "b": entry(alpha=1.5, beta=0.0),
        "c": entry(alpha=1.0, beta=10.0),
        "d": entry(alpha=1.0, beta=20.0),
        "e": entry(alpha=1.2, beta=20.0),
        "both": [*entry(alpha=1.2, beta=0.0), *entry(alpha=1.5, beta=0.0)],
    }
    evaluation = Evaluation(tmp_path, {"shifts": shifts}, pd.DataFrame())
    found = {(c.param, c.shifts) for c in sweep_study.curves(evaluation)}
    assert found == {
        ("alpha", ("a", "b")),
        ("alpha", ("d", "e")),  # beta 20: alpha 1.0 and 1.2
        ("beta", ("c", "d")),
        ("beta", ("a", "e")),  # alpha 1.2: beta 0 and 20
    }
    titles = {c.title for c in sweep_study.curves(evaluation)}
    assert "brightness_contrast(beta=0.0) over alpha" in titles  # alpha's default 1.2 is not repeated


def _table(values: dict[str, tuple[float, float]]) -> pd.DataFrame:
    index = pd.MultiIndex.from_tuples([("a", s) for s in values], names=["agent", "shift"])
    impact = [v[0] for v in values.values()]
    return pd.DataFrame(
        {"impact": impact, "flip_rate": [v[1] for v in values.values()], "lpips": 0.1, "ssim": 0.9}, index=index
    )


def test_edge_is_the_mildest_value_reaching_the_target_in_listed_order() -> None:
    curve = sweep_study.Curve("jpeg", "quality", (90.0, 50.0, 20.0, 10.0), ("q90", "q50", "q20", "q10"), {})
    table = _table({"q90": (0.0, 0.1), "q50": (0.2, 0.4), "q20": (0.6, 0.9), "q10": (0.9, 1.0)})
    found = sweep_study.edge(table, curve, 0.5)
    assert found["value"] == 20.0 and found["shift"] == "q20" and found["metric_value"] == 0.6
    assert found["interpolated"] == pytest.approx(50.0 + (0.5 - 0.2) * (20.0 - 50.0) / (0.6 - 0.2))
    assert sweep_study.edge(table, curve, 0.05, "flip_rate")["value"] == 90.0
    assert sweep_study.edge(table, curve, 0.95)["value"] is None
    with pytest.raises(InvalidArgument, match="`metric` must be one of"):
        sweep_study.edge(table, curve, 0.5, "impcat")
    with pytest.raises(InvalidArgument, match="`agent` must be one of"):
        sweep_study.edge(table, curve, 0.5, agent="b")


def test_sweep_specs_are_checked_before_any_run(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument, match="`param` must name the parameter"):
        sweep_study.sweep("ppo-CartPole-v1", "CartPole-v1", "obs_noise(std=0.1)", out=tmp_path)
    with pytest.raises(UnknownName, match="no parameter `sdt`"):
        sweep_study.sweep("ppo-CartPole-v1", "CartPole-v1", "obs_noise", "sdt", [0.1], out=tmp_path)
    with pytest.raises(InvalidArgument, match="`values` must not repeat"):
        sweep_study.sweep("ppo-CartPole-v1", "CartPole-v1", "obs_noise", "std", [0.1, 0.1], out=tmp_path)
    with pytest.raises(InvalidArgument, match="`values` must hold finite numbers"):
        sweep_study.sweep("ppo-CartPole-v1", "CartPole-v1", "obs_noise", "std", [0.1, "x"], out=tmp_path)
    with pytest.raises(InvalidArgument, match="`quality` must be"):
        sweep_study.sweep("ppo-CartPole-v1", "CartPole-v1", "jpeg", values=[50, 0], out=tmp_path)
    assert not any(tmp_path.iterdir())


def test_default_sweeps_build_valid_specs() -> None:
    for name, default in sweep_study.SWEEPS.items():
        param, specs = sweep_study._sweep_specs(name, None, None)
        assert param == default.param and len(specs) == len(default.values)


# -- report and command line -------------------------------------------------------------------------------
def test_the_report_shows_impact_flips_and_each_sweep(cartpole: Evaluation, tmp_path: Path) -> None:
    page = write_report(cartpole, tmp_path, minimum=0.0, lpips=None)
    text = page.read_text()
    assert "Impact and imperceptibility" in text and "Edges of imperceptibility" in text
    assert "fgsm over eps" in text and "LPIPS: not asked for" in text
    assert (tmp_path / "sweep-0.png").exists() and not (tmp_path / "spectra.png").exists()  # no images
    table = pd.read_csv(tmp_path / "impact.csv", index_col=[0, 1])
    expected = sweep_study.sweep_table(cartpole, 0.0)
    np.testing.assert_allclose(table["impact"], expected["impact"])
    np.testing.assert_allclose(table["flip_rate"], expected["flip_rate"])


def test_the_report_says_why_impact_or_lpips_is_missing(cartpole: Evaluation, tmp_path: Path) -> None:
    text = write_report(cartpole, tmp_path).read_text()
    assert "impact is n/a" in text
    assert "LPIPS: " in text  # the model's label, or why it is n/a here


def test_the_sweep_command_writes_the_curves(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "run"
    args = ["sweep", "--env", "CartPole-v1", "--agent", "ppo-CartPole-v1", "--shift", "obs_noise", "--param", "std"]
    args += ["--values", "0.05,0.5", "--min-score", "0", "--episodes", "1", "--seeds", "1", "--probe", "8"]
    assert cli.main([*args, "--out", str(out), "--quiet", "--workers", "1"]) == 0
    printed = capsys.readouterr().out
    assert "flip_rate" in printed and "obs_noise(std=0.5)" in printed
    evaluation = open_evaluation(out)
    assert [c.values for c in sweep_study.curves(evaluation)] == [(0.05, 0.5)]
    assert (out / "report" / "sweep-0.png").exists()


def test_placement_needs_atari(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["evaluate", "--env", "CartPole-v1", "--agent", "ppo-CartPole-v1", "--placement", "input"]
    assert cli.main([*args, "--out", str(tmp_path / "x")]) == 2
    assert "--placement applies only with --atari" in capsys.readouterr().err


# -- Atari -------------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.skipif(not PPO_BREAKOUT.exists(), reason="needs the shared Breakout agents")
def test_atari_corruptions_strike_the_raw_frame_and_attacks_the_network_input(tmp_path: Path) -> None:
    import ale_py
    import gymnasium as gym

    from rlwrappers.metrics.perceptual import LPIPS
    from rlwrappers.wrappers.atari import atari_wrapper

    gym.register_envs(ale_py)
    shifts = ["jpeg(quality=5)", "fgsm(eps=0.004)"]
    evaluation = rw.evaluate(
        {"ppo": str(PPO_BREAKOUT)},
        "BreakoutNoFrameskip-v4",
        shifts,
        episodes=1,
        seeds=1,
        out=tmp_path / "run",
        probe=8,
        env=EnvSetup(outer_wrappers=[atari_wrapper]),
        execution=Execution(workers=2, progress=False),
    )
    stack = rw.read_log(tmp_path / "run" / "logs/ppo/jpeg_quality=5/seed0").meta["stack"]
    assert stack.index("jpeg") > stack.index("AtariWrapper")  # str(env) names the outermost wrapper first
    stack = rw.read_log(tmp_path / "run" / "logs/ppo/fgsm_eps=0.004/seed0").meta["stack"]
    assert stack.index("fgsm") < stack.index("AtariWrapper")
    probes = evaluation.probes()
    assert probes["ppo", "fgsm(eps=0.004)"].clean.shape == (8, 4, 84, 84)
    table = sweep_study.sweep_table(evaluation, lpips=LPIPS(random_backbone=True))
    assert table.loc[("ppo", "fgsm(eps=0.004)"), "flip_rate"] > 0.5
    assert table.loc[("ppo", "fgsm(eps=0.004)"), "linf"] == pytest.approx(1 / 255)
    assert table.loc[("ppo", "jpeg(quality=5)"), "linf"] > 0.05  # the raw frame's artifacts reach the input
    assert (table["ssim"] < 1).all() and (table["lpips"] > 0).all()
    assert table.loc[("ppo", "fgsm(eps=0.004)"), "impact"] > 0.5  # Breakout's minimum score is 0
    write_report(evaluation, tmp_path / "report", lpips=LPIPS(random_backbone=True))
    assert (tmp_path / "report" / "spectra.png").exists() and (tmp_path / "report" / "band-energy.png").exists()
    assert BASELINE not in {s for _, s in probes}


@pytest.mark.slow
def test_the_adversarial_comparison_script_runs(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[1] / "scripts" / "compare_adversarial.py"
    args = ["--seeds", "1", "--episodes", "1", "--probe", "4", "--workers", "1", "--only", "rotation", "fgsm"]
    done = subprocess.run(
        [sys.executable, str(script), *args, "--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "rotate over degrees" in done.stdout and "fgsm over eps" in done.stdout
    evaluation = open_evaluation(tmp_path / "run")
    table = sweep_study.sweep_table(evaluation)
    vanilla = table.loc[("vanilla", "fgsm(eps=0.3)"), "impact"]
    adversarial = table.loc[("adversarial", "fgsm(eps=0.3)"), "impact"]
    assert vanilla > 0.5 > adversarial  # adversarial training holds against the attack it trained on
    assert (tmp_path / "run" / "report" / "sweep-1.png").exists()
