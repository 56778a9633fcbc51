"""Imports of optional dependencies, each failing with one error that names the extra to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from rlwrappers.error import MissingExtra

#: The extra that provides each optional top-level module.
EXTRAS: dict[str, str] = {
    "ale_py": "atari",
    "ctoybox": "toybox",
    "orjson": "toybox",
    "mujoco": "mujoco",
    "stable_baselines3": "sb3",
    "torch": "sb3",
    "cv2": "corruptions",
    "lpips": "perceptual",
    "torchvision": "perceptual",
    "pettingzoo": "multiagent",
    "mpe2": "multiagent",
    "skimage": "perceptual",
    "matplotlib": "report",
    "jsonschema": "report",
    "PIL": "report",
    "ray": "ray",
    "hypothesis": "test",
    "rl_zoo3": "zoo",
    "yaml": "sb3",
    "statsmodels": "causal",
    "scipy": "causal",
    "minigrid": "minigrid",
    "gymnasium_robotics": "robotics",
    "Box2D": "box2d",
}


def require(module: str, *, purpose: str = "") -> ModuleType:
    """Imports ``module`` or raises :class:`MissingExtra` naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        extra = EXTRAS.get(module.split(".")[0], "all")
        what = f" for {purpose}" if purpose else ""
        raise MissingExtra(
            f"`{module}` is needed{what} but is not installed; install it with `pip install 'rlwrappers[{extra}]'`"
        ) from exc
