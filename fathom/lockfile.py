"""Lock files in a data dir: an fcntl lock, which the system lets go of when its holder exits, even
killed, so a lock is never left stale."""

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO


@contextmanager
def file_locked(path: Path, *, shared: bool = False, wait: bool = True) -> Iterator[TextIO | None]:
    """Hold a lock on `path` (made, with its folder, when missing; what it says is kept), exclusive
    or `shared`. Yields the file, open to read and append, or None when `wait` is False and another
    process holds a lock that conflicts."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield None
            return
        try:
            yield handle
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
