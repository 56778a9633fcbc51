"""RL Zoo's ppo_lstm hyperparameters, extended to the perturbed IDs (see :mod:`rlwrappers.zoo.hyperparams`)."""

from rlwrappers.zoo.hyperparams import hyperparameters

hyperparams = hyperparameters("ppo_lstm")
