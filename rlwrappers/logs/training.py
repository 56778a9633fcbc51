"""What the perturbations did during training, in Stable-Baselines3's logger (and so in TensorBoard).

:class:`PerturbationCallback` reads the ``info["rlwrappers"]`` records of every sub-env at every step, and of
every reset, and after each rollout records, per perturbation label:

- ``rlwrappers/<label>/active``: the share of steps on which it was active;
- ``rlwrappers/<label>/<field>``: the mean of each number it reported on those steps (drawn parameters, attack
  budgets, reward noise), and the rate of each yes-or-no (an action replaced);
- ``rlwrappers/<label>/return_by_<field>/<bin>``: the mean return of the rollout's finished training episodes
  whose value of ``<field>`` drawn at reset (a drawn parameter) fell in that bin: ``q1`` ... ``q4``, the
  quarters of the values drawn for them, or ``<low>-<high>`` for the edges given in ``bins``. Returns come
  from SB3's ``Monitor`` (``info["episode"]``), which ``make_vec_env`` adds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from numbers import Real
from typing import Any

import numpy as np

from rlwrappers import _check
from rlwrappers._optional import require
from rlwrappers.error import InvalidArgument

__all__ = ["PerturbationCallback"]

require("stable_baselines3", purpose="the SB3 training callback")
from stable_baselines3.common.callbacks import BaseCallback  # noqa: E402


class PerturbationCallback(BaseCallback):
    """Records what the perturbations did during SB3 training; see the module's docs.

    Args:
        bins: bin edges per drawn field (``{"values.gravity": [8, 9, 10, 11, 12]}``), values outside them
            counted in the end bins; a field without edges is binned by the quantiles of its draws.
        default_bins: quantile bins of a field without edges (4: quarters).
    """

    def __init__(self, bins: Mapping[str, Sequence[float]] | None = None, default_bins: int = 4, verbose: int = 0):
        super().__init__(verbose)
        self.bins = {key: np.asarray(edges, dtype=np.float64) for key, edges in (bins or {}).items()}
        for key, edges in self.bins.items():
            if edges.ndim != 1 or len(edges) < 2 or not np.all(np.diff(edges) > 0):
                raise InvalidArgument(f"`bins[{key!r}]` must be at least two increasing edges, received {edges}")
        self.default_bins = _check.integer("default_bins", default_bins, minimum=1)
        self._drawn: list[dict[tuple[str, str], float]] = []  # per sub-env: the values of its current episode
        self._reset_rollout()

    def _reset_rollout(self) -> None:
        self._steps = 0
        self._active: dict[str, int] = defaultdict(int)
        self._values: dict[tuple[str, str], list[float]] = defaultdict(list)
        self._returns: dict[tuple[str, str], list[tuple[float, float]]] = defaultdict(list)

    def _on_training_start(self) -> None:
        reset_infos = getattr(self.training_env, "reset_infos", None) or [{}] * self.training_env.num_envs
        self._drawn = [self._episode_values(info) for info in reset_infos]

    def _episode_values(self, info: Mapping[str, Any]) -> dict[tuple[str, str], float]:
        """The numbers a reset reported, per (label, field): the values drawn for the episode it starts."""
        values = {}
        for label, record in info.get("rlwrappers", {}).items():
            for field, value in record.items():
                if field != "active" and isinstance(value, Real) and not isinstance(value, bool):
                    values[label, field] = float(value)
        return values

    def _on_step(self) -> bool:
        infos = self.locals.get("infos", [])
        dones = self.locals.get("dones", np.zeros(len(infos), dtype=bool))
        self._steps += len(infos)
        for env, info in enumerate(infos):
            for label, record in info.get("rlwrappers", {}).items():
                self._active[label] += bool(record.get("active", False))
                for field, value in record.items():
                    if field != "active" and isinstance(value, Real):  # a bool field gives its rate
                        self._values[label, field].append(float(value))
            episode = info.get("episode")
            if episode is not None:
                for key, value in self._drawn[env].items():
                    self._returns[key].append((value, float(episode["r"])))
            if dones[env]:
                reset_infos = getattr(self.training_env, "reset_infos", None)
                self._drawn[env] = self._episode_values(reset_infos[env]) if reset_infos else {}
        return True

    def _on_rollout_end(self) -> None:
        if not self._steps:
            return
        for label, count in self._active.items():
            self.logger.record(f"rlwrappers/{label}/active", count / self._steps)
        for (label, field), values in self._values.items():
            self.logger.record(f"rlwrappers/{label}/{field}", float(np.mean(values)))
        for (label, field), pairs in self._returns.items():
            drawn, returns = np.array(pairs).T
            edges = self.bins.get(field)
            if edges is None:
                cuts = np.quantile(drawn, np.linspace(0, 1, self.default_bins + 1)[1:-1])
                where = np.searchsorted(cuts, drawn, side="right")
                names = [f"q{k + 1}" for k in range(self.default_bins)]
            else:
                where = np.clip(np.searchsorted(edges, drawn, side="right") - 1, 0, len(edges) - 2)
                names = [f"{edges[k]:.4g}-{edges[k + 1]:.4g}" for k in range(len(edges) - 1)]
            for k in np.unique(where):
                self.logger.record(
                    f"rlwrappers/{label}/return_by_{field}/{names[k]}", float(returns[where == k].mean())
                )
        self._reset_rollout()
