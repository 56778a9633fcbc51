"""Agents: one small protocol for acting and for differentiable outputs, with adapters to it.

- :mod:`~rlwrappers.agents.protocol`: :class:`Agent` and its :class:`Outputs`.
- :mod:`~rlwrappers.agents.adapters`: :class:`SB3Agent`, :class:`TorchAgent`, :class:`CallableAgent` and
  :func:`adapt`, which picks one.
- :mod:`~rlwrappers.agents.files`: :func:`load_sb3`, an agent from an SB3 ``.zip`` (trusted files only).

Zoo names (``ppo-CartPole-v1``) are resolved by :func:`rlwrappers.zoo.load_agent`, which builds on these.
"""

from rlwrappers.agents.adapters import HEADS, CallableAgent, SB3Agent, TorchAgent, adapt
from rlwrappers.agents.files import load_sb3, sb3_algorithm
from rlwrappers.agents.protocol import Agent, Outputs, check_compatible, fits

__all__ = [
    "HEADS",
    "Agent",
    "CallableAgent",
    "Outputs",
    "SB3Agent",
    "TorchAgent",
    "adapt",
    "check_compatible",
    "fits",
    "load_sb3",
    "sb3_algorithm",
]
