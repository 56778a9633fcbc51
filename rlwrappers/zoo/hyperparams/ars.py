"""RL Zoo's ars hyperparameters, extended to the perturbed IDs (see :mod:`rlwrappers.zoo.hyperparams`)."""

from rlwrappers.zoo.hyperparams import hyperparameters

hyperparams = hyperparameters("ars")
