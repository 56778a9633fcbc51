"""A robustness card: one agent on one env under every family of shift of a severity ladder, in one batched run.

:func:`robustness_card` reads the env's ladder (:mod:`rlwrappers.ladders`), runs every arm (each family and
sub-family at levels 1 to 5, the recovery test, the interventions shown unrated, and the clean arm they are all
paired with) as one evaluation (:func:`~rlwrappers.studies.run.evaluate`) with batched runs
(:mod:`rlwrappers.studies.batched`), grades the episode table with :mod:`rlwrappers.metrics.grade` (skill,
scores, stars and their probability; card-v1's relative numbers beside), measures flip rates
(:mod:`rlwrappers.studies.flips`), and writes the card with :mod:`rlwrappers.report.card`. A training method's
several trained agents (``NAME@0,1,2``, or a list) each play every arm, and are graded together::

    out/
      card.json, card.html, badge.svg   the card (see rlwrappers.report.card)
      runs/                             the evaluation: evaluation.json, index.json, one log per run
                                        (a training method's: runs/run0, runs/run1, ..., one per trained agent)

Every arm plays the same seeds and episodes as the clean arm, so each shifted episode has a clean twin. An
interrupted card resumes from ``runs/``: finished runs are not played again. Same seeds and settings give the
same card, every number of ``card.json`` but its ``timings``.
"""

from __future__ import annotations

import hashlib
import math
import os
import time
import warnings
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import numpy as np
import pandas as pd

from rlwrappers import _check
from rlwrappers import ladders as ladders_module
from rlwrappers._version import __version__
from rlwrappers.agents.files import script_source
from rlwrappers.core import Entry, attach
from rlwrappers.error import IncompatibleSpace, InvalidArgument, InvalidType, MissingExtra
from rlwrappers.ladders.calibration import require_env
from rlwrappers.logs import read_log
from rlwrappers.logs.reader import read_episodes, read_meta
from rlwrappers.metrics import card as scores
from rlwrappers.metrics import grade, reproducibility
from rlwrappers.spec import format_value
from rlwrappers.studies.arms import replay, resolve_agent
from rlwrappers.studies.design import BACKENDS, BASELINE, EnvSetup, Execution, Stack, episode_seed
from rlwrappers.studies.flips import flip_rates, level_flip_rates
from rlwrappers.studies.recipe import EnvRecipe, trainings
from rlwrappers.studies.results import Evaluation
from rlwrappers.studies.run import evaluate

__all__ = ["MODES", "RECOVERY", "robustness_card"]

#: How a card computes its agent's actions: see :mod:`rlwrappers.studies.batched`.
MODES: Final = ("fast", "exact")
#: The name of the recovery arm.
RECOVERY: Final = "recovery"
#: The agent's name in the card's evaluation.
AGENT: Final = "agent"
#: Episodes per seed and arm by default; Atari games are long, so an Atari card plays fewer.
EPISODES: Final = 10
ATARI_GAMES: Final = 4
#: The most frames the card keeps of an episode for its animation.
FRAMES: Final = 100


def robustness_card(
    agent: Any,
    env_id: str,
    *,
    out: str | os.PathLike[str],
    families: Sequence[str] | None = None,
    seeds: int = 5,
    episodes: int | None = None,
    mode: str = "fast",
    reps: int = 2000,
    batch: int = 16,
    workers: int | None = None,
    backend: str = "local",
    start_method: str | None = None,
    progress: bool = True,
    ladder: ladders_module.Ladder | None = None,
) -> dict[str, Any]:
    """Grades ``agent`` on ``env_id`` under the families of shift of its ladder, writes the card, returns its record.

    Args:
        agent: a zoo name (``NAME`` or ``NAME@SEED``), an SB3 zip path (trusted files only), an RL Zoo folder,
            ``FILE.py:FUNCTION``, or an :class:`~rlwrappers.agents.Agent`; or a training method's trained agents,
            ``NAME@0,1,2`` or a list of any of these (:func:`training_runs`).
        env_id: an env with a shipped ladder (:func:`rlwrappers.ladders.ladders` lists them), or any other
            registered Gymnasium ID, whose provisional ladder is calibrated on first use and cached
            (:mod:`rlwrappers.ladders.provisional`).
        out: the card's folder; an interrupted card there resumes.
        families: run only these families (the card then has no overall rating); default: all of the ladder's.
        seeds: run seeds 0 .. seeds - 1, for every arm.
        episodes: episodes per seed and arm (default: 10, or :data:`ATARI_GAMES` whole games on Atari).
        mode: "fast" (one network pass per batch) or "exact" (one per run and step: the per-run runner's logs,
            bit for bit); see :mod:`rlwrappers.studies.batched`.
        reps: bootstrap replicates of every interval.
        batch: runs each worker steps together.
        workers: worker processes (default: one per core).
        backend: "local" or "ray".
        start_method: how local workers start (:class:`~rlwrappers.studies.design.Execution`); "spawn" for an
            agent on a GPU, which a forked worker cannot use.
        progress: show a progress bar.
        ladder: the ladder to play (default: :func:`rlwrappers.ladders.card_ladder`'s for ``env_id``), e.g. a
            provisional one with its own reference return (:func:`rlwrappers.ladders.provisional_ladder`).
    """
    if ladder is None:
        ladder = ladders_module.card_ladder(env_id)
    elif not isinstance(ladder, ladders_module.Ladder):
        raise InvalidType(f"`ladder` must be a rlwrappers.ladders.Ladder, received {ladder!r}")
    elif ladder.env_id != env_id:
        raise InvalidArgument(f"`ladder` is {ladder.env_id!r}'s, and the card's env is {env_id!r}")
    if ladder.reference_return is None:
        raise InvalidArgument(
            f"`ladder` ({ladder.version}, {env_id}) states no reference return, and skill needs one: take the"
            " ladder of rlwrappers.ladders.card_ladder(env_id, reference_return=R)"
        )
    require_env(env_id)
    if episodes is None:
        episodes = ATARI_GAMES if ladder.preprocessing == "atari-games" else EPISODES
    _check.choice("mode", mode, MODES)
    for name, value in (("seeds", seeds), ("episodes", episodes), ("reps", reps), ("batch", batch)):
        _check.integer(name, value, minimum=1)
    _check.choice("backend", backend, BACKENDS)
    if families is not None and (isinstance(families, str) or not isinstance(families, Sequence) or not families):
        raise InvalidType(f"`families` must be a non-empty list of family names, received {families!r}")
    arms = ladder.arms(families)
    if not arms:
        raise InvalidArgument(
            f"`families` {list(families or [])} has no arm on {env_id!r}; its families: {list(ladder.families)}"
        )
    exact = mode == "exact" or batch == 1  # one run at a time is exact whatever the mode
    shifts: dict[str, list[dict[str, Any]]] = {arm.name: arm.entries for arm in arms}
    if families is None:
        shifts[RECOVERY] = ladder.recovery.entries
        shifts.update({shown.arm: shown.entries for shown in ladder.interventions})
    root = Path(out)
    runs = training_runs(agent)
    for run in runs:
        _check_preprocessing(run, ladder)
    setup = EnvSetup(kwargs=ladder.env_kwargs, wrappers=ladders_module.preprocessing_wrappers(ladder.preprocessing))
    execution = Execution(
        backend=backend, workers=workers, start_method=start_method, progress=progress, batch=batch, exact=exact
    )
    folders = [root / "runs"] if len(runs) == 1 else [root / "runs" / f"run{i}" for i in range(len(runs))]
    played = [
        _play(run, env_id, shifts, arms, folder, setup, execution, seeds, episodes)
        for run, folder in zip(runs, folders, strict=True)
    ]
    record = _record(agent, runs, ladder, played, families, "exact" if exact else "fast", reps, seeds, episodes)
    seconds = sum(p.seconds for p in played)
    steps = sum(p.steps for p in played)
    record["timings"] = {"seconds": seconds, "agent_steps": steps, "steps_per_second": steps / max(seconds, 1e-9)}
    from rlwrappers.report.card import write_robustness_card

    first = played[0]
    write_robustness_card(record, root, frames=_frames(runs[0], first.evaluation, first.table, record, setup.stack))
    return record


def training_runs(agent: Any) -> list[Any]:
    """The trained agents a card grades: ``[agent]``, or a training method's runs.

    A zoo name with several training seeds, ``NAME@0,1,2``, stands for ``NAME@0``, ``NAME@1`` and ``NAME@2``; a
    list or tuple of agents (zips, folders, names, Agents) for its items.

    Example:
        >>> training_runs("ppo-CartPole-v1@0,1,2")
        ['ppo-CartPole-v1@0', 'ppo-CartPole-v1@1', 'ppo-CartPole-v1@2']
        >>> training_runs("ppo-CartPole-v1")
        ['ppo-CartPole-v1']
    """
    if isinstance(agent, str) and "," in agent.partition("@")[2] and not Path(agent).exists():
        name, _, seeds = agent.partition("@")
        return [f"{name}@{seed.strip()}" for seed in seeds.split(",")]
    if isinstance(agent, (list, tuple)):
        if len(agent) < 1:
            raise InvalidArgument("`agent` must name at least one trained agent, received an empty list")
        return list(agent)
    return [agent]


@dataclass(frozen=True)
class _Played:
    """One trained agent's evaluation for a card: its episode table, flip rates, agent steps and seconds."""

    evaluation: Evaluation
    table: dict[str, np.ndarray[Any, Any]]
    flips: dict[str, float]
    steps: int
    seconds: float


def _play(
    agent: Any,
    env_id: str,
    shifts: Mapping[str, list[dict[str, Any]]],
    arms: Sequence[ladders_module.Arm],
    folder: Path,
    setup: EnvSetup,
    execution: Execution,
    seeds: int,
    episodes: int,
) -> _Played:
    """Plays every arm with one trained agent into ``folder`` (resuming what is there)."""
    started, wall = time.perf_counter(), time.time()
    evaluation = evaluate(
        {AGENT: agent}, env_id, shifts, episodes=episodes, seeds=seeds, out=folder, env=setup, execution=execution
    )
    seconds = time.perf_counter() - started
    episodes_by_run = {path: read_episodes(evaluation.path / path) for path in evaluation.index["path"]}
    table = episode_returns(evaluation, episodes_by_run)
    flips = flip_rates(agent, evaluation, arms, setup.stack)
    return _Played(evaluation, table, flips, _agent_steps(evaluation, episodes_by_run, since=wall), seconds)


def episode_returns(
    evaluation: Evaluation, tables: Mapping[str, pd.DataFrame]
) -> dict[str, np.ndarray[Any, np.dtype[np.float64]]]:
    """Each arm's returns as a (seeds, episodes) matrix, rows in seed order: episode ``j`` of every arm is paired.

    ``tables`` holds each run's episode table, by its path in the index.
    """
    out: dict[str, Any] = {}
    for shift, rows in evaluation.index.groupby("shift", sort=False):
        paths = rows.sort_values("seed")["path"]
        out[str(shift)] = np.stack([tables[path]["return"].to_numpy(dtype=np.float64) for path in paths])
    return out


def _worst_episode(table: Mapping[str, np.ndarray[Any, Any]], record: Mapping[str, Any]) -> tuple[str, int, int] | None:
    """The arm of the lowest skill, and its episode (seed row, index) furthest below its clean twin."""
    scored = []
    for family in record["families"]:
        for arm, levels in _arm_levels(family):
            scored += [(level["skill"], f"{arm}@{level['level']}") for level in levels]
    scored = [(skill, name) for skill, name in scored if skill is not None]
    if not scored:
        return None
    name = min(scored, key=lambda item: item[0])[1]
    drop = table[BASELINE] - table[name]
    row, episode = np.unravel_index(int(np.argmax(drop)), drop.shape)
    return name, int(row), int(episode)


def _arm_levels(family: Mapping[str, Any]) -> list[tuple[str, list[dict[str, Any]]]]:
    """A family's arms' name prefixes and levels: its own, or those of its sub-families (``family.sub``)."""
    if not family["sub_families"]:
        return [(family["name"], family["levels"])]
    return [(f"{family['name']}.{sub['name']}", sub["levels"]) for sub in family["sub_families"]]


def episode_frames(
    agent: Any, evaluation: Evaluation, shift: str, seed: int, episode: int, stack: Stack = Stack()
) -> list[np.ndarray[Any, Any]]:
    """The frames of one logged episode, played again from its recorded actions, at most :data:`FRAMES` of them.

    Image envs show what the agent sees (the newest frame of its input, shifts included); other envs their
    ``rgb_array`` rendering. The env is built and reset as the run's was, so the episode is the logged one.
    """
    settings = evaluation.settings
    path, steps = evaluation.logged_episode(shift, seed, episode)
    probe, _ = EnvRecipe.of(settings, shift, stack, evaluation.agent_name).build()
    image = _is_image(probe.observation_space)
    renders = "rgb_array" in (probe.unwrapped.metadata.get("render_modes") or ())
    probe.close()
    if not (image or renders):
        raise IncompatibleSpace(f"{settings.env_id} neither shows pictures nor renders rgb_array frames")
    if not image:
        settings = replace(settings, env_kwargs={**settings.env_kwargs, "render_mode": "rgb_array"})
    env, _ = EnvRecipe.of(settings, shift, stack, evaluation.agent_name).build()
    attach(env, resolve_agent(agent, settings, env))
    every = max(1, -(-len(steps) // FRAMES))
    frames = []
    try:
        for t, obs in enumerate(replay(env, steps, episode_seed(seed, episode), f"episode {episode} of {path!r}")):
            if t % every == 0:
                frames.append(_picture(obs) if image else _render(env))
    finally:
        env.close()
    return frames


def _render(env: Any) -> np.ndarray[Any, Any]:
    """``env``'s ``rgb_array`` frame; :class:`MissingExtra` when it cannot render on this machine."""
    try:
        return np.asarray(env.render())
    except Exception as error:  # renderers fail each their own way: mujoco.FatalError, pygame.error, ...
        raise MissingExtra(
            f"{env.spec.id if env.spec else env} cannot render here ({type(error).__name__}: {error});"
            " for MuJoCo without a display set MUJOCO_GL=egl"
        ) from None


def _is_image(space: Any) -> bool:
    shape = getattr(space, "shape", None) or ()
    return getattr(space, "dtype", None) == np.uint8 and len(shape) == 3


def _picture(obs: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The newest frame of an image observation (channel last, or a channel-first stack) as an RGB image."""
    if obs.shape[-1] in (1, 3):
        frame = obs
    else:
        frame = obs[-1][..., np.newaxis]
    return np.ascontiguousarray(np.repeat(frame, 3, axis=-1) if frame.shape[-1] == 1 else frame)


def _frames(
    agent: Any,
    evaluation: Evaluation,
    table: Mapping[str, np.ndarray[Any, Any]],
    record: Mapping[str, Any],
    stack: Stack,
) -> dict[str, Any] | None:
    """The clean episode and its twin under the worst shift, for the card's animation."""
    worst = _worst_episode(table, record)
    if worst is None:
        return None
    shift, row, episode = worst
    seed = record["settings"]["seeds"][row]
    try:
        return {
            "clean": episode_frames(agent, evaluation, BASELINE, seed, episode, stack),
            "worst": episode_frames(agent, evaluation, shift, seed, episode, stack),
            "worst_label": f"{shift}, seed {seed}, episode {episode}",
        }
    except (MissingExtra, IncompatibleSpace) as error:
        warnings.warn(f"the card shows no episodes: {error}", UserWarning, stacklevel=3)
        return None


def _agent_steps(evaluation: Evaluation, tables: Mapping[str, pd.DataFrame], since: float) -> int:
    """The agent steps of the runs played from ``since`` on (a resumed card times only what it played)."""
    return sum(
        int(table["length"].sum())
        for path, table in tables.items()
        if float(read_meta(evaluation.path / path)["start_time"]) >= since
    )


def _generator(*names: str) -> np.random.Generator:
    """A bootstrap generator per family: the same whichever families a card runs."""
    return np.random.default_rng([zlib.crc32(name.encode()) for name in names])


def _number(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


def _pair(values: tuple[float, float]) -> list[float] | None:
    return None if any(math.isnan(v) for v in values) else [float(v) for v in values]


def _repro(returns: np.ndarray[Any, Any]) -> dict[str, float]:
    flat = returns.ravel()
    return {
        "mad": float(reproducibility.mad(flat)),
        "iqr": float(reproducibility.iqr(flat)),
        "lcb": float(reproducibility.lcb(flat, 1.0)),
    }


def _estimate(e: grade.Estimate) -> tuple[float | None, list[float] | None]:
    """An estimate as the record holds it: its value (None when nan) and its interval (None when there is none)."""
    return _number(e.value), _pair((e.low, e.high))


def _levels(
    arms: Sequence[ladders_module.Arm], graded: grade.FamilyGrade, flips: Mapping[Any, float], by_level: bool
) -> list[dict[str, Any]]:
    """A family's levels in the record; ``by_level`` reads the flip rates by level (a family of sub-families)."""
    levels = []
    for i, level in enumerate(dict.fromkeys(arm.level for arm in arms)):
        skill, skill_ci = _estimate(graded.skill[i])
        impact, impact_ci = _estimate(graded.impact[i])
        levels.append(
            {
                "level": level,
                "spec": [_spec(e) for arm in arms if arm.level == level for e in arm.entries],
                "mean_return": graded.mean_return[i],
                "skill": skill,
                "skill_ci": skill_ci,
                "impact": impact,
                "impact_ci": impact_ci,
                "normalized": None if impact is None else 1.0 - impact,
                "flip_rate": _number(flips.get(level if by_level else arms[i].name, math.nan)),
            }
        )
    return levels


def _family(
    name: str,
    info: Mapping[str, Any],
    arms: Sequence[ladders_module.Arm],
    graded: grade.FamilyGrade,
    table: Mapping[str, np.ndarray[Any, Any]],
    flips: Mapping[str, float],
) -> dict[str, Any]:
    """One family's (or sub-family's) entry of the record."""
    subs = [
        _family(sub, info["sub_families"][sub], [a for a in arms if a.sub_family == sub], child, table, flips)
        for sub, child in graded.sub_families.items()
    ]
    score, score_ci = _estimate(graded.score)
    ausc, ausc_ci = _estimate(graded.relative_ausc)
    level3 = np.concatenate([table[arm.name] for arm in arms if arm.level == 3], axis=1)
    return {
        "name": name,
        "title": info["title"],
        "unit": info["unit"],
        "levels": _levels(arms, graded, level_flip_rates(flips, arms) if subs else flips, bool(subs)),
        "score": score,
        "score_ci": score_ci,
        "stars": graded.stars,
        "relative": {"ausc": ausc, "ausc_ci": ausc_ci, "tolerated": graded.tolerated},
        "reproducibility": {"clean": _repro(table[BASELINE]), "level3": _repro(level3)},
        "sub_families": subs or None,
    }


def _spec(entry: Mapping[str, Any]) -> str:
    """An entry as a spec string that writes out every numeric parameter, defaults too: a card shows its levels."""
    parsed = Entry.parse(dict(entry))
    if parsed.drawn:
        return str(parsed)  # its distributions, written as such
    params = parsed.to_dict()
    name, when = params.pop("name"), params.pop("when")
    changed = parsed.perturbation.changed_params()
    words = [f"{key}={format_value(value)}" for key, value in params.items() if key in changed or _numeric(value)]
    if when != "always":
        words.append(f"when={when}")
    return f"{name}({', '.join(words)})"


def _numeric(value: Any) -> bool:
    values = value if isinstance(value, (list, tuple)) else [value]
    return bool(values) and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


def _recovery(evaluations: Sequence[Evaluation], recovery: ladders_module.Recovery) -> dict[str, Any]:
    """The recovery test's entry: the clean band, the shifted arm's mean reward, the time to recover.

    The episodes of every trained agent are pooled.
    """
    rewards = {}
    for shift in (BASELINE, RECOVERY):
        episodes = []
        for evaluation in evaluations:
            for path in evaluation.index.loc[evaluation.index["shift"] == shift].sort_values("seed")["path"]:
                steps = read_log(evaluation.path / path).steps
                episodes += [g["reward"].to_numpy(dtype=np.float64) for _, g in steps.groupby("episode", sort=True)]
        rewards[shift] = episodes
    band = scores.recovery_band(rewards[BASELINE], recovery.window)
    times = [scores.recovery_time(r, band, recovery.stop, recovery.window, recovery.horizon) for r in rewards[RECOVERY]]
    recovered = [t for t in times if t is not None]

    def mean_per_step(episodes: list[np.ndarray[Any, Any]]) -> list[float | None]:
        longest = max(len(e) for e in episodes)
        means = [scores.trailing_mean(e, recovery.window) for e in episodes]
        return [_number(float(np.mean([m[t] for m in means if len(m) > t]))) for t in range(longest)]

    return {
        "spec": [_spec(e) for e in recovery.entries],
        "start": recovery.start,
        "stop": recovery.stop,
        "window": recovery.window,
        "horizon": recovery.horizon,
        "episodes": len(times),
        "median_steps": float(np.median(recovered)) if recovered else None,
        "never_share": 1.0 - len(recovered) / len(times),
        "clean_mean": mean_per_step(rewards[BASELINE]),
        "band": [_number(float(b)) for b in band],
        "shifted_mean": mean_per_step(rewards[RECOVERY]),
    }


#: How the card's facts describe each source of RL Zoo's files.
_SOURCES: Final = {
    "sb3-zip": "an SB3 zip",
    "rl-zoo-run": "an RL Zoo run",
    "rl-zoo-published": "a published RL Zoo agent",
}


def _check_preprocessing(agent: Any, ladder: ladders_module.Ladder) -> None:
    """Refuses an agent whose training pipeline the ladder's preprocessing cannot be played behind.

    A ladder with its own preprocessing (Breakout's) cannot also play the agent's env wrappers and frame stack.
    (A ladder's per-entry levels fit an agent that sees stacked frames: they repeat over the frames,
    :func:`rlwrappers.studies.recipe.tiled`.)
    """
    trained = trainings({AGENT: agent}).get(AGENT)
    if trained is None:
        return
    stacked = bool(trained.frame_stack or trained.vec_env_wrappers)
    if ladder.preprocessing is not None and (trained.env_wrappers or stacked):
        raise InvalidArgument(
            f"the {ladder.env_id} ladder builds its env with the preprocessing {ladder.preprocessing!r}, and the"
            f" agent {str(agent)!r} was trained behind its own wrappers and frame stack: one card cannot play both;"
            " grade it with `rlwrappers evaluate` under the ladder's shifts instead"
        )


def _agent_identity(agent: Any, trained: Mapping[str, Any] | None) -> dict[str, Any]:
    """The agent's name, where it came from, and the SHA-256 of its weights' file where there is one."""
    if trained is not None:
        model = Path(trained["model"])
        digest = hashlib.sha256(model.read_bytes()).hexdigest()
        name = Path(agent).stem if Path(agent).suffix == ".zip" else str(agent)
        return {"name": name, "source": str(agent), "sha256": digest, "detail": _SOURCES[trained["source"]]}
    if isinstance(agent, (str, os.PathLike)):
        script = script_source(agent)
        if script is not None:
            digest = hashlib.sha256(Path(script[0]).read_bytes()).hexdigest()
            detail = f"made by {script[1]} in a Python file"
            return {"name": str(agent), "source": str(agent), "sha256": digest, "detail": detail}
        from rlwrappers import zoo

        name, _, seed = str(agent).partition("@")
        card = zoo.card(name)
        file = card["seeds"][seed or "0"]
        detail = f"{card['algo']} trained on {card['env_id']}, training seed {seed or '0'}"
        return {"name": str(agent), "source": "zoo", "sha256": file["sha256"], "detail": detail}
    return {"name": type(agent).__name__, "source": "object", "sha256": None, "detail": str(agent)}


def _family_returns(
    by_family: Mapping[str, Sequence[ladders_module.Arm]], table: Mapping[str, np.ndarray[Any, Any]]
) -> dict[str, Any]:
    """Each family's levels' returns (or its sub-families'), as :func:`rlwrappers.metrics.grade.grade` takes them."""
    returns: dict[str, Any] = {}
    for name, mine in by_family.items():
        if mine[0].sub_family is None:
            returns[name] = [table[arm.name] for arm in mine]
        else:
            subs: dict[str, list[Any]] = {}
            for arm in mine:
                subs.setdefault(str(arm.sub_family), []).append(table[arm.name])
            returns[name] = subs
    return returns


def _mean_flips(played: Sequence[_Played]) -> dict[str, float]:
    """Each arm's flip rate, the mean over the trained agents that have one."""
    names = dict.fromkeys(name for p in played for name in p.flips)
    out = {}
    for name in names:
        rates = [p.flips[name] for p in played if name in p.flips and not math.isnan(p.flips[name])]
        out[name] = float(np.mean(rates)) if rates else math.nan
    return out


def _record(
    agent: Any,
    runs: Sequence[Any],
    ladder: ladders_module.Ladder,
    played: Sequence[_Played],
    families: Sequence[str] | None,
    mode: str,
    reps: int,
    seeds: int,
    episodes: int,
) -> dict[str, Any]:
    """The card's record (format ``rlwrappers-robustness-card`` 2), every number from the episode tables.

    A training method's runs (several trained agents) are graded together: each arm's table is ``(runs, seeds,
    episodes)``, and the bootstrap resamples runs before episodes.
    """
    arms = ladder.arms(families)
    reference = ladder.reference_return
    assert reference is not None and ladder.reference is not None and ladder.random is not None  # card-v2 on
    by_family: dict[str, list[ladders_module.Arm]] = {}
    for arm in arms:
        by_family.setdefault(arm.family, []).append(arm)
    if len(played) == 1:
        table = played[0].table
    else:
        table = {arm: np.stack([p.table[arm] for p in played]) for arm in played[0].table}
    flips = _mean_flips(played)
    returns = _family_returns(by_family, table)
    graded = grade.grade(table[BASELINE], returns, ladder.random_return, reference, _generator("card"), reps=reps)
    entries = [
        _family(name, ladder.families[name], mine, graded.families[name], table, flips)
        for name, mine in by_family.items()
    ]
    complete = families is None
    score, score_ci = _estimate(graded.score)
    ausc, ausc_ci = _estimate(graded.relative_mean_ausc)
    clean_skill, clean_skill_ci = _estimate(graded.clean_skill)
    worst = graded.families[graded.worst_family]
    evaluations = [p.evaluation for p in played]
    trained = evaluations[0].request.get("agent_preprocessing", {}).get(AGENT)
    identities = [
        _agent_identity(run, e.request.get("agent_preprocessing", {}).get(AGENT))
        for run, e in zip(runs, evaluations, strict=True)
    ]
    record = {
        "format": "rlwrappers-robustness-card",
        "format_version": 2,
        "ladder": ladder.version,
        "env_id": ladder.env_id,
        "agent": identities[0] if len(runs) == 1 else _method_identity(agent, identities),
        "package_version": __version__,
        "settings": {
            "seeds": list(range(seeds)),
            "episodes": episodes,
            "mode": mode,
            "reps": reps,
            "families": [e["name"] for e in entries],
            "complete": complete,
            "deterministic": True,
        },
        "random_return": ladder.random_return,
        "reference_return": reference,
        "random": dict(ladder.random),
        "reference": dict(ladder.reference),
        "clean": {
            "mean_return": graded.clean_return.value,
            "ci": _pair((graded.clean_return.low, graded.clean_return.high)),
            "skill": clean_skill,
            "skill_ci": clean_skill_ci,
            "reproducibility": _repro(table[BASELINE]),
        },
        "families": entries,
        "overall": {
            "score": score,
            "score_ci": score_ci,
            "stars": graded.stars if complete else None,
            "stars_probability": graded.stars_probability if complete else None,
            "worst_family": graded.worst_family,
            "worst_score": worst.score.value,
            "relative": {"mean_ausc": ausc, "mean_ausc_ci": ausc_ci},
        },
        "recovery": _recovery(evaluations, ladder.recovery) if complete else None,
        "interventions": [
            _intervention(shown, table, (ladder.random_return, reference), reps) for shown in ladder.interventions
        ]
        if complete
        else [],
    }
    record["ladder_sha256"] = ladder.sha256
    if ladder.provisional is not None:  # only then, so that other cards keep their keys
        record["provisional"] = dict(ladder.provisional)
    if trained is not None:
        record["agent_preprocessing"] = trained
    if len(runs) > 1:  # a training method: each trained agent's own grade, beside the method's
        record["runs"] = [
            _run_grade(identity, p.table, by_family, (ladder.random_return, reference), reps, complete)
            for identity, p in zip(identities, played, strict=True)
        ]
    return record


def _method_identity(agent: Any, identities: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A training method's identity: its name, and how many trained agents stand for it."""
    names = [str(identity["name"]) for identity in identities]
    name = str(agent) if isinstance(agent, str) else " + ".join(names)
    sources = sorted({str(identity["source"]) for identity in identities})
    detail = f"a training method over {len(names)} trained agents (training seeds): {', '.join(names)}"
    return {"name": name, "source": ", ".join(sources), "sha256": None, "detail": detail}


def _run_grade(
    identity: Mapping[str, Any],
    table: Mapping[str, np.ndarray[Any, Any]],
    by_family: Mapping[str, Sequence[ladders_module.Arm]],
    returns: tuple[float, float],
    reps: int,
    complete: bool,
) -> dict[str, Any]:
    """One trained agent's score and stars, graded alone."""
    graded = grade.grade(table[BASELINE], _family_returns(by_family, table), *returns, _generator("card"), reps=reps)
    score, score_ci = _estimate(graded.score)
    return {
        **identity,
        "clean_mean_return": graded.clean_return.value,
        "score": score,
        "score_ci": score_ci,
        "stars": graded.stars if complete else None,
    }


def _intervention(
    shown: ladders_module.LadderIntervention,
    table: Mapping[str, np.ndarray[Any, Any]],
    returns: tuple[float, float],
    reps: int,
) -> dict[str, Any]:
    """An intervention's entry: its mean return, skill and relative impact, paired with the clean arm like a level.

    ``returns`` are the random and the reference return.
    """
    graded = grade.grade(
        table[BASELINE],
        {shown.arm: [table[shown.arm]]},
        *returns,
        _generator(shown.arm),
        reps=reps,
    ).families[shown.arm]
    skill, skill_ci = _estimate(graded.skill[0])
    impact, impact_ci = _estimate(graded.impact[0])
    return {
        "name": shown.name,
        "doc": shown.doc,
        "spec": [_spec(e) for e in shown.entries],
        "mean_return": graded.mean_return[0],
        "skill": skill,
        "skill_ci": skill_ci,
        "impact": impact,
        "impact_ci": impact_ci,
    }
