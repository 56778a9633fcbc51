"""Setup shared by every test module."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from rlwrappers.registration import REGISTERED_VAR


@pytest.fixture(autouse=True)
def _registrations_reach_only_the_tests_own_children() -> Iterator[None]:
    """``rw.register`` writes new IDs into RLWRAPPERS_REGISTERED; later tests' child processes must not inherit them."""
    before = os.environ.get(REGISTERED_VAR)
    yield
    if before is None:
        os.environ.pop(REGISTERED_VAR, None)
    else:
        os.environ[REGISTERED_VAR] = before
