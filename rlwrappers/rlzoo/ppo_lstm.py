"""RL Zoo's ppo_lstm hyperparameters, extended to the perturbed IDs (see :mod:`rlwrappers.rlzoo`)."""

from rlwrappers.rlzoo import hyperparameters

hyperparams = hyperparameters("ppo_lstm")
