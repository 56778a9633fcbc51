"""rlwrappers: composable, seeded, self-recording perturbations for Gymnasium envs.

Wrap any env in one line, register perturbed env IDs, record what every perturbation did, and read the logs
back::

    >>> import gymnasium as gym, rlwrappers as rw
    >>> env = rw.wrap(gym.make("CartPole-v1"), "obs_noise(std=0.1)", "action_noise(p=0.05)")
    >>> obs, info = env.reset(seed=0)

Heavy dependencies (torch, pyarrow writers, pandas readers, MuJoCo, ALE) load only when used.
"""

from __future__ import annotations

from typing import Any

from rlwrappers import corruptions, error, interventions, schedule, transforms
from rlwrappers._version import __version__
from rlwrappers.core import (
    INFO_KEY,
    Entry,
    Perturb,
    Perturbation,
    PerturbationLayer,
    attach,
    layers,
    perturbations,
    wrap,
)
from rlwrappers.interventions import Intervene
from rlwrappers.registration import catalogue, register
from rlwrappers.wrappers import (
    FGSM,
    JPEG,
    PGD,
    ActionNoise,
    BrightnessContrast,
    CarliniWagner,
    DynamicsShift,
    InitialStateNoise,
    MedianBlur,
    ObservationNoise,
    ParameterNoise,
    Perspective,
    RewardNoise,
    Rotate,
    StickyAction,
    Translate,
)

__all__ = [
    "__version__",
    # one line
    "wrap",
    "register",
    "perturbations",
    "catalogue",
    # wrappers
    "Perturb",
    "ObservationNoise",
    "ActionNoise",
    "StickyAction",
    "RewardNoise",
    "InitialStateNoise",
    "DynamicsShift",
    "ParameterNoise",
    "FGSM",
    "PGD",
    "CarliniWagner",
    "BrightnessContrast",
    "MedianBlur",
    "Rotate",
    "Translate",
    "Perspective",
    "JPEG",
    "Intervene",
    "attach",
    # building blocks
    "Perturbation",
    "PerturbationLayer",
    "Entry",
    "layers",
    "INFO_KEY",
    "schedule",
    "transforms",
    "corruptions",
    "interventions",
    "error",
    # logs and evaluations (loaded on first use)
    "Recorder",
    "load",
    "Log",
    "evaluate",
    "open_evaluation",
    "sweep",
    "sweeps",
    "causal",
    "observational",
    "protocol",
    "multiagent",
    "agents",
    "zoo",
    "metrics",
]

_LAZY = {
    "Recorder": "rlwrappers.record",
    "load": "rlwrappers.record",
    "Log": "rlwrappers.record",
    "evaluate": "rlwrappers.evaluation",
    "open_evaluation": "rlwrappers.evaluation",
    "sweep": "rlwrappers.sweeps",
    "causal": "rlwrappers.protocol",
    "observational": "rlwrappers.protocol",
}
_SUBMODULES = ("agents", "zoo", "metrics", "evaluation", "sweeps", "protocol", "multiagent")


def __getattr__(name: str) -> Any:
    import importlib

    if name in _SUBMODULES:
        return importlib.import_module(f"rlwrappers.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rlwrappers' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def _register() -> None:
    import rlwrappers.envs  # noqa: F401 (registers rlwrappers/Catch-v0)
    from rlwrappers.registration import _register_catalogue

    _register_catalogue()


_register()
