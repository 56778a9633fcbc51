"""Saliency maps of the Nature-DQN on Breakout (84x84x4 uint8 frames) on two CPU threads: time per map.

The agent is the trained DQN in ``shared/agents`` (a freshly initialized SB3 DQN ``CnnPolicy``, the same
NatureCNN, when the file is missing), the frame a real Breakout state 30 steps into a game. Every comparison
runs its arms in interleaved rounds of the same run (``_timing.paired``); a ratio is the median over rounds of
an arm's time per map over the first arm's time in the same round.

Arms and limits:

1. Occlusion, patch 4 (441 perturbed frames, black): one forward pass per perturbed frame (``batch_size=1``,
   the baseline), the plain batched forward (``incremental=False``) and the incremental forward (the default
   for this network). Limit: incremental <= 1/3 of the baseline.
2. Occlusion, incremental against plain batched: what doing less work adds to batching. Limit: < 1.
3. captum's ``Occlusion`` on the same 441 perturbations (window (4, 4, 4) over all stacked frames, strides
   (4, 4, 4), baselines 0; its map equals ours), at ``perturbations_per_eval`` 1, 16, 64, 256 and 441, each
   timed; the best against our incremental occlusion. Limit: ours <= captum's best.
4. RISE with 3,000 masks: one forward per masked frame against the batched default. Limit: <= 1/1.5.
5. LIME at our defaults (quickshift on the stacked frames, kernel 1, max distance 2, ratio 0; 1,500 samples)
   against captum's ``Lime`` with the same segmentation as its ``feature_mask`` (segmenting is timed in both
   arms), 1,500 samples, baselines 0, at ``perturbations_per_eval`` 1, 16, 64, 256, 512 and 1,500, the best
   against ours. captum's default surrogate (``SkLearnLasso``) needs scikit-learn, which is not installed
   here; its arm fits the closed-form weighted ridge ours fits, so both arms do the same regression.
   Limit: ours <= captum's best.

captum is not a dependency of rlwrappers: without it, arms 3 and 5 are skipped with a line saying so
(``pip install captum==0.9.0 --no-deps`` installs it).

Last, with no limits, the time per map of all five methods at their defaults and at the settings of the
paper's Tables 2-7 (seed 003), beside the times the paper reports (TensorFlow on a GTX TITAN X GPU, one
forward pass per perturbed frame): a median of up to three runs each.

Run: python benchmarks/bench_saliency.py
"""

from __future__ import annotations

import functools
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ale_py
import gymnasium as gym
import numpy as np
import torch
from _timing import paired

from rlwrappers.agents import Agent, SB3Agent, load_sb3
from rlwrappers.explain import incremental as incremental_pass
from rlwrappers.explain import maps
from rlwrappers.wrappers import atari

gym.register_envs(ale_py)

THREADS = 2
AGENT = Path(__file__).resolve().parents[2] / "shared" / "agents" / "dqn-BreakoutNoFrameskip-v4-seed0.zip"
PATCH = 4
RISE_MASKS = 3000
PER_EVAL = (1, 16, 64, 256, 441)
LIME_PER_EVAL = (1, 16, 64, 256, 512, 1500)
QUICKSHIFT = {"kernel_size": 1, "max_dist": 2, "ratio": 0.0}
LIME_SAMPLES = 1500

#: (method, parameters, seconds per map in the paper's table), the rows of the paper's Tables 2-7 timed here.
PAPER: list[tuple[str, dict[str, Any], float]] = [
    ("occlusion", {"patch": 1}, 10.94),
    ("occlusion", {"patch": 1, "color": "gray"}, 11.09),
    ("occlusion", {"patch": 2}, 2.80),
    ("occlusion", {"patch": 2, "softmax": True}, 2.88),
    ("occlusion", {"patch": 3}, 1.26),
    ("occlusion", {"patch": 4}, 0.69),
    ("noise_sensitivity", {"radius": 1}, 22.84),
    ("noise_sensitivity", {"radius": 2}, 5.79),
    ("noise_sensitivity", {"radius": 3}, 2.62),
    ("noise_sensitivity", {"radius": 5}, 0.99),
    ("noise_sensitivity", {"radius": 10}, 0.31),
    ("sarfa", {"radius": 1, "variant": "black"}, 12.05),
    ("sarfa", {"radius": 2, "variant": "black"}, 3.00),
    ("sarfa", {"radius": 2, "variant": "blur"}, 6.12),
    ("sarfa", {"radius": 3, "variant": "black"}, 1.40),
    ("rise", {"masks": 3000, "size": 11, "p": 0.8, "softmax": True}, 5.09),
    ("rise", {"masks": 3000, "size": 13, "p": 0.7}, 4.76),
    ("rise", {"masks": 2500, "size": 24, "p": 0.9, "softmax": True}, 3.98),
    ("rise", {"masks": 3000, "size": 4, "p": 0.8}, 4.66),
    ("lime", {"segmentation": "felzenszwalb", "scale": 21.0, "sigma": 0.5, "min_size": 0, "samples": 3000}, 10.73),
    ("lime", {"segmentation": "felzenszwalb", "scale": 21.0, "sigma": 0.75, "min_size": 2, "samples": 3000}, 7.38),
    ("lime", {"segmentation": "felzenszwalb", "scale": 21.0, "sigma": 0.5, "min_size": 4, "samples": 1000}, 1.71),
    ("lime", {"segmentation": "slic", "n_segments": 200, "compactness": 10.0, "sigma": 1.0, "samples": 3000}, 3.13),
    ("lime", {"segmentation": "slic", "n_segments": 200, "compactness": 10.0, "sigma": 0.25, "samples": 2000}, 2.08),
    ("lime", {"segmentation": "slic", "n_segments": 200, "compactness": 10.0, "sigma": 0.5, "samples": 1000}, 1.06),
    ("lime", {"segmentation": "quickshift", "kernel_size": 1, "max_dist": 1, "samples": 3000}, 11.38),
    ("lime", {"segmentation": "quickshift", "kernel_size": 1, "max_dist": 2, "samples": 2500}, 4.46),
    ("lime", {"segmentation": "quickshift", "kernel_size": 1, "max_dist": 2, "samples": 1500}, 2.75),
]


def setup() -> tuple[Agent, np.ndarray, str]:
    """The DQN, a real Breakout frame stack and a line describing the agent."""
    env = atari.atari_wrapper(gym.make("BreakoutNoFrameskip-v4"))
    obs, _ = env.reset(seed=0)
    for t in range(30):
        obs, *_ = env.step(1 if t < 2 else t % 4)
    if AGENT.exists():
        return load_sb3(AGENT, observation_space=env.observation_space), np.asarray(obs), f"trained {AGENT.name}"
    from stable_baselines3 import DQN

    model = DQN("CnnPolicy", env, buffer_size=1, learning_starts=0, seed=0, device="cpu")
    return SB3Agent(model), np.asarray(obs), f"a freshly initialized SB3 DQN CnnPolicy ({AGENT} is missing)"


def compare(title: str, fns: dict[str, Callable[[], Any]], limits: dict[str, float], rounds: int) -> bool:
    """Times one map per call in interleaved rounds; prints ms per map and ratios to the first; checks limits."""
    times, ratios = paired({name: _one_map(fn) for name, fn in fns.items()}, rounds)
    print(title)
    ok = True
    for name, t in times.items():
        line = f"  {name:<58} {t * 1e3:9.1f} ms/map"
        if name != next(iter(fns)):
            line += f"   ratio {ratios[name]:6.3f} (x{1 / ratios[name]:.1f} faster)"
        if name in limits:
            holds = ratios[name] <= limits[name]
            ok &= holds
            line += f"  (limit {limits[name]:.3f}: {'ok' if holds else 'EXCEEDED'})"
        print(line)
    return ok


def _one_map(fn: Callable[[], Any]) -> Callable[[], int]:
    def run() -> int:
        fn()
        return 1

    return run


def seconds(fn: Callable[[], Any], runs: int = 3, budget: float = 8.0) -> float:
    """The median time of ``fn`` over up to ``runs`` runs, stopping once ``budget`` seconds are spent."""
    took: list[float] = []
    while len(took) < runs and sum(took) < budget:
        start = time.perf_counter()
        fn()
        took.append(time.perf_counter() - start)
    return statistics.median(took)


def quickshift_segments(obs: np.ndarray) -> np.ndarray:
    """Our LIME's default segmentation: quickshift on the stacked frames scaled to [0, 1], labels 0..K-1."""
    from skimage.segmentation import quickshift

    image = np.moveaxis(obs.astype(np.float64) / 255.0, 0, -1)
    raw = quickshift(image, convert2lab=False, channel_axis=-1, **QUICKSHIFT)
    return np.unique(raw, return_inverse=True)[1].reshape(raw.shape)


def ridge_surrogate() -> Any:
    """A captum linear model fitted as our LIME fits its surrogate: weighted ridge, penalty 1, free intercept."""
    from captum._utils.models.linear_model import LinearModel

    def train(model: Any, dataloader: Any, construct_kwargs: Any, **_: Any) -> dict[str, float]:
        x, y, w = (t.double() for t in next(iter(dataloader)))
        y, w = y.reshape(-1), w.reshape(-1)
        mean_w = w / w.sum()
        xc, yc = x - mean_w @ x, y - mean_w @ y
        xw, yw = xc * w.sqrt()[:, None], yc * w.sqrt()
        coef = torch.linalg.solve(xw.T @ xw + torch.eye(x.shape[1], dtype=x.dtype), xw.T @ yw)
        intercept = mean_w @ y - (mean_w @ x) @ coef
        model._construct_model_params(weight_values=coef.float()[None], bias_value=intercept.float().reshape(1))
        return {}

    return LinearModel(train_fn=train)


Work = Callable[[], Any]


def occlusion_arms(agent: Agent, obs: np.ndarray) -> tuple[bool, Work]:
    """Arms 1 and 2; returns whether their limits hold and the incremental arm."""
    fast = maps.occlusion(agent, obs, patch=PATCH)
    plain = maps.occlusion(agent, obs, patch=PATCH, incremental=False)
    print(f"incremental map - plain map: max |diff| {np.abs(fast.values - plain.values).max():.2e}")
    one, batched, incremental = (
        "occlusion, one forward per perturbed frame (batch_size=1)",
        "occlusion, plain batched (incremental=False)",
        "occlusion, incremental (the default)",
    )
    arms: dict[str, Work] = {
        one: lambda: maps.occlusion(agent, obs, patch=PATCH, incremental=False, batch_size=1),
        batched: lambda: maps.occlusion(agent, obs, patch=PATCH, incremental=False),
        incremental: lambda: maps.occlusion(agent, obs, patch=PATCH),
    }
    ok = compare(f"Occlusion, patch {PATCH} (441 perturbed frames), per map", arms, {incremental: 1 / 3}, rounds=7)
    ok &= compare(
        "Occlusion: incremental against plain batched, per map",
        {batched: arms[batched], incremental: arms[incremental]},
        {incremental: 1.0},
        rounds=21,
    )
    return ok, arms[incremental]


def captum_occlusion_arm(agent: Agent, obs: np.ndarray, incremental: Work) -> bool:
    """Arm 3: captum's Occlusion on the same perturbations, its best ``perturbations_per_eval`` against ours."""
    from captum.attr import Occlusion

    ours = maps.occlusion(agent, obs, patch=PATCH)
    occlusion = Occlusion(scorer(agent))
    x = torch.as_tensor(obs[None], dtype=torch.float32)

    def captum(per_eval: int) -> Work:
        return lambda: occlusion.attribute(
            x,
            sliding_window_shapes=(4, 4, 4),
            strides=(4, 4, 4),
            baselines=0.0,
            target=ours.action,
            perturbations_per_eval=per_eval,
        )

    attribution = captum(441)()[0].numpy()
    print(f"captum Occlusion map - ours: max |diff| {np.abs(attribution - ours.values[None]).max():.2e}")
    best = sweep("captum Occlusion", captum, PER_EVAL)
    name = "occlusion, ours (incremental)"
    return compare(
        "Occlusion: ours against captum's best, per map",
        {f"captum Occlusion, perturbations_per_eval={best}": captum(best), name: incremental},
        {name: 1.0},
        rounds=11,
    )


def rise_arm(agent: Agent, obs: np.ndarray) -> bool:
    """Arm 4: RISE, one forward per masked frame against batched."""
    batched = "rise, batched (the default)"
    return compare(
        f"RISE, {RISE_MASKS} masks, per map",
        {
            "rise, one forward per masked frame (batch_size=1)": lambda: maps.rise(
                agent, obs, masks=RISE_MASKS, batch_size=1
            ),
            batched: lambda: maps.rise(agent, obs, masks=RISE_MASKS),
        },
        {batched: 1 / 1.5},
        rounds=3,
    )


def captum_lime_arm(agent: Agent, obs: np.ndarray) -> bool:
    """Arm 5: captum's Lime with our segmentation and number of samples, its best against ours."""
    from captum.attr import Lime

    ours = maps.lime(agent, obs)
    segments = quickshift_segments(obs)
    same = ours.segments is not None and np.array_equal(segments, ours.segments)
    print(f"LIME: {segments.max() + 1} superpixels, the same segmentation as ours: {same}")
    lime = Lime(scorer(agent), interpretable_model=ridge_surrogate())
    x = torch.as_tensor(obs[None], dtype=torch.float32)

    def captum(per_eval: int) -> Work:
        def run() -> Any:
            mask = torch.as_tensor(quickshift_segments(obs))[None, None]
            return lime.attribute(
                x,
                baselines=0.0,
                target=ours.action,
                feature_mask=mask,
                n_samples=LIME_SAMPLES,
                perturbations_per_eval=per_eval,
            )

        return run

    best = sweep("captum Lime", captum, LIME_PER_EVAL)
    name = f"lime, ours (quickshift, {LIME_SAMPLES} samples: the defaults)"
    return compare(
        "LIME: ours against captum's best, per map",
        {f"captum Lime, perturbations_per_eval={best}": captum(best), name: lambda: maps.lime(agent, obs)},
        {name: 1.0},
        rounds=7,
    )


def scorer(agent: Agent) -> Callable[[torch.Tensor], torch.Tensor]:
    """The agent's scores as captum's forward function."""

    def scores(batch: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            return agent.outputs(batch).scores

    return scores


def sweep(name: str, make: Callable[[int], Work], values: tuple[int, ...]) -> int:
    """Times ``make(n)`` for each ``perturbations_per_eval`` n; prints them and returns the fastest n."""
    print(f"{name}, per map, by perturbations_per_eval:")
    took = {n: seconds(make(n), runs=1 if n == 1 else 3) for n in values}
    for n, t in took.items():
        print(f"  perturbations_per_eval={n:<5} {t * 1e3:9.1f} ms/map")
    return min(took, key=took.__getitem__)


def paper_table(agent: Agent, obs: np.ndarray) -> None:
    """The five methods at their defaults and at the paper's settings: ours beside the paper's seconds."""
    print("Time per map (median of up to 3 runs), no limits; the paper's on a GTX TITAN X GPU:")
    print(f"  {'method':<18} {'parameters':<84} {'ours s':>8} {'paper s':>8}")
    rows: list[tuple[str, dict[str, Any], float | None]] = [(m, {}, None) for m in maps.METHODS]
    for method, params, paper in [*rows, *PAPER]:
        t = seconds(functools.partial(maps.saliency_map, agent, obs, method, **params))
        shown = ", ".join(f"{k}={v}" for k, v in params.items()) or "(defaults)"
        print(f"  {method:<18} {shown:<84} {t:8.3f} {'' if paper is None else f'{paper:8.2f}':>8}")


def main() -> bool:
    torch.set_num_threads(THREADS)
    torch.manual_seed(0)
    agent, obs, described = setup()
    chain, why = incremental_pass.decompose(agent, "chw")
    assert chain is not None, why
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {described}; frame {obs.shape} {obs.dtype}")
    ok, incremental = occlusion_arms(agent, obs)
    try:
        import captum
    except ImportError:
        captum = None
        print("captum is not installed: its Occlusion and Lime rows are skipped (pip install captum==0.9.0 --no-deps)")
    else:
        print(f"captum {captum.__version__}")
        ok &= captum_occlusion_arm(agent, obs, incremental)
    ok &= rise_arm(agent, obs)
    if captum is not None:
        ok &= captum_lime_arm(agent, obs)
    paper_table(agent, obs)
    return ok


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
