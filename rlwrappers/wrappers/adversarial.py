"""Adversarial observations: gradient attacks (FGSM, PGD, Carlini-Wagner) against the agent that acts.

An attack perturbs each observation so that the agent's network moves away from the action it would take
on the clean one (untargeted; seed 001 Section 5.1 and Appendix C.1 attack Atari agents with FGSM, seed 004
compares natural corruptions with Carlini-Wagner). It needs the agent: pass ``agent=`` to the wrapper, or
attach it with :func:`rlwrappers.attach` (the evaluation runner does this). Units, bounds and the uint8
re-quantization are those of :class:`Domain` and :mod:`rlwrappers.functional.attacks`: image spaces in [0, 1]
pixel scale, other Box spaces in their own units. FGSM's and PGD's ``eps`` (and PGD's ``alpha``) take a number,
or one value per observation dimension (``"fgsm(eps=[0.01, 0.02, 0.1, 0.3])"`` on CartPole), in the same units;
such a list broadcasts against the observation's last axis, like ``obs_noise``'s ``std``.

**Where to attack.** This wrapper attacks the observation at its place in the env's wrapper stack. That is
exactly what the network sees only when everything between this place and the network is inside the env:
put the Atari preprocessing and the frame stack *inside* (``FrameStackObservation`` under the attack). An
agent whose frames are stacked outside the env, by a vector env (SB3's ``VecFrameStack``), sees a stack of
four observations each attacked separately against a single-frame input the network never sees; attack
those at the vector level with :class:`rlwrappers.wrappers.vector.Attack` or
:class:`rlwrappers.wrappers.sb3.AttackVecEnv`.

**What the log holds.** An attack's record describes a decision, so it is reported with the ``step`` call
that acts on the attacked observation (the step row of a :class:`rlwrappers.Recorder` log): ``clean_action``
(the greedy action on the clean observation, from the attack's own forward pass), ``action`` (what the
agent then did, taken from that step call: no extra forward pass), ``flipped`` (whether they differ;
discrete actions only), and ``linf`` and ``l2``, the size of the perturbation the agent received, after
re-quantization, in attack units. The final observation of an episode is attacked too, but no decision
follows it, so no row records it. For stochastic agents ``flipped`` also counts actions that sampling
changed: measure flip rates on deterministic agents.
"""

from __future__ import annotations

import copy
import functools
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray
from typing_extensions import override

from rlwrappers import _check, structure
from rlwrappers._optional import require
from rlwrappers.agents import Agent, adapt
from rlwrappers.agents.protocol import fits
from rlwrappers.core import Record, SingleLayer, register_wrapper
from rlwrappers.error import IncompatibleSpace, InvalidArgument, NotDifferentiable
from rlwrappers.functional import attacks
from rlwrappers.functional.attacks import PIXEL_SCALE
from rlwrappers.schedule import Schedule
from rlwrappers.wrappers.observation import Keys, ObservationPerturbation, check_scale_shape

if TYPE_CHECKING:
    import torch

__all__ = [
    "AttackPerturbation",
    "Domain",
    "Entries",
    "AttackResult",
    "CarliniWagner",
    "CarliniWagnerPerturbation",
    "FGSM",
    "FGSMPerturbation",
    "PGD",
    "PGDPerturbation",
]


@dataclass(frozen=True)
class Domain:
    """Where an observation space is attacked: its scale, its bounds in attack units, and its re-quantization.

    Attributes:
        scale: observation units per attack unit (255 for images, 1 otherwise).
        low: the space's lower bounds in attack units (float32, the observation's shape).
        high: the upper bounds.
        integer: whether observations are re-quantized to whole levels.
        dtype: the observation dtype.
        space_low: the space's lower bounds in observation units, exactly (float64; float32 rounds a float64
            space's bounds, which attacks then clip to).
        space_high: its upper bounds.
    """

    scale: float
    low: NDArray[np.float32]
    high: NDArray[np.float32]
    integer: bool
    dtype: np.dtype[Any]
    space_low: NDArray[np.float64] | None = None
    space_high: NDArray[np.float64] | None = None

    @classmethod
    def of(cls, space: gym.Space[Any], quantize: bool = True) -> Domain:
        """The domain of a Box space; raises :class:`IncompatibleSpace` for any other space.

        With ``quantize=False`` an integer space's observations are delivered as float32, unrounded (see
        :meth:`observation_space`).
        """
        if not isinstance(space, gym.spaces.Box):
            raise IncompatibleSpace(f"gradient attacks need a Box observation space, received {space}")
        integer = space.dtype.kind in "iub"
        pixels = space.dtype == np.uint8 and bool(np.all(space.low == 0)) and bool(np.all(space.high == 255))
        scale = PIXEL_SCALE if pixels else 1.0
        low = (space.low.astype(np.float64) / scale).astype(np.float32)
        high = (space.high.astype(np.float64) / scale).astype(np.float32)
        dtype = np.dtype(space.dtype) if quantize or not integer else np.dtype(np.float32)
        exact = (space.low.astype(np.float64), space.high.astype(np.float64))
        return cls(scale, low, high, integer and quantize, dtype, *exact)

    def observation_space(self, space: gym.spaces.Box) -> gym.spaces.Box:
        """The space of delivered observations: ``space``, or its float32 twin for an unrounded integer space."""
        if space.dtype == self.dtype:
            return space
        return gym.spaces.Box(space.low.astype(np.float32), space.high.astype(np.float32), dtype=np.float32)

    @property
    def pixels(self) -> bool:
        """Whether this is an image space attacked in [0, 1] pixel scale."""
        return self.scale == PIXEL_SCALE

    @property
    def quantum(self) -> float:
        """The smallest change an observation can hold, in attack units (0 for float spaces)."""
        return 1.0 / self.scale if self.integer else 0.0

    def to_attack(self, obs: NDArray[Any]) -> torch.Tensor:
        """A batch of observations as a float32 tensor in attack units."""
        torch = require("torch", purpose="gradient attacks")
        x = torch.as_tensor(np.asarray(obs), dtype=torch.float32)
        return x / self.scale if self.scale != 1.0 else x

    def to_observation(self, z: torch.Tensor) -> NDArray[Any]:
        """A batch in attack units back to observations: scaled, rounded if integer, inside the bounds."""
        x = z.detach().numpy().astype(np.float64) * self.scale
        if self.integer:
            x = np.rint(x)
        if self.space_low is None or self.space_high is None:
            np.clip(x, self.low.astype(np.float64) * self.scale, self.high.astype(np.float64) * self.scale, out=x)
        else:
            np.clip(x, self.space_low, self.space_high, out=x)
        return x.astype(self.dtype)

    def bounds(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The bounds as tensors that broadcast against a batch of observations."""
        torch = require("torch")
        return torch.from_numpy(self.low), torch.from_numpy(self.high)

    def budget(self, value: float | tuple[float, ...]) -> attacks.Budget:
        """A checked budget as the functional attacks take it: a float, or a float64 array of one per dimension."""
        return value if isinstance(value, float) else np.asarray(value, dtype=np.float64)

    def network_input(self, z: torch.Tensor, clean: Any) -> Any:
        """What the agent's network receives for a batch ``z`` in attack units: the observations in their units."""
        return z * self.scale

    def deliver(self, z: torch.Tensor, obs: NDArray[Any]) -> NDArray[Any]:
        """The observations delivered for ``z``, the attacked batch of ``obs``: :meth:`to_observation`."""
        return self.to_observation(z)

    def sizes(self, delivered: NDArray[Any], obs: NDArray[Any]) -> dict[str, tuple[NDArray[Any], NDArray[Any]]]:
        """The L-inf and L2 size of each delivered perturbation, in attack units: ``{"": (linf, l2)}``."""
        return {"": _sizes((delivered.astype(np.float64) - obs) / self.scale)}

    def parts(self) -> dict[str, Domain]:
        """The domain of each part attacked: here the one observation, under the key ""."""
        return {"": self}


def _sizes(delta: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The L-inf and L2 norms of each row of a batch of changes."""
    flat = np.abs(delta.reshape(len(delta), -1))
    return flat.max(axis=1), np.sqrt((flat * flat).sum(axis=1))


@dataclass(frozen=True)
class Entries:
    """Where chosen entries of a Dict or Tuple space are attacked: each one's :class:`Domain`, laid end to end.

    An attack works on one float32 vector per observation, the chosen entries flattened one after the other in
    their attack units; the agent's network receives the whole observation, with the other entries as they were.
    A budget (``eps``) holds in each entry's own units: a number, or one per dimension that broadcasts against
    every entry.

    Attributes:
        keys: the keys of the entries attacked, in the space's order.
        paths: their paths (:func:`rlwrappers.structure.path`).
        domains: their domains.
        space: the whole observation space.
    """

    keys: tuple[str, ...]
    paths: tuple[structure.Path, ...]
    domains: tuple[Domain, ...]
    space: gym.Space[Any]
    _ends: tuple[int, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_ends", tuple(np.cumsum([d.low.size for d in self.domains]).tolist()))

    @classmethod
    def of(cls, space: gym.Space[Any], keys: tuple[str, ...], quantize: bool = True) -> Entries:
        """The entries ``keys`` of a Dict or Tuple space; raises :class:`IncompatibleSpace` for one not a Box."""
        paths = tuple(structure.path(space, key) for key in keys)
        domains = []
        for key, steps in zip(keys, paths, strict=True):
            try:
                domains.append(Domain.of(structure.get(space, steps), quantize))
            except IncompatibleSpace as exc:
                raise IncompatibleSpace(f"the entry {key!r}: {exc}") from None
        return cls(keys, paths, tuple(domains), space)

    @functools.cached_property
    def access(self) -> structure.Access:
        """Reads and replaces the attacked entries of observations and batches."""
        return structure.Access(self.paths)

    @functools.cached_property
    def low(self) -> NDArray[np.float32]:
        """The lower bounds of the vector, in attack units."""
        return np.concatenate([d.low.ravel() for d in self.domains])

    @functools.cached_property
    def high(self) -> NDArray[np.float32]:
        """The upper bounds of the vector, in attack units."""
        return np.concatenate([d.high.ravel() for d in self.domains])

    def _slices(self) -> list[slice]:
        return [slice(start, end) for start, end in zip((0, *self._ends), self._ends, strict=False)]

    def to_attack(self, obs: Any) -> torch.Tensor:
        """A batch of structured observations as the vectors of their chosen entries, in attack units."""
        torch = require("torch", purpose="gradient attacks")
        parts = [d.to_attack(x) for d, x in zip(self.domains, self.access.gather(obs), strict=True)]
        return torch.cat([part.reshape(len(part), -1) for part in parts], dim=1)

    def _split(self, z: torch.Tensor) -> list[torch.Tensor]:
        """A batch of vectors as the batches of each entry, in attack units and the entries' shapes."""
        shapes = [d.low.shape for d in self.domains]
        return [z[:, part].reshape(len(z), *shape) for part, shape in zip(self._slices(), shapes, strict=True)]

    def network_input(self, z: torch.Tensor, clean: Any) -> Any:
        """The whole observations the network receives: ``clean`` (tensors) with the entries of ``z`` in place."""
        return self.access.scatter(clean, [x * d.scale for x, d in zip(self._split(z), self.domains, strict=True)])

    def deliver(self, z: torch.Tensor, obs: Any) -> Any:
        """The observations delivered: ``obs`` with each attacked entry scaled, re-quantized and inside its bounds."""
        return self.access.scatter(
            obs, [d.to_observation(x) for x, d in zip(self._split(z), self.domains, strict=True)]
        )

    def sizes(self, delivered: Any, obs: Any) -> dict[str, tuple[NDArray[Any], NDArray[Any]]]:
        """The L-inf and L2 size of each delivered perturbation: of the whole (key "") and of each entry."""
        deltas = {}
        pairs = zip(self.access.gather(delivered), self.access.gather(obs), strict=True)
        for key, d, (after, before) in zip(self.keys, self.domains, pairs, strict=True):
            deltas[key] = ((after.astype(np.float64) - before) / d.scale).reshape(len(before), -1)
        out = {"": _sizes(np.concatenate(list(deltas.values()), axis=1))}
        out.update({key: _sizes(delta) for key, delta in deltas.items()})
        return out

    def bounds(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The bounds of the vector as tensors."""
        torch = require("torch")
        return torch.from_numpy(self.low), torch.from_numpy(self.high)

    def budget(self, value: float | tuple[float, ...]) -> attacks.Budget:
        """A budget in each entry's units: a float, or one per dimension of the vector (broadcast per entry)."""
        if isinstance(value, float):
            return value
        per = np.asarray(value, dtype=np.float64)
        return np.concatenate([np.broadcast_to(per, d.low.shape).ravel() for d in self.domains])

    def observation_space(self, space: gym.Space[Any]) -> gym.Space[Any]:
        """The space of delivered observations: each entry's space as its domain delivers it."""
        assert isinstance(space, (gym.spaces.Dict, gym.spaces.Tuple))
        changed = {
            p: d.observation_space(structure.get(space, p)) for p, d in zip(self.paths, self.domains, strict=True)
        }
        return structure.replace_space(space, changed)

    def parts(self) -> dict[str, Domain]:
        """The domain of each entry attacked, by key."""
        return dict(zip(self.keys, self.domains, strict=True))


@dataclass(frozen=True)
class AttackResult:
    """What an attack did to a batch of observations.

    Attributes:
        observations: the adversarial observations the agent receives (re-quantized, inside the space).
        adversarial: the adversarial batch in attack units, before re-quantization.
        clean_action: the agent's greedy action on each clean observation (discrete), or its deterministic
            action (continuous).
        linf: the L-inf size of each delivered perturbation, in attack units.
        l2: its L2 size, in attack units.
        entries: for chosen entries of a Dict or Tuple observation, each one's ``(linf, l2)`` by key.
    """

    observations: Any
    adversarial: torch.Tensor
    clean_action: NDArray[Any]
    linf: NDArray[np.float64]
    l2: NDArray[np.float64]
    entries: dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]] = field(default_factory=dict)


@dataclass(kw_only=True)
class AttackPerturbation(ObservationPerturbation):
    """Base of the gradient attacks: binding to a space, attaching the agent, batching and recording.

    On a Dict or Tuple observation it attacks the entries ``keys`` names (default: every float sensor entry, not
    ``desired_goal``) through the network's gradient with respect to each (:class:`Entries`), and records the
    size of the change of each entry too: ``linf[<key>]`` and ``l2[<key>]``.
    """

    needs_agent = True
    records_decision = True
    step_fields = {"clean_action": "action", "action": "action", "flipped": "bool", "linf": "float64", "l2": "float64"}
    #: Whether the attack works on continuous actions (otherwise it needs logits or q-values).
    continuous: ClassVar[bool] = False
    #: The parameters that are budgets in attack units: each a number, or one per observation dimension.
    budgets: ClassVar[tuple[str, ...]] = ()
    if TYPE_CHECKING:  # each attack declares it last among its parameters
        quantize: bool

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.quantize, bool):
            raise InvalidArgument(f"`quantize` must be a bool, received {self.quantize!r}")
        self._agent: Agent | None = None
        self._domain: Domain | Entries | None = None
        self._clean: Any = None  # the clean batch as tensors, while a structured one is attacked
        self._observation_space: gym.Space[Any] | None = None
        self._action_space: gym.Space[Any] | None = None

    # -- binding ----------------------------------------------------------------------------------------
    @override
    def bind(self, env: gym.Env[Any, Any], observation_space: gym.Space[Any], action_space: gym.Space[Any]) -> None:
        self.bind_spaces(observation_space, action_space)

    def bind_spaces(self, observation_space: gym.Space[Any], action_space: gym.Space[Any]) -> None:
        """Checks the spaces of one observation and one action, and sets the attack's domain."""
        self.chosen = structure.choose(observation_space, self.keys, self.acts_on, self.name)
        try:
            if self.chosen is None:
                self._domain = Domain.of(observation_space, self.quantize)
            else:
                self._domain = Entries.of(observation_space, self.chosen, self.quantize)
        except IncompatibleSpace as exc:
            raise IncompatibleSpace(f"{self.name}: {exc}") from None
        for name in self.budgets:
            budget = getattr(self, name)
            if budget is not None:
                for key, part in self._domain.parts().items():
                    check_scale_shape(name if not key else f"{name}` (entry {key!r})`", budget, part.low.shape)
        if not self.continuous and not isinstance(action_space, gym.spaces.Discrete):
            raise IncompatibleSpace(
                f"{self.name} needs discrete actions (it pushes away from the agent's action scores), received"
                f" {action_space}; use pgd(random_start=True) for continuous actions"
            )
        if not isinstance(action_space, (gym.spaces.Discrete, gym.spaces.Box)):
            raise IncompatibleSpace(f"{self.name} needs Discrete or Box actions, received {action_space}")
        self._observation_space, self._action_space = observation_space, action_space
        for part in self._domain.parts().values():
            self._warn_if_erased(part)
        if self._agent is not None:
            self._check_agent(self._agent)

    def _warn_if_erased(self, domain: Domain) -> None:
        """Warns when the re-quantization of an integer space erases every perturbation this attack can make."""

    @override
    def observation_space(self, space: gym.Space[Any]) -> gym.Space[Any]:
        return self.domain.observation_space(space)  # type: ignore[arg-type]

    def record_fields(self) -> dict[str, str]:
        """Its step records' fields once bound: on chosen entries, each one's ``linf[<key>]`` and ``l2[<key>]`` too."""
        fields = dict(self.step_fields)
        for key in self.chosen or ():
            fields.update({f"linf[{key}]": "float64", f"l2[{key}]": "float64"})
        return fields

    @override
    def attach(self, agent: Any) -> None:
        agent = adapt(agent, self._observation_space, self._action_space)
        if self._observation_space is not None:
            self._check_agent(agent)
        self._agent = agent

    def _check_agent(self, agent: Agent) -> None:
        """Raises unless ``agent``'s network takes this space's observations and gives what the attack needs."""
        assert self._observation_space is not None and self._domain is not None, "bind() comes first"
        space = self._observation_space
        if not fits(agent.observation_space, space):
            takes = agent.observation_space
            shown = f"shape {takes.shape}" if isinstance(takes, gym.spaces.Box) else str(takes)
            raise IncompatibleSpace(
                f"{self.name}: the agent takes observations of {shown}, the env at this place in the stack gives"
                f" {space}"
            )
        torch = require("torch", purpose="gradient attacks")
        try:
            with torch.no_grad():
                out = agent.outputs(self._probe(agent))
        except NotDifferentiable as exc:
            raise NotDifferentiable(f"{self.name} needs a differentiable agent: {exc}") from None
        except Exception as exc:  # a network that rejects the input fails in its own way
            raise IncompatibleSpace(
                f"{self.name}: the agent's network does not accept observations of {space}: {exc}"
            ) from exc
        if isinstance(self._action_space, gym.spaces.Discrete):
            try:
                out.scores  # noqa: B018 (raises when the agent has neither logits nor q-values)
            except NotDifferentiable as exc:
                raise NotDifferentiable(f"{self.name}: {exc}") from None
        elif out.action is None:
            raise NotDifferentiable(f"{self.name}: the agent gives no differentiable continuous action")

    def _probe(self, agent: Agent) -> Any:
        """A network input of one observation inside the space (the middle of a Box; a sample of a structure)."""
        domain = self.domain
        if isinstance(domain, Entries):
            space = copy.deepcopy(domain.space)  # seeding the env's own space would move its users' samples
            space.seed(0)
            return agent.tensor(structure.stack([space.sample()]))
        torch = require("torch")
        probe = np.clip(np.zeros(domain.low.shape), domain.low, domain.high)
        return torch.as_tensor(probe[None] * domain.scale, dtype=torch.float32)

    @property
    def agent(self) -> Agent:
        """The attached agent; raises when none is attached."""
        if self._agent is None:
            raise InvalidArgument(
                f"{self.name} has no agent to attack: pass `agent=` to the wrapper, call rlwrappers.attach(env,"
                " agent) before reset, or evaluate with rlwrappers.evaluate, which attaches it"
            )
        return self._agent

    @property
    def domain(self) -> Domain | Entries:
        """The attack's units and bounds (set by binding)."""
        assert self._domain is not None, "bind() comes first"
        return self._domain

    # -- attacking --------------------------------------------------------------------------------------
    def scores(self, z: torch.Tensor) -> torch.Tensor:
        """The agent's action scores (or continuous action) for a batch in attack units, differentiably."""
        out = self.agent.outputs(self.domain.network_input(z, self._clean))
        if isinstance(self._action_space, gym.spaces.Box):
            assert out.action is not None, "binding checked that the agent gives a continuous action"
            return out.action
        return out.scores

    def perturb(self, z: torch.Tensor, rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """The adversarial batch (attack units, not re-quantized) and the clean actions."""
        raise NotImplementedError

    def attack(self, obs: Any, rng: np.random.Generator) -> AttackResult:
        """Attacks a batch of observations (leading axis; for a Dict or Tuple, the structure of batches)."""
        domain = self.domain
        if isinstance(domain, Entries):
            self._clean = self.agent.tensor(obs)
        else:
            obs = np.asarray(obs)
        torch = require("torch", purpose="gradient attacks")
        try:
            with torch.enable_grad():
                adversarial, clean = self.perturb(domain.to_attack(obs), rng)
        finally:
            self._clean = None
        delivered = domain.deliver(adversarial, obs)
        sizes = domain.sizes(delivered, obs)
        linf, l2 = sizes.pop("")
        return AttackResult(delivered, adversarial, clean.numpy(), linf, l2, sizes)

    @override
    def observation(self, obs: Any, rng: np.random.Generator) -> tuple[Any, Record]:
        result = self.attack(structure.stack([obs]), rng)
        clean = result.clean_action[0]
        record = {
            "clean_action": clean.tolist() if isinstance(clean, np.ndarray) else clean.item(),
            "linf": float(result.linf[0]),
            "l2": float(result.l2[0]),
        }
        for key, (linf, l2) in result.entries.items():
            record[f"linf[{key}]"], record[f"l2[{key}]"] = float(linf[0]), float(l2[0])
        return structure.take(result.observations, 0), record

    @override
    def decided(self, action: Any, record: Record) -> Record:
        discrete = isinstance(self._action_space, gym.spaces.Discrete)
        taken = int(action) if discrete else np.asarray(action, dtype=np.float64).tolist()
        return {**record, "action": taken, "flipped": taken != record["clean_action"] if discrete else None}


def _check_budget(name: str, value: Any) -> float | tuple[float, ...]:
    """``value`` as an attack budget: a float >= 0, or a tuple of them, one per observation dimension."""
    if isinstance(value, (list, tuple, np.ndarray)):
        return _check.scale(name, value)
    return attacks.check_eps(name, value)


def _warn_below_quantum(name: str, eps: float | tuple[float, ...], domain: Domain) -> None:
    """Warns when re-quantization rounds away every change of size ``eps`` (of any positive ``eps[d]``)."""
    if not domain.integer:
        return
    half = domain.quantum / 2
    grey = " grey level" if domain.pixels else ""
    if isinstance(eps, float):
        if not 0.0 < eps < half:
            return
        erased, lost = f"eps={eps} is", "every perturbation away, so the agent sees clean observations"
    else:
        small = [f"eps[{i}]={e}" for i, e in enumerate(eps) if 0.0 < e < half]
        if not small:
            return
        erased = f"{', '.join(small)} {'is' if len(small) == 1 else 'are'}"
        lost = "the perturbation of those dimensions away, so the agent sees them clean"
    warnings.warn(
        f"{name}: {erased} below half a{grey} quantum ({half:.6g}) of the integer observation space:"
        f" re-quantization rounds {lost}",
        UserWarning,
        stacklevel=6,
    )


@dataclass(kw_only=True)
class FGSMPerturbation(AttackPerturbation):
    """The fast gradient sign method on every observation (Goodfellow et al. 2015; seed 001 Section 5.1).

    ``obs + eps * sign(grad)`` of the cross-entropy between the agent's action scores and its clean greedy
    action, clamped to the space (torchattacks' FGSM, untargeted). See :mod:`rlwrappers.wrappers.adversarial`.

    Args:
        eps: the perturbation's L-inf size, in [0, 1] pixel scale for images, observation units otherwise: a
            number, or one per observation dimension (``eps[d] = k * sigma[d]`` sizes it in standard deviations).
        quantize: round the attacked observation back to an integer space's levels (keeping its dtype); if
            False, integer observations are delivered as float32, unrounded (the space becomes float32).
    """

    name = "fgsm"
    budgets = ("eps",)

    eps: float | tuple[float, ...] = 0.01
    quantize: bool = True

    def __post_init__(self) -> None:
        self.eps = _check_budget("eps", self.eps)
        super().__post_init__()

    @override
    def _warn_if_erased(self, domain: Domain) -> None:
        _warn_below_quantum(self.name, self.eps, domain)

    @override
    def perturb(self, z: torch.Tensor, rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        low, high = self.domain.bounds()
        return attacks.fgsm(self.scores, z, self.domain.budget(self.eps), low, high)


@dataclass(kw_only=True)
class PGDPerturbation(AttackPerturbation):
    """Projected gradient descent in the L-inf ball on every observation (Madry et al. 2018), as torchattacks.

    Discrete agents: maximises the cross-entropy against the clean greedy action. Continuous agents (SB3's
    PPO, SAC, TD3 on MuJoCo): maximises the squared distance between the action and the clean action, which
    needs the random start (that distance has no gradient at the clean observation). The random start draws
    from the layer's seeded generator.

    Args:
        eps: the ball's radius, in [0, 1] pixel scale for images, observation units otherwise: a number, or one
            per observation dimension (the box ``[obs - eps, obs + eps]``).
        alpha: the step of each iteration, a number or one per observation dimension (default: eps / 4).
        steps: the number of iterations.
        random_start: start from a uniform point in the ball.
        quantize: round the attacked observation back to an integer space's levels (keeping its dtype); if
            False, integer observations are delivered as float32, unrounded (the space becomes float32).
    """

    name = "pgd"
    continuous = True
    budgets = ("eps", "alpha")

    eps: float | tuple[float, ...] = 0.01
    alpha: float | tuple[float, ...] | None = None
    steps: int = 10
    random_start: bool = True
    quantize: bool = True

    def __post_init__(self) -> None:
        self.eps = _check_budget("eps", self.eps)
        if self.alpha is not None:
            self.alpha = _check_budget("alpha", self.alpha)
        self.steps = _check.integer("steps", self.steps, minimum=1)
        if not isinstance(self.random_start, bool):
            raise InvalidArgument(f"`random_start` must be a bool, received {self.random_start!r}")
        super().__post_init__()

    @override
    def bind_spaces(self, observation_space: gym.Space[Any], action_space: gym.Space[Any]) -> None:
        if isinstance(action_space, gym.spaces.Box) and not self.random_start:
            raise InvalidArgument(
                "pgd on continuous actions needs `random_start=True`: the distance to the clean action has no"
                " gradient at the clean observation"
            )
        super().bind_spaces(observation_space, action_space)

    @override
    def _warn_if_erased(self, domain: Domain) -> None:
        _warn_below_quantum(self.name, self.eps, domain)

    @override
    def perturb(self, z: torch.Tensor, rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        low, high = self.domain.bounds()
        eps = self.domain.budget(self.eps)
        alpha = eps / 4 if self.alpha is None else self.domain.budget(self.alpha)
        start = rng if self.random_start else None
        if isinstance(self._action_space, gym.spaces.Box):
            torch = require("torch")
            with torch.no_grad():
                clean = self.scores(z)
            return attacks.pgd(self.scores, z, eps, alpha, self.steps, low, high, start, clean, _distance)
        return attacks.pgd(self.scores, z, eps, alpha, self.steps, low, high, start)


def _distance(action: torch.Tensor, clean: torch.Tensor) -> torch.Tensor:
    """Mean over the batch of the squared distance between actions."""
    return (action - clean).pow(2).sum(-1).mean()


@dataclass(kw_only=True)
class CarliniWagnerPerturbation(AttackPerturbation):
    """The Carlini-Wagner L2 attack on every observation (Carlini & Wagner 2017; seed 004 Table 1).

    The closest observation (in L2) found in ``steps`` Adam steps that changes the agent's greedy action, or
    the clean observation when none does; see :func:`rlwrappers.functional.attacks.carlini_wagner` for how it differs
    from torchattacks' ``CW``.

    Args:
        c: the weight of the misclassification term against the L2 distance.
        kappa: the confidence margin.
        steps: the number of Adam steps.
        lr: Adam's learning rate.
        quantize: round the attacked observation back to an integer space's levels (keeping its dtype); if
            False, integer observations are delivered as float32, unrounded (the space becomes float32).
    """

    name = "cw"

    c: float = 1.0
    kappa: float = 0.0
    steps: int = 50
    lr: float = 0.01
    quantize: bool = True

    def __post_init__(self) -> None:
        self.c = attacks.check_eps("c", self.c)
        self.kappa = attacks.check_eps("kappa", self.kappa)
        self.steps = _check.integer("steps", self.steps, minimum=1)
        self.lr = attacks.check_eps("lr", self.lr)
        super().__post_init__()

    @override
    def perturb(self, z: torch.Tensor, rng: np.random.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        low, high = self.domain.bounds()
        return attacks.carlini_wagner(self.scores, z, self.c, self.kappa, self.steps, self.lr, low, high)


@register_wrapper("fgsm")
class FGSM(SingleLayer):
    """FGSM on the agent's observations; see :class:`FGSMPerturbation` and :mod:`rlwrappers.wrappers.adversarial`.

    The vector-level versions, which attack the stacked batch a vector env gives the network, are
    :class:`rlwrappers.wrappers.vector.Attack` and :class:`rlwrappers.wrappers.sb3.AttackVecEnv`.

    Example:
        >>> import gymnasium as gym, torch, rlwrappers as rw
        >>> from rlwrappers.agents import TorchAgent
        >>> env = gym.make("CartPole-v1")
        >>> agent = TorchAgent(torch.nn.Linear(4, 2), env.observation_space, env.action_space, head="logits")
        >>> env = rw.FGSM(env, eps=0.05, agent=agent)
        >>> obs, _ = env.reset(seed=0)
        >>> _, _, _, _, info = env.step(agent.act_one(obs))
        >>> sorted(info["rlwrappers"]["fgsm"])
        ['action', 'active', 'clean_action', 'flipped', 'l2', 'linf']
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        eps: float | tuple[float, ...] = 0.01,
        quantize: bool = True,
        *,
        keys: Keys = None,
        agent: Any = None,
        when: str | Schedule | None = None,
        label: str | None = None,
        allow_nonfinite: bool = False,
    ):
        """Wraps ``env``; ``agent`` (or a later :func:`rlwrappers.attach`) is what gets attacked.

        ``keys`` chooses the entries of a Dict or Tuple observation (default: every float sensor entry, not
        ``desired_goal``). ``allow_nonfinite`` lets non-finite observations through instead of raising
        :class:`~rlwrappers.error.PerturbationError`.
        """
        self._setup(
            env, FGSMPerturbation, dict(keys=keys, eps=eps, quantize=quantize), when, label, agent, allow_nonfinite
        )


@register_wrapper("pgd")
class PGD(SingleLayer):
    """PGD on the agent's observations; see :class:`PGDPerturbation` and :mod:`rlwrappers.wrappers.adversarial`.

    Example:
        >>> import gymnasium as gym, torch, rlwrappers as rw
        >>> from rlwrappers.agents import TorchAgent
        >>> env = gym.make("Pendulum-v1")
        >>> agent = TorchAgent(torch.nn.Linear(3, 1), env.observation_space, env.action_space, head="action")
        >>> env = rw.PGD(env, eps=0.05, steps=5, agent=agent)
        >>> obs, _ = env.reset(seed=0)
        >>> _, _, _, _, info = env.step(agent.act_one(obs))
        >>> round(info["rlwrappers"]["pgd"]["linf"], 6)  # a corner of the ball (float32 rounding aside)
        0.05
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        eps: float | tuple[float, ...] = 0.01,
        alpha: float | tuple[float, ...] | None = None,
        steps: int = 10,
        random_start: bool = True,
        quantize: bool = True,
        *,
        keys: Keys = None,
        agent: Any = None,
        when: str | Schedule | None = None,
        label: str | None = None,
        allow_nonfinite: bool = False,
    ):
        """Wraps ``env``; ``agent`` (or a later :func:`rlwrappers.attach`) is what gets attacked.

        ``keys`` chooses the entries of a Dict or Tuple observation (default: every float sensor entry, not
        ``desired_goal``). ``allow_nonfinite`` lets non-finite observations through instead of raising
        :class:`~rlwrappers.error.PerturbationError`.
        """
        params = dict(keys=keys, eps=eps, alpha=alpha, steps=steps, random_start=random_start, quantize=quantize)
        self._setup(env, PGDPerturbation, params, when, label, agent, allow_nonfinite)


@register_wrapper("cw")
class CarliniWagner(SingleLayer):
    """Carlini-Wagner L2 on the agent's observations; see :class:`CarliniWagnerPerturbation`.

    Example:
        >>> import gymnasium as gym, torch, rlwrappers as rw
        >>> from rlwrappers.agents import TorchAgent
        >>> env = gym.make("CartPole-v1")
        >>> agent = TorchAgent(torch.nn.Linear(4, 2), env.observation_space, env.action_space, head="logits")
        >>> env = rw.CarliniWagner(env, c=1.0, steps=20, agent=agent)
        >>> env.specs
        ['cw(steps=20)']
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        c: float = 1.0,
        kappa: float = 0.0,
        steps: int = 50,
        lr: float = 0.01,
        quantize: bool = True,
        *,
        keys: Keys = None,
        agent: Any = None,
        when: str | Schedule | None = None,
        label: str | None = None,
        allow_nonfinite: bool = False,
    ):
        """Wraps ``env``; ``agent`` (or a later :func:`rlwrappers.attach`) is what gets attacked.

        ``keys`` chooses the entries of a Dict or Tuple observation (default: every float sensor entry, not
        ``desired_goal``). ``allow_nonfinite`` lets non-finite observations through instead of raising
        :class:`~rlwrappers.error.PerturbationError`.
        """
        params = dict(keys=keys, c=c, kappa=kappa, steps=steps, lr=lr, quantize=quantize)
        self._setup(env, CarliniWagnerPerturbation, params, when, label, agent, allow_nonfinite)
