"""The batched robustness card against a bare loop, and the batched runner against the per-run one.

1. A full CartPole-v1 card (``robustness_card`` in fast mode, one worker: every family at levels 1 to 5, the
   recovery arm and the clean arm, ``--seeds`` x ``--episodes`` per arm) against a bare loop that plays the
   same runs: the same wrapped envs, the same reset seeds, one ``agent.act`` per step, no log and no scoring.
   The card may cost at most 1.5x the bare loop.
2. ``rw.evaluate`` on the CartPole ladder's level-3 arms with one run at a time (``batch=1``), with 16 runs
   stepped together and one network pass per batch (``exact=False``), and with 16 together and one pass per
   run (``exact=True``): agent steps per second and their ratios.
3. With ``--breakout ZIP`` (an SB3 PPO agent): the same three on BreakoutNoFrameskip-v4 as its card plays it
   (whole games, ``atari_wrapper(games=True)``, capped at 18,000 frames, 4 games a run), and SB3's
   ``evaluate_policy`` on ``make_atari_env`` with 8 envs and ``VecFrameStack(4)`` (each episode a whole game
   too) as a reference, in agent steps per second. With ``--before COMMIT`` too, the runner of that earlier
   commit (default :data:`BEFORE`, the last one before batched runs) plays the same runs in a subprocess, from
   a copy of that commit's tree (``git archive``): its Atari preprocessing counts lives as episodes, so each
   run plays five of them for each game, and the rate is its agent steps per second, start-up included as for
   the others. Last, ale-py's own ``AtariVectorEnv`` (C++ threads, the preprocessing inside, 8 envs, one
   thread per worker) with the agent acting on each batch, as a ceiling: its frames differ from SB3's
   preprocessing's, so it never makes a card.

4. With ``--card-v1 [COMMIT]``: part 1's card as card-v2 makes it (this tree) against the same card as card-v1
   made it (the last card-v1 commit, default :data:`CARD_V1`), each in a fresh subprocess from its own tree
   (``git archive``), timed around the ``robustness_card`` call alone, alternating for ``--rounds`` rounds (medians
   are printed). card-v2 may cost at most 1.2x card-v1 (:data:`V2_LIMIT`): the two play the same arms, and card-v2
   grades with one vectorized bootstrap where card-v1 looped over replicates.

Everything runs in this process with one torch thread, unless ``--workers`` gives the runners more.

Run: python benchmarks/bench_card.py [--seeds 5 --episodes 10] [--breakout PATH] [--card-v1]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym
import torch

import rlwrappers as rw
from rlwrappers.core import Entry
from rlwrappers.ladders import ladder
from rlwrappers.logs.reader import read_episodes
from rlwrappers.studies import EnvSetup, Execution, batched
from rlwrappers.studies.design import BASELINE, episode_seed
from rlwrappers.studies.robustness_card import robustness_card

AGENT, ENV = "ppo-CartPole-v1", "CartPole-v1"
BREAKOUT = "BreakoutNoFrameskip-v4"
LIMIT = 1.5
BATCH = 16
#: The last commit before batched runs: its per-run runner is the baseline of part 3's ``--before``.
BEFORE = "f93df50"
#: The last commit whose cards are card-v1's: part 4's baseline.
CARD_V1 = "182c29a"
V2_LIMIT = 1.2
#: Makes part 1's card with the tree on PYTHONPATH; argv: seeds, episodes, out. Prints the seconds and the package.
CARD_SCRIPT = """
import json, sys, time
import torch
import rlwrappers as rw
from rlwrappers.studies.robustness_card import robustness_card

torch.set_num_threads(1)
seeds, episodes, out = sys.argv[1:]
robustness_card("ppo-CartPole-v1", "CartPole-v1", out=out + "-warm", seeds=1, episodes=1, workers=1, progress=False)
started = time.perf_counter()
record = robustness_card(
    "ppo-CartPole-v1", "CartPole-v1", out=out, seeds=int(seeds), episodes=int(episodes), workers=1, progress=False
)
print(json.dumps({"seconds": time.perf_counter() - started, "ladder": record["ladder"], "package": rw.__file__}))
"""
#: Plays part 3's runs with an earlier commit's runner; argv: agent zip, shifts (JSON), seeds, lives, frames,
#: workers, run folder. Prints the agent steps, the seconds and the package it ran as JSON.
BEFORE_SCRIPT = """
import json, sys, time
import ale_py, gymnasium as gym, torch
import rlwrappers as rw
from rlwrappers.studies import EnvSetup, Execution
from rlwrappers.wrappers.atari import atari_wrapper

torch.set_num_threads(1)
gym.register_envs(ale_py)
path, shifts, seeds, lives, frames, workers, out = sys.argv[1:]
agent = rw.load_agent(path, trusted=True)
setup = EnvSetup(kwargs={"max_episode_steps": int(frames)}, wrappers=[atari_wrapper])
started = time.perf_counter()
result = rw.evaluate(agent, "BreakoutNoFrameskip-v4", json.loads(shifts), episodes=int(lives), seeds=int(seeds),
                     out=out, env=setup, execution=Execution(workers=int(workers), progress=False))
took = time.perf_counter() - started
steps = sum(int(rw.read_log(result.path / p).episodes["length"].sum()) for p in result.index["path"])
print(json.dumps({"steps": steps, "seconds": took, "package": rw.__file__}))
"""


def bare_card(runs: list[dict[str, Any]], shifts: Mapping[str, list[dict[str, Any]]], episodes: int) -> int:
    """Plays every run of a card with a bare loop; returns the agent steps."""
    agent = rw.load_agent(AGENT)
    steps = 0
    for row in runs:
        entries = shifts.get(row["shift"], []) if row["shift"] != BASELINE else []
        actor = agent
        if any(Entry.parse(e).perturbation.channel == "policy" for e in entries):
            actor = copy.deepcopy(agent)  # parameter noise changes the weights: the card's runs get a copy too
        env = gym.make(ENV)
        if entries:
            env = rw.wrap(env, *entries)
            rw.attach(env, actor)
        for episode in range(episodes):
            obs, _ = env.reset(seed=episode_seed(row["seed"], episode))
            done = False
            while not done:
                obs, _, terminated, truncated, _ = env.step(actor.act(obs[None])[0])
                done = terminated or truncated
                steps += 1
        env.close()
    return steps


def card_ratio(seeds: int, episodes: int) -> bool:
    tmp = tempfile.mkdtemp()
    robustness_card(AGENT, ENV, out=f"{tmp}/warm", seeds=1, episodes=1, workers=1, progress=False, reps=10)
    started = time.perf_counter()
    record = robustness_card(AGENT, ENV, out=f"{tmp}/card", seeds=seeds, episodes=episodes, workers=1, progress=False)
    card = time.perf_counter() - started
    runs_dir = Path(tmp) / "card" / "runs"
    runs = json.loads((runs_dir / "index.json").read_text())["runs"]
    shifts = json.loads((runs_dir / "evaluation.json").read_text())["shifts"]
    started = time.perf_counter()
    steps = bare_card(runs, shifts, episodes)
    bare = time.perf_counter() - started
    logged = record["timings"]["agent_steps"]
    ratio = card / bare
    print(f"1. CartPole-v1 card, fast mode, 1 worker: {len(runs)} runs x {episodes} episodes ({seeds} seeds per arm)")
    print(f"  bare loop  {bare:7.1f} s  {steps:>9,} agent steps  {steps / bare:8.0f} steps/s")
    print(f"  card       {card:7.1f} s  {logged:>9,} agent steps  {logged / card:8.0f} steps/s")
    print(f"  card / bare {ratio:5.2f}  (limit {LIMIT:.2f}: {'ok' if ratio <= LIMIT else 'EXCEEDED'})")
    return ratio <= LIMIT


def agent_steps(result: Any) -> int:
    return sum(int(read_episodes(result.path / path)["length"].sum()) for path in result.index["path"])


def runners(title: str, evaluate: Callable[[str, Execution], Any], workers: int, rounds: int) -> dict[str, float]:
    """Times ``evaluate`` per-run, batched fast and batched exact; prints and returns agent steps per second.

    Also prints how far fast mode strays from exact mode (:func:`rlwrappers.studies.batched.compare_modes`).
    """
    arms = {
        "per run (batch=1)": Execution(workers=workers, progress=False, batch=1),
        f"batch={BATCH}, fast (exact=False)": Execution(workers=workers, progress=False, batch=BATCH, exact=False),
        f"batch={BATCH}, exact": Execution(workers=workers, progress=False, batch=BATCH, exact=True),
    }
    tmp = tempfile.mkdtemp()
    rates: dict[str, list[float]] = {name: [] for name in arms}
    steps: dict[str, int] = {}
    results: dict[str, Any] = {}
    for r in range(rounds):
        for k, (name, execution) in enumerate(arms.items() if r % 2 == 0 else reversed(arms.items())):
            started = time.perf_counter()
            result = results[name] = evaluate(f"{tmp}/{r}-{k}", execution)
            took = time.perf_counter() - started
            steps[name] = agent_steps(result)
            rates[name].append(steps[name] / took)
    print(title)
    base = statistics.median(rates["per run (batch=1)"])
    out = {}
    for name, values in rates.items():
        out[name] = rate = statistics.median(values)
        print(f"  {name:<32} {steps[name]:>8,} agent steps  {rate:8.0f} steps/s   x{rate / base:5.2f} per-run")
    fast, exact = (results[name] for name in list(arms)[1:])
    modes = batched.compare_modes(fast, exact)
    print(
        f"  fast vs exact: {int(modes['within'].sum())} of {len(modes)} arms' fast mean returns within the exact"
        f" arm's 95% half-width; episodes whose actions differ at some step: {modes['differ_share'].mean():.0%}"
    )
    return out


def cartpole_runners(seeds: int, episodes: int, workers: int, rounds: int) -> None:
    shifts = {arm.name: arm.entries for arm in ladder(ENV).arms() if arm.level == 3}

    def evaluate(out: str, execution: Execution) -> Any:
        return rw.evaluate(AGENT, ENV, shifts, episodes=episodes, seeds=seeds, out=out, execution=execution)

    evaluate(tempfile.mkdtemp(), Execution(workers=1, progress=False))  # warm-up
    runs = (len(shifts) + 1) * seeds
    runners(
        f"2. rw.evaluate on CartPole-v1, level-3 arms ({', '.join(shifts)}) and the clean arm:"
        f" {runs} runs x {episodes} episodes, {workers} worker(s)",
        evaluate,
        workers,
        rounds,
    )


def ale_vector(agent: Any, games: int, frames: int, threads: int) -> float:
    """Agent steps per second of ale-py's ``AtariVectorEnv`` (8 envs) playing ``games`` whole games with ``agent``."""
    import numpy as np
    from ale_py.vector_env import AtariVectorEnv

    envs = AtariVectorEnv("breakout", 8, num_threads=threads, max_num_frames_per_episode=frames, reward_clipping=False)
    started = time.perf_counter()
    obs, _ = envs.reset(seed=0)
    resetting = np.zeros(8, dtype=bool)  # an env that ended its game resets at its next step
    steps = finished = 0
    while finished < games:
        obs, _, terminated, truncated, _ = envs.step(agent.act(obs))
        steps += int((~resetting).sum())
        done = (terminated | truncated) & ~resetting
        finished += int(done.sum())
        resetting = done
    took = time.perf_counter() - started
    envs.close()
    return steps / took


def tree_of(commit: str | None) -> Path:
    """A copy of ``commit``'s tree, importable as the installed package is; None: the repository root itself."""
    root = Path(__file__).resolve().parents[1]
    if commit is None:
        return root
    tree = Path(tempfile.mkdtemp())
    archive = subprocess.run(["git", "archive", commit], cwd=root, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    (tree / "rlwrappers" / "envs").symlink_to(tree / "envs")  # as the installed package maps it
    return tree


def run_in_tree(tree: Path, script: str, args: list[str]) -> dict[str, Any]:
    """Runs ``script`` with ``tree``'s package (the installed one for the root), returns the JSON it printed last."""
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ) if tree == root else {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-c", script, *args], cwd=tree, env=env, check=True, capture_output=True, text=True
    )
    measured: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if not Path(measured["package"]).resolve().is_relative_to(tree.resolve()):
        raise RuntimeError(f"the script run with {tree} imported {measured['package']}, not its own tree")
    return measured


def timed_card(tree: Path, seeds: int, episodes: int) -> tuple[float, str]:
    """Seconds of part 1's card made by ``tree``'s package in a subprocess, and its ladder version."""
    measured = run_in_tree(tree, CARD_SCRIPT, [str(seeds), str(episodes), f"{tempfile.mkdtemp()}/card"])
    return float(measured["seconds"]), str(measured["ladder"])


def card_versions(commit: str, seeds: int, episodes: int, rounds: int) -> bool:
    """Part 4: card-v2 (this tree) against card-v1 (``commit``), alternating, medians."""
    trees = {"card-v1": tree_of(commit), "card-v2": tree_of(None)}
    seconds: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(rounds):
        for name, tree in trees.items():
            took, ladder = timed_card(tree, seeds, episodes)
            if ladder != name:
                raise RuntimeError(f"the {name} tree made a card of ladder {ladder}")
            seconds[name].append(took)
    v1, v2 = (statistics.median(seconds[name]) for name in trees)
    ratio = v2 / v1
    print(f"4. CartPole-v1 card at {seeds} seeds x {episodes} episodes, fast mode, 1 worker ({rounds} rounds, medians)")
    print(f"  card-v1 ({commit})  {v1:7.1f} s   {', '.join(f'{x:.1f}' for x in seconds['card-v1'])}")
    print(f"  card-v2 (this tree) {v2:7.1f} s   {', '.join(f'{x:.1f}' for x in seconds['card-v2'])}")
    print(f"  card-v2 / card-v1 {ratio:5.2f}  (limit {V2_LIMIT:.2f}: {'ok' if ratio <= V2_LIMIT else 'EXCEEDED'})")
    return ratio <= V2_LIMIT


def before(commit: str, path: str, shifts: list[str], seeds: int, games: int, frames: int, workers: int) -> float:
    """Agent steps per second of ``commit``'s runner on part 3's runs (five lives a game), in a subprocess."""
    tree = tree_of(commit)
    args = [json.dumps(shifts), str(seeds), str(5 * games), str(frames), str(workers), str(tree / "runs")]
    measured = run_in_tree(tree, BEFORE_SCRIPT, [str(Path(path).resolve()), *args])
    return float(measured["steps"] / measured["seconds"])


def breakout(
    path: str, seeds: int, episodes: int, games: int, frames: int, workers: int, rounds: int, commit: str | None
) -> None:
    import ale_py
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_atari_env
    from stable_baselines3.common.evaluation import evaluate_policy
    from stable_baselines3.common.vec_env import VecFrameStack

    from rlwrappers.ladders import preprocessing_wrappers

    gym.register_envs(ale_py)
    agent = rw.load_agent(path, trusted=True)
    shifts = ["obs_noise(std=8)", "action_noise(p=0.1)", "sticky_action(p=0.25)"]
    setup = EnvSetup(kwargs={"max_episode_steps": frames}, wrappers=preprocessing_wrappers("atari-games"))

    def evaluate(out: str, execution: Execution) -> Any:
        return rw.evaluate(
            agent, BREAKOUT, shifts, episodes=episodes, seeds=seeds, out=out, env=setup, execution=execution
        )

    evaluate(tempfile.mkdtemp(), Execution(workers=1, progress=False))  # warm-up
    runs = (len(shifts) + 1) * seeds
    rates = runners(
        f"3. rw.evaluate on {BREAKOUT}, whole games, clean and {', '.join(shifts)}: {runs} runs x {episodes}"
        f" game(s), {workers} worker(s)",
        evaluate,
        workers,
        rounds,
    )
    model = PPO.load(path, device="cpu")
    counted = [0]

    def count(_locals: dict[str, Any], _globals: dict[str, Any]) -> None:
        counted[0] += 1  # once per env still playing, per vector step

    n_envs = min(8, games)  # an env with no game to play would step for nothing
    env = VecFrameStack(make_atari_env(BREAKOUT, n_envs=n_envs, seed=0, env_kwargs={"max_episode_steps": frames}), 4)
    evaluate_policy(model, env, n_eval_episodes=n_envs, callback=count)  # warm-up
    counted[0] = 0
    started = time.perf_counter()
    evaluate_policy(model, env, n_eval_episodes=games, callback=count)
    took = time.perf_counter() - started
    env.close()
    base = rates["per run (batch=1)"]
    rate = counted[0] / took
    name = f"SB3 evaluate_policy, {n_envs} envs"
    print(
        f"  {name:<32} {counted[0]:>8,} agent steps  {rate:8.0f} steps/s   x{rate / base:5.2f}"
        f" per-run  ({games} whole games of 5 lives, up to {frames} frames each)"
    )
    fast = rates[f"batch={BATCH}, fast (exact=False)"]
    print(f"  batched fast / SB3 evaluate_policy: x{fast / rate:.2f}")
    ceiling = ale_vector(agent, games, frames, workers)
    name = "ale-py AtariVectorEnv, 8 envs"
    print(f"  {name:<32} {'':>8}  agent steps  {ceiling:8.0f} steps/s   x{ceiling / base:5.2f} per-run")
    print(f"  batched fast / AtariVectorEnv: x{fast / ceiling:.2f}")
    if commit is not None:
        old = before(commit, path, shifts, seeds, episodes, frames, workers)
        name = f"runner of {commit}"
        print(f"  {name:<32} {'':>8}  agent steps  {old:8.0f} steps/s   x{old / base:5.2f} per-run")
        print(f"  batched fast / runner of {commit}: x{fast / old:.2f}")


def main() -> bool:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="card seeds per arm (part 1)")
    parser.add_argument("--episodes", type=int, default=10, help="card episodes per seed and arm (part 1)")
    parser.add_argument("--skip-card", action="store_true", help="skip part 1")
    parser.add_argument("--runner-seeds", type=int, default=4, help="seeds per arm (part 2)")
    parser.add_argument("--runner-episodes", type=int, default=5, help="episodes per run (part 2)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes of the runners (parts 2 and 3)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of parts 2 and 3 (medians are printed)")
    parser.add_argument("--breakout", metavar="ZIP", help="an SB3 PPO Breakout zip: run part 3 with it")
    parser.add_argument("--breakout-seeds", type=int, default=4, help="seeds per arm (part 3)")
    parser.add_argument("--breakout-episodes", type=int, default=4, help="games per run, 4 as on the card (part 3)")
    parser.add_argument("--breakout-games", type=int, default=16, help="games SB3's evaluate_policy plays (part 3)")
    parser.add_argument("--breakout-frames", type=int, default=18_000, help="frames a game may last (part 3)")
    parser.add_argument(
        "--before", nargs="?", const=BEFORE, metavar="COMMIT", help=f"part 3 against COMMIT's runner (default {BEFORE})"
    )
    parser.add_argument(
        "--card-v1", nargs="?", const=CARD_V1, metavar="COMMIT", help=f"part 4 against COMMIT (default {CARD_V1})"
    )
    args = parser.parse_args()
    torch.set_num_threads(1)  # as in each worker process
    ok = True
    if not args.skip_card:
        ok = card_ratio(args.seeds, args.episodes)
    if args.card_v1:
        ok = card_versions(args.card_v1, args.seeds, args.episodes, args.rounds) and ok
    cartpole_runners(args.runner_seeds, args.runner_episodes, args.workers, args.rounds)
    if args.breakout:
        breakout(
            args.breakout,
            args.breakout_seeds,
            args.breakout_episodes,
            args.breakout_games,
            args.breakout_frames,
            args.workers,
            args.rounds,
            args.before,
        )
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
