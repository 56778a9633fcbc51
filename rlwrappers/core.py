"""Perturbations and the wrapper layer that applies them.

A :class:`Perturbation` is one change to one channel of the agent-environment loop, with JSON-ready
parameters and a transform that is a pure function of its input, its parameters and a generator. A
:class:`PerturbationLayer` is a Gymnasium wrapper that holds one or several perturbations, each with its
schedule; :func:`wrap` builds one from spec strings, and the named wrappers (``ObservationNoise``, ...) are
layers that hold exactly one.

What a layer did is reported under ``info["rlwrappers"]``: one entry per perturbation that acted in that call
to ``reset`` or ``step``, keyed by its label, e.g. ``{"action_noise": {"active": True, "executed": 1}}``.
Perturbations that did nothing are absent. A gradient attack describes a decision, so its entry arrives with
the ``step`` call that acts on the attacked observation (see :attr:`Perturbation.records_decision`).

A layer raises :class:`~rlwrappers.error.PerturbationError` when one of its perturbations first produces a
non-finite float observation or reward, unless that perturbation's entry sets ``allow_nonfinite``; see
:class:`PerturbationLayer`.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Final, SupportsFloat

import gymnasium as gym
import numpy as np
from gymnasium.utils import RecordConstructorArgs

from rlwrappers import _check, distributions, seeding, structure
from rlwrappers import schedule as schedules
from rlwrappers.error import InvalidArgument, InvalidType, PerturbationError, UnknownName, did_you_mean
from rlwrappers.schedule import Plan, Schedule
from rlwrappers.spec import Call, format_call
from rlwrappers.spec import parse as parse_spec

__all__ = [
    "CHANNELS",
    "HELD",
    "INFO_KEY",
    "Entry",
    "Perturb",
    "Perturbation",
    "PerturbationInfo",
    "attach",
    "PerturbationLayer",
    "SingleLayer",
    "layers",
    "perturbations",
    "wrap",
    "wrapper_chain",
]

#: The one ``info`` key under which layers report what they did.
INFO_KEY: Final = "rlwrappers"
#: The channels of the agent-environment loop a perturbation can act on.
CHANNELS: Final = ("observation", "action", "reward", "state", "dynamics", "policy")
#: The channels whose changes hold while switched on: they act, and report, when their schedule switches.
HELD: Final = ("dynamics", "policy")
#: Field types a perturbation may declare for its log records.
FIELD_TYPES: Final = ("bool", "int64", "float64", "float64[]", "action")

#: Parameters added after specs were first stored (in logs, run folders, ``env.spec`` and registered IDs), each
#: with the value that keeps what a spec without it meant. :meth:`Perturbation.params` leaves such a parameter out
#: at that value, so what was stored then is what is written now.
ADDED_LATER: Final = {"keys": None}

_REGISTRY: dict[str, type[Perturbation]] = {}

Record = dict[str, Any]


class Perturbation:
    """One change to one channel of the agent-environment loop.

    Subclasses are keyword-only dataclasses whose fields are the parameters (JSON-ready values, checked in
    ``__post_init__``), and set the class attributes below. A subclass with a ``name`` can be used in spec
    strings. Each overrides the hook of its channel; hooks return the new value and a record of what they did
    (``active`` is added by the layer):

    - observation: :meth:`observation`, and :meth:`observation_space` if it changes the space;
    - action: :meth:`action`;
    - reward: :meth:`reward`;
    - state: :meth:`reset` (acts right after the env's reset, when the schedule is active at time 0);
    - dynamics: :meth:`activate` and :meth:`deactivate`, called when the schedule switches on and off;
    - policy: the same two hooks, acting on the agent attached with :meth:`attach` (parameter noise).

    An observation perturbation that aims at the agent (a gradient attack) sets :attr:`records_decision`: its
    record of an observation is reported with the ``step`` call that acts on it, after :meth:`decided` adds
    the action the agent took, so that one log row holds the whole decision.

    Hooks draw randomness only from the generator they are given, never modify their inputs in place, and
    keep per-episode state (cleared in :meth:`start_episode`) on the instance: a layer binds its own copy.
    """

    name: ClassVar[str]
    channel: ClassVar[str]
    #: What a step record holds beyond ``active``: field name to one of :data:`FIELD_TYPES`.
    step_fields: ClassVar[Mapping[str, str]] = {}
    #: What a reset record holds beyond ``active``.
    reset_fields: ClassVar[Mapping[str, str]] = {}
    #: Whether :meth:`action` needs the previously executed action (the layer keeps it only if one does).
    uses_previous_action: ClassVar[bool] = False
    #: Whether it acts through an agent given with :meth:`attach` (parameter noise, gradient attacks).
    needs_agent: ClassVar[bool] = False
    #: Whether it changes the base env's state and returns the observation of the new state, computed from the
    #: base env (``init_noise``, ``intervene``): it must sit below every wrapper that changes observations.
    observes_state: ClassVar[bool] = False
    #: Whether its observation records describe the agent's decision on the perturbed observation: they are
    #: reported with the next ``step`` call, completed by :meth:`decided` with the action the agent took.
    records_decision: ClassVar[bool] = False
    #: Whether it acts only at reset (time 0 of an episode): a schedule that switches on only later is refused.
    acts_at_reset_only: ClassVar[bool] = False
    #: Once bound to a Dict or Tuple observation space, the keys of the entries it acts on; None otherwise.
    chosen: tuple[str, ...] | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("name")
        if name is None:
            return
        if getattr(cls, "channel", None) not in CHANNELS:
            raise TypeError(f"{cls.__name__}.channel must be one of {CHANNELS}")
        for fields in (cls.step_fields, cls.reset_fields):
            for key, kind in fields.items():
                if kind not in FIELD_TYPES:
                    raise TypeError(f"{cls.__name__} field {key!r} has type {kind!r}, not one of {FIELD_TYPES}")
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise TypeError(f"perturbation name {name!r} is taken by {_REGISTRY[name].__qualname__}")
        _REGISTRY[name] = cls

    # -- parameters -------------------------------------------------------------------------------------
    def params(self) -> dict[str, Any]:
        """The parameters, JSON-ready, in declaration order (those of :data:`ADDED_LATER` only where they differ)."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]
        for name, value in ADDED_LATER.items():
            if name in out and out[name] == value:
                del out[name]
        return out

    def changed_params(self) -> dict[str, Any]:
        """The parameters that differ from their defaults (what a spec string needs to say)."""
        out = {}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            if (f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING) or value != default:
                out[f.name] = value
        return out

    def __str__(self) -> str:
        return format_call(self.name, self.changed_params())

    def copy(self) -> Perturbation:
        """A fresh, unbound instance with the same parameters."""
        return type(self)(**self.params())

    # -- binding ----------------------------------------------------------------------------------------
    def keeps_finite(self) -> bool:
        """Whether, once bound, its output is finite wherever its input is, so the layer need not check it."""
        return False

    def bind(self, env: gym.Env[Any, Any], observation_space: gym.Space[Any], action_space: gym.Space[Any]) -> None:
        """Checks that the perturbation can act on ``env`` with these spaces; raises a typed error if not.

        ``observation_space`` and ``action_space`` are the spaces at this perturbation's place in the stack.
        """

    def observation_space(self, space: gym.Space[Any]) -> gym.Space[Any]:
        """The observation space after this perturbation (unchanged by default)."""
        return space

    def set_params(
        self,
        params: Mapping[str, Any],
        env: gym.Env[Any, Any],
        observation_space: gym.Space[Any],
        action_space: gym.Space[Any],
    ) -> None:
        """Takes new values of its parameters while bound: checks and sets them, then binds again.

        The values were drawn from distributions, which its layer checked when it was built; the spaces are the
        ones it was bound with. Subclasses whose binding follows cheaply from a drawn parameter override it, so
        that drawing one every step stays cheap.
        """
        fresh = type(self)(**params)
        for field in dataclasses.fields(fresh):  # type: ignore[arg-type]
            setattr(self, field.name, getattr(fresh, field.name))
        self.bind(env, observation_space, action_space)

    # -- hooks ------------------------------------------------------------------------------------------
    def start_episode(self) -> None:
        """Clears per-episode state."""

    def observation(self, obs: Any, rng: np.random.Generator) -> tuple[Any, Record]:
        """Perturbs an observation the agent is about to see."""
        raise NotImplementedError

    def action(self, action: Any, previous: Any, rng: np.random.Generator) -> tuple[Any, Record]:
        """Perturbs the agent's action; ``previous`` is the action the env executed last (None after reset)."""
        raise NotImplementedError

    def reward(self, reward: float, rng: np.random.Generator) -> tuple[float, Record]:
        """Perturbs the reward for the action just taken."""
        raise NotImplementedError

    def reset(self, env: gym.Env[Any, Any], obs: Any, rng: np.random.Generator) -> tuple[Any, Record]:
        """Changes the env's state right after its reset; returns the observation of the new state."""
        raise NotImplementedError

    def activate(self, env: gym.Env[Any, Any], rng: np.random.Generator) -> Record | None:
        """Called when the schedule switches the perturbation on: at time 0 of an episode, or later in it.

        Dynamics perturbations apply their change here and return a record; others may start something.
        Returns None (the default) when there is nothing to report.
        """
        return None

    def deactivate(self, env: gym.Env[Any, Any]) -> None:
        """Called when the schedule switches the perturbation off, and at the next reset if it was on.

        Undoes :meth:`activate` exactly, and ends anything under way (a sticky repetition).
        """

    def record_fields(self) -> dict[str, str]:
        """The fields of its step records once bound: :attr:`step_fields`, and any its space adds."""
        return dict(self.step_fields)

    def decided(self, action: Any, record: Record) -> Record:
        """Completes the record of a perturbed observation with the ``action`` the agent took on it."""
        return record

    def attach(self, agent: Any) -> None:
        """Gives the perturbation the agent it acts on (if :attr:`needs_agent`); others have no use for one."""
        raise InvalidArgument(f"{self.name} acts on the {self.channel} channel and takes no agent")


def _doc_lines(cls: type) -> tuple[str, dict[str, str]]:
    """The summary line and the one-line ``Args:`` docs of a Google-style class docstring."""
    doc = inspect.cleandoc(cls.__doc__ or "")
    summary = doc.splitlines()[0] if doc else ""
    args: dict[str, str] = {}
    section = re.search(r"^\s*Args:\s*\n((?:\s{4,}.*\n?)+)", doc, re.MULTILINE)
    if section:
        current = None
        for line in section.group(1).splitlines():
            match = re.match(r"^\s{4}(\w+)(?: \([^)]*\))?:\s*(.*)$", line)
            if match:
                current = match.group(1)
                args[current] = match.group(2)
            elif current and line.strip():
                args[current] += " " + line.strip()
    return summary, args


@dataclasses.dataclass(frozen=True)
class PerturbationInfo:
    """What :func:`perturbations` lists for one perturbation."""

    name: str
    channel: str
    summary: str
    params: dict[str, tuple[Any, str]]
    wrapper: str | None

    def __str__(self) -> str:
        lines = [f"{self.name} ({self.channel}): {self.summary}"]
        for key, (default, doc) in self.params.items():
            lines.append(f"    {key}={default!r}: {doc}")
        return "\n".join(lines)


_WRAPPERS: dict[str, str] = {}


def perturbations() -> list[PerturbationInfo]:
    """Every registered perturbation: name, channel, one-line doc, parameters with defaults and docs.

    Example:
        >>> import rlwrappers as rw
        >>> [p.name for p in rw.perturbations()][:3]
        ['action_noise', 'brightness_contrast', 'cw']
    """
    out = []
    for name in sorted(_REGISTRY):
        cls = _REGISTRY[name]
        summary, docs = _doc_lines(cls)
        for base in cls.__mro__[1:]:  # parameters a base declares (``keys``) are documented there
            docs = {**_doc_lines(base)[1], **docs}
        params = {}
        for f in dataclasses.fields(cls):  # type: ignore[arg-type]
            default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
            params[f.name] = (default, docs.get(f.name, ""))
        out.append(PerturbationInfo(name, cls.channel, summary, params, _WRAPPERS.get(name)))
    return out


def _perturbation_class(name: str) -> type[Perturbation]:
    cls = _REGISTRY.get(name)
    if cls is None:
        raise UnknownName(f"unknown perturbation `{name}`; known: {sorted(_REGISTRY)}.{did_you_mean(name, _REGISTRY)}")
    return cls


def _build(name: str, params: Mapping[str, Any]) -> Perturbation:
    cls = _perturbation_class(name)
    known = [f.name for f in dataclasses.fields(cls)]  # type: ignore[arg-type]
    for key in params:
        if key not in known:
            raise UnknownName(
                f"perturbation `{name}` has no parameter `{key}`; parameters: {known}.{did_you_mean(key, known)}"
            )
    return cls(**params)


@dataclasses.dataclass(frozen=True)
class Entry:
    """A perturbation, its schedule, its label (the key of its records and log columns) and its checks.

    ``allow_nonfinite`` lets the perturbation produce non-finite values; by default its layer raises
    :class:`~rlwrappers.error.PerturbationError` when it does.
    """

    perturbation: Perturbation
    when: Schedule = schedules.ALWAYS
    label: str | None = None
    allow_nonfinite: bool = False
    #: The parameters drawn from distributions; ``perturbation`` holds a value each can draw in their place.
    drawn: tuple[distributions.Parameter, ...] = ()
    #: When the drawn parameters are drawn again: one of :data:`~rlwrappers.distributions.RESAMPLE`.
    resample: str = "activation"

    def __post_init__(self) -> None:
        label = self.label
        if label is not None and (not isinstance(label, str) or not re.fullmatch(r"[\w.-]{1,64}", label)):
            shown = repr(label) if len(repr(label)) <= 80 else f"{repr(label)[:77]}..."
            raise InvalidArgument(f"`label` must be a word of at most 64 characters, like 'noise_1', received {shown}")
        if not isinstance(self.allow_nonfinite, bool):
            raise InvalidType(f"`allow_nonfinite` must be a bool, received {self.allow_nonfinite!r}")
        _check.choice("resample", self.resample, distributions.RESAMPLE)
        if self.resample != "activation" and not self.drawn:
            raise InvalidArgument(
                f"`resample` applies to parameters drawn from a distribution, and `{self.perturbation}` has none"
            )
        switching = self.when.switching
        if self.perturbation.acts_at_reset_only and switching.switches_on and not switching.on_at_reset:
            raise InvalidArgument(
                f"`{self.perturbation.name}` acts only at reset (time 0 of an episode), and `when` {self.when}"
                " switches on only after it, so it would never act; use a schedule active at time 0, such as"
                " 'always', 'starting(episode=10)' or 'prob(p=0.5, per=\"episode\")'"
            )
        if self.resample == "step" and self.perturbation.channel in ("state", "policy"):
            raise InvalidArgument(
                f"`resample='step'` applies to perturbations that act at every step, not to the"
                f" {self.perturbation.channel} perturbation `{self.perturbation.name}`; use 'activation' or 'episode'"
            )
        taken = set(self.perturbation.step_fields) | set(self.perturbation.reset_fields) | {"active"}
        for parameter in self.drawn:
            if parameter.column in taken:
                raise InvalidArgument(f"`{parameter.column}` is a field of `{self.perturbation.name}`'s records")

    @property
    def step_fields(self) -> dict[str, str]:
        """The fields beyond ``active`` that this entry's step records can hold: a log's steps table columns.

        Those its schedule can fill (:attr:`Schedule.switching <rlwrappers.schedule.Schedule.switching>`): the
        perturbation's own while it can be active, or for a change that holds while on (dynamics, policy), only
        if it can switch on after reset; each drawn parameter if it is drawn every step, or at each switch on
        and the schedule can switch on after reset. :meth:`bound_step_fields` adds those its binding adds.
        """
        return self.bound_step_fields(self.perturbation)

    def bound_step_fields(self, bound: Perturbation) -> dict[str, str]:
        """:attr:`step_fields` of this entry's perturbation ``bound`` to a space (an attack's per-entry sizes)."""
        switching = self.when.switching
        acts = switching.switches_on if self.perturbation.channel in HELD else switching.ever_on
        fields = bound.record_fields() if acts else {}
        if (self.resample == "step" and switching.ever_on) or (self.resample == "activation" and switching.switches_on):
            fields.update(self._drawn_fields)
        return fields

    @property
    def reset_fields(self) -> dict[str, str]:
        """The fields beyond ``active`` that this entry's reset records can hold: a log's episodes table columns.

        Those its schedule can fill: the perturbation's own if it can be active at reset, and each drawn parameter
        then too, or always if it is drawn at every reset (``resample='episode'``).
        """
        on = self.when.switching.on_at_reset
        fields = dict(self.perturbation.reset_fields) if on else {}
        if on or self.resample == "episode":
            fields.update(self._drawn_fields)
        return fields

    @functools.cached_property
    def _drawn_fields(self) -> dict[str, str]:
        return {p.column: "float64" for p in self.drawn}

    def with_drawn(self, values: Mapping[distributions.Path, Any]) -> dict[str, Any]:
        """The perturbation's parameters with drawn ``values`` (by path) in place."""
        return distributions.substitute(self._params, values)

    @functools.cached_property
    def _params(self) -> dict[str, Any]:
        return self.perturbation.params()

    @classmethod
    def parse(
        cls, spec: str | Mapping[str, Any] | Perturbation | Entry, when: Any = None, allow_nonfinite: bool = False
    ) -> Entry:
        """Builds an entry from a spec string, a dict, a :class:`Perturbation` or an entry.

        ``when`` and ``allow_nonfinite`` are the schedule and the setting for specs that do not set their own.
        """
        if isinstance(spec, Entry):
            return spec
        if isinstance(spec, Perturbation):
            return cls(spec.copy(), schedules.parse(when), allow_nonfinite=allow_nonfinite)
        if isinstance(spec, str):
            call = parse_spec(spec, what="perturbation spec")
            if call.args:
                raise InvalidArgument(
                    f"perturbation spec {spec!r} must name its parameters: `{call.name}(key=value, ...)`"
                )
            params = dict(call.kwargs)
        elif isinstance(spec, Mapping):
            params = dict(spec)
            name = params.pop("name", None)
            if not isinstance(name, str):
                raise InvalidArgument(f"a perturbation dict needs a string `name`, received {spec!r}")
            call = Call(name)
        else:
            raise InvalidType(f"a perturbation spec must be a string, a dict or a Perturbation, received {spec!r}")
        own_when = params.pop("when", None)
        label = params.pop("label", None)
        allow = params.pop("allow_nonfinite", allow_nonfinite)
        resample = params.pop("resample", "activation")
        if isinstance(own_when, Schedule):
            own_when = str(own_when)
        schedule = schedules.from_call(own_when) if isinstance(own_when, Call) else None
        if schedule is None:
            schedule = schedules.parse(own_when if own_when is not None else when)
        return cls.build(call.name, params, schedule, label, allow, resample)

    @classmethod
    def build(
        cls,
        name: str,
        params: Mapping[str, Any],
        when: Schedule = schedules.ALWAYS,
        label: str | None = None,
        allow_nonfinite: bool = False,
        resample: str = "activation",
    ) -> Entry:
        """An entry of the perturbation ``name`` with ``params``, any of which may hold distributions."""
        constants, drawn = distributions.split(params)
        for parameter in drawn:  # every value a distribution can draw must be one the perturbation takes
            for value in parameter.distribution.extremes():
                try:
                    _build(name, distributions.substitute(constants, {parameter.path: value}))
                except (InvalidArgument, InvalidType) as error:
                    raise type(error)(_refused_draw(name, parameter, value, error)) from None
        return cls(_build(name, constants), when, label, allow_nonfinite, drawn, resample)

    def params(self) -> dict[str, Any]:
        """The perturbation's parameters, JSON-ready, each distribution in place as its dict."""
        return self.with_drawn({p.path: p.distribution.to_dict() for p in self.drawn})

    def to_dict(self) -> dict[str, Any]:
        """The entry as a JSON-ready dict that :meth:`parse` reads back."""
        out: dict[str, Any] = {"name": self.perturbation.name, **self.params()}
        out["when"] = str(self.when)
        if self.label is not None:
            out["label"] = self.label
        if self.allow_nonfinite:
            out["allow_nonfinite"] = True
        if self.resample != "activation":
            out["resample"] = self.resample
        return out

    def __str__(self) -> str:
        kwargs: dict[str, Any] = self.perturbation.changed_params()
        if self.drawn:
            full = self.with_drawn({p.path: p.distribution for p in self.drawn})
            kwargs.update({str(key): full[str(key)] for key in dict.fromkeys(p.path[0] for p in self.drawn)})
        if self.when != schedules.ALWAYS:
            kwargs["when"] = self.when
        if self.label is not None:
            kwargs["label"] = self.label
        if self.allow_nonfinite:
            kwargs["allow_nonfinite"] = True
        if self.resample != "activation":
            kwargs["resample"] = self.resample
        return format_call(self.perturbation.name, kwargs)


def _refused_draw(name: str, parameter: distributions.Parameter, value: Any, error: Exception) -> str:
    return f"`{parameter.column}` = {parameter.distribution} can draw {value!r}, which `{name}` refuses: {error}"


def wrapper_chain(env: gym.Env[Any, Any]) -> Iterator[gym.Wrapper[Any, Any, Any, Any]]:
    """The wrappers of ``env``, outermost first, down to (not including) the base env."""
    while isinstance(env, gym.Wrapper):
        yield env
        env = env.env


def layers(env: gym.Env[Any, Any]) -> Iterator[PerturbationLayer]:
    """The perturbation layers in a wrapper stack, outermost first."""
    return (layer for layer in wrapper_chain(env) if isinstance(layer, PerturbationLayer))


def attach(env: gym.Env[Any, Any], agent: Any) -> int:
    """Gives every perturbation in ``env``'s stack that needs an agent the agent; returns how many there are.

    Parameter noise perturbs the agent's weights; gradient attacks differentiate its network.

    The evaluation runner calls it; call it yourself when you drive the loop, before the first ``reset``.
    """
    count = 0
    for layer in layers(env):
        for p in layer.perturbations:
            if p.needs_agent:
                p.attach(agent)
                count += 1
    return count


def _check_env(env: Any) -> None:
    """Raises :class:`InvalidType` unless ``env`` is a Gymnasium env (an ID is a common slip)."""
    if not isinstance(env, gym.Env):
        hint = f"; make it first: gym.make({env!r})" if isinstance(env, str) else ""
        raise InvalidType(f"`env` must be a gymnasium.Env, received {env!r} ({type(env).__name__}){hint}")


def _unique_labels(entries: Sequence[Entry], taken: set[str]) -> list[str]:
    """Each entry's label: its own, which must be free, or its perturbation's name, numbered where taken."""
    labels = []
    for entry in entries:
        if entry.label is not None and entry.label in taken:
            raise InvalidArgument(
                f"`label` {entry.label!r} of `{entry.perturbation.name}` is taken by another perturbation of this"
                f" stack (taken: {sorted(taken)}); labels name the records and log columns, so each must be unique"
            )
        base = entry.label or entry.perturbation.name
        label, n = base, 2
        while label in taken:
            label, n = f"{base}-{n}", n + 1
        taken.add(label)
        labels.append(label)
    return labels


class PerturbationLayer(gym.Wrapper[Any, Any, Any, Any]):
    """A wrapper layer that applies several perturbations, each on its own schedule.

    ``layer = PerturbationLayer(env, [a, b])`` behaves like wrapping with ``a`` and then ``b``: ``a`` sees the
    agent's action last and the env's observation first. Use :func:`wrap` or :class:`Perturb` to build one
    from specs; the named wrappers hold one perturbation each.

    The layer raises :class:`~rlwrappers.error.PerturbationError` the first time a perturbation produces a
    non-finite value from finite ones: an observation perturbation its float observation, a reward
    perturbation its reward, or, while a state or dynamics perturbation is active, the env its float
    observation or its reward. Entries with ``allow_nonfinite`` are not checked (nor is the env while one of
    them is active). Integer observations (images) are never checked, and an inactive layer checks nothing.
    """

    def __init__(self, env: gym.Env[Any, Any], entries: Sequence[Entry]):
        _check_env(env)
        gym.Wrapper.__init__(self, env)
        taken = {label for layer in layers(env) for label in layer.labels}
        self.entries: tuple[Entry, ...] = tuple(entries)
        self.labels: tuple[str, ...] = tuple(_unique_labels(self.entries, taken))
        self.perturbations: tuple[Perturbation, ...] = tuple(e.perturbation.copy() for e in self.entries)

        observation_space, action_space = env.observation_space, env.action_space
        spaces = []  # the observation space after each perturbation
        self._bound_at: list[tuple[gym.Space[Any], gym.Space[Any]]] = []  # the spaces each one was bound with
        for i, p in enumerate(self.perturbations):
            self._bound_at.append((observation_space, action_space))
            if self.entries[i].drawn:
                self._check_drawn(i)
            p.bind(env, observation_space, action_space)
            observation_space = p.observation_space(observation_space)
            spaces.append(observation_space)
        self.observation_space = observation_space

        by_channel: dict[str, list[int]] = {c: [] for c in CHANNELS}
        for i, p in enumerate(self.perturbations):
            by_channel[p.channel].append(i)
        self._observation = by_channel["observation"]
        self._action = by_channel["action"][::-1]  # the outermost perturbation sees the agent's action first
        self._reward = by_channel["reward"]
        self._state = by_channel["state"]
        self._held = [i for channel in HELD for i in by_channel[channel]]  # changes that hold while switched on
        # The perturbations that act when their schedule switches (dynamics changes, sticky repetitions).
        self._switched = tuple(
            i
            for i, p in enumerate(self.perturbations)
            if type(p).activate is not Perturbation.activate or type(p).deactivate is not Perturbation.deactivate
        )

        self._clock = seeding.EpisodeClock()
        self._on: list[bool] = [False] * len(self.entries)
        self._any = False
        self._varying: list[tuple[int, Plan]] = []
        self._next_change = float("inf")
        self._effect_rngs: list[np.random.Generator | None] = [None] * len(self.entries)
        self._previous_action: Any = None
        self._keeps_previous = any(p.uses_previous_action for p in self.perturbations)
        self._deciding = frozenset(i for i, p in enumerate(self.perturbations) if p.records_decision)
        self._pending: dict[int, Record] = {}  # records of observations the agent has yet to act on

        # What is checked for non-finite values: each perturbation's own output, and the env's while a state or
        # dynamics perturbation changes it (``_watching``, set when schedules switch).
        outputs = zip(self.entries, self.perturbations, spaces, strict=True)
        self._checks = tuple(_output_check(entry, p, space) for entry, p, space in outputs)
        self._sources = tuple(by_channel["state"] + by_channel["dynamics"])
        self._env_check = _check_for(env.observation_space)
        self._watching = False

        # Parameters drawn from distributions: who draws, who draws every step, and the draws to report.
        self._drawn = tuple(i for i, e in enumerate(self.entries) if e.drawn)
        self._stepwise = tuple(i for i in self._drawn if self.entries[i].resample == "step")
        self._columns = {i: [p.column for p in self.entries[i].drawn] for i in self._drawn}
        self._parameter_keys = {i: [seeding.label_key(c) for c in self._columns[i]] for i in self._drawn}
        self._parameter_rngs: dict[int, list[np.random.Generator | None]] = {}
        self._fresh: dict[int, Record] = {}

    # -- introspection ----------------------------------------------------------------------------------
    @property
    def specs(self) -> list[str]:
        """The layer's perturbations as spec strings."""
        return [str(e) for e in self.entries]

    @property
    def episode(self) -> int:
        """Index of the current episode over the layer's life (-1 before the first reset)."""
        return self._clock.episode

    @property
    def entropy(self) -> int | None:
        """The seed (or drawn entropy) the layer's generators derive from."""
        return self._clock.entropy

    def active(self) -> dict[str, bool]:
        """Which perturbations are active at the current time."""
        return dict(zip(self.labels, self._on, strict=True))

    def __str__(self) -> str:
        return f"<{type(self).__name__}[{', '.join(self.specs)}]{self.env}>"

    # -- randomness -------------------------------------------------------------------------------------
    def _rng(self, i: int) -> np.random.Generator:
        rng = self._effect_rngs[i]
        if rng is None:
            rng = self._clock.generator(self.labels[i], seeding.EFFECT)
            self._effect_rngs[i] = rng
        return rng

    # -- drawn parameters -------------------------------------------------------------------------------
    def _check_drawn(self, i: int) -> None:
        """Binds the perturbation with every extreme of its distributions, so the env refuses them now, not later."""
        entry, p = self.entries[i], self.perturbations[i]
        before = self._bound_at[i][0]
        space = None
        for parameter in entry.drawn:
            for value in parameter.distribution.extremes():
                try:
                    extreme = type(p)(**entry.with_drawn({parameter.path: value}))
                    extreme.bind(self.env, *self._bound_at[i])
                except (InvalidArgument, InvalidType) as error:
                    raise type(error)(_refused_draw(p.name, parameter, value, error)) from None
                space = space or extreme.observation_space(before)
                if extreme.observation_space(before) != space:
                    raise InvalidArgument(
                        f"`{parameter.column}` = {parameter.distribution} changes the observation space of"
                        f" `{p.name}` as it draws ({value!r}); draw only parameters that keep it"
                    )

    def _redraw(self, i: int) -> None:
        """Draws the entry's parameters anew and sets them on its perturbation, reporting them with this call."""
        entry = self.entries[i]
        rngs = self._parameter_rngs[i]
        values: dict[distributions.Path, Any] = {}
        for n, parameter in enumerate(entry.drawn):  # each parameter from its own stream, apart from the effect's
            rng = rngs[n] or self._parameter_rng(i, n)
            values[parameter.path] = parameter.distribution.draw(rng, self._clock.total_step + self._clock.t)
        observation_space, action_space = self._bound_at[i]
        self.perturbations[i].set_params(entry.with_drawn(values), self.env, observation_space, action_space)
        self._fresh[i] = dict(zip(self._columns[i], values.values(), strict=True))

    def _parameter_rng(self, i: int, n: int) -> np.random.Generator:
        """The episode's generator of parameter ``n`` of entry ``i``."""
        rng = self._clock.generator(self.labels[i], seeding.PARAMETER, self._parameter_keys[i][n])
        self._parameter_rngs[i][n] = rng
        return rng

    def _redraw_stepwise(self, records: dict[str, Record]) -> None:
        """Draws the parameters that are drawn every step for the new time (those switched on now have theirs)."""
        on = self._on
        for i in self._stepwise:
            if on[i] and i not in self._fresh:
                held = i in self._held
                if held:
                    self.perturbations[i].deactivate(self.env)
                self._redraw(i)
                if held:
                    record = self.perturbations[i].activate(self.env, self._rng(i))
                    if record:
                        records[self.labels[i]] = {"active": True, **record}

    def _report_drawn(self, records: dict[str, Record]) -> None:
        """Adds the values drawn during this call to the records of their perturbations."""
        for i, values in self._fresh.items():
            record = records.get(self.labels[i])  # each call builds its own records: update them in place
            if record is None:
                records[self.labels[i]] = {"active": self._on[i], **values}
            else:
                record.update(values)
        self._fresh = {}

    # -- the loop ---------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        """Resets the env, draws this episode's schedules and applies what is active at time 0."""
        self._clock.reset(seed)
        for i in self._switched:
            if self._on[i]:
                self.perturbations[i].deactivate(self.env)

        obs, info = self.env.reset(seed=seed, options=options)

        self._effect_rngs = [None] * len(self.entries)
        plans = [self._plan(i, entry.when) for i, entry in enumerate(self.entries)]
        self._varying = [(i, plan) for i, plan in enumerate(plans) if plan.constant is None]
        self._next_change = min((plan.next_change(0) for _, plan in self._varying), default=float("inf"))
        on = self._on = [plan.active(0) for plan in plans]
        self._any = any(on)
        if self._sources:
            self._watch()
        self._previous_action = None
        self._pending = {}
        self._parameter_rngs = {i: [None] * len(self._columns[i]) for i in self._drawn}
        for i in self._drawn:
            if on[i] or self.entries[i].resample == "episode":
                self._redraw(i)
        for p in self.perturbations:
            p.start_episode()

        records: dict[str, Record] = {}
        for i in self._switched:
            if on[i]:
                record = self.perturbations[i].activate(self.env, self._rng(i))
                if record is not None:
                    records[self.labels[i]] = {"active": True, **record}
        changed = []  # only state perturbations change the first observation
        for i in self._state:
            if on[i]:
                obs, record = self.perturbations[i].reset(self.env, obs, self._rng(i))
                records[self.labels[i]] = {"active": True, **record}
                changed.append(i)
        if changed and self._watching and self._env_check is not None and not self._env_check(obs):
            self._refuse(changed, "observation", obs, 0)
        obs = self._perturb_observation(obs, records)
        if self._fresh:
            self._report_drawn(records)
        if records:
            _report(info, records)
        return obs, info

    def _plan(self, i: int, when: Schedule) -> Plan:
        clock = self._clock
        rng = clock.generator(self.labels[i], seeding.SCHEDULE) if when.random else None
        return when.plan(clock.episode, clock.total_step, rng)

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        """Steps the env, perturbing the action, reward and next observation where their schedules say."""
        if self._any or self._pending:
            return self._perturbed_step(action)
        # Nothing is active: forward the step, and only look at the schedules when one may switch on.
        if self._keeps_previous:
            self._previous_action = _kept(action)
        result = self.env.step(action)
        t = self._clock.tick()
        if t >= self._next_change:
            records = self._decide(t)
            if self._any:
                obs, reward, terminated, truncated, info = result
                obs = self._perturb_observation(obs, records)
                if self._fresh:
                    self._report_drawn(records)
                if records:
                    _report(info, records)
                return obs, reward, terminated, truncated, info
        return result

    def _perturbed_step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        on = self._on
        records: dict[str, Record] = {}
        if self._pending:
            for i, record in self._pending.items():
                records[self.labels[i]] = self.perturbations[i].decided(action, record)
            self._pending = {}
        for i in self._action:
            if on[i]:
                action, record = self.perturbations[i].action(action, self._previous_action, self._rng(i))
                records[self.labels[i]] = {"active": True, **record}
        for i in self._held:
            if on[i]:
                records[self.labels[i]] = {"active": True}
        if self._keeps_previous:
            self._previous_action = _kept(action)

        obs, reward, terminated, truncated, info = self.env.step(action)
        if self._watching:
            check = self._env_check
            if (check is not None and not check(obs)) or not math.isfinite(reward):
                self._refuse_env(obs, reward)

        for i in self._reward:
            if on[i]:
                perturbed, record = self.perturbations[i].reward(float(reward), self._rng(i))
                check = self._checks[i]
                if check is not None and not check(perturbed) and math.isfinite(reward):
                    self._refuse([i], "reward", perturbed, self._clock.t)
                reward = perturbed
                records[self.labels[i]] = {"active": True, **record}
        self._advance(records)
        obs = self._perturb_observation(obs, records)
        if self._fresh:
            self._report_drawn(records)
        if records:
            _report(info, records)
        return obs, reward, terminated, truncated, info

    def _advance(self, records: dict[str, Record]) -> None:
        """Moves time on by a step: switches what the schedules say, and draws what is drawn every step."""
        t = self._clock.tick()
        if t >= self._next_change:
            records.update(self._decide(t))
        if self._stepwise:
            self._redraw_stepwise(records)

    def _perturb_observation(self, obs: Any, records: dict[str, Record]) -> Any:
        """Applies the observation perturbations active at the current time, adding their records."""
        if self._any:
            on = self._on
            for i in self._observation:
                if on[i]:
                    perturbed, record = self.perturbations[i].observation(obs, self._rng(i))
                    check = self._checks[i]
                    if check is not None and not check(perturbed) and _finite(obs):
                        self._refuse([i], "observation", perturbed, self._clock.t)
                    obs = perturbed
                    if i in self._deciding:
                        self._pending[i] = {"active": True, **record}
                    else:
                        records[self.labels[i]] = {"active": True, **record}
        return obs

    def _decide(self, t: int) -> dict[str, Record]:
        """Asks the varying schedules for time ``t``; switches held changes on and off as they say.

        Returns the records of the changes switched on (parameter noise reports its size).
        """
        on = self._on
        records: dict[str, Record] = {}
        for i, plan in self._varying:
            now = plan.active(t)
            if now and not on[i] and self.entries[i].drawn and self.entries[i].resample != "episode":
                self._redraw(i)
            if now != on[i] and i in self._switched:
                if now:
                    record = self.perturbations[i].activate(self.env, self._rng(i))
                    if record:
                        records[self.labels[i]] = {"active": True, **record}
                else:
                    self.perturbations[i].deactivate(self.env)
            on[i] = now
        self._any = any(on)
        if self._sources:
            self._watch()
        self._next_change = min(plan.next_change(t) for _, plan in self._varying)
        return records

    # -- non-finite values ------------------------------------------------------------------------------
    def _watch(self) -> None:
        """Checks the env's output while a state or dynamics perturbation is active, unless one allows nan."""
        active = self._active_sources()
        self._watching = bool(active) and not any(self.entries[i].allow_nonfinite for i in active)

    def _active_sources(self) -> list[int]:
        return [i for i in self._sources if self._on[i]]

    def _refuse_env(self, obs: Any, reward: Any) -> None:
        """Raises for the non-finite value the env gave while state and dynamics perturbations changed it."""
        if self._env_check is not None and not self._env_check(obs):
            self._refuse(self._active_sources(), "observation", obs, self._clock.t + 1)
        if not math.isfinite(reward):
            self._refuse(self._active_sources(), "reward", reward, self._clock.t)

    def _refuse(self, culprits: Sequence[int], what: str, value: Any, t: int) -> None:
        """Raises :class:`PerturbationError` naming the perturbations ``culprits`` and the time."""
        who = " and ".join(f"`{self.labels[i]}` ({self.entries[i]})" for i in culprits)
        did = "made the env produce" if culprits[0] in self._sources else "produced"
        detail = _nonfinite_detail(value)
        raise PerturbationError(
            f"{who} {did} a non-finite {what} at time {t} of episode {self._clock.episode} ({detail}); "
            "to let non-finite values through, give it allow_nonfinite=True"
        )

    def close(self) -> None:
        """Undoes active dynamics changes, then closes the env."""
        for i in self._switched:
            if self._on[i]:
                self.perturbations[i].deactivate(self.env)
                self._on[i] = False
        super().close()


#: Vectors up to this length are checked through the sum of their values, which is cheaper than a ufunc.
_SHORT: Final = 64


def _output_check(entry: Entry, p: Perturbation, space: gym.Space[Any]) -> Callable[[Any], bool] | None:
    """How the output of an observation or reward perturbation is checked; None where it is not.

    ``space`` is the observation space after the perturbation.
    """
    if entry.allow_nonfinite or p.keeps_finite():
        return None
    if p.channel == "observation":
        return _check_for(space)
    return math.isfinite if p.channel == "reward" else None


def _check_for(space: gym.Space[Any]) -> Callable[[Any], bool] | None:
    """How the observations of ``space`` are checked for non-finite values; None where they cannot hold any.

    Only float Boxes can, alone or as entries of a Dict or Tuple: integer observations (images) are never checked.
    """
    if structure.is_structured(space):
        floats = [structure.path(space, key) for key, entry in structure.entries(space).items() if _check_for(entry)]
        if not floats:
            return None
        size = sum(int(np.prod(structure.get(space, steps).shape)) for steps in floats)
        return functools.partial(
            _finite_entries, structure.Access(floats), _finite_vector if size <= _SHORT else _finite
        )
    if not (isinstance(space, gym.spaces.Box) and space.dtype.kind == "f"):
        return None
    return _finite_vector if len(space.shape) == 1 and space.shape[0] <= _SHORT else _finite


def _finite_entries(access: structure.Access, check: Callable[[Any], bool], obs: Any) -> bool:
    """Whether the float entries of a structured observation that ``access`` reads are finite, checked as one."""
    return check(np.concatenate(access.gather(obs), axis=None))


def _finite(x: Any) -> bool:
    """Whether every value of a float array, or of every numeric entry of a structured observation, is finite."""
    if type(x) is np.ndarray:
        return bool(np.isfinite(x).all())
    return all(bool(np.isfinite(a).all()) for a in map(np.asarray, structure.leaves(x)) if a.dtype.kind in "iufcb")


def _finite_vector(x: Any) -> bool:
    """:func:`_finite` for short vectors, through the sum of their values in Python.

    A quarter of the cost of ``np.isfinite(x).all()`` on CartPole's observation. A finite sum means finite
    values; a non-finite one, which an overflowing sum of finite values can also give, or anything that is not
    a vector, is checked value by value.
    """
    try:
        if math.isfinite(sum(x.tolist())):
            return True
    except (AttributeError, TypeError):
        pass
    return _finite(x)


def _nonfinite_detail(value: Any) -> str:
    """Where a non-finite value lies: how many values of an array, or of which entry of a structured observation."""
    if isinstance(value, np.ndarray):
        bad = int(value.size - np.count_nonzero(np.isfinite(value)))
        shown = np.array2string(value, threshold=8, edgeitems=2, precision=4)
        return f"{bad} of {value.size} values are nan or inf: {shown}"
    if isinstance(value, (Mapping, tuple)):
        for key, entry in zip(structure.keys_of(value), structure.leaves(value), strict=True):
            if isinstance(entry, np.ndarray) and not _finite(entry):
                return f"in the entry {key!r}, {_nonfinite_detail(entry)}"
    return repr(value)


def _kept(action: Any) -> Any:
    """A copy of an array action, so that a caller reusing its action buffer cannot change what was executed."""
    return action.copy() if isinstance(action, np.ndarray) else action


def _report(info: dict[str, Any], records: dict[str, Record]) -> None:
    existing = info.get(INFO_KEY)
    if existing is None:
        info[INFO_KEY] = records
    else:
        existing.update(records)


class Perturb(PerturbationLayer, RecordConstructorArgs):
    """Applies several perturbations in one wrapper layer; what :func:`wrap` returns.

    Args:
        env: the env to perturb.
        perturbations: spec strings (``"obs_noise(std=0.1)"``), dicts (``{"name": "obs_noise", "std": 0.1}``)
            or :class:`Perturbation` objects; a spec may set its own ``when``, ``label`` and
            ``allow_nonfinite``.
        when: the schedule of the perturbations that do not set their own (default: always).
        allow_nonfinite: let the perturbations that do not set their own produce non-finite observations and
            rewards, instead of raising :class:`~rlwrappers.error.PerturbationError` (default: False).

    Example:
        >>> import gymnasium as gym
        >>> env = Perturb(gym.make("CartPole-v1"), ["obs_noise(std=0.05)", "reward_noise(std=0.1)"])
        >>> env.specs
        ['obs_noise(std=0.05)', 'reward_noise']
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        perturbations: Sequence[str | Mapping[str, Any] | Perturbation | Entry],
        when: str | Schedule | Mapping[str, Any] | None = None,
        allow_nonfinite: bool = False,
    ):
        _check_env(env)
        if isinstance(perturbations, (str, Mapping, Perturbation)):
            perturbations = [perturbations]
        entries = [Entry.parse(p, when, allow_nonfinite) for p in perturbations]
        if not entries:
            raise InvalidArgument("`perturbations` must name at least one perturbation, received none")
        RecordConstructorArgs.__init__(self, perturbations=[e.to_dict() for e in entries])
        PerturbationLayer.__init__(self, env, entries)


class SingleLayer(PerturbationLayer, RecordConstructorArgs):
    """Base of the named wrappers, which hold exactly one perturbation.

    A subclass's ``__init__`` takes the perturbation's parameters plus ``when`` and ``label``, and passes its
    perturbation class and parameters to :meth:`_setup`. That builds the perturbation (which validates them;
    numeric parameters may be distributions, drawn anew at each activation) and records the arguments so that
    ``env.spec`` rebuilds the wrapper. Wrappers of perturbations that need an agent also take ``agent``, which
    :meth:`_setup` attaches (it is not recorded: ``env.spec`` rebuilds the wrapper without it). Wrappers of
    perturbations whose output the layer checks for non-finite values (observations, rewards, states and
    dynamics) also take ``allow_nonfinite``; the others pass None and do not record it.
    """

    def _setup(
        self,
        env: gym.Env[Any, Any],
        kind: type[Perturbation],
        params: Mapping[str, Any],
        when: str | Schedule | Mapping[str, Any] | None,
        label: str | None,
        agent: Any = None,
        allow_nonfinite: bool | None = None,
    ) -> None:
        allow = False if allow_nonfinite is None else allow_nonfinite
        entry = Entry.build(kind.name, params, schedules.parse(when), label, allow)
        options: dict[str, Any] = {"when": str(entry.when), "label": label}
        if allow_nonfinite is not None:
            options["allow_nonfinite"] = allow_nonfinite
        RecordConstructorArgs.__init__(self, **entry.params(), **options)
        PerturbationLayer.__init__(self, env, [entry])
        if agent is not None:
            self.perturbations[0].attach(agent)


def wrap(
    env: gym.Env[Any, Any],
    *specs: str | Mapping[str, Any] | Perturbation,
    when: str | Schedule | Mapping[str, Any] | None = None,
    allow_nonfinite: bool = False,
) -> Perturb:
    """Wraps ``env`` with every perturbation in ``specs``, in one layer.

    ``wrap(env, a, b)`` behaves like wrapping with ``a`` and then ``b``.

    Args:
        env: any Gymnasium env.
        *specs: spec strings, dicts or :class:`Perturbation` objects.
        when: schedule for the specs that do not set their own ``when`` (default: always).
        allow_nonfinite: let the specs that do not set their own ``allow_nonfinite`` produce non-finite
            observations and rewards instead of raising :class:`~rlwrappers.error.PerturbationError`.

    Example:
        >>> import gymnasium as gym, rlwrappers as rw
        >>> env = rw.wrap(gym.make("CartPole-v1"), "obs_noise(std=0.1)", "action_noise(p=0.05)",
        ...               when="starting(episode=1)")
        >>> obs, info = env.reset(seed=0)
        >>> "rlwrappers" in info  # episode 0: nothing is active yet
        False
    """
    return Perturb(env, list(specs), when, allow_nonfinite)


def register_wrapper(name: str) -> Callable[[type], type]:
    """Class decorator that names the wrapper class holding perturbation ``name`` (for listings)."""

    def decorate(cls: type) -> type:
        _WRAPPERS[name] = cls.__name__
        return cls

    return decorate
