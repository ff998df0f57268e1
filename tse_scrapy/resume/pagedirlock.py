"""One crawl at a time in a page directory: an exclusive ``flock`` on the directory itself.

A crawl takes it before it decides how it starts (new, resumed, an update) and holds it until it
has closed, or until its process ends.  The kernel drops a flock with the last descriptor of its
owner (an exit, SIGKILL, a crash, a power cut), so a lock left by a process that no longer runs
never blocks a resume, and no process ID is involved that another process could reuse.  No file
is added to the page directory (a finished one is exactly SPEC 2's).  A second crawl of the same
directory is refused whichever process it runs in, this one included.

Workers of a distributed crawl share one page directory and take no lock.  Where the directory
cannot be locked (some NFS set-ups answer ENOLCK or EBADF; a directory that cannot be opened for
reading), the crawl goes on without the lock.  No Scrapy import.
"""

from __future__ import annotations

import fcntl
import os

from ..rules.crawling.crawlargs import ArgumentError


class PageDirectoryLock:
    """The lock of one page directory, held until ``release`` (or the end of the process)."""

    def __init__(self, descriptor: int | None):
        self._descriptor = descriptor  # None: the directory could not be locked

    def release(self) -> None:
        """Let other crawls use the directory (this one has been refused, has nothing to do, or has closed)."""
        descriptor, self._descriptor = self._descriptor, None
        if descriptor is not None:
            os.close(descriptor)  # the flock goes with it


def lock_page_directory(pagedir: str | os.PathLike) -> PageDirectoryLock:
    """Take *pagedir*'s lock; ArgumentError (one line) when another crawl holds it."""
    try:
        descriptor = os.open(pagedir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return PageDirectoryLock(None)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        raise ArgumentError(
            f"{pagedir} is in use by another crawl, still running: let it end (or stop it) first"
        ) from None
    except OSError:  # this file system cannot lock a directory: one crawl at a time is up to the user
        os.close(descriptor)
        return PageDirectoryLock(None)
    return PageDirectoryLock(descriptor)
