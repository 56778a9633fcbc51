"""Stopping a study cleanly: SIGINT and SIGTERM end every run in progress with its log closed, nothing more.

The main process turns the first SIGINT or SIGTERM into :class:`Interrupted` (:func:`signals_as_interrupts`),
tells its workers to stop (:func:`stop_workers`) and waits for them. A worker (:func:`stop_on_signals`) ends the
run in progress with a ``KeyboardInterrupt``, so the run's recorder closes its log as after any exception: every
finished episode is kept and the episode cut short is marked incomplete. It starts no run after that. A worker
whose parent dies without stopping it (``kill -9``) stops itself the same way within a second.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from multiprocessing.process import BaseProcess
from types import FrameType
from typing import Final

__all__ = ["Interrupted", "signals_as_interrupts", "stop_on_signals", "stop_workers", "stopping"]

#: Seconds a worker gets to close its log after it was told to stop, before it is killed.
GRACE: Final = 10.0

#: How often a worker checks that its parent is alive, in seconds.
_PARENT_CHECK: Final = 1.0


class Interrupted(KeyboardInterrupt):
    """A study stopped by a signal; ``signum`` is the signal's number."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def signals_as_interrupts() -> Iterator[None]:
    """Within the block, the first SIGINT or SIGTERM raises :class:`Interrupted`; later ones are ignored.

    Later signals would interrupt the cleanup that the first one started. Outside the main thread, where
    Python cannot handle signals, and for signals whose handler the program set itself (or ignores), the
    block changes nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised = False

    def interrupt(signum: int, frame: FrameType | None) -> None:
        nonlocal raised
        if not raised:
            raised = True
            raise Interrupted(signum)

    defaults = {signal.SIGINT: signal.default_int_handler, signal.SIGTERM: signal.SIG_DFL}
    previous = {s: signal.signal(s, interrupt) for s, default in defaults.items() if signal.getsignal(s) is default}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


_STOP = threading.Event()


def stopping() -> bool:
    """Whether this worker was told to stop: it then starts no run."""
    return _STOP.is_set()


def stop_on_signals() -> None:
    """Makes this worker process stop on SIGINT or SIGTERM, and when its parent dies.

    The first signal raises ``KeyboardInterrupt`` in the run in progress; later ones are ignored, so that
    they do not interrupt the log's closing.
    """
    _STOP.clear()

    def stop(signum: int, frame: FrameType | None) -> None:
        if not _STOP.is_set():
            _STOP.set()
            raise KeyboardInterrupt(signal.Signals(signum).name)

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_PARENT_CHECK)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="rlwrappers-parent-watch", daemon=True).start()


def stop_workers(workers: Sequence[BaseProcess], grace: float = GRACE) -> None:
    """Tells each worker to stop, waits up to ``grace`` seconds for all to exit, then kills the rest."""
    for worker in workers:
        if worker.is_alive() and worker.pid is not None:
            os.kill(worker.pid, signal.SIGINT)
    deadline = time.monotonic() + grace
    for worker in workers:
        worker.join(max(0.0, deadline - time.monotonic()))
    for worker in workers:
        if worker.is_alive():
            worker.kill()
            worker.join()
