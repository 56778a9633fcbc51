"""Adapters to the agent protocol: Stable-Baselines3 models, torch modules and plain callables.

:class:`SB3Agent` (PPO, A2C, DQN, SAC, TD3 models or their policies), :class:`TorchAgent` (any
``torch.nn.Module``, CleanRL style) and :class:`CallableAgent` (a plain function, not differentiable) speak
the protocol of :class:`rlwrappers.agents.protocol.Agent`; :func:`adapt` picks one.
"""

from __future__ import annotations

import copy
import inspect
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

import gymnasium as gym
import numpy as np
from numpy.typing import NDArray

from rlwrappers._optional import require
from rlwrappers.agents.protocol import Agent, Outputs
from rlwrappers.agents.training import Normalization, Training
from rlwrappers.error import IncompatibleSpace, InvalidArgument, InvalidType
from rlwrappers.structure import batch_size, map_entries, take

if TYPE_CHECKING:
    import torch

__all__ = ["HEADS", "CallableAgent", "SB3Agent", "TorchAgent", "adapt"]

#: The output heads a :class:`TorchAgent` may declare.
HEADS: Final = ("logits", "q_values", "action")


# -- shared pieces ---------------------------------------------------------------------------------------
def _sample_categorical(probs: NDArray[np.floating[Any]], rng: np.random.Generator) -> NDArray[np.int64]:
    """One index per row of ``probs``, drawn by inverting the cumulative distribution with ``rng``."""
    cdf = np.cumsum(probs, axis=-1)
    u = rng.random(cdf.shape[:-1])[..., None] * cdf[..., -1:]
    return np.minimum((cdf <= u).sum(axis=-1), probs.shape[-1] - 1).astype(np.int64)


def _choose(
    scores: NDArray[np.floating[Any]], deterministic: bool, epsilon: float | None, rng: np.random.Generator | None
) -> NDArray[np.int64]:
    """Discrete actions from scores: greedy, epsilon-greedy (``epsilon`` set) or sampled from softmax(scores)."""
    greedy = scores.argmax(axis=-1)
    if deterministic:
        return greedy
    assert rng is not None, "Agent.act checks that stochastic agents get a generator"
    if epsilon is not None:
        explore = rng.random(greedy.shape) < epsilon
        return np.where(explore, rng.integers(0, scores.shape[-1], size=greedy.shape), greedy)
    return _sample_categorical(_softmax(scores), rng)


def _check_epsilon(epsilon: float | None) -> None:
    if epsilon is not None and not (isinstance(epsilon, (int, float)) and 0.0 <= epsilon <= 1.0):
        raise InvalidArgument(f"`epsilon` must be a probability in [0, 1], received {epsilon!r}")


def _box_bounds(space: gym.spaces.Box) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
    return space.low.astype(np.float32), space.high.astype(np.float32)


# -- Stable-Baselines3 -----------------------------------------------------------------------------------
class SB3Agent(Agent):
    """An SB3 model (PPO, A2C, DQN, SAC, TD3) or its policy as an :class:`Agent`.

    Deterministic actions equal ``model.predict(obs, deterministic=True)``. Stochastic actions follow the
    policy's own distribution (categorical, diagonal Gaussian clipped to the bounds, tanh-squashed Gaussian
    for SAC, epsilon-greedy for DQN) but draw from the generator given to :meth:`act`. The network runs where
    the policy lives when it is adapted (SB3's ``device``, e.g. a GPU: move it before, not after); inputs and
    outputs stay on the CPU, so attacks and callers never see another device.

    Args:
        model: an SB3 algorithm or its ``policy``.
        deterministic: act greedily (SB3's ``deterministic=True``).
        epsilon: DQN's exploration rate when not deterministic (default: the model's ``exploration_rate``).
        observation_space: the env's observation space. When it is the channel-last layout of the policy's
            channel-first image space (as with SB3's ``VecTransposeImage``), observations are transposed (each
            such entry of a Dict space); a space of the policy's shape is accepted whatever its bounds (noise
            may widen them).
        normalization: the observation statistics of SB3's ``VecNormalize`` the model was trained behind
            (:func:`rlwrappers.agents.training.read_normalization`): observations are normalized as
            ``VecNormalize`` does before the network sees them (and before any transposition), so attacks and
            callers work in the env's own units.

    Example:
        >>> import gymnasium as gym
        >>> from stable_baselines3 import PPO
        >>> from rlwrappers.agents import SB3Agent
        >>> model = PPO("MlpPolicy", "CartPole-v1", seed=0, device="cpu")
        >>> agent = SB3Agent(model)
        >>> obs = gym.make("CartPole-v1").observation_space.sample()[None]
        >>> bool(agent.act(obs)[0] == model.predict(obs, deterministic=True)[0][0])
        True
    """

    def __init__(
        self,
        model: Any,
        *,
        deterministic: bool = True,
        epsilon: float | None = None,
        observation_space: gym.Space[Any] | None = None,
        normalization: Normalization | None = None,
    ):
        require("stable_baselines3", purpose="SB3 agents")
        from stable_baselines3.common.base_class import BaseAlgorithm
        from stable_baselines3.common.policies import BasePolicy

        policy = model.policy if isinstance(model, BaseAlgorithm) else model
        if not isinstance(policy, BasePolicy):
            raise InvalidType(f"`model` must be an SB3 algorithm or policy, received {type(model).__name__}")
        if not isinstance(deterministic, bool):
            raise InvalidType(f"`deterministic` must be a bool, received {deterministic!r}")
        _check_epsilon(epsilon)
        kind = _sb3_kind(policy)
        if epsilon is not None and kind != "dqn":
            raise InvalidArgument(f"`epsilon` applies to DQN policies only, received {epsilon!r}")
        if kind == "actor_critic" and policy.use_sde:
            raise InvalidArgument("`model` uses gSDE exploration, which SB3Agent does not support")
        if kind == "td3" and not deterministic:
            raise InvalidArgument("`deterministic` must be True for TD3: its policy has no action distribution")
        if kind == "dqn" and epsilon is None and not deterministic:
            if not isinstance(model, BaseAlgorithm):
                raise InvalidArgument("`epsilon` is required for a stochastic DQN policy given without its model")
            epsilon = float(model.exploration_rate)  # type: ignore[attr-defined]
        action_space = policy.action_space
        if not isinstance(action_space, (gym.spaces.Discrete, gym.spaces.Box)):
            raise IncompatibleSpace(f"SB3Agent supports Discrete and Box actions, the model has {action_space}")
        if normalization is not None and not isinstance(normalization, Normalization):
            raise InvalidType(f"`normalization` must be a Normalization or None, received {normalization!r}")

        self.policy: Any = policy  # SB3's policy classes type their submodules loosely
        self.kind = kind
        self.deterministic = deterministic
        self.epsilon = epsilon
        self.action_space = action_space
        self.observation_space = policy.observation_space
        #: Whether observations arrive channel-last for a channel-first policy (they are transposed).
        self.channels_last = False
        #: The entries of a Dict observation that arrive channel-last for the policy (they are transposed).
        self.channels_last_keys: tuple[str, ...] = ()
        if observation_space is not None and isinstance(policy.observation_space, gym.spaces.Dict):
            self.channels_last_keys = _channel_last_keys(observation_space, policy.observation_space)
            self.observation_space = observation_space
        elif observation_space is not None and observation_space.shape != policy.observation_space.shape:
            self.channels_last = _is_channel_last_of(observation_space, policy.observation_space)
            if not self.channels_last:
                raise IncompatibleSpace(
                    f"`observation_space` {observation_space} is neither the policy's {policy.observation_space}"
                    " nor its channel-last layout"
                )
            self.observation_space = observation_space
        #: The ``VecNormalize`` statistics applied to each observation, or None.
        self.normalization = normalization
        #: What the agent was trained behind, when the files it was read from say (:mod:`rlwrappers.agents.rl_zoo`).
        self.training: Training | None = None
        self.policy.set_training_mode(False)
        #: Where the network runs; on the CPU nothing moves between devices.
        self.device = policy.device
        self._on_cpu = self.device.type == "cpu"
        if isinstance(action_space, gym.spaces.Box):
            self._low, self._high = _box_bounds(action_space)

    def __str__(self) -> str:
        mode = "deterministic" if self.deterministic else "stochastic"
        return f"SB3Agent({type(self.policy).__name__}, {mode})"

    def __deepcopy__(self, memo: dict[int, Any]) -> SB3Agent:
        """A copy with its own policy, less the distribution SB3 keeps from the policy's last call.

        After ``learn`` that distribution holds tensors of the training graph, which torch cannot deep-copy (a run
        under parameter noise acts with its own copy); SB3 makes a new one at each call, and this class never
        reads it.
        """
        cached = getattr(getattr(self.policy, "action_dist", None), "distribution", None)
        if cached is not None:
            memo[id(cached)] = None
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        for name, value in self.__dict__.items():
            setattr(new, name, copy.deepcopy(value, memo))
        return new

    def policy_input(self, x: Any) -> Any:
        """A batch in the env's units and layout as the policy reads it: normalized, then channel-first."""
        if self.normalization is not None:
            x = self.normalization.apply(x)
        if self.channels_last_keys:
            first = self.channels_last_keys
            return {key: value.permute(0, 3, 1, 2) if key in first else value for key, value in x.items()}
        return x.permute(0, 3, 1, 2) if self.channels_last else x

    def tensor(self, obs: Any) -> Any:
        """:meth:`Agent.tensor`, keeping float64 observations for the statistics, which normalize in float64.

        A normalized agent's frame stack holds float64 (:class:`~rlwrappers.studies.recipe.EnvRecipe`), so that
        its padding is the statistics' exact mean; the network still reads float32.
        """
        if self.normalization is None or getattr(obs, "dtype", None) != np.float64:
            return super().tensor(obs)
        return require("torch").as_tensor(obs)

    def outputs(self, x: torch.Tensor) -> Outputs:
        """Logits and values (PPO, A2C), q-values (DQN), or the action and its log-std (SAC, TD3), on the CPU."""
        return self._outputs(x, values=True)

    def _outputs(self, x: torch.Tensor, *, values: bool) -> Outputs:
        """:meth:`outputs`, leaving out the critic's values unless ``values``."""
        out = self._network(x, values=values)
        return out if self._on_cpu else out.cpu()

    def _network(self, x: torch.Tensor, *, values: bool) -> Outputs:
        """:meth:`_outputs` on the policy's device."""
        policy, x = self.policy, self.policy_input(x if self._on_cpu else _to(x, self.device))
        if self.kind == "actor_critic":
            features = policy.extract_features(x)
            pi_features, vf_features = (features, features) if policy.share_features_extractor else features
            head = policy.action_net(policy.mlp_extractor.forward_actor(pi_features))
            value = policy.value_net(policy.mlp_extractor.forward_critic(vf_features)).squeeze(-1) if values else None
            if isinstance(self.action_space, gym.spaces.Discrete):
                return Outputs(logits=head, values=value)
            return Outputs(action=head, values=value, log_std=policy.log_std.expand_as(head))
        if self.kind == "dqn":
            return Outputs(q_values=policy.q_net(x))
        if self.kind == "sac":
            mean, log_std, _ = policy.actor.get_action_dist_params(x)
            return Outputs(action=self._unscale(mean.tanh()), log_std=log_std)
        return Outputs(action=self._unscale(policy.actor(x)))

    def _unscale(self, a: torch.Tensor) -> torch.Tensor:
        """Maps a squashed action in [-1, 1] to the action space's bounds, as SB3's ``unscale_action``."""
        low = a.new_tensor(self._low)
        return low + 0.5 * (a + 1.0) * (a.new_tensor(self._high) - low)

    def _act(self, obs: NDArray[Any], rng: np.random.Generator | None) -> NDArray[Any]:
        torch = require("torch")
        with torch.no_grad():
            if self.kind == "sac" and not self.deterministic:
                assert rng is not None
                x = self.policy_input(_to(self.tensor(obs), self.device))
                mean, log_std, _ = self.policy.actor.get_action_dist_params(x)
                mean_np, std_np = mean.cpu().numpy(), log_std.exp().cpu().numpy()
                squashed = np.tanh(mean_np + std_np * rng.standard_normal(mean_np.shape).astype(np.float32))
                return self._low + 0.5 * (squashed + 1.0) * (self._high - self._low)
            out = self._outputs(self.tensor(obs), values=False)
        if out.action is not None:
            action = out.action.numpy()
            if not self.deterministic:  # a diagonal Gaussian policy (PPO, A2C)
                assert rng is not None and out.log_std is not None
                noise = rng.standard_normal(action.shape).astype(np.float32)
                action = action + np.exp(out.log_std.detach().numpy()) * noise
            return np.clip(action, self._low, self._high)
        return _choose(out.scores.numpy(), self.deterministic, self.epsilon, rng)

    def parameters(self) -> dict[str, torch.Tensor]:
        """The policy's parameters that decide actions: critics, value heads and target networks are left out."""
        if self.kind == "actor_critic":
            left_out = ("value_net.", "mlp_extractor.value_net.", "vf_features_extractor.")
            return {n: p for n, p in self.policy.named_parameters() if not n.startswith(left_out)}
        if self.kind == "dqn":
            return {f"q_net.{n}": p for n, p in self.policy.q_net.named_parameters()}
        return {f"actor.{n}": p for n, p in self.policy.actor.named_parameters()}


def _sb3_kind(policy: Any) -> str:
    """Which family an SB3 policy belongs to: how it acts and what its outputs are."""
    from stable_baselines3.common.policies import ActorCriticPolicy
    from stable_baselines3.dqn.policies import DQNPolicy
    from stable_baselines3.sac.policies import SACPolicy
    from stable_baselines3.td3.policies import TD3Policy

    kinds = {ActorCriticPolicy: "actor_critic", DQNPolicy: "dqn", SACPolicy: "sac", TD3Policy: "td3"}
    for cls, kind in kinds.items():
        if isinstance(policy, cls):
            return kind
    raise InvalidType(f"`model` has an unsupported policy class {type(policy).__name__}")


def _softmax(scores: NDArray[np.floating[Any]]) -> NDArray[np.float64]:
    z = scores.astype(np.float64) - scores.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def _to(x: Any, device: Any) -> Any:
    """A tensor, or a dict or tuple of them (nested), on ``device``."""
    return map_entries(lambda tensor: tensor.to(device), x)


def _channel_last_keys(space: gym.Space[Any], policy_space: gym.spaces.Dict) -> tuple[str, ...]:
    """The entries of a Dict space that are channel-last layouts of the policy's; the others must match it."""
    if not isinstance(space, gym.spaces.Dict) or set(space.spaces) != set(policy_space.spaces):
        raise IncompatibleSpace(f"`observation_space` {space} does not have the keys of the policy's {policy_space}")
    keys = []
    for key, own in policy_space.spaces.items():
        if space[key].shape == own.shape:
            continue
        if not _is_channel_last_of(space[key], own):
            raise IncompatibleSpace(
                f"`observation_space[{key!r}]` {space[key]} is neither the policy's {own} nor its channel-last layout"
            )
        keys.append(key)
    return tuple(keys)


def _is_channel_last_of(space: gym.Space[Any], channel_first: gym.Space[Any]) -> bool:
    return (
        isinstance(space, gym.spaces.Box)
        and isinstance(channel_first, gym.spaces.Box)
        and len(space.shape) == 3
        and space.shape == (*channel_first.shape[1:], channel_first.shape[0])
    )


# -- torch modules ---------------------------------------------------------------------------------------
class TorchAgent(Agent):
    """A ``torch.nn.Module`` as an :class:`Agent` (CleanRL-style agents).

    For a Dict or Tuple observation space the module takes a dict or tuple of float32 tensors, one batch per
    entry (nested as the space nests), as :meth:`~rlwrappers.agents.protocol.Agent.tensor` makes them (saliency
    maps, which perturb one image or vector, refuse such an agent).

    Args:
        module: the network.
        observation_space: the space of one observation it accepts.
        action_space: the space of one action; Discrete for heads "logits" and "q_values", Box for "action".
        head: what ``forward`` returns: "logits" (a policy: argmax to act, categorical when stochastic),
            "q_values" (argmax, epsilon-greedy when stochastic) or "action" (a deterministic continuous
            action, clipped to the bounds).
        forward: ``forward(module, x) -> tensor`` giving the head from a float batch ``x`` (default:
            ``module(x)``), e.g. ``lambda m, x: m.actor(x)`` for CleanRL's PPO agent; ``x`` is a dict or tuple
            of tensors for a Dict or Tuple observation space.
        value: optional ``value(module, x) -> tensor`` giving state values, e.g. ``lambda m, x: m.get_value(x)``.
        deterministic: act greedily.
        epsilon: exploration rate of a stochastic "q_values" agent.

    Example:
        >>> import gymnasium as gym, torch
        >>> from rlwrappers.agents import TorchAgent
        >>> env = gym.make("CartPole-v1")
        >>> net = torch.nn.Sequential(torch.nn.Linear(4, 2))
        >>> agent = TorchAgent(net, env.observation_space, env.action_space, head="logits")
        >>> agent.act(env.observation_space.sample()[None]).shape
        (1,)
    """

    def __init__(
        self,
        module: torch.nn.Module,
        observation_space: gym.Space[Any],
        action_space: gym.Space[Any],
        *,
        head: str,
        forward: Callable[[Any, torch.Tensor], torch.Tensor] | None = None,
        value: Callable[[Any, torch.Tensor], torch.Tensor] | None = None,
        deterministic: bool = True,
        epsilon: float | None = None,
    ):
        torch = require("torch", purpose="torch agents")
        if not isinstance(module, torch.nn.Module):
            raise InvalidType(f"`module` must be a torch.nn.Module, received {type(module).__name__}")
        if head not in HEADS:
            raise InvalidArgument(f"`head` must be one of {HEADS}, received {head!r}")
        for name, space in (("observation_space", observation_space), ("action_space", action_space)):
            if not isinstance(space, gym.Space):
                raise InvalidType(f"`{name}` must be a gymnasium Space, received {space!r}")
        wanted = gym.spaces.Box if head == "action" else gym.spaces.Discrete
        if not isinstance(action_space, wanted):
            raise IncompatibleSpace(f"head {head!r} needs a {wanted.__name__} action space, received {action_space}")
        for name, fn in (("forward", forward), ("value", value)):
            if fn is not None and not callable(fn):
                raise InvalidType(f"`{name}` must be callable, received {fn!r}")
        _check_epsilon(epsilon)
        if not deterministic and head == "action":
            raise InvalidArgument("`deterministic` must be True for head 'action': it has no action distribution")
        if epsilon is not None and head != "q_values":
            raise InvalidArgument(f"`epsilon` applies to head 'q_values' only, received {epsilon!r} for {head!r}")
        if not deterministic and head == "q_values" and epsilon is None:
            raise InvalidArgument("`epsilon` is required for a stochastic 'q_values' agent, received None")
        self.module = module
        self.observation_space = observation_space
        self.action_space = action_space
        self.head = head
        self.deterministic = deterministic
        self.epsilon = epsilon
        #: ``forward(module, x)`` given to the constructor, or None when the head is ``module(x)``.
        self.forward = forward
        self._value = value
        if isinstance(action_space, gym.spaces.Box):
            self._low, self._high = _box_bounds(action_space)

    def outputs(self, x: torch.Tensor) -> Outputs:
        """The declared head (and values, if a ``value`` function was given)."""
        out = self.module(x) if self.forward is None else self.forward(self.module, x)
        values = None if self._value is None else self._value(self.module, x).reshape(-1)
        return Outputs(**{self.head: out}, values=values)

    def _act(self, obs: NDArray[Any], rng: np.random.Generator | None) -> NDArray[Any]:
        torch = require("torch")
        with torch.no_grad():
            out = self.outputs(self.tensor(obs))
        if out.action is not None:  # detached: a head that views a parameter still requires grad under no_grad
            return np.clip(out.action.detach().numpy(), self._low, self._high)
        return _choose(out.scores.detach().numpy(), self.deterministic, self.epsilon, rng)

    def parameters(self) -> dict[str, torch.Tensor]:
        """Every parameter of the module."""
        return dict(self.module.named_parameters())


# -- plain callables -------------------------------------------------------------------------------------
class CallableAgent(Agent):
    """A plain function as an :class:`Agent`; it can act but has no differentiable outputs.

    ``fn(obs)`` maps one observation to one action; a function with an ``rng`` parameter, ``fn(obs, rng)``,
    is stochastic and draws from the generator the runner gives it. With ``batched=True`` it maps a batch. For
    a Dict or Tuple observation space one observation is a dict or tuple of entries, and a batch a dict or tuple
    of batches (:func:`~rlwrappers.agents.protocol.stack_observations`).

    Example:
        >>> import gymnasium as gym
        >>> from rlwrappers.agents import CallableAgent
        >>> env = gym.make("CartPole-v1")
        >>> agent = CallableAgent(lambda obs: int(obs[2] > 0), env.observation_space, env.action_space)
        >>> agent.act_one([0.0, 0.0, 0.1, 0.0])
        np.int64(1)
    """

    def __init__(
        self,
        fn: Callable[..., Any],
        observation_space: gym.Space[Any],
        action_space: gym.Space[Any],
        *,
        batched: bool = False,
    ):
        if not callable(fn):
            raise InvalidType(f"`fn` must be callable, received {fn!r}")
        for name, space in (("observation_space", observation_space), ("action_space", action_space)):
            if not isinstance(space, gym.Space):
                raise InvalidType(f"`{name}` must be a gymnasium Space, received {space!r}")
        self.fn = fn
        self.observation_space = observation_space
        self.action_space = action_space
        self.batched = batched
        try:
            self.deterministic = "rng" not in inspect.signature(fn).parameters
        except (TypeError, ValueError):  # builtins without a signature
            self.deterministic = True

    def _act(self, obs: Any, rng: np.random.Generator | None) -> NDArray[Any]:
        kwargs = {} if self.deterministic else {"rng": rng}
        if self.batched:
            return np.asarray(self.fn(obs, **kwargs))
        if type(obs) is np.ndarray:
            return np.asarray([self.fn(o, **kwargs) for o in obs])
        # a Dict or Tuple batch: each observation is taken out entry by entry
        return np.asarray([self.fn(take(obs, i), **kwargs) for i in range(batch_size(obs))])


# -- choosing an adapter --------------------------------------------------------------------------------
def adapt(
    agent: Any,
    observation_space: gym.Space[Any] | None = None,
    action_space: gym.Space[Any] | None = None,
    **kwargs: Any,
) -> Agent:
    """``agent`` as an :class:`Agent`, with the adapter that fits it.

    An Agent is returned as is, SB3 models and policies get :class:`SB3Agent`, torch modules
    :class:`TorchAgent` (``head=`` required) and callables :class:`CallableAgent`. The spaces are those of
    the env the agent will face; torch modules and callables need them.
    """
    if isinstance(agent, Agent):
        if kwargs:
            raise InvalidArgument(f"options {sorted(kwargs)} apply only when adapting, and `agent` is an Agent")
        return agent
    module = type(agent).__module__
    if module.startswith("stable_baselines3") or module.startswith("sb3_contrib"):
        return SB3Agent(agent, observation_space=observation_space, **kwargs)
    if _is_torch_module(agent):
        if observation_space is None or action_space is None:
            raise InvalidArgument("a torch module needs `observation_space` and `action_space` to be adapted")
        return TorchAgent(agent, observation_space, action_space, **kwargs)
    if callable(agent):
        if observation_space is None or action_space is None:
            raise InvalidArgument("a callable needs `observation_space` and `action_space` to be adapted")
        return CallableAgent(agent, observation_space, action_space, **kwargs)
    raise InvalidType(
        f"`agent` must be an Agent, an SB3 model, a torch module or a callable, received {type(agent).__name__}"
    )


def _is_torch_module(obj: Any) -> bool:
    torch = sys.modules.get("torch")  # a module instance means torch is already imported
    return torch is not None and isinstance(obj, torch.nn.Module)
