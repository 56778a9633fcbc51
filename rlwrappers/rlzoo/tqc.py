"""RL Zoo's tqc hyperparameters, extended to the perturbed IDs (see :mod:`rlwrappers.rlzoo`)."""

from rlwrappers.rlzoo import hyperparameters

hyperparams = hyperparameters("tqc")
