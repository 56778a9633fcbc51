r"""RL Zoo hyperparameters for perturbed IDs: each ``rlwrappers/...`` ID trains with its base env's settings.

RL Zoo looks hyperparameters up by env ID, so a perturbed ID needs an entry of its own. Pass the module of
your algorithm as the config::

    python -m rl_zoo3.train --algo ppo --env rlwrappers/CartPole-ObsNoise-v1 --gym-packages rlwrappers \
        --conf-file rlwrappers.zoo.hyperparams.ppo

Each module ``rlwrappers.zoo.hyperparams.<algo>`` holds ``hyperparams``: RL Zoo's own table for that algorithm (read
from the installed ``rl_zoo3`` package), plus, for every registered ``rlwrappers/`` ID whose base env is in
that table, a copy of the base env's entry. IDs registered by the packages given to ``--gym-packages`` are
covered, since RL Zoo imports them before it reads the config.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

from rlwrappers._optional import require
from rlwrappers.registration import base_ids

__all__ = ["hyperparameters"]


def hyperparameters(algo: str) -> dict[str, Any]:
    """RL Zoo's hyperparameter table for ``algo``, extended to every registered perturbed ID."""
    yaml = require("yaml", purpose="reading RL Zoo hyperparameters")
    require("rl_zoo3", purpose="RL Zoo hyperparameters")
    text = resources.files("rl_zoo3").joinpath("hyperparams", f"{algo}.yml").read_text()
    table: dict[str, Any] = yaml.safe_load(text)
    for env_id, base_id in base_ids().items():
        if base_id in table and env_id not in table:
            table[env_id] = dict(table[base_id])
    return table
