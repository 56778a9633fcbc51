"""Vector-level FGSM over 8 Atari sub-envs, logging included, against torchattacks' FGSM on the same batch.

Both arms attack the same batch of eight stacked Breakout observations (8, 84, 84, 4) for SB3's PPO Breakout
agent. The baseline is ``torchattacks.FGSM`` on the [0, 1] batch with the labels given (its forward pass,
backward pass and sign step). The measured arm is what ``rlwrappers.sb3.AttackVecEnv`` does per step: convert
the uint8 batch, attack it (labels from the same forward pass), re-quantize, measure the sizes, and log the
decisions. Limit: 1.20.

Needs the trained agent in ../shared/agents and torchattacks (installed by scripts/test.sh).
Run: python benchmarks/bench_vector_attack.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import ale_py
import gymnasium as gym
import torch
import torchattacks
from _timing import report
from stable_baselines3 import PPO
from stable_baselines3.common.env_util import make_atari_env
from stable_baselines3.common.vec_env import VecFrameStack

from rlwrappers.wrappers.vector import BatchAttacker

AGENT = Path(__file__).resolve().parents[2] / "shared" / "agents" / "ppo-BreakoutNoFrameskip-v4-seed0.zip"
N_ENVS = 8
EPS = 0.01


class PixelModel(torch.nn.Module):
    """The policy's logits as a function of channel-first [0, 1] pixels."""

    def __init__(self, policy: torch.nn.Module):
        super().__init__()
        self.policy = policy

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = self.policy.extract_features(x * 255.0)
        return self.policy.action_net(self.policy.mlp_extractor.forward_actor(features))


def main() -> bool:
    torch.set_num_threads(1)
    gym.register_envs(ale_py)
    if not AGENT.exists():
        raise SystemExit(f"{AGENT} is missing: the benchmark attacks the PPO Breakout agent kept there")
    model = PPO.load(AGENT, device="cpu")
    venv = VecFrameStack(make_atari_env("BreakoutNoFrameskip-v4", n_envs=N_ENVS, seed=0), n_stack=4)
    obs = venv.reset()
    for _ in range(30):
        obs, *_ = venv.step(model.predict(obs, deterministic=True)[0])
    actions = model.predict(obs, deterministic=True)[0]

    attacker = BatchAttacker(f"fgsm(eps={EPS})", model, venv.observation_space, venv.action_space, N_ENVS)
    attacker.reset(seed=0)
    pixel_model = PixelModel(model.policy)
    x01 = torch.as_tensor(obs, dtype=torch.float32).permute(0, 3, 1, 2) / 255.0
    labels = pixel_model(x01).argmax(-1)
    fgsm = torchattacks.FGSM(pixel_model, eps=EPS)

    def baseline() -> int:
        fgsm(x01, labels)
        return 1

    def vector_attack() -> int:
        attacker.observe(obs)
        attacker.decide(actions)
        return 1

    return report(
        f"FGSM on a batch of {N_ENVS} stacked Breakout observations (one step)",
        {"torchattacks.FGSM (labels given)": baseline, "BatchAttacker observe + decide (logged)": vector_attack},
        {"BatchAttacker observe + decide (logged)": 1.20},
        rounds=31,
    )


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
