"""Incremental forward passes: the scores of observations that differ from one observation in a small window.

An occlusion patch changes a few pixels, and in a convolutional network only the activations whose receptive
field touches them change. For a network that is a chain of ``Conv2d`` layers, elementwise activations,
``Flatten`` and ``Linear`` layers (SB3's ``NatureCNN``, or a ``torch.nn.Sequential`` of such layers),
:class:`Chain` runs the network once on the clean observation and keeps the input of every layer. For a batch
of perturbed observations, each given as a window and its new values, every layer then computes only its
output window reached by the changed input window:

- ``Conv2d``: the output rows (and columns) whose kernel overlaps the changed rows, their input crop (the
  window plus the receptive-field margin, zero padded where the layer pads) assembled from the clean input and
  the changed window, and the convolution run on the crop without padding. The windows of a batch are padded
  to one common size (shifted inwards at the borders) so that the whole batch runs as one convolution.
- elementwise activations: applied to the window alone.
- the first ``Linear`` after ``Flatten``: run on its clean input with each window pasted in, one matrix product
  for the batch. (Restricting the product to the window's columns, ``y + W[:, window] (x' - x)``, halves its
  arithmetic on the Nature-DQN but needs a copy of those columns per window position and one product per
  position; measured, it was slower.)

Everything after the first ``Linear`` (the rest of the features extractor and the action head) runs on the
batch as it does in the network. The scores equal the plain forward pass's up to float rounding.

:func:`decompose` finds the chain behind an agent: an :class:`~rlwrappers.agents.SB3Agent` (DQN's
``q_net``, or an actor-critic's action logits) with a ``NatureCNN`` features extractor and a ``Box``
observation space, whose preprocessing (``preprocess_obs``: uint8 images divided by 255) and channel-last
transpose it applies the same way; or a :class:`~rlwrappers.agents.TorchAgent` whose module is a
``torch.nn.Sequential`` called as is. Anything else (pooling, residual connections, normalization layers,
hooks, a custom ``forward``) is reported with the reason, and callers fall back to the plain forward pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from rlwrappers._optional import require
from rlwrappers.agents import Agent, SB3Agent, TorchAgent
from rlwrappers.error import InvalidArgument

if TYPE_CHECKING:
    import torch

__all__ = ["Chain", "Run", "decompose"]

#: Elementwise activations (module class names in ``torch.nn``): they act on a window as on the whole tensor.
_ELEMENTWISE = (
    "ReLU",
    "ReLU6",
    "LeakyReLU",
    "ELU",
    "SELU",
    "CELU",
    "GELU",
    "SiLU",
    "Mish",
    "Tanh",
    "Sigmoid",
    "Softplus",
    "Softsign",
    "Tanhshrink",
    "Hardtanh",
    "Hardswish",
    "Hardsigmoid",
    "LogSigmoid",
    "Identity",
)
#: Layers that are the identity in evaluation mode.
_DROPOUT = ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout")


@dataclass(frozen=True)
class Chain:
    """A network split into the layers the incremental pass walks and the rest.

    Attributes:
        prepare: maps a float batch in the agent's observation layout and units to the network's input,
            (B, C, H, W): the agent's own transpose and preprocessing, elementwise.
        body: ``Conv2d`` layers and elementwise activations, one ``Flatten``, maybe more activations, and the
            first ``Linear`` layer, last.
        tail: maps the first ``Linear`` layer's output to the scores (q-values or logits).
    """

    prepare: Callable[[torch.Tensor], torch.Tensor]
    body: tuple[Any, ...]
    tail: Callable[[torch.Tensor], torch.Tensor]

    def run(self, x: NDArray[np.float32]) -> Run:
        """The clean pass on one observation ``x`` (its own layout and units), keeping every layer's input."""
        return Run(self, x)


class Run:
    """A :class:`Chain`'s clean pass on one observation; :meth:`scores` scores windowed perturbations of it.

    Crops are assembled with numpy in channels-last layout (a pixel's channels are one contiguous run), so the
    only torch operations per batch are the network's own layers.
    """

    def __init__(self, chain: Chain, x: NDArray[np.float32]):
        th = require("torch", purpose="incremental forward passes")
        self.chain = chain
        self._padded: dict[int, tuple[NDArray[Any], int, int, tuple[int, int]]] = {}
        with th.no_grad():
            a = chain.prepare(th.as_tensor(np.asarray(x, np.float32)[None]).clone())
            if a.ndim != 4:
                raise InvalidArgument(f"the network's input must be (batch, C, H, W), received shape {tuple(a.shape)}")
            self.size = (int(a.shape[2]), int(a.shape[3]))
            unflattened: tuple[int, ...] = ()
            for i, layer in enumerate(chain.body):
                if isinstance(layer, th.nn.Flatten):
                    unflattened = tuple(a.shape[1:])
                if isinstance(layer, th.nn.Conv2d):  # as the windows are computed: the layer's own convolution
                    out = th.nn.functional.conv2d(
                        a, layer.weight, layer.bias, layer.stride, layer.padding, layer.dilation, layer.groups
                    )
                    self._padded[i] = _pad(layer, a[0].numpy(), out[0].shape[-2:])
                else:
                    out = layer(a)
                if isinstance(layer, th.nn.Linear):  # the last layer of the body
                    self._linear_input = a[0].reshape(unflattened).numpy().copy()
                a = out
            #: The clean observation's scores, computed layer by layer as the windows' are: they equal the
            #: network's own scores unless a hook or an override changes what the network computes.
            self.clean_scores = np.asarray(chain.tail(a).detach().cpu().double().numpy(), dtype=np.float64)[0]

    def scores(self, corners: NDArray[np.int64], values: NDArray[np.float32]) -> NDArray[np.float64]:
        """The scores of a batch of observations equal to the clean one but for one window each.

        Args:
            corners: (B, 2), each window's top-left pixel (row, column) in the frame.
            values: (B, *window): each window's new values, in the observation's layout and units; all windows
                have one size.

        Returns:
            (B, actions) scores, as the plain forward pass gives them.
        """
        th = require("torch")
        corners = np.asarray(corners, dtype=np.int64)
        with th.no_grad():
            v = self.chain.prepare(th.as_tensor(np.asarray(values, np.float32)))
            height, width = int(v.shape[2]), int(v.shape[3])
            if corners.shape != (len(v), 2):
                raise InvalidArgument(f"`corners` must have shape ({len(v)}, 2), received {corners.shape}")
            inside = (corners >= 0) & (corners + np.array([height, width]) <= np.array(self.size))
            if not inside.all():
                raise InvalidArgument(f"every {height} x {width} window must lie inside the {self.size} frame")
            rows, cols = corners[:, 0], corners[:, 1]
            for i, layer in enumerate(self.chain.body):
                if isinstance(layer, th.nn.Conv2d):
                    rows, cols, v = self._conv(i, layer, rows, cols, v)
                elif isinstance(layer, th.nn.Linear):
                    y = self._linear(layer, rows, cols, v)
                elif not isinstance(layer, th.nn.Flatten):  # elementwise; Flatten leaves the window as it is
                    v = layer(v)
            out = self.chain.tail(y)
        return np.asarray(out.detach().cpu().double().numpy(), dtype=np.float64).reshape(len(corners), -1)

    def _conv(
        self, i: int, layer: Any, rows: NDArray[np.int64], cols: NDArray[np.int64], v: torch.Tensor
    ) -> tuple[NDArray[np.int64], NDArray[np.int64], torch.Tensor]:
        """The layer's output window for each input window: its corners and values, (B, C_out, M, N)."""
        th = require("torch")
        padded, top, left, out_size = self._padded[i]
        starts, spans = [], []
        for axis, (origin, before, n_out) in enumerate(((rows, top, out_size[0]), (cols, left, out_size[1]))):
            k, s, d = layer.kernel_size[axis], layer.stride[axis], layer.dilation[axis]
            first, last = origin, origin + int(v.shape[2 + axis]) - 1  # the changed input span, inclusive
            lo = np.maximum(-((-(first + before - d * (k - 1))) // s), 0)  # the outputs whose kernel reaches it
            hi = np.minimum((last + before) // s + 1, n_out)
            m = int(min(max(int((hi - lo).max()), 1), n_out))  # one window size for the batch
            start = np.clip(lo, 0, n_out - m)
            starts.append(start)
            spans.append(start[:, None] * s - before + np.arange((m - 1) * s + d * (k - 1) + 1)[None])
        crop = _assemble(padded, top, left, spans[0], spans[1], rows, cols, _channels_last(v))
        x = th.from_numpy(crop).permute(0, 3, 1, 2)  # (B, C, K, L), channels-last in memory
        out = th.nn.functional.conv2d(x, layer.weight, layer.bias, layer.stride, 0, layer.dilation, layer.groups)
        return starts[0], starts[1], out

    def _linear(self, layer: Any, rows: NDArray[np.int64], cols: NDArray[np.int64], v: torch.Tensor) -> torch.Tensor:
        """The first Linear layer on its clean input with each window pasted in."""
        th = require("torch")
        clean = self._linear_input  # (C, H, W)
        full = np.broadcast_to(clean, (len(v), *clean.shape)).copy()
        h, w = int(v.shape[2]), int(v.shape[3])
        index_r = (rows[:, None] + np.arange(h)[None])[:, :, None]
        index_c = (cols[:, None] + np.arange(w)[None])[:, None, :]
        full[np.arange(len(v))[:, None, None], :, index_r, index_c] = _channels_last(v)
        return layer(th.from_numpy(full.reshape(len(v), -1)))


def _channels_last(v: torch.Tensor) -> NDArray[Any]:
    """A batch of windows (B, C, h, w) as a numpy array (B, h, w, C)."""
    return np.ascontiguousarray(v.permute(0, 2, 3, 1).numpy())


def _pad(layer: Any, clean_in: NDArray[Any], out_size: Any) -> tuple[NDArray[Any], int, int, tuple[int, int]]:
    """The clean input (C, H, W) zero padded to cover every crop the layer may need, as (H, W, C).

    Returns it with its top and left padding and the layer's output size (H_out, W_out).
    """
    before, after = [], []
    for axis in (0, 1):
        k, s, d = layer.kernel_size[axis], layer.stride[axis], layer.dilation[axis]
        if layer.padding == "same":
            pad = d * (k - 1) // 2  # PyTorch puts the odd pixel of "same" padding after
        elif layer.padding == "valid":
            pad = 0
        else:
            pad = int(layer.padding[axis])
        n_in, n_out = int(clean_in.shape[1 + axis]), int(out_size[axis])
        before.append(pad)
        after.append(max((n_out - 1) * s - pad + d * (k - 1) + 1 - n_in, 0))
    padded = np.pad(np.moveaxis(clean_in, 0, -1), ((before[0], after[0]), (before[1], after[1]), (0, 0)))
    return np.ascontiguousarray(padded), before[0], before[1], (int(out_size[0]), int(out_size[1]))


def _assemble(
    padded: NDArray[Any],
    top: int,
    left: int,
    crop_rows: NDArray[np.int64],
    crop_cols: NDArray[np.int64],
    rows: NDArray[np.int64],
    cols: NDArray[np.int64],
    window: NDArray[Any],
) -> NDArray[Any]:
    """Each perturbed input's crop, (B, K, L, C): the clean input with its changed window pasted in.

    ``padded`` is the clean input (H, W, C), padded by ``top`` rows and ``left`` columns; the crops cover rows
    ``crop_rows`` (B, K) and columns ``crop_cols`` (B, L); the windows (B, h, w, C) start at ``rows`` and
    ``cols``.
    """
    crop = padded[(crop_rows + top)[:, :, None], (crop_cols + left)[:, None, :]]
    h, w = window.shape[1:3]
    rel_r, rel_c = crop_rows - rows[:, None], crop_cols - cols[:, None]
    inside = ((rel_r >= 0) & (rel_r < h))[:, :, None] & ((rel_c >= 0) & (rel_c < w))[:, None, :]
    b, i, j = np.nonzero(inside)
    crop[b, i, j] = window[b, rel_r[b, i], rel_c[b, j]]
    return crop


# -- finding the chain -------------------------------------------------------------------------------------
def decompose(agent: Agent, layout: str | None) -> tuple[Chain | None, str]:
    """The chain behind ``agent``'s scores for observations in ``layout``, or None and the reason there is none.

    Args:
        agent: the agent whose q-values (or action logits) are scored.
        layout: the observation's image layout (``"chw"`` or ``"hwc"``); None for a vector.
    """
    require("torch", purpose="incremental forward passes")
    if layout is None:
        return None, "the observation is a vector, not a frame"
    if isinstance(agent, SB3Agent):
        found = _sb3(agent, layout)
    elif isinstance(agent, TorchAgent):
        found = _torch_module(agent, layout)
    else:
        return None, f"{type(agent).__name__} is not an SB3Agent or a TorchAgent"
    if isinstance(found, str):
        return None, found
    prepare, modules, head = found
    split = _split(modules)
    if isinstance(split, str):
        return None, split
    body, rest = split

    def tail(y: torch.Tensor) -> torch.Tensor:
        for layer in rest:
            y = layer(y)
        return head(y)

    return Chain(prepare=prepare, body=body, tail=tail), ""


_Found = tuple[Callable[["torch.Tensor"], "torch.Tensor"], list[Any], Callable[["torch.Tensor"], "torch.Tensor"]]


def _sb3(agent: SB3Agent, layout: str) -> _Found | str:
    """The SB3 policy's preprocessing, its NatureCNN's layers and its head, or why they cannot be split."""
    from gymnasium import spaces
    from stable_baselines3.common.policies import ActorCriticPolicy, BaseModel
    from stable_baselines3.common.preprocessing import preprocess_obs
    from stable_baselines3.common.torch_layers import NatureCNN
    from stable_baselines3.dqn.policies import QNetwork

    policy = agent.policy
    if layout != ("hwc" if agent.channels_last else "chw"):
        return f"the frame's layout {layout!r} is not the one the policy reads"
    if agent.kind == "dqn":
        owner, extractor, head = policy.q_net, policy.q_net.features_extractor, policy.q_net.q_net
        if (
            type(owner).forward is not QNetwork.forward
            or type(owner).extract_features is not BaseModel.extract_features
        ):
            return f"{type(owner).__name__} overrides QNetwork's forward"
    elif agent.kind == "actor_critic":
        owner = policy
        if type(policy).extract_features is not ActorCriticPolicy.extract_features:
            return f"{type(policy).__name__} overrides ActorCriticPolicy.extract_features"
        extractor = policy.features_extractor if policy.share_features_extractor else policy.pi_features_extractor

        def head(features: torch.Tensor) -> torch.Tensor:
            return policy.action_net(policy.mlp_extractor.forward_actor(features))

    else:
        return f"the {agent.kind} policy has no discrete action scores"
    if type(extractor).forward is not NatureCNN.forward:
        return f"its features extractor is {type(extractor).__name__}, not NatureCNN"
    space, normalize = owner.observation_space, owner.normalize_images
    if not isinstance(space, spaces.Box):
        return f"its observation space is {space}, not a Box"

    def prepare(x: torch.Tensor) -> torch.Tensor:
        return preprocess_obs(agent.policy_input(x), space, normalize_images=normalize)  # type: ignore[return-value]

    return prepare, [*_children(extractor.cnn), *_children(extractor.linear)], head


def _torch_module(agent: TorchAgent, layout: str) -> _Found | str:
    """A Sequential module's layers, or why the TorchAgent cannot be split."""
    th = require("torch")
    if agent.forward is not None:
        return "the TorchAgent has its own `forward` function"
    if layout != "chw":
        return f"the frame's layout is {layout!r}; Conv2d layers read 'chw'"
    if type(agent.module) is not th.nn.Sequential:
        return f"its module is a {type(agent.module).__name__}, not a torch.nn.Sequential"

    def prepare(x: torch.Tensor) -> torch.Tensor:
        return x

    def head(y: torch.Tensor) -> torch.Tensor:
        return y

    return prepare, _children(agent.module), head


def _children(module: Any) -> list[Any]:
    """The layers of a Sequential, nested Sequentials opened (a Sequential just calls them in order)."""
    th = require("torch")
    out: list[Any] = []
    for child in module.children():
        if type(child) is th.nn.Sequential:
            out.extend(_children(child))
        else:
            out.append(child)
    return out


def _split(layers: Sequence[Any]) -> tuple[tuple[Any, ...], tuple[Any, ...]] | str:
    """The layers up to the first Linear after Flatten, and those after it; or why they do not fit."""
    nn = require("torch").nn
    flattened = False
    for i, layer in enumerate(layers):
        name = type(layer).__name__
        if type(layer) is nn.Conv2d:
            if flattened:
                return f"its layer {i} (Conv2d) comes after Flatten"
            if layer.padding_mode != "zeros":
                return f"its layer {i} (Conv2d) pads with {layer.padding_mode!r}, not zeros"
        elif type(layer) is nn.Flatten:
            if flattened or layer.start_dim != 1 or layer.end_dim != -1:
                return f"its layer {i} (Flatten) is not one Flatten of all but the batch axis"
            flattened = True
        elif type(layer) is nn.Linear:
            if not flattened:
                return f"its layer {i} (Linear) does not follow a Flatten"
            return tuple(layers[: i + 1]), tuple(layers[i + 1 :])
        elif name in _DROPOUT and type(layer) is getattr(nn, name):
            if layer.training:
                return f"its layer {i} ({name}) is in training mode"
        elif not (name in _ELEMENTWISE and type(layer) is getattr(nn, name)):
            return f"its layer {i} ({name}) is neither Conv2d, an elementwise activation, Flatten nor Linear"
    return "it has no Linear layer after a Flatten"
