"""Policy perturbations: Gaussian noise on the agent's network weights (parameter-space noise).

Seed 002 (Flageat et al. 2023, Section 2.2) lists noise on the policy parameters, J(theta) = E[sum R] under
pi_{theta + eps}, eps ~ N(0, sigma), as the sixth kind of uncertainty. Here it is a perturbation like the
others: it lives in a wrapper layer, so its schedule decides when it acts, its noise comes from the layer's
seeded generators and the log records it. The agent it acts on is attached with
:func:`rlwrappers.attach` (the evaluation runner does this). While active the weights carry the noise;
when the schedule switches it off, at every reset and at ``close``, they are restored bit for bit.

With the default schedule (always) the noise is drawn afresh for every episode. Outside an env loop,
:func:`noisy_parameters` perturbs an agent inside a ``with`` block.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray
from typing_extensions import override

from rlwrappers import _check
from rlwrappers.agents import Agent, adapt
from rlwrappers.core import Perturbation, Record, SingleLayer, register_wrapper
from rlwrappers.error import InvalidArgument
from rlwrappers.schedule import Schedule

if TYPE_CHECKING:
    import torch

__all__ = [
    "ParameterNoise",
    "ParameterNoisePerturbation",
    "add_noise",
    "add_parameter_noise",
    "draw_noise",
    "l2_norm",
    "noisy_parameters",
    "restore",
]

Saved = list[tuple["torch.Tensor", "torch.Tensor"]]


def draw_noise(
    parameters: Mapping[str, torch.Tensor], std: float, rng: np.random.Generator
) -> list[NDArray[np.float32]]:
    """N(0, std^2) noise shaped like each tensor, drawn in float32 from ``rng`` in the mapping's order."""
    return [rng.standard_normal(tuple(t.shape), dtype=np.float32) * np.float32(std) for t in parameters.values()]


def add_noise(parameters: Mapping[str, torch.Tensor], noise: list[NDArray[np.float32]]) -> Saved:
    """Adds ``noise`` to the tensors in place; returns what :func:`restore` needs to undo it exactly."""
    import torch

    saved: Saved = []
    with torch.no_grad():
        for tensor, delta in zip(parameters.values(), noise, strict=True):
            saved.append((tensor, tensor.detach().clone()))
            tensor.add_(torch.from_numpy(delta).to(dtype=tensor.dtype, device=tensor.device))
    return saved


def add_parameter_noise(
    parameters: Mapping[str, torch.Tensor], std: float, rng: np.random.Generator
) -> tuple[Saved, float]:
    """Draws noise and adds it (:func:`draw_noise`, :func:`add_noise`); returns the saved values and its L2 norm."""
    noise = draw_noise(parameters, std, rng)
    return add_noise(parameters, noise), l2_norm(noise)


def l2_norm(arrays: list[NDArray[np.float32]]) -> float:
    """The L2 norm of all the values of ``arrays``, the same on every CPU.

    The squares are exact in float64 and numpy's pairwise sum adds them in an order it fixes. A BLAS dot
    (``np.dot``, ``@``) would not do: OpenBLAS picks its kernel by CPU, and its float32 kernels sum in
    different orders, so the logged norm would change with the machine.
    """
    return math.sqrt(sum(float(np.sum(np.square(a, dtype=np.float64))) for a in arrays))


def restore(saved: Saved) -> None:
    """Copies the saved values back: the tensors are bit-identical to what they were before the noise."""
    import torch

    with torch.no_grad():
        for tensor, original in saved:
            tensor.copy_(original)


@contextlib.contextmanager
def noisy_parameters(agent: Agent, std: float, rng: np.random.Generator) -> Iterator[float]:
    """Perturbs ``agent``'s weights inside a ``with`` block, yielding the noise's L2 norm; restores them after.

    Example:
        >>> import numpy as np, torch, gymnasium as gym
        >>> from rlwrappers.agents import TorchAgent
        >>> from rlwrappers.wrappers.policy import noisy_parameters
        >>> env = gym.make("CartPole-v1")
        >>> agent = TorchAgent(torch.nn.Linear(4, 2), env.observation_space, env.action_space, head="logits")
        >>> before = agent.module.weight.clone()
        >>> with noisy_parameters(agent, 0.1, np.random.default_rng(0)):
        ...     bool(torch.equal(agent.module.weight, before))
        False
        >>> bool(torch.equal(agent.module.weight, before))
        True
    """
    std = _check.nonnegative("std", std)
    saved, norm = add_parameter_noise(agent.parameters(), std, rng)
    try:
        yield norm
    finally:
        restore(saved)


@dataclass(kw_only=True)
class ParameterNoisePerturbation(Perturbation):
    """Gaussian noise on the attached agent's weights (parameter-space noise; Flageat et al. 2023).

    Every tensor that decides the agent's actions (:meth:`rlwrappers.agents.Agent.parameters`: critics and
    value heads are left out) gets independent N(0, std^2) noise when the schedule switches the perturbation
    on; the weights are restored bit for bit when it switches off, at every reset and at ``close``. The log
    records the noise's L2 norm over all tensors: in the episode row when the noise starts at reset, in the
    step row of the step after which it starts otherwise.

    Args:
        std: the noise's standard deviation, in the weights' units.
    """

    name = "param_noise"
    channel = "policy"
    needs_agent = True
    step_fields = {"norm": "float64"}
    reset_fields = {"norm": "float64"}

    std: float = 0.01

    def __post_init__(self) -> None:
        self.std = _check.nonnegative("std", self.std)
        self._agent: Agent | None = None
        self._saved: Saved | None = None

    @override
    def attach(self, agent: Any) -> None:
        agent = adapt(agent)
        if not agent.parameters():
            raise InvalidArgument(f"{self.name} needs an agent with network parameters, received {agent}")
        self._agent = agent

    @override
    def activate(self, env: gym.Env[Any, Any], rng: np.random.Generator) -> Record | None:
        if self._agent is None:
            raise InvalidArgument(
                f"{self.name} has no agent to perturb: call rlwrappers.attach(env, agent) before reset,"
                " or evaluate with rlwrappers.evaluate, which attaches it"
            )
        self._saved, norm = add_parameter_noise(self._agent.parameters(), self.std, rng)
        return {"norm": norm}

    @override
    def deactivate(self, env: gym.Env[Any, Any]) -> None:
        if self._saved is not None:
            restore(self._saved)
            self._saved = None


@register_wrapper("param_noise")
class ParameterNoise(SingleLayer):
    """Gaussian noise on an agent's weights, drawn afresh per episode; see :class:`ParameterNoisePerturbation`.

    No vector version: one agent acts on all sub-envs, so perturb it in one place (an env of the stack).

    Example:
        >>> import gymnasium as gym, torch, rlwrappers as rw
        >>> from rlwrappers.agents import TorchAgent
        >>> env = gym.make("CartPole-v1")
        >>> agent = TorchAgent(torch.nn.Linear(4, 2), env.observation_space, env.action_space, head="logits")
        >>> env = rw.ParameterNoise(env, std=0.05, agent=agent)
        >>> _, info = env.reset(seed=0)
        >>> round(info["rlwrappers"]["param_noise"]["norm"], 3)
        0.204
    """

    def __init__(
        self,
        env: gym.Env[Any, Any],
        std: float = 0.01,
        *,
        agent: Any = None,
        when: str | Schedule | None = None,
        label: str | None = None,
    ):
        """Wraps ``env``; ``agent`` (or a later :func:`rlwrappers.attach`) is what gets perturbed."""
        self._setup(env, ParameterNoisePerturbation, dict(std=std), when, label, agent)
