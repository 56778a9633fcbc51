"""Explaining an agent's decisions: perturbation-based saliency maps and the checks of seed 003.

- :mod:`~rlwrappers.explain.maps`: occlusion, noise sensitivity, RISE, LIME and SARFA, for any agent with
  discrete actions whose observations are an image or a vector (:func:`~rlwrappers.explain.maps.saliency_map`
  calls one by name). A Dict or Tuple observation space is refused with
  :class:`~rlwrappers.error.IncompatibleSpace` before any map is computed; LIME's image segmentations, the
  incremental forward pass and the sanity check need an image (:data:`~rlwrappers.explain.maps.NEEDS_IMAGE`).
- :mod:`~rlwrappers.explain.incremental`: incremental forward passes that score local perturbations of one
  observation by recomputing only what they change (occlusion's patches, black discs).
- :mod:`~rlwrappers.explain.sanity`: cascading randomization of the agent's layers and the sanity check.
- :mod:`~rlwrappers.explain.insertion`: the insertion metric on q-values and advantages.
- :mod:`~rlwrappers.explain.selection`: the states to explain, by HIGHLIGHTS-DIV or at random.

The scores of maps (similarities, AUCs, the parameter search's scores) are pure functions in
:mod:`rlwrappers.metrics.saliency`; the whole study of one agent is :mod:`rlwrappers.studies.saliency`.
"""
