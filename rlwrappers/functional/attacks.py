"""Gradient attacks on an agent's observations: FGSM, PGD and Carlini-Wagner (L2), batched, in native torch.

The attacks are the standard ones from image classification, aimed at an agent (Huang et al. 2017; seed 001
Section 5.1 uses FGSM on Atari agents): they are untargeted and push the network away from the action it
would take on the clean observation, which serves as the label. A discrete agent's scores are its action
logits (policy-gradient agents) or its q-values (value-based agents), read through
:meth:`rlwrappers.agents.Agent.outputs`.

**Units.** An attack works on its own scale, set by the observation space
(:class:`rlwrappers.wrappers.adversarial.Domain`):

- image spaces (uint8 with bounds 0 and 255, any layout, stacked or not) are attacked in [0, 1] pixel scale,
  as torchattacks and the papers do: ``eps=0.01`` is 2.55 grey levels. The agent still receives pixels in
  0..255 (SB3 divides by 255 inside its policy; channel order is the agent adapter's business);
- every other Box space is attacked in its own units, inside its bounds: ``eps=0.01`` on CartPole moves
  each coordinate by 0.01.

**Budgets per dimension.** ``eps`` (and PGD's ``alpha``) is a number, or an array of one value per
observation dimension that broadcasts against the batch (its trailing axes), in the same attack units:
``eps = k * sigma`` sizes an attack in units of each dimension's standard deviation, and coordinate ``d``
moves by at most ``eps[d]``. A number is used as it is (torchattacks' bits); an array whose entries all equal
a number gives exactly that number's result.

**Re-quantization.** An integer observation space cannot hold a fractional perturbation: the adversarial
observation is rounded back to whole levels before the agent sees it. In pixel scale a change below half a
grey level (eps < 0.5/255, about 0.002) rounds away entirely (the wrappers warn when built with such an eps),
and the delivered size moves in steps of 1/255: eps 0.002 and 0.005 both change pixels by one grey level.
The functions here return the attack's result before rounding;
:meth:`rlwrappers.wrappers.adversarial.Domain.to_observation` rounds. To study sizes below a grey level, build
the wrapper with ``quantize=False``: the env then delivers float32 observations, which SB3 and torch agents
take as they take pixels (SB3 divides them by 255 all the same).

The functions take ``scores``, a differentiable map from a batch in attack units to the network's outputs,
so that they serve any agent and can be cross-checked against torchattacks on the same map (they give the
same FGSM and PGD bit for bit). Nothing here draws from global random state: PGD's random start draws from
the generator it is given.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from numbers import Real
from typing import TYPE_CHECKING, Any, Final, TypeAlias

import numpy as np
from numpy.typing import NDArray

from rlwrappers._optional import require
from rlwrappers.error import InvalidArgument, InvalidType

if TYPE_CHECKING:
    import torch
    from torch import Tensor

__all__ = ["PIXEL_SCALE", "Budget", "carlini_wagner", "check_eps", "fgsm", "pgd"]

#: Grey levels per unit of pixel scale.
PIXEL_SCALE: Final = 255.0
#: How far from the box's faces Carlini-Wagner's change of variables starts, so that no input is frozen.
_TANH_MARGIN: Final = 1e-6

Scores = Callable[["torch.Tensor"], "torch.Tensor"]
#: An attack budget in attack units: a number, or an array of one per observation dimension.
Budget: TypeAlias = float | NDArray[np.floating[Any]]


def _loss(out: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Torchattacks' loss: mean cross-entropy of the scores against the labels (labels are clean actions)."""
    torch = require("torch")
    return torch.nn.functional.cross_entropy(out, labels)


def _budget(value: Budget, like: torch.Tensor) -> float | torch.Tensor:
    """A budget ready to meet a batch like ``like``: a number as it is, an array as a tensor of its dtype."""
    if isinstance(value, (int, float)):
        return value
    torch = require("torch")
    return torch.as_tensor(np.asarray(value), dtype=like.dtype, device=like.device)


def fgsm(
    scores: Scores,
    z: torch.Tensor,
    eps: Budget,
    low: torch.Tensor | float,
    high: torch.Tensor | float,
    labels: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The fast gradient sign method: ``z + eps * sign(grad loss)``, clamped to the bounds.

    Args:
        scores: maps a batch in attack units to action scores (logits or q-values), differentiably.
        z: the clean batch, in attack units.
        eps: the step, in attack units (L-inf size of the perturbation before clamping): a number, or one per
            observation dimension, broadcasting against ``z`` (coordinate ``d`` moves by ``eps[d]``).
        low: lower bounds (a number or a tensor broadcasting against ``z``).
        high: upper bounds.
        labels: the actions to push away from (default: the argmax of the clean scores).

    Returns:
        The adversarial batch (not re-quantized) and the clean actions used as labels.
    """
    torch = require("torch")
    z = z.clone().detach().requires_grad_(True)
    out = scores(z)
    if labels is None:
        labels = out.detach().argmax(-1)
    (grad,) = torch.autograd.grad(_loss(out, labels), z)
    adversarial = z.detach() + _budget(eps, z) * grad.sign()
    return torch.clamp(adversarial, min=low, max=high).detach(), labels


def pgd(
    scores: Scores,
    z: torch.Tensor,
    eps: Budget,
    alpha: Budget,
    steps: int,
    low: torch.Tensor | float,
    high: torch.Tensor | float,
    rng: np.random.Generator | None,
    labels: torch.Tensor | None = None,
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Projected gradient descent in the L-inf ball of radius ``eps`` (Madry et al. 2018), as torchattacks' PGD.

    Args:
        scores: maps a batch in attack units to the network's output, differentiably.
        z: the clean batch, in attack units.
        eps: the ball's radius, in attack units: a number, or one per observation dimension, broadcasting
            against ``z`` (the box ``[z - eps, z + eps]``, coordinate by coordinate).
        alpha: the step size of each iteration: a number, or one per observation dimension.
        steps: the number of iterations.
        low: lower bounds of the space.
        high: upper bounds.
        rng: draws the random start, uniform in the ball; None starts at ``z``.
        labels: what the loss pushes away from (default: the argmax of the clean scores).
        loss: ``loss(output, labels)`` to maximise (default: cross-entropy). For continuous actions pass the
            squared distance to the clean action, and a random start (its gradient is zero at ``z``).

    Returns:
        The adversarial batch (not re-quantized) and the labels.
    """
    torch = require("torch")
    loss = loss or _loss
    z = z.clone().detach()
    if labels is None:
        with torch.no_grad():
            labels = scores(z).argmax(-1)
    adversarial = z.clone()
    if rng is not None:
        bound = eps if isinstance(eps, (int, float)) else np.asarray(eps, dtype=np.float64)
        start = rng.uniform(-bound, bound, size=tuple(z.shape)).astype(np.float32)
        adversarial = torch.clamp(adversarial + torch.from_numpy(start), min=low, max=high)
    radius, step = _budget(eps, z), _budget(alpha, z)
    for _ in range(steps):
        adversarial.requires_grad_(True)
        (grad,) = torch.autograd.grad(loss(scores(adversarial), labels), adversarial)
        adversarial = adversarial.detach() + step * grad.sign()
        delta = torch.clamp(adversarial - z, min=-radius, max=radius)
        adversarial = torch.clamp(z + delta, min=low, max=high).detach()
    return adversarial, labels


def carlini_wagner(
    scores: Scores,
    z: torch.Tensor,
    c: float,
    kappa: float,
    steps: int,
    lr: float,
    low: torch.Tensor,
    high: torch.Tensor,
    labels: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The Carlini-Wagner L2 attack (Carlini & Wagner 2017), untargeted, as seed 004 compares with.

    Minimises ``||z' - z||_2^2 + c * max(Z(z')_y - max_{i != y} Z(z')_i, -kappa)`` over ``z'`` with Adam, through
    the change of variables ``z' = low + (high - low) * (tanh(w) + 1) / 2`` on bounded coordinates (``z' = w``
    on unbounded ones), and returns, per observation, the closest ``z'`` seen that changes the action (the
    clean observation if none does). It differs from torchattacks' ``CW`` in three documented ways: the margin
    uses the labelled score itself (torchattacks takes a max with zeros, wrong for negative scores),
    inputs on the box's faces start a hair inside it (otherwise their ``w`` is infinite and they can never
    move, which freezes every black pixel of an Atari frame), and there is no early stop, so that each
    observation's result does not depend on the others in its batch.

    Returns:
        The adversarial batch (not re-quantized) and the clean actions.
    """
    torch = require("torch")
    z = z.clone().detach()
    with torch.no_grad():
        clean = scores(z)
    if labels is None:
        labels = clean.argmax(-1)
    bounded = torch.isfinite(low) & torch.isfinite(high)
    span = torch.where(bounded, high - low, torch.ones_like(low))
    base = torch.where(bounded, low, torch.zeros_like(low))

    def to_z(w: Tensor) -> Tensor:
        return torch.where(bounded, base + span * (torch.tanh(w) + 1) / 2, w)

    unit = torch.clamp(2 * (z - base) / span - 1, -1 + _TANH_MARGIN, 1 - _TANH_MARGIN)
    w = torch.where(bounded, torch.atanh(unit), z).detach().requires_grad_(True)
    optimizer = torch.optim.Adam([w], lr=lr)
    best = z.clone()
    best_l2 = torch.full((z.shape[0],), float("inf"))
    chosen = torch.nn.functional.one_hot(labels, clean.shape[-1]).bool()
    for _ in range(steps):
        candidate = to_z(w)
        l2 = (candidate - z).flatten(1).pow(2).sum(1)
        out = scores(candidate)
        real = out.gather(1, labels[:, None]).squeeze(1)
        other = out.masked_fill(chosen, float("-inf")).amax(1)
        margin = torch.clamp(real - other, min=-kappa)
        optimizer.zero_grad()
        (l2.sum() + c * margin.sum()).backward()
        optimizer.step()
        with torch.no_grad():
            better = (out.argmax(-1) != labels) & (l2 < best_l2)
            best_l2 = torch.where(better, l2, best_l2)
            best[better] = candidate.detach()[better]
    return best, labels


def check_eps(name: str, value: Any) -> float:
    """``value`` (any real number, numpy's included) as a float >= 0; raises naming ``name``.

    Raises:
        InvalidType: ``value`` is not a number.
        InvalidArgument: it is negative or not finite.
    """
    if isinstance(value, bool) or not isinstance(value, Real):
        raise InvalidType(f"`{name}` must be a finite number >= 0, received {value!r} ({type(value).__name__})")
    if not math.isfinite(value) or value < 0:
        raise InvalidArgument(f"`{name}` must be a finite number >= 0, received {value!r}")
    return float(value)
