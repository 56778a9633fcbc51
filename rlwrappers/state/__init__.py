"""The one place that reads and writes an env's state.

- :mod:`~rlwrappers.state.simulators`: a simulator's state vector and physical parameters (classic control,
  MuJoCo), for initial-state noise and dynamics shifts.
- :mod:`~rlwrappers.state.documents`: an env's state as a JSON document (Toybox, classic control, MuJoCo,
  ALE RAM), read, written back and rendered, for interventions and offline robustness.
- :mod:`~rlwrappers.state.interventions`: the intervention path language (``bricks[row=2].alive=false``),
  checked against a state's schema.

The wrappers that use them live in :mod:`rlwrappers.wrappers.state`; the Toybox games' catalogues of
interventions beside the games, in :mod:`rlwrappers.envs.toybox.interventions`.
"""
