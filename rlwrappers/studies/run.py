"""Running an evaluation: an agent under several shifts over many seeds, each paired with a same-seed counterfactual.

:func:`evaluate` runs every (agent, shift, seed) for ``episodes`` episodes, plus one counterfactual run per (agent,
seed) without any shift, named ``"baseline"``. Episode ``i`` of a run with seed ``s`` resets the env with
:func:`~rlwrappers.studies.design.episode_seed` (s, i), and the agent's own randomness for that episode comes from a
generator derived from (s, i) too, so a shifted run and its counterfactual start every episode alike and differ only
by the shift. The counterfactual is shared by all shifts: with the same seeds and no shift it would be the same run
every time.

Each run writes one :class:`~rlwrappers.logs.Recorder` log. The run directory looks like::

    out/
      evaluation.json          what was asked: agents, env, shifts, episodes, seeds, options
      index.json               one row per run: agent, shift, seed, log path, status, mean return
      logs/<agent>/<shift>/seed<k>/   one log per run
      probes/<agent>/<shift>.npz      with ``probe=N``: N states seen with and without each shift
                                      (:class:`~rlwrappers.studies.probes.Probe`)

Runs go to local worker processes by default or to Ray (:class:`~rlwrappers.studies.design.Execution`), which
give the same returns. A sweep that was interrupted resumes where it stopped: runs whose logs are
complete are not redone. :func:`~rlwrappers.studies.results.open_evaluation` reads a run directory back.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import multiprocessing
import os
import pickle
import sys
from collections.abc import Generator, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import closing
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import gymnasium as gym

from rlwrappers import agents as agents_module
from rlwrappers._optional import require
from rlwrappers._version import __version__
from rlwrappers.error import InvalidArgument, InvalidType, LogError
from rlwrappers.logs.lock import LOCK_FILE, FolderLock
from rlwrappers.logs.reader import read_episodes, read_meta
from rlwrappers.logs.space import CANNOT_GROW, replace_file
from rlwrappers.schedule import Schedule
from rlwrappers.studies import arms, batched, interrupts
from rlwrappers.studies.design import (
    BASELINE,
    INDEX_FILE,
    SPEC_FILE,
    EnvSetup,
    Execution,
    RunSpec,
    Settings,
    ShiftSpec,
    Stack,
    Timing,
    check_counts,
    check_protocol,
    directory_name,
    index_row,
    is_parallel,
    parse_agents,
    parse_seeds,
    parse_shifts,
)
from rlwrappers.studies.probes import check_probe_space, run_probes
from rlwrappers.studies.recipe import EnvRecipe, trained_env, trainings
from rlwrappers.studies.results import Evaluation, open_evaluation, warn_if_not_identical

__all__ = ["check_picklable", "evaluate", "run_one"]


def run_one(spec: RunSpec, agent: Any, settings: Settings, root: str, stack: Stack = Stack()) -> dict[str, Any]:
    """Runs one (agent or team, shift, seed) and writes its log; returns its index row."""
    if settings.multiagent:
        from rlwrappers.studies import teams  # pettingzoo, an extra

        return teams.run_team(spec, agent, settings, root)
    return arms.run(spec, agent, settings, root, stack)


def _single_threaded_torch() -> None:
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


#: What a local worker process runs with: its agents, settings and stack, set by :func:`_start_worker`.
_WORKER: dict[str, Any] = {}


def _start_worker(agents: dict[str, Any], settings: Settings, stack: Stack, registrar: str | None) -> None:
    """A local worker's initializer: receives (by fork, or pickled) what every run needs besides its spec."""
    interrupts.stop_on_signals()
    _single_threaded_torch()
    _register(settings.env_id, registrar)
    _WORKER.update(agents=agents, settings=settings, stack=stack)


def _registrar(env_id: str) -> str | None:
    """The module of ``env_id``'s entry point: importing it registers the env (``ale_py.env`` for ALE's games).

    A worker started by spawn, forkserver or Ray has none of the parent's registrations; it imports this first.
    """
    spec = gym.registry.get(env_id)
    entry = getattr(spec, "entry_point", None)
    return entry.split(":")[0] if isinstance(entry, str) else None


def _register(env_id: str, registrar: str | None) -> None:
    """Makes ``env_id`` known to Gymnasium in this process, importing its registrar where it is not yet."""
    if registrar is not None and env_id not in gym.registry:
        importlib.import_module(registrar)


@dataclass(frozen=True)
class _Job:
    """Runs one worker plays in one go: one by one, or ``batch`` at a time (:mod:`rlwrappers.studies.batched`)."""

    specs: tuple[RunSpec, ...]
    batch: int = 1
    exact: bool = True


def _jobs(todo: list[RunSpec], workers: int, execution: Execution) -> list[_Job]:
    """The jobs workers take: single runs, or groups of runs batched together, a few per worker."""
    if execution.batch == 1:
        return [_Job((spec,)) for spec in todo]
    if workers == 1:
        size = len(todo)  # one queue: a slot that frees takes the next run
    else:  # every worker gets a job, and many runs make a few jobs per worker, to balance them
        size = max(min(execution.batch, -(-len(todo) // workers)), -(-len(todo) // (4 * workers)))
    return [_Job(tuple(todo[i : i + size]), execution.batch, execution.exact) for i in range(0, len(todo), size)]


def _run_job(
    job: _Job, agents: Mapping[str, Any], settings: Settings, root: str, stack: Stack
) -> Iterator[dict[str, Any]]:
    """Plays a job's runs; yields each index row as its run finishes."""
    if job.batch == 1:
        for spec in job.specs:
            yield run_one(spec, agents[spec.agent], settings, root, stack)
        return
    yield from batched.run_batched(job.specs, agents, settings, root, stack, slots=job.batch, exact=job.exact)


def _run_in_worker(job: _Job, root: str) -> list[dict[str, Any]]:
    if interrupts.stopping():
        raise KeyboardInterrupt("the study is stopping")
    return list(_run_job(job, _WORKER["agents"], _WORKER["settings"], root, _WORKER["stack"]))


def check_picklable(agents: Mapping[str, Any], stack: Stack, execution: Execution) -> None:
    """Rejects agents and wrappers that workers started without fork could not receive."""
    if not execution.pickles:
        return
    how = f"backend={execution.backend!r}" if execution.backend == "ray" else f"start_method={execution.start_method!r}"
    things = {**{f"agent {name!r}": a for name, a in agents.items()}}
    things.update({f"wrapper {w!r}": w for w in (*stack.under, *stack.over)})
    for what, thing in things.items():
        try:
            pickle.dumps(thing)
        except Exception as error:  # pickling raises many types: PicklingError, AttributeError, TypeError
            raise InvalidArgument(
                f"{what} cannot be pickled ({error}), and workers started with {how} receive it pickled;"
                " use the default start method (fork), workers=1, or a module-level function or object"
            ) from None


def _execute(
    todo: list[RunSpec], agents: dict[str, Any], settings: Settings, root: Path, stack: Stack, execution: Execution
) -> Generator[dict[str, Any], None, None]:
    """Yields each run's index row as it finishes; closing it early stops the runs in progress."""
    if not todo:
        return
    workers = min(execution.processes, len(todo))
    jobs = _jobs(todo, workers, execution)
    if execution.backend == "ray":
        yield from _execute_ray(jobs, agents, settings, root, stack, workers)
        return
    if workers == 1:
        for job in jobs:
            yield from _run_job(job, agents, settings, str(root), stack)
        return
    others = set(multiprocessing.active_children())
    pool = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=execution.context,
        initializer=_start_worker,
        initargs=(agents, settings, stack, _registrar(settings.env_id)),
    )
    try:
        pending: set[Future[list[dict[str, Any]]]] = {pool.submit(_run_in_worker, job, str(root)) for job in jobs}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield from future.result()
    except Exception:  # a run failed: the runs in progress finish, with their logs closed, and no other starts
        pool.shutdown(wait=True, cancel_futures=True)  # (a later shutdown would not wait: the pool forgets its workers)
        raise
    except BaseException:  # interrupted, or the caller stopped reading: the runs in progress stop too
        pool.shutdown(wait=False, cancel_futures=True)
        interrupts.stop_workers([p for p in multiprocessing.active_children() if p not in others])
        raise
    finally:
        pool.shutdown(wait=True)


def _execute_ray(
    todo: list[_Job],
    agents: dict[str, Any],
    settings: Settings,
    root: Path,
    stack: Stack,
    workers: int,
) -> Iterator[dict[str, Any]]:
    ray = require("ray", purpose="the Ray backend")
    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, configure_logging=False)
    pending: list[Any] = []
    try:
        remote = ray.remote(num_cpus=1)(_run_on_ray)
        agents_ref = ray.put(agents)
        registrar = _registrar(settings.env_id)
        pending = [remote.remote(job, agents_ref, settings, str(root), stack, registrar) for job in todo]
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            yield from ray.get(done[0])
    except BaseException:  # the runs in progress stop with their logs closed, before Ray shuts down
        for ref in pending:
            ray.cancel(ref)
        ray.wait(pending, num_returns=len(pending), timeout=interrupts.GRACE)
        raise
    finally:
        if started:
            ray.shutdown()


def _run_on_ray(
    job: _Job, agents: dict[str, Any], settings: Settings, root: str, stack: Stack, registrar: str | None
) -> list[dict[str, Any]]:
    _single_threaded_torch()
    _register(settings.env_id, registrar)
    return list(_run_job(job, agents, settings, root, stack))


def _finished_row(
    root: Path, spec: RunSpec, episodes: int, previous: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """The index row of a run whose log on disk is finished, or None: the log decides, never the index.

    A log is finished when it was closed and its episode table holds exactly ``episodes`` episodes, all
    complete (an episode that ``close`` cut short does not count).
    """
    path = root / spec.path
    if not (path / "episodes.parquet").exists():
        return None
    try:
        meta, table = read_meta(path), read_episodes(path)
    except (LogError, OSError, ValueError):
        return None
    if "end_time" not in meta or len(table) != episodes or not table["complete"].astype(bool).all():
        return None
    if previous is not None and previous.get("status") == "complete":
        return dict(previous)
    seconds = float(meta["end_time"]) - float(meta["start_time"])
    return index_row(spec, table["return"].to_numpy(dtype=float), seconds)


def evaluate(
    agent: Any,
    env_id: str | None,
    shifts: Sequence[ShiftSpec] | Mapping[str, ShiftSpec | Sequence[ShiftSpec]] = (),
    *,
    episodes: int = 10,
    seeds: int | Sequence[int] = 5,
    out: str | os.PathLike[str],
    when: str | Schedule | None = None,
    probe: int = 0,
    deterministic: bool = True,
    outside: Mapping[str, Any] | None = None,
    env: EnvSetup = EnvSetup(),
    timing: Timing = Timing(),
    execution: Execution = Execution(),
) -> Evaluation:
    """Runs ``agent`` on ``env_id`` under each shift and without, over ``seeds`` x ``episodes``, writing logs.

    Args:
        agent: a zoo name, an RL Zoo run folder or published agent's folder, an SB3 zip path (trusted files only:
            they unpickle code), ``FILE.py:FUNCTION`` (a function that makes an Agent for the env's spaces), an
            SB3 model, an :class:`~rlwrappers.agents.Agent`, or a dict of names to any of these to compare
            several agents. An agent read from RL Zoo's files is played behind what it was trained behind (see
            :mod:`rlwrappers.studies.recipe`), and ``evaluation.json`` says what, under ``agent_preprocessing``.
        env_id: a Gymnasium ID; None plays the env the agents were trained on, as their RL Zoo files say. An
            agent whose files name another base env is refused unless ``env.other_env`` is set.
        shifts: perturbation specs (each one shift, named by its text), or a dict of names to one spec or a
            list of specs applied together. The counterfactual ``"baseline"`` (no shift) is always run.
        episodes: episodes per run.
        seeds: a number of seeds (0, 1, ...) or the list of run seeds.
        out: the run directory; an earlier run of the same evaluation there is resumed.
        when: the schedule of shifts that do not set their own (default: always).
        probe: states per (agent, shift) at which to compare the agent's input with and without the shift
            (0: none; an env with Dict or Tuple observations takes none); see
            :class:`~rlwrappers.studies.probes.Probe`. :mod:`rlwrappers.studies.sweep` turns them
            into flip rates, LPIPS and spectra.
        deterministic: let agents act greedily; stochastic agents draw from per-episode generators.
        outside: for a PettingZoo parallel env (``env_id`` a short name from
            :data:`rlwrappers.studies.design.PARALLEL_ENVS` or a module with a ``parallel_env``): the groups of
            outside policies the shifts switch agents to, by name, each a team zoo name, a
            :class:`~rlwrappers.studies.teams.Team` or a dict of agent name -> policy; the group ``untrained``
            is always there. The agent is then a team (a team zoo name, a ``Team``, or a dict of names to them)
            and each shift a ``switch(k=..., to=GROUP)`` spec (see :doc:`multiagent`).
        env: how each arm's env is built: ``gym.make`` arguments, wrappers under and over the shifts, Atari
            lives as episodes (:class:`~rlwrappers.studies.design.EnvSetup`).
        timing: when the shifts begin: the causal protocol's ``shift_at`` or the observational protocol
            (:class:`~rlwrappers.studies.design.Timing`; :func:`~rlwrappers.studies.shift_impact.causal` and
            :func:`~rlwrappers.studies.shift_impact.observational` set it for you).
        execution: local workers or Ray, how many, how they start, and the progress bar
            (:class:`~rlwrappers.studies.design.Execution`).

    Returns:
        The :class:`~rlwrappers.studies.results.Evaluation` read back from ``out``.

    Example:
        >>> import tempfile, rlwrappers as rw
        >>> from rlwrappers.studies import Execution
        >>> result = rw.evaluate("ppo-CartPole-v1", "CartPole-v1", ["obs_noise(std=0.2)"], episodes=2, seeds=2,
        ...                      out=tempfile.mkdtemp(), execution=Execution(workers=1, progress=False))
        >>> sorted(result.index["shift"].unique())
        ['baseline', 'obs_noise(std=0.2)']
    """
    for name, value, kind in (("env", env, EnvSetup), ("timing", timing, Timing), ("execution", execution, Execution)):
        if not isinstance(value, kind):
            raise InvalidType(f"`{name}` must be a rlwrappers.studies.{kind.__name__}, received {value!r}")
    trained = {} if isinstance(env_id, str) and is_parallel(env_id) else trainings(agent)
    env_id = trained_env(trained, env_id, env.other_env)
    check_counts(episodes, probe)
    stack = env.stack
    parallel = is_parallel(env_id)
    if outside is not None and not parallel:
        raise InvalidArgument(f"`outside` applies to PettingZoo parallel envs only, and {env_id!r} is not one")
    if parallel and execution.batch > 1:
        raise InvalidArgument(
            f"`execution.batch` > 1 steps Gymnasium envs together, and {env_id!r} is a PettingZoo parallel env;"
            f" use batch=1, received batch={execution.batch}"
        )
    if outside is not None and not isinstance(outside, Mapping):
        raise InvalidType(f"`outside` must map group names to teams, received {outside!r}")
    if parallel:
        from rlwrappers.studies import teams  # pettingzoo, an extra

        named_agents, entries = teams.parse_teams(agent), teams.parse_switches(shifts, when)
    else:
        named_agents, entries = parse_agents(agent), parse_shifts(shifts, when)
    check_protocol(entries, int(episodes), timing, env.lives_as_episodes, stack)
    settings = Settings(
        env_id=env_id,
        env_kwargs=dict(env.kwargs),
        shifts=entries,
        episodes=int(episodes),
        deterministic=bool(deterministic),
        lives_as_episodes=bool(env.lives_as_episodes),
        probe=int(probe),
        agent_sources={name: str(a) if isinstance(a, (str, os.PathLike)) else None for name, a in named_agents.items()},
        shift_at=None if timing.shift_at is None else int(timing.shift_at),
        share_pre_shift=bool(timing.share_pre_shift),
        observational=bool(timing.observational),
        multiagent=parallel,
        outside={g: t if isinstance(t, str) else None for g, t in (outside or {}).items()},
        agent_preprocessing={name: training.record() for name, training in trained.items()},
    )
    run_seeds = parse_seeds(seeds)
    if parallel:
        named_agents = teams.check_teams(named_agents, outside or {}, settings, stack)
    else:
        settings = _check_applies(named_agents, settings, stack)
    check_picklable(named_agents, stack, execution)

    root = Path(out)
    request = settings.request(run_seeds, __version__)
    specs = [
        RunSpec(
            name,
            shift,
            seed,
            f"logs/{directory_name(name)}/{directory_name(shift)}/seed{seed}",
            settings.first_episode(shift),
        )
        for name in named_agents
        for shift in (BASELINE, *settings.shifts)
        for seed in run_seeds
    ]
    lock = _claim(root, request)
    try:
        with interrupts.signals_as_interrupts():
            _play(root, specs, named_agents, settings, stack, execution)
    finally:
        lock.release()
    result = open_evaluation(root)
    if settings.shift_at is not None:
        warn_if_not_identical(result.fixed_seed_check())
    return result


def _play(
    root: Path,
    specs: Sequence[RunSpec],
    agents: dict[str, Any],
    settings: Settings,
    stack: Stack,
    execution: Execution,
) -> None:
    """Plays the runs whose logs are not finished, keeping the index up to date, then takes the probes."""
    previous = _read_index(root)
    index: dict[str, dict[str, Any]] = {}
    todo = []
    for spec in specs:
        row = _finished_row(root, spec, settings.episodes - spec.first_episode, previous.get(spec.path))
        if row is None:
            row = {**asdict(spec), "status": "pending"}
            todo.append(spec)
        index[spec.path] = row
    _write_index(root, index)

    played = {spec.path: settings.episodes - spec.first_episode for spec in specs}
    bar = _progress(sum(played.values()), execution.progress)
    bar.update(sum(played.values()) - sum(played[spec.path] for spec in todo))
    try:
        with closing(_execute(todo, agents, settings, root, stack, execution)) as rows:
            for row in rows:
                index[row["path"]] = row
                _write_index(root, index)
                bar.update(played[row["path"]])
    except BaseException as error:  # the index may miss runs that finished as it stopped: the logs say which
        for spec in specs:
            row = _finished_row(root, spec, settings.episodes - spec.first_episode, index.get(spec.path))
            index[spec.path] = row or {**asdict(spec), "status": "pending"}
        with contextlib.suppress(LogError):  # a folder that cannot take it keeps the old index: the logs decide
            _write_index(root, index)
        if isinstance(error, LogError) and error.errno in CANNOT_GROW:
            finished = sum(row["status"] == "complete" for row in index.values())
            raise LogError(
                error.errno,
                f"{error.strerror}; the evaluation in {str(root)!r} stops with {finished} of {len(index)} runs"
                " finished: make room, then evaluate again with the same arguments to play the others",
            ) from error
        raise
    finally:
        bar.close()
    run_probes(agents, settings, root, stack)


def _check_applies(agents: Mapping[str, Any], settings: Settings, stack: Stack) -> Settings:
    """Builds each arm's env and fits each agent to it, so bad specs and agents fail before any run.

    Returns the settings with the image transposition of each agent that has a preprocessing record added to it.
    """
    transposed = set()
    for shift in (BASELINE, *settings.shifts):
        for name, a in agents.items():
            env, _ = EnvRecipe.of(settings, shift, stack, name).build()
            try:
                actor = arms.resolve_agent(a, settings, env)
                agents_module.check_compatible(actor, env)
                if settings.probe and shift == BASELINE:
                    check_probe_space(env.observation_space)
            finally:
                env.close()
            if getattr(actor, "channels_last", False) or getattr(actor, "channels_last_keys", ()):
                transposed.add(name)
    records = {
        name: {**record, "transposed": True} if name in transposed else record
        for name, record in settings.agent_preprocessing.items()
    }
    return replace(settings, agent_preprocessing=records)


def _claim(root: Path, request: dict[str, Any]) -> FolderLock:
    """Takes the run folder and writes the request, or checks that it holds the same one (a resume).

    The folder stays locked until the returned lock is released: a second evaluation of the same folder, in
    any process, gets a :class:`~rlwrappers.error.LogError` naming the holder.
    """
    if not (root / SPEC_FILE).exists() and root.exists() and any(p.name != LOCK_FILE for p in root.iterdir()):
        raise LogError(f"`out` {str(root)!r} is not empty and holds no evaluation; choose an empty or new folder")
    root.mkdir(parents=True, exist_ok=True)
    lock = FolderLock(root)
    try:
        path = root / SPEC_FILE
        text = json.dumps(request, indent=1, default=str)
        if not path.exists():
            replace_file(path, "the evaluation's request", lambda tmp: tmp.write_text(text + "\n"))
        elif json.loads(path.read_text()) != json.loads(text):
            raise LogError(
                f"{str(root)!r} holds a different evaluation; pass another `out`, or delete it to start over"
            )
    except BaseException:
        lock.release()
        raise
    return lock


def _read_index(root: Path) -> dict[str, dict[str, Any]]:
    path = root / INDEX_FILE
    if not path.exists():
        return {}
    return {row["path"]: row for row in json.loads(path.read_text())["runs"]}


def _write_index(root: Path, index: Mapping[str, dict[str, Any]]) -> None:
    text = json.dumps({"runs": list(index.values())}, indent=1) + "\n"
    replace_file(root / INDEX_FILE, "the evaluation's index", lambda tmp: tmp.write_text(text))


class _NoBar:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def _progress(total: int, show: bool) -> Any:
    if not show:
        return _NoBar()
    tqdm = require("tqdm", purpose="progress bars")
    return tqdm.tqdm(total=total, unit="episode", desc="evaluating")
