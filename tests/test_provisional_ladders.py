"""Provisional ladders: a card for any registered env, its ladder calibrated on first use, cached by its hash."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from stable_baselines3 import PPO

import rlwrappers as rw
from rlwrappers import ladders
from rlwrappers.cli import main
from rlwrappers.error import CannotCalibrate, InvalidArgument, InvalidType, UnknownName
from rlwrappers.ladders import provisional, provisional_ladder
from rlwrappers.ladders.provisional import RANGE_FLOOR, cache_folder, recovery_window
from rlwrappers.report.card import validate_robustness_card, write_robustness_leaderboard
from rlwrappers.testing import SpaceEnv

DRIFT = "rlwrappers-tests/Drift-v0"


class Drift(gym.Env[np.ndarray, int]):
    """A point pushed left or right on a line, with a drift: keep it near 0; it falls off at |x| > 1.

    Its state cannot be written (no initial-state noise) and no uncertainty set describes it (no dynamics).
    """

    observation_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[np.ndarray, dict]:
        super().reset(seed=seed)
        self.x, self.drift = self.np_random.uniform(-0.3, 0.3, 2)
        return self._obs(), {}

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict]:
        self.x += 0.1 * (2 * action - 1) + self.drift * 0.05 + self.np_random.normal(0.0, 0.02)
        return self._obs(), 1.0 - abs(self.x), abs(self.x) > 1.0, False, {}

    def _obs(self) -> np.ndarray:
        return np.clip(np.array([self.x, self.drift], dtype=np.float32), -1.0, 1.0)


def register(env_id: str = DRIFT, **kwargs: Any) -> str:
    if env_id in gym.registry:
        del gym.registry[env_id]
    gym.register(env_id, entry_point=kwargs.pop("entry_point", Drift), **kwargs)
    return env_id


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(provisional.CACHE_VARIABLE, str(tmp_path / "cache"))
    return cache_folder()


def test_a_card_on_an_env_registered_here_is_provisional_cached_and_the_same_twice(cache: Path, tmp_path: Path):
    register(max_episode_steps=50, reward_threshold=45.0)
    model = PPO("MlpPolicy", DRIFT, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(64)
    model.save(tmp_path / "drift.zip")
    options: dict[str, Any] = dict(seeds=1, episodes=2, reps=50, workers=1, progress=False)
    first = rw.robustness_card(str(tmp_path / "drift.zip"), DRIFT, out=tmp_path / "a", **options)
    validate_robustness_card(first)
    assert first["provisional"]["origin"] == "calibrated on first use"
    assert first["provisional"]["absent"] == {
        "corruptions": "its observations are not pixel images",
        "dynamics": f"no uncertainty set exists for {DRIFT} (rlwrappers list sets)",
        "init_noise": "its state cannot be read and set (rlwrappers.state.simulators)",
    }
    assert [f["name"] for f in first["families"]] == [
        "obs_noise",
        "action_noise",
        "sticky_action",
        "param_noise",
        "attack",
    ]
    assert first["reference_return"] == 45.0 and "reward_threshold" in first["reference"]["source"]
    cached = cache / f"{first['ladder_sha256']}.json"
    digest = hashlib.sha256(cached.read_bytes()).hexdigest()
    assert digest == first["ladder_sha256"] and json.loads(cached.read_text())["env_id"] == DRIFT
    made = cached.stat().st_mtime_ns

    second = rw.robustness_card(str(tmp_path / "drift.zip"), DRIFT, out=tmp_path / "b", **options)
    assert cached.stat().st_mtime_ns == made and len(list(cache.glob("*.json"))) == 1  # read, not made again
    assert second["ladder_sha256"] == first["ladder_sha256"]
    assert {k: v for k, v in second.items() if k != "timings"} == {k: v for k, v in first.items() if k != "timings"}
    page = (tmp_path / "a" / "card.html").read_text()
    assert "provisional ladder, calibrated on first use" in page and first["ladder_sha256"][:16] in page

    board = write_robustness_leaderboard([tmp_path / "a", tmp_path / "b"], tmp_path / "board")
    assert board.exists()
    # Another reference return is another ladder: its cards do not rank beside these.
    other = ladders.provisional_ladder(DRIFT, reference_return=40.0)
    assert other.sha256 != first["ladder_sha256"]
    rw.robustness_card(str(tmp_path / "drift.zip"), DRIFT, out=tmp_path / "c", ladder=other, **options)
    with pytest.raises(InvalidArgument, match=r"one ladder: .* has ladder_sha256"):
        write_robustness_leaderboard([tmp_path / "a", tmp_path / "c"], tmp_path / "board")


def test_calibration_is_the_same_bit_for_bit_in_two_caches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    texts = []
    for name in ("one", "two"):
        monkeypatch.setenv(provisional.CACHE_VARIABLE, str(tmp_path / name))
        ladder = provisional_ladder("Acrobot-v1")
        texts.append((cache_folder() / f"{ladder.sha256}.json").read_bytes())
    assert texts[0] == texts[1]


def test_units_take_a_floor_from_the_declared_range_where_the_random_policy_barely_moves(cache: Path):
    ladder = provisional_ladder("MountainCar-v0")
    calibration = ladder.calibration
    span = gym.make("MountainCar-v0").observation_space
    ranges = (span.high - span.low).astype(np.float64)
    assert calibration["measured_obs_std"][0] < RANGE_FLOOR * ranges[0]  # the valley: 0.072 of a 1.8 track
    assert calibration["obs_std"] == pytest.approx((RANGE_FLOOR * ranges).tolist(), rel=1e-5)
    noise = ladder.arms("obs_noise")[0].entries[0]["std"]
    assert noise == pytest.approx([0.05 * u for u in calibration["obs_std"]])
    acrobot = provisional_ladder("Acrobot-v1").calibration  # spreads well where its range is its own
    assert acrobot["obs_std"][1:4] == acrobot["measured_obs_std"][1:4]


def test_the_families_follow_what_the_env_supports(cache: Path):
    acrobot = provisional_ladder("Acrobot-v1")
    assert list(acrobot.families) == [
        "obs_noise",
        "action_noise",
        "sticky_action",
        "init_noise",
        "dynamics",
        "param_noise",
        "attack",
    ]
    assert acrobot.provisional == {
        "origin": "calibrated on first use",
        "rules": provisional.RULES,
        "absent": {"corruptions": "its observations are not pixel images"},
    }
    assert acrobot.reference_return == -100.0 and acrobot.reference_agents == ()
    image = register(
        "rlwrappers-tests/Pixels-v0",
        entry_point=SpaceEnv,
        kwargs={
            "observation_space": gym.spaces.Box(0, 255, (48, 48, 3), np.uint8),
            "action_space": gym.spaces.Discrete(3),
            "episode_length": 30,
        },
    )
    pixels = provisional_ladder(image, reference_return=40.0, steps=300)
    assert pixels.kind == "image" and "corruptions" in pixels.families and "init_noise" not in pixels.families
    assert pixels.recovery.start == 6 and pixels.recovery.stop == 9  # T: its longest random episode, 30 steps
    assert {arm.sub_family for arm in pixels.arms("corruptions")} == set(ladders.CORRUPTIONS)


def test_recovery_windows_follow_the_episode_limit():
    assert recovery_window(500) == ladders.definition.RecoveryWindow(100, 150, 20, 200)  # card-v2's CartPole
    assert recovery_window(200) == ladders.definition.RecoveryWindow(40, 60, 8, 80)
    assert recovery_window(3) == ladders.definition.RecoveryWindow(1, 2, 1, 1)


def test_an_env_that_cannot_be_calibrated_says_why_and_what_fixes_it(cache: Path):
    register("rlwrappers-tests/NoThreshold-v0", max_episode_steps=20)
    with pytest.raises(CannotCalibrate, match=r"no reward_threshold.*--reference-return"):
        provisional_ladder("rlwrappers-tests/NoThreshold-v0")
    with pytest.raises(CannotCalibrate, match=r"must lie above the random policy's .*--reference-return"):
        provisional_ladder("rlwrappers-tests/NoThreshold-v0", reference_return=-1e6)
    endless = register(
        "rlwrappers-tests/Endless-v0",
        entry_point=SpaceEnv,
        kwargs={
            "observation_space": gym.spaces.Box(-1.0, 1.0, (3,), np.float32),
            "action_space": gym.spaces.Discrete(2),
            "episode_length": 10**9,
        },
    )
    with pytest.raises(CannotCalibrate, match=r"no episode ended within .* 500 steps.*--max-episode-steps N"):
        provisional_ladder(endless, reference_return=100.0, steps=500)
    for limit in (0, -1, 2.5, True):
        with pytest.raises(InvalidArgument, match=r"`max_episode_steps` \(--max-episode-steps\) must be an int >= 1"):
            provisional_ladder(endless, reference_return=100.0, steps=500, env_kwargs={"max_episode_steps": limit})
    limited = provisional_ladder(endless, reference_return=100.0, steps=500, env_kwargs={"max_episode_steps": 50})
    assert limited.env_kwargs == {"max_episode_steps": 50} and limited.recovery.start == 10
    dict_env = register(
        "rlwrappers-tests/DictObs-v0",
        entry_point=SpaceEnv,
        kwargs={
            "observation_space": gym.spaces.Dict({"a": gym.spaces.Box(-1.0, 1.0, (2,), np.float32)}),
            "action_space": gym.spaces.Discrete(2),
        },
    )
    with pytest.raises(CannotCalibrate, match=r"an agent that takes them whole gets no card.*FlattenObservation"):
        provisional_ladder(dict_env, reference_return=1.0)
    multi = register(
        "rlwrappers-tests/MultiActions-v0",
        entry_point=SpaceEnv,
        kwargs={
            "observation_space": gym.spaces.Box(-1.0, 1.0, (2,), np.float32),
            "action_space": gym.spaces.MultiDiscrete([2, 2]),
        },
    )
    with pytest.raises(CannotCalibrate, match="Discrete or Box actions"):
        provisional_ladder(multi, reference_return=1.0)


def test_bad_arguments_are_refused_by_name(cache: Path):
    with pytest.raises(UnknownName, match="Did you mean `Acrobot-v1`"):
        provisional_ladder("Acrobat-v1")
    with pytest.raises(UnknownName, match="names the module 'no_such_module'"):
        provisional_ladder("no_such_module:Thing-v0")
    with pytest.raises(InvalidType, match="`env_id` must be"):
        provisional_ladder(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="`env_kwargs` must hold JSON values"):
        provisional_ladder("Acrobot-v1", env_kwargs={"render_mode": object()})
    with pytest.raises(InvalidArgument, match="do not build Acrobot-v1"):
        provisional_ladder("Acrobot-v1", env_kwargs={"gravity": 3.0})
    with pytest.raises(InvalidType, match="`reference_return` must be a number"):
        provisional_ladder("Acrobot-v1", reference_return="high")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match=r"CartPole-v1 has a shipped card-v2 ladder.*'reference_return'"):
        ladders.card_ladder("CartPole-v1", reference_return=400.0)
    assert not list(cache.glob("*.json"))  # nothing half-made was kept


def test_a_damaged_cached_ladder_is_calibrated_again(cache: Path):
    ladder = provisional_ladder("Acrobot-v1")
    path = cache / f"{ladder.sha256}.json"
    text = path.read_bytes()
    path.write_bytes(text[: len(text) // 2])
    with pytest.warns(RuntimeWarning, match="does not match its hash"):
        again = provisional_ladder("Acrobot-v1")
    assert again.sha256 == ladder.sha256 and path.read_bytes() == text


def _calibrate(cache: str) -> str:
    os.environ[provisional.CACHE_VARIABLE] = cache
    return str(provisional_ladder("MountainCar-v0").sha256)


def test_two_processes_calibrating_at_once_leave_one_whole_ladder(cache: Path):
    context = multiprocessing.get_context("spawn")
    with context.Pool(2) as pool:
        digests = pool.map(_calibrate, [str(cache.parents[1])] * 4)
    assert len(set(digests)) == 1
    path = cache / f"{digests[0]}.json"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digests[0]
    assert not list(cache.rglob("*.tmp"))


def test_the_ladder_command_shows_and_prints_the_provisional_file(cache: Path, capsys: pytest.CaptureFixture[str]):
    assert main(["ladder", "--env", "CartPole-v0"]) == 0
    shown = capsys.readouterr().out
    digest = provisional_ladder("CartPole-v0").sha256
    assert f"Provisional ladder of CartPole-v0, calibrated on first use (SHA-256 {digest[:16]}" in shown
    assert "obs_noise (by constants) obs_noise: std = [" in shown and "no corruptions:" in shown
    assert main(["ladder", "--env", "CartPole-v0", "--json"]) == 0
    printed = capsys.readouterr()
    assert hashlib.sha256(printed.out.encode()).hexdigest() == digest and "Provisional" in printed.err
    assert main(["ladder", "--env", "CartPole-v1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["env_id"] == "CartPole-v1"
    assert main(["card", "--env", "CartPole-v1", "--agent", "x", "--out", "o", "--reference-return", "3"]) == 2
    assert "has a shipped card-v2 ladder" in capsys.readouterr().err
    assert main(["ladder", "--env", "Pendulum-v1", "--max-episode-steps", "100"]) == 2
