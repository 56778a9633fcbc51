"""Spec strings and entries: parsing, dict specs, labels, `when` inside specs, round trips and errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

import gymnasium as gym
import pytest

import rlwrappers as rw
from rlwrappers import schedule, spec
from rlwrappers.core import INFO_KEY, Entry, layers
from rlwrappers.error import InvalidArgument, InvalidType, SpecSyntaxError, UnknownName
from rlwrappers.schedule import Prob, Starting, Window
from rlwrappers.spec import Call
from rlwrappers.wrappers import (
    ActionNoisePerturbation,
    DynamicsShiftPerturbation,
    ObservationNoisePerturbation,
    StickyActionPerturbation,
)

# -- the parser ----------------------------------------------------------------------------------------------


def test_parse_calls_and_bare_names():
    assert spec.parse("always") == Call("always")
    assert spec.parse(" obs_noise ") == Call("obs_noise")
    assert spec.parse("obs_noise(std=0.1)") == Call("obs_noise", (), {"std": 0.1})
    assert spec.parse("window(1, 5, unit='episode')") == Call("window", (1, 5), {"unit": "episode"})


def test_parse_literals():
    call = spec.parse(
        "f(a=-1.5, b=(1, 2), c=[0.1, 0.2], d={'length': 2.0, 'g': [0, 0, -9.8]}, e=None, f=True, g='x', h=1e-3)"
    )
    assert call.kwargs == {
        "a": -1.5,
        "b": (1, 2),
        "c": [0.1, 0.2],
        "d": {"length": 2.0, "g": [0, 0, -9.8]},
        "e": None,
        "f": True,
        "g": "x",
        "h": 0.001,
    }


def test_parse_nested_calls_and_operators():
    call = spec.parse("obs_noise(std=0.1, when=starting(episode=2) & ~prob(p=0.5) | never)")
    assert call.name == "obs_noise"
    assert call.kwargs["std"] == 0.1
    assert call.kwargs["when"] == Call(
        "|",
        (
            Call("&", (Call("starting", (), {"episode": 2}), Call("~", (Call("prob", (), {"p": 0.5}),)))),
            Call("never"),
        ),
    )
    # a bare name as an argument is a call without arguments; True, False and None stay literals
    assert spec.parse("f(when=always, flag=False)").kwargs == {"when": Call("always"), "flag": False}


def test_parse_never_evaluates(tmp_path: Path):
    target = tmp_path / "created"
    for text in (f"obs_noise(std=open({str(target)!r}, 'w'))", f"open({str(target)!r}, 'w')"):
        parsed = spec.parse(text)  # parsed as a call tree, never run
        assert isinstance(parsed, Call)
    with pytest.raises(UnknownName, match="`open` is not a distribution"):
        Entry.parse(f"obs_noise(std=open({str(target)!r}, 'w'))")
    with pytest.raises(UnknownName, match="unknown perturbation `open`"):
        Entry.parse(f"open(file={str(target)!r}, mode='w')")
    for text in ("__import__('os').system('true')", "obs_noise(std=(lambda: 1)())", "obs_noise(std=[x for x in 'ab'])"):
        with pytest.raises(SpecSyntaxError):
            spec.parse(text)
    assert not target.exists()


@pytest.mark.parametrize(
    ("text", "column", "reason"),
    [
        ("obs_noise(std=0.1", 10, "never closed"),
        ("obs_noise(**x)", 11, "`**` is not allowed"),
        ("obs_noise(std=0.1 clip=True)", 15, "invalid syntax"),
        ("np.obs_noise(std=0.1)", 1, "a call must use a plain name"),
        ("obs_noise(std=x + 1)", 15, "`x + 1` is not a literal value"),
        ("3", 1, "expected `name(key=value, ...)`"),
        ("[obs_noise]", 1, "is not a literal value"),
    ],
)
def test_syntax_errors_point_at_the_column(text, column, reason):
    with pytest.raises(SpecSyntaxError) as excinfo:
        spec.parse(text, what="perturbation spec")
    first, source_line, caret_line = str(excinfo.value).splitlines()
    assert first.startswith(f"could not parse perturbation spec {text!r} at column {column}: ")
    assert reason in first
    assert source_line == f"    {text}"
    assert caret_line == "    " + " " * (column - 1) + "^"


def test_parse_rejects_non_strings():
    with pytest.raises(SpecSyntaxError, match="must be a str, received 3"):
        spec.parse(3)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.1, "0.1"),
        (3, "3"),
        (-2.5, "-2.5"),
        (True, "True"),
        (None, "None"),
        ("gaussian", "'gaussian'"),
        ((1, 3), "(1, 3)"),
        ((0.5,), "(0.5,)"),
        ([0, 0, -9.8], "[0, 0, -9.8]"),
        ({"length": 2.0}, "{'length': 2.0}"),
        ({"opt.gravity": [0.0, 0.0, -12.0]}, "{'opt.gravity': [0.0, 0.0, -12.0]}"),
        (Starting(episode=2) & Prob(0.5), "starting(episode=2) & prob(p=0.5)"),
    ],
)
def test_format_value_writes_what_parse_reads(value, text):
    assert spec.format_value(value) == text
    parsed = spec.parse(f"f(x={text})").kwargs["x"]
    if isinstance(value, schedule.Schedule):
        assert schedule.from_call(parsed) == value
    else:
        assert parsed == value and type(parsed) is type(value)


def test_format_call():
    assert spec.format_call("always", {}) == "always"
    assert spec.format_call("obs_noise", {"std": 0.1, "clip": False}) == "obs_noise(std=0.1, clip=False)"


# -- entries -------------------------------------------------------------------------------------------------


def test_entry_from_a_string():
    entry = Entry.parse("obs_noise(std=0.2, dist='uniform')")
    assert entry.perturbation == ObservationNoisePerturbation(std=0.2, dist="uniform")
    assert entry.when == schedule.ALWAYS and entry.label is None
    assert str(entry) == "obs_noise(std=0.2, dist='uniform')"


def test_entry_from_a_dict():
    entry = Entry.parse({"name": "sticky_action", "p": 0.5, "duration": [1, 3], "when": "prob(p=0.1)", "label": "s"})
    assert entry.perturbation == StickyActionPerturbation(p=0.5, duration=(1, 3))
    assert entry.when == Prob(0.1)
    assert entry.label == "s"
    assert Entry.parse({"name": "obs_noise", "when": Prob(0.1)}).when == Prob(0.1)
    assert Entry.parse({"name": "obs_noise", "when": {"name": "prob", "p": 0.1}}).when == Prob(0.1)


def test_entry_from_a_perturbation_or_an_entry():
    p = ActionNoisePerturbation(p=0.3)
    entry = Entry.parse(p, when="starting(step=2)")
    assert entry.perturbation == p and entry.perturbation is not p
    assert entry.when == Starting(step=2)
    assert Entry.parse(entry) is entry


@pytest.mark.parametrize(
    "text",
    [
        "reward_noise(std=0.1, when='starting(step=3) & prob(p=0.5)')",
        'reward_noise(std=0.1, when="starting(step=3) & prob(p=0.5)")',
        "reward_noise(std=0.1, when=starting(step=3) & prob(p=0.5))",
        "reward_noise(when=starting(step=3) & prob(0.5), std=0.1)",
    ],
)
def test_when_inside_spec_strings(text):
    entry = Entry.parse(text)
    assert entry.when == Starting(step=3) & Prob(0.5)
    assert str(entry) == "reward_noise(when=starting(step=3) & prob(p=0.5))"


def test_own_when_beats_the_default():
    assert Entry.parse("obs_noise", when="prob(p=0.5)").when == Prob(0.5)
    assert Entry.parse("obs_noise(when=always)", when="prob(p=0.5)").when == schedule.ALWAYS
    assert Entry.parse("obs_noise(when=window(0, 3))", when="prob(p=0.5)").when == Window(0, 3)
    assert Entry.parse({"name": "obs_noise", "when": "never"}, when="prob(p=0.5)").when == schedule.Never()


def test_labels():
    assert Entry.parse("obs_noise(label='camera.1')").label == "camera.1"
    env = rw.wrap(
        gym.make("CartPole-v1"),
        "obs_noise(std=0.1)",
        "obs_noise(std=0.2)",
        "obs_noise(std=0.3, label='big')",
        {"name": "reward_noise", "label": "noise-2"},
    )
    assert env.labels == ("obs_noise", "obs_noise-2", "big", "noise-2")
    _, info = env.reset(seed=0)
    assert set(info[INFO_KEY]) == {"obs_noise", "obs_noise-2", "big"}
    _, _, _, _, info = env.step(0)
    assert set(info[INFO_KEY]) == {"obs_noise", "obs_noise-2", "big", "noise-2"}
    assert "noise" in info[INFO_KEY]["noise-2"]
    # a label given is the label used: one another perturbation holds already is refused, never renamed
    with pytest.raises(rw.error.InvalidArgument, match="`label` 'obs_noise-2' of `reward_noise` is taken"):
        rw.wrap(gym.make("CartPole-v1"), "obs_noise", "obs_noise", {"name": "reward_noise", "label": "obs_noise-2"})


@pytest.mark.parametrize(
    "entry",
    [
        Entry.parse("obs_noise"),
        Entry.parse("obs_noise(std=(0.1, 0.2, 0.3, 0.4), clip=False, label='per_dim')"),
        Entry.parse("action_noise(std=0.2, p=0.1, per_element=True, when=prob(p=0.5, per='episode'))"),
        Entry.parse("sticky_action(p=0.5, duration=(2, 4), when=bursts(p=0.1, duration=(3, 5)))"),
        Entry.parse("reward_noise(std=0.3, dist='uniform', when=~window(start=2, stop=9, unit='total_step'))"),
        Entry.parse("init_noise(std=0.05, when=starting(episode=3) | window(start=0, stop=1, unit='episode'))"),
        Entry.parse("dynamics_shift(values={'g': 12.0}, scales={'m': 1.5}, when=starting(step=10))"),
        Entry.parse("dynamics_shift(values={'opt.gravity': [0, 0, -12]}, label='heavy')"),
    ],
    ids=str,
)
def test_entry_round_trips(entry):
    as_dict = entry.to_dict()
    assert Entry.parse(as_dict) == entry
    assert Entry.parse(json.loads(json.dumps(as_dict))) == entry  # as stored in env.spec and log headers
    assert Entry.parse(str(entry)) == entry
    assert str(Entry.parse(str(entry))) == str(entry)
    assert as_dict["name"] == entry.perturbation.name
    assert as_dict["when"] == str(entry.when)
    assert ("label" in as_dict) == (entry.label is not None)
    assert entry.perturbation.params().items() <= as_dict.items()


def test_to_dict_writes_every_parameter():
    assert Entry.parse("obs_noise").to_dict() == {
        "name": "obs_noise",
        "std": 0.1,
        "dist": "gaussian",
        "clip": True,
        "when": "always",
    }
    assert Entry.parse("dynamics_shift(scales={'length': 2})").perturbation == DynamicsShiftPerturbation(
        scales={"length": 2.0}
    )


def test_str_omits_defaults_and_keeps_the_rest():
    assert str(Entry.parse("obs_noise(std=0.1, dist='gaussian', clip=True, when=always)")) == "obs_noise"
    assert str(Entry.parse("sticky_action(duration=(1, 1))")) == "sticky_action"
    assert (
        str(Entry.parse({"name": "obs_noise", "std": 0.5, "when": "prob(0.5)", "label": "x"}))
        == "obs_noise(std=0.5, when=prob(p=0.5), label='x')"
    )


def test_spec_strings_rebuild_wrappers_through_env_spec():
    env = rw.wrap(
        gym.make("Pendulum-v1"),
        "obs_noise(std=(0.1, 0.2, 0.3))",
        "sticky_action(p=0.5, duration=(2, 4))",
        "dynamics_shift(values={'g': 12.0}, when=starting(step=5))",
        when="prob(p=0.5)",
    )
    rebuilt = gym.make(env.spec)
    assert str(rebuilt) == str(env)
    (layer,) = layers(rebuilt)
    assert layer.entries == env.entries
    assert layer.specs == [
        "obs_noise(std=(0.1, 0.2, 0.3), when=prob(p=0.5))",
        "sticky_action(p=0.5, duration=(2, 4), when=prob(p=0.5))",
        "dynamics_shift(values={'g': 12.0}, when=starting(step=5))",
    ]


# -- errors --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "error", "message"),
    [
        ("obs_nosie(std=0.1)", UnknownName, "unknown perturbation `obs_nosie`; known: ['action_noise', "),
        ("obs_nosie(std=0.1)", UnknownName, "Did you mean `obs_noise`?"),
        ("obs_noise(sdt=0.1)", UnknownName, "`obs_noise` has no parameter `sdt`; parameters: ['keys', 'std', "),
        ("obs_noise(sdt=0.1)", UnknownName, "Did you mean `std`?"),
        ("obs_noise(0.1)", InvalidArgument, "must name its parameters: `obs_noise(key=value, ...)`"),
        ("obs_noise(std=-1)", InvalidArgument, "`std` must be >= 0, received -1"),
        ("obs_noise(std=(0.1, -0.2))", InvalidArgument, "`std[1]` must be >= 0, received -0.2"),
        ("obs_noise(std=())", InvalidArgument, "`std` must not be empty"),
        ("obs_noise(dist='gauss')", UnknownName, "Did you mean `gaussian`?"),
        ("obs_noise(clip=1)", InvalidType, "`clip` must be a bool, received 1"),
        ("action_noise(p=1.2)", InvalidArgument, "`p` must be a probability in [0, 1], received 1.2"),
        ("sticky_action(duration=(3, 1))", InvalidArgument, "`duration` must have low <= high"),
        ("dynamics_shift(scales={'length': -1.0})", InvalidArgument, "`scales['length']` must be >= 0"),
        ("dynamics_shift(values=[1, 2])", InvalidType, "`values` must be a dict of parameter names to values"),
        (
            "obs_noise(label='a b')",
            InvalidArgument,
            "`label` must be a word of at most 64 characters, like 'noise_1', received 'a b'",
        ),
        ("obs_noise(label=3)", InvalidArgument, "`label` must be a word"),
        ("obs_noise(when=3)", InvalidType, "`when` must be a schedule, a spec string, a dict or None, received 3"),
        ("obs_noise(when='sometimes')", UnknownName, "unknown schedule `sometimes`"),
        ("obs_noise(when=prob(p=2))", ValueError, "`p` must be a probability"),
        ("obs_noise(when=starting(step=1, episode=1))", InvalidArgument, "exactly one of"),
        ({"std": 0.1}, InvalidArgument, "a perturbation dict needs a string `name`, received {'std': 0.1}"),
        ({"name": 3}, InvalidArgument, "needs a string `name`"),
        ({"name": "obs_noise", "sdt": 0.1}, UnknownName, "Did you mean `std`?"),
        (42, InvalidType, "a perturbation spec must be a string, a dict or a Perturbation, received 42"),
    ],
)
def test_bad_specs_raise_typed_errors(bad, error, message):
    with pytest.raises(error, match=re.escape(message)):
        Entry.parse(bad)


def test_bad_specs_raise_when_wrapping():
    with pytest.raises(UnknownName, match=re.escape("Did you mean `reward_noise`?")):
        rw.wrap(gym.make("CartPole-v1"), "obs_noise", "reward_nosie(std=0.1)")
    with pytest.raises(SpecSyntaxError, match="column"):
        rw.wrap(gym.make("CartPole-v1"), "obs_noise(std=0.1")
    with pytest.raises(InvalidArgument, match="at least one perturbation"):
        rw.wrap(gym.make("CartPole-v1"))
