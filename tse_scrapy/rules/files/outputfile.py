"""What an output file may replace: ``tse report --out``, ``tse crawl --update --changes``, ``tse index``'s
INDEXFILE, ``tse indextest``'s NEWINDEX.

Each is written whole and renamed into place (``atomicfile``), so whatever was at its path is gone, whatever
it was: as root, ``--out /dev/null`` left a regular file where the device was; ``--out a/5`` put a report
where page 5 of the crawl ``a`` was.  An output file may be written only where there is

- nothing, an empty regular file, or a file of its own kind (last night's changes, the report written
  before: what the command is run again to replace), told by its first bytes;

and never

- over what is no regular file: a device, a FIFO, a socket, a directory;
- as a page directory's own file (a page file ``1, 2 ...``, the ``.crawler`` marker, a ``.tse-*`` file:
  ``pagedir.is_page_directory_file``) in any page directory (a directory holding ``.crawler``), not only
  in the one a command works on: another crawl's directory is as much a crawl.

``replacement_problem`` decides from what was found at the path (``Found``), ``look`` finds it, and
``check_output_file`` does both.  Each kind of file says how it is told (``OutputKind``), beside its
format: a changes file in ``rules/crawling/changes.py``, a report in ``report/page.py``, an index in
``indexfile.py``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass

from . import pagedir

# How much of an existing file is read to tell its kind (an index's first line may be longer: its start
# tells; a report's head is in its first kilobyte).
START_BYTES = 64 * 1024

# What is at a path, as ``replacement_problem`` names it.
NOTHING, REGULAR, DIRECTORY = "nothing", "a regular file", "a directory"
CHARACTER_DEVICE, BLOCK_DEVICE = "a character device", "a block device"
FIFO, SOCKET, SYMLINK, OTHER = "a FIFO", "a socket", "a symbolic link", "not a regular file"


class OutputFileRefused(ValueError):
    """An output file that must not be written there; the message (for the user) names it and says why."""


@dataclass(frozen=True)
class OutputKind:
    """A kind of output file: what it is called and how an existing one is told."""

    noun: str  # "a report"
    what: str  # "the report": "write the report elsewhere"
    not_it: str  # how a file is seen to be none: "its head does not name tse report"
    recognises: Callable[[bytes, bool], bool]  # (the file's first bytes, whether that is all of it)
    # The suffixes of the files written beside it under its name (an index's sidecar, ...): none may be a
    # directory, which the renaming into place at the end could not replace, once others were replaced.
    beside: tuple[str, ...] = ()


@dataclass(frozen=True)
class Found:
    """What is at an output file's path: its type (NOTHING, REGULAR, DIRECTORY ...), whether the directory
    it is in holds ``.crawler``, and, for a regular file, its first bytes and whether they are all of it."""

    type: str
    in_page_directory: bool = False
    start: bytes = b""
    whole: bool = True


def replacement_problem(path: str, found: Found, kind: OutputKind) -> str | None:
    """Why an output file of *kind* must not be written at *path* where *found* is (a message naming
    *path*), or None when it may."""
    name = os.path.basename(os.path.normpath(path))
    if found.in_page_directory and pagedir.is_page_directory_file(name):
        directory = os.path.dirname(os.path.normpath(path)) or "."
        if pagedir.is_page_name(name):
            what = f"a page file of the page directory {directory}"
        elif name == pagedir.MARKER:
            what = f"the marker of the page directory {directory}"
        else:
            what = f"one of the page directory {directory}'s own files"
        return f"{path} is {what}: write {kind.what} elsewhere"
    if found.type == NOTHING:
        return None
    if found.type == DIRECTORY:
        return f"{path} is a directory"
    if found.type != REGULAR:
        return f"{path} is {found.type}, not a regular file: write {kind.what} elsewhere"
    if (found.whole and not found.start) or kind.recognises(found.start, found.whole):
        return None
    return (
        f"{path} exists and is not {kind.noun} ({kind.not_it}): it is left as it is; write {kind.what} "
        "elsewhere, or remove it first"
    )


def look(path: str | os.PathLike) -> Found:
    """What is at *path* (a symbolic link followed: what it names is what the user sees there).  A path
    that cannot be looked at (a directory on the way missing or forbidden) is taken as NOTHING: writing
    there fails, and the writer says why.  Raises OutputFileRefused for a regular file it cannot read."""
    path = os.fspath(path)
    parent = os.path.dirname(os.path.abspath(path))
    in_page_directory = os.path.lexists(os.path.join(parent, pagedir.MARKER))
    try:
        status = os.stat(path)
    except OSError:
        return Found(NOTHING, in_page_directory)
    found = Found(file_type(status.st_mode), in_page_directory)
    if found.type != REGULAR or status.st_size == 0:
        return found
    try:
        with open(path, "rb") as file:
            start = file.read(START_BYTES)
    except OSError as error:
        raise OutputFileRefused(f"{path} cannot be read to check what it is: {error.strerror}") from None
    return Found(REGULAR, in_page_directory, start, whole=len(start) < START_BYTES)


def check_output_file(path: str | os.PathLike, kind: OutputKind) -> None:
    """Raise OutputFileRefused when an output file of *kind* must not be written at *path*."""
    problem = replacement_problem(os.fspath(path), look(path), kind)
    if problem is not None:
        raise OutputFileRefused(problem)
    for suffix in kind.beside:
        other = os.fspath(path) + suffix
        try:
            is_directory = stat.S_ISDIR(os.lstat(other).st_mode)
        except OSError:  # (nothing there, or it cannot be looked at: writing it says why)
            continue
        if is_directory:
            raise OutputFileRefused(f"{other} is a directory, where a file of {kind.what} goes: remove it first")


def file_type(mode: int) -> str:
    """What a file of *mode* is: REGULAR, DIRECTORY, CHARACTER_DEVICE, FIFO ..."""
    for test, name in (
        (stat.S_ISREG, REGULAR),
        (stat.S_ISDIR, DIRECTORY),
        (stat.S_ISCHR, CHARACTER_DEVICE),
        (stat.S_ISBLK, BLOCK_DEVICE),
        (stat.S_ISFIFO, FIFO),
        (stat.S_ISSOCK, SOCKET),
        (stat.S_ISLNK, SYMLINK),
    ):
        if test(mode):
            return name
    return OTHER
