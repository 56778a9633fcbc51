"""Writing where the disk may be full: an operating system's refusal to write becomes a :class:`LogError`.

A folder that cannot grow (a full disk, a file-size limit, a spent quota) refuses a write with ``ENOSPC``,
``EFBIG`` or ``EDQUOT``; any other refusal (no permission, a folder removed) comes as another ``OSError``. Every
write of a log or a run folder goes through :func:`writing`, which raises a :class:`LogError` naming the folder,
what was being written and the cause, with the cause's ``errno``. What was written before stays whole: the
writers replace files in one step and append episodes as checksummed batches (see :mod:`rlwrappers.logs.writer`).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from rlwrappers.error import LogError

__all__ = ["CANNOT_GROW", "cannot_write", "replace_file", "writing"]

#: The errors of a folder that cannot grow: no space left, a file past the size limit, the quota spent.
CANNOT_GROW: Final = frozenset({errno.ENOSPC, errno.EFBIG, errno.EDQUOT})


def cannot_write(folder: Path, what: str, error: OSError, then: str = "") -> LogError:
    """The :class:`LogError` for ``error``, raised while writing ``what`` in ``folder``, with the same ``errno``.

    ``then`` says what follows for the caller (what was kept, how to go on).

    Example:
        >>> import errno
        >>> from pathlib import Path
        >>> error = cannot_write(Path("runs/a"), "episode 3", OSError(errno.ENOSPC, "No space left on device"))
        >>> print(error)
        [Errno 28] No space left on device (ENOSPC): cannot write episode 3 in 'runs/a'
        >>> error.errno == errno.ENOSPC
        True
    """
    message = f"cannot write {what} in {str(folder)!r}" + (f"; {then}" if then else "")
    if error.errno is None:
        return LogError(f"{error}: {message}")
    name = errno.errorcode.get(error.errno, str(error.errno))
    return LogError(error.errno, f"{os.strerror(error.errno)} ({name}): {message}")


def replace_file(path: Path, what: str, write: Callable[[Path], object]) -> None:
    """Replaces the file ``path`` in one step by what ``write`` writes to the temporary path it is given.

    A reader never sees half a file. A write that fails leaves the old file and no part of the new one, and
    raises :func:`cannot_write`'s error (``what`` names the file in it).
    """
    tmp = path.with_name(f"{path.name}.tmp")
    try:
        with writing(path.parent, what):
            write(tmp)
            tmp.replace(path)
    except LogError:
        tmp.unlink(missing_ok=True)  # gives back the space the part written took
        raise


@contextmanager
def writing(folder: Path, what: str, then: str = "") -> Iterator[None]:
    """Raises :func:`cannot_write`'s error for an ``OSError`` raised inside the block (a LogError passes as it is)."""
    try:
        yield
    except LogError:
        raise
    except OSError as error:
        raise cannot_write(folder, what, error, then) from error
