"""Everything that wraps an env, grouped by the channel it changes.

The named wrappers of single envs (one perturbation each, on the layer of :mod:`rlwrappers.core`) are imported
here; the wrappers of other kinds of env load with their extras: :mod:`~rlwrappers.wrappers.multiagent`
(PettingZoo), :mod:`~rlwrappers.wrappers.vector` (Gymnasium vector envs), :mod:`~rlwrappers.wrappers.sb3`
(SB3 ``VecEnv``) and :mod:`~rlwrappers.wrappers.atari` (SB3's Atari preprocessing, lives as episodes).
"""

from rlwrappers.wrappers.action import ActionNoise, ActionNoisePerturbation, StickyAction, StickyActionPerturbation
from rlwrappers.wrappers.adversarial import (
    FGSM,
    PGD,
    CarliniWagner,
    CarliniWagnerPerturbation,
    FGSMPerturbation,
    PGDPerturbation,
)
from rlwrappers.wrappers.corruption import (
    JPEG,
    BrightnessContrast,
    BrightnessContrastPerturbation,
    JPEGPerturbation,
    MedianBlur,
    MedianBlurPerturbation,
    Perspective,
    PerspectivePerturbation,
    Rotate,
    RotatePerturbation,
    Translate,
    TranslatePerturbation,
)
from rlwrappers.wrappers.observation import ObservationNoise, ObservationNoisePerturbation
from rlwrappers.wrappers.policy import ParameterNoise, ParameterNoisePerturbation
from rlwrappers.wrappers.reward import RewardNoise, RewardNoisePerturbation
from rlwrappers.wrappers.state import (
    DynamicsShift,
    DynamicsShiftPerturbation,
    InitialStateNoise,
    InitialStateNoisePerturbation,
    Intervene,
    InterventionPerturbation,
)

__all__ = [
    # observation
    "ObservationNoise",
    "ObservationNoisePerturbation",
    "FGSM",
    "FGSMPerturbation",
    "PGD",
    "PGDPerturbation",
    "CarliniWagner",
    "CarliniWagnerPerturbation",
    "BrightnessContrast",
    "BrightnessContrastPerturbation",
    "MedianBlur",
    "MedianBlurPerturbation",
    "Rotate",
    "RotatePerturbation",
    "Translate",
    "TranslatePerturbation",
    "Perspective",
    "PerspectivePerturbation",
    "JPEG",
    "JPEGPerturbation",
    # action
    "ActionNoise",
    "ActionNoisePerturbation",
    "StickyAction",
    "StickyActionPerturbation",
    # reward
    "RewardNoise",
    "RewardNoisePerturbation",
    # state
    "InitialStateNoise",
    "InitialStateNoisePerturbation",
    "DynamicsShift",
    "DynamicsShiftPerturbation",
    "Intervene",
    "InterventionPerturbation",
    # policy
    "ParameterNoise",
    "ParameterNoisePerturbation",
]
