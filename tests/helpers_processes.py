"""Where the fault tests start the processes they interrupt."""

from __future__ import annotations

import multiprocessing
from typing import Any


def children() -> Any:
    """A context whose processes fork from a fresh single-threaded server with the library loaded.

    A fork of the test process itself would copy its threads' locks mid-use (pytest-xdist runs I/O threads)
    and its signal dispositions.
    """
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["rlwrappers", "rlwrappers.studies.run", "rlwrappers.zoo", "torch"])
    return context
