"""Schedules: which steps of which episodes are active, in a real env; parsing, printing and errors."""

from __future__ import annotations

import itertools
import re

import gymnasium as gym
import numpy as np
import pytest

import rlwrappers as rw
from rlwrappers import schedule
from rlwrappers.core import INFO_KEY
from rlwrappers.error import InvalidArgument, InvalidProbability, InvalidType, SpecSyntaxError, UnknownName
from rlwrappers.schedule import AllOf, AnyOf, Bursts, Never, Not, Prob, Starting, Window

ZERO = np.zeros(1, np.float32)


def activity(when, episodes: int, steps: int, seed: int = 0, label: str | None = None) -> np.ndarray:
    """Which step calls of each episode had reward noise on, in Pendulum (which never terminates early).

    Entry ``[e, t]`` is the decision at time ``t`` of episode ``e``: the step call made at ``t`` carries it.
    """
    env = rw.RewardNoise(gym.make("Pendulum-v1", max_episode_steps=10_000), std=0.1, when=when, label=label)
    key = label or "reward_noise"
    out = np.zeros((episodes, steps), dtype=bool)
    for e in range(episodes):
        env.reset(seed=seed if e == 0 else None)
        for t in range(steps):
            before = env.active()[key]
            _, _, _, _, info = env.step(ZERO)
            out[e, t] = key in info.get(INFO_KEY, {})
            assert before == out[e, t]  # the layer's own view agrees with what it reported
    return out


def runs(row: np.ndarray) -> list[tuple[int, int]]:
    """(start, length) of each maximal run of True in ``row``."""
    out, t = [], 0
    for value, group in itertools.groupby(row):
        n = len(list(group))
        if value:
            out.append((t, n))
        t += n
    return out


# -- deterministic schedules ---------------------------------------------------------------------------------


def test_always_and_never():
    assert activity("always", 2, 5).all()
    assert not activity("never", 2, 5).any()
    assert not activity(Never(), 2, 5).any()


def test_starting_step_counts_within_each_episode():
    a = activity("starting(step=3)", 3, 7)
    assert a.tolist() == [[False] * 3 + [True] * 4] * 3
    assert activity("starting(step=0)", 2, 4).all()


def test_starting_episode():
    a = activity(Starting(episode=2), 4, 5)
    assert a.tolist() == [[False] * 5, [False] * 5, [True] * 5, [True] * 5]


def test_starting_total_step_counts_over_the_layer_life():
    a = activity("starting(total_step=7)", 3, 5)
    assert a.reshape(-1).tolist() == [False] * 7 + [True] * 8


def test_total_step_counts_steps_of_episodes_cut_by_reset():
    env = rw.RewardNoise(gym.make("Pendulum-v1"), std=0.1, when="starting(total_step=4)")
    seen = []
    for seed, steps in ((0, 3), (1, 3)):  # every episode is cut by the next reset
        env.reset(seed=seed)
        for _ in range(steps):
            seen.append("reward_noise" in env.step(ZERO)[4].get(INFO_KEY, {}))
    assert seen == [False, False, False, False, True, True]


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        ("window(start=2, stop=4)", [[False, False, True, True, False, False]] * 2),
        ("window(start=0, stop=1)", [[True, False, False, False, False, False]] * 2),
        ("window(start=1, stop=2, unit='episode')", [[False] * 6, [True] * 6]),
    ],
)
def test_window(when, expected):
    assert activity(when, 2, 6).tolist() == expected


def test_window_in_episodes():
    a = activity(Window(1, 3, unit="episode"), 4, 3)
    assert a.all(axis=1).tolist() == [False, True, True, False]
    assert (a.all(axis=1) == a.any(axis=1)).all()


def test_window_in_total_steps():
    a = activity("window(start=3, stop=8, unit='total_step')", 3, 5).reshape(-1)
    assert np.flatnonzero(a).tolist() == [3, 4, 5, 6, 7]


def test_observation_decisions_use_the_new_time():
    """Reward noise at time t is reported by the step taken at t; observation noise by the step arriving at t."""
    env = rw.wrap(
        gym.make("Pendulum-v1"),
        "obs_noise(std=0.1)",
        "reward_noise(std=0.1)",
        when="window(start=2, stop=4)",
    )
    for seed in (0, 1):
        _, info = env.reset(seed=seed)
        obs_flags, reward_flags = ["obs_noise" in info.get(INFO_KEY, {})], []
        for _ in range(6):
            records = env.step(ZERO)[4].get(INFO_KEY, {})
            obs_flags.append("obs_noise" in records)
            reward_flags.append("reward_noise" in records)
        # obs_flags[t] is the observation seen at time t (index 0: the reset)
        assert obs_flags == [False, False, True, True, False, False, False]
        assert reward_flags == [False, False, True, True, False, False]


def test_obs_at_reset_follows_the_episode_decision():
    env = rw.ObservationNoise(gym.make("Pendulum-v1"), std=0.1, when="starting(episode=1)")
    clean = gym.make("Pendulum-v1")
    obs, info = env.reset(seed=3)
    np.testing.assert_array_equal(obs, clean.reset(seed=3)[0])
    assert INFO_KEY not in info
    obs, info = env.reset(seed=4)
    assert info[INFO_KEY] == {"obs_noise": {"active": True}}
    assert not np.array_equal(obs, clean.reset(seed=4)[0])


# -- random schedules ----------------------------------------------------------------------------------------


def test_prob_per_step():
    a = activity("prob(p=0.3)", 10, 200, seed=1)
    assert 0.26 <= a.mean() <= 0.34
    assert 0.15 <= a.mean(axis=1).min() and a.mean(axis=1).max() <= 0.45
    assert len({row.tobytes() for row in a}) == 10  # every episode draws anew
    # no dependence on the previous step: the fraction after an active step is near p as well
    assert 0.2 <= a[:, 1:][a[:, :-1]].mean() <= 0.4


def test_prob_extremes():
    assert activity("prob(p=1.0)", 2, 50).all()
    assert not activity("prob(p=0.0)", 2, 50).any()


def test_prob_per_episode():
    a = activity(Prob(0.4, per="episode"), 200, 3, seed=2)
    assert (a.all(axis=1) == a.any(axis=1)).all()  # one decision per episode
    assert 0.3 <= a[:, 0].mean() <= 0.5


def test_random_schedules_repeat_with_the_seed_and_change_with_it():
    for when in ("prob(p=0.5)", "bursts(p=0.1, duration=(2, 5))", "prob(p=0.5, per='episode')"):
        a = activity(when, 20, 30, seed=7)
        assert np.array_equal(a, activity(when, 20, 30, seed=7))
        assert not np.array_equal(a, activity(when, 20, 30, seed=8))


def test_random_schedules_depend_on_the_label():
    a = activity("prob(p=0.5)", 3, 60, seed=0, label="one")
    assert np.array_equal(a, activity("prob(p=0.5)", 3, 60, seed=0, label="one"))
    assert not np.array_equal(a, activity("prob(p=0.5)", 3, 60, seed=0, label="two"))


def test_bursts_of_fixed_duration():
    a = activity("bursts(p=0.05, duration=3)", 10, 200, seed=3)
    complete = [n for row in a for start, n in runs(row) if start + n < a.shape[1]]
    assert len(complete) >= 30
    # bursts that follow each other without a gap merge into one run, so every run is a whole number of bursts
    assert all(n % 3 == 0 for n in complete)
    assert sum(n == 3 for n in complete) >= 0.9 * len(complete)


def test_bursts_durations_lie_within_the_range():
    a = activity(Bursts(0.05, duration=(2, 4)), 20, 200, seed=4)
    complete = [n for row in a for start, n in runs(row) if start + n < a.shape[1]]
    assert len(complete) >= 80
    assert min(complete) >= 2
    single = [n for n in complete if n <= 4]
    assert len(single) >= 0.9 * len(complete)
    assert set(single) == {2, 3, 4}  # both ends of the range are drawn
    # a run longer than one burst is several bursts back to back: k bursts last between 2k and 4k steps
    assert all(any(2 * k <= n <= 4 * k for k in range(1, n // 2 + 1)) for n in complete)
    # bursts start with probability p at each time without one
    starts = sum(len(runs(row)) for row in a)
    assert 0.03 <= starts / (~a).sum() <= 0.07


def test_bursts_end_with_the_episode():
    a = activity("bursts(p=0.5, duration=(50, 50))", 5, 20, seed=0)
    assert a.any()
    # a 50-step burst cannot carry over into the next episode: each episode's first burst starts anew
    for row in a:
        if row.any():
            first = int(np.argmax(row))
            assert row[first:].all()


# -- combinations --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("when", "active_steps"),
    [
        ("starting(step=3) & window(start=0, stop=6)", [3, 4, 5]),
        ("window(start=0, stop=2) | window(start=5, stop=7)", [0, 1, 5, 6]),
        ("~starting(step=4)", [0, 1, 2, 3]),
        ("~window(start=2, stop=5)", [0, 1, 5, 6, 7]),
        ("~(window(start=0, stop=2) | window(start=5, stop=7))", [2, 3, 4, 7]),
        ("starting(step=2) & ~starting(step=6) & always", [2, 3, 4, 5]),
        ("never | starting(step=7)", [7]),
        ("always & never", []),
        ("~always | never", []),
    ],
)
def test_combinations_of_deterministic_schedules(when, active_steps):
    a = activity(when, 2, 8)
    assert [np.flatnonzero(row).tolist() for row in a] == [active_steps, active_steps]


def test_combinations_built_in_python_behave_like_parsed_ones():
    built = (Starting(step=2) & Window(0, 5)) | ~Starting(step=1)
    parsed = "(starting(step=2) & window(start=0, stop=5)) | ~starting(step=1)"
    assert built == schedule.parse(parsed)
    assert np.array_equal(activity(built, 2, 8), activity(parsed, 2, 8))
    assert [np.flatnonzero(row).tolist() for row in activity(built, 1, 8)] == [[0, 2, 3, 4]]


def test_combinations_with_episodes():
    a = activity("starting(episode=1) & ~window(start=2, stop=3, unit='episode')", 4, 3)
    assert a.all(axis=1).tolist() == [False, True, False, True]


def test_not_of_a_random_schedule_is_its_exact_complement():
    for when in ("prob(p=0.3)", "bursts(p=0.2, duration=(1, 3))", "prob(p=0.5, per='episode')"):
        a = activity(when, 6, 40, seed=5)
        assert np.array_equal(activity(f"~{when}", 6, 40, seed=5), ~a)


def test_random_member_draws_do_not_depend_on_deterministic_members():
    plain = activity("prob(p=0.5)", 4, 40, seed=9)
    assert np.array_equal(activity("prob(p=0.5) & always", 4, 40, seed=9), plain)
    assert np.array_equal(activity("prob(p=0.5) | never", 4, 40, seed=9), plain)
    gated = activity("starting(step=10) & prob(p=0.5)", 4, 40, seed=9)
    assert not gated[:, :10].any()
    assert np.array_equal(gated[:, 10:], plain[:, 10:])
    either = activity("window(start=0, stop=5) | prob(p=0.5)", 4, 40, seed=9)
    assert either[:, :5].all()
    assert np.array_equal(either[:, 5:], plain[:, 5:])


def test_episode_gate_on_a_random_schedule():
    a = activity("starting(episode=2) & prob(p=0.5)", 6, 100, seed=0)
    assert not a[:2].any()
    assert 0.4 <= a[2:].mean() <= 0.6


# -- parsing and printing ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("always", "always"),
        ("  never ", "never"),
        ("starting(episode=10)", "starting(episode=10)"),
        ("starting( step = 3 )", "starting(step=3)"),
        ("starting(total_step=5000)", "starting(total_step=5000)"),
        ("window(10, 20)", "window(start=10, stop=20)"),
        ("window(start=1, stop=5, unit='step')", "window(start=1, stop=5)"),
        ('window(start=1, stop=5, unit="episode")', "window(start=1, stop=5, unit='episode')"),
        ("window(0, 9, 'total_step')", "window(start=0, stop=9, unit='total_step')"),
        ("prob(0.5)", "prob(p=0.5)"),
        ("prob(1)", "prob(p=1.0)"),
        ("prob(p=0.25, per='episode')", "prob(p=0.25, per='episode')"),
        ("prob(p=0.25, per='step')", "prob(p=0.25)"),
        ("bursts(p=0.1, duration=(2, 5))", "bursts(p=0.1, duration=(2, 5))"),
        ("bursts(0.1, [2, 5])", "bursts(p=0.1, duration=(2, 5))"),
        ("bursts(p=0.1, duration=3)", "bursts(p=0.1, duration=(3, 3))"),
        ("starting(episode=10) & prob(p=0.5)", "starting(episode=10) & prob(p=0.5)"),
        ("always|never", "always | never"),
        ("starting(step=1) & prob(p=0.5) | never", "(starting(step=1) & prob(p=0.5)) | never"),
        ("never | starting(step=1) & prob(p=0.5)", "never | (starting(step=1) & prob(p=0.5))"),
        ("(never | always) & prob(0.5)", "(never | always) & prob(p=0.5)"),
        ("~prob(p=0.5)", "~prob(p=0.5)"),
        ("~(always & never)", "~(always & never)"),
        ("~~always", "~~always"),
    ],
)
def test_parse_prints_the_canonical_form(text, canonical):
    parsed = schedule.parse(text)
    assert str(parsed) == canonical
    again = schedule.parse(canonical)
    assert again == parsed and str(again) == canonical
    assert hash(again) == hash(parsed)
    assert eval(repr(parsed), {"schedule": schedule}) == parsed


def test_parse_takes_schedules_dicts_and_none():
    s = Prob(0.5)
    assert schedule.parse(s) is s
    assert schedule.parse(None) is schedule.ALWAYS
    assert schedule.parse({"name": "window", "start": 1, "stop": 4, "unit": "episode"}) == Window(1, 4, "episode")
    assert schedule.parse({"name": "always"}) == schedule.Always()


def test_python_operators_build_the_same_trees():
    assert Starting(episode=10) & Prob(0.5) == schedule.parse("starting(episode=10) & prob(p=0.5)")
    assert isinstance(Starting(episode=1) | Never(), AnyOf)
    assert isinstance(Starting(episode=1) & Never(), AllOf)
    assert isinstance(~Never(), Not)
    assert str(~(Prob(0.2) | Never())) == "~(prob(p=0.2) | never)"
    assert Prob(0.5) != Prob(0.25)
    assert len({Prob(0.5), schedule.parse("prob(0.5)"), Prob(0.25)}) == 2


def test_randomness_is_declared():
    assert Prob(0.5).random and Bursts(0.1, 2).random
    assert not Starting(step=1).random and not Window(0, 1).random and not Never().random
    assert (Starting(step=1) & Prob(0.5)).random and (~Prob(0.5)).random
    assert not (Starting(step=1) | Window(0, 1)).random


@pytest.mark.parametrize(
    ("when", "flags"),
    [
        ("always", "on"),
        ("never", "off"),
        ("starting(step=0)", "on"),
        ("starting(step=5)", "off, switches on"),
        ("starting(episode=3)", "on, off"),
        ("starting(total_step=50)", "on, off, switches on"),
        ("window(start=0, stop=5)", "on, switches off"),
        ("window(start=3, stop=8)", "off, switches on, switches off"),
        ("window(start=2, stop=5, unit='episode')", "on, off"),
        ("window(start=50, stop=130, unit='total_step')", "on, off, switches on, switches off"),
        ("window(start=0, stop=50, unit='total_step')", "on, off, switches off"),
        ("prob(p=0.3)", "on, off, switches on, switches off"),
        ("prob(p=0.5, per='episode')", "on, off"),
        ("prob(p=0.0)", "off"),
        ("prob(p=1.0)", "on"),
        ("bursts(p=0.2, duration=(2, 4))", "on, off, switches on, switches off"),
        ("bursts(p=1.0, duration=2)", "on"),
        ("starting(step=5) & starting(episode=2)", "off, switches on"),
        ("window(start=0, stop=5) | window(start=10, stop=15)", "on, switches on, switches off"),
        ("~starting(step=5)", "on, switches off"),
        ("~starting(episode=2)", "on, off"),
        ("always | bursts(p=0.2, duration=2)", "on"),
        ("never & prob(p=0.3)", "off"),
        ("~always", "off"),
    ],
)
def test_switching_says_what_the_schedule_does_within_episodes(when, flags):
    a = activity(when, episodes=20, steps=20)
    seen = {
        "on": a[:, 0].any(),  # at reset
        "off": (~a[:, 0]).any(),
        "switches on": (~a[:, :-1] & a[:, 1:]).any(),
        "switches off": (a[:, :-1] & ~a[:, 1:]).any(),
    }
    assert {name for name, did in seen.items() if did} == set(flags.split(", "))
    said = schedule.parse(when).switching
    assert [said.on_at_reset, said.off_at_reset, said.switches_on, said.switches_off] == list(seen.values())


def test_names():
    assert schedule.names() == ["always", "bursts", "never", "prob", "starting", "window"]


# -- errors --------------------------------------------------------------------------------------------------


def test_unknown_schedule_name_suggests_the_closest():
    with pytest.raises(UnknownName, match=r"unknown schedule `startin`.*Did you mean `starting`\?"):
        schedule.parse("startin(step=1)")
    with pytest.raises(UnknownName, match=r"known: \['always', 'bursts', 'never', 'prob', 'starting', 'window'\]"):
        schedule.parse("sometimes")
    with pytest.raises(UnknownName, match="Did you mean `prob`"):
        schedule.parse("always & porb(p=0.5)")


@pytest.mark.parametrize(
    ("text", "column", "reason"),
    [
        ("prob(p=0.5", 5, "never closed"),
        ("window(1 2)", 8, "invalid syntax"),
        ("prob(p=0.5) & & always", 15, "invalid syntax"),
        ("prob(**{'p': 1})", 6, "`**` is not allowed"),
        ("os.system('ls')", 1, "a call must use a plain name"),
        ("prob(p=0.5)(1)", 1, "a call must use a plain name"),
        ("prob(p=0.5) + always", 1, "is not a literal value"),
        ("always & prob(p=[1, 2] + [3])", 17, "is not a literal value"),
    ],
)
def test_syntax_errors_point_at_the_column(text, column, reason):
    with pytest.raises(SpecSyntaxError) as excinfo:
        schedule.parse(text)
    message = str(excinfo.value)
    first, source_line, caret_line = message.splitlines()
    assert f"could not parse schedule {text!r} at column {column}: " in first
    assert reason in first
    assert source_line == f"    {text}"
    assert caret_line == "    " + " " * (column - 1) + "^"


def test_a_truncated_spec_points_at_its_end():
    with pytest.raises(SpecSyntaxError, match="at column 14"):
        schedule.parse("prob(p=0.5) &")


@pytest.mark.parametrize(
    ("text", "error", "message"),
    [
        ("prob(p=1.5)", InvalidProbability, r"`p` must be a probability in \[0, 1\], received 1.5"),
        ("prob(p=-0.1)", InvalidProbability, r"received -0.1"),
        ("prob(p=True)", InvalidType, r"`p` must be a number, received True \(bool\)"),
        ("prob(p='half')", InvalidType, r"`p` must be a number, received 'half'"),
        ("prob(p=0.5, per='steps')", UnknownName, r"`per` must be one of \['step', 'episode'\].*Did you mean `step`"),
        ("prob(q=0.5)", InvalidType, r"bad arguments for schedule `prob`.*'q'"),
        ("window(start=5, stop=2)", InvalidArgument, r"`stop` must be > `start` \(5\), received 2"),
        ("window(start=3, stop=3)", InvalidArgument, r"`stop` must be > `start`"),
        ("window(start=-1, stop=2)", InvalidArgument, r"`start` must be >= 0, received -1"),
        ("window(start=0, stop=5, unit='epsiode')", UnknownName, r"received 'epsiode'. Did you mean `episode`"),
        ("window(start=0)", InvalidType, r"bad arguments for schedule `window`"),
        ("starting(step=1, episode=2)", InvalidArgument, r"exactly one of `step`, `episode`, `total_step`"),
        ("starting()", InvalidArgument, r"exactly one of .*received none"),
        ("starting(step=-1)", InvalidArgument, r"`step` must be >= 0, received -1"),
        ("starting(step=1.5)", InvalidType, r"`step` must be an integer, received 1.5 \(float\)"),
        ("starting(episode=True)", InvalidType, r"`episode` must be an integer, received True"),
        ("bursts(p=0.1, duration=(5, 2))", InvalidArgument, r"`duration` must have low <= high, received \(5, 2\)"),
        ("bursts(p=0.1, duration=0)", InvalidArgument, r"`duration` must be >= 1, received 0"),
        ("bursts(p=0.1, duration=(1, 2, 3))", InvalidArgument, r"`duration` must be an int or a pair"),
        ("bursts(p=0.1)", InvalidType, r"bad arguments for schedule `bursts`.*duration"),
        ("bursts(p=2, duration=1)", InvalidProbability, r"`p` must be a probability"),
    ],
)
def test_bad_values_raise_typed_errors_naming_the_argument(text, error, message):
    with pytest.raises(error, match=message):
        schedule.parse(text)


def test_errors_subclass_the_builtin_exceptions():
    with pytest.raises(ValueError):
        schedule.parse("prob(p=2)")
    with pytest.raises(ValueError):
        schedule.parse("prob(p=0.5")
    with pytest.raises(TypeError):
        schedule.parse("starting(step=0.5)")


def test_bad_inputs_to_parse():
    with pytest.raises(InvalidType, match="`when` must be a schedule, a spec string, a dict or None, received 42"):
        schedule.parse(42)
    with pytest.raises(InvalidArgument, match="a schedule dict needs a string `name`"):
        schedule.parse({"p": 0.5})
    with pytest.raises(InvalidType, match=r"`&` combines schedules, received 3 \(int\)"):
        Starting(step=1) & 3
    with pytest.raises(InvalidType, match=re.escape("`|` combines schedules, received 'always' (str)")):
        AnyOf(Never(), "always")
    with pytest.raises(InvalidArgument, match="must be finite"):
        Prob(float("nan"))


def test_wrappers_reject_bad_schedules_at_construction():
    with pytest.raises(UnknownName, match="Did you mean `window`"):
        rw.RewardNoise(gym.make("Pendulum-v1"), when="windo(start=1, stop=2)")
    with pytest.raises(InvalidProbability):
        rw.wrap(gym.make("Pendulum-v1"), "obs_noise(std=0.1)", when="prob(p=3)")


@pytest.mark.parametrize("when", ["starting(step=3)", "window(start=2, stop=4)", "window(start=2, stop=4) | never"])
def test_init_noise_under_a_schedule_that_switches_on_only_after_reset_is_refused(when):
    with pytest.raises(rw.error.InvalidArgument, match=r"`init_noise` acts only at reset .* so it would never act"):
        rw.InitialStateNoise(gym.make("CartPole-v1"), std=0.5, when=when)
    with pytest.raises(rw.error.InvalidArgument, match="so it would never act"):
        rw.wrap(gym.make("CartPole-v1"), f"init_noise(std=0.5, when={when!r})")


@pytest.mark.parametrize("when", ["always", "never", "starting(episode=1)", "prob(p=0.5, per='episode')"])
def test_init_noise_acts_under_a_schedule_active_at_reset(when):
    env = rw.InitialStateNoise(gym.make("CartPole-v1"), std=0.5, when=when)
    records = [env.reset(seed=seed)[1].get("rlwrappers", {}).get("init_noise", {}) for seed in range(8)]
    assert any("delta" in record for record in records) == (when != "never")
