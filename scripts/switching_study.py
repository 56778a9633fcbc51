"""Seed 001's agent-switching study (Section 5, Figures 5 and 6) on the coordinated-buildings env.

The shipped team ``powergrid-main`` runs with 1, 2 or 3 of its 5 agents switched to the outside group
``powergrid-outside`` (trained the same way with another seed) or to untrained agents:

- causal: switched from episode 50 of 100, against the same seeds without any switch;
- observational: switched for spans of 5 to 30 steps that start at any step with probability 0.02.

10 seeds each. Both evaluations go to ``OUT/switching-causal`` and ``OUT/switching-observational`` with their
reports (run again to resume); the figures of ``docs/powergrid.md`` are drawn into ``--figures``, one panel row
for the pretrained outside group and one for the untrained one, as in seed 001's figures.

    python scripts/switching_study.py --out runs --figures docs/img
"""

from __future__ import annotations

import argparse
from pathlib import Path

import rlwrappers as rw
from rlwrappers.report import plots
from rlwrappers.report.evaluation import write_report
from rlwrappers.studies import Execution, shift_impact
from rlwrappers.studies.design import BASELINE
from rlwrappers.studies.results import Evaluation

TEAM = "powergrid-main"
GROUPS = {"outside": "pretrained outside agents (powergrid-outside)", "untrained": "untrained agents"}
SHIFTS = {f"switch(k={k}, to={group})": f"switch(k={k}, to={group})" for group in GROUPS for k in (1, 2, 3)}
SETTINGS = {
    "outside": {"outside": "powergrid-outside"},
    "episodes": 100,
    "seeds": 10,
    "progress": False,
}
STRIKES = "bursts(p=0.02, duration=(5, 30))"


def _label(shift: str) -> str:
    k = shift.split("k=")[1].split(",")[0]
    return f"{k} agent{'s' if k != '1' else ''} switched"


def _impact_figures(run: Evaluation, out: Path) -> None:
    episodes = run.episodes()
    control = shift_impact.returns(episodes, TEAM, BASELINE)
    for group, title in GROUPS.items():
        levels = {
            _label(s): shift_impact.returns(episodes, TEAM, s)
            for s in run.request["shifts"]
            if s.endswith(f"to={group})")
        }
        fig = plots.impact_panels(levels, control, run.shift_at or 0)
        fig.suptitle(f"{TEAM}, switching to {title} from episode {run.shift_at}")
        fig.savefig(out / f"switching-causal-{group}.png", dpi=90)


def _forecast_figures(run: Evaluation, out: Path) -> None:
    arms = shift_impact.forecasts(run)
    for group, title in GROUPS.items():
        chosen = {s: arm for (_, s), arm in arms.items() if s == BASELINE or s.endswith(f"to={group})")}
        names = {s: "no switch" if s == BASELINE else _label(s) for s in chosen}
        fig = plots.forecasts(
            {names[s]: arm.series for s, arm in chosen.items()},
            {names[s]: arm.forecast for s, arm in chosen.items()},
            title=f"{TEAM}, random switches to {title}",
        )
        fig.savefig(out / f"switching-observational-{group}.png", dpi=90)


def main() -> None:
    """Runs (or resumes) both evaluations, writes their reports and, with ``--figures``, the docs' figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs", help="where the two evaluations go (default: runs)")
    parser.add_argument("--figures", help="also draw the docs' figures into this folder")
    parser.add_argument("--workers", type=int, default=None, help="parallel runs (default: CPU cores)")
    args = parser.parse_args()
    root = Path(args.out)
    causal = rw.causal(
        TEAM,
        "coordinated_buildings_v0",
        SHIFTS,
        out=root / "switching-causal",
        **SETTINGS,
        execution=Execution(workers=args.workers),
    )
    observed = rw.observational(
        TEAM,
        "coordinated_buildings_v0",
        SHIFTS,
        when=STRIKES,
        out=root / "switching-observational",
        **SETTINGS,
        execution=Execution(workers=args.workers),
    )
    for run in (causal, observed):
        print(f"Report: {write_report(run)}")
    table = shift_impact.did_table(causal)
    print(table[["estimate", "se", "lower", "upper", "cumulative"]].to_string())
    for sentence in shift_impact.forecast_verdicts(shift_impact.forecasts(observed)):
        print(sentence)
    if args.figures:
        out = Path(args.figures)
        out.mkdir(parents=True, exist_ok=True)
        _impact_figures(causal, out)
        _forecast_figures(observed, out)


if __name__ == "__main__":
    main()
