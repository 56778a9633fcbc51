"""Contract checks that every perturbation wrapper passes, shipped so that you can check your own.

:func:`check_wrapper` runs them all on a wrapper stack; each is also a function of its own. :class:`SpaceEnv`
is a small deterministic env over any Box, Discrete or MultiDiscrete space, to test a wrapper on spaces that
no simulator offers. Hypothesis strategies for spaces live in :mod:`rlwrappers.testing.strategies` (which
needs the ``test`` extra).

Example:
    >>> import gymnasium as gym, numpy as np, rlwrappers as rw
    >>> from rlwrappers.testing import SpaceEnv, check_wrapper
    >>> make = lambda: SpaceEnv(gym.spaces.Box(0, 255, (8, 8), np.uint8), gym.spaces.Discrete(4))
    >>> ran = check_wrapper(make, lambda env: rw.ObservationNoise(env, std=5.0), steps=10, async_vector=False)
    >>> ran[-1], "check_spec_roundtrip" in ran  # SpaceEnv is not built by gym.make, so it has no spec
    ('check_vector_equivalence', False)
"""

from rlwrappers.testing.contract import (
    CHECKS,
    ContractError,
    EnvFn,
    WrapFn,
    check_determinism,
    check_env_rng_untouched,
    check_gymnasium_env,
    check_no_mutation,
    check_sb3_env,
    check_spaces,
    check_spec_roundtrip,
    check_vector_equivalence,
    check_wrapper,
)
from rlwrappers.testing.env import SpaceEnv, sample

__all__ = [
    "CHECKS",
    "ContractError",
    "EnvFn",
    "WrapFn",
    "SpaceEnv",
    "sample",
    "check_wrapper",
    "check_gymnasium_env",
    "check_sb3_env",
    "check_determinism",
    "check_spaces",
    "check_no_mutation",
    "check_env_rng_untouched",
    "check_vector_equivalence",
    "check_spec_roundtrip",
]
