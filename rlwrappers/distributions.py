"""Distributions for the numeric parameters of perturbations: a value drawn anew per activation, episode or step.

Any numeric parameter of any perturbation may be a distribution instead of a constant, in Python and in spec
strings, also inside dicts and lists (``dynamics_shift(values={'gravity': uniform(8, 12)})``):

- ``uniform(low, high)``: uniform on [low, high];
- ``loguniform(low, high)``: its logarithm uniform, for 0 < low < high;
- ``normal(mean, std, low=None, high=None)``: Gaussian, truncated to [low, high] where given;
- ``choice(values, p=None)``: one of ``values``, with probabilities ``p`` (equal by default);
- ``widen(start, stop, over)``: a curriculum, uniform on a range that widens from ``start`` to ``stop`` over
  ``over`` steps of the wrapper's life.

A distribution for an array parameter draws one value for the whole array; a list of distributions draws per
element. The perturbation's layer draws from a generator of its own per (label, parameter), apart from the
perturbation's effect, so the drawn values, recorded in ``info`` and in the log, replayed as constants give the
same episodes (see :doc:`distributions`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from statistics import NormalDist
from typing import Any, ClassVar, Final

import numpy as np
from typing_extensions import override

from rlwrappers import _check
from rlwrappers.error import InvalidArgument, InvalidType, UnknownName, did_you_mean
from rlwrappers.spec import Call, format_value

__all__ = [
    "DISTRIBUTIONS",
    "RESAMPLE",
    "Choice",
    "Distribution",
    "LogUniform",
    "Normal",
    "Parameter",
    "Uniform",
    "Widen",
    "choice",
    "from_value",
    "loguniform",
    "normal",
    "split",
    "substitute",
    "uniform",
    "widen",
]

#: When a drawn parameter is drawn again: each time its perturbation switches on, at each reset, or each step.
RESAMPLE: Final = ("activation", "episode", "step")
#: The key that marks a distribution in the JSON form of a spec (``{"distribution": "uniform", ...}``).
KEY: Final = "distribution"
#: The least probability a truncated normal may keep between its bounds.
_LEAST_MASS: Final = 1e-9


class Distribution:
    """A distribution of one number. Subclasses are frozen dataclasses whose fields are its parameters."""

    name: ClassVar[str]

    def draw(self, rng: np.random.Generator, steps: int = 0) -> float:
        """One value, drawn from ``rng``.

        ``steps`` is how many steps the drawing wrapper has lived, for distributions that change with it
        (:class:`Widen`).
        """
        raise NotImplementedError

    def extremes(self) -> tuple[float, ...]:
        """The values the perturbation is checked with: those at the ends of the support (every one of a choice)."""
        raise NotImplementedError

    def params(self) -> dict[str, Any]:
        """The parameters, JSON-ready, in declaration order."""
        return {f.name: getattr(self, f.name) for f in _parameters(self)}

    def to_dict(self) -> dict[str, Any]:
        """The JSON form that :func:`from_value` reads back."""
        return {KEY: self.name, **self.params()}

    def __str__(self) -> str:
        fields = _parameters(self)
        params = self.params()
        required = [format_value(params[f.name]) for f in fields if f.default is dataclasses.MISSING]
        optional = [
            f"{f.name}={format_value(params[f.name])}"
            for f in fields
            if f.default is not dataclasses.MISSING and params[f.name] != f.default
        ]
        return f"{self.name}({', '.join(required + optional)})"


def _parameters(distribution: Distribution) -> list[dataclasses.Field[Any]]:
    """A distribution's parameters: its dataclass fields, less those it derives from them."""
    return [f for f in dataclasses.fields(distribution) if f.init]  # type: ignore[arg-type]


def _bounds(name: str, low: Any, high: Any) -> tuple[float, float]:
    low, high = _check.number(f"{name}: low", low), _check.number(f"{name}: high", high)
    if not low < high:
        raise InvalidArgument(
            f"`{name}` needs low < high, received [{low!r}, {high!r}]; for one value give the constant itself"
        )
    return low, high


@dataclasses.dataclass(frozen=True)
class Uniform(Distribution):
    """Uniform on [low, high]."""

    name = "uniform"
    low: float
    high: float

    def __post_init__(self) -> None:
        low, high = _bounds(self.name, self.low, self.high)
        object.__setattr__(self, "low", low)
        object.__setattr__(self, "high", high)

    @override
    def draw(self, rng: np.random.Generator, steps: int = 0) -> float:
        return self.low + (self.high - self.low) * rng.random()  # rng.uniform's value, a third of its cost

    @override
    def extremes(self) -> tuple[float, ...]:
        return (self.low, self.high)


@dataclasses.dataclass(frozen=True)
class LogUniform(Uniform):
    """Its logarithm uniform on [log low, log high], for 0 < low < high."""

    name = "loguniform"

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.low <= 0:
            raise InvalidArgument(f"`loguniform` needs 0 < low, received low={self.low!r}")

    @override
    def draw(self, rng: np.random.Generator, steps: int = 0) -> float:
        return float(math.exp(rng.uniform(math.log(self.low), math.log(self.high))))


@dataclasses.dataclass(frozen=True)
class Normal(Distribution):
    """Gaussian with ``mean`` and ``std``, truncated to [low, high] where they are given.

    A truncated draw is one uniform number mapped through the inverse CDF, so every draw takes the same share of
    the generator. Without bounds it is checked at mean +- 6 std: give bounds where the parameter has them (a
    noise level, a mass).
    """

    name = "normal"
    mean: float
    std: float
    low: float | None = None
    high: float | None = None
    _gauss: NormalDist = dataclasses.field(init=False, repr=False, compare=False)
    _mass: tuple[float, float] = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        mean, std = _check.number("normal: mean", self.mean), _check.number("normal: std", self.std)
        if std <= 0:
            raise InvalidArgument(f"`normal` needs std > 0, received std={self.std!r}; for one value give the constant")
        low = None if self.low is None else _check.number("normal: low", self.low)
        high = None if self.high is None else _check.number("normal: high", self.high)
        if low is not None and high is not None and not low < high:
            raise InvalidArgument(f"`normal` needs low < high, received [{low!r}, {high!r}]")
        for key, value in (("mean", mean), ("std", std), ("low", low), ("high", high)):
            object.__setattr__(self, key, value)
        gauss = NormalDist(mean, std)
        below = 0.0 if low is None else gauss.cdf(low)
        above = 1.0 if high is None else gauss.cdf(high)
        if above - below < _LEAST_MASS:
            raise InvalidArgument(f"`{self}` keeps almost no probability between its bounds")
        object.__setattr__(self, "_gauss", gauss)  # the CDF values of the bounds, computed once for every draw
        object.__setattr__(self, "_mass", (below, above))

    @override
    def draw(self, rng: np.random.Generator, steps: int = 0) -> float:
        if self.low is None and self.high is None:
            return float(rng.normal(self.mean, self.std))
        below, above = self._mass
        u = below + (above - below) * float(rng.random())
        value = self._gauss.inv_cdf(min(max(u, 1e-300), 1.0 - 1e-16))
        if self.low is not None:
            value = max(value, self.low)
        if self.high is not None:
            value = min(value, self.high)
        return float(value)

    @override
    def extremes(self) -> tuple[float, ...]:
        low = self.mean - 6 * self.std if self.low is None else self.low
        high = self.mean + 6 * self.std if self.high is None else self.high
        return (low, high)


@dataclasses.dataclass(frozen=True)
class Choice(Distribution):
    """One of ``values``, with probabilities ``p`` (equal when None)."""

    name = "choice"
    values: tuple[float, ...]
    p: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.values, (str, bytes)) or not isinstance(self.values, Sequence) or not self.values:
            raise InvalidType(f"`choice` needs a non-empty list of numbers, received {self.values!r}")
        values = tuple(v if isinstance(v, int) and not isinstance(v, bool) else _number(v) for v in self.values)
        object.__setattr__(self, "values", values)
        if self.p is not None:
            if isinstance(self.p, (str, bytes)) or not isinstance(self.p, Sequence) or len(self.p) != len(values):
                raise InvalidArgument(f"`choice` needs one probability per value in `p`, received {self.p!r}")
            p = tuple(_check.probability("choice: p", q) for q in self.p)
            if not math.isclose(sum(p), 1.0, abs_tol=1e-9):
                raise InvalidArgument(f"`choice`'s probabilities must sum to 1, received {self.p!r}")
            object.__setattr__(self, "p", p)

    @override
    def params(self) -> dict[str, Any]:
        return {"values": list(self.values), "p": None if self.p is None else list(self.p)}

    @override
    def draw(self, rng: np.random.Generator, steps: int = 0) -> float:
        n = len(self.values)
        return self.values[int(rng.integers(n)) if self.p is None else int(rng.choice(n, p=self.p))]

    @override
    def extremes(self) -> tuple[float, ...]:
        return self.values


@dataclasses.dataclass(frozen=True)
class Widen(Distribution):
    """A curriculum: uniform on a range that widens linearly from ``start`` to ``stop`` over ``over`` steps.

    ``start`` and ``stop`` are (low, high) ranges, ``start`` inside ``stop``; ``start`` may be one point. After
    ``s`` steps of the drawing wrapper's life (its ``total_step``, as ``unit='total_step'`` schedules count) the
    range is ``start + min(s / over, 1) * (stop - start)`` at each end. In a vector env each sub-env counts its
    own steps.
    """

    name = "widen"
    start: tuple[float, float]
    stop: tuple[float, float]
    over: int

    def __post_init__(self) -> None:
        start, stop = _range("start", self.start), _range("stop", self.stop)
        if not (stop[0] <= start[0] and start[1] <= stop[1] and stop[0] < stop[1]):
            raise InvalidArgument(
                f"`widen` needs `start` inside a wider `stop`, received start={list(start)}, stop={list(stop)}"
            )
        object.__setattr__(self, "start", start)
        object.__setattr__(self, "stop", stop)
        object.__setattr__(self, "over", _check.integer("widen: over", self.over, minimum=1))

    @override
    def params(self) -> dict[str, Any]:
        return {"start": list(self.start), "stop": list(self.stop), "over": self.over}

    def bounds(self, steps: int) -> tuple[float, float]:
        """The range after ``steps`` steps."""
        f = min(steps / self.over, 1.0)
        return (
            self.start[0] + f * (self.stop[0] - self.start[0]),
            self.start[1] + f * (self.stop[1] - self.start[1]),
        )

    @override
    def draw(self, rng: np.random.Generator, steps: int = 0) -> float:
        low, high = self.bounds(steps)
        return low + (high - low) * rng.random()

    @override
    def extremes(self) -> tuple[float, ...]:
        return self.stop


def _range(name: str, value: Any) -> tuple[float, float]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) != 2:
        raise InvalidType(f"`widen: {name}` must be a (low, high) pair, received {value!r}")
    low, high = (_check.number(f"widen: {name}", v) for v in value)
    if low > high:
        raise InvalidArgument(f"`widen: {name}` needs low <= high, received {list(value)}")
    return low, high


def _number(value: Any) -> float:
    return _check.number("choice: values", value)


#: The distributions by name, as spec strings write them.
DISTRIBUTIONS: Final[Mapping[str, type[Distribution]]] = {
    cls.name: cls for cls in (Uniform, LogUniform, Normal, Choice, Widen)
}


def uniform(low: float, high: float) -> Uniform:
    """Uniform on [low, high]."""
    return Uniform(low, high)


def loguniform(low: float, high: float) -> LogUniform:
    """Log-uniform on [low, high], for 0 < low < high."""
    return LogUniform(low, high)


def normal(mean: float, std: float, *, low: float | None = None, high: float | None = None) -> Normal:
    """Gaussian, truncated to [low, high] where given."""
    return Normal(mean, std, low, high)


def choice(values: Sequence[float], p: Sequence[float] | None = None) -> Choice:
    """One of ``values``, with probabilities ``p``."""
    return Choice(tuple(values), None if p is None else tuple(p))


def widen(start: Sequence[float], stop: Sequence[float], over: int) -> Widen:
    """A uniform range that widens from ``start`` to ``stop`` over ``over`` steps: a curriculum."""
    return Widen(tuple(start), tuple(stop), over)  # type: ignore[arg-type]


def from_value(value: Any) -> Distribution | None:
    """The distribution that ``value`` stands for (an object, a parsed spec call, a JSON dict), or None.

    Raises:
        UnknownName: a call or dict names no distribution.
    """
    if isinstance(value, Distribution):
        return value
    if isinstance(value, Call):
        cls = _named(value.name)
        names = [f.name for f in dataclasses.fields(cls) if f.init]  # type: ignore[arg-type]
        if len(value.args) > len(names):
            raise InvalidArgument(f"`{value}` takes at most {len(names)} values: {names}")
        kwargs = dict(zip(names, value.args, strict=False))
        for key, given in value.kwargs.items():
            if key not in names or key in kwargs:
                raise InvalidArgument(f"`{value}`: `{key}` is not a parameter of {cls.name} {names}, or given twice")
            kwargs[key] = given
        return _make(cls, kwargs)
    if isinstance(value, Mapping) and KEY in value:
        params = {k: v for k, v in value.items() if k != KEY}
        cls = _named(value[KEY])
        known = [f.name for f in dataclasses.fields(cls) if f.init]  # type: ignore[arg-type]
        _check.keys(f"{cls.name} distribution", params, known)
        return _make(cls, params)
    return None


def _named(name: Any) -> type[Distribution]:
    if name not in DISTRIBUTIONS:
        known = list(DISTRIBUTIONS)
        raise UnknownName(f"`{name}` is not a distribution; distributions: {known}.{did_you_mean(str(name), known)}")
    return DISTRIBUTIONS[name]


def _make(cls: type[Distribution], kwargs: dict[str, Any]) -> Distribution:
    for key in ("values", "p", "start", "stop"):
        if isinstance(kwargs.get(key), list):
            kwargs[key] = tuple(kwargs[key])
    try:
        return cls(**kwargs)
    except TypeError as error:  # a missing parameter
        raise InvalidArgument(f"{cls.name}: {error}") from None


Path = tuple[str | int, ...]


@dataclasses.dataclass(frozen=True)
class Parameter:
    """A drawn parameter of a perturbation: where it sits among the parameters, and its distribution."""

    path: Path
    distribution: Distribution

    @property
    def column(self) -> str:
        """Its name in records and log columns: ``std``, ``values.gravity``, ``scales.body_mass[2]``."""
        out = ""
        for key in self.path:
            out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else key)
        return out


def split(params: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[Parameter, ...]]:
    """Separates the distributions in ``params`` (at any depth) from the constants.

    Returns the parameters with each distribution replaced by its first extreme (a value it can draw), and the
    distributions with their places.

    Raises:
        UnknownName: a call that names no distribution.
    """
    found: list[Parameter] = []

    def walk(value: Any, path: Path) -> Any:
        distribution = from_value(value)
        if distribution is not None:
            found.append(Parameter(path, distribution))
            return distribution.extremes()[0]
        if isinstance(value, Mapping):
            return {k: walk(v, (*path, str(k))) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            items = [walk(v, (*path, n)) for n, v in enumerate(value)]
            return items if isinstance(value, list) else tuple(items)
        return value

    constants = {key: walk(value, (key,)) for key, value in params.items()}
    return constants, tuple(found)


def substitute(params: Mapping[str, Any], values: Mapping[Path, Any]) -> dict[str, Any]:
    """``params`` with the value at each path of ``values`` replaced; containers along a path are copied."""

    def put(container: Any, path: Path, value: Any) -> Any:
        key, rest = path[0], path[1:]
        copied: Any = dict(container) if isinstance(container, Mapping) else list(container)
        copied[key] = put(container[key], rest, value) if rest else value
        return tuple(copied) if isinstance(container, tuple) else copied

    out = dict(params)
    for path, value in values.items():
        if len(path) == 1:
            out[path[0]] = value  # type: ignore[index]
        else:
            out = put(out, path, value)
    return out
