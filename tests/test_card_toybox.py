"""A card on a Toybox game: seed 000's catalogue interventions, made on the raw game under the Atari preprocessing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rlwrappers as rw
from rlwrappers import ladders
from rlwrappers.agents import TorchAgent
from rlwrappers.metrics import card as scores
from rlwrappers.report.card import read_robustness_card
from rlwrappers.studies.robustness_card import robustness_card

pytest.importorskip("ctoybox")
pytest.importorskip("ale_py")
torch = pytest.importorskip("torch")

pytestmark = pytest.mark.slow

TOYBOX = "rlwrappers/ToyboxBreakout-v0"


def _scaled(module: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return module(x / 255.0)


def small_agent() -> TorchAgent:
    """A seeded, untrained convolutional policy over the (4, 84, 84) frames the preprocessing gives."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(4, 4, kernel_size=8, stride=8),
        torch.nn.ReLU(),
        torch.nn.Flatten(),
        torch.nn.Linear(4 * 10 * 10, 4),
    )
    env = ladders.calibration.make_env(TOYBOX)
    agent = TorchAgent(net, env.observation_space, env.action_space, head="logits", forward=_scaled)
    env.close()
    return agent


def test_a_toybox_card_makes_the_catalogues_interventions_as_each_game_starts(tmp_path: Path) -> None:
    ladder = ladders.ladder(TOYBOX)
    assert [i.name for i in ladder.interventions] == [
        "paddle_width_12", "paddle_width_48", "paddle_speed_2", "drop_row_5", "drop_row_2", "drop_column_8",
    ]  # fmt: skip
    out = tmp_path / "card"
    record = robustness_card(small_agent(), TOYBOX, out=out, seeds=1, episodes=1, reps=100, workers=1, progress=False)
    assert read_robustness_card(out) == record | {"timings": read_robustness_card(out)["timings"]}
    runs = rw.open_evaluation(out / "runs")

    def returns(shift: str) -> np.ndarray:
        path = runs.index.loc[runs.index["shift"] == shift, "path"].iloc[0]
        log = rw.read_log(runs.path / path)
        if shift.startswith("intervention."):  # made at the reset of each game, on the raw game
            assert log.episodes["intervene.active"].astype(bool).all()
        return log.episodes["return"].to_numpy(dtype=np.float64)[np.newaxis, :]

    clean = returns("baseline")
    assert [x["name"] for x in record["interventions"]] == [i.name for i in ladder.interventions]
    for shown, entry in zip(ladder.interventions, record["interventions"], strict=True):
        shifted = returns(shown.arm)
        assert entry["mean_return"] == float(shifted.mean())
        impact = scores.impact(clean, shifted, ladder.random_return)
        assert entry["impact"] == (None if np.isnan(impact) else impact)
        assert entry["spec"] == [f"intervene(interventions=['{shown.name}'])"]


def test_a_card_on_an_env_whose_package_is_missing_names_its_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import sys

    from rlwrappers.error import MissingExtra

    agent = small_agent()
    monkeypatch.setitem(sys.modules, "ctoybox", None)  # as if the toybox extra were not installed
    with pytest.raises(
        MissingExtra, match=r"toybox.*rlwrappers/ToyboxBreakout-v0|rlwrappers/ToyboxBreakout-v0.*toybox"
    ):
        robustness_card(agent, TOYBOX, out=tmp_path / "card", progress=False)
    assert not (tmp_path / "card").exists()  # refused before any run
