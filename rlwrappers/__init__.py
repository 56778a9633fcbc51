"""rlwrappers: composable, seeded, self-recording perturbations for Gymnasium envs.

Wrap any env in one line, register perturbed env IDs, record what every perturbation did, and read the logs
back::

    >>> import gymnasium as gym, rlwrappers as rw
    >>> env = rw.wrap(gym.make("CartPole-v1"), "obs_noise(std=0.1)", "action_noise(p=0.05)")
    >>> obs, info = env.reset(seed=0)

This namespace holds what a user needs on the first day; everything else is imported from its subpackage
(``rlwrappers.wrappers``, ``rlwrappers.logs``, ``rlwrappers.metrics``, ``rlwrappers.studies``, ...), whose
layout docs/architecture.md draws. Heavy dependencies (torch, pyarrow writers, pandas readers, MuJoCo, ALE)
load only when used.
"""

from __future__ import annotations

import importlib
from typing import Any

from rlwrappers import _moved
from rlwrappers._version import __version__
from rlwrappers.core import attach, perturbations, wrap
from rlwrappers.registration import catalogue, register, register_catalogue
from rlwrappers.wrappers import (
    FGSM,
    JPEG,
    PGD,
    ActionNoise,
    BrightnessContrast,
    CarliniWagner,
    DynamicsShift,
    InitialStateNoise,
    Intervene,
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
    "attach",
    # named wrappers
    "ObservationNoise",
    "ActionNoise",
    "StickyAction",
    "RewardNoise",
    "InitialStateNoise",
    "DynamicsShift",
    "Intervene",
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
    # logs (loaded on first use)
    "Recorder",
    "read_log",
    # studies (loaded on first use)
    "evaluate",
    "open_evaluation",
    "causal",
    "observational",
    "sweep",
    "robustness_card",
    # the zoo (loaded on first use)
    "load_agent",
    # uncertainty sets (loaded on first use)
    "uncertainty_set",
]

#: The names above that load their module on first use, and where they live.
_LAZY = {
    "Recorder": "rlwrappers.logs",
    "read_log": "rlwrappers.logs",
    "evaluate": "rlwrappers.studies.run",
    "open_evaluation": "rlwrappers.studies.results",
    "causal": "rlwrappers.studies.shift_impact",
    "observational": "rlwrappers.studies.shift_impact",
    "sweep": "rlwrappers.studies.sweep",
    "robustness_card": "rlwrappers.studies.robustness_card",
    "load_agent": "rlwrappers.zoo",
    "uncertainty_set": "rlwrappers.uncertainty",
}
#: Subpackages reachable as attributes before they are imported (``rw.metrics.mad``).
_SUBPACKAGES = (
    "agents",
    "envs",
    "explain",
    "functional",
    "ladders",
    "logs",
    "metrics",
    "report",
    "state",
    "studies",
    "testing",
    "wrappers",
    "zoo",
)


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        return importlib.import_module(f"rlwrappers.{name}")
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'rlwrappers' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def _register() -> None:
    import rlwrappers.envs  # noqa: F401 (registers rlwrappers/Catch-v0 and the Toybox games)

    register_catalogue()
    _moved.install()


_register()
