"""Writing a file whole or not at all: a temporary ``.NAME.partial`` beside it, renamed into place.

A temporary file is always made anew (``create_new``): whatever is at its name is unlinked first, and the
new file is created exclusively, without following a symbolic link, so that a symbolic or hard link
left there (by anyone who can write the directory) is never written through: truncating or filling
the file it leads to would destroy what is not ours.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

_IOV_MAX = os.sysconf("SC_IOV_MAX") if "SC_IOV_MAX" in os.sysconf_names else 1024


def partial_path(path: str | os.PathLike) -> Path:
    """Where ``write_atomically`` writes *path* before renaming it."""
    return Path(_partial_name(os.fspath(path)))


def _partial_name(path: str) -> str:
    # Plain strings: a crawl writes a page file for each page.
    head, name = os.path.split(path)
    return os.path.join(head, f".{name}.partial")


def create_new(path: str | os.PathLike) -> int:
    """A descriptor, for writing, of a new empty regular file at *path*: what was at that name (a
    temporary file an interrupted run left, a symbolic or hard link to another file) is unlinked first,
    never written through.  Raises OSError when the name cannot be had (a directory there, say, or a
    link made again in between: the exclusive creation fails rather than follow it)."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)


def open_partial(path: str | os.PathLike, buffering: int = -1) -> BinaryIO:
    """*path*'s temporary file (``partial_path``) made anew (``create_new``), open for writing."""
    return open(create_new(partial_path(path)), "wb", buffering=buffering)


def put_in_place(temporary: str | os.PathLike, path: str | os.PathLike) -> None:
    """*temporary* renamed to *path*; an OSError names *path*, the file that could not be replaced
    (``os.replace`` names the temporary one, which the user never asked for)."""
    try:
        os.replace(temporary, path)
    except OSError as error:
        raise OSError(error.errno, error.strerror, os.fspath(path)) from None


def write_atomically(path: str | os.PathLike, data: bytes | Sequence[bytes], *, fsync: bool = False) -> None:
    """Replace *path* with *data* (or its pieces, one after another); an
    interrupted or failed write leaves *path* as it was."""
    temporary = write_beside(path, data, fsync=fsync)
    try:
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_beside(path: str | os.PathLike, data: bytes | Sequence[bytes], *, fsync: bool = False) -> Path:
    """Write *data* whole to *path*'s temporary file (``partial_path``), not yet in place: the caller
    renames it there (``os.replace``), with other files written before any is renamed.  A failed
    write leaves no temporary file."""
    temporary = _partial_name(os.fspath(path))
    try:
        descriptor = create_new(temporary)
        try:
            _write_all(descriptor, [data] if isinstance(data, bytes | bytearray | memoryview) else data)
            if fsync:
                os.fsync(descriptor)
        finally:
            os.close(descriptor)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise
    return Path(temporary)


def _write_all(descriptor: int, pieces: Sequence[bytes]) -> None:
    """Write every piece, however many calls the kernel takes."""
    views = [memoryview(piece) for piece in pieces if len(piece)]
    first = 0  # the first view not written whole
    while first < len(views):
        # At most IOV_MAX pieces a call: more is EINVAL (a crawl record of thousands of lines).
        written = os.writev(descriptor, views[first : first + _IOV_MAX])
        while first < len(views) and written >= len(views[first]):
            written -= len(views[first])
            first += 1
        if written:
            views[first] = views[first][written:]
