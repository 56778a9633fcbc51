"""RARL with SB3's PPO: a protagonist and an adversary trained in turns, then the protagonist's worst case.

The adversary pushes the env through a channel (forces on MuJoCo bodies, or a bounded disturbance of the
protagonist's actions) and earns the protagonist's reward, negated. Each iteration trains the protagonist
against the current adversary, then the adversary against the current protagonist, as in Pinto et al. (2017).
The protagonist is then searched for its worst case over the env's uncertainty set, without the adversary.

    python examples/rarl_ppo.py --env InvertedPendulum-v5 --iterations 20 --steps 4096 --out runs/rarl
"""

from __future__ import annotations

import argparse
from pathlib import Path

import gymnasium as gym
import numpy as np
from stable_baselines3 import PPO

import rlwrappers as rw
from rlwrappers.studies import Execution
from rlwrappers.studies.worst_case import worst_case
from rlwrappers.wrappers.rarl import ActionDisturbance, AgainstProtagonist, BodyForces, Channel, WithAdversary


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="InvertedPendulum-v5", help="a Gymnasium ID with Box actions")
    parser.add_argument("--bodies", nargs="*", default=["pole", "cart"], help="MuJoCo bodies the adversary pushes")
    parser.add_argument("--magnitude", type=float, default=3.0, help="its largest force per component, in newtons")
    parser.add_argument("--disturb-actions", type=float, help="push the actions instead, by this share of the range")
    parser.add_argument("--iterations", type=int, default=20, help="turns of the two players")
    parser.add_argument("--steps", type=int, default=4096, help="training steps per player per turn")
    parser.add_argument("--rollout", type=int, default=2048, help="PPO's steps per update (its n_steps)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--set", help="the uncertainty set of the evaluation (default: the env's first)")
    parser.add_argument("--points", type=int, default=5, help="grid points per parameter of the evaluation")
    parser.add_argument("--holdout", type=int, default=50, help="held-out episodes of the evaluation")
    parser.add_argument("--out", default="runs/rarl", help="where the agents and the evaluation go")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    out = Path(args.out)
    channel: Channel = (
        ActionDisturbance(args.disturb_actions)
        if args.disturb_actions
        else BodyForces(tuple(args.bodies), args.magnitude)
    )
    still = channel.bind(gym.make(args.env))
    protagonist_env = WithAdversary(gym.make(args.env), channel, lambda obs: np.zeros(still.shape, np.float32))
    protagonist = PPO("MlpPolicy", protagonist_env, n_steps=args.rollout, batch_size=64, seed=args.seed, device="cpu")
    adversary_env = AgainstProtagonist(gym.make(args.env), channel, protagonist)
    adversary = PPO("MlpPolicy", adversary_env, n_steps=args.rollout, batch_size=64, seed=args.seed + 1, device="cpu")
    protagonist_env.set_adversary(adversary)
    for iteration in range(1, args.iterations + 1):
        protagonist.learn(args.steps, reset_num_timesteps=False)
        adversary.learn(args.steps, reset_num_timesteps=False)
        print(f"iteration {iteration}/{args.iterations}: {protagonist.num_timesteps} steps each", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    protagonist.save(out / "protagonist.zip")
    adversary.save(out / "adversary.zip")
    box = rw.uncertainty_set(args.set or args.env, dims=None if args.set else 1)
    found = worst_case(
        protagonist,
        box,
        out=out / "worst-case",
        points=args.points,
        episodes=2,
        seeds=2,
        holdout=args.holdout,
        execution=Execution(workers=1, progress=False),
    )
    low, high = found.ci
    print(f"worst case over {box.name}: {found.worst:.1f} [{low:.1f}, {high:.1f}] at {dict(found.argmin)};")
    print(f"nominal env {found.nominal:.1f}, mean over the set {found.set_mean:.1f}")


if __name__ == "__main__":
    main()
