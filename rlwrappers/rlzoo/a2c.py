"""RL Zoo's a2c hyperparameters, extended to the perturbed IDs (see :mod:`rlwrappers.rlzoo`)."""

from rlwrappers.rlzoo import hyperparameters

hyperparams = hyperparameters("a2c")
