"""Setup shared by every test module."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from rlwrappers.ladders.provisional import CACHE_VARIABLE
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


@pytest.fixture(autouse=True, scope="session")
def _sb3_logs_stay_in_the_tests_temporary_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """SB3's ``learn`` without a logger makes a folder ``SB3-<time>`` in the system's temporary folder each time."""
    before = os.environ.get("SB3_LOGDIR")
    os.environ["SB3_LOGDIR"] = str(tmp_path_factory.mktemp("sb3-logs"))
    yield
    if before is None:
        os.environ.pop("SB3_LOGDIR", None)
    else:
        os.environ["SB3_LOGDIR"] = before


@pytest.fixture(autouse=True, scope="session")
def _provisional_ladders_stay_in_the_tests_temporary_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Provisional ladders are cached in the user's cache folder: the tests keep theirs apart."""
    before = os.environ.get(CACHE_VARIABLE)
    os.environ[CACHE_VARIABLE] = str(tmp_path_factory.mktemp("cache"))
    yield
    if before is None:
        os.environ.pop(CACHE_VARIABLE, None)
    else:
        os.environ[CACHE_VARIABLE] = before
