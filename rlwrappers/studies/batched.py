"""Many runs stepped together: their envs side by side, the agent asked for all their actions at once.

A run is :func:`rlwrappers.studies.arms.play`, a coroutine that yields a request for each action and writes its
own log. :func:`run_batched` keeps ``slots`` runs going: at each step it gathers their requests, computes the
actions, and sends each run its own; when a run finishes, the next one in the queue takes its slot. Each run
keeps its env, its wrappers' generators and its episode seeds, so batching changes nothing on the env's side.

The actions are computed in one of two ways:

- **exact** (the default): each request gets its own network pass and its own generator, as the per-run runner
  gives it. The logs equal the per-run runner's, bit for bit.
- **fast**: the requests of one deterministic agent share one pass over their stacked observations. A batched
  pass may differ from single ones in the last bits of a float (other kernels sum in another order), which can
  tip an action now and then and so change a trajectory: a run's every env-side draw is still its own, and
  replaying its recorded actions through the per-run runner gives its log back, but its returns may differ
  from exact mode's within noise. Stochastic agents act row by row in both modes.

A run whose perturbations change the agent itself (parameter noise, on the ``policy`` channel) acts with its
own copy of the agent, so that no other run sees its weights.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from rlwrappers.core import Entry
from rlwrappers.studies import arms
from rlwrappers.studies.design import BASELINE, RunSpec, Settings, Stack

__all__ = ["changes_agent", "run_batched"]


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
        for steps, _ in running:
            steps.close()


def _actions(requests: list[arms.Request], exact: bool) -> list[Any]:
    """The action of each request: one pass each, or in fast mode one pass per deterministic agent."""
    if exact:
        return [r.actor.act(r.obs[None], r.rng)[0] for r in requests]
    actions: list[Any] = [None] * len(requests)
    groups: dict[int, list[int]] = {}
    for i, r in enumerate(requests):
        if r.actor.deterministic:
            groups.setdefault(id(r.actor), []).append(i)
        else:
            actions[i] = r.actor.act(r.obs[None], r.rng)[0]
    for rows in groups.values():
        first = requests[rows[0]]
        batch = first.actor.act(np.stack([requests[i].obs for i in rows]), first.rng)
        for i, action in zip(rows, batch, strict=True):
            actions[i] = action
    return actions
