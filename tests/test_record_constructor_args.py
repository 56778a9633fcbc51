"""Every public wrapper that records its constructor arguments records all of them, so env.spec rebuilds it."""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass, field
from typing import Any

import ale_py
import gymnasium as gym
import pytest
import reach  # noqa: F401 (registers Reach-v0)
from gymnasium.envs.registration import EnvSpec
from gymnasium.utils import RecordConstructorArgs

import rlwrappers as rw
from rlwrappers.core import ADDED_LATER, Perturb, PerturbationLayer, SingleLayer

gym.register_envs(ale_py)
REACH = "Reach-v0"  # tests/packages/reach.py: a Dict observation with sensors, goals and a camera
AGENT_FOLDED = {"agent": "not part of the spec: an agent is attached at run time (rw.attach)"}


def public_recording_wrappers() -> dict[str, type]:
    """The named wrappers of ``rw``, and ``Perturb`` (what ``rw.wrap`` builds, stored in specs by its path)."""
    out: dict[str, type] = {"Perturb": Perturb}
    for name in rw.__all__:
        obj = getattr(rw, name)
        if inspect.isclass(obj) and issubclass(obj, gym.Wrapper) and issubclass(obj, RecordConstructorArgs):
            out[name] = obj
    return out


WRAPPERS = public_recording_wrappers()


@dataclass
class Setup:
    env_id: str
    # arguments without defaults
    required: dict[str, Any] = field(default_factory=dict)
    # a value other than the default for every argument, written as the wrapper records it
    changed: dict[str, Any] = field(default_factory=dict)
    # arguments that are recorded inside another one (with the reason), checked through the rebuilt wrapper
    folded: dict[str, str] = field(default_factory=dict)
    # how changed arguments are recorded, where that differs from how they were given
    recorded: dict[str, Any] = field(default_factory=dict)


SETUPS = {
    "Perturb": Setup(
        "CartPole-v1",
        required={"perturbations": ["obs_noise(std=0.1)"]},
        changed={
            "perturbations": ["obs_noise(std=0.2)", "reward_noise(std=0.3, label='r')"],
            "when": "prob(p=0.5)",
            "allow_nonfinite": True,
        },
        folded={
            "when": "each recorded perturbation carries its own `when`",
            "allow_nonfinite": "each recorded perturbation carries its own `allow_nonfinite`",
        },
        recorded={
            "perturbations": [
                {
                    "name": "obs_noise",
                    "std": 0.2,
                    "dist": "gaussian",
                    "clip": True,
                    "when": "prob(p=0.5)",
                    "allow_nonfinite": True,
                },
                {
                    "name": "reward_noise",
                    "std": 0.3,
                    "dist": "gaussian",
                    "when": "prob(p=0.5)",
                    "label": "r",
                    "allow_nonfinite": True,
                },
            ]
        },
    ),
    "ObservationNoise": Setup(
        REACH,
        changed={
            "keys": ("observation",),
            "std": 0.3,
            "dist": "uniform",
            "clip": False,
            "when": "prob(p=0.5)",
            "label": "eyes",
            "allow_nonfinite": True,
        },
    ),
    "ActionNoise": Setup(
        "Pendulum-v1",
        changed={"std": 0.2, "p": 0.1, "per_element": True, "when": "window(start=2, stop=9)", "label": "hands"},
    ),
    "StickyAction": Setup(
        "CartPole-v1",
        changed={"p": 0.5, "duration": (2, 4), "when": "starting(episode=3)", "label": "sticky"},
    ),
    "RewardNoise": Setup(
        "CartPole-v1",
        changed={
            "std": 0.5,
            "dist": "uniform",
            "when": "bursts(p=0.1, duration=(1, 3))",
            "label": "payoff",
            "allow_nonfinite": True,
        },
    ),
    "InitialStateNoise": Setup(
        "Pendulum-v1",
        changed={
            "std": 0.2,
            "dist": "uniform",
            "when": "prob(p=0.5, per='episode')",
            "label": "start",
            "allow_nonfinite": True,
        },
    ),
    "ParameterNoise": Setup(
        "CartPole-v1",
        changed={"std": 0.2, "agent": None, "when": "prob(p=0.5, per='episode')", "label": "weights"},
        folded={"agent": "not part of the spec: an agent is attached at run time (rw.attach)"},
    ),
    "FGSM": Setup(
        REACH,
        changed={
            "keys": ("observation",),
            "eps": 0.05,
            "quantize": False,
            "agent": None,
            "when": "starting(episode=2)",
            "label": "attack",
            "allow_nonfinite": True,
        },
        folded=AGENT_FOLDED,
    ),
    "PGD": Setup(
        REACH,
        changed={
            "keys": ("observation",),
            "eps": 0.05,
            "alpha": 0.01,
            "steps": 5,
            "random_start": False,
            "quantize": False,
            "agent": None,
            "when": "prob(p=0.5)",
            "label": "attack",
            "allow_nonfinite": True,
        },
        folded=AGENT_FOLDED,
    ),
    "CarliniWagner": Setup(
        REACH,
        changed={
            "keys": ("observation",),
            "c": 2.0,
            "kappa": 0.5,
            "steps": 10,
            "lr": 0.05,
            "quantize": False,
            "agent": None,
            "when": "prob(p=0.5)",
            "label": "attack",
            "allow_nonfinite": True,
        },
        folded=AGENT_FOLDED,
    ),
    "BrightnessContrast": Setup(
        REACH,
        changed={
            "keys": ("camera",),
            "alpha": 0.9,
            "beta": 20.0,
            "layout": "hwc",
            "when": "starting(episode=1)",
            "label": "light",
        },
    ),
    "MedianBlur": Setup(
        REACH, changed={"keys": ("camera",), "k": 5, "layout": "hwc", "when": "prob(p=0.5)", "label": "blur"}
    ),
    "Rotate": Setup(
        REACH, changed={"keys": ("camera",), "degrees": 3.0, "layout": "hwc", "when": "prob(p=0.5)", "label": "tilt"}
    ),
    "Translate": Setup(
        REACH,
        changed={"keys": ("camera",), "ti": 2, "tj": -1, "layout": "hwc", "when": "prob(p=0.5)", "label": "moved"},
    ),
    "Perspective": Setup(
        REACH,
        changed={
            "keys": ("camera",),
            "norm": 2.0,
            "directions": [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, -0.5]],
            "seed": 3,
            "layout": "hwc",
            "when": "prob(p=0.5)",
            "label": "camera",
        },
        recorded={"directions": ((1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -0.5))},
    ),
    "JPEG": Setup(
        REACH, changed={"keys": ("camera",), "quality": 50, "layout": "hwc", "when": "prob(p=0.5)", "label": "codec"}
    ),
    "DynamicsShift": Setup(
        "CartPole-v1",
        changed={
            "values": {"gravity": 12.0},
            "scales": {"length": 2.0},
            "when": "starting(step=5)",
            "label": "physics",
            "allow_nonfinite": True,
        },
    ),
    "Intervene": Setup(
        "rlwrappers/ToyboxBreakout-v0",
        required={"interventions": ["drop_row_0"]},
        changed={
            "interventions": ["paddle_width=40", "drop_column_3"],
            "when": "starting(step=10)",
            "label": "iv",
            "allow_nonfinite": True,
        },
    ),
}


def parameters(cls: type) -> list[str]:
    """The constructor's named parameters other than ``self`` and ``env``."""
    signature = inspect.signature(cls.__init__)
    return [
        name
        for name, p in signature.parameters.items()
        if name not in ("self", "env") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    ]


def test_the_public_recording_wrappers_are_all_set_up():
    assert len(WRAPPERS) >= 7
    assert set(WRAPPERS) == set(SETUPS), "add a Setup for every new public wrapper"


@pytest.mark.parametrize("name", sorted(SETUPS))
def test_the_setup_changes_every_argument(name):
    setup = SETUPS[name]
    assert set(setup.changed) == set(parameters(WRAPPERS[name]))


@pytest.mark.parametrize("name", sorted(SETUPS))
def test_every_argument_is_recorded_with_defaults(name):
    cls, setup = WRAPPERS[name], SETUPS[name]
    wrapper = cls(gym.make(setup.env_id), **setup.required)
    recorded = set(wrapper._saved_kwargs)
    assert "env" not in recorded
    # a parameter added later is recorded only where it differs from the value that keeps older specs' meaning
    omitted = set(ADDED_LATER) & set(parameters(cls))
    assert recorded | set(setup.folded) | omitted == set(parameters(cls))
    assert not recorded & set(setup.folded)
    # the recorded arguments are a fixed point: building from them records them again
    again = cls(gym.make(setup.env_id), **wrapper._saved_kwargs)
    assert again._saved_kwargs == wrapper._saved_kwargs


@pytest.mark.parametrize("name", sorted(SETUPS))
def test_changed_arguments_are_recorded_and_rebuilt_by_the_spec(name):
    cls, setup = WRAPPERS[name], SETUPS[name]
    wrapper = cls(gym.make(setup.env_id), **{**setup.required, **setup.changed})
    default = cls(gym.make(setup.env_id), **setup.required)
    for key, value in setup.changed.items():
        if key not in setup.folded:
            assert wrapper._saved_kwargs[key] == setup.recorded.get(key, value), key
            assert default._saved_kwargs.get(key, ADDED_LATER.get(key)) != value, key

    for spec in (wrapper.spec, EnvSpec.from_json(wrapper.spec.to_json())):
        rebuilt = gym.make(spec)
        assert type(rebuilt) is cls
        assert rebuilt._saved_kwargs == wrapper._saved_kwargs
        assert rebuilt.spec == wrapper.spec
        if isinstance(wrapper, PerturbationLayer):
            assert rebuilt.specs == wrapper.specs
            assert rebuilt.labels == wrapper.labels
            assert [e.when for e in rebuilt.entries] == [e.when for e in wrapper.entries]


def test_perturb_folds_when_into_each_recorded_perturbation():
    wrapper = Perturb(gym.make("CartPole-v1"), ["obs_noise(std=0.2)", "reward_noise(when=never)"], when="prob(p=0.5)")
    whens = [p["when"] for p in wrapper._saved_kwargs["perturbations"]]
    assert whens == ["prob(p=0.5)", "never"]


def init_source(function: Any) -> ast.FunctionDef:
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    node = tree.body[0]
    assert isinstance(node, ast.FunctionDef)
    return node


def names_used(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


def calls_in_order(node: ast.AST) -> list[str]:
    """Dotted names of the calls in ``node``, in source order: "self._setup", "RecordConstructorArgs.__init__"..."""
    calls = []
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            calls.append((n.lineno, n.col_offset, ast.unparse(n.func)))
    return [name for _, _, name in sorted(calls)]


@pytest.mark.parametrize("name", sorted(SETUPS))
def test_init_uses_every_argument(name):
    cls = WRAPPERS[name]
    node = init_source(cls.__init__)
    unused = set(parameters(cls)) - names_used(node)
    assert not unused, f"{name}.__init__ never uses {sorted(unused)}"


@pytest.mark.parametrize("name", sorted(SETUPS))
def test_arguments_are_recorded_before_the_layer_is_built(name):
    cls = WRAPPERS[name]
    calls = calls_in_order(init_source(cls.__init__))
    if issubclass(cls, SingleLayer):
        assert "self._setup" in calls
        calls = calls_in_order(init_source(SingleLayer._setup))
    record = calls.index("RecordConstructorArgs.__init__")
    build = calls.index("PerturbationLayer.__init__")
    assert record < build
