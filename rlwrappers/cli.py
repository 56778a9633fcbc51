"""The ``rlwrappers`` command line: run evaluations, sweeps, offline robustness and saliency studies; report.

``rlwrappers demo`` evaluates a zoo agent under seed 002's six kinds of uncertainty and writes a report;
``rlwrappers evaluate`` does the same for any agents, env and shifts, and runs seed 001's causal
(``--shift-at-episode``) and observational (``--observational``) protocols; ``rlwrappers sweep`` runs one
perturbation at each value of one parameter; ``rlwrappers report RUN_DIR`` turns a run directory into tables,
plots and one HTML page; ``rlwrappers robustness`` measures seed 000's offline robustness of training pipelines
under interventions on game state; ``rlwrappers explain`` benchmarks seed 003's saliency maps on an agent's
states; ``rlwrappers list`` prints the perturbed env IDs, the perturbations, the
schedules and the zoo agents. ``rlwrappers COMMAND --help`` explains each.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import os
import signal
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

import gymnasium as gym

from rlwrappers import schedule
from rlwrappers.core import perturbations
from rlwrappers.error import Error, InvalidArgument
from rlwrappers.registration import base_ids, catalogue
from rlwrappers.studies.design import INDEX_FILE, SPEC_FILE, EnvSetup, Execution, Timing
from rlwrappers.studies.interrupts import Interrupted
from rlwrappers.studies.shift_impact import DEFAULT_STRIKE
from rlwrappers.studies.sweep import SWEEPS

__all__ = ["main"]

_PARTS = ("ids", "perturbations", "schedules", "agents", "teams", "sets", "ladders")

#: What ``rlwrappers demo`` runs.
DEMO_AGENT = "ppo-CartPole-v1"
DEMO_ENV = "CartPole-v1"
DEMO_EPISODES = 10
DEMO_SEEDS = 10
DEMO_OUT = "rlwrappers-demo"
#: Seed 002's six kinds of uncertainty, each strong enough to move this agent (the zoo trains at weaker levels).
DEMO_SHIFTS = {
    "obs_noise": "obs_noise(std=0.1)",
    "action_noise": "action_noise(p=0.3)",
    "reward_noise": "reward_noise(std=1.0)",
    "init_noise": "init_noise(std=0.15)",
    "dynamics": "dynamics_shift(scales={'length': 1.5}, when=prob(p=0.5))",
    "param_noise": "param_noise(std=0.3)",
}

#: States per shift that ``evaluate`` and ``sweep`` probe for flips and perceptual distances.
PROBE = 64
#: Run seeds unless ``--seeds`` says otherwise (seed 001's protocol uses 10).
SEEDS = 5
#: ``--shift-at-episode`` without a number: halfway through the episodes.
HALFWAY = "halfway"

TRUST = (
    "Agent files: a zoo name loads weights that run no code. An SB3 .zip is unpickled, which runs code stored "
    "in the file: evaluate only zips you trust."
)


def _list(parts: Sequence[str]) -> None:
    if "ids" in parts:
        entries = catalogue()
        catalogued = {e.id for e in entries}
        width = max(len(e.id) for e in entries)
        print(f"Registered IDs (gym.make them after `import rlwrappers`), {len(entries)} in the catalogue:")
        for e in entries:
            print(f"  {e.id:<{width}}  {e.spec:<46} {e.doc}")
        extra = sorted(i for i in base_ids() if i not in catalogued)
        if extra:
            print("Registered in this process with rw.register:")
            for env_id in extra:
                print(f"  {env_id}")
    if "perturbations" in parts:
        print("Perturbations (spec strings `name(key=value, ...)`; every one also takes `when` and `label`):")
        for info in perturbations():
            wrapper = f" [rw.{info.wrapper}]" if info.wrapper else ""
            print(f"  {info.name} ({info.channel}){wrapper}: {info.summary}")
            for key, (default, doc) in info.params.items():
                print(f"      {key}={default!r}: {doc}")
    if "schedules" in parts:
        print("Schedules (`when=`; combine with &, | and ~):")
        for name, summary in schedule.summaries().items():
            print(f"  {name}: {summary}")
    if "agents" in parts:
        from rlwrappers import zoo

        print("Zoo agents (`--agent NAME` or NAME@SEED; rw.load_agent(NAME, seed=SEED)):")
        for name, card in zoo.cards().items():
            seeds = ",".join(sorted(card["seeds"], key=int))
            clean = [entry["returns"]["clean"]["mean"] for entry in card["seeds"].values()]
            trained = card["trained_under"] or "clean env"
            print(f"  {name:<32} seeds {seeds:<6} trained on {trained}; clean return {sum(clean) / len(clean):.4g}")
    for part, show in (("sets", _list_sets), ("teams", _list_teams), ("ladders", _list_ladders)):
        if part in parts:
            show()


def _list_teams() -> None:
    from rlwrappers.zoo import teams

    print("Teams (`--agent NAME` or `--outside GROUP=NAME` with a PettingZoo env; rw.zoo.load_team(NAME)):")
    for name, card in teams.cards().items():
        returns = card["returns"]
        print(
            f"  {name:<32} {card['env']}, seed {card['seed']}; team return {returns['trained']['mean']:.1f}"
            f" (untrained {returns['untrained']['mean']:.1f})"
        )


def _list_ladders() -> None:
    from rlwrappers import ladders

    shipped = ladders.ladders()
    width = max(len(env_id) for env_id in shipped)
    print(f"Severity ladders ({ladders.LADDER}; `rlwrappers card --env ID`), by suite, each env's families:")
    for suite in ladders.SUITES:
        try:
            envs = [env_id for env_id in ladders.suite_envs(suite) if env_id in shipped]
        except Error as exc:  # a suite whose package is missing lists no envs here
            print(f"{suite}: {exc}")
            continue
        print(f"{suite} ({len(envs)}):")
        for env_id in envs:
            ladder = ladders.ladder(env_id)
            families = ", ".join(ladder.families)
            reference = "none stated" if ladder.reference_return is None else f"{ladder.reference_return:g}"
            how = "provisional" if ladder.provisional else "levels by the reference agents' effect"
            returns = f"skill from the random return {ladder.random_return:g} to the reference {reference}"
            print(f"  {env_id:<{width}}  {families}; {returns}; {how}")
    print("any other registered env: a provisional ladder, calibrated on first use (rlwrappers ladder --env ID)")


def _list_sets() -> None:
    from rlwrappers.uncertainty import SETS

    print("Uncertainty sets (rw.uncertainty_set(NAME, dims=N)), each parameter's range and nominal:")
    for name, box in SETS.items():
        try:
            nominal: dict[str, float] | None = box.nominal()
        except gym.error.DependencyNotInstalled:
            nominal = None
        ranges = []
        for d in box.dims:
            if nominal is None:
                shown = "nominal: needs mujoco"
            else:
                inside = d.low <= nominal[d.name] <= d.high
                shown = f"nominal {nominal[d.name]:.4g}" + ("" if inside else ", outside")
            ranges.append(f"{d.name} [{d.low:g}, {d.high:g}] ({shown})")
        print(f"  {name:<24} {box.env_id:<26} v{box.version}: " + "; ".join(ranges))
        if nominal is not None:
            for dim, (low, high) in box.dead_zones().items():
                print(f"  {'':<24} dead zone: {dim} from {low:g} to {high:g} changes nothing")


def _agents(values: Sequence[str], args: argparse.Namespace | None = None) -> Any:
    """``--agent`` values: one source, or several, each ``NAME=SOURCE`` or a source named by its stem.

    With ``--best-model`` or ``--raw-observations``, RL Zoo folders and zips carry the option
    (:class:`~rlwrappers.agents.rl_zoo.AgentFiles`).
    """
    if len(values) == 1 and "=" not in values[0]:
        return _files(values[0], args)
    named: dict[str, Any] = {}
    for value in values:
        name, _, source = value.rpartition("=")
        name = name or (Path(source).stem if source.endswith(".zip") else source)
        if name in named:
            raise InvalidArgument(f"--agent names must differ; {name!r} is given twice (write NAME=SOURCE)")
        named[name] = _files(source, args)
    return named


def _files(source: str, args: argparse.Namespace | None) -> Any:
    """``source``, as :class:`~rlwrappers.agents.rl_zoo.AgentFiles` when an option for RL Zoo's files is given."""
    best, raw = (getattr(args, "best_model", False), getattr(args, "raw_observations", False))
    if not (best or raw):
        return source
    from rlwrappers.agents.rl_zoo import AgentFiles, is_agent_files

    if not is_agent_files(source):
        raise InvalidArgument(
            f"--best-model and --raw-observations apply to RL Zoo folders and SB3 zips, not {source!r}"
        )
    return AgentFiles(source, best=best, raw_observations=raw)


def _env_setup(args: argparse.Namespace) -> EnvSetup:
    """Lives as episodes, and the preprocessing of ``--atari`` placed by ``--placement``."""
    if not args.atari:
        if args.placement != "raw":
            raise InvalidArgument("--placement applies only with --atari (the preprocessing it places shifts in)")
        return EnvSetup(lives_as_episodes=args.lives_as_episodes, other_env=args.other_env)
    import ale_py

    from rlwrappers.wrappers.atari import atari_wrapper

    gym.register_envs(ale_py)
    raw = args.placement == "raw"
    return EnvSetup(
        wrappers=[] if raw else [atari_wrapper],
        outer_wrappers=[atari_wrapper] if raw else [],
        lives_as_episodes=args.lives_as_episodes,
        other_env=args.other_env,
    )


def _run_options(args: argparse.Namespace, seeds: int = SEEDS) -> dict[str, Any]:
    """The options ``evaluate`` and ``sweep`` share; ``seeds`` is the count unless ``--seeds`` says otherwise."""
    return {
        "episodes": args.episodes,
        "seeds": args.seed_list if args.seed_list else args.seeds if args.seeds is not None else seeds,
        "out": args.out,
        "deterministic": not args.stochastic,
        "probe": args.probe if args.probe is not None else 0 if args.env and _parallel(args.env) else PROBE,
        "env": _env_setup(args),
        "execution": Execution(backend=args.backend, workers=args.workers, progress=not args.quiet),
    }


def _parallel(env_id: str) -> bool:
    from rlwrappers.studies.design import is_parallel

    return is_parallel(env_id)


def _outside(values: Sequence[str] | None) -> dict[str, str] | None:
    """``--outside NAME=TEAM`` pairs as a dict, or None when none is given."""
    if not values:
        return None
    groups = {}
    for value in values:
        name, sep, team = value.partition("=")
        if not sep or not name or not team:
            raise InvalidArgument(f"--outside must read NAME=TEAM (a team zoo name), received {value!r}")
        if name in groups:
            raise InvalidArgument(f"--outside names must differ; {name!r} is given twice")
        groups[name] = team
    return groups


def _finish(result: Any, args: argparse.Namespace) -> int:
    """Prints the tables and writes the report of a finished run."""
    from rlwrappers.agents.training import describe
    from rlwrappers.report.evaluation import write_report
    from rlwrappers.report.tables import format_table

    for name, record in result.request.get("agent_preprocessing", {}).items():
        print(f"Agent {name}: {describe(record)}")
    print(format_table(result.summary()))
    _protocol_statements(result, args.aggregate or "mean")
    if not args.no_report:
        page = write_report(result, minimum=args.min_score, lpips=_lpips(args), aggregate=args.aggregate or "mean")
        impact = page.parent / "impact.csv"
        if impact.exists():
            import pandas as pd

            table = pd.read_csv(impact, index_col=[0, 1])[["impact", "flip_rate", "ssim", "lpips"]]
            if table.notna().any().any():  # nothing to show without a minimum score or a probe
                print()
                print(format_table(table))
        print(f"Report: {page.resolve()}")
    print(f"Logs: {result.path.resolve()}")
    return 0


def _protocol_statements(result: Any, aggregate: str) -> None:
    """Prints the causal or observational protocol's table and verdicts (the report shows the same)."""
    from rlwrappers.report.tables import format_table
    from rlwrappers.studies import shift_impact
    from rlwrappers.studies.results import fixed_seed_coverage

    if result.shift_at is not None:
        check = result.fixed_seed_check()
        broken = check[~check["identical"]]
        print()
        if len(broken):
            print(
                f"!!! FIXED-SEED CHECK FAILED: {len(broken)} of {len(check)} shifted runs differ from their"
                " counterfactual before the shift; the env or the agent is not deterministic. !!!"
            )
        else:
            print(f"Fixed-seed check passed: {len(check)} shifted runs. {fixed_seed_coverage(check)}")
        table = shift_impact.did_table(result)
        print(f"Difference-in-differences, shift from episode {result.shift_at}:")
        numbers = table[["seeds", "estimate", "se", "lower", "upper", "cumulative"]].dropna(how="all")
        if len(numbers):
            print(format_table(numbers))
        for (agent, shift), row in table.iterrows():
            print(f"  {agent} under {shift}: {row.verdict}")
        for sentence in shift_impact.impact_verdicts(table):
            print(f"  {sentence}")
    elif result.observational:
        print()
        print(f"Damped-trend forecasts of the per-episode {aggregate}, 99% prediction intervals over 100 episodes:")
        for sentence in shift_impact.forecast_verdicts(shift_impact.forecasts(result, how=aggregate)):
            print(f"  {sentence}")


def _lpips(args: argparse.Namespace) -> Any:
    if args.lpips_weights is None:
        return "auto"
    from rlwrappers.metrics.perceptual import LPIPS

    return LPIPS(weights=args.lpips_weights)


def _shift_at(value: str, episodes: int) -> int:
    """``--shift-at-episode``'s episode: the number given, or halfway."""
    if value == HALFWAY:
        return episodes // 2
    try:
        return int(value)
    except ValueError:
        raise InvalidArgument(f"--shift-at-episode must be an episode number, received {value!r}") from None


def _evaluate(args: argparse.Namespace) -> int:
    import rlwrappers as rw
    from rlwrappers.studies import shift_impact

    if args.aggregate is not None and args.observational is None:
        raise InvalidArgument("--aggregate applies only with --observational (it aggregates that protocol's episodes)")
    when: str | None = args.when
    timing = Timing()
    if args.shift_at_episode is not None:
        shift_at = _shift_at(args.shift_at_episode, args.episodes)
        timing = Timing(shift_at=shift_at, share_pre_shift=not args.play_pre_shift)
    elif args.play_pre_shift:
        raise InvalidArgument("--play-pre-shift applies only with --shift-at-episode")
    if args.observational is not None:
        if args.shift_at_episode is not None or args.when is not None:
            raise InvalidArgument("--observational sets when shifts strike: drop --shift-at-episode and --when")
        when, timing = args.observational, Timing(observational=True)
    seeds = shift_impact.SEEDS if timing != Timing() else SEEDS
    options = _run_options(args, seeds)
    result = rw.evaluate(
        _agents(args.agent, args),
        args.env,
        args.shift,
        when=when,
        outside=_outside(args.outside),
        timing=timing,
        **options,
    )
    return _finish(result, args)


def _sweep(args: argparse.Namespace) -> int:
    from rlwrappers.studies.sweep import sweep

    if args.aggregate is not None:
        raise InvalidArgument("--aggregate applies only to observational evaluations (evaluate --observational)")
    values = None
    if args.values is not None:
        try:
            values = [float(v) if any(c in v for c in ".eE") else int(v) for v in args.values.split(",")]
        except ValueError:
            raise InvalidArgument(f"--values must be numbers separated by commas, received {args.values!r}") from None
    options = _run_options(args)
    result = sweep(_agents(args.agent, args), args.env, args.shift, args.param, values, **options)
    return _finish(result, args)


def _worst_case(args: argparse.Namespace) -> int:
    from rlwrappers.report.worst_case import write_worst_case_report
    from rlwrappers.studies.worst_case import worst_case
    from rlwrappers.uncertainty import uncertainty_set

    box = uncertainty_set(args.set)
    if args.env is not None and args.env != box.env_id:
        raise InvalidArgument(f"--set {box.name} is a set of {box.env_id}, but --env is {args.env!r}")
    print(f"Searching the worst case of {args.agent} over {box.name} ({box.env_id}): {box.bounds}")
    result = worst_case(
        _agents([args.agent]),
        box,
        out=args.out,
        points=args.points,
        episodes=args.episodes,
        seeds=args.seeds,
        budget=args.budget,
        holdout=args.holdout,
        deterministic=not args.stochastic,
        execution=Execution(backend=args.backend, workers=args.workers, progress=not args.quiet),
    )
    low, high = result.ci
    argmin = ", ".join(f"{k} = {v:.4g}" for k, v in result.argmin.items())
    print(f"Worst case: {result.worst:.2f} [{low:.2f}, {high:.2f}] on {result.holdout} held-out episodes, at {argmin}")
    print(f"Search minimum {result.search_min:.2f} (biased low), grid minimum {result.grid_min:.2f}, over")
    print(f"{len(result.points)} points; mean over the set {result.set_mean:.2f}; nominal env {result.nominal:.2f}.")
    if not args.no_report:
        print(f"Report: {write_worst_case_report(result, Path(args.out) / 'report').resolve()}")
    return 0


def _card(args: argparse.Namespace) -> int:
    from rlwrappers.report.card import write_robustness_leaderboard

    if args.compare:
        if args.env is not None or args.agent is not None:
            raise InvalidArgument("--compare ranks finished cards; it takes no --env or --agent")
        out = Path(args.out)
        path = write_robustness_leaderboard(args.compare, out)
        print(f"Leaderboard of {len(args.compare)} cards: {path.resolve()}")
        return 0
    if args.env is None or args.agent is None:
        raise InvalidArgument("`rlwrappers card` needs --env and --agent (or --compare DIR ...)")
    from rlwrappers.studies.robustness_card import robustness_card

    ladder = _card_ladder(args)
    families = args.families.split(",") if args.families is not None else None
    agents = [_files(source, args) for source in args.agent]
    record = robustness_card(
        agents[0] if len(agents) == 1 else agents,
        args.env,
        out=args.out,
        families=families,
        seeds=args.seeds,
        episodes=args.episodes,
        mode=args.mode,
        reps=args.reps,
        batch=args.batch,
        workers=args.workers,
        backend=args.backend,
        progress=not args.quiet,
        ladder=ladder,
    )
    overall = record["overall"]
    stars = overall["stars"]
    score = f"score {overall['score']:.3f}"
    if stars is None:
        rating = f"not rated (a subset of families), {score}"
    else:
        rating = f"{stars}/5 (P = {overall['stars_probability'][stars - 1]:.2f}), {score}"
    print(f"Robustness of {record['agent']['name']} on {args.env} ({record['ladder']}): {rating}")
    for run in record.get("runs", []):
        print(f"  trained agent {run['name']}: score {run['score']:.3f}, stars {run['stars'] or '-'}")
    print(f"  clean skill {record['clean']['skill']:.3f}; per family: score, stars, relative AUSC")
    for family in record["families"]:
        area = "n/a" if family["relative"]["ausc"] is None else f"{family['relative']['ausc']:.3f}"
        print(f"  {family['name']:<14} score {family['score']:.3f}  stars {family['stars']}  relative AUSC {area}")
    print(f"Card: {(Path(args.out) / 'card.html').resolve()}")
    return 0


def _card_ladder(args: argparse.Namespace, *, shown: bool = False) -> Any:
    """The ladder of ``--env``: shipped, or provisional as ``--reference-return`` and the other options say.

    ``shown``: the ladder is only shown, so a shipped one that states no reference return is shown as it is.
    """
    from rlwrappers import ladders
    from rlwrappers.ladders.provisional import ORIGIN, cache_folder

    kwargs = None if args.max_episode_steps is None else {"max_episode_steps": args.max_episode_steps}
    given = (kwargs, args.reference_return, args.calibration_steps, args.recalibrate or None)
    if shown and args.env in ladders.ladders() and all(value is None for value in given):
        ladder = ladders.ladder(args.env)
    else:
        ladder = ladders.card_ladder(
            args.env,
            env_kwargs=kwargs,
            reference_return=args.reference_return,
            steps=args.calibration_steps,
            refresh=args.recalibrate,
        )
    absent = "".join(f"\n  no {name}: {why}" for name, why in ladder.absent.items())
    if ladder.provisional is not None:
        origin = ladder.provisional["origin"]
        kept = f"cached in {cache_folder()}" if origin == ORIGIN else "shipped with the package"
        said = f"Provisional ladder of {args.env}, {origin} (SHA-256 {ladder.sha256[:16]}, {kept}): levels in"
        said += f" physical units, without reference agents.{absent}"
    elif absent:
        said = f"The ladder of {args.env} lacks families of its kind:{absent}"
    else:
        return ladder
    print(said, file=sys.stderr if getattr(args, "json", False) else sys.stdout)  # --json prints the file alone
    return ladder


def _ladder(args: argparse.Namespace) -> int:
    from rlwrappers.ladders.calibration import DIRECTORY, file_name
    from rlwrappers.ladders.provisional import cache_folder

    ladder = _card_ladder(args, shown=True)
    if args.json:
        if ladder.provisional is not None:
            path = cache_folder() / f"{ladder.sha256}.json"
        else:
            path = DIRECTORY / ladder.version / file_name(ladder.env_id)
        print(path.read_text(encoding="utf-8"), end="")
        return 0
    reference = ladder.reference or {}
    print(f"{ladder.env_id} ({ladder.version}, SHA-256 {ladder.sha256}), {ladder.kind} observations")
    if ladder.reference_return is None:
        print(f"  skill 0: the random return {ladder.random_return:g}; skill 1: none stated (a card needs")
        print("    --reference-return R)")
    else:
        print(f"  skill 0: the random return {ladder.random_return:g}; skill 1: {ladder.reference_return:g}")
        print(f"    ({reference.get('source', '')})")
    print("  levels 1 to 5 of each family (and sub-family):")
    for name, family in ladder.families.items():
        arms = ladder.arms([name])
        for sub in dict.fromkeys(arm.sub_family for arm in arms):
            part = family if sub is None else family["sub_families"][sub]
            how = (part.get("calibration") or family.get("calibration") or {}).get("by", "constants")
            title = name if sub is None else f"{name}.{sub}"
            print(f"  {title} (by {how}) {_levels_summary([arm for arm in arms if arm.sub_family == sub])}")
    r = ladder.recovery
    print(f"  recovery: level-4 noise for steps {r.start} to {r.stop}; window {r.window}, horizon {r.horizon}")
    return 0


def _levels_summary(arms: Sequence[Any]) -> str:
    """A family's levels in short: the parameters that change from level to level, each level's value in turn."""
    entries = [arm.entries[0] for arm in arms]
    first = entries[0]
    changing = [key for key in first if any(entry.get(key) != first[key] for entry in entries)]
    name = first["name"]
    return f"{name}: " + "; ".join(f"{key} = " + ", ".join(_short(e[key]) for e in entries) for key in changing)


def _short(value: Any) -> str:
    """A parameter in short: floats to four significant digits, lists of more than three values cut."""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        shown = [_short(v) for v in value[:3]]
        return f"[{', '.join(shown)}{f', ... ({len(value)} values)' if len(value) > 3 else ''}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_short(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _demo(args: argparse.Namespace) -> int:
    print(
        f"Evaluating the zoo agent {DEMO_AGENT} on {DEMO_ENV} clean and under seed 002's six kinds of uncertainty,\n"
        f"{DEMO_SEEDS} seeds x {DEMO_EPISODES} episodes each, paired with same-seed clean runs."
    )
    args.agent, args.env = [DEMO_AGENT], DEMO_ENV
    args.shift = dict(DEMO_SHIFTS)
    args.episodes, args.seeds, args.seed_list = DEMO_EPISODES, DEMO_SEEDS, None
    args.when, args.stochastic, args.lives_as_episodes, args.backend = None, False, False, "local"
    args.no_report, args.probe, args.atari, args.placement = False, 0, False, "raw"
    args.min_score, args.lpips_weights, args.aggregate = None, None, None
    args.shift_at_episode, args.play_pre_shift, args.observational, args.outside = None, False, None, None
    args.best_model, args.raw_observations, args.other_env = False, False, False
    return _evaluate(args)


def _report(args: argparse.Namespace) -> int:
    from rlwrappers.report.evaluation import write_report
    from rlwrappers.report.tables import format_table
    from rlwrappers.studies.results import open_evaluation

    evaluation = open_evaluation(args.run_dir)
    if args.aggregate is not None and not evaluation.observational:
        raise InvalidArgument("--aggregate applies only to an observational evaluation (--observational)")
    index = evaluation.index
    missing = index[index["status"] != "complete"]
    if len(missing):
        print(f"PARTIAL: {len(missing)} of {len(index)} runs have not finished; the numbers leave them out:")
        for run in missing.itertuples():
            print(f"  {run.agent} / {run.shift} / seed {run.seed} ({run.path})")
    print(format_table(evaluation.summary()))
    aggregate = args.aggregate or "mean"
    _protocol_statements(evaluation, aggregate)
    page = write_report(evaluation, args.out, minimum=args.min_score, lpips=_lpips(args), aggregate=aggregate)
    print(f"Report: {page.resolve()}")
    return PARTIAL if len(missing) else 0


#: The exit status of a report written while some runs have not finished (errors exit with 2).
PARTIAL: Final = 3


def _run_arguments(parser: argparse.ArgumentParser, *, trained_env: bool = False) -> None:
    """The arguments ``evaluate`` and ``sweep`` share; ``trained_env`` lets ``--env`` default to the agent's."""
    if trained_env:
        parser.add_argument(
            "--env", help="a Gymnasium ID, e.g. CartPole-v1 (default: the env the agent's RL Zoo files name)"
        )
    else:
        parser.add_argument("--env", required=True, help="a Gymnasium ID, e.g. CartPole-v1")
    parser.add_argument(
        "--agent", required=True, action="append", help=f"{AGENT_HELP}; repeat as NAME=SOURCE to compare"
    )
    _agent_file_arguments(parser)
    parser.add_argument("--episodes", type=int, default=10, help="episodes per run (default: 10)")
    seeds = parser.add_mutually_exclusive_group()
    seeds.add_argument(
        "--seeds",
        type=int,
        help=f"number of run seeds, 0..N-1 (default: {SEEDS}; 10 with --shift-at-episode or --observational)",
    )
    seeds.add_argument("--seed-list", type=int, nargs="+", metavar="SEED", help="explicit run seeds instead")
    parser.add_argument("--out", required=True, help="the run directory")
    parser.add_argument("--stochastic", action="store_true", help="sample actions (seeded per episode)")
    parser.add_argument("--lives-as-episodes", action="store_true", help="Atari: one life is one episode")
    parser.add_argument(
        "--atari",
        action="store_true",
        help="give the agent SB3's Atari preprocessing (frame skip 4, 84x84 grayscale, 4 stacked frames; each life "
        "one episode): for agents trained with make_atari_env and VecFrameStack on a NoFrameskip env",
    )
    parser.add_argument(
        "--placement",
        choices=("raw", "input"),
        default="raw",
        help="with --atari: corruptions strike the raw frame (default) or the network input; attacks always "
        "strike the network input",
    )
    parser.add_argument(
        "--probe",
        type=int,
        help=f"states per shift for flips and LPIPS (default: {PROBE}, none for PettingZoo envs; 0: none)",
    )
    parser.add_argument("--backend", choices=("local", "ray"), default="local", help="where runs go (default: local)")
    parser.add_argument("--workers", type=int, default=None, help="parallel runs (default: CPU cores)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


#: What ``--agent`` takes.
AGENT_HELP: Final = (
    "a zoo name (NAME or NAME@SEED), an RL Zoo run folder (logs/ALGO/ENV_N) or published agent's folder, an SB3"
    " .zip, or FILE.py:FUNCTION (a function of the env's spaces returning an Agent)"
)


def _agent_file_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of agents read from RL Zoo's files and SB3 zips."""
    parser.add_argument(
        "--best-model",
        action="store_true",
        help="RL Zoo run folders: play best_model.zip (with the run's final statistics) instead of ENV.zip",
    )
    parser.add_argument(
        "--raw-observations",
        action="store_true",
        help="play RL Zoo and SB3 agents on raw observations, even where VecNormalize statistics are found",
    )
    parser.add_argument(
        "--other-env",
        action="store_true",
        help="play agents whose RL Zoo files name another base env than --env (their spaces must still fit)",
    )


def _report_arguments(parser: argparse.ArgumentParser, *, skippable: bool = True) -> None:
    """The arguments of the report; ``skippable`` adds ``--no-report``."""
    if skippable:
        parser.add_argument("--no-report", action="store_true", help="skip the HTML report")
    parser.add_argument(
        "--min-score", type=float, help="the env's minimum score for impact (default: known Atari games' own)"
    )
    parser.add_argument(
        "--aggregate",
        choices=("mean", "iqm"),
        help="observational runs: aggregate each episode over seeds by the mean (default) or the IQM",
    )
    parser.add_argument(
        "--lpips-weights",
        metavar="PATH",
        help="the LPIPS trunk's weights file (default: looked up in $TORCH_HOME and torch's hub cache)",
    )


def _make_env(env_id: str, atari: bool, agent: str | None = None) -> gym.Env[Any, Any]:
    """The env as the agents see it: ``env_id``, under SB3's Atari preprocessing if ``atari``.

    With ``agent``, what its RL Zoo files say it was trained behind too (env wrappers, frame stack).
    """
    import rlwrappers.envs  # noqa: F401  (registers the Toybox IDs)
    from rlwrappers.studies.recipe import EnvRecipe, trainings
    from rlwrappers.wrappers.atari import atari_wrapper

    if importlib.util.find_spec("ale_py") is not None:
        import ale_py

        gym.register_envs(ale_py)
    training = next(iter(trainings(agent).values()), None) if agent is not None else None
    return EnvRecipe.for_agent(env_id, training, wrappers=(atari_wrapper,) if atari else ()).build()[0]


def _pipelines(values: Sequence[str], guides: Sequence[str] | None) -> list[Any]:
    """``--pipeline`` and ``--guide`` values as pipelines (see ``rlwrappers robustness --help``)."""
    from rlwrappers.studies.offline import Pipeline, zoo_pipeline

    out: dict[str, Any] = {}
    given: dict[str, dict[str, list[str]]] = {}
    for value in values:
        if "=" not in value:
            out[value] = zoo_pipeline(value)
            continue
        label, _, sources = value.partition("=")
        name, _, checkpoint = label.partition("@")
        checkpoints = given.setdefault(name, {})
        if (checkpoint or "final") in checkpoints:
            raise InvalidArgument(f"--pipeline {label!r} is given twice")
        checkpoints[checkpoint or "final"] = [s for s in sources.split(",") if s]
    guide_of: dict[str, str] = {}
    for value in guides or []:
        name, _, source = value.rpartition("=")
        if name and name not in given:
            raise InvalidArgument(f"--guide {value!r} names no pipeline given as NAME=SOURCES; they are {list(given)}")
        for pipeline in [name] if name else list(given):
            guide_of[pipeline] = source
    for name, checkpoints in given.items():
        if name not in guide_of:
            raise InvalidArgument(
                f"pipeline {name!r} needs a guide, the agent whose game the states are sampled from: --guide "
                f"{name}=SOURCE (or --guide SOURCE for every pipeline)"
            )
        out[name] = Pipeline(name, checkpoints, guide_of[name])
    return list(out.values())


def _robustness(args: argparse.Namespace) -> int:
    from rlwrappers.envs.toybox.interventions import GAMES, catalogue
    from rlwrappers.report.robustness import write_robustness_report
    from rlwrappers.report.tables import format_table
    from rlwrappers.studies import offline

    if args.draws is not None and not args.stochastic:
        raise InvalidArgument("--draws applies only with --stochastic (the draws per state of a stochastic policy)")
    if args.runs:
        if args.pipeline or args.env:
            raise InvalidArgument("--runs gives the env and the pipelines; leave out --env and --pipeline")
        env_id, atari, pipelines = offline.read_runs(args.runs)
    else:
        if not args.env or not args.pipeline:
            raise InvalidArgument("give --env and at least one --pipeline, or --runs DIR")
        env_id, atari, pipelines = args.env, args.atari, _pipelines(args.pipeline, args.guide)
    env = _make_env(env_id, atari)
    interventions = args.intervention
    if not interventions:
        game = getattr(env.unwrapped, "game", None)
        if game not in GAMES:
            raise InvalidArgument(f"{env_id} has no intervention catalogue: give at least one --intervention")
        interventions = [iv.name for iv in catalogue(game)]
    print(
        f"Offline robustness on {env_id}: {len(pipelines)} pipeline(s), {args.states} states each, "
        f"{len(interventions)} interventions and the null one."
    )
    measurement = offline.measure(
        lambda: _make_env(env_id, atari),
        pipelines,
        interventions,
        p=args.states,
        seed=args.seed,
        stochastic=args.stochastic,
        t=offline.DRAWS if args.draws is None else args.draws,
        progress=None if args.quiet else print,
    )
    out = measurement.save(args.out)
    print(format_table(measurement.summary().xs("overall", level="intervention")))
    print(f"Measurement: {out.resolve()}")
    if not args.no_report:
        print(f"Report: {write_robustness_report(measurement, out / 'report').resolve()}")
    return 0


def _method_params(methods: Sequence[str], values: Sequence[str] | None) -> dict[str, dict[str, Any]]:
    """``--param METHOD.NAME=VALUE`` values as each method's parameters (values read as Python literals)."""
    import ast

    params: dict[str, dict[str, Any]] = {m: {} for m in methods}
    for value in values or []:
        key, sep, text = value.partition("=")
        method, dot, name = key.partition(".")
        if not sep or not dot:
            raise InvalidArgument(f"--param must read METHOD.NAME=VALUE, e.g. rise.masks=3000; received {value!r}")
        if method not in params:
            raise InvalidArgument(f"--param {value!r} is for {method!r}, which is not among --method {list(params)}")
        try:
            params[method][name] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            params[method][name] = text  # a bare word, such as slic or blur
    return params


def _explain(args: argparse.Namespace) -> int:
    from rlwrappers.explain import maps
    from rlwrappers.report.saliency import write_saliency_report
    from rlwrappers.report.tables import format_table
    from rlwrappers.studies import saliency
    from rlwrappers.zoo import load_agent

    if args.threshold is not None and args.select != "highlights":
        raise InvalidArgument("--threshold applies only with --select highlights (HIGHLIGHTS-DIV's percentile)")

    methods = args.method or list(maps.METHODS)
    params = _method_params(methods, args.param)
    env = _make_env(args.env, args.atari, args.agent)
    agent = load_agent(args.agent, observation_space=env.observation_space)
    threshold = {} if args.threshold is None else {"threshold": args.threshold}  # else collect_states' default
    states = saliency.collect_states(env, agent, args.states, seed=args.seed, select=args.select, **threshold)
    print(f"Explaining {args.agent} on {len(states)} states of its game on {args.env}: {', '.join(methods)}.")
    result = saliency.study(
        agent,
        states,
        params,
        sanity=min(args.sanity, len(states)),
        seed=args.seed,
        flatten_ssim=args.flatten_ssim,
        progress=None if args.quiet else print,
    )
    out = result.save(args.out)
    print(format_table(result.summary()))
    print(f"Study: {out.resolve()}")
    if not args.no_report:
        print(f"Report: {write_saliency_report(result, out / 'report').resolve()}")
    return 0


def _parser() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The parser, and the one of ``list`` (which checks its parts itself)."""
    parser = argparse.ArgumentParser(
        prog="rlwrappers",
        description="Stress-test RL agents: run them under perturbations over many seeds, then report.",
        epilog="Start with `rlwrappers demo`; `rlwrappers COMMAND --help` explains each command.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    raw = argparse.RawDescriptionHelpFormatter

    demo = commands.add_parser(
        "demo",
        help="evaluate a zoo agent under six kinds of uncertainty and write a report (a few minutes)",
        description=textwrap.dedent(
            f"""\
            Loads the zoo agent {DEMO_AGENT}, evaluates it on {DEMO_ENV} under observation, action, reward,
            initial-state, dynamics and parameter noise ({DEMO_SEEDS} seeds x {DEMO_EPISODES} episodes each, every
            run paired with a same-seed clean run), prints mean, median, MAD, IQR and LCB per shift, and writes
            the logs, plots and an HTML report into one folder. Run it again to reuse the finished runs."""
        ),
        formatter_class=raw,
    )
    demo.add_argument("--out", default=DEMO_OUT, help=f"the run directory (default: ./{DEMO_OUT})")
    demo.add_argument("--workers", type=int, default=None, help="parallel runs (default: CPU cores)")
    demo.add_argument("--quiet", action="store_true", help="no progress bar")

    evaluate = commands.add_parser(
        "evaluate",
        help="run an agent under shifts over many seeds, with same-seed counterfactuals",
        description=textwrap.dedent(
            """\
            Runs the agent on the env under each --shift and without any (the "baseline" counterfactual), over
            the seeds, --episodes episodes per run. Episode i of seed s is reset with a seed derived from (s, i)
            in both arms, so the two arms differ only by the shift. Each run writes a log under --out, with an
            index; run the same command again to resume an interrupted sweep.

            With --probe N (default 64), each shift that acts on observations is also measured at N states of the
            clean game: how often it flips the agent's action, and how far (L-inf, L2, SSIM, LPIPS) it moves
            the agent's input. The report shows impact per shift, those measures, Fourier spectra, and a curve
            for every group of shifts that differ in one parameter.

            examples:
              rlwrappers evaluate --env CartPole-v1 --agent ppo-CartPole-v1 \\
                  --shift "obs_noise(std=0.1)" --shift "action_noise(p=0.2)" --episodes 20 --seeds 5 --out runs/cp
              rlwrappers evaluate --env BreakoutNoFrameskip-v4 --atari --agent agents/ppo-breakout.zip \\
                  --shift "fgsm(eps=0.01)" --shift "jpeg(quality=20)" --episodes 5 --seeds 3 --out runs/breakout

            """
        )
        + TRUST,
        formatter_class=raw,
    )
    _run_arguments(evaluate, trained_env=True)
    evaluate.add_argument(
        "--shift",
        action="append",
        default=[],
        metavar="SPEC",
        help="a perturbation spec, e.g. 'obs_noise(std=0.1)' (repeat for more; `rlwrappers list perturbations`)",
    )
    evaluate.add_argument("--when", help="schedule of shifts that set none, e.g. 'starting(episode=5)'")
    evaluate.add_argument(
        "--outside",
        action="append",
        metavar="NAME=TEAM",
        help="PettingZoo envs: a group of outside policies (a team zoo name) that 'switch(k=..., to=NAME)' shifts"
        " switch agents to; the group 'untrained' is always there (repeat for more)",
    )
    evaluate.add_argument(
        "--shift-at-episode",
        nargs="?",
        const=HALFWAY,
        metavar="T",
        help="the causal protocol: every shift starts at episode T (default: halfway), against the same seeds'"
        " counterfactual; the report gives the difference-in-differences impact and the verdicts",
    )
    evaluate.add_argument(
        "--play-pre-shift",
        action="store_true",
        help="with --shift-at-episode: play the episodes before T in every shifted run instead of taking them from"
        " the counterfactual (which episode T-1, played by both, checks)",
    )
    evaluate.add_argument(
        "--observational",
        nargs="?",
        const=DEFAULT_STRIKE,
        metavar="SCHEDULE",
        help=f"the observational protocol: shifts strike at random (default: '{DEFAULT_STRIKE}', each step with"
        " probability 0.1; or e.g. 'bursts(p=0.01, duration=(10, 50))'); the report forecasts each arm's trend",
    )
    _report_arguments(evaluate)

    sweep = commands.add_parser(
        "sweep",
        help="run one perturbation at each value of one parameter: impact, flips and LPIPS against it",
        description=textwrap.dedent(
            f"""\
            Evaluates the agents under one perturbation at each value of one parameter, each paired with
            same-seed clean runs and probed at {PROBE} states, and reports impact, flip rate, SSIM and LPIPS
            against the parameter, with the mildest value reaching impact 0.5 (the edge of imperceptibility).
            --shift is a default sweep ({", ".join(SWEEPS)}) or a perturbation spec whose other parameters
            stay fixed, with --param and --values.

            examples:
              rlwrappers sweep --env BreakoutNoFrameskip-v4 --atari --agent ppo=agents/ppo-breakout.zip \\
                  --shift jpeg --episodes 5 --seeds 3 --out runs/jpeg
              rlwrappers sweep --env CartPole-v1 --agent ppo-CartPole-v1 --shift obs_noise --param std \\
                  --values 0.05,0.1,0.2,0.4 --min-score 0 --out runs/noise

            """
        )
        + TRUST,
        formatter_class=raw,
    )
    _run_arguments(sweep)
    sweep.add_argument("--shift", required=True, help="a default sweep name or a perturbation spec")
    sweep.add_argument("--param", help="the parameter to vary (default: the sweep's own)")
    sweep.add_argument("--values", help="its values, mildest first, separated by commas (default: the sweep's range)")
    _report_arguments(sweep)

    report = commands.add_parser(
        "report",
        help="tables, PNG plots and one self-contained HTML page from a run directory",
        description="Reads RUN_DIR (written by `evaluate` or `demo`) and writes summary.csv, PNG plots (LCB versus "
        "alpha, Pareto front, return distributions, paired changes) and report.html. A sweep with unfinished "
        "runs is reported as PARTIAL.",
    )
    report.add_argument("run_dir", metavar="RUN_DIR")
    report.add_argument("--out", help="where to write (default: RUN_DIR/report)")
    _report_arguments(report, skippable=False)

    worst = commands.add_parser(
        "worst-case",
        help="the worst return of an agent over an uncertainty set: a grid, a refining search, a held-out check",
        description=textwrap.dedent(
            """\
            Plays the agent at every point of a grid over an uncertainty set (rlwrappers list --sets), the same
            seeds and episodes at each, then refines around the worst point until --budget episodes are spent,
            and plays the argmin again on --holdout held-out episodes: the reported worst case, with a 95%
            interval, beside the search's own (biased low) minimum. Writes grid/, refine<k>/ and holdout/ (run
            folders of rlwrappers evaluate), points.csv, worst_case.json and report/report.html; an interrupted
            search resumes."""
        ),
        formatter_class=raw,
    )
    worst.add_argument("--agent", required=True, help=AGENT_HELP)
    worst.add_argument("--set", required=True, help="an uncertainty set, e.g. Hopper:3 or CartPole:2")
    worst.add_argument("--env", help="the set's env ID, checked against the set (optional)")
    worst.add_argument("--points", type=int, default=5, help="grid points per parameter, bounds included (default: 5)")
    worst.add_argument("--episodes", type=int, default=5, help="episodes per seed at each point (default: 5)")
    worst.add_argument("--seeds", type=int, default=2, help="seeds at each point (default: 2)")
    worst.add_argument("--budget", type=int, help="episodes for the refinement (default: half the grid's)")
    worst.add_argument("--holdout", type=int, default=50, help="held-out episodes for the argmin (default: 50)")
    worst.add_argument("--stochastic", action="store_true", help="sample the agent's actions")
    worst.add_argument("--backend", choices=("local", "ray"), default="local", help="where runs go (default: local)")
    worst.add_argument("--workers", type=int, default=None, help="parallel runs (default: CPU cores)")
    worst.add_argument("--out", required=True, help="the search's folder")
    worst.add_argument("--no-report", action="store_true", help="skip the HTML report")
    worst.add_argument("--quiet", action="store_true", help="no progress bar")

    card = commands.add_parser(
        "card",
        help="a robustness card: an agent under every family of shift of a versioned severity ladder, rated",
        description=textwrap.dedent(
            """\
            Plays the agent on the env under each family of shift of the env's severity ladder (rlwrappers list
            ladders), at levels 1 to 5, with a clean arm of the same seeds and episodes, and a shift that ends
            mid-episode for recovery; all runs go in batches. Writes card.json, card.html (one self-contained
            page), badge.svg and runs/ (the evaluation's logs; an interrupted card resumes). --compare DIR ...
            ranks finished cards of one env and ladder version in leaderboard.html instead."""
        ),
        formatter_class=raw,
    )
    card.add_argument("--env", help="an env with a ladder, e.g. CartPole-v1")
    card.add_argument(
        "--agent",
        action="append",
        help=f"{AGENT_HELP}; a training method over its training seeds as NAME@0,1,2, or --agent repeated (one"
        " trained agent each, e.g. several zips)",
    )
    _agent_file_arguments(card)
    card.add_argument("--out", required=True, help="the card's folder (with --compare: the leaderboard's)")
    card.add_argument("--families", help="only these families, separated by commas (the card then has no rating)")
    card.add_argument("--seeds", type=int, default=5, help="seeds per arm (default: 5)")
    card.add_argument(
        "--episodes", type=int, default=None, help="episodes per seed and arm (default: 10; 4 whole games on Atari)"
    )
    card.add_argument(
        "--mode", choices=("fast", "exact"), default="fast", help="network passes per batch or per run (default: fast)"
    )
    card.add_argument("--reps", type=int, default=2000, help="bootstrap replicates (default: 2000)")
    card.add_argument("--batch", type=int, default=16, help="runs stepped together per worker (default: 16)")
    card.add_argument("--backend", choices=("local", "ray"), default="local", help="where runs go (default: local)")
    card.add_argument("--workers", type=int, default=None, help="worker processes (default: CPU cores)")
    card.add_argument("--quiet", action="store_true", help="no progress bar")
    card.add_argument("--compare", nargs="+", metavar="DIR", help="finished card folders to rank on one page")
    _provisional_arguments(card)

    ladder = commands.add_parser(
        "ladder",
        help="the severity ladder a card of an env plays: shipped, or provisional (calibrated on first use, cached)",
        description=textwrap.dedent(
            """\
            Shows the ladder `rlwrappers card --env ID` plays: the shipped one (rlwrappers list ladders), or for
            any other registered Gymnasium ID a provisional one, calibrated on first use by a random policy with
            written rules (docs/card.md) and cached in the user's cache folder under the SHA-256 of its file.
            ID may read module:ID, to import the module that registers it."""
        ),
        formatter_class=raw,
    )
    ladder.add_argument("--env", required=True, help="a Gymnasium ID, e.g. Acrobot-v1 or my_package:MyEnv-v0")
    ladder.add_argument("--json", action="store_true", help="print the ladder's file instead of a summary")
    _provisional_arguments(ladder)

    robustness = commands.add_parser(
        "robustness",
        help="offline robustness R of training pipelines under interventions on game state, with heatmaps",
        description=textwrap.dedent(
            """\
            Seed 000's offline robustness: per pipeline, a guide agent plays one game and STATES states are drawn
            from it; each state is written into a fresh env under every intervention (and none), and the
            pipeline's agents act on what they see there. R = 1 - JSD / log2(n) of their actions. Writes
            robustness.csv (R per pipeline, checkpoint, state and intervention), summary.csv (the means of
            Appendix E), states/<pipeline>.json (the sampled states, restorable) and report/report.html.

            Pipelines: --pipeline ZOO_NAME (its seeds; the last one guides), or
            --pipeline NAME[@CHECKPOINT]=SOURCE,SOURCE,... with --guide [NAME=]SOURCE, or --runs DIR (written by
            scripts/train_toybox.py: every checkpoint of every pipeline)."""
        ),
        formatter_class=raw,
    )
    robustness.add_argument("--env", help="a Gymnasium ID, e.g. rlwrappers/ToyboxBreakout-v0 or CartPole-v1")
    robustness.add_argument(
        "--pipeline",
        action="append",
        help="ZOO_NAME, or NAME[@CHECKPOINT]=SOURCE,SOURCE,... (zoo NAME@SEED or SB3 zips); repeat for more",
    )
    robustness.add_argument("--guide", action="append", help="[NAME=]SOURCE: the agent that samples the states")
    robustness.add_argument("--runs", help="a directory written by scripts/train_toybox.py (its manifest.json)")
    robustness.add_argument(
        "--atari", action="store_true", help="give the agents SB3's Atari preprocessing (84x84 grayscale, 4 frames)"
    )
    robustness.add_argument(
        "--intervention",
        action="append",
        help="a catalogue name or a one-line form such as 'paddle_width=40'; repeat (default: the game's catalogue)",
    )
    robustness.add_argument("--states", type=int, default=30, help="states sampled per pipeline (default: 30)")
    robustness.add_argument("--seed", type=int, default=0, help="seeds the guide's game and the draws (default: 0)")
    robustness.add_argument("--stochastic", action="store_true", help="agents sample their actions (t draws)")
    robustness.add_argument("--draws", type=int, help="draws per state with --stochastic (default: 30)")
    robustness.add_argument("--out", required=True, help="the output directory")
    robustness.add_argument("--no-report", action="store_true", help="skip the HTML report")
    robustness.add_argument("--quiet", action="store_true", help="no progress lines")

    explain = commands.add_parser(
        "explain",
        help="saliency maps of an agent on states of its own game, with the insertion metric and sanity checks",
        description=textwrap.dedent(
            """\
            Seed 003's benchmark for one agent: it plays one game, STATES states are picked (at random or by
            HIGHLIGHTS-DIV), and each --method (default: all five) explains every state. Writes maps.npz (the
            states and maps), insertion.csv (the insertion metric's four AUCs and the seconds per map, per method
            and state), sanity.csv (cascading randomization on the first --sanity states) and report/report.html
            (maps over the frames, the tables, the sanity-check curves)."""
        ),
        formatter_class=raw,
    )
    explain.add_argument("--agent", required=True, help=AGENT_HELP)
    explain.add_argument("--env", required=True, help="a Gymnasium ID, e.g. BreakoutNoFrameskip-v4 with --atari")
    explain.add_argument(
        "--atari", action="store_true", help="give the agent SB3's Atari preprocessing (84x84 grayscale, 4 frames)"
    )
    explain.add_argument(
        "--method",
        action="append",
        help="occlusion, noise_sensitivity, rise, lime or sarfa; repeat for several (default: all five)",
    )
    explain.add_argument(
        "--param", action="append", help="METHOD.NAME=VALUE, e.g. rise.masks=3000 or lime.segmentation=slic"
    )
    explain.add_argument("--states", type=int, default=100, help="states to explain (default: 100)")
    explain.add_argument("--select", choices=("random", "highlights"), default="random", help="how states are picked")
    explain.add_argument(
        "--threshold", type=float, help="with --select highlights: HIGHLIGHTS-DIV's diversity percentile (default: 30)"
    )
    explain.add_argument("--sanity", type=int, default=5, help="states that get the sanity check (default: 5)")
    explain.add_argument(
        "--flatten-ssim",
        action="store_true",
        help="the sanity check's SSIM on the flattened maps, as seed 003's reference code (default: the 2-D maps)",
    )
    explain.add_argument("--seed", type=int, default=0, help="seeds the game, the picks and the methods' draws")
    explain.add_argument("--out", required=True, help="the output directory")
    explain.add_argument("--no-report", action="store_true", help="skip the HTML report")
    explain.add_argument("--quiet", action="store_true", help="no progress lines")

    listing = commands.add_parser("list", help="list perturbed env IDs, perturbations, schedules and zoo agents")
    listing.add_argument("parts", nargs="*", metavar="PART", help=f"what to list: {', '.join(_PARTS)} (default: all)")
    listing.add_argument("--sets", action="store_true", help="list the uncertainty sets (the part `sets`)")
    return parser, listing


def _provisional_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of a provisional ladder (an env without a shipped one)."""
    group = parser.add_argument_group("provisional ladders (an env without a shipped ladder)")
    group.add_argument(
        "--reference-return", type=float, help="the return of skill 1 (default: the env's reward_threshold)"
    )
    group.add_argument(
        "--max-episode-steps", type=int, help="gym.make's max_episode_steps, for an env whose episodes never end"
    )
    group.add_argument(
        "--calibration-steps", type=int, help="the random policy's steps (default: 10,000), more if few episodes end"
    )
    group.add_argument("--recalibrate", action="store_true", help="calibrate again, even where the cache holds it")


def _interrupted(args: argparse.Namespace, stop: KeyboardInterrupt) -> int:
    """Says what an interrupted command kept; returns the shell's status for the signal (130 for SIGINT)."""
    signum = stop.signum if isinstance(stop, Interrupted) else signal.SIGINT
    kept = ""
    index = Path(getattr(args, "out", None) or ".") / ("runs" if args.command == "card" else "") / INDEX_FILE
    if args.command in ("demo", "evaluate", "sweep", "card") and index.exists():
        runs = json.loads(index.read_text())["runs"]
        finished = sum(run["status"] == "complete" for run in runs)
        kept = (
            f"; {finished} of {len(runs)} runs finished and are kept in {str(index.parent)!r}. Run the same"
            " command again to play the rest"
        )
    print(f"rlwrappers {args.command}: stopped by {signal.Signals(signum).name}{kept}", file=sys.stderr)
    return 128 + signum


def _out_marks() -> dict[str, str]:
    """The file at the top of each command's --out folder that says which command wrote it."""
    from rlwrappers.report.card import CARD_FILE, LEADERBOARD_FILE
    from rlwrappers.studies.offline import REQUEST_FILE as ROBUSTNESS_FILE
    from rlwrappers.studies.saliency import REQUEST_FILE as EXPLAIN_FILE
    from rlwrappers.studies.worst_case import RESULT_FILE

    return {
        "demo": SPEC_FILE,
        "evaluate": SPEC_FILE,
        "sweep": SPEC_FILE,
        "explain": EXPLAIN_FILE,
        "robustness": ROBUSTNESS_FILE,
        "worst-case": RESULT_FILE,
        "card": CARD_FILE,
        "card --compare": LEADERBOARD_FILE,
    }


def _out_problem(args: argparse.Namespace) -> str | None:
    """Why ``--out`` cannot take this command's results: a file, or a folder holding another command's results."""
    out = getattr(args, "out", None)
    if not isinstance(out, str) or not os.path.exists(out):
        return None
    if not os.path.isdir(out):
        return f"--out {out!r} is a file, not a folder; name a new or empty folder"
    marks = _out_marks()
    own = marks.get("card --compare" if args.command == "card" and args.compare else args.command)
    if own is None:
        return None
    others = sorted({mark for mark in marks.values() if mark != own and os.path.exists(os.path.join(out, mark))})
    if others:
        return f"--out {out!r} holds another command's results ({others[0]}); name a new or empty folder"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command line; returns the exit status."""
    parser, listing = _parser()
    args = parser.parse_args(argv)
    problem = _out_problem(args)
    if problem is not None:
        parser.error(problem)
    minimum = getattr(args, "min_score", None)
    if minimum is not None and not math.isfinite(minimum):
        parser.error(f"--min-score must be a finite score, received {minimum!r}")
    handlers: dict[str, Any] = {
        "demo": _demo,
        "evaluate": _evaluate,
        "sweep": _sweep,
        "report": _report,
        "robustness": _robustness,
        "worst-case": _worst_case,
        "card": _card,
        "ladder": _ladder,
        "explain": _explain,
    }
    try:
        if args.command == "list":
            unknown = [p for p in args.parts if p not in _PARTS]
            if unknown:
                listing.error(f"unknown part {unknown[0]!r}; choose from {', '.join(_PARTS)}")
            parts = [*args.parts, *(["sets"] if args.sets else [])]
            _list(parts or _PARTS)
            return 0
        return int(handlers[args.command](args))
    except Error as exc:  # the library's own errors are messages for the user, not crashes
        print(f"rlwrappers {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (gym.error.UnregisteredEnv, gym.error.DeprecatedEnv) as exc:  # a mistyped env ID: gymnasium says which
        print(f"rlwrappers {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as stop:
        return _interrupted(args, stop)
    except BrokenPipeError:  # the reader stopped early (`rlwrappers list | head`): not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:  # a path that cannot be made, read or written: the path and the reason, no traceback
        if exc.filename is None:
            raise
        print(f"rlwrappers {args.command}: error: {exc.strerror}: {exc.filename!r}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
