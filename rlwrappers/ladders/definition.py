"""The constants of ladder version card-v2: families, levels, references, the calibration and recovery settings.

:mod:`rlwrappers.ladders` documents them as one table; :mod:`rlwrappers.ladders.calibration` turns them into the
shipped files. Each tuple holds one value per level, 1 (barely noticeable) to 5 (severe).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from rlwrappers.ladders.effect import distinct, geometric

__all__ = [
    "ACTION_NOISE_P",
    "ACTION_NOISE_RANGE_K",
    "ATARI_MAX_FRAMES",
    "ATTACK_K",
    "ATTACK_STEPS",
    "ATTACK_SUBS",
    "BRIGHTNESS_ALPHA",
    "BRIGHTNESS_BETA",
    "CALIBRATION_POLICY",
    "CALIBRATION_SEED",
    "CALIBRATION_STEPS",
    "CORRUPTIONS",
    "ENVS",
    "ENV_KWARGS",
    "ENV_PACKAGES",
    "ENV_PREPROCESSING",
    "DISCRETE_GRIDS",
    "EFFECT_EPISODES",
    "EFFECTS_FROM",
    "EFFECT_SEEDS",
    "EFFECT_SIZES",
    "FAMILIES",
    "GRIDS",
    "IMAGE_ATTACK_EPS",
    "IMAGE_ATTACK_P",
    "IMAGE_OBS_NOISE_STD",
    "INIT_NOISE_K",
    "INTERVENTIONS",
    "JPEG_QUALITY",
    "LADDER",
    "LEVELS",
    "MEDIAN_BLUR_K",
    "MINIGRID_REFERENCE",
    "OBS_NOISE_K",
    "PARAM_NOISE_STD",
    "PERSPECTIVE_NORM",
    "PREPROCESSING",
    "PUBLISHED_RANDOM",
    "REFERENCES",
    "REFERENCE_AGENTS",
    "RECOVERY",
    "RECOVERY_LEVEL",
    "REPEATED_LEVELS",
    "ROTATE_DEGREES",
    "STICKY_P",
    "TRANSLATE_TI",
    "TRANSLATE_TJ",
    "EARLIER",
    "Family",
    "RecoveryWindow",
    "Reference",
    "ReferenceAgent",
    "ShownIntervention",
]

#: The ladder version: files, tables and scores made with one version compare with each other only.
LADDER: Final = "card-v2"
#: The versions before it, whose files the package still ships and reads (their cards stay readable).
EARLIER: Final = ("card-v1",)
#: The severity levels, mildest first.
LEVELS: Final = (1, 2, 3, 4, 5)


@dataclass(frozen=True)
class Family:
    """A family of shift: its title, and the unit of its levels' numbers by the kind of env.

    ``units`` is keyed by the observation kind (``"vector"``, ``"image"``) for most families, and by the action
    kind (``"discrete"``, ``"box"``) for action noise; a kind it lacks is one the family does not apply to.
    """

    title: str
    units: Mapping[str, str]


#: The families of shift, in the order a card lists them.
FAMILIES: Final[Mapping[str, Family]] = {
    "obs_noise": Family(
        "Observation noise",
        {
            "vector": "Gaussian std k * sigma_d, in standard deviations of each observation dimension",
            "image": "Gaussian std in grey levels",
        },
    ),
    "action_noise": Family(
        "Action noise",
        {
            "discrete": "probability of a uniformly random action",
            "box": "Gaussian std k * (high_d - low_d), in shares of each action dimension's range",
        },
    ),
    "sticky_action": Family(
        "Sticky actions",
        {
            "vector": "probability that the previous action repeats",
            "image": "probability that the previous action repeats",
        },
    ),
    "init_noise": Family(
        "Initial-state noise",
        {"vector": "Gaussian std k * state_sigma_d, in standard deviations of each simulator state dimension"},
    ),
    "dynamics": Family(
        "Dynamics shift",
        {"vector": "a box drawn from per episode, l/5 of the way (geometrically) from nominal to the set's hull"},
    ),
    "param_noise": Family(
        "Parameter noise",
        {"vector": "Gaussian std in the weights' units", "image": "Gaussian std in the weights' units"},
    ),
    "attack": Family(
        "Adversarial attack",
        {
            "vector": "L-inf budget k * sigma_d, in standard deviations of each observation dimension",
            "image": "share of steps attacked by FGSM at one grey level",
        },
    ),
    "corruptions": Family("Natural corruptions", {"image": "seed 004's Table 1 parameters (Korkmaz 2023)"}),
}

#: The image attack's sub-families, in order: how often one grey level strikes, and how many grey levels.
ATTACK_SUBS: Final[Mapping[str, Family]] = {
    "share": Family("Share of steps", {"image": "share of steps attacked by FGSM at one grey level"}),
    "budget": Family("Budget", {"image": "FGSM's L-inf budget in grey levels, on every step"}),
}

#: The corruptions family's sub-families, in order.
CORRUPTIONS: Final[Mapping[str, Family]] = {
    "brightness_contrast": Family("Brightness and contrast", {"image": "gain alpha and offset beta in grey levels"}),
    "median_blur": Family("Median blur", {"image": "kernel size k in pixels"}),
    "rotate": Family("Rotation", {"image": "degrees"}),
    "translate": Family("Shift", {"image": "whole pixels ti along x and tj along y"}),
    "perspective": Family("Perspective transformation", {"image": "largest corner displacement in pixels"}),
    "jpeg": Family("JPEG compression", {"image": "JPEG quality (falls as the level rises)"}),
}

#: The envs with vanilla reference agents, whose levels the agents' measured effects choose, in order (every other
#: env of a suite follows the provisional rules: :mod:`rlwrappers.ladders.suites`).
ENVS: Final = (
    "CartPole-v1",
    "Pendulum-v1",
    "Hopper-v5",
    "rlwrappers/Catch-v0",
    "BreakoutNoFrameskip-v4",
    "rlwrappers/ToyboxBreakout-v0",
    "Acrobot-v1",
    "MountainCar-v0",
    "MountainCarContinuous-v0",
    "LunarLander-v3",
    "MiniGrid-Empty-5x5-v0",
    "InvertedPendulum-v5",
    "InvertedDoublePendulum-v5",
)

# How each env is built: ``gym.make(env_id, **ENV_KWARGS[env_id])``, then the wrappers its preprocessing names.
#: Atari games end after this many raw frames (the usual cap; four per agent step with frame skip 4): a stuck
#: agent otherwise plays on for tens of thousands of steps.
ATARI_MAX_FRAMES: Final = 18_000
#: ``gym.make``'s keyword arguments, by env (an env absent here takes none). Breakout's ``TimeLimit`` wraps the
#: raw env, whose steps are single frames, so it counts raw frames.
ENV_KWARGS: Final[Mapping[str, Mapping[str, Any]]] = {
    "BreakoutNoFrameskip-v4": {"max_episode_steps": ATARI_MAX_FRAMES},
    "rlwrappers/ToyboxBreakout-v0": {"max_episode_steps": ATARI_MAX_FRAMES},
}
#: The package each env needs beyond gymnasium, by env (its extra is named when it is missing).
ENV_PACKAGES: Final[Mapping[str, str]] = {
    "Hopper-v5": "mujoco",
    "BreakoutNoFrameskip-v4": "ale_py",
    "rlwrappers/ToyboxBreakout-v0": "ctoybox",
    "LunarLander-v3": "Box2D",
    "MiniGrid-Empty-5x5-v0": "minigrid",
    "InvertedPendulum-v5": "mujoco",
    "InvertedDoublePendulum-v5": "mujoco",
}
#: The preprocessing names and what each does: :func:`rlwrappers.ladders.preprocessing_wrappers` makes its wrappers.
PREPROCESSING: Final[Mapping[str, str]] = {
    "atari-games": (
        "SB3's Atari preprocessing (AtariWrapper, unclipped rewards, a channel-first stack of 4 84x84 frames) with"
        " whole games as episodes: rlwrappers.wrappers.atari.atari_wrapper(env, frame_stack=4, games=True)"
    ),
    "minigrid-rgb": (
        "MiniGrid's RGBImgPartialObsWrapper then ImgObsWrapper: the agent's 7x7 view as a 56x56 RGB picture (8"
        " pixels a cell), without the direction and the mission"
    ),
}
#: The preprocessing each env's agents see, by env (an env absent here has none): the shifts act on its output.
ENV_PREPROCESSING: Final[Mapping[str, str]] = {
    "BreakoutNoFrameskip-v4": "atari-games",
    "rlwrappers/ToyboxBreakout-v0": "atari-games",
    "MiniGrid-Empty-5x5-v0": "minigrid-rgb",
}


@dataclass(frozen=True)
class Reference:
    """A return a ladder grades skill against, and where it comes from.

    ``value`` is the return, ``source`` who measured or defined it, ``protocol`` how an episode is played for it.
    """

    value: float
    source: str
    protocol: str


#: Mnih et al. (2015), "Human-level control through deep reinforcement learning", Nature 518, Extended Data
#: Table 2, which the Atari-57 literature (Badia et al. 2020, "Agent57") reuses. Erratum (docs/card-validity.md):
#: Mnih et al. print 31.8 for Breakout's human score; 30.5 is the Atari-57 tables'. The text stays as shipped,
#: since the files' bytes are the hash every card records; the next ladder version cites the Atari-57 tables.
_ATARI_SOURCE: Final = (
    "Mnih et al. (2015), Human-level control through deep reinforcement learning, Nature 518:529-533, Extended"
    " Data Table 2 (the Atari-57 literature's human and random scores, reused by Badia et al. 2020, Agent57)"
)
_ATARI_PROTOCOL: Final = (
    "whole games of at most 18,000 frames (5 minutes at 60 Hz), starting after up to 30 no-op frames, unclipped"
    " score; the card plays them so (atari-games preprocessing: SB3's AtariWrapper no-op starts, the 18,000-frame"
    " cap)"
)


def _threshold(env_id: str, value: float, limit: int) -> Reference:
    """An env's ``reward_threshold`` as its reference, played under its registered step limit."""
    return Reference(
        value,
        f"the env's reward_threshold ({env_id}'s registration): the return its authors count as solving it",
        f"one episode, up to {limit:,} steps",
    )


#: MiniGrid's rewards are at most 1 (a success at step 0); each step costs 0.9 / max_steps of it.
MINIGRID_REFERENCE: Final = Reference(
    1.0,
    "the bound of MiniGrid's returns: one reward per episode, 1 - 0.9 * steps / max_steps on success, else 0;"
    " MiniGrid states no reward_threshold",
    "one episode, up to the env's max_steps",
)
_BREAKOUT_HUMAN: Final = Reference(30.5, _ATARI_SOURCE + ": the human tester's score", _ATARI_PROTOCOL)

#: The reference return of each env, skill 1 (:func:`rlwrappers.metrics.grade.skill`).
REFERENCES: Final[Mapping[str, Reference]] = {
    "CartPole-v1": Reference(
        500.0,
        "the env's maximum return: a reward of 1 per step under gymnasium's 500-step time limit (its"
        " reward_threshold, 475, is the bar for solving it, not the best return)",
        "one episode, up to 500 steps",
    ),
    "Pendulum-v1": Reference(
        0.0,
        "the env's bound on returns: each step's reward, -(theta^2 + 0.1 theta_dot^2 + 0.001 torque^2), is at most"
        " 0; Gymnasium states no reward_threshold, and a swing-up from the random start costs every agent some"
        " return (the zoo's TD3 agents keep about 0.9 of the way from random to it)",
        "one episode of 200 steps",
    ),
    "Hopper-v5": Reference(
        3800.0,
        "gymnasium's reward_threshold for Hopper-v5 (its registration), a return that SAC and TD3 agents reach",
        "one episode, up to 1,000 steps, with the env's default reward weights",
    ),
    "rlwrappers/Catch-v0": Reference(
        10.0, "the env's maximum return: every one of its 10 balls caught (+1 each)", "one episode of 10 balls"
    ),
    "Acrobot-v1": _threshold("Acrobot-v1", -100.0, 500),
    "MountainCar-v0": _threshold("MountainCar-v0", -110.0, 200),
    "MountainCarContinuous-v0": _threshold("MountainCarContinuous-v0", 90.0, 999),
    "LunarLander-v3": _threshold("LunarLander-v3", 200.0, 1000),
    "MiniGrid-Empty-5x5-v0": MINIGRID_REFERENCE,
    "InvertedPendulum-v5": _threshold("InvertedPendulum-v5", 950.0, 1000),
    "InvertedDoublePendulum-v5": _threshold("InvertedDoublePendulum-v5", 9100.0, 1000),
    "BreakoutNoFrameskip-v4": _BREAKOUT_HUMAN,
    "rlwrappers/ToyboxBreakout-v0": Reference(
        _BREAKOUT_HUMAN.value,
        "ALE Breakout's human score, " + _BREAKOUT_HUMAN.source + "; Toybox reimplements Atari Breakout with its"
        " scoring (1 to 7 points a brick by row), and no human score of its own is published",
        _ATARI_PROTOCOL,
    ),
}
#: The random policy's return where the literature publishes one: it replaces the measured one, so that skill
#: follows the literature's normalization.
PUBLISHED_RANDOM: Final[Mapping[str, Reference]] = {
    "BreakoutNoFrameskip-v4": Reference(1.7, _ATARI_SOURCE + ": the random agent's score", _ATARI_PROTOCOL),
}


@dataclass(frozen=True)
class ReferenceAgent:
    """A vanilla agent a ladder's ranges are calibrated on: a zoo name with its training seed, or a file's name.

    ``sha256`` is given for files outside the zoo (the zoo's cards hold their agents' hashes).
    """

    name: str
    sha256: str | None = None


#: Each env's vanilla reference agents: trained on the clean env (never under a shift, so the agents trained under
#: one are held out as the card's validity test), training seeds 0 to 2 where the zoo has them.
_BREAKOUT_AGENTS: Final = (
    ReferenceAgent(
        "ppo-BreakoutNoFrameskip-v4-seed0.zip", "4b7b59db29387845bd09e1626d4fbeee11d5de3d5142a41640af10b5ccb87c55"
    ),
    ReferenceAgent(
        "dqn-BreakoutNoFrameskip-v4-seed0.zip", "9f3aa321dbad7f82b982602e16ac09a446a25c5429a299023bb905497e0824a0"
    ),
)
REFERENCE_AGENTS: Final[Mapping[str, tuple[ReferenceAgent, ...]]] = {
    "CartPole-v1": tuple(ReferenceAgent(f"ppo-CartPole-v1@{seed}") for seed in range(3)),
    "Pendulum-v1": tuple(ReferenceAgent(f"td3-Pendulum-v1@{seed}") for seed in range(3)),
    "Hopper-v5": (ReferenceAgent("ppo-Hopper-v5@0"),),
    "rlwrappers/Catch-v0": tuple(ReferenceAgent(f"ppo-Catch-v0@{seed}") for seed in range(3)),
    # The two Breakout agents of the project's shared agents (SB3's PPO and DQN; see docs/agents.md).
    "BreakoutNoFrameskip-v4": _BREAKOUT_AGENTS,
    "rlwrappers/ToyboxBreakout-v0": _BREAKOUT_AGENTS,
    "Acrobot-v1": tuple(ReferenceAgent(f"ppo-Acrobot-v1@{seed}") for seed in range(3)),
    "MountainCar-v0": tuple(ReferenceAgent(f"dqn-MountainCar-v0@{seed}") for seed in range(3)),
    "MountainCarContinuous-v0": tuple(ReferenceAgent(f"td3-MountainCarContinuous-v0@{seed}") for seed in range(3)),
    "LunarLander-v3": tuple(ReferenceAgent(f"ppo-LunarLander-v3@{seed}") for seed in range(3)),
    "MiniGrid-Empty-5x5-v0": tuple(ReferenceAgent(f"ppo-MiniGrid-Empty-5x5-v0@{seed}") for seed in range(3)),
    "InvertedPendulum-v5": tuple(ReferenceAgent(f"ppo-InvertedPendulum-v5@{seed}") for seed in range(3)),
    "InvertedDoublePendulum-v5": tuple(ReferenceAgent(f"ppo-InvertedDoublePendulum-v5@{seed}") for seed in range(3)),
}


# Calibration: a uniform-random policy for a fixed number of steps.
CALIBRATION_POLICY: Final = "uniform-random"
CALIBRATION_STEPS: Final = 10_000
#: ``action_space.seed(CALIBRATION_SEED)``; episode ``i`` (from 0) resets with ``seed=CALIBRATION_SEED + i``.
CALIBRATION_SEED: Final = 0

# Vector envs: multipliers of a measured scale.
OBS_NOISE_K: Final = (0.05, 0.1, 0.2, 0.4, 0.8)
ACTION_NOISE_P: Final = (0.02, 0.05, 0.1, 0.2, 0.4)
ACTION_NOISE_RANGE_K: Final = (0.02, 0.05, 0.1, 0.2, 0.4)
STICKY_P: Final = (0.05, 0.1, 0.25, 0.5, 0.75)
INIT_NOISE_K: Final = (0.1, 0.25, 0.5, 1.0, 2.0)
PARAM_NOISE_STD: Final = (0.002, 0.005, 0.01, 0.02, 0.05)
ATTACK_K: Final = (0.01, 0.03, 0.1, 0.3, 1.0)
#: PGD's iterations (Box actions).
ATTACK_STEPS: Final = 10

# Image envs.
IMAGE_OBS_NOISE_STD: Final = (2.0, 4.0, 8.0, 16.0, 32.0)
#: One grey level in FGSM's [0, 1] pixel scale.
IMAGE_ATTACK_EPS: Final = 1 / 255
IMAGE_ATTACK_P: Final = (0.01, 0.03, 0.1, 0.3, 1.0)
# The corruptions: Table 1 of seed 004 (Korkmaz 2023), level 1 at its mildest value, level 5 at its top, levels
# evenly between (whole-pixel parameters rounded to the nearest value they take, halves up).
BRIGHTNESS_ALPHA: Final = (1.2, 1.5, 1.8, 2.1, 2.4)
BRIGHTNESS_BETA: Final = (20.0, 25.0, 30.0, 35.0, 40.0)
MEDIAN_BLUR_K: Final = (3, 3, 5, 5, 5)
ROTATE_DEGREES: Final = (1.4, 2.3, 3.2, 4.1, 5.0)
TRANSLATE_TI: Final = (0, 1, 1, 2, 2)
TRANSLATE_TJ: Final = (1, 1, 2, 2, 2)
PERSPECTIVE_NORM: Final = (1.0, 1.5, 2.0, 2.5, 3.0)
JPEG_QUALITY: Final = (90, 70, 50, 30, 10)
#: The sub-families whose whole-pixel parameters take fewer than five values in Table 1's range: some levels repeat.
REPEATED_LEVELS: Final = frozenset({"median_blur", "translate"})


# Calibration by effect (rlwrappers.ladders.effect): each family's candidate severities, mildest first, in the
# unit of its entry below, keyed "family@kind" where the unit depends on the observation or action kind and
# "family.sub" for sub-families. Geometric with ratio sqrt(2) where the unit is continuous.
_ROOT2: Final = 2**0.5
#: The grid of each family (see :mod:`rlwrappers.ladders.effect`).
GRIDS: Final[Mapping[str, tuple[float, ...]]] = {
    "obs_noise@vector": geometric(0.01, 5.2, _ROOT2),  # k: std k * sigma_d
    "obs_noise@image": geometric(0.5, 128.0, _ROOT2),  # std in grey levels
    "action_noise@discrete": geometric(1 / 256, 1.0, _ROOT2),  # p of a uniformly random action
    "action_noise@box": geometric(1 / 256, 2.0, _ROOT2),  # k: std k * (high_d - low_d)
    "sticky_action": geometric(1 / 128, 0.9, _ROOT2),  # p that the previous action repeats
    "init_noise": geometric(0.05, 13.0, _ROOT2),  # k: std k * state_sigma_d
    "dynamics": geometric(1 / 64, 1.0, _ROOT2),  # t: the box n * (hull / n) ** t; 1 is the hull
    "param_noise": geometric(1 / 1024, 1.0, _ROOT2),  # std in the weights' units
    "attack@vector": geometric(1 / 1024, 4.0, _ROOT2),  # k: L-inf budget k * sigma_d
    "attack.share": geometric(1 / 64, 1.0, _ROOT2),  # share of steps at one grey level
    "attack.budget": distinct([float(round(g)) for g in geometric(1.0, 128.0, _ROOT2)]),  # grey levels
    "corruptions.brightness_contrast": geometric(1 / 64, 1.6, _ROOT2),  # v: gain 1 + v, offset 100 v
    "corruptions.median_blur": (3.0, 5.0, 7.0, 9.0, 11.0, 13.0, 15.0),  # kernel size
    "corruptions.rotate": geometric(1 / 8, 32.0, _ROOT2),  # degrees
    "corruptions.translate": (1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 11.0, 16.0),  # pixels along both axes
    "corruptions.perspective": geometric(1 / 4, 16.0, _ROOT2),  # largest corner displacement in pixels
    "corruptions.jpeg": (95.0, 90.0, 80.0, 70.0, 60.0, 50.0, 40.0, 30.0, 20.0, 10.0, 5.0),  # quality, falling
}
#: The grids whose unit takes only the values on them (whole pixels, JPEG qualities, whole grey levels): their
#: levels 2 to 4 are grid points, where the others' lie on the geometric series between levels 1 and 5.
DISCRETE_GRIDS: Final = frozenset(
    {"attack.budget", "corruptions.median_blur", "corruptions.translate", "corruptions.jpeg"}
)
#: Evaluation seeds and episodes per seed of each reference agent at each grid point.
EFFECT_SEEDS: Final = 3
EFFECT_EPISODES: Final = 10
#: Where long episodes make that too long: (seeds, episodes) of each reference agent at each grid point (Breakout's
#: whole games; InvertedDoublePendulum's 1,000 steps, each attacked by 10 PGD iterations in the attack family).
EFFECT_SIZES: Final[Mapping[str, tuple[int, int]]] = {
    "BreakoutNoFrameskip-v4": (3, 4),
    "InvertedDoublePendulum-v5": (3, 4),
}
#: Envs whose levels come from another env's measured effects: Toybox's Breakout takes ALE Breakout's, measured
#: on the agents trained there (they barely play Toybox's, so its own drops would say nothing).
EFFECTS_FROM: Final[Mapping[str, str]] = {"rlwrappers/ToyboxBreakout-v0": "BreakoutNoFrameskip-v4"}


@dataclass(frozen=True)
class RecoveryWindow:
    """When the recovery shift acts (steps ``start <= t < stop`` of each episode) and how recovery is measured.

    ``window`` and ``horizon`` are :func:`rlwrappers.metrics.card.recovery_time`'s: the steps the trailing mean
    reward must hold the clean band, and the steps after the shift within which recovery counts.
    """

    start: int
    stop: int
    window: int
    horizon: int


#: The recovery test: the observation-noise shift of this level, switched on for a window of each episode.
RECOVERY_LEVEL: Final = 4
RECOVERY: Final[Mapping[str, RecoveryWindow]] = {
    "CartPole-v1": RecoveryWindow(100, 150, 20, 200),
    "Pendulum-v1": RecoveryWindow(50, 100, 10, 100),
    "Hopper-v5": RecoveryWindow(200, 300, 20, 300),
    "rlwrappers/Catch-v0": RecoveryWindow(27, 45, 9, 45),
    # Agent steps of a whole game: a random game lasts about 180 of them, an SB3 PPO agent's (scoring about 35)
    # 700 to 900, so the horizon in effect runs to the game's end.
    "BreakoutNoFrameskip-v4": RecoveryWindow(200, 300, 100, 1000),
    "rlwrappers/ToyboxBreakout-v0": RecoveryWindow(200, 300, 100, 1000),
    # The episode-limit rule of provisional ladders (a fifth to three tenths of the way in, a window of a
    # twenty-fifth, a horizon of two fifths), applied to the reference agents' clean episodes, which end long
    # before the limit: Acrobot's about 80 steps, MountainCar's about 100, MountainCarContinuous's about 150,
    # LunarLander's about 340, MiniGrid-Empty-5x5's 5 (its shortest path). The inverted pendulums' agents balance
    # for the whole 1,000 steps.
    "Acrobot-v1": RecoveryWindow(16, 24, 3, 32),
    "MountainCar-v0": RecoveryWindow(20, 30, 4, 40),
    "MountainCarContinuous-v0": RecoveryWindow(30, 45, 6, 60),
    "LunarLander-v3": RecoveryWindow(68, 102, 14, 136),
    "MiniGrid-Empty-5x5-v0": RecoveryWindow(1, 2, 1, 2),
    "InvertedPendulum-v5": RecoveryWindow(200, 300, 40, 400),
    "InvertedDoublePendulum-v5": RecoveryWindow(200, 300, 40, 400),
}


@dataclass(frozen=True)
class ShownIntervention:
    """An intervention on state a card shows, not rated.

    ``assignments`` is its one-line form (or a Toybox catalogue name), ``when`` its schedule, ``doc`` what it does.
    """

    assignments: str
    when: str
    doc: str


#: Breakout's RAM bytes of a row of bricks (row 0 is the bottom one): see docs/interventions.md.
_BREAKOUT_ROW = range(0, 36, 6)

#: The interventions each card shows, per env whose state can be written (docs/interventions.md): classic
#: control, MuJoCo and ALE envs. Each is made once per episode, mid-episode, and the episode plays on from
#: there. On Breakout they act on the raw game, under the preprocessing, so ``step`` counts raw frames: the game
#: builds its wall in its first 37 frames after a reset, over any earlier write.
INTERVENTIONS: Final[Mapping[str, Mapping[str, ShownIntervention]]] = {
    "CartPole-v1": {
        "pole_push": ShownIntervention(
            "theta_dot+=0.5", "starting(step=100)", "The pole is pushed: +0.5 rad/s at step 100."
        ),
        "cart_push": ShownIntervention("x_dot+=1.0", "starting(step=100)", "The cart is pushed: +1 m/s at step 100."),
        "tilt": ShownIntervention("theta=0.15", "starting(step=100)", "The pole is tilted to 0.15 rad at step 100."),
        "heavy_pole": ShownIntervention(
            "masspole*=10", "starting(step=100)", "The pole weighs 10 times more from step 100."
        ),
    },
    "Pendulum-v1": {
        "knock_down": ShownIntervention(
            "theta=3.14159", "starting(step=100)", "The pendulum is knocked down at step 100."
        ),
        "spin": ShownIntervention(
            "theta_dot+=4.0", "starting(step=100)", "The pendulum is spun: +4 rad/s at step 100."
        ),
        "heavy": ShownIntervention("m*=1.5", "starting(step=100)", "The pendulum weighs 1.5 times more from step 100."),
    },
    "Hopper-v5": {
        "shove_forward": ShownIntervention(
            "qvel[0]+=1.0", "starting(step=200)", "The hopper is shoved forward: +1 m/s at step 200."
        ),
        "shove_back": ShownIntervention(
            "qvel[0]-=1.0", "starting(step=200)", "The hopper is shoved back: -1 m/s at step 200."
        ),
        "stumble": ShownIntervention(
            "qvel[2]+=2.0", "starting(step=200)", "The torso is tipped: +2 rad/s at step 200."
        ),
    },
    "BreakoutNoFrameskip-v4": {
        "bottom_row": ShownIntervention(
            "; ".join(f"ram[{i}]=0" for i in _BREAKOUT_ROW),
            "starting(step=42)",
            "The bottom row of bricks is removed at frame 42 of each game.",
        ),
        "middle_rows": ShownIntervention(
            "; ".join(f"ram[{i + row}]=0" for row in (2, 3) for i in _BREAKOUT_ROW),
            "starting(step=42)",
            "The third and fourth rows of bricks from the bottom are removed at frame 42 of each game.",
        ),
    },
    # Seed 000's catalogue (rlwrappers.envs.toybox.interventions), made as each game starts.
    "rlwrappers/ToyboxBreakout-v0": {
        "paddle_width_12": ShownIntervention("paddle_width_12", "always", "The paddle is 12 wide (24 at the start)."),
        "paddle_width_48": ShownIntervention("paddle_width_48", "always", "The paddle is 48 wide (24 at the start)."),
        "paddle_speed_2": ShownIntervention(
            "paddle_speed_2", "always", "The paddle moves 2 per frame (4 at the start)."
        ),
        "drop_row_5": ShownIntervention("drop_row_5", "always", "The bottom row of bricks is removed (18 bricks)."),
        "drop_row_2": ShownIntervention("drop_row_2", "always", "The third row from the top is removed (18 bricks)."),
        "drop_column_8": ShownIntervention(
            "drop_column_8", "always", "A column of bricks mid-wall is removed (6 bricks)."
        ),
    },
}
