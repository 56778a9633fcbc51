"""Agents: one small protocol for acting and for differentiable outputs, with adapters to it.

- :mod:`~rlwrappers.agents.protocol`: :class:`Agent` and its :class:`Outputs`.
- :mod:`~rlwrappers.agents.adapters`: :class:`SB3Agent`, :class:`TorchAgent`, :class:`CallableAgent` and
  :func:`adapt`, which picks one.
- :mod:`~rlwrappers.agents.files`: :func:`load_sb3`, an agent from an SB3 ``.zip`` (trusted files only), and
  :func:`~rlwrappers.agents.files.load_script`, an agent made by a Python file (a CleanRL network).
- :mod:`~rlwrappers.agents.training`: what an agent was trained behind (:class:`Training`): env wrappers,
  ``VecNormalize`` statistics, frame stack.
- :mod:`~rlwrappers.agents.rl_zoo`: reading it from RL Zoo's run folders, published agents and SB3 zips
  (:func:`read_training`, :class:`AgentFiles`).

Zoo names (``ppo-CartPole-v1``) are resolved by :func:`rlwrappers.zoo.load_agent`, which builds on these.
"""

from rlwrappers.agents.adapters import HEADS, CallableAgent, SB3Agent, TorchAgent, adapt
from rlwrappers.agents.files import load_sb3, sb3_algorithm
from rlwrappers.agents.protocol import Agent, Outputs, check_compatible, fits
from rlwrappers.agents.rl_zoo import AgentFiles, read_training
from rlwrappers.agents.training import Training

__all__ = [
    "HEADS",
    "Agent",
    "AgentFiles",
    "CallableAgent",
    "Outputs",
    "SB3Agent",
    "TorchAgent",
    "Training",
    "adapt",
    "check_compatible",
    "fits",
    "load_sb3",
    "read_training",
    "sb3_algorithm",
]
