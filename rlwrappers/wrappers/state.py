"""State perturbations: noisy initial states, shifted dynamics and interventions on the env's state.

:class:`InitialStateNoise` and :class:`DynamicsShift` read and set a simulator's state vector and physical
parameters (:mod:`rlwrappers.state.simulators`); :class:`Intervene` writes assignments into the env's state
document (:mod:`rlwrappers.state.documents`), in the path language of :mod:`rlwrappers.state.interventions`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray
from typing_extensions import override

from rlwrappers import _check
from rlwrappers.core import Perturbation, PerturbationLayer, Record, SingleLayer, layers, register_wrapper
from rlwrappers.envs.toybox import interventions as catalogues
from rlwrappers.error import InvalidArgument, InvalidType
from rlwrappers.functional import noise
from rlwrappers.schedule import Schedule
from rlwrappers.state import documents, simulators
from rlwrappers.state.interventions import GAMES, Intervention, Schema, apply, as_intervention, is_name
from rlwrappers.wrappers.observation import check_scale_shape

__all__ = [
    "DynamicsShift",
    "DynamicsShiftPerturbation",
    "InitialStateNoise",
    "InitialStateNoisePerturbation",
    "Intervene",
    "InterventionPerturbation",
    "check_observations_from_state",
    "resolve",
]


def check_observations_from_state(env: gym.Env[Any, Any], who: str, why: str, wrapper: str) -> None:
    """Raises if a wrapper between ``env`` and the base env changes observations.

    A perturbation that returns the observation of a state it changed (``init_noise``, ``intervene``) computes
    it from the base env; a wrapper below it that changes observations (noise, frame stacking, normalization)
    would be silently bypassed. ``who`` and ``why`` say which perturbation asks and why, ``wrapper`` what to
    wrap first.
    """
    current: Any = env
    while isinstance(current, gym.Wrapper):
        inner = current.env
        changes = (
            isinstance(current, gym.ObservationWrapper)
            or (
                isinstance(current, PerturbationLayer)
                and any(p.channel == "observation" for p in current.perturbations)
            )
            or current.observation_space != inner.observation_space
        )
        if changes:
            raise InvalidArgument(
                f"{who} {why}, so it must sit below every wrapper that changes observations; received an env with "
                f"{type(current).__name__} below it: wrap the base env with {wrapper} first"
            )
        current = inner


@dataclass(kw_only=True)
class InitialStateNoisePerturbation(Perturbation):
    """Adds noise to the env's state right after reset (random initialisation, s0 + eps; Flageat et al. 2023).

    Works on classic-control envs (their ``state``) and MuJoCo envs (``qpos`` then ``qvel``, set through
    ``set_state``); states are kept inside the env's own limits. It acts when the schedule is active at time 0
    of an episode. The log's episode row records the noise added (``delta``).

    Args:
        std: the noise's standard deviation: a number, or one per state dimension, at most the largest value
            of the observations' float dtype over 32 (about 1.1e37 for float32, 5.6e306 for float64), so the
            noise cannot overflow to inf.
        dist: "gaussian", or "uniform" (on [-a, a] with a = std * sqrt(3)).
    """

    name = "init_noise"
    channel = "state"
    observes_state = True
    acts_at_reset_only = True
    reset_fields = {"delta": "float64[]"}

    std: float | tuple[float, ...] = 0.1
    dist: str = "gaussian"

    def __post_init__(self) -> None:
        self.std = _check.scale("std", self.std)
        _check.noise_scale("std", self.std, np.float64, "states")
        self.dist = _check.choice("dist", self.dist, noise.DISTRIBUTIONS)

    @override
    def bind(self, env: gym.Env[Any, Any], observation_space: gym.Space[Any], action_space: gym.Space[Any]) -> None:
        self._sim = simulators.simulator(env, purpose="init_noise")
        check_scale_shape("std", self.std, (self._sim.state_size(),))
        check_observations_from_state(
            env, "init_noise", "recomputes the observation from the env's state", "init_noise"
        )
        observed = env.observation_space  # the state comes back through observations of this dtype
        if isinstance(observed, gym.spaces.Box):
            _check.noise_scale("std", self.std, observed.dtype, "observations of the state")
        self._std = np.asarray(self.std, dtype=np.float64)

    @override
    def reset(self, env: gym.Env[Any, Any], obs: Any, rng: np.random.Generator) -> tuple[Any, Record]:
        state = self._sim.get_state()
        delta = noise.noise(state.shape, self._std, self.dist, rng)
        self._sim.set_state(state + delta)
        applied = self._sim.get_state() - state
        return self._sim.observe(), {"delta": applied.tolist()}


@register_wrapper("init_noise")
class InitialStateNoise(SingleLayer):
    """Adds noise to the initial state of each episode; see :class:`InitialStateNoisePerturbation`.

    No vector version: wrap each sub-env.

    Example:
        >>> import gymnasium as gym, rlwrappers as rw
        >>> env = rw.InitialStateNoise(gym.make("Pendulum-v1"), std=0.5)
        >>> obs, info = env.reset(seed=0)
        >>> len(info["rlwrappers"]["init_noise"]["delta"])
        2
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        std: float | tuple[float, ...] = 0.1,
        dist: str = "gaussian",
        *,
        when: str | Schedule | None = None,
        label: str | None = None,
        allow_nonfinite: bool = False,
    ):
        """Wraps ``env``; ``when`` is the schedule (default: always), ``label`` names the log columns.

        ``allow_nonfinite`` lets non-finite observations through instead of raising
        :class:`~rlwrappers.error.PerturbationError`.
        """
        params = dict(std=std, dist=dist)
        self._setup(env, InitialStateNoisePerturbation, params, when, label, allow_nonfinite=allow_nonfinite)


#: A parameter key: a name, or a name indexed by ints and ``:`` (``geom_friction[0, 0]``, ``geom_friction[:, 0]``).
_KEY: Final = re.compile(r"([A-Za-z_][\w.]*)(?:\[\s*((?:\d+|:)(?:\s*,\s*(?:\d+|:))*)\s*\])?")

Index = tuple[int | slice, ...]


#: What the parameters that must stay > 0 are (:data:`~rlwrappers.state.simulators.POSITIVE_PARAMETERS`).
_POSITIVE: Final = "a mass, a length, a moment of inertia or a time step"


def _element(arg: str, key: str) -> tuple[str, Index | None]:
    """A parameter key's name, and its index (None for the whole parameter)."""
    found = _KEY.fullmatch(key)
    if found is None:
        raise InvalidArgument(
            f"`{arg}` keys must be a parameter name, or one indexed by ints and `:` such as 'geom_friction[0, 0]',"
            f" received {key!r}"
        )
    if found[2] is None:
        return found[1], None
    return found[1], tuple(slice(None) if part.strip() == ":" else int(part) for part in found[2].split(","))


def _parameter_map(name: str, value: Any) -> dict[str, float | list[Any]]:
    if not isinstance(value, Mapping):
        raise InvalidType(f"`{name}` must be a dict of parameter names to values, received {value!r}")
    out: dict[str, float | list[Any]] = {}
    for key, v in value.items():
        if not isinstance(key, str):
            raise InvalidType(f"`{name}` keys must be parameter names, received {key!r}")
        array = np.asarray(v.tolist() if isinstance(v, np.ndarray) else v, dtype=object)
        for i, x in enumerate(array.reshape(-1)):
            _check.number(f"{name}[{key!r}][{i}]" if array.ndim else f"{name}[{key!r}]", x)
        out[key] = float(v) if array.ndim == 0 else np.asarray(array, dtype=np.float64).tolist()
    return out


@dataclass(kw_only=True)
class DynamicsShiftPerturbation(Perturbation):
    """Changes the env's physical parameters, at reset or mid-episode (a dynamics shift).

    ``values`` sets parameters, ``scales`` multiplies them (after ``values``). Classic-control parameters are
    the env's constants (:data:`rlwrappers.state.simulators.CLASSIC_PARAMETERS`); MuJoCo parameters are the numeric
    arrays of the model (``body_mass``, ``geom_friction``, ``actuator_gear``, ``opt.gravity``, ...), set as a
    whole by a number or element-wise by a nested list, or in part through an indexed key:
    ``body_mass[1]`` (one body), ``geom_friction[0, 0]`` (one element), ``geom_friction[:, 0]`` (a column).
    The base values (the env's, when the first dynamics shift bound to it) come back, bit for bit, when the
    schedule switches off, at every reset and on close.
    Several shifts active at once on one parameter compose in the order they switched on: a later ``values``
    replaces the value so far, and every ``scales`` multiplies it
    (:class:`~rlwrappers.state.simulators.ParameterLedger`).

    When it is bound to an env, each parameter it changes is computed from the env's base value: the result
    must be finite, and > 0 for the masses, lengths, moments of inertia and time steps listed in
    :data:`~rlwrappers.state.simulators.POSITIVE_PARAMETERS`. A finite shift that blows the simulation up is
    caught while the env runs (:class:`~rlwrappers.error.PerturbationError`).

    Args:
        values: parameter name to new value, e.g. {"gravity": 12.0} or {"opt.gravity": [0, 0, -12]}.
        scales: parameter name to factor, e.g. {"length": 1.5} or {"body_mass": 1.2}.
    """

    name = "dynamics_shift"
    channel = "dynamics"

    values: dict[str, Any] = field(default_factory=dict)
    scales: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.values = _parameter_map("values", self.values)
        self.scales = _parameter_map("scales", self.scales)
        for key, factor in self.scales.items():
            if np.any(np.asarray(factor) < 0):
                raise InvalidArgument(f"`scales[{key!r}]` must be >= 0, received {factor!r}")
        self._keys = {arg: {key: _element(arg, key) for key in getattr(self, arg)} for arg in ("values", "scales")}
        for arg, keys in self._keys.items():
            seen: dict[str, str] = {}
            for key, element in keys.items():
                same = seen.setdefault(repr(element), key)
                if same != key:
                    raise InvalidArgument(f"`{arg}` names one element twice, as {same!r} and {key!r}")

    @override
    def bind(self, env: gym.Env[Any, Any], observation_space: gym.Space[Any], action_space: gym.Space[Any]) -> None:
        self._env = env
        self._sim = simulators.simulator(env, purpose="dynamics_shift")
        self._ledger = simulators.ledger(self._sim)
        current = self._ledger.base
        for arg in ("values", "scales"):
            keys = self._keys[arg]
            _check.keys(arg, {name for name, _ in keys.values()}, list(current))
            for key, value in getattr(self, arg).items():
                target = self._target(arg, key)
                try:
                    np.broadcast_to(np.asarray(value), target.shape)
                except ValueError:
                    raise InvalidArgument(
                        f"`{arg}[{key!r}]` has shape {np.shape(value)}, but the parameter has shape {target.shape}"
                    ) from None
        positive, nonnegative = self._sim.positive(), self._sim.nonnegative()
        for key in [*self.values, *(k for k in self.scales if k not in self.values)]:
            arg = "values" if key in self.values else "scales"
            name = self._keys[arg][key][0]
            self._check_result(key, self._target(arg, key), name in positive, name in nonnegative)
        self._names = {name for keys in self._keys.values() for name, _ in keys.values()}

    def _target(self, arg: str, key: str) -> NDArray[np.float64]:
        """The base value that ``arg[key]`` changes: a whole parameter, or the elements its index picks."""
        name, index = self._keys[arg][key]
        base = self._ledger.base[name]
        if index is None:
            return base
        try:
            return np.asarray(base[index])
        except IndexError:
            raise InvalidArgument(f"`{arg}[{key!r}]` indexes outside `{name}`, of shape {base.shape}") from None

    def _check_result(self, key: str, base: NDArray[np.float64], positive: bool, nonnegative: bool = False) -> None:
        """Raises unless this shift alone leaves ``key`` finite, and > 0 or >= 0 where the parameter must be."""
        value, scale = self.values.get(key), self.scales.get(key)
        start = base if value is None else np.broadcast_to(np.asarray(value, dtype=np.float64), base.shape)
        factor = np.asarray(1.0 if scale is None else scale, dtype=np.float64)
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            result = start * factor
        # An infinite base (an unbounded range) may stay infinite; anything else must come out finite.
        broken = np.isnan(result) | (np.isinf(result) & np.isfinite(start))
        if np.any(broken):
            where = np.unravel_index(int(np.argmax(broken)), result.shape) if result.ndim else ()
            raise InvalidArgument(
                f"`scales[{key!r}]` must leave `{key}` finite, but {float(start[where])!r} * "
                f"{float(np.broadcast_to(factor, result.shape)[where])!r} is not; received {scale!r}"
            )
        if nonnegative and not np.all(result >= 0):
            raise InvalidArgument(
                f"`{key}` must stay >= 0 (a mass, inertia, friction, damping, armature or power), but this shift makes"
                f" it {float(np.min(result))!r}; received values {value!r}, scales {scale!r}"
            )
        if positive and not np.all(result > 0):
            reason = f"`{key}` is {_POSITIVE}"
            if value is not None and not np.all(start > 0):
                raise InvalidArgument(f"`values[{key!r}]` must be > 0 ({reason}), received {value!r}")
            raise InvalidArgument(f"`scales[{key!r}]` must leave `{key}` > 0 ({reason}), received {scale!r}")

    @override
    def start_episode(self) -> None:
        # The env was just reset through this layer: the only changes that still hold are those the layers
        # under it made again. Any other (a wrapper dropped without closing) is forgotten, and the parameters
        # this shift changes start from their base.
        self._ledger.retain(_perturbations_under(self._env), self._sim)
        self._ledger.refresh(self._names, self._sim)

    @override
    def activate(self, env: gym.Env[Any, Any], rng: np.random.Generator) -> Record:
        self._ledger.activate(self, self._change(), self._sim)
        return {}

    def _change(self) -> dict[str, tuple[Any, Any]]:
        """Per parameter name: the value it is set to (None: kept; nan elements: kept) and its factor."""
        base = self._ledger.base
        change: dict[str, list[Any]] = {name: [None, 1.0] for name in self._names}
        for slot, arg, keep in ((0, "values", np.nan), (1, "scales", 1.0)):
            for key, given in getattr(self, arg).items():
                name, index = self._keys[arg][key]
                if index is None and change[name][slot] in (None, 1.0):
                    change[name][slot] = given
                    continue
                so_far = keep if change[name][slot] is None else change[name][slot]
                whole = np.array(np.broadcast_to(np.asarray(so_far, dtype=np.float64), base[name].shape))
                whole[index if index is not None else ...] = given
                change[name][slot] = whole
        return {name: (given, factor) for name, (given, factor) in change.items()}

    @override
    def deactivate(self, env: gym.Env[Any, Any]) -> None:
        self._ledger.deactivate(self, self._sim)


def _perturbations_under(env: gym.Env[Any, Any]) -> list[Perturbation]:
    """The perturbations of the layers in ``env``'s stack, from ``env`` down to the base env."""
    return [p for layer in layers(env) for p in layer.perturbations]


@register_wrapper("dynamics_shift")
class DynamicsShift(SingleLayer):
    """Changes physical parameters while its schedule is active; see :class:`DynamicsShiftPerturbation`.

    No vector version: wrap each sub-env.

    Example:
        >>> import gymnasium as gym, rlwrappers as rw
        >>> env = rw.DynamicsShift(gym.make("CartPole-v1"), scales={"length": 2.0}, when="starting(step=10)")
        >>> _ = env.reset(seed=0)
        >>> env.unwrapped.length
        0.5
        >>> for _ in range(10): _ = env.step(0)
        >>> env.unwrapped.length, env.unwrapped.polemass_length
        (1.0, 0.1)
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        values: Mapping[str, Any] | None = None,
        scales: Mapping[str, Any] | None = None,
        *,
        when: str | Schedule | None = None,
        label: str | None = None,
        allow_nonfinite: bool = False,
    ):
        """Wraps ``env``; ``when`` is the schedule (default: always), ``label`` names the log columns.

        ``allow_nonfinite`` lets the env's non-finite observations and rewards through while the shift is
        active, instead of raising :class:`~rlwrappers.error.PerturbationError`.
        """
        values, scales = ({} if values is None else values), ({} if scales is None else scales)
        params = dict(
            values=dict(values) if isinstance(values, Mapping) else values,  # anything else is rejected by name
            scales=dict(scales) if isinstance(scales, Mapping) else scales,
        )
        self._setup(env, DynamicsShiftPerturbation, params, when, label, allow_nonfinite=allow_nonfinite)


# -- interventions ----------------------------------------------------------------------------------------
def resolve(
    env: gym.Env[Any, Any], interventions: Iterable[Intervention | str | Mapping[str, Any]]
) -> tuple[documents.StateAdapter, tuple[Intervention, ...]]:
    """The adapter of ``env``'s state and ``interventions`` made ready for it.

    Catalogue names are looked up in the env's game (Toybox envs only); one-line forms and dicts become
    :class:`Intervention` objects; every assignment is checked against the env's state schema, so a path the
    env's state lacks fails here, before any state is touched.

    Args:
        env: a Toybox, classic-control, MuJoCo or ALE env, wrapped or not.
        interventions: catalogue names, one-line forms, :meth:`Intervention.to_dict` dicts or Interventions.

    Raises:
        StateNotSettable: the env's state cannot be read and written.
        UnknownName: a name is not in the game's catalogue (with suggestions).
        InvalidArgument: a catalogue name on an env that is not a Toybox game, an intervention for another
            game, or a path the state lacks.
        InvalidType: a value of the wrong type for its path.
    """
    state = documents.adapter(env, purpose="intervene")
    native = state.native  # a Toybox env: checked against its game's schema
    game = getattr(state.env, "game", None) if native else None
    game = game if game in GAMES else None
    schema_root = state.schema()
    schema = None if schema_root is None else Schema.of_document(state.name, schema_root)
    resolved = []
    for item in interventions:
        if isinstance(item, str) and is_name(item.strip()):
            if game is None:
                raise InvalidArgument(
                    f"intervention `{item}` is a catalogue name, but {state.name} is not one of the Toybox games "
                    f"{list(GAMES)}, whose catalogues hold names; pass the intervention itself (its one-line "
                    f"form, such as 'path=value', or an Intervention)"
                )
            iv = catalogues.get(game, item.strip())
        else:
            iv = as_intervention(item, game)
            if iv.game is None and game is not None:  # check it against the env's game now
                iv = Intervention(iv.name, game, iv.doc, iv.assignments)
        if iv.game is not None and iv.game != game and (game is not None or not native):
            plays = f"the env plays {game}" if game is not None else f"the env is {state.name}"
            raise InvalidArgument(f"intervention `{iv.name}` is for {iv.game}, but {plays}")
        if schema is not None:
            for a in iv.assignments:
                schema.check(a)
        resolved.append(iv)
    _check_positive_fields(state.positive_fields(), resolved)
    return state, tuple(resolved)


def _check_positive_fields(values: dict[str, float], interventions: Sequence[Intervention]) -> None:
    """Raises where the interventions, made in order, leave a field that must stay > 0 at or below 0."""
    for iv in interventions:
        for a in iv.assignments:
            if a.path not in values:
                continue
            old = values[a.path]
            new = a.value if a.op == "set" else old + a.value if a.op == "add" else old * a.value
            if not new > 0:
                raise InvalidArgument(
                    f"intervention `{iv.name}` makes `{a.path}` {new!r}, but it must stay > 0 ({_POSITIVE})"
                )
            values[a.path] = new


@dataclass(kw_only=True)
class InterventionPerturbation(Perturbation):
    """Makes interventions on an env's state whenever its schedule switches on; the env carries them.

    Works on the Toybox games and, through :func:`rlwrappers.state.documents.adapter`, on classic-control, MuJoCo
    and ALE envs. Each time the schedule switches on (at reset when it is active at time 0, or at the step it
    names) the layer reads the state once, makes every intervention in order and writes it back once, then
    renders the observation of the new state. Nothing is undone when the schedule switches off: the game plays on from
    the changed state until the next reset starts a new game. The record of the call that made them is
    ``{"active": True, "applied": [names]}``. In a layer built by :func:`rlwrappers.wrap`, the observation of
    a mid-episode step that makes them is the one rendered before; :class:`Intervene` re-renders it.

    Args:
        interventions: catalogue names (``"drop_row_0"``, Toybox only), one-line forms (``"paddle_width=40"``,
            ``"ram[14]=100"``) or :meth:`Intervention.to_dict` dicts, made in order.
    """

    name = "intervene"
    channel = "state"
    observes_state = True

    interventions: list[str | dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        items: Any = self.interventions
        if isinstance(items, (str, Mapping, Intervention)):
            items = [items]
        if not isinstance(items, Sequence) or not items:
            raise InvalidArgument(
                f"`interventions` must name at least one intervention, received {self.interventions!r}"
            )
        out: list[str | dict[str, Any]] = []
        for item in items:
            if isinstance(item, Intervention):
                out.append(item.to_dict())
            elif isinstance(item, str):
                if not is_name(item.strip()):
                    Intervention.parse(item)  # a one-line form: fails now if it cannot be read
                out.append(item.strip())
            elif isinstance(item, Mapping):
                out.append(Intervention.from_dict(item).to_dict())
            else:
                raise InvalidType(f"`interventions` items must be names, one-line forms or dicts, received {item!r}")
        self.interventions = out
        self._resolved: tuple[Intervention, ...] = ()
        self._record: Record = {}
        self._state: Any = None
        #: Set when an intervention was made and the observation not yet re-rendered.
        self.fresh = False

    @override
    def bind(self, env: gym.Env[Any, Any], observation_space: gym.Space[Any], action_space: gym.Space[Any]) -> None:
        self._state, self._resolved = resolve(env, self.interventions)
        check_observations_from_state(env, "intervene", "re-renders the observation of the changed state", "Intervene")
        self._record = {"applied": [iv.name for iv in self._resolved]}

    @property
    def resolved(self) -> tuple[Intervention, ...]:
        """The interventions it makes, once bound to an env."""
        return self._resolved

    @override
    def activate(self, env: gym.Env[Any, Any], rng: np.random.Generator) -> Record:
        self._state.write_state_json(apply(self._state.state_json(), self._resolved))
        self.fresh = True
        return dict(self._record)

    @override
    def reset(self, env: gym.Env[Any, Any], obs: Any, rng: np.random.Generator) -> tuple[Any, Record]:
        # Called at time 0 right after activate() made the interventions: the observation must show them.
        self.fresh = False
        return self._state.observe(), dict(self._record)

    @override
    def deactivate(self, env: gym.Env[Any, Any]) -> None:
        """Undoes nothing: an intervention is a change the game carries for the rest of the episode."""

    def observe(self) -> Any:
        """The observation of the env's current state."""
        self.fresh = False
        return self._state.observe()


@register_wrapper("intervene")
class Intervene(SingleLayer):
    """Makes interventions on an env's state, at reset or at the step a schedule names.

    See :class:`InterventionPerturbation`. The interventions are made once each time the schedule switches
    on, with one read and one write of the env's state, and the env carries them for the rest of the
    episode (what a game itself undoes, such as Breakout's paddle width after a lost ball, is listed in
    docs/interventions.md). ``when="always"`` (the default) makes them at every reset;
    ``when="starting(step=100)"`` at step 100 of every episode. The observation returned by the call that
    makes them shows the changed state. Wrap the base env with it before any wrapper that changes
    observations (frame skipping, resizing, stacking).

    The env's state is a JSON document (:mod:`rlwrappers.state.documents`): a Toybox game's own, checked against the
    game's schema; a classic-control env's state vector under names and its constants (``theta``,
    ``length``); a MuJoCo env's ``qpos`` and ``qvel``; an ALE env's ``ram`` (128 bytes). Beyond Toybox the
    paths and values are checked against the env's state when the wrapper is built.

    No vector version: wrap each sub-env.

    Args:
        env: a Toybox, classic-control, MuJoCo or ALE env, e.g. ``gym.make("rlwrappers/ToyboxBreakout-v0")``.
        interventions: a catalogue name (``"drop_row_0"``, Toybox only), a one-line form
            (``"paddle_width=40"``, ``"theta=0.1"``, ``"ram[14]=100"``), an :class:`Intervention`, or a list of
            these, made in order.
        when: the schedule (default: always, i.e. at every reset).
        label: names the log columns (default ``intervene``).

    Raises:
        StateNotSettable: no adapter serves the env (the message names it).
        InvalidArgument: a path names a field or an item the env's state does not have.
        InvalidType: a value has a kind its field cannot hold.

    Example:
        >>> import gymnasium as gym, rlwrappers.envs
        >>> from rlwrappers.wrappers.state import Intervene
        >>> env = Intervene(gym.make("rlwrappers/ToyboxBreakout-v0"), ["drop_row_0", "paddle_width=40"])
        >>> obs, info = env.reset(seed=0)
        >>> info["rlwrappers"]["intervene"]["applied"], env.unwrapped.state_json()["paddle_width"]
        (['drop_row_0', 'paddle_width=40'], 40.0)
        >>> cartpole = Intervene(gym.make("CartPole-v1"), "theta=0.1; length*=2")
        >>> obs, info = cartpole.reset(seed=0)
        >>> float(obs[2]), cartpole.unwrapped.length
        (0.10000000149011612, 1.0)
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        interventions: str | Intervention | Mapping[str, Any] | Sequence[str | Intervention | Mapping[str, Any]],
        *,
        when: str | Schedule | Mapping[str, Any] | None = None,
        label: str | None = None,
        allow_nonfinite: bool = False,
    ):
        """Wraps ``env``; ``when`` is the schedule (default: always), ``label`` names the log columns.

        ``allow_nonfinite`` lets the env's non-finite observations and rewards through while the
        interventions hold, instead of raising :class:`~rlwrappers.error.PerturbationError`.
        """
        items = [interventions] if isinstance(interventions, (str, Intervention, Mapping)) else interventions
        if not isinstance(items, Sequence):
            raise InvalidType(
                f"`interventions` must be a name, a one-line form or a list of them, received {interventions!r}"
            )
        registered: list[Any] = []
        game = getattr(env.unwrapped, "game", None)
        for item in items:
            # A catalogue or defined intervention of the env's game is recorded by its name, any other by its dict.
            if isinstance(item, Intervention) and item.game is not None and item.game == game:
                known = catalogues.lookup(item.game, item.name)
                registered.append(item.name if known == item else item.to_dict())
            else:
                registered.append(item)
        params = dict(interventions=registered)
        self._setup(env, InterventionPerturbation, params, when, label, allow_nonfinite=allow_nonfinite)
        self._intervention: InterventionPerturbation = self.perturbations[0]  # type: ignore[assignment]

    @override
    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        obs, reward, terminated, truncated, info = super().step(action)
        if self._intervention.fresh:
            obs = self._intervention.observe()
        return obs, reward, terminated, truncated, info

    @property
    def interventions(self) -> tuple[Intervention, ...]:
        """The interventions it makes, in order."""
        return self._intervention.resolved
