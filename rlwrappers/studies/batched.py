"""Many runs stepped together: their envs side by side, the agent asked for all their actions at once.

A run is :func:`rlwrappers.studies.arms.play`, a coroutine that yields a request for each action and writes its
own log. :func:`run_batched` keeps ``slots`` runs going: at each step it gathers their requests, computes the
actions, and sends each run its own; when a run finishes, the next one in the queue takes its slot. Each run
keeps its env, its wrappers' generators and its episode seeds, so batching changes nothing on the env's side.

The actions are computed in one of two ways:

- **exact** (the default): each request gets its own network pass and its own generator, as the per-run runner
  gives it. The logs equal the per-run runner's, bit for bit.
- **fast**: the requests of one deterministic agent share one pass over their stacked observations (Dict and
  Tuple observations stack entry by entry, :func:`~rlwrappers.agents.protocol.stack_observations`). A batched
  pass may differ from single ones in the last bits of a float (other kernels sum in another order), which can
  tip an action now and then and so change a trajectory: a run's every env-side draw is still its own, and
  replaying its recorded actions through the per-run runner gives its log back, but its returns may differ
  from exact mode's within noise. Stochastic agents act row by row in both modes.

A run whose perturbations change the agent itself (parameter noise, on the ``policy`` channel) acts with its
own copy of the agent, so that no other run sees its weights.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from rlwrappers.agents.protocol import stack_observations
from rlwrappers.core import Entry
from rlwrappers.error import InvalidArgument, LogError
from rlwrappers.logs import read_log
from rlwrappers.studies import arms
from rlwrappers.studies.design import BASELINE, RunSpec, Settings, Stack

if TYPE_CHECKING:
    import pandas as pd

    from rlwrappers.studies.results import Evaluation

__all__ = ["changes_agent", "compare_modes", "run_batched"]


def changes_agent(settings: Settings, shift: str) -> bool:
    """Whether a shift's perturbations change the agent they act on (parameter noise does)."""
    entries = settings.shifts.get(shift, []) if shift != BASELINE else []
    return any(Entry.parse(e).perturbation.channel == "policy" for e in entries)


def run_batched(
    todo: Sequence[RunSpec],
    agents: Mapping[str, Any],
    settings: Settings,
    root: str,
    stack: Stack,
    *,
    slots: int,
    exact: bool = True,
) -> Iterator[dict[str, Any]]:
    """Plays ``todo`` with ``slots`` runs at a time; yields each run's index row as it finishes.

    Closing the iterator early (or an error, or an interrupt) closes the logs of the runs in progress, as the
    per-run runner does: their finished episodes stay readable.
    """
    queue = deque(todo)
    running: list[tuple[arms.Play, arms.Request]] = []
    try:
        while queue or running:
            while queue and len(running) < slots:
                spec = queue.popleft()
                steps = arms.play(
                    spec, agents[spec.agent], settings, root, stack, private=changes_agent(settings, spec.shift)
                )
                try:
                    running.append((steps, next(steps)))
                except StopIteration as finished:
                    yield finished.value
            actions = _actions([request for _, request in running], exact)
            still = []
            for (steps, _), action in zip(running, actions, strict=True):
                try:
                    still.append((steps, steps.send(action)))
                except StopIteration as finished:
                    yield finished.value
            running = still
    finally:
        for steps, _ in running:  # each closes its log, and one that fails to (a full disk) leaves the others to close
            with contextlib.suppress(LogError):
                steps.close()


def _actions(requests: list[arms.Request], exact: bool) -> list[Any]:
    """The action of each request: one pass each, or in fast mode one pass per deterministic agent."""
    if exact:
        return [r.actor.act_one(r.obs, r.rng) for r in requests]
    actions: list[Any] = [None] * len(requests)
    groups: dict[int, list[int]] = {}
    for i, r in enumerate(requests):
        if r.actor.deterministic:
            groups.setdefault(id(r.actor), []).append(i)
        else:
            actions[i] = r.actor.act_one(r.obs, r.rng)
    for rows in groups.values():
        first = requests[rows[0]]
        batch = first.actor.act(stack_observations([requests[i].obs for i in rows]), first.rng)
        for i, action in zip(rows, batch, strict=True):
            actions[i] = action
    return actions


def compare_modes(fast: Evaluation, exact: Evaluation, *, reps: int = 2000, seed: int = 0) -> pd.DataFrame:
    """How far fast mode strays from exact mode, per arm, for two evaluations of the same request.

    Columns, one row per (agent, shift): ``exact_mean`` and ``fast_mean`` (mean returns over every episode),
    ``half_width`` (half the 95% interval of the exact arm's mean return: the card's paired bootstrap, episodes
    resampled within each seed, ``reps`` replicates seeded by ``seed``), ``within`` (the fast mean lies within
    it), and ``differ_share``, the share of episodes whose actions differ at some step (or whose lengths do).

    Raises:
        InvalidArgument: the two evaluations were not asked the same (agents, env, shifts, seeds, episodes).
    """
    import pandas as pd

    from rlwrappers.metrics.card import paired_bootstrap

    asked = ("agents", "env_id", "shifts", "seeds", "episodes")
    if any(fast.request.get(key) != exact.request.get(key) for key in asked):
        raise InvalidArgument(f"`fast` and `exact` must be evaluations of the same {list(asked)}")
    rows = []
    groups = exact.index.sort_values("seed").groupby(["agent", "shift"], sort=False)
    for (agent, shift), runs in groups:
        returns: dict[str, list[list[float]]] = {"exact": [], "fast": []}
        differ = episodes = 0
        for path in runs["path"]:
            logs = {"exact": read_log(exact.path / path), "fast": read_log(fast.path / path)}
            for mode, log in logs.items():
                returns[mode].append(log.episodes["return"].astype(float).tolist())
            by_mode = {mode: dict(tuple(log.steps.groupby("episode"))) for mode, log in logs.items()}
            for episode in logs["exact"].episodes["episode"]:
                a, b = (by_mode[mode].get(episode) for mode in ("exact", "fast"))
                episodes += 1
                differ += a is None or b is None or not _same_actions(a["action"], b["action"])
        exact_arm = np.asarray(returns["exact"])
        _, low, high = paired_bootstrap(
            [exact_arm], lambda r: float(np.mean(r)), np.random.default_rng(seed), reps=reps
        )
        exact_mean, fast_mean = float(exact_arm.mean()), float(np.mean(returns["fast"]))
        rows.append(
            {
                "agent": agent,
                "shift": shift,
                "exact_mean": exact_mean,
                "fast_mean": fast_mean,
                "half_width": (high - low) / 2.0,
                "within": abs(fast_mean - exact_mean) <= (high - low) / 2.0,
                "differ_share": differ / episodes,
            }
        )
    return pd.DataFrame(rows)


def _same_actions(a: Any, b: Any) -> bool:
    if len(a) != len(b):
        return False
    return bool(np.array_equal(np.stack(a.to_numpy()), np.stack(b.to_numpy())))
