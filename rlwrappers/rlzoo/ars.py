"""RL Zoo's ars hyperparameters, extended to the perturbed IDs (see :mod:`rlwrappers.rlzoo`)."""

from rlwrappers.rlzoo import hyperparameters

hyperparams = hyperparameters("ars")
