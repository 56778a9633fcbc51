"""Robustness card records built by hand for the page tests: a complete CartPole card, a subset card, a card of
image corruptions with sub-families and recovery, and variants for the leaderboard; in format 1 (card-v1), and
through :func:`graded` in format 2 (card-v2).

The scores come from :mod:`rlwrappers.metrics.card` over made-up normalized returns, so every record is one the
runner could write: the impact, the mean return and the interval of each level agree with each other.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

import numpy as np

from rlwrappers.metrics import grade
from rlwrappers.metrics.card import overall_stars, stars, tolerated_level

CLEAN = 487.25
RANDOM = 22.4
#: A CartPole ladder of seven families (no corruptions: its observations are not images).
CARTPOLE_FAMILIES = {
    "obs_noise": ("Observation noise", "std as a fraction of each dimension's spread", "obs_noise(std={})"),
    "action_noise": ("Action noise", "probability of a random action", "action_noise(p={})"),
    "sticky_actions": ("Sticky actions", "repeat probability", "sticky_action(p={})"),
    "initial_state": ("Initial-state noise", "scale of the reset noise", "init_noise(scale={})"),
    "dynamics": ("Dynamics", "relative change of pole length", "dynamics(length={})"),
    "param_noise": ("Policy-parameter noise", "relative std of the weights", "param_noise(std={})"),
    "attack": ("Gradient attack", "L-inf budget epsilon", "fgsm(eps={})"),
}
CORRUPTIONS = ("gaussian_noise", "shot_noise", "motion_blur", "fog", "brightness", "jpeg")


def reproducibility(scale: float) -> dict[str, float]:
    return {"mad": 3.5 * scale, "iqr": 7.25 * scale, "lcb": CLEAN - 9.5 * scale}


def level(number: int, normalized: float, spec: str, *, flip: float | None = None) -> dict[str, Any]:
    impact = 1.0 - normalized
    return {
        "level": number,
        "spec": [spec.format(round(0.05 * number, 2))],
        "mean_return": CLEAN - impact * (CLEAN - RANDOM),
        "impact": impact,
        "impact_ci": [impact - 0.031, impact + 0.047],
        "normalized": normalized,
        "flip_rate": flip,
    }


def family(
    name: str, title: str, unit: str, spec: str, normalized: Sequence[float], *, flips: bool = False, sub: bool = False
) -> dict[str, Any]:
    area = float(np.mean(np.clip(normalized, 0.0, 1.0)))
    out: dict[str, Any] = {
        "name": name,
        "title": title,
        "unit": unit,
        "levels": [
            level(i, n, spec, flip=min(1.0, 0.09 * i) if flips else None) for i, n in enumerate(normalized, start=1)
        ],
        "ausc": area,
        "ausc_ci": [max(0.0, area - 0.041), min(1.0, area + 0.033)],
        "tolerated": tolerated_level(normalized),
        "stars": stars(area),
        "reproducibility": {"clean": reproducibility(1.0), "level3": reproducibility(2.5)},
    }
    if not sub:
        out["sub_families"] = None
    return out


def curve(start: float, step: float) -> list[float]:
    return [start - step * i for i in range(5)]


def base(env_id: str, name: str) -> dict[str, Any]:
    return {
        "format": "rlwrappers-robustness-card",
        "format_version": 1,
        "ladder": "card-v1",
        "env_id": env_id,
        "agent": {
            "name": name,
            "source": "https://huggingface.co/sb3/ppo-CartPole-v1",
            "sha256": "0" * 63 + "1",
            "detail": "PPO, MlpPolicy, deterministic actions",
        },
        "package_version": "0.9.0",
        "settings": {
            "seeds": [0, 1, 2, 3, 4],
            "episodes": 20,
            "mode": "exact",
            "reps": 2000,
            "families": [],
            "complete": True,
            "deterministic": True,
        },
        "random_return": RANDOM,
        "clean": {"mean_return": CLEAN, "ci": [CLEAN - 6.125, CLEAN + 4.5], "reproducibility": reproducibility(1.0)},
        "rated": True,
        "families": [],
        "overall": {"stars": None, "mean_ausc": None, "worst_family": None, "worst_stars": None},
        "recovery": None,
        "interventions": [],
        "timings": {"seconds": 93.5, "agent_steps": 481_113, "steps_per_second": 5145.6},
    }


def rate(record: dict[str, Any]) -> dict[str, Any]:
    """Fills ``overall`` from the families, as the runner does (only for a complete, rated card)."""
    areas = {f["name"]: f["ausc"] for f in record["families"]}
    record["settings"]["families"] = list(areas)
    if record["settings"]["complete"] and record["rated"]:
        worst = min(areas, key=lambda k: areas[k])
        record["overall"] = {
            "stars": overall_stars(areas),
            "mean_ausc": float(np.mean(list(areas.values()))),
            "worst_family": worst,
            "worst_stars": stars(areas[worst]),
        }
    return record


def cartpole(name: str = "ppo-CartPole-v1", *, drop: float = 0.04) -> dict[str, Any]:
    """A complete CartPole card; ``drop`` is how fast the normalized return falls per level."""
    record = base("CartPole-v1", name)
    record["families"] = [
        family(key, title, unit, spec, curve(1.0 - k * 0.004, drop * (1 + k % 3)), flips=key == "attack")
        for k, (key, (title, unit, spec)) in enumerate(CARTPOLE_FAMILIES.items())
    ]
    record["interventions"] = [
        {
            "name": "heavy_pole",
            "doc": "The pole weighs 10 times more from step 100.",
            "spec": ["intervene(interventions=['masspole*=10'], when=starting(step=100))"],
            "mean_return": 401.75,
            "impact": 0.184,
            "impact_ci": [0.101, 0.262],
        },
        {
            "name": "push and tilt",
            "doc": "Two changes at once.",
            "spec": ["intervene(interventions=['x_dot+=1.0'])", "intervene(interventions=['theta=0.15'])"],
            "mean_return": 480.0,
            "impact": None,
            "impact_ci": None,
        },
    ]
    return rate(record)


def subset() -> dict[str, Any]:
    """A CartPole card of two families: no overall rating."""
    record = base("CartPole-v1", "dqn-CartPole-v1")
    record["settings"]["complete"] = False
    record["settings"]["mode"] = "fast"
    record["families"] = [
        family("obs_noise", *CARTPOLE_FAMILIES["obs_noise"], curve(0.97, 0.11)),
        family("attack", *CARTPOLE_FAMILIES["attack"], curve(0.6, 0.2), flips=True),
    ]
    return rate(record)


def unrated() -> dict[str, Any]:
    """A card whose clean return is below a random policy's: nothing is rated."""
    record = base("CartPole-v1", "untrained-CartPole-v1")
    record["agent"]["sha256"] = None
    record["rated"] = False
    record["clean"]["mean_return"] = 9.5
    record["clean"]["ci"] = [9.25, 9.75]
    unrated_family = family("obs_noise", *CARTPOLE_FAMILIES["obs_noise"], [1.0] * 5)
    for x in unrated_family["levels"]:
        x.update(impact=None, impact_ci=None, normalized=None, mean_return=9.5)
    unrated_family.update(ausc=None, ausc_ci=None, tolerated=0, stars=None, reproducibility=None)
    record["families"] = [unrated_family]
    return rate(record)


def corruptions() -> dict[str, Any]:
    """An Atari card of image corruptions (six sub-families) and the gradient attack, with recovery."""
    record = base("ALE/Pong-v5", '<b>ppo</b> & "Pong"')
    record["random_return"] = -20.7
    record["clean"]["mean_return"] = 20.25
    record["clean"]["ci"] = [19.5, 20.75]
    subs = [
        family(
            name,
            name.replace("_", " "),
            "severity (Hendrycks & Dietterich)",
            name + "(severity={})",
            curve(1, s),
            sub=True,
        )
        for name, s in zip(CORRUPTIONS, (0.05, 0.07, 0.12, 0.2, 0.02, 0.15), strict=True)
    ]
    means = [float(np.mean([s["levels"][i]["normalized"] for s in subs])) for i in range(5)]
    corrupted = family("corruptions", "Image corruptions", "severity 1-5", "corruption(severity={})", means, flips=True)
    corrupted["sub_families"] = subs
    record["families"] = [corrupted, family("attack", *CARTPOLE_FAMILIES["attack"], [0.9, 0.55, 0.2, -0.1, -0.3])]
    # Level 5 of the attack was not run: four levels only.
    record["families"][1]["levels"].pop()
    steps = 60
    clean_mean = [0.02 + 0.001 * (t % 7) for t in range(steps)]
    record["recovery"] = {
        "spec": ["obs_noise(std=0.5)@[20,30)"],
        "start": 20,
        "stop": 30,
        "window": 5,
        "horizon": 25,
        "episodes": 40,
        "median_steps": 7.5,
        "never_share": 0.125,
        "clean_mean": clean_mean,
        "band": [None] * 4 + [m - 0.01 for m in clean_mean[4:]],
        "shifted_mean": [m if not 20 <= t < 34 else -0.05 for t, m in enumerate(clean_mean)],
    }
    record["settings"]["complete"] = True
    return rate(record)


def variant(record: dict[str, Any], name: str, **overall: Any) -> dict[str, Any]:
    """A copy of ``record`` under another agent name, with ``overall`` changed."""
    out = copy.deepcopy(record)
    out["agent"]["name"] = name
    out["overall"].update(overall)
    return out


def frames(length: int, size: int = 12, seed: int = 0) -> list[np.ndarray[Any, Any]]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, size=(size, size + 4, 3), dtype=np.uint8) for _ in range(length)]


#: The reference return of the card-v2 records (CartPole's maximum return).
REFERENCE = 500.0


def _skill(mean_return: float, random: float) -> float:
    return (mean_return - random) / (REFERENCE - random)


def _graded_family(family: dict[str, Any], random: float) -> dict[str, Any]:
    """A family of a format-1 record in format 2: skill per level and a score; card-v1's numbers as relative."""
    out = {k: v for k, v in family.items() if k not in ("ausc", "ausc_ci", "tolerated")}
    subs = [_graded_family(sub, random) for sub in family.get("sub_families") or ()]
    out["levels"] = []
    for i, level in enumerate(family["levels"]):
        if subs:
            skill = float(np.mean([s["levels"][i]["skill"] for s in subs]))
        else:
            skill = _skill(level["mean_return"], random)
        out["levels"].append({**level, "skill": skill, "skill_ci": [skill - 0.03, skill + 0.04]})
    clipped = [min(max(x["skill"], 0.0), 1.0) for x in out["levels"]]
    score = float(np.mean([s["score"] for s in subs])) if subs else float(np.mean(clipped))
    out.update(
        score=score,
        score_ci=[max(0.0, score - 0.02), min(1.0, score + 0.025)],
        stars=int(grade.stars(score, grade.FAMILY_STARS)),
        relative={"ausc": family["ausc"], "ausc_ci": family["ausc_ci"], "tolerated": family["tolerated"]},
    )
    if subs:
        out["sub_families"] = subs
    return out


def graded(record: dict[str, Any]) -> dict[str, Any]:
    """A format-1 record as the runner writes it in format 2 (ladder card-v2), from the same mean returns."""
    out = {k: copy.deepcopy(v) for k, v in record.items() if k != "rated"}
    out.update(format_version=2, ladder="card-v2", reference_return=REFERENCE)
    out["random"] = {"return": record["random_return"], "source": "measured", "protocol": "the card's episodes"}
    out["reference"] = {"return": REFERENCE, "source": "the env's maximum return", "protocol": "one episode"}
    random = record["random_return"]
    skill = _skill(record["clean"]["mean_return"], random)
    out["clean"].update(skill=skill, skill_ci=[skill - 0.01, skill + 0.005])
    out["families"] = [_graded_family(f, random) for f in record["families"]]
    for x in out["interventions"]:
        x.update(skill=_skill(x["mean_return"], random), skill_ci=None)
    scores = {f["name"]: f["score"] for f in out["families"]}
    score = float(np.mean(list(scores.values())))
    worst = min(scores, key=lambda k: scores[k])
    complete = record["settings"]["complete"]
    stars = min(int(grade.stars(score)), int(grade.stars(scores[worst], grade.FAMILY_STARS)))
    out["overall"] = {
        "score": score,
        "score_ci": [score - 0.01, min(1.0, score + 0.015)],
        "stars": stars if complete else None,
        "stars_probability": [0.0] * (stars - 1) + [0.875] + [0.125] + [0.0] * (4 - stars) if complete else None,
        "worst_family": worst,
        "worst_score": scores[worst],
        "relative": {"mean_ausc": record["overall"]["mean_ausc"], "mean_ausc_ci": None},
    }
    if stars == 5 and complete:
        out["overall"]["stars_probability"] = [0.0, 0.0, 0.0, 0.125, 0.875]
    return out
