"""The contract every perturbation wrapper passes, as checks that anyone can run on their own wrappers.

The checks cover Gymnasium's and SB3's API checkers, determinism, true spaces, no in-place edits, an untouched
env generator, vector equivalence and a spec round trip.

Every check takes ``env_fn``, which builds a fresh base env, and ``wrap_fn``, which wraps an env in the stack
under test, and builds what it needs from them. A check that fails raises :class:`ContractError` (an
``AssertionError``) whose message names the check, the call where things went wrong and the values seen.
The checks raise explicitly instead of using ``assert``, so they also hold under ``python -O``.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import reprlib
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.envs.registration import EnvSpec
from gymnasium.utils.env_checker import data_equivalence
from gymnasium.vector.utils import concatenate, create_empty_array, iterate

from rlwrappers._optional import require
from rlwrappers.testing.env import sample

__all__ = [
    "ContractError",
    "EnvFn",
    "WrapFn",
    "CHECKS",
    "check_wrapper",
    "check_gymnasium_env",
    "check_sb3_env",
    "check_determinism",
    "check_spaces",
    "check_no_mutation",
    "check_env_rng_untouched",
    "check_vector_equivalence",
    "check_spec_roundtrip",
]

#: Builds a fresh base env, e.g. ``lambda: gym.make("CartPole-v1")``.
EnvFn = Callable[[], gym.Env[Any, Any]]
#: Wraps an env in the stack under test, e.g. ``lambda env: rw.ObservationNoise(env, std=0.1)``.
WrapFn = Callable[[gym.Env[Any, Any]], gym.Env[Any, Any]]

_SAMPLED = (gym.spaces.Box, gym.spaces.Discrete, gym.spaces.MultiDiscrete, gym.spaces.MultiBinary)
_repr = reprlib.Repr()
_repr.maxstring = 120
_repr.maxother = 200
_repr.maxlist = _repr.maxtuple = _repr.maxdict = 8


class ContractError(AssertionError):
    """A wrapper broke the contract; the message names the check, the call and the values seen."""


def _short(value: Any) -> str:
    if isinstance(value, np.ndarray):
        text = np.array2string(value, threshold=12, edgeitems=3, max_line_width=200)
        return f"array({text}, dtype={value.dtype}, shape={value.shape})"
    return _repr.repr(value)


# -- driving a stack ----------------------------------------------------------------------------------------


@dataclass
class _Event:
    """One call a check made to the stack under test, and what the call returned."""

    kind: str  # "reset" or "step"
    step: int  # step calls made before this call returned
    action: Any  # the object passed to step (None for reset)
    obs: Any
    reward: Any = None
    terminated: Any = None
    truncated: Any = None
    info: Any = None

    def where(self) -> str:
        return "reset" if self.kind == "reset" and self.step == 0 else f"{self.kind} (after {self.step} steps)"


def _build(env_fn: EnvFn, wrap_fn: WrapFn) -> gym.Env[Any, Any]:
    return wrap_fn(env_fn())


def _actions(space: gym.Space[Any], seed: int, steps: int) -> list[Any]:
    """``steps`` actions of ``space``, drawn from a generator seeded with ``seed``.

    Box, Discrete, MultiDiscrete and MultiBinary actions come from :func:`rlwrappers.testing.sample` (which,
    unlike ``Box.sample``, handles bounds spanning a dtype's whole range); other spaces are sampled by a
    copy of the space seeded with ``seed``. The env's own space is never touched.
    """
    if isinstance(space, _SAMPLED):
        rng = np.random.default_rng(seed)
        return [sample(space, rng) for _ in range(steps)]
    space = copy.deepcopy(space)
    space.seed(seed)
    return [space.sample() for _ in range(steps)]


def _run(env: gym.Env[Any, Any], seed: int, actions: Sequence[Any], *, one_buffer: bool = False) -> Iterator[_Event]:
    """Yields an event right after each call to ``env``: a reset with ``seed``, then a step per action.

    Steps take copies of ``actions``, or with ``one_buffer`` the same array each time, into which each array
    action is written, as a caller that reuses its action buffer does. An episode that ends is followed by a
    reset without a seed.
    """
    obs, info = env.reset(seed=seed)
    yield _Event("reset", 0, None, obs, info=info)
    buffer = copy.deepcopy(actions[0]) if one_buffer and actions and isinstance(actions[0], np.ndarray) else None
    for t, action in enumerate(actions, start=1):
        if buffer is not None:
            buffer[...] = action
            given = buffer
        else:
            given = copy.deepcopy(action)
        obs, reward, terminated, truncated, info = env.step(given)
        yield _Event("step", t, given, obs, reward, terminated, truncated, info)
        if terminated or truncated:
            obs, info = env.reset()
            yield _Event("reset", t, None, obs, info=info)


def _rollout(env: gym.Env[Any, Any], seed: int, actions: Sequence[Any], *, one_buffer: bool = False) -> list[_Event]:
    return [copy.deepcopy(event) for event in _run(env, seed, actions, one_buffer=one_buffer)]


_FIELDS = ("kind", "obs", "reward", "terminated", "truncated", "info")


def _difference(a: Sequence[_Event], b: Sequence[_Event], names: tuple[str, str] = ("first", "second")) -> str | None:
    """Where two rollouts first differ (compared exactly), or None if they are identical."""
    for x, y in zip(a, b, strict=False):
        for name in _FIELDS:
            u, v = getattr(x, name), getattr(y, name)
            if not data_equivalence(u, v, exact=True):
                return (
                    f"at {x.where()}, `{name}` differs: {names[0]} {_short(u)} ({type(u).__name__}), "
                    f"{names[1]} {_short(v)} ({type(v).__name__})"
                )
    if len(a) != len(b):
        return f"the rollouts have {len(a)} and {len(b)} calls"
    return None


def _closing(*envs: gym.Env[Any, Any]) -> None:
    for env in envs:
        env.close()


# -- the spy between the base env and the wrapper -----------------------------------------------------------


@dataclass
class _InnerCall:
    """One call the wrapper under test made to the env below it."""

    kind: str
    seed: Any = None
    options: Any = None
    action: Any = None
    obs: Any = None
    obs_copy: Any = None
    rng_state: Any = None


def _rng_state(env: gym.Env[Any, Any]) -> Any:
    # Gymnasium's private `_np_random`: its public `np_random` would seed a generator where there is none.
    rng = getattr(env.unwrapped, "_np_random", None)
    return None if rng is None else copy.deepcopy(rng.bit_generator.state)


class _Spy(gym.Wrapper[Any, Any, Any, Any]):
    """Records what the wrapper above sends to the env below and what it gets back, changing nothing."""

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        super().__init__(env)
        self.calls: list[_InnerCall] = []
        self._seen = 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        call = _InnerCall("reset", seed=seed, options=copy.deepcopy(options))
        obs, info = self.env.reset(seed=seed, options=options)
        call.obs, call.obs_copy, call.rng_state = obs, copy.deepcopy(obs), _rng_state(self.env)
        self.calls.append(call)
        return obs, info

    def step(self, action: Any) -> tuple[Any, Any, bool, bool, dict[str, Any]]:
        call = _InnerCall("step", action=copy.deepcopy(action))
        obs, reward, terminated, truncated, info = self.env.step(action)
        call.obs, call.obs_copy, call.rng_state = obs, copy.deepcopy(obs), _rng_state(self.env)
        self.calls.append(call)
        return obs, reward, terminated, truncated, info

    def new_calls(self) -> list[_InnerCall]:
        """The calls made since the last time this was asked."""
        calls = self.calls[self._seen :]
        self._seen = len(self.calls)
        return calls


def _spied(env_fn: EnvFn, wrap_fn: WrapFn) -> tuple[_Spy, gym.Env[Any, Any]]:
    spy = _Spy(env_fn())
    return spy, wrap_fn(spy)


# -- the checks ---------------------------------------------------------------------------------------------


def check_gymnasium_env(env_fn: EnvFn, wrap_fn: WrapFn) -> None:
    """Runs Gymnasium's ``check_env`` on the wrapped env (render checks skipped).

    Args:
        env_fn: builds a fresh base env.
        wrap_fn: wraps an env in the stack under test.

    Raises:
        ContractError: Gymnasium's checker found a fault.
    """
    from gymnasium.utils.env_checker import check_env

    env = _build(env_fn, wrap_fn)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*is different from the unwrapped version.*")
            # Its close check rebuilds the env from its spec, which third-party wrappers cannot always do (that
            # is check_spec_roundtrip's to test): the stack is closed twice here instead.
            check_env(env, skip_render_check=True, skip_close_check=True)
    except AssertionError as exc:
        raise ContractError(f"check_gymnasium_env: gymnasium's check_env failed on {env}: {exc}") from exc
    finally:
        env.close()
    fresh = _build(env_fn, wrap_fn)
    fresh.close()
    try:
        fresh.close()
    except Exception as exc:
        raise ContractError(f"check_gymnasium_env: closing {fresh} a second time raised {exc!r}") from exc


def check_sb3_env(env_fn: EnvFn, wrap_fn: WrapFn) -> None:
    """Runs Stable-Baselines3's ``check_env`` on the wrapped env.

    Args:
        env_fn: builds a fresh base env.
        wrap_fn: wraps an env in the stack under test.

    Raises:
        ContractError: SB3's checker found a fault.
        MissingExtra: Stable-Baselines3 is not installed.
    """
    require("stable_baselines3", purpose="check_sb3_env")
    from stable_baselines3.common.env_checker import check_env

    env = _build(env_fn, wrap_fn)
    try:
        check_env(env, warn=True, skip_render_check=True)
    except AssertionError as exc:
        raise ContractError(f"check_sb3_env: stable_baselines3's check_env failed on {env}: {exc}") from exc
    finally:
        env.close()


def check_determinism(env_fn: EnvFn, wrap_fn: WrapFn, *, seed: int = 0, steps: int = 100) -> None:
    """Two stacks reset with the same seed give bit-identical rollouts; another seed gives another rollout.

    Both stacks take the same ``steps`` actions, drawn from the action space with a generator seeded with
    ``seed``; an episode that ends is followed by ``reset()`` without a seed. Observations, rewards,
    ``terminated``, ``truncated`` and infos are compared with Gymnasium's ``data_equivalence(exact=True)``.

    Args:
        env_fn: builds a fresh base env.
        wrap_fn: wraps an env in the stack under test.
        seed: the seed given to the first reset.
        steps: the number of steps.

    Raises:
        ContractError: the same seed gave different rollouts, or ``seed`` and ``seed + 1`` the same one.
    """
    first, second, third = (_build(env_fn, wrap_fn) for _ in range(3))
    try:
        actions = _actions(first.action_space, seed, steps)
        a = _rollout(first, seed, actions)
        b = _rollout(second, seed, actions)
        c = _rollout(third, seed + 1, actions)
    finally:
        _closing(first, second, third)
    difference = _difference(a, b)
    if difference is not None:
        raise ContractError(f"check_determinism: two stacks reset with seed={seed} diverge {difference}")
    if _difference(a, c) is None:
        raise ContractError(
            f"check_determinism: rollouts reset with seed={seed} and seed={seed + 1} are identical over {steps} "
            "steps; the seed given to reset does not reach the env or the wrappers"
        )


def _obs_fault(obs: Any, space: gym.Space[Any]) -> str | None:
    if isinstance(space, gym.spaces.Box):
        if not isinstance(obs, np.ndarray):
            return f"is a {type(obs).__name__}, not a numpy array"
        if obs.dtype != space.dtype or obs.shape != space.shape:
            return (
                f"has dtype {obs.dtype} and shape {obs.shape}; "
                f"the space has dtype {space.dtype} and shape {space.shape}"
            )
    if not space.contains(obs):
        return f"is not in {space}"
    return None


def check_spaces(env_fn: EnvFn, wrap_fn: WrapFn, *, seed: int = 0, steps: int = 100) -> None:
    """Every observation lies in the wrapped env's observation space, every executed action in the env's.

    Observations of Box spaces must also have the space's exact dtype and shape. Actions are checked where
    they reach the env below the wrapper (a recording layer is put between the two).

    Args:
        env_fn: builds a fresh base env.
        wrap_fn: wraps an env in the stack under test.
        seed: the seed given to the first reset.
        steps: the number of steps.

    Raises:
        ContractError: an observation or an executed action lies outside its space.
    """
    spy, env = _spied(env_fn, wrap_fn)
    inner_action_space = spy.action_space
    try:
        for event in _run(env, seed, _actions(env.action_space, seed, steps)):
            fault = _obs_fault(event.obs, env.observation_space)
            if fault is not None:
                raise ContractError(
                    f"check_spaces: the observation returned by {event.where()} {fault}: {_short(event.obs)}"
                )
            for call in spy.new_calls():
                if call.kind == "step" and not inner_action_space.contains(call.action):
                    raise ContractError(
                        f"check_spaces: at {event.where()}, the wrapper sent the env the action "
                        f"{_short(call.action)} ({type(call.action).__name__}), which is not in the env's action "
                        f"space {inner_action_space} (the agent's action was {_short(event.action)})"
                    )
    finally:
        env.close()


@dataclass
class _Watched:
    """An array handed out during a rollout, with a copy of what it held then."""

    what: str
    value: Any
    copy: Any


def check_no_mutation(env_fn: EnvFn, wrap_fn: WrapFn, *, seed: int = 0, steps: int = 100) -> None:
    """No array is edited in place across the wrapper, in either direction.

    The wrapper never modifies the observations the env returns nor the caller's actions: each is compared
    with a copy taken when it was handed over, after every call to the wrapper and for the rest of the rollout,
    so a wrapper that keeps a reference and edits it later is caught too. (An observation array that the env
    itself returns again, reusing its buffer, stops being watched.) And the wrapper keeps no reference to the
    caller's actions that the caller's own later edits would change: a caller that writes every action into
    one reused array gets the same rollout as one that passes fresh arrays.

    Args:
        env_fn: builds a fresh base env.
        wrap_fn: wraps an env in the stack under test.
        seed: the seed given to the first reset.
        steps: the number of steps.

    Raises:
        ContractError: an array was modified in place.
    """
    spy, env = _spied(env_fn, wrap_fn)
    watched: list[_Watched] = []
    try:
        actions = _actions(env.action_space, seed, steps)
        for event in _run(env, seed, actions):
            for call in spy.new_calls():
                watched = [w for w in watched if w.value is not call.obs]
                watched.append(
                    _Watched(f"the observation the env returned at {event.where()}", call.obs, call.obs_copy)
                )
            if event.kind == "step":
                watched.append(
                    _Watched(f"the caller's action of {event.where()}", event.action, actions[event.step - 1])
                )
            for w in watched:
                if not data_equivalence(w.value, w.copy, exact=True):
                    raise ContractError(
                        f"check_no_mutation: by the end of {event.where()}, the wrapper had modified in place "
                        f"{w.what}: it was {_short(w.copy)}, it is now {_short(w.value)}"
                    )
    finally:
        env.close()
    if not actions or not isinstance(actions[0], np.ndarray):
        return
    fresh, reused = _build(env_fn, wrap_fn), _build(env_fn, wrap_fn)
    try:
        difference = _difference(
            _rollout(fresh, seed, actions), _rollout(reused, seed, actions, one_buffer=True), ("fresh", "reused")
        )
    finally:
        _closing(fresh, reused)
    if difference is not None:
        raise ContractError(
            "check_no_mutation: a caller that writes its actions into one reused array gets another rollout than "
            f"one that passes fresh arrays (the wrapper keeps a reference to the caller's action) {difference}"
        )


def check_env_rng_untouched(env_fn: EnvFn, wrap_fn: WrapFn, *, seed: int = 0, steps: int = 100) -> None:
    """The env's own ``np_random`` advances exactly as a bare env's would, given the calls it received.

    The calls that reached the env below the wrapper (resets with their seeds, steps with the executed
    actions) are replayed on a bare env; the states of the two generators must match after every call and at
    the end. The resets must also carry the caller's seeds. A wrapper that draws from, or reseeds, the env's
    generator would make a perturbed run and its same-seed counterfactual see different env randomness.

    Args:
        env_fn: builds a fresh base env.
        wrap_fn: wraps an env in the stack under test.
        seed: the seed given to the first reset.
        steps: the number of steps.

    Raises:
        ContractError: the env's generator was drawn from or reseeded, or the caller's seeds were changed.
    """
    spy, env = _spied(env_fn, wrap_fn)
    try:
        caller_resets = [
            (seed if event.step == 0 else None)
            for event in _run(env, seed, _actions(env.action_space, seed, steps))
            if event.kind == "reset"
        ]
        final_state = _rng_state(spy)
    finally:
        env.close()
    env_resets = [call.seed for call in spy.calls if call.kind == "reset"]
    if env_resets != caller_resets:
        raise ContractError(
            f"check_env_rng_untouched: the caller reset with seeds {caller_resets}, but the env received resets with "
            f"seeds {env_resets}"
        )
    bare = env_fn()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the bare env may be stepped past its own episode's end
            for i, call in enumerate(spy.calls):
                if call.kind == "reset":
                    bare.reset(seed=call.seed, options=call.options)
                else:
                    bare.step(call.action)
                if _rng_state(bare) != call.rng_state:
                    raise ContractError(
                        f"check_env_rng_untouched: after call {i} to the env ({call.kind}), its np_random is not where "
                        "a bare env's is after the same calls; the wrapper draws from or reseeds the env's generator"
                    )
            if _rng_state(bare) != final_state:
                raise ContractError(
                    "check_env_rng_untouched: at the end of the rollout, the env's np_random is not where a bare env's "
                    "is after the same calls; the wrapper draws from or reseeds the env's generator"
                )
    finally:
        bare.close()


_VECTOR_FIELDS = ("observations", "rewards", "terminations", "truncations")
#: What a vector env returns at one time: observations, then rewards, terminations and truncations (None at reset).
_Batch = tuple[Any, Any, Any, Any]


def _batch(space: gym.Space[Any], items: list[Any]) -> Any:
    """``items`` batched as a vector env batches them."""
    out: Any = create_empty_array(space, len(items))
    return concatenate(space, items, out)


def _single_rollouts(
    env_fn: EnvFn, wrap_fn: WrapFn, seed: int, batches: Sequence[Any], action_space: gym.Space[Any], num_envs: int
) -> list[_Batch]:
    """What a vector env with autoreset "next step" should return, computed with ``num_envs`` single envs."""
    envs = [_build(env_fn, wrap_fn) for _ in range(num_envs)]
    try:
        space = envs[0].observation_space
        first = [env.reset(seed=seed + i)[0] for i, env in enumerate(envs)]
        out: list[_Batch] = [(_batch(space, first), None, None, None)]
        done = [False] * num_envs
        for batch in batches:
            obs: list[Any] = []
            rewards: list[Any] = []
            terminated: list[Any] = []
            truncated: list[Any] = []
            for i, (env, action) in enumerate(zip(envs, iterate(action_space, batch), strict=True)):
                r: Any
                if done[i]:
                    o, _ = env.reset()
                    r, term, trunc = 0.0, False, False
                else:
                    o, r, term, trunc, _ = env.step(action)
                obs.append(o)
                rewards.append(r)
                terminated.append(term)
                truncated.append(trunc)
                done[i] = bool(term or trunc)
            out.append(
                (
                    _batch(space, obs),
                    np.array(rewards, dtype=np.float64),
                    np.array(terminated, dtype=np.bool_),
                    np.array(truncated, dtype=np.bool_),
                )
            )
        return out
    finally:
        _closing(*envs)


def _vector_rollout(vec: gym.vector.VectorEnv[Any, Any, Any], seed: int, batches: Sequence[Any]) -> list[_Batch]:
    obs, _ = vec.reset(seed=seed)
    out: list[_Batch] = [(copy.deepcopy(obs), None, None, None)]
    for batch in batches:
        obs, rewards, terminated, truncated, _ = vec.step(copy.deepcopy(batch))
        out.append((copy.deepcopy(obs), np.asarray(rewards, dtype=np.float64), terminated, truncated))
    return out


def check_vector_equivalence(
    env_fn: EnvFn,
    wrap_fn: WrapFn,
    *,
    seed: int = 0,
    steps: int = 100,
    num_envs: int = 2,
    async_vector: bool = True,
) -> None:
    """A vector env of wrapped envs returns what the same wrapped envs return one by one.

    ``SyncVectorEnv`` (and ``AsyncVectorEnv`` unless ``async_vector`` is False) of ``num_envs`` wrapped envs,
    reset with ``seed``, must give the same observations, rewards, ``terminated`` and ``truncated`` as
    ``num_envs`` single wrapped envs reset with ``seed + i``, given the same per-env actions, with Gymnasium's
    default autoreset (an ended sub-env is reset by the next step, which returns reward 0).

    Args:
        env_fn: builds a fresh base env.
        wrap_fn: wraps an env in the stack under test.
        seed: the seed given to the vector env's reset.
        steps: the number of vector steps.
        num_envs: the number of sub-envs.
        async_vector: also check ``AsyncVectorEnv`` (which starts worker processes, so it is slower).

    Raises:
        ContractError: a vector env and the single envs disagree.
    """
    make = functools.partial(_build, env_fn, wrap_fn)
    kinds: list[type[gym.vector.VectorEnv[Any, Any, Any]]] = [gym.vector.SyncVectorEnv]
    if async_vector:
        kinds.append(gym.vector.AsyncVectorEnv)
    expected: list[Any] | None = None
    for kind in kinds:
        vec = kind([make] * num_envs)  # type: ignore[call-arg]
        try:
            batches = _actions(vec.action_space, seed, steps)
            if expected is None:
                expected = _single_rollouts(env_fn, wrap_fn, seed, batches, vec.action_space, num_envs)
            got = _vector_rollout(vec, seed, batches)
        finally:
            vec.close()
        for t, (want, have) in enumerate(zip(expected, got, strict=True)):
            for name, u, v in zip(_VECTOR_FIELDS, want, have, strict=True):
                if u is not None and not data_equivalence(u, v, exact=True):
                    raise ContractError(
                        f"check_vector_equivalence: {kind.__name__} of {num_envs} envs reset with seed={seed} and "
                        f"{num_envs} single envs reset with seeds {seed}..{seed + num_envs - 1} give different "
                        f"{name} after {t} steps: single {_short(u)}, vector {_short(v)}"
                    )


def check_spec_roundtrip(env_fn: EnvFn, wrap_fn: WrapFn, *, seed: int = 0, steps: int = 100) -> None:
    """``gym.make(env.spec)`` rebuilds the wrapped env: equal spec, identical seeded rollout, also via JSON.

    Needs a base env built with ``gym.make`` (so that it has a spec) and wrappers that record their
    constructor arguments (``gymnasium.utils.RecordConstructorArgs``).

    Args:
        env_fn: builds a fresh base env with ``gym.make``.
        wrap_fn: wraps an env in the stack under test.
        seed: the seed given to the first reset.
        steps: the number of steps.

    Raises:
        ContractError: the spec is missing, does not rebuild, or rebuilds another env.
    """
    env = _build(env_fn, wrap_fn)
    built: list[gym.Env[Any, Any]] = [env]
    try:
        spec = env.spec
        if spec is None:
            raise ContractError(
                f"check_spec_roundtrip: {env} has no spec; build the base env with gym.make to check its spec"
            )
        for wrapper in spec.additional_wrappers:
            if wrapper.kwargs is None:
                raise ContractError(
                    f"check_spec_roundtrip: the wrapper {wrapper.name} ({wrapper.entry_point}) does not record its "
                    "constructor arguments (gymnasium.utils.RecordConstructorArgs), so env.spec cannot rebuild it"
                )
        try:
            text = spec.to_json()
            rebuilt = gym.make(spec)
            built.append(rebuilt)
            from_json = gym.make(EnvSpec.from_json(text))
            built.append(from_json)
        except Exception as exc:
            raise ContractError(f"check_spec_roundtrip: gym.make(env.spec) failed for {spec}: {exc!r}") from exc
        if rebuilt.spec != spec:
            raise ContractError(
                f"check_spec_roundtrip: gym.make(env.spec) built an env with another spec:\n"
                f"    original {spec}\n    rebuilt  {rebuilt.spec}"
            )
        if from_json.spec is None or from_json.spec.to_json() != text:
            raise ContractError(
                f"check_spec_roundtrip: the spec read back from JSON built an env with another spec:\n"
                f"    original {text}\n    rebuilt  {from_json.spec and from_json.spec.to_json()}"
            )
        actions = _actions(env.action_space, seed, steps)
        original = _rollout(env, seed, actions)
        for name, other in (("gym.make(env.spec)", rebuilt), ("the spec read back from JSON", from_json)):
            difference = _difference(original, _rollout(other, seed, actions), ("original", "rebuilt"))
            if difference is not None:
                raise ContractError(
                    f"check_spec_roundtrip: {name} rebuilds an env whose rollout with seed={seed} differs {difference}"
                )
    finally:
        _closing(*built)


#: The checks :func:`check_wrapper` runs, in order.
CHECKS: tuple[str, ...] = (
    "check_gymnasium_env",
    "check_sb3_env",
    "check_determinism",
    "check_spaces",
    "check_no_mutation",
    "check_env_rng_untouched",
    "check_vector_equivalence",
    "check_spec_roundtrip",
)


def _has_spec(env_fn: EnvFn) -> bool:
    env = env_fn()
    try:
        return env.spec is not None
    finally:
        env.close()


def check_wrapper(
    env_fn: EnvFn,
    wrap_fn: WrapFn,
    *,
    seed: int = 0,
    steps: int = 100,
    vector: bool = True,
    async_vector: bool = True,
    spec: bool = True,
    num_envs: int = 2,
) -> list[str]:
    """Runs every contract check on a wrapper stack; returns the names of the checks that ran.

    :func:`check_sb3_env` runs when Stable-Baselines3 is installed, :func:`check_spec_roundtrip` when ``spec``
    is True and the base env has a spec (it was built with ``gym.make``).

    Args:
        env_fn: builds a fresh base env, e.g. ``lambda: gym.make("CartPole-v1")``.
        wrap_fn: wraps an env in the stack under test, e.g. ``lambda env: rw.ObservationNoise(env, std=0.1)``.
        seed: the seed given to the first reset of every rollout.
        steps: the number of steps of every rollout.
        vector: run :func:`check_vector_equivalence`.
        async_vector: include ``AsyncVectorEnv`` in it (it starts worker processes, so it is slower).
        spec: run :func:`check_spec_roundtrip` where the base env has a spec.
        num_envs: the number of sub-envs of the vector envs.

    Returns:
        The names of the checks that ran, in the order of :data:`CHECKS`.

    Raises:
        ContractError: a check failed.

    Example:
        >>> import gymnasium as gym, rlwrappers as rw
        >>> from rlwrappers.testing import check_wrapper
        >>> make = lambda: gym.make("CartPole-v1")
        >>> ran = check_wrapper(make, lambda env: rw.ObservationNoise(env, std=0.1), steps=20, async_vector=False)
        >>> "check_determinism" in ran and "check_spec_roundtrip" in ran
        True
    """
    rollout = {"seed": seed, "steps": steps}
    ran: list[str] = []
    check_gymnasium_env(env_fn, wrap_fn)
    ran.append("check_gymnasium_env")
    if importlib.util.find_spec("stable_baselines3") is not None:
        check_sb3_env(env_fn, wrap_fn)
        ran.append("check_sb3_env")
    for check in (check_determinism, check_spaces, check_no_mutation, check_env_rng_untouched):
        check(env_fn, wrap_fn, **rollout)
        ran.append(check.__name__)
    if vector:
        check_vector_equivalence(env_fn, wrap_fn, **rollout, num_envs=num_envs, async_vector=async_vector)
        ran.append("check_vector_equivalence")
    if spec and _has_spec(env_fn):
        check_spec_roundtrip(env_fn, wrap_fn, **rollout)
        ran.append("check_spec_roundtrip")
    return ran
