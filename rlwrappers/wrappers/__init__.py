"""The perturbation wrappers, grouped by the channel they change."""

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
    # policy
    "ParameterNoise",
    "ParameterNoisePerturbation",
]
