"""Schedules: when a perturbation is active.

Time is counted the way the agent lives it: ``reset`` is time 0 of an episode, and each call to ``step`` moves
from time ``t`` to ``t + 1``. A schedule decides, for every time ``t``, whether its perturbation is active;
the decision at time ``t`` covers the observation the agent sees at ``t``, the action it takes at ``t`` and
the reward it receives for that action. Episodes are counted from 0 over the wrapper's whole life, and
``total_step`` counts every ``step`` call the wrapper has seen.

Schedules combine with ``&`` (both), ``|`` (either) and ``~`` (not), in Python and in spec strings::

    >>> from rlwrappers import schedule
    >>> s = schedule.parse("starting(episode=10) & prob(p=0.5)")
    >>> s == schedule.Starting(episode=10) & schedule.Prob(0.5)
    True
    >>> print(s)
    starting(episode=10) & prob(p=0.5)

Random schedules draw from a generator the wrapper owns and seeds from the seed given to ``reset`` (see
:mod:`rlwrappers.seeding`); two runs with the same seeds switch on at the same times.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import numpy as np
from typing_extensions import override

from rlwrappers import _check
from rlwrappers.error import InvalidArgument, InvalidType, SpecSyntaxError, UnknownName, did_you_mean
from rlwrappers.spec import Call, format_call
from rlwrappers.spec import parse as parse_spec

__all__ = [
    "ALWAYS",
    "AllOf",
    "Always",
    "AnyOf",
    "Bursts",
    "Never",
    "Not",
    "Plan",
    "Prob",
    "Schedule",
    "Starting",
    "Switching",
    "Window",
    "names",
    "parse",
]

UNITS: Final = ("step", "episode", "total_step")


class Plan(abc.ABC):
    """A schedule's decisions for one episode.

    ``active(t)`` is called once for every time ``t = 0, 1, 2, ...`` of the episode, in order. ``constant``
    is True or False when the decision cannot change during the episode, which lets wrappers skip the
    per-step call entirely.
    """

    constant: bool | None = None

    @abc.abstractmethod
    def active(self, t: int) -> bool:
        """Whether the perturbation is active at time ``t``."""

    def next_change(self, t: int) -> float:
        """The first time after ``t`` at which the decision may change; until then ``active`` need not be asked.

        Plans that draw at every time, or keep state, return ``t + 1`` (the default).
        """
        return t + 1


class _Constant(Plan):
    def __init__(self, value: bool) -> None:
        self.constant = value

    @override
    def active(self, t: int) -> bool:
        return bool(self.constant)

    @override
    def next_change(self, t: int) -> float:
        return float("inf")


ON: Final[Plan] = _Constant(True)
OFF: Final[Plan] = _Constant(False)


class _Between(Plan):
    """Active for ``low <= t < high``."""

    def __init__(self, low: int, high: float) -> None:
        self.low, self.high = low, high

    @override
    def active(self, t: int) -> bool:
        return self.low <= t < self.high

    @override
    def next_change(self, t: int) -> float:
        if t < self.low:
            return self.low
        return self.high if t < self.high else float("inf")


@dataclass(frozen=True)
class Switching:
    """What a schedule may do within an episode, in some episode: what a log needs to know to lay out its columns.

    A flag that is False is a promise that no episode does it; one that is True says that some episode may.
    """

    #: Active at time 0 (at reset).
    on_at_reset: bool
    #: Inactive at time 0.
    off_at_reset: bool
    #: Switches on at a time after 0.
    switches_on: bool
    #: Switches off at a time after 0.
    switches_off: bool

    @property
    def ever_on(self) -> bool:
        """Whether it may be active at any time."""
        return self.on_at_reset or self.switches_on

    @property
    def ever_off(self) -> bool:
        """Whether it may be inactive at any time."""
        return self.off_at_reset or self.switches_off


#: Active at every time of every episode.
ON_THROUGHOUT: Final = Switching(on_at_reset=True, off_at_reset=False, switches_on=False, switches_off=False)
#: Never active.
OFF_THROUGHOUT: Final = Switching(on_at_reset=False, off_at_reset=True, switches_on=False, switches_off=False)
#: On or off for a whole episode, decided at reset.
PER_EPISODE: Final = Switching(on_at_reset=True, off_at_reset=True, switches_on=False, switches_off=False)
#: Anything: on or off at reset, switching either way during the episode.
ANYTIME: Final = Switching(on_at_reset=True, off_at_reset=True, switches_on=True, switches_off=True)


class Schedule(abc.ABC):
    """Decides at which times of which episodes a perturbation is active."""

    name: ClassVar[str]

    @property
    def random(self) -> bool:
        """Whether :meth:`plan` draws from the generator it is given."""
        return False

    @property
    def episode_local(self) -> bool:
        """Whether each episode's decisions depend only on that episode (its own steps and generator).

        False for schedules that count episodes or steps over the wrapper's life (``starting(episode=...)``,
        ``window(..., unit="total_step")``): they act differently when a run starts part-way through.
        """
        return True

    @property
    def switching(self) -> Switching:
        """What it may do within an episode: whether it may be on at reset, and switch on or off later.

        A log keeps a value recorded at reset in its episodes table and one recorded during a step in its steps
        table (see :class:`~rlwrappers.core.Entry`); it lays out only the columns the schedule can fill.
        Schedules defined elsewhere may do anything unless they say otherwise.
        """
        return ANYTIME

    @abc.abstractmethod
    def plan(self, episode: int, total_step: int, rng: np.random.Generator | None) -> Plan:
        """Returns the decisions for the episode with lifetime index ``episode``.

        Args:
            episode: index of the episode over the wrapper's life, from 0.
            total_step: number of ``step`` calls the wrapper had seen when the episode began.
            rng: the schedule's own generator for this episode.
        """

    @abc.abstractmethod
    def params(self) -> dict[str, Any]:
        """The schedule's arguments, as written in its spec string."""

    def __str__(self) -> str:
        return format_call(self.name, self.params())

    def __repr__(self) -> str:
        return f"schedule.parse({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Schedule) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))

    def __and__(self, other: Schedule) -> Schedule:
        return AllOf(self, other)

    def __or__(self, other: Schedule) -> Schedule:
        return AnyOf(self, other)

    def __invert__(self) -> Schedule:
        return Not(self)


class Always(Schedule):
    """Active at every time of every episode (the default)."""

    name = "always"

    @override
    @property
    def switching(self) -> Switching:
        return ON_THROUGHOUT

    @override
    def plan(self, episode: int, total_step: int, rng: np.random.Generator | None) -> Plan:
        return ON

    @override
    def params(self) -> dict[str, Any]:
        return {}


class Never(Schedule):
    """Never active: keeps a perturbation in the stack, and in the log, without effect."""

    name = "never"

    @override
    @property
    def switching(self) -> Switching:
        return OFF_THROUGHOUT

    @override
    def plan(self, episode: int, total_step: int, rng: np.random.Generator | None) -> Plan:
        return OFF

    @override
    def params(self) -> dict[str, Any]:
        return {}


class Starting(Schedule):
    """Active from a chosen time on: ``starting(episode=10)``, ``starting(step=100)``, ``starting(total_step=5000)``.

    ``step`` counts within each episode (time ``t``), so ``starting(step=100)`` is active from time 100 of
    every episode; ``episode`` and ``total_step`` count over the wrapper's life.
    """

    name = "starting"

    def __init__(self, *, step: int | None = None, episode: int | None = None, total_step: int | None = None):
        given = {k: v for k, v in (("step", step), ("episode", episode), ("total_step", total_step)) if v is not None}
        if len(given) != 1:
            raise InvalidArgument(
                f"`starting` takes exactly one of `step`, `episode`, `total_step`, received {given or 'none'}"
            )
        ((self.unit, value),) = given.items()
        self.at = _check.integer(self.unit, value, minimum=0)

    @override
    @property
    def episode_local(self) -> bool:
        return self.unit == "step"

    @override
    @property
    def switching(self) -> Switching:
        if self.unit == "episode":
            return PER_EPISODE
        if self.at == 0:
            return ON_THROUGHOUT
        # From a later time of each episode, or from a total step that an episode starts after or reaches.
        return Switching(on_at_reset=self.unit == "total_step", off_at_reset=True, switches_on=True, switches_off=False)

    @override
    def plan(self, episode: int, total_step: int, rng: np.random.Generator | None) -> Plan:
        if self.unit == "episode":
            return ON if episode >= self.at else OFF
        first = self.at if self.unit == "step" else max(0, self.at - total_step)
        return ON if first == 0 else _Between(first, float("inf"))

    @override
    def params(self) -> dict[str, Any]:
        return {self.unit: self.at}


class Window(Schedule):
    """Active for ``start <= time < stop``, counted in ``unit`` ("step", "episode" or "total_step").

    Several windows combine with ``|``: ``window(start=10, stop=20) | window(start=50, stop=60)``.
    """

    name = "window"

    def __init__(self, start: int, stop: int, unit: str = "step"):
        self.start = _check.integer("start", start, minimum=0)
        self.stop = _check.integer("stop", stop, minimum=0)
        if self.stop <= self.start:
            raise InvalidArgument(f"`stop` must be > `start` ({start}), received {stop!r}")
        self.unit = _check.choice("unit", unit, UNITS)

    @override
    @property
    def episode_local(self) -> bool:
        return self.unit == "step"

    @override
    @property
    def switching(self) -> Switching:
        if self.unit == "episode":
            return PER_EPISODE
        if self.unit == "step":
            starts = self.start == 0
            return Switching(on_at_reset=starts, off_at_reset=not starts, switches_on=not starts, switches_off=True)
        # Counted over the wrapper's life: an episode may start before, inside or after the window.
        return Switching(on_at_reset=True, off_at_reset=True, switches_on=self.start > 0, switches_off=True)

    @override
    def plan(self, episode: int, total_step: int, rng: np.random.Generator | None) -> Plan:
        if self.unit == "episode":
            return ON if self.start <= episode < self.stop else OFF
        offset = 0 if self.unit == "step" else total_step
        low, high = max(0, self.start - offset), self.stop - offset
        if high <= 0:
            return OFF
        return ON if low == 0 and high == float("inf") else _Between(low, high)

    @override
    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"start": self.start, "stop": self.stop}
        if self.unit != "step":
            out["unit"] = self.unit
        return out


class _BernoulliSteps(Plan):
    """Independent draws with probability ``p`` per time, taken from the generator in blocks."""

    BLOCK: Final = 256

    def __init__(self, p: float, rng: np.random.Generator) -> None:
        self.p, self.rng = p, rng
        self.block = np.empty(0, dtype=bool)
        self.start = 0

    @override
    def active(self, t: int) -> bool:
        i = t - self.start
        if i >= len(self.block):
            self.start, i = t, 0
            self.block = self.rng.random(self.BLOCK) < self.p
        return bool(self.block[i])


class Prob(Schedule):
    """Active with probability ``p``, drawn independently per time step (``per="step"``) or per episode."""

    name = "prob"

    def __init__(self, p: float, per: str = "step"):
        self.p = _check.probability("p", p)
        self.per = _check.choice("per", per, ("step", "episode"))

    @override
    @property
    def random(self) -> bool:
        return True

    @override
    @property
    def switching(self) -> Switching:
        if self.p in (0.0, 1.0):
            return ON_THROUGHOUT if self.p == 1.0 else OFF_THROUGHOUT
        return PER_EPISODE if self.per == "episode" else ANYTIME

    @override
    def plan(self, episode: int, total_step: int, rng: np.random.Generator | None) -> Plan:
        assert rng is not None, "random schedules are given a generator"
        if self.per == "episode":
            return ON if rng.random() < self.p else OFF
        if self.p == 0.0:
            return OFF
        return ON if self.p == 1.0 else _BernoulliSteps(self.p, rng)

    @override
    def params(self) -> dict[str, Any]:
        out: dict[str, Any] = {"p": self.p}
        if self.per != "step":
            out["per"] = self.per
        return out


class _BurstPlan(Plan):
    def __init__(self, p: float, low: int, high: int, rng: np.random.Generator) -> None:
        self.p, self.low, self.high, self.rng = p, low, high, rng
        self.remaining = 0

    @override
    def active(self, t: int) -> bool:
        if self.remaining == 0 and self.rng.random() < self.p:
            self.remaining = int(self.rng.integers(self.low, self.high, endpoint=True))
        if self.remaining > 0:
            self.remaining -= 1
            return True
        return False


class Bursts(Schedule):
    """Shifts that strike at random and last a random time (the observational setting of Fujimoto et al.).

    At each time step without an ongoing burst, a burst starts with probability ``p``; it lasts a number of
    steps drawn uniformly from ``duration = (a, b)`` (both ends included), then the perturbation waits for
    the next one. Bursts end with the episode.
    """

    name = "bursts"

    def __init__(self, p: float, duration: int | tuple[int, int]):
        self.p = _check.probability("p", p)
        self.duration = _check.int_range("duration", duration, minimum=1)

    @override
    @property
    def random(self) -> bool:
        return True

    @override
    @property
    def switching(self) -> Switching:
        if self.p in (0.0, 1.0):  # with p = 1 each burst starts as the last one ends: always on
            return ON_THROUGHOUT if self.p == 1.0 else OFF_THROUGHOUT
        return ANYTIME

    @override
    def plan(self, episode: int, total_step: int, rng: np.random.Generator | None) -> Plan:
        assert rng is not None, "random schedules are given a generator"
        return OFF if self.p == 0.0 else _BurstPlan(self.p, *self.duration, rng)

    @override
    def params(self) -> dict[str, Any]:
        return {"p": self.p, "duration": self.duration}


class _Combined(Plan):
    def __init__(self, plans: list[Plan], combine: Callable[[Iterable[bool]], bool]) -> None:
        self.plans, self.combine = plans, combine

    @override
    def active(self, t: int) -> bool:
        # Every member decides at every time, so a member's draws never depend on the others.
        return self.combine([p.active(t) for p in self.plans])

    @override
    def next_change(self, t: int) -> float:
        return min(p.next_change(t) for p in self.plans)


class _Group(Schedule):
    """Members combined by ``combine``; a member constant at ``decisive`` decides the whole episode."""

    combine: ClassVar[Callable[[Iterable[bool]], bool]]
    decisive: ClassVar[bool]

    def __init__(self, *members: Schedule):
        self.members = _members(self, members)

    @override
    @property
    def random(self) -> bool:
        return any(m.random for m in self.members)

    @override
    @property
    def episode_local(self) -> bool:
        return all(m.episode_local for m in self.members)

    @override
    def plan(self, episode: int, total_step: int, rng: np.random.Generator | None) -> Plan:
        plans = [m.plan(episode, total_step, rng) for m in self.members]
        if any(p.constant is self.decisive for p in plans):
            return ON if self.decisive else OFF
        # Each episode has its own generator, so dropping the constant members never changes what the others draw.
        varying = [p for p in plans if p.constant is None]
        if not varying:
            return OFF if self.decisive else ON
        return varying[0] if len(varying) == 1 else _Combined(varying, type(self).combine)

    @override
    def params(self) -> dict[str, Any]:
        return {}

    def __str__(self) -> str:
        return f" {self.name} ".join(_operand(m) for m in self.members)


class AllOf(_Group):
    """Active when every member is (``a & b``)."""

    name = "&"
    combine = all
    decisive = False

    @override
    @property
    def switching(self) -> Switching:
        members = [m.switching for m in self.members]
        if not all(m.ever_on for m in members):
            return OFF_THROUGHOUT
        return Switching(
            on_at_reset=all(m.on_at_reset for m in members),
            off_at_reset=any(m.off_at_reset for m in members),
            switches_on=any(m.switches_on for m in members),  # the last member off has to switch on
            switches_off=any(m.switches_off for m in members),
        )


class AnyOf(_Group):
    """Active when any member is (``a | b``)."""

    name = "|"
    combine = any
    decisive = True

    @override
    @property
    def switching(self) -> Switching:
        members = [m.switching for m in self.members]
        if not all(m.ever_off for m in members):
            return ON_THROUGHOUT
        return Switching(
            on_at_reset=any(m.on_at_reset for m in members),
            off_at_reset=all(m.off_at_reset for m in members),
            switches_on=any(m.switches_on for m in members),
            switches_off=any(m.switches_off for m in members),  # the last member on has to switch off
        )


class _Negated(Plan):
    def __init__(self, plan: Plan) -> None:
        self.plan = plan

    @override
    def active(self, t: int) -> bool:
        return not self.plan.active(t)

    @override
    def next_change(self, t: int) -> float:
        return self.plan.next_change(t)


class Not(Schedule):
    """Active when its member is not (``~a``)."""

    name = "~"

    def __init__(self, member: Schedule):
        (self.member,) = _members(self, (member,))

    @override
    @property
    def random(self) -> bool:
        return self.member.random

    @override
    @property
    def episode_local(self) -> bool:
        return self.member.episode_local

    @override
    @property
    def switching(self) -> Switching:
        member = self.member.switching
        return Switching(
            on_at_reset=member.off_at_reset,
            off_at_reset=member.on_at_reset,
            switches_on=member.switches_off,
            switches_off=member.switches_on,
        )

    @override
    def plan(self, episode: int, total_step: int, rng: np.random.Generator | None) -> Plan:
        inner = self.member.plan(episode, total_step, rng)
        if inner.constant is not None:
            return OFF if inner.constant else ON
        return _Negated(inner)

    @override
    def params(self) -> dict[str, Any]:
        return {}

    def __str__(self) -> str:
        return "~" + _operand(self.member)


def _members(owner: Schedule, members: tuple[Any, ...]) -> tuple[Schedule, ...]:
    for m in members:
        if not isinstance(m, Schedule):
            raise InvalidType(f"`{owner.name}` combines schedules, received {m!r} ({type(m).__name__})")
    return tuple(members)


def _operand(s: Schedule) -> str:
    return f"({s})" if isinstance(s, _Group) else str(s)


ALWAYS: Final = Always()

_SCHEDULES: dict[str, type[Schedule]] = {cls.name: cls for cls in (Always, Never, Starting, Window, Prob, Bursts)}


def names() -> list[str]:
    """The schedule names usable in spec strings."""
    return sorted(_SCHEDULES)


def summaries() -> dict[str, str]:
    """The one-line doc of every schedule, by name (what ``rlwrappers list schedules`` prints).

    Example:
        >>> summaries()["always"]
        'Active at every time of every episode (the default).'
    """
    return {name: (_SCHEDULES[name].__doc__ or "").strip().splitlines()[0] for name in names()}


def parse(spec: str | Schedule | Mapping[str, Any] | None) -> Schedule:
    """Builds a schedule from a spec string, a dict ``{"name": ..., **params}``, a Schedule or None (always).

    Raises:
        SpecSyntaxError: the string is malformed (the message points at the column).
        UnknownName: the schedule name is not known (with a suggestion).
        InvalidArgument: a parameter is out of range.
    """
    if spec is None:
        return ALWAYS
    if isinstance(spec, Schedule):
        return spec
    if isinstance(spec, str):
        return from_call(parse_spec(spec, what="schedule"))
    if isinstance(spec, Mapping):
        params = dict(spec)
        name = params.pop("name", None)
        if not isinstance(name, str):
            raise InvalidArgument(f"a schedule dict needs a string `name`, received {spec!r}")
        return from_call(Call(name, (), params))
    raise InvalidType(f"`when` must be a schedule, a spec string, a dict or None, received {spec!r}")


def from_call(call: Any) -> Schedule:
    """Builds a schedule from a parsed :class:`~rlwrappers.spec.Call` tree."""
    if not isinstance(call, Call):
        raise SpecSyntaxError(f"expected a schedule such as `always` or `prob(p=0.1)`, received {call!r}")
    if call.name == "&":
        return AllOf(*(from_call(a) for a in call.args))
    if call.name == "|":
        return AnyOf(*(from_call(a) for a in call.args))
    if call.name == "~":
        return Not(from_call(call.args[0]))
    cls = _SCHEDULES.get(call.name)
    if cls is None:
        raise UnknownName(f"unknown schedule `{call.name}`; known: {names()}.{did_you_mean(call.name, _SCHEDULES)}")
    try:
        return cls(*call.args, **call.kwargs)
    except TypeError as exc:
        if isinstance(exc, InvalidType):
            raise
        raise InvalidType(f"bad arguments for schedule `{call.name}`: {exc}") from None
