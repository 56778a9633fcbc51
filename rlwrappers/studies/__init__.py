"""Studies: evaluations of agents under shifts, sweeps, offline robustness and saliency, run end to end.

- :mod:`~rlwrappers.studies.run`: :func:`~rlwrappers.studies.run.evaluate`, an agent under several shifts over
  many seeds, each paired with a same-seed counterfactual; :mod:`~rlwrappers.studies.design` plans its arms,
  :mod:`~rlwrappers.studies.arms` runs one, :mod:`~rlwrappers.studies.probes` collects its probes and
  :mod:`~rlwrappers.studies.teams` holds the teams of PettingZoo parallel envs.
- :mod:`~rlwrappers.studies.results`: :func:`~rlwrappers.studies.results.open_evaluation`, an evaluation read
  back from its run folder.
- :mod:`~rlwrappers.studies.shift_impact`: seed 001's protocol for performance under distribution shift.
- :mod:`~rlwrappers.studies.sweep`: parameter sweeps of a perturbation.
- :mod:`~rlwrappers.studies.offline` and :mod:`~rlwrappers.studies.states`: offline robustness of training
  pipelines, on sampled and intervened states.
- :mod:`~rlwrappers.studies.saliency`: seed 003's saliency study of one agent.

The measures they compute are pure functions in :mod:`rlwrappers.metrics`; their reports are
:mod:`rlwrappers.report`.
"""

from rlwrappers.studies.design import EnvSetup, Execution, Timing

__all__ = ["EnvSetup", "Execution", "Timing"]
