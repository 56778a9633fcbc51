"""Severity ladders: versioned families of shift, each at levels 1 (barely noticeable) to 5 (severe), per env.

A robustness card grades an agent under each family of shift at five levels. A ladder fixes those levels for
one env, in a file shipped with the package (``rlwrappers/ladders/<version>/<env id, "/" as "-">.json``), so
that cards made with one version compare. :func:`ladder` reads one, :meth:`Ladder.arms` lists its arms (one
per family, sub-family and level, each a list of perturbation entry dicts that
:meth:`rlwrappers.core.Entry.parse` reads). :attr:`Ladder.random_return` and :attr:`Ladder.reference_return` are
the returns skill runs between (:func:`rlwrappers.metrics.grade.skill`: 0 and 1), each stated in the file with its
source and protocol (:attr:`Ladder.random`, :attr:`Ladder.reference`), and :attr:`Ladder.reference_agents` names
the env's vanilla agents its ranges are judged on. The files are made by
:func:`rlwrappers.ladders.calibration.calibrate` (``scripts/calibrate_ladders.py`` rewrites them all), and a test
checks that they equal what it makes now, byte for byte.

**The env.** A ladder says how its env is built, as the agents see it: ``gym.make(env_id, **ladder.env_kwargs)``,
then the wrappers of ``ladder.preprocessing`` (a name, or None), which :func:`preprocessing_wrappers` makes. They
go under the shifts (``EnvSetup(kwargs=ladder.env_kwargs, wrappers=preprocessing_wrappers(ladder.preprocessing))``
for :func:`rlwrappers.evaluate`), so the shifts act on the agent's input. The calibration builds the env the same
way (:func:`rlwrappers.ladders.calibration.make_env`).

Version ``card-v2`` (:data:`LADDER`) ships ladders for the standard suites (:data:`SUITES`, listed by
:func:`suite_envs`; :mod:`rlwrappers.ladders.suites` says how each env's is made). Thirteen of them have their
levels chosen by the effect on vanilla reference agents (:data:`~rlwrappers.ladders.definition.ENVS`): the six
whose files this docstring describes (CartPole-v1, Pendulum-v1, Hopper-v5, rlwrappers/Catch-v0,
BreakoutNoFrameskip-v4 and rlwrappers/ToyboxBreakout-v0), then Acrobot-v1, MountainCar-v0,
MountainCarContinuous-v0, LunarLander-v3, MiniGrid-Empty-5x5-v0, InvertedPendulum-v5 and
InvertedDoublePendulum-v5; the others follow the rules of a provisional ladder. Any other registered env gets a
provisional ladder, calibrated on first use and cached (:func:`provisional_ladder`,
:mod:`rlwrappers.ladders.provisional`); :func:`card_ladder` gives the one a card plays. Its constants live in
:mod:`rlwrappers.ladders.definition`.
The files of ``card-v1`` (:data:`EARLIER`), which have the same levels but no reference return, still ship and
read (``ladder(env_id, "card-v1")``), so that card-v1 cards compare among themselves.

=============================  ================================  ==============  ======
env                            env_kwargs                        preprocessing   kind
=============================  ================================  ==============  ======
CartPole-v1                    ``{}``                            None            vector
Pendulum-v1                    ``{}``                            None            vector
Hopper-v5                      ``{}``                            None            vector
rlwrappers/Catch-v0            ``{}``                            None            image
BreakoutNoFrameskip-v4         ``{"max_episode_steps": 18000}``  "atari-games"   image
rlwrappers/ToyboxBreakout-v0   ``{"max_episode_steps": 18000}``  "atari-games"   image
=============================  ================================  ==============  ======

**Breakout** is for SB3's Atari agents (trained with SB3's ``AtariWrapper`` and a stack of four frames). Its
preprocessing, ``"atari-games"``, is :func:`rlwrappers.wrappers.atari.atari_wrapper` with ``games=True``
(:class:`~rlwrappers.wrappers.atari.GamesAsEpisodes`): SB3's ``AtariWrapper`` (frame skip 4, rewards unclipped)
and a channel-first stack of four 84x84 grayscale frames, uint8 ``(4, 84, 84)``, with a whole game as one
episode, as SB3's ``evaluate_policy`` counts it: a lost life restarts the next one within the episode (SB3's
no-op and FIRE, the stack refilled from zeros), and the return is the game's score. Its ``TimeLimit`` wraps the
raw env, whose steps are frames, so it caps a game at 18,000 frames (4,500 agent steps less those of the
resets), the usual Atari cap: a stuck agent would otherwise play on for tens of thousands of steps. The
corruptions act on each of the four stacked frames alone (the layout is inferred as ``"chw"``); the attack and
parameter noise act on the agent's input, which the shifts see. **Toybox's Breakout** (the toybox extra) takes
the same preprocessing and the same ladder, for agents that play it; its game state is a document, so its card
makes seed 000's catalogue interventions.

**Calibration.** A uniform-random policy plays 10,000 steps (Breakout's are agent steps, four frames each, and its
episodes whole games): ``action_space.seed(0)``, and episode ``i`` (from 0) resets with ``seed=i``. ``sigma_d``
is each observation dimension's standard deviation over every observation seen (those after each reset included),
``state_sigma_d`` the same of the simulator's state vector (what ``init_noise`` perturbs:
:func:`rlwrappers.state.simulators.simulator`'s ``get_state()``), both to six significant digits;
the measured random return (``calibration.random_return``) is the mean return over the episodes that ended
within the 10,000 steps (to six significant digits; for Breakout, the mean score of the 55 whole games that ended
within them, 1.6). ``random_return`` is the measured one unless the literature publishes one: Breakout's is the
published 1.7, beside its published human score, 30.5, as the reference. Products ``k * sigma_d`` are kept to
ten significant digits.

**Levels by effect (card-v2).** Each family's levels are chosen from the skill drop its grid of severities
causes the env's reference agents (:mod:`rlwrappers.ladders.effect`; the drops ship in ``card-v2/effects/``, and
each family of a file says how its levels were chosen under ``calibration``). The tables below are card-v1's
levels, which a card-v2 family keeps only where no effect was measured for its env. On images a measured attack
family has two sub-families, ``share`` (one grey level on a share of the steps) and ``budget`` (whole grey levels
on every step), and the corruptions' levels follow their own grids (brightness: gain ``1 + v`` with offset
``100 v``; a translation shifts by the same number of pixels along both axes).

**Vector envs** (float observations), level 1 to 5 (card-v1):

=================  ========================================================  =========================================
family             entry                                                     levels
=================  ========================================================  =========================================
obs_noise          ``obs_noise(std=[k * sigma_d, ...])``                     k = 0.05, 0.1, 0.2, 0.4, 0.8
action_noise       Discrete: ``action_noise(p=p)``                           p = 0.02, 0.05, 0.1, 0.2, 0.4
action_noise       Box: ``action_noise(std=[k * (high_d - low_d), ...])``    k = 0.02, 0.05, 0.1, 0.2, 0.4
sticky_action      ``sticky_action(p=p)``                                    p = 0.05, 0.1, 0.25, 0.5, 0.75
init_noise         ``init_noise(std=[k * state_sigma_d, ...])``              k = 0.1, 0.25, 0.5, 1.0, 2.0
dynamics           ``dynamics_shift(values={key: uniform(a_l, b_l)},         l = 1 .. 5 (see below)
                   resample="episode")``
param_noise        ``param_noise(std=s)``                                    s = 0.002, 0.005, 0.01, 0.02, 0.05
attack             Discrete: ``fgsm(eps=[k * sigma_d, ...])``                k = 0.01, 0.03, 0.1, 0.3, 1.0
attack             Box: ``pgd(eps=[k * sigma_d, ...], steps=10)``            k = 0.01, 0.03, 0.1, 0.3, 1.0
=================  ========================================================  =========================================

The dynamics family draws every parameter of the env's largest uncertainty set
(:func:`rlwrappers.uncertainty.uncertainty_set`: CartPole:3, Pendulum:2, Hopper:3) anew each episode. With
nominal value ``n`` (read from a fresh env) and range ``[lo, hi]``, the hull ``lo' = min(lo, n)``,
``hi' = max(hi, n)`` holds the nominal value (Hopper's torso and thigh masses lie above M2TD3's boxes), and
level ``l`` draws uniformly from ``[n * (lo' / n) ** (l / 5), n * (hi' / n) ** (l / 5)]``: the box grows
geometrically from the nominal value and is the hull at level 5 (written exactly). Where ``n <= 0`` or
``lo' <= 0`` the geometric form is undefined and the linear one is used, ``[n + (lo' - n) * l / 5,
n + (hi' - n) * l / 5]`` (no card-v1 env needs it). A parameter whose range is the nominal value alone is set
to it.

**Image envs** (uint8 frames): no init_noise and no dynamics family (absent from the file). Level 1 to 5 (card-v1):

=====================  =======================================================  ===================================
family                 entry                                                    levels
=====================  =======================================================  ===================================
obs_noise              ``obs_noise(std=s)``, in grey levels                     s = 2, 4, 8, 16, 32
action_noise           ``action_noise(p=p)`` (Discrete actions)                 p = 0.02, 0.05, 0.1, 0.2, 0.4
sticky_action          ``sticky_action(p=p)``                                   p = 0.05, 0.1, 0.25, 0.5, 0.75
param_noise            ``param_noise(std=s)``                                   s = 0.002, 0.005, 0.01, 0.02, 0.05
attack                 ``fgsm(eps=1/255, when="prob(p=P)")``: one grey level    P = 0.01, 0.03, 0.1, 0.3, 1.0
                       on a share P of the steps
corruptions            brightness_contrast ``(alpha, beta)``                    (1.2, 20), (1.5, 25), (1.8, 30),
                                                                                (2.1, 35), (2.4, 40)
corruptions            median_blur ``k``                                        3, 3, 5, 5, 5
corruptions            rotate ``degrees``                                       1.4, 2.3, 3.2, 4.1, 5.0
corruptions            translate ``(ti, tj)``                                   (0, 1), (1, 1), (1, 2), (2, 2), (2, 2)
corruptions            perspective ``norm``                                     1.0, 1.5, 2.0, 2.5, 3.0
corruptions            jpeg ``quality``                                         90, 70, 50, 30, 10
=====================  =======================================================  ===================================

The corruptions span the values of Table 1 of seed 004 (Korkmaz 2023, *Assessing Deep Reinforcement Learning
Policies via Natural Corruptions at the Edge of Imperceptibility*): level 1 is the table's mildest value, at the
edge of imperceptibility by the paper's account, level 5 its top, and levels 2 to 4 lie evenly between.
Whole-pixel parameters are rounded to the nearest value they take (halves up), and Table 1's range holds fewer
than five of them, so median_blur (kernels 3 and 5) and translate (shifts [0, 1] to [2, 2]) repeat levels.
Brightness follows the table's brightening pairs (gain 1.2 to 2.4, offset 20 to 40; its darkening offsets of
-260 and -275 are left out, so that both parameters grow with the level). Table 1 gives no JPEG quality: the
levels span 90 to 10, the range ``rw.sweep``'s default JPEG sweep covers.

**Recovery.** The level-4 observation noise, switched on for steps ``start <= t < stop`` of each episode
(``window(start=S, stop=E, unit="step")``); ``window`` and ``horizon`` are those of
:func:`rlwrappers.metrics.card.recovery_time`: CartPole-v1 100, 150, 20, 200; Pendulum-v1 50, 100, 10, 100;
Hopper-v5 200, 300, 20, 300; rlwrappers/Catch-v0 27, 45, 9, 45; the two Breakouts 200, 300, 100, 1000 (agent
steps of a whole game: the noise strikes for 100 steps well into the first life; a random game lasts about 180
steps, an SB3 PPO agent scoring about 35 plays games of 700 to 900, so the horizon of 1,000 in effect runs to the
game's end, and a game that ends before its trailing mean holds the band for 100 steps has not recovered).

**Interventions** (shown on the card, not rated): changes made once to the env's state mid-episode, after which
the episode plays on (:class:`~rlwrappers.wrappers.state.Intervene`), on the envs whose state can be written:
CartPole-v1 a push of the pole (``theta_dot+=0.5``) or of the cart (``x_dot+=1.0``), a tilt (``theta=0.15``)
and a pole ten times heavier, each at step 100; Pendulum-v1 knocked down (``theta=3.14159``), spun
(``theta_dot+=4.0``) or made 1.5 times heavier at step 100; Hopper-v5 shoved forward or back (``qvel[0]``
+-1 m/s) or tipped (``qvel[2]+=2.0``) at step 200; BreakoutNoFrameskip-v4 its bottom row of bricks, or its
third and fourth rows, removed through the RAM at frame 42 of each game, once the wall is built (the
intervention acts on the raw game, under the preprocessing, where its schedule counts frames);
rlwrappers/ToyboxBreakout-v0 six of seed 000's catalogue (``paddle_width_12``, ``paddle_width_48``,
``paddle_speed_2``, ``drop_row_5``, ``drop_row_2``, ``drop_column_8``), made as each game starts. Catch has none.

Example:
    >>> from rlwrappers.ladders import ladder
    >>> cartpole = ladder("CartPole-v1")
    >>> [arm.name for arm in cartpole.arms(["sticky_action"])]
    ['sticky_action@1', 'sticky_action@2', 'sticky_action@3', 'sticky_action@4', 'sticky_action@5']
    >>> cartpole.arms(["sticky_action"])[2].entries
    [{'name': 'sticky_action', 'p': 0.25, 'duration': 1, 'when': 'always'}]
    >>> cartpole.recovery.start, cartpole.recovery.stop
    (100, 150)
    >>> breakout = ladder("BreakoutNoFrameskip-v4")
    >>> breakout.env_kwargs, breakout.preprocessing, cartpole.env_kwargs, cartpole.preprocessing
    ({'max_episode_steps': 18000}, 'atari-games', {}, None)
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rlwrappers import _check
from rlwrappers.error import CannotCalibrate, InvalidArgument, InvalidType, UnknownName, did_you_mean
from rlwrappers.ladders.calibration import DIRECTORY, file_name, reference_record, to_json
from rlwrappers.ladders.definition import (
    CALIBRATION_STEPS,
    CORRUPTIONS,
    EARLIER,
    FAMILIES,
    LADDER,
    LEVELS,
    PREPROCESSING,
    Family,
)
from rlwrappers.ladders.preprocessing import preprocessing_wrappers
from rlwrappers.ladders.provisional import given_reference, provisional_file
from rlwrappers.ladders.suites import REFUSED, SUITES, calibrate, suite_envs, write

__all__ = [
    "CORRUPTIONS",
    "EARLIER",
    "FAMILIES",
    "LADDER",
    "LEVELS",
    "PREPROCESSING",
    "REFUSED",
    "SUITES",
    "Arm",
    "Family",
    "Ladder",
    "LadderIntervention",
    "Recovery",
    "calibrate",
    "card_ladder",
    "file_name",
    "ladder",
    "ladders",
    "preprocessing_wrappers",
    "provisional_ladder",
    "suite_envs",
    "to_json",
    "versions",
    "write",
]


@dataclass(frozen=True)
class Arm:
    """One arm of a card: a family (and sub-family) of shift at one level, and the entries that make it.

    Attributes:
        family: the family's name, a key of :data:`FAMILIES`.
        sub_family: the sub-family's name (a key of :data:`CORRUPTIONS`), or None.
        level: 1 (barely noticeable) to 5 (severe).
        entries: the perturbation entry dicts, for :func:`rlwrappers.wrap` or an evaluation's shifts.
    """

    family: str
    sub_family: str | None
    level: int
    entries: list[dict[str, Any]]

    @property
    def name(self) -> str:
        """``family@level``, or ``family.sub_family@level``: e.g. ``obs_noise@3``, ``corruptions.rotate@2``."""
        family = self.family if self.sub_family is None else f"{self.family}.{self.sub_family}"
        return f"{family}@{self.level}"


@dataclass(frozen=True)
class Recovery:
    """The recovery test: a shift that acts for steps ``start <= t < stop`` of each episode, then ends.

    ``window`` and ``horizon`` are :func:`rlwrappers.metrics.card.recovery_time`'s: the steps the trailing mean
    reward must hold the clean band, and the steps after the shift within which recovery counts.
    """

    entries: list[dict[str, Any]]
    start: int
    stop: int
    window: int
    horizon: int


@dataclass(frozen=True)
class LadderIntervention:
    """An intervention a card shows, not rated: its name, what it does, and the entries that make it."""

    name: str
    doc: str
    entries: list[dict[str, Any]]

    @property
    def arm(self) -> str:
        """The name of its arm in the card's evaluation: ``intervention.NAME``."""
        return f"intervention.{self.name}"


@dataclass(frozen=True)
class Ladder:
    """The severity ladder of one env, as its file holds it: see :mod:`rlwrappers.ladders`.

    Attributes:
        version: the ladder version, e.g. "card-v1".
        env_id: the env's Gymnasium ID.
        env_kwargs: ``gym.make``'s keyword arguments for the env (e.g. Breakout's ``max_episode_steps``).
        preprocessing: the name of the preprocessing the agents see (:func:`preprocessing_wrappers` makes its
            wrappers, to apply under the shifts), or None.
        kind: "vector" (float observations) or "image" (uint8 frames).
        calibration: how the scales and the random return were measured, and the measured scales.
        random_return: the mean return of a uniform-random policy.
        families: the families, by name, as the file holds them.
        recovery: the recovery test.
        interventions: the interventions on state the card shows, not rated (none where the env's state
            cannot be written).
        reference: the reference return, skill 1, with its source and protocol (``{"return", "source",
            "protocol"}``); None in card-v1 files, which grade loss only.
        random: the random return's source and protocol, as ``reference`` (None in card-v1 files).
        reference_agents: the vanilla agents the ranges are calibrated on, each ``{"name", "sha256"}``.
        provisional: None for a ladder calibrated on its reference agents; else ``{"origin", "rules", "absent"}``:
            how it was made without them (:mod:`rlwrappers.ladders.provisional`), and each family it lacks, with
            the reason.
        absent: each family of its kind the env lacks, with the reason (LunarLander's state cannot be set, so it
            has no initial-state noise); a provisional ladder's says more (its corruptions on vectors, ...).
        sha256: the SHA-256 of the ladder's file text (:func:`to_json`): cards compare only under one.
    """

    version: str
    env_id: str
    env_kwargs: Mapping[str, Any]
    preprocessing: str | None
    kind: str
    calibration: Mapping[str, Any]
    random_return: float
    families: Mapping[str, Any]
    recovery: Recovery
    interventions: tuple[LadderIntervention, ...] = ()
    reference: Mapping[str, Any] | None = None
    random: Mapping[str, Any] | None = None
    reference_agents: tuple[Mapping[str, Any], ...] = ()
    provisional: Mapping[str, Any] | None = None
    absent: Mapping[str, str] = field(default_factory=dict)
    sha256: str = ""

    @property
    def reference_return(self) -> float | None:
        """The reference return, skill 1 (None for card-v1 ladders)."""
        return None if self.reference is None else float(self.reference["return"])

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Ladder:
        """A ladder from the JSON form its file holds.

        Raises:
            InvalidArgument: a key is missing, a family is not one of :data:`FAMILIES`, ``env_kwargs`` is not a
                dict, or ``preprocessing`` is neither a name nor null.
        """
        required: tuple[str, ...] = (
            "ladder",
            "env_id",
            "env_kwargs",
            "preprocessing",
            "kind",
            "calibration",
            "random_return",
            "families",
            "recovery",
        )
        if data.get("ladder") not in EARLIER:  # card-v2 on: skill needs the reference and random returns
            required = (*required, "random", "reference", "reference_agents")
        missing = [key for key in required if key not in data]
        if missing:
            raise InvalidArgument(f"a ladder needs the keys {missing}, received keys {list(data)}")
        unknown = [name for name in data["families"] if name not in FAMILIES]
        if unknown:
            raise InvalidArgument(f"a ladder's `families` must be among {list(FAMILIES)}, received {unknown}")
        if not isinstance(data["env_kwargs"], Mapping):
            raise InvalidArgument(f"a ladder's `env_kwargs` must be a dict, received {data['env_kwargs']!r}")
        if data["preprocessing"] is not None and not isinstance(data["preprocessing"], str):
            raise InvalidArgument(
                f"a ladder's `preprocessing` must be a name or null, received {data['preprocessing']!r}"
            )
        recovery = dict(data["recovery"])
        return cls(
            version=str(data["ladder"]),
            env_id=str(data["env_id"]),
            env_kwargs=copy.deepcopy(dict(data["env_kwargs"])),
            preprocessing=data["preprocessing"],
            kind=str(data["kind"]),
            calibration=copy.deepcopy(dict(data["calibration"])),
            random_return=float(data["random_return"]),
            families=copy.deepcopy(dict(data["families"])),
            recovery=Recovery(
                entries=copy.deepcopy(list(recovery["entries"])),
                start=int(recovery["start"]),
                stop=int(recovery["stop"]),
                window=int(recovery["window"]),
                horizon=int(recovery["horizon"]),
            ),
            interventions=tuple(
                LadderIntervention(str(item["name"]), str(item["doc"]), copy.deepcopy(list(item["entries"])))
                for item in data.get("interventions", [])
            ),
            reference=copy.deepcopy(data.get("reference")),
            random=copy.deepcopy(data.get("random")),
            reference_agents=tuple(copy.deepcopy(list(data.get("reference_agents", [])))),
            provisional=copy.deepcopy(data.get("provisional")),
            absent=dict(data.get("absent") or (data.get("provisional") or {}).get("absent", {})),
            sha256=hashlib.sha256(to_json(data).encode()).hexdigest(),
        )

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Ladder:
        """A ladder from its file."""
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))

    def arms(self, families: str | Iterable[str] | None = None) -> list[Arm]:
        """The arms of ``families`` (default: all), one per (family, sub-family, level).

        Arms come in a fixed order: families in :data:`FAMILIES`' order (whatever order ``families`` gives),
        sub-families in :data:`CORRUPTIONS`' order, levels 1 to 5. A family this env's ladder lacks (init_noise
        and dynamics on image envs, corruptions on vector envs) gives no arms. Each arm holds its own copy of
        the entries.

        Raises:
            UnknownName: ``families`` names a family that is not in :data:`FAMILIES`.
            InvalidType: ``families`` is not a name or an iterable of names.
        """
        wanted = self._families(families)
        out: list[Arm] = []
        for name in FAMILIES:
            if name not in wanted or name not in self.families:
                continue
            family = self.families[name]
            if "sub_families" in family:
                subs = family["sub_families"]
                for sub in [s for s in CORRUPTIONS if s in subs] + [s for s in subs if s not in CORRUPTIONS]:
                    out.extend(self._levels(name, sub, subs[sub]["levels"]))
            else:
                out.extend(self._levels(name, None, family["levels"]))
        return out

    @staticmethod
    def _families(families: str | Iterable[str] | None) -> set[str]:
        if families is None:
            return set(FAMILIES)
        if isinstance(families, str):
            families = [families]
        try:
            names = list(families)
        except TypeError:
            raise InvalidType(f"`families` must be a family name or a list of them, received {families!r}") from None
        for name in names:
            if not isinstance(name, str):
                raise InvalidType(f"`families` must hold family names, received {name!r} in {names!r}")
            if name not in FAMILIES:
                raise UnknownName(
                    f"`families` holds {name!r}, which is not a family; families: {list(FAMILIES)}."
                    + did_you_mean(name, FAMILIES)
                )
        return set(names)

    @staticmethod
    def _levels(family: str, sub_family: str | None, levels: list[list[dict[str, Any]]]) -> list[Arm]:
        return [
            Arm(family, sub_family, level, copy.deepcopy(entries))
            for level, entries in zip(LEVELS, levels, strict=True)
        ]


def versions() -> list[str]:
    """The ladder versions shipped with the package, sorted."""
    return sorted(p.name for p in DIRECTORY.iterdir() if p.is_dir() and any(p.glob("*.json")))


def _check_version(version: Any) -> str:
    if not isinstance(version, str):
        raise InvalidType(f"`version` must be a ladder version such as {LADDER!r}, received {version!r}")
    known = versions()
    if version not in known:
        raise UnknownName(
            f"`version` {version!r} is not a ladder version; versions: {known}." + did_you_mean(version, known)
        )
    return version


@functools.cache
def _read_all(version: str) -> dict[str, dict[str, Any]]:
    """The JSON form of every ladder of ``version``, by env ID, read once."""
    found = (json.loads(path.read_text(encoding="utf-8")) for path in sorted((DIRECTORY / version).glob("*.json")))
    return {data["env_id"]: data for data in found}


def ladders(version: str = LADDER) -> list[str]:
    """The env IDs that ``version`` has a ladder for, sorted.

    Raises:
        UnknownName: no such version (with a suggestion).
    """
    return sorted(_read_all(_check_version(version)))


def ladder(env_id: str, version: str = LADDER) -> Ladder:
    """The severity ladder of ``env_id`` in ``version`` (default: the current one, :data:`LADDER`).

    Example:
        >>> catch = ladder("rlwrappers/Catch-v0")
        >>> catch.kind, catch.random_return, len(catch.arms())
        ('image', -6.05405, 60)
        >>> [arm.entries[0]["degrees"] for arm in catch.arms("corruptions") if arm.sub_family == "rotate"]
        [2.0, 3.364, 5.657, 9.514, 16.0]
        >>> [arm.name for arm in catch.arms("attack")][4:6]  # the share of steps, then the budget
        ['attack.share@5', 'attack.budget@1']

    Raises:
        UnknownName: no such version, or the version has no ladder for ``env_id`` (with a suggestion).
        InvalidType: ``env_id`` or ``version`` is not a string.
    """
    found = _read_all(_check_version(version))
    if not isinstance(env_id, str):
        raise InvalidType(f"`env_id` must be a Gymnasium ID such as 'CartPole-v1', received {env_id!r}")
    if env_id not in found:
        raise UnknownName(
            f"`env_id` {env_id!r} has no {version} ladder; ladders exist for {sorted(found)}."
            + did_you_mean(env_id, found)
        )
    return Ladder.from_dict(found[env_id])  # a copy: callers cannot change the ladder others read


def provisional_ladder(
    env_id: str,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    reference_return: float | None = None,
    steps: int = CALIBRATION_STEPS,
    refresh: bool = False,
) -> Ladder:
    """The provisional ladder of ``env_id``, calibrated on first use and cached (:mod:`rlwrappers.ladders.provisional`).

    Args:
        env_id: a registered Gymnasium ID, or ``"module:ID"`` to import the module that registers it.
        env_kwargs: ``gym.make``'s keyword arguments for the env (JSON values), e.g. ``{"max_episode_steps": 500}``.
        reference_return: the return of skill 1 (default: the env's ``spec.reward_threshold``).
        steps: the random policy's steps.
        refresh: calibrate again even where the cache holds the ladder.

    Raises:
        UnknownName: ``env_id`` is not registered (with a suggestion).
        CannotCalibrate: the env has no reference return, its episodes never end under the random policy, or
            its spaces are not supported; the message names the option that fixes it.
    """
    return Ladder.from_dict(
        provisional_file(env_id, env_kwargs=env_kwargs, reference_return=reference_return, steps=steps, refresh=refresh)
    )


def card_ladder(
    env_id: str,
    *,
    env_kwargs: Mapping[str, Any] | None = None,
    reference_return: float | None = None,
    steps: int | None = None,
    refresh: bool = False,
) -> Ladder:
    """The ladder a card of ``env_id`` plays: the shipped one of the current version, else a provisional one.

    A provisional ladder is calibrated on first use and cached (:func:`provisional_ladder`, which takes the other
    arguments). A shipped ladder fixes its env and its reference.

    Raises:
        InvalidArgument: an argument but ``env_id`` given for an env with a shipped ladder.
        CannotCalibrate: see :func:`provisional_ladder`.
    """
    if isinstance(env_id, str) and env_id in REFUSED:
        raise CannotCalibrate(f"{env_id} gets no card: {REFUSED[env_id]}")
    shipped = _read_all(LADDER)
    if isinstance(env_id, str) and env_id in shipped:
        stated = shipped[env_id]["reference"] is not None
        given = {"env_kwargs": env_kwargs, "reference_return": reference_return if stated else None, "steps": steps}
        given["refresh"] = refresh or None
        named = [name for name, value in given.items() if value is not None]
        if named:
            raise InvalidArgument(
                f"{env_id} has a shipped {LADDER} ladder, which fixes its env and reference return; drop {named}"
            )
        if stated:
            return ladder(env_id)
        if reference_return is None:
            raise CannotCalibrate(
                f"{env_id}'s shipped {LADDER} ladder states no reference return (none is published); give the"
                " return of skill 1 with --reference-return R (reference_return=R)"
            )
        data = copy.deepcopy(shipped[env_id])
        data["reference"] = reference_record(given_reference(_check.number("reference_return", reference_return)))
        return Ladder.from_dict(data)
    return provisional_ladder(
        env_id,
        env_kwargs=env_kwargs,
        reference_return=reference_return,
        steps=CALIBRATION_STEPS if steps is None else steps,
        refresh=refresh,
    )
