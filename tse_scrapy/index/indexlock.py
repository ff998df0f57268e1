"""One writer of an index at a time: an exclusive ``flock`` on ``INDEXFILE.lock`` while it is written.

``tse index`` (a full build or ``--update``) and ``tse indextest`` hold it
from before they write anything until their last file is in place; a second
writer of the same INDEXFILE is refused at once, in one line, before it
writes anything (two writers would share the temporary files beside the
index and fail each other with errors that look like damage).  The lock is
the kernel's: it goes with the process that holds it, however that ends
(exit, SIGKILL, a crash), so a lock left behind never blocks the next run.
The lock file is created once and never removed (removing it would let two
processes lock two different files of that name); it holds the holder's
process ID and command while it is held, for the message, and is emptied on
release.  Where it cannot be opened or locked (some NFS set-ups answer
ENOLCK), the index is written without it.  Readers (``tse query``,
``tse serve``) never take it.

The lock file is written (its holder's line, then emptied), so it must be the
index's own: a symbolic link at its name is not followed, and a file that is
not a regular one with a single link (a hard link to another file, a FIFO, a
directory) is refused in one line (``LockFileRefused``), before anything is
written: writing it would change another file.
"""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..rules.files.outputfile import file_type

LOCK_SUFFIX = ".lock"
_HOLDER_BYTES = 200  # more than "PID COMMAND\n" ever takes

# The descriptors this process holds an index lock with.  A forked child (an indexer's worker) closes
# its copies: a flock belongs to the open file, so a child's copy would keep the lock after a SIGKILL of
# the holder, until the last worker noticed and exited.
_held: set[int] = set()


class IndexLocked(Exception):
    """Another process is writing the index; the message (one line) is for the user."""


class LockFileRefused(IndexLocked):
    """The index's lock file is not a file of its own (a link to another file, ...): the index is not
    written; the message (one line) says what it is."""


def lock_path(indexfile: str | os.PathLike) -> Path:
    """The lock file of *indexfile*: ``INDEXFILE.lock``, beside it."""
    return Path(str(indexfile) + LOCK_SUFFIX)


@contextmanager
def index_lock(indexfile: str | os.PathLike, holder: str = "tse index") -> Iterator[bool]:
    """Hold *indexfile*'s lock within; IndexLocked at once when another holds it (another process, or
    another lock in this one).  *holder*: what writes the index, named to whoever is refused.  Gives
    whether the lock is held (False: the file system cannot lock, and the index is written without it)."""
    descriptor = _open(lock_path(indexfile))
    if descriptor is not None:
        problem = _not_its_own(lock_path(indexfile), os.fstat(descriptor))
        if problem is not None:
            os.close(descriptor)
            raise LockFileRefused(problem)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            refusal = _refusal(indexfile, descriptor)
            os.close(descriptor)
            raise IndexLocked(refusal) from None
        except OSError:  # this file system cannot lock: one writer at a time is up to the user
            os.close(descriptor)
            descriptor = None
    if descriptor is None:
        yield False
        return
    owner = os.getpid()
    _held.add(descriptor)
    try:
        _rewrite(descriptor, f"{owner} {holder}\n".encode())
        yield True
    finally:
        if os.getpid() == owner:  # (a forked child leaving this block has closed its copy already)
            _held.discard(descriptor)
            _rewrite(descriptor, b"")  # no process ID left behind for a later refusal to name
            os.close(descriptor)  # the lock goes with it


def _open(path: Path) -> int | None:
    """A descriptor of the lock file (created if need be), read-only when it cannot be written; None
    when it cannot be opened at all.  A symbolic link there is not followed (LockFileRefused); nor is a
    FIFO's opening waited on."""
    for flags in (os.O_RDWR | os.O_CREAT, os.O_RDONLY):
        try:
            return os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o666)
        except OSError:
            try:
                found = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISLNK(found.st_mode) or stat.S_ISDIR(found.st_mode):
                raise LockFileRefused(_not_its_own(path, found) or f"{path} cannot be opened") from None
    return None


def _not_its_own(path: Path, status: os.stat_result) -> str | None:
    """Why the lock file *path*, of *status*, must not be written (a file not the index's own), or None."""
    if stat.S_ISREG(status.st_mode):
        if status.st_nlink == 1:
            return None
        what = f"a regular file with {status.st_nlink} links (a hard link: another name of a file)"
    else:
        what = file_type(status.st_mode)  # (a symbolic link, a directory, a FIFO, a character device ...)
    return f"the index's lock file {path} is {what}, not written through: remove it, then run again"


def _rewrite(descriptor: int, data: bytes) -> None:
    """The lock file's content made *data*, best effort: the lock works without it."""
    try:
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, data, 0)
    except OSError:
        pass


def _refusal(indexfile: str | os.PathLike, descriptor: int) -> str:
    """Why the lock is refused, naming the holder when its lock file says who (it may not have yet)."""
    try:
        pid, _, holder = os.pread(descriptor, _HOLDER_BYTES, 0).decode("ascii").rstrip("\n").partition(" ")
    except (OSError, UnicodeDecodeError):
        pid, holder = "", ""
    if not (pid.isdigit() and holder.isprintable() and holder.startswith("tse ")):
        return f"another process is writing {indexfile}; try again once it is done"
    return f"another {holder} is writing {indexfile} (process {pid}); try again once it is done"


def _close_inherited() -> None:
    for descriptor in _held:
        os.close(descriptor)
    _held.clear()


os.register_at_fork(after_in_child=_close_inherited)
