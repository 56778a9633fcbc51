"""The card's bootstrap intervals against rliable 1.2's StratifiedBootstrap, where the two definitions coincide.

rliable pins arch<8, and arch 7 does not import under pandas 3, so rliable lives in a venv of its own,
``.venv-rliable`` (``bash scripts/test.sh`` creates it), and runs in a subprocess. rliable's matrices are
(runs, tasks): a card arm of (seeds, episodes) is its transpose, tasks = seeds and runs = episodes. arch applies
one set of indices to every positional array, so two arms passed side by side stay paired.

The two bootstraps draw from different generators, so the interval ends agree within Monte Carlo error only:
3% of the interval's width (about 4 standard errors of the difference at 20,000 replicates) plus a slack.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from rlwrappers.metrics import grade
from rlwrappers.metrics.card import impact, paired_bootstrap
from rlwrappers.metrics.reproducibility import iqm, stratified_bootstrap_ci

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
RLIABLE_PYTHON = ROOT / ".venv-rliable" / "bin" / "python"
REPS = 20_000
RANDOM_RETURN = 20.0
WIDTH_SHARE, SLACK = 0.03, 1e-9

# argv: arms.npy (2, seeds, episodes), scores.npy (runs, tasks), random return, reps. Prints JSON on stdout.
RLIABLE_SCRIPT = """
import json, sys, warnings
warnings.simplefilter("ignore", FutureWarning)  # arch 7 deprecates random_state, which rliable passes on
import numpy as np
from rliable import library, metrics

arms, scores = np.load(sys.argv[1]), np.load(sys.argv[2])
random_return, reps = float(sys.argv[3]), int(sys.argv[4])
clean, shifted = arms[0].T, arms[1].T  # (episodes, seeds): runs x tasks


def interval(func, *args):
    # rliable 1.2 draws its indices from numpy's global generator, not from random_state: seed both.
    np.random.seed(0)
    bootstrap = library.StratifiedBootstrap(*args, random_state=np.random.RandomState(0))
    low, high = bootstrap.conf_int(func, reps=reps, method="percentile")
    return [float(func(*args)), float(low[0]), float(high[0])]


def impact(c, s):
    return (c.mean() - s.mean()) / (c.mean() - random_return)


np.random.seed(0)
point, ci = library.get_interval_estimates(
    {"scores": scores}, lambda x: np.array([metrics.aggregate_iqm(x)]), reps=reps,
    random_state=np.random.RandomState(0),
)
print(json.dumps({
    "mean": interval(np.mean, clean),
    "impact": interval(impact, clean, shifted),
    "iqm": [float(point["scores"][0]), float(ci["scores"][0, 0]), float(ci["scores"][1, 0])],
}))
"""


def card_arms(seeds: int = 5, episodes: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """A clean and a shifted arm, (seeds, episodes): strong seed effects, and each episode's luck in both arms."""
    rng = np.random.default_rng(7)
    seed_effect = rng.normal(0.0, 20.0, size=(seeds, 1))
    luck = rng.normal(0.0, 10.0, size=(seeds, episodes))
    clean = 100.0 + seed_effect + luck
    shifted = 70.0 + seed_effect + 0.8 * luck + rng.normal(0.0, 3.0, size=(seeds, episodes))
    return clean, shifted


def iqm_scores(runs: int = 10, tasks: int = 8) -> np.ndarray:
    """Scores (runs, tasks) with tasks of very different levels and spreads, and a heavy tail."""
    rng = np.random.default_rng(11)
    return np.linspace(0.0, 2.0, tasks) + rng.standard_t(3, size=(runs, tasks)) * np.linspace(0.1, 0.5, tasks)


@pytest.fixture(scope="module")
def rliable(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[float]]:
    if not RLIABLE_PYTHON.exists():
        pytest.skip(f"{RLIABLE_PYTHON} is missing: `bash scripts/test.sh` creates it with rliable 1.2.0")
    folder = tmp_path_factory.mktemp("rliable")
    np.save(folder / "arms.npy", np.stack(card_arms()))
    np.save(folder / "scores.npy", iqm_scores())
    args = [str(folder / "arms.npy"), str(folder / "scores.npy"), str(RANDOM_RETURN), str(REPS)]
    done = subprocess.run(
        [str(RLIABLE_PYTHON), "-c", RLIABLE_SCRIPT, *args], capture_output=True, text=True, timeout=300
    )
    if done.returncode != 0:
        pytest.fail(f"rliable's subprocess exited with {done.returncode}:\n{done.stderr}")
    result: dict[str, list[float]] = json.loads(done.stdout)
    return result


def assert_same_interval(ours: tuple[float, float, float], theirs: list[float]) -> None:
    (estimate, low, high), (their_estimate, their_low, their_high) = ours, theirs
    assert estimate == pytest.approx(their_estimate, rel=1e-12, abs=1e-12)
    tolerance = WIDTH_SHARE * (their_high - their_low) + SLACK
    assert abs(low - their_low) <= tolerance, (low, their_low, tolerance)
    assert abs(high - their_high) <= tolerance, (high, their_high, tolerance)


def test_an_arms_mean_return_has_rliables_stratified_interval(rliable):
    clean, _ = card_arms()
    ours = paired_bootstrap([clean], lambda c: float(np.mean(c)), np.random.default_rng(0), reps=REPS)
    assert_same_interval(ours, rliable["mean"])


def test_the_impact_has_rliables_interval_over_paired_arms(rliable):
    clean, shifted = card_arms()
    statistic = lambda c, s: impact(c, s, RANDOM_RETURN)  # noqa: E731 - as family_scores builds it
    ours = paired_bootstrap([clean, shifted], statistic, np.random.default_rng(0), reps=REPS)
    assert_same_interval(ours, rliable["impact"])


def test_the_iqm_has_rliables_stratified_interval(rliable):
    ours = stratified_bootstrap_ci(iqm_scores(), iqm, np.random.default_rng(0), reps=REPS)
    assert_same_interval(ours, rliable["iqm"])


def test_card_v2s_one_bootstrap_gives_rliables_intervals_of_the_mean_and_the_impact(rliable):
    clean, shifted = card_arms()
    g = grade.grade(clean, {"shift": [shifted]}, RANDOM_RETURN, 500.0, np.random.default_rng(0), reps=REPS)
    clean_return, shift_impact = g.clean_return, g.families["shift"].impact[0]
    assert_same_interval((clean_return.value, clean_return.low, clean_return.high), rliable["mean"])
    assert_same_interval((shift_impact.value, shift_impact.low, shift_impact.high), rliable["impact"])
