"""RL Zoo's qrdqn hyperparameters, extended to the perturbed IDs (see :mod:`rlwrappers.rlzoo`)."""

from rlwrappers.rlzoo import hyperparameters

hyperparams = hyperparameters("qrdqn")
