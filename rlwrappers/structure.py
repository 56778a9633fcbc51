"""Structured observations: the entries of Dict and Tuple spaces, named by key, and batches of them.

An entry is a space inside a Dict or Tuple space that is neither (a Box, a Discrete, a Text, ...). Its key is
its path from the top: a Dict key, a Tuple index, and for nested spaces the steps joined by ``/``
(``"robot/camera"``, ``"1/image"``). Observation perturbations choose the entries they act on by key
(:func:`choose`), by default by what an entry is (:data:`KINDS`):

- ``"sensor"``: every float Box entry that is not a goal (:data:`GOALS`). Noise and gradient attacks act on
  these: ``desired_goal`` is the task the agent was given, not something it measured.
- ``"image"``: every pixel image: a uint8 Box of shape (H, W, 3) or (H, W, 1), at least 32 x 32, with bounds
  [0, 255]. Natural corruptions act on these only, so a symbolic grid such as MiniGrid's 7 x 7 x 3 ``image`` of
  object codes is never treated as a picture unless it is named.

A batch of structured observations has the structure of one, with a batch of each entry in its place
(:func:`stack`), which is what SB3's ``MultiInputPolicy`` takes.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

import gymnasium as gym
import numpy as np

from rlwrappers.error import IncompatibleSpace, InvalidArgument, InvalidType, UnknownName, did_you_mean

__all__ = [
    "Access",
    "GOALS",
    "KINDS",
    "SEPARATOR",
    "Path",
    "batch_size",
    "check_keys",
    "choose",
    "entries",
    "equal",
    "get",
    "is_image",
    "is_structured",
    "keys_of",
    "leaves",
    "map_entries",
    "path",
    "replace",
    "replace_space",
    "stack",
    "take",
]

#: What an observation perturbation acts on by default: float sensor readings, or pixel images.
KINDS: Final = ("sensor", "image")
#: Dict keys that name a goal, the task given to a goal-conditioned agent: never a sensor by default.
GOALS: Final = frozenset({"desired_goal", "goal"})
#: The separator of the steps of a nested key.
SEPARATOR: Final = "/"
#: The smallest height and width of an entry that is a pixel image by default.
MIN_IMAGE_SIDE: Final = 32

Path = tuple[str | int, ...]


def is_structured(space: gym.Space[Any]) -> bool:
    """Whether ``space`` is a Dict or a Tuple space."""
    return isinstance(space, (gym.spaces.Dict, gym.spaces.Tuple))


def entries(space: gym.Space[Any]) -> dict[str, gym.Space[Any]]:
    """Every entry of a Dict or Tuple space (nested ones too) by key, in the space's order."""
    out: dict[str, gym.Space[Any]] = {}

    def visit(prefix: str, sub: gym.Space[Any]) -> None:
        if isinstance(sub, gym.spaces.Dict):
            items: Any = sub.spaces.items()
            for step in sub.spaces:
                if not isinstance(step, str) or not step or SEPARATOR in step:
                    raise IncompatibleSpace(
                        f"the Dict key {step!r}{f' in {prefix!r}' if prefix else ''} cannot be named: entries are named"
                        f" by non-empty string keys, with {SEPARATOR!r} between the steps of a nested one; rename it"
                        " with an observation wrapper (gymnasium.wrappers.TransformObservation)"
                    )
        elif isinstance(sub, gym.spaces.Tuple):
            items = enumerate(sub.spaces)
        else:
            out[prefix] = sub
            return
        for step, child in items:
            visit(f"{prefix}{SEPARATOR}{step}" if prefix else str(step), child)

    visit("", space)
    return out


def path(space: gym.Space[Any], key: str) -> Path:
    """The steps of ``key`` through ``space``: Dict keys as strings, Tuple indices as ints."""
    steps: list[str | int] = []
    sub = space
    for part in key.split(SEPARATOR):
        if isinstance(sub, gym.spaces.Tuple):
            steps.append(int(part))
            sub = sub.spaces[int(part)]
        else:
            assert isinstance(sub, gym.spaces.Dict), "entries() gave the key"
            steps.append(part)
            sub = sub.spaces[part]
    return tuple(steps)


def check_keys(name: str, value: Any) -> tuple[str, ...] | None:
    """``value`` as a ``keys`` parameter: None, or a non-empty tuple of distinct keys (Tuple indices as strings).

    A single key may be given on its own; an int is a Tuple index.
    """
    if value is None:
        return None
    items = [value] if isinstance(value, (str, int)) else value
    if not isinstance(items, (list, tuple)) or not items:
        raise InvalidType(
            f"`{name}` must be a key or a non-empty list of keys (Dict keys, Tuple indices, 'a/b' for nested"
            f" entries), received {value!r}"
        )
    keys = []
    for item in items:
        if (
            isinstance(item, bool)
            or not isinstance(item, (str, int))
            or item == ""
            or (isinstance(item, int) and item < 0)
        ):
            raise InvalidType(f"`{name}` holds {item!r}; each key must be a Dict key or a Tuple index >= 0")
        keys.append(str(item))
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise InvalidArgument(f"`{name}` names {repeated} more than once, received {value!r}")
    return tuple(keys)


def is_image(space: gym.Space[Any]) -> bool:
    """Whether an entry is a pixel image: a uint8 Box (H, W, 3) or (H, W, 1), at least 32 x 32, in [0, 255]."""
    return (
        isinstance(space, gym.spaces.Box)
        and space.dtype == np.uint8
        and len(space.shape) == 3
        and space.shape[2] in (1, 3)
        and min(space.shape[:2]) >= MIN_IMAGE_SIDE
        and bool(np.all(space.low == 0))
        and bool(np.all(space.high == 255))
    )


def _is_sensor(key: str, space: gym.Space[Any]) -> bool:
    last = key.rsplit(SEPARATOR, 1)[-1]
    return isinstance(space, gym.spaces.Box) and space.dtype.kind == "f" and last not in GOALS


def choose(space: gym.Space[Any], keys: tuple[str, ...] | None, kind: str, who: str) -> tuple[str, ...] | None:
    """The keys of the entries of ``space`` that a perturbation of ``kind`` acts on; None for a plain space.

    ``keys`` are the entries named (each must exist), or None for the default of ``kind`` (at least one entry
    must be of it); either way the keys come back in the space's order. ``who`` names the perturbation in errors.
    """
    if not is_structured(space):
        if keys is not None:
            raise IncompatibleSpace(
                f"{who}: `keys` names entries of a Dict or Tuple observation space, received keys={list(keys)} for"
                f" {space}"
            )
        return None
    known = entries(space)
    if keys is None:
        chosen = tuple(k for k, s in known.items() if (is_image(s) if kind == "image" else _is_sensor(k, s)))
        if not chosen:
            what = (
                "pixel image (a uint8 Box (H, W, 3) or (H, W, 1) of at least 32 x 32)"
                if kind == "image"
                else f"sensor entry (a float Box that is not one of {sorted(GOALS)})"
            )
            raise IncompatibleSpace(
                f"{who} found no {what} in {space}; name the entries to act on with keys=[...], out of {list(known)}"
            )
        return chosen
    for key in keys:
        if key not in known:
            raise UnknownName(
                f"{who}: `keys` names {key!r}, which is not an entry of {space}; entries: {list(known)}."
                f"{did_you_mean(key, known)}"
            )
    return tuple(key for key in known if key in keys)  # in the space's order, whatever the order named


class Access:
    """Reads and replaces the entries at ``paths`` of structured observations (or batches), prepared once.

    Every step's path: entries at the top of a Dict, the common case, are read and set without walking paths.

    Example:
        >>> import numpy as np
        >>> access = Access([("a",), ("c", 0)])
        >>> obs = {"a": np.zeros(2), "b": 1, "c": (np.ones(1), 2)}
        >>> access.gather(obs)
        [array([0., 0.]), array([1.])]
        >>> access.scatter(obs, ["A", "C"])
        {'a': 'A', 'b': 1, 'c': ('C', 2)}
    """

    def __init__(self, paths: Sequence[Path]) -> None:
        self.paths = tuple(paths)
        self._top = [steps[0] for steps in self.paths] if all(len(steps) == 1 for steps in self.paths) else None
        self._pick = operator.itemgetter(*self._top) if self._top and len(self._top) > 1 else None

    def gather(self, obs: Any) -> Sequence[Any]:
        """The entries of ``obs`` at the paths, in order."""
        pick = self._pick
        if pick is not None:
            return pick(obs)
        return [get(obs, steps) for steps in self.paths]

    def scatter(self, obs: Any, values: Iterable[Any]) -> Any:
        """A copy of ``obs`` with ``values`` at the paths, in order; see :func:`replace`."""
        top = self._top
        if top is not None and not isinstance(obs, tuple):
            new = dict(obs)
            new.update(zip(top, values, strict=False))  # as many values as paths: strict costs a third here
            return new
        return replace(obs, dict(zip(self.paths, values, strict=True)))


def get(obs: Any, steps: Path) -> Any:
    """The entry of a structured observation (or batch) at ``steps``."""
    for step in steps:
        obs = obs[step]
    return obs


def replace(obs: Any, values: Mapping[Path, Any]) -> Any:
    """A copy of a structured observation with the entries at the paths of ``values`` replaced.

    Only the dicts and tuples along those paths are new; every other entry is the same object as in ``obs``,
    and ``obs`` is unchanged.
    """
    new: Any = list(obs) if isinstance(obs, tuple) else dict(obs)
    nested: dict[str | int, dict[Path, Any]] = {}
    for steps, value in values.items():
        if len(steps) == 1:  # an entry of this level: every step's path on a flat Dict
            new[steps[0]] = value
        elif steps:
            nested.setdefault(steps[0], {})[steps[1:]] = value
        else:
            return value
    for step, rest in nested.items():
        new[step] = replace(obs[step], rest)
    return tuple(new) if isinstance(obs, tuple) else new


def replace_space(space: gym.Space[Any], spaces: Mapping[Path, gym.Space[Any]]) -> gym.Space[Any]:
    """``space`` with the entries at the paths of ``spaces`` replaced (a new Dict or Tuple, the same order)."""
    if () in spaces:
        return spaces[()]
    children: dict[str | int, dict[Path, gym.Space[Any]]] = {}
    for steps, sub in spaces.items():
        children.setdefault(steps[0], {})[steps[1:]] = sub
    if isinstance(space, gym.spaces.Tuple):
        subs = [replace_space(s, children[i]) if i in children else s for i, s in enumerate(space.spaces)]
        return gym.spaces.Tuple(subs)
    assert isinstance(space, gym.spaces.Dict)
    return gym.spaces.Dict({k: replace_space(s, children[k]) if k in children else s for k, s in space.spaces.items()})


def leaves(obs: Any) -> list[Any]:
    """The entries of a structured observation (or batch) in order; a plain array is its own one entry."""
    if type(obs) is np.ndarray:
        return [obs]
    if isinstance(obs, Mapping):
        return [leaf for value in obs.values() for leaf in leaves(value)]
    if isinstance(obs, tuple):
        return [leaf for value in obs for leaf in leaves(value)]
    return [obs]


def keys_of(obs: Any, prefix: str = "") -> list[str]:
    """The keys of the entries of a structured observation (or batch), in the order of :func:`leaves`."""
    if type(obs) is not np.ndarray and isinstance(obs, (Mapping, tuple)):
        items = obs.items() if isinstance(obs, Mapping) else enumerate(obs)
        return [
            key
            for step, value in items
            for key in keys_of(value, f"{prefix}{SEPARATOR}{step}" if prefix else str(step))
        ]
    return [prefix]


def stack(observations: Sequence[Any]) -> Any:
    """Single observations as one batch: an array with a leading axis, or the structure with batches in it."""
    first = observations[0]
    if type(first) is np.ndarray:  # every step's path: no structure to look at
        return first[None] if len(observations) == 1 else np.stack(observations)
    if isinstance(first, Mapping):
        return {key: stack([o[key] for o in observations]) for key in first}
    if isinstance(first, tuple):
        return tuple(stack([o[i] for o in observations]) for i in range(len(first)))
    if len(observations) == 1:
        return np.asarray(first)[None]
    return np.stack([np.asarray(o) for o in observations])


def batch_size(batch: Any) -> int:
    """How many observations a batch holds: the length of its (first) array."""
    return len(batch) if type(batch) is np.ndarray else len(leaves(batch)[0])


def map_entries(fn: Callable[[Any], Any], obs: Any) -> Any:
    """``obs`` with ``fn`` applied to each entry: the same dicts and tuples, nested as they nest."""
    if type(obs) is not np.ndarray:
        if isinstance(obs, Mapping):
            return {key: map_entries(fn, value) for key, value in obs.items()}
        if isinstance(obs, tuple):
            return tuple(map_entries(fn, value) for value in obs)
    return fn(obs)


def take(batch: Any, index: Any) -> Any:
    """Item (or items) ``index`` of a batch: ``batch[index]`` for an array, and entry by entry in a structure."""
    if type(batch) is np.ndarray:
        return batch[index]
    return map_entries(lambda value: np.asarray(value)[index], batch)


def equal(a: Any, b: Any) -> bool:
    """Whether two observations (or batches) hold the same structure and the same values, bit for bit."""
    if isinstance(a, Mapping) or isinstance(b, Mapping):
        return (
            isinstance(a, Mapping)
            and isinstance(b, Mapping)
            and a.keys() == b.keys()
            and all(equal(a[k], b[k]) for k in a)
        )
    if isinstance(a, tuple) or isinstance(b, tuple):
        return (
            isinstance(a, tuple)
            and isinstance(b, tuple)
            and len(a) == len(b)
            and all(equal(x, y) for x, y in zip(a, b, strict=True))
        )
    x, y = np.asarray(a), np.asarray(b)
    return x.shape == y.shape and x.dtype == y.dtype and bool(np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"))
