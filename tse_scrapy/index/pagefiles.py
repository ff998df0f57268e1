"""The page files as the indexer reads them, each with its file status, and their fingerprint.

``PageScan`` walks a page directory as ``rules.files.pagedir.read_pages`` does
(pages 1, 2, ... until the first that cannot be opened, gone pages skipped but
not the end) and keeps each file's status: size, modification time and inode,
taken from the open file, so that the status recorded is the one of the bytes
read even while a crawl rewrites pages.  The document store records them, to
tell later which pages changed (``index/update.py``) and whether the store
still matches its pages.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import count

from ..rules.files import pagedir

# What a page file's status must keep to count as unchanged.  The inode is in
# it because a page rewritten atomically (a new file renamed into place) may
# keep its size, and its mtime within the clock's granularity.
FileKey = tuple[int, int, int]  # size, mtime_ns, inode


@dataclass(frozen=True)
class PageFile:
    """One page file: its docID, its status, and its page when it was read (never for a gone page)."""

    doc_id: int
    status: os.stat_result
    page: pagedir.Page | None
    gone: bool = False

    @property
    def key(self) -> FileKey:
        return file_key(self.status)


def file_key(status: os.stat_result) -> FileKey:
    """What tells a file from another written in its place (renamed there: another inode)."""
    return status.st_size, status.st_mtime_ns, status.st_ino


class PageScan:
    """One walk over a page directory; after it, ``last`` and ``fingerprint()`` describe what it saw.

    The walk may cover only docIDs *start* up to *stop* (excluded): a range that
    a worker process indexes; ``ended`` then says whether the directory ended in it.
    """

    def __init__(self, directory: str | os.PathLike, gone: frozenset[int] | None = None):
        self.directory = directory
        # Read once: the walk and the fingerprint agree (a worker is given the parent's).
        self.gone = pagedir.gone_docs(directory) if gone is None else gone
        self.last = 0  # the highest docID with a page file, gone or not
        self.ended = False  # whether a page file could not be opened: the directory's end
        # The fingerprint, hashed as the files are walked: memory does not grow with the directory.
        self._digest = hashlib.blake2b(digest_size=16)

    def files(
        self, wanted: Callable[[PageFile], bool] | None = None, start: int = 1, stop: int | None = None
    ) -> Iterator[PageFile]:
        """Every page file from docID *start* (before *stop*), in docID order; a page not gone is
        read when *wanted* (default: always) says so.

        A page that is not a page file raises ``pagedir.PageFileError``, naming it.
        """
        for doc_id in count(start) if stop is None else range(start, stop):
            path = pagedir.page_path(self.directory, doc_id)
            if doc_id in self.gone:
                try:
                    found = PageFile(doc_id, os.stat(path), None, gone=True)
                except OSError:
                    self.ended = True
                    return
            else:
                try:
                    found = self._read(doc_id, path, wanted)
                except OSError:  # as read_pages: the first page that cannot be read ends the directory
                    self.ended = True
                    return
            self.record(doc_id, found.status.st_size, found.status.st_mtime_ns)
            yield found

    def record(self, doc_id: int, size: int, mtime_ns: int) -> None:
        """Count page file *doc_id*, of this *size* and modification time, as walked (in docID order)."""
        self.last = doc_id
        self._digest.update(_fingerprint_line(doc_id, size, mtime_ns))

    def fingerprint(self) -> str:
        """The fingerprint of the files walked so far (see ``fingerprint``)."""
        return _finish_fingerprint(self._digest.copy(), self.gone)

    @staticmethod
    def _read(doc_id: int, path: os.PathLike, wanted: Callable[[PageFile], bool] | None) -> PageFile:
        # Opened without waiting (a FIFO's open waits for a writer), then read only if a regular file:
        # a FIFO blocked the index for ever, a link to /dev/zero was read until memory ran out.  (A page
        # file too large for the memory is "out of memory", in one line.)
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as file:
            status = os.fstat(file.fileno())
            if stat.S_ISDIR(status.st_mode):
                raise IsADirectoryError(path)
            if not stat.S_ISREG(status.st_mode):
                raise pagedir.PageFileError(f"{path}: not a file (a page file is a regular file)")
            found = PageFile(doc_id, status, None)
            if wanted is not None and not wanted(found):
                return found
            data = file.read()
        try:
            return PageFile(doc_id, status, pagedir.decode_page(data))
        except pagedir.PageFileError as error:
            raise pagedir.PageFileError(f"{path}: {error}") from None


def page_files_past(directory: str | os.PathLike, end: int) -> tuple[bool, int, int] | None:
    """Where a walk of *directory* that ended at docID *end* (a page file it could not open) left
    page files behind: whether file *end* is there (but could not be opened), how many page files
    there are past it and the highest docID of them; None when there is none.  One listing of the
    directory, no file stat'ed."""
    try:
        names = os.listdir(directory)
    except OSError:
        return None
    numbers = {int(name) for name in names if pagedir.is_page_name(name)}  # ("012" is none: is_page_name)
    past = [number for number in numbers if number > end]
    return (end in numbers, len(past), max(past)) if past else None


def fingerprint(statuses: Iterable[tuple[int, os.stat_result]], gone: Iterable[int]) -> str:
    """What page files 1..N are (sizes, modification times) and which are gone.

    Without gone pages it is what stores written before ``.tse-gone`` existed
    recorded, so that those stay valid."""
    digest = hashlib.blake2b(digest_size=16)
    for doc_id, status in statuses:
        digest.update(_fingerprint_line(doc_id, status.st_size, status.st_mtime_ns))
    return _finish_fingerprint(digest, gone)


def _fingerprint_line(doc_id: int, size: int, mtime_ns: int) -> bytes:
    return b"%d %d %d\n" % (doc_id, size, mtime_ns)


def _finish_fingerprint(digest: hashlib._Hash, gone: Iterable[int]) -> str:
    listed = pagedir.format_gone(gone)
    if listed:
        digest.update(b"gone\n" + listed)
    return digest.hexdigest()


def live_fingerprint(directory: str | os.PathLike, last: int) -> str:
    """The fingerprint of page files 1..*last* as they are now ("changed" when one is missing or *last*+1 exists)."""
    # Checked at every querier's start: a 20,000-page directory's files stat'ed by name in the open
    # directory (no path to resolve), their lines hashed at once (75 -> 50 ms).
    prefix, descriptor = os.path.join(os.fspath(directory), ""), None
    if os.stat in os.supports_dir_fd:
        try:
            # O_PATH: a directory the user may search but not list is opened too (stat needs no more).
            flags = getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0)
            prefix, descriptor = "", os.open(directory, flags)
        except OSError:
            pass  # stat'ed by path, as before
    try:
        lines = []
        for doc_id in range(1, last + 1):
            status = _status(f"{prefix}{doc_id}", descriptor)
            if status is None:
                return "changed"
            lines.append(_fingerprint_line(doc_id, status.st_size, status.st_mtime_ns))
        if _status(f"{prefix}{last + 1}", descriptor) is not None:
            return "changed"
    finally:
        if descriptor is not None:
            os.close(descriptor)
    return _finish_fingerprint(hashlib.blake2b(b"".join(lines), digest_size=16), pagedir.gone_docs(directory))


def _status(path: str, directory: int | None) -> os.stat_result | None:
    """``os.stat`` of *path* (in the open *directory*, when given), None when there is none."""
    try:
        return os.stat(path, dir_fd=directory)
    except OSError:
        return None
