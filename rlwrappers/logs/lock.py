"""One writer per log folder: an exclusive lock that the operating system holds for the writing process.

A writer takes the folder's lock before it touches any file there and releases it after compacting the log. A
second writer (another process, or another recorder in the same one) is refused with a
:class:`~rlwrappers.error.LogError` naming the holder. The lock is the operating system's (``flock`` on POSIX,
``msvcrt.locking`` on Windows), so it ends with the process however the process ends: a killed writer never
leaves a folder locked. A child forked from the writer does not share its locks: they end with the writer
even while the child lives on. The lock file (:data:`LOCK_FILE`) holds the holder's pid and host, and is
removed on release.
"""

from __future__ import annotations

import os
import socket
import weakref
from pathlib import Path
from typing import Final

from rlwrappers.error import LogError
from rlwrappers.logs.space import writing

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]
    import msvcrt

__all__ = ["LOCK_FILE", "FolderLock"]

#: The lock file in a folder being written.
LOCK_FILE: Final = "writer.lock"


def _try_lock(fd: int) -> bool:
    """Takes the lock on the open file ``fd`` without waiting; False when another holder has it."""
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        else:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
    except OSError:
        return False
    return True


def _still_named(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file open as ``fd`` (a releasing holder removes it)."""
    try:
        named = path.stat()
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


#: The locks this process holds, which a forked child closes (its copies would keep them held).
_HELD: weakref.WeakSet[FolderLock] = weakref.WeakSet()


def _forget_in_child() -> None:
    for lock in list(_HELD):
        lock._forget()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


class FolderLock:
    """The exclusive right to write the folder ``folder``, from construction to :meth:`release`.

    Raises:
        LogError: another writer holds the folder (the message names its pid and host).
    """

    def __init__(self, folder: Path):
        self.path = folder / LOCK_FILE
        with writing(folder, "its lock file"):
            fd = self._take(folder)
            try:
                os.ftruncate(fd, 0)
                os.write(fd, f"pid {os.getpid()} on {socket.gethostname()}".encode())
            except OSError:  # a full disk: give the folder up as release() does
                self.path.unlink(missing_ok=True)
                os.close(fd)
                raise
        self._fd: int | None = fd
        _HELD.add(self)

    def _take(self, folder: Path) -> int:
        """Opens the lock file and takes its lock; returns its descriptor."""
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            if not _try_lock(fd):
                holder = os.read(fd, 200).decode(errors="replace").strip() or "a writer that is starting"
                os.close(fd)
                raise LogError(
                    f"{str(folder)!r} is being written by another writer ({holder}); wait for it to close, or"
                    " write the log elsewhere"
                )
            if _still_named(fd, self.path):
                return fd
            os.close(fd)  # the lock of a file its holder removed on release: take the folder's new one

    @property
    def held(self) -> bool:
        """Whether this lock still holds the folder."""
        return self._fd is not None

    def release(self) -> None:
        """Removes the lock file and gives the folder up; releasing twice does nothing."""
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        if fcntl is None:  # Windows removes no open file: close first
            os.close(fd)
            self.path.unlink(missing_ok=True)
            return
        self.path.unlink(missing_ok=True)
        os.close(fd)  # closing the file releases the operating system's lock

    def _forget(self) -> None:
        """In a forked child: closes the child's copy of the lock file, leaving the lock to its holder."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)
