"""The page directory (SPEC 2.2.7, 3), shared by the crawler, the indexer and the querier.

A page directory holds an empty ``.crawler`` marker and page files named
``1, 2, 3 ...`` with no gaps.  A page file is ``URL\\nDEPTH\\n`` + the body
bytes unchanged + ``\\n`` (the reference appended it).

A directory kept fresh by ``tse crawl --update`` may also hold ``.tse-gone``:
the docIDs of pages that are gone from the site, one a line, ascending.
Their files stay (docIDs are never reused or renumbered, and the files keep
the last copy seen); every reader here skips them.  A directory never
updated has no ``.tse-gone`` and is exactly SPEC 2.

Every reader parses a page file with ``decode_page``, whose one tolerance is
the final newline: it is removed when present, and a file without one (made
by hand, or by another tool) is read as it is.  Anything else that is not a
URL line, a line of decimal digits and a body is not a page file.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from ...atomicfile import partial_path, write_atomically

MARKER = ".crawler"
# Why a file a crawl writes in a page directory is not written (``open_own_file``): what it names stays.
SYMBOLIC_LINK_REFUSED = "it is a symbolic link (the file it names is left as it is)"
GONE_NAME = ".tse-gone"
# The most digits a docID is written with (a page directory of a billion billion pages), and a depth.
DOCID_DIGITS = 18
DEPTH_DIGITS = 18
PathLike = str | os.PathLike


class PageFileError(ValueError):
    """A file that is not a page file; the message names it."""


@dataclass(frozen=True)
class Page:
    """One saved page: its final URL, its depth and the body bytes as fetched."""

    url: str
    depth: int
    body: bytes


def page_path(pagedir: PathLike, doc_id: int | str) -> Path:
    return Path(pagedir) / str(doc_id)


def mark(pagedir: PathLike) -> None:
    """Create the empty ``.crawler`` marker, or empty it; one that is there and empty is left
    untouched, its time included (raises OSError on failure).

    Never through a symbolic link, nor on what is no regular file: a ``.crawler`` linked to a file elsewhere
    (a directory others may write to, an archive unpacked) emptied that file, a user's own."""
    descriptor = open_own_file(Path(pagedir) / MARKER, os.O_WRONLY | os.O_CREAT)
    try:
        if os.fstat(descriptor).st_size:
            os.ftruncate(descriptor, 0)
    finally:
        os.close(descriptor)


def open_own_file(path: PathLike, flags: int, *, dir_fd: int | None = None) -> int:
    """A descriptor of *path* opened with *flags* (``os.O_WRONLY | os.O_CREAT`` ...; relative to the
    directory *dir_fd* if given), never through a symbolic link nor on what is no regular file: for a
    file a crawl writes in a page directory, whose link to a file elsewhere (a directory others may write
    to, an archive unpacked) had that file written.  OSError, one line: ELOOP for a link
    (SYMBOLIC_LINK_REFUSED), EINVAL for a directory, a FIFO (not waited on) or a device."""
    flags |= os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK  # (O_NONBLOCK: a FIFO's opening is not waited on)
    try:
        descriptor = os.open(path, flags, 0o666, dir_fd=dir_fd)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise OSError(errno.ELOOP, SYMBOLIC_LINK_REFUSED, str(path)) from None
        raise
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        os.close(descriptor)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return descriptor


def holds_pages(pagedir: PathLike) -> bool:
    """Whether *pagedir* holds any page file (``is_page_name``)."""
    return any(is_page_name(name) for name in os.listdir(pagedir))


def is_page_name(name: str) -> bool:
    """A page file's name: a docID, ``1, 2, 3 ...`` (SPEC) in ASCII digits (``str.isdigit`` takes "²"
    too) without a leading zero: no crawl writes "0" or "012" and no reader opens them ("12" is docID
    12's file), so they are not pages."""
    return name.isascii() and name.isdigit() and name[0] != "0"


def is_page_directory_file(name: str) -> bool:
    """A file a crawl or an import keeps in a page directory: a page file, the marker, or one of its own
    (``.tse-gone``, ``.tse-robots/`` and the other notes, ``.tse-state.sqlite``, ``.tse-pages.sqlite``
    ...: they all begin ``.tse-``)."""
    return is_page_name(name) or name == MARKER or name.startswith(".tse-")


def encode_page(page: Page) -> bytes:
    return b"".join(_page_pieces(page))


def _page_pieces(page: Page) -> tuple[bytes, bytes, bytes]:
    """A page file's bytes in three pieces: the body is not copied."""
    return b"%s\n%d\n" % (page.url.encode("utf-8", "surrogateescape"), page.depth), page.body, b"\n"


def decode_page(data: bytes) -> Page:
    """Inverse of ``encode_page``; raises PageFileError on a file that is not a page file, saying
    what is wrong."""
    url, newline, rest = data.partition(b"\n")
    depth, newline2, body = rest.partition(b"\n")
    if not (newline and newline2 and depth.isdigit() and len(depth) <= DEPTH_DIGITS):
        raise PageFileError(lines_problem(url + newline + depth + newline2))
    if body.endswith(b"\n"):
        body = body[:-1]
    return Page(url.decode("utf-8", "surrogateescape"), int(depth), body)


def lines_problem(head: bytes) -> str:
    """What makes a file beginning with *head* (its first two lines, or all of it when shorter) no
    page file, in words; "" for a page file's first lines.  Said by line, never quoting it (a file
    made by hand may hold anything there)."""
    _, newline, rest = head.partition(b"\n")
    depth, newline2, _ = rest.partition(b"\n")
    if not head:
        reason = "it is empty"
    elif not newline:
        reason = "it is one line, without a line break (a page file's URL, then its depth)"
    elif not rest:
        reason = "it ends after line 1 (a page file's depth is its second line)"
    elif not depth:
        reason = "line 2 is empty (a page file's depth is its second line)"
    elif not depth.isdigit():  # (bytes: ASCII digits only)
        reason = "line 2 is not a depth (a number, digits 0-9 only)"
    elif len(depth) > DEPTH_DIGITS:  # (int() refuses past 4,300 digits: a traceback)
        reason = f"line 2 is not a depth (a number of at most {DEPTH_DIGITS} digits)"
    elif not newline2:
        reason = "line 2, the depth, has no line break after it"
    else:
        return ""
    return f"not a page file (URL, depth, page): {reason}"


def read_page(pagedir: PathLike, doc_id: int) -> Page:
    """Page *doc_id* (OSError when it cannot be read or is no regular file, PageFileError naming it
    when malformed)."""
    path = page_path(pagedir, doc_id)
    try:
        return decode_page(read_regular_file(path))
    except PageFileError as error:
        raise PageFileError(f"{path}: {error}") from None


def read_pages(pagedir: PathLike) -> Iterator[tuple[int, Page]]:
    """Pages 1, 2, ... until the first one that cannot be opened (SPEC 3), without the gone ones."""
    gone = gone_docs(pagedir)
    doc_id = 1
    while True:
        if doc_id not in gone:
            try:
                page = read_page(pagedir, doc_id)
            except OSError:
                return
            yield doc_id, page
        elif not page_path(pagedir, doc_id).exists():
            return
        doc_id += 1


def gone_docs(pagedir: PathLike) -> frozenset[int]:
    """The docIDs listed in ``PAGEDIR/.tse-gone`` (none when there is no such file).

    Raises PageFileError when the file is not a list of docIDs."""
    try:
        data = read_regular_file(Path(pagedir) / GONE_NAME)
    except FileNotFoundError:
        return frozenset()
    return parse_gone(data, str(Path(pagedir) / GONE_NAME))


def parse_gone(data: bytes, name: str = GONE_NAME) -> frozenset[int]:
    """The docIDs of a ``.tse-gone`` file's text."""
    lines = data.split()
    # (At most DOCID_DIGITS digits: int() refuses past 4,300, and no docID is that long.)
    if not all(line.isdigit() and line.isascii() and len(line) <= DOCID_DIGITS and int(line) > 0 for line in lines):
        raise PageFileError(f"{name}: not a list of docIDs, one a line")
    return frozenset(int(line) for line in lines)


def format_gone(doc_ids: Iterable[int]) -> bytes:
    """The text of a ``.tse-gone`` file: one docID a line, ascending."""
    return b"".join(b"%d\n" % doc_id for doc_id in sorted(set(doc_ids)))


def write_gone(pagedir: PathLike, doc_ids: Iterable[int], *, fsync: bool = False) -> None:
    """Write ``.tse-gone`` whole or not at all; with no docIDs, remove it."""
    path = Path(pagedir) / GONE_NAME
    text = format_gone(doc_ids)
    if text:
        write_atomically(path, text, fsync=fsync)
    else:
        path.unlink(missing_ok=True)


# The longest URL a page may have, in characters: a crawl follows no link to a longer one, nor a redirect
# (settings.py: TSE_MAX_URL_LENGTH, which may lower it only), and ``tse import`` skips a record at a longer
# one.  Scrapy's URLLENGTH_LIMIT, and the longest URL old browsers took; a page file's URL line is read to
# URL_LINE_BYTES, the frontier's entries keep URLs to 8,192 characters: both hold it.
MAX_URL_CHARACTERS = 2083
# The most of a page file's URL line read_page_url reads: a page 1 without a newline (or /dev/zero)
# was read whole; the crawl keeps URLs to 2,083 characters, a hand-made page may hold a longer one.
URL_LINE_BYTES = 64 * 1024


def read_page_url(pagedir: PathLike, doc_id: int) -> str:
    """Line 1 of page *doc_id* (to URL_LINE_BYTES), without reading the rest; raises OSError, also
    for a page that is not a regular file (a FIFO would wait for a writer for ever)."""
    with open_regular_file(page_path(pagedir, doc_id)) as page:
        return page.readline(URL_LINE_BYTES).rstrip(b"\n").decode("utf-8", "replace")


def read_regular_file(path: PathLike) -> bytes:
    """The bytes of *path*; OSError also when it is no regular file: a FIFO waits for a writer for
    ever (the process that reads it with it), a device such as /dev/zero never ends."""
    with open_regular_file(path) as file:
        return file.read()


def is_readable_file(path: PathLike) -> bool:
    """Whether *path* is a regular file this process may read (opened, not read: a plain open of a
    FIFO waits for a writer for ever)."""
    try:
        with open_regular_file(path):
            return True
    except OSError:
        return False


def open_regular_file(path: PathLike) -> BinaryIO:
    """*path* open for reading, a regular file (else OSError)."""
    # Opened without blocking: opening a FIFO for reading waits for a writer.
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    file = open(descriptor, "rb")  # noqa: SIM115 (returned open)
    if not stat.S_ISREG(os.fstat(descriptor).st_mode):
        file.close()
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return file


def check_page_files(pagedir: PathLike) -> int:
    """Check that the page files 1, 2, ... begin as page files (URL line, depth line),
    reading only those lines; return how many there are.  Raises OSError, or
    PageFileError naming the first bad file."""
    doc_id = 0
    while True:
        path = page_path(pagedir, doc_id + 1)
        try:
            page = open_regular_file(path)  # (a FIFO's open waited for a writer for ever; closed below)
        except FileNotFoundError:
            return doc_id
        with page:
            url, depth = page.readline(), page.readline()
        problem = lines_problem(url + depth)
        if problem:
            raise PageFileError(f"{path}: {problem}")
        doc_id += 1


def write_page(pagedir: PathLike, doc_id: int, page: Page, *, fsync: bool = False) -> None:
    """Write page file *doc_id* whole or not at all."""
    write_atomically(os.path.join(pagedir, str(doc_id)), _page_pieces(page), fsync=fsync)


def remove_partial_files(pagedir: PathLike) -> None:
    """Remove what an interrupted ``write_page`` left behind."""
    for path in Path(pagedir).glob(".*.partial"):
        path.unlink(missing_ok=True)


def move_page(pagedir: PathLike, old: int, new: int) -> None:
    """Give page *old* the docID *new* (the file holds no docID, only its name)."""
    os.replace(page_path(pagedir, old), page_path(pagedir, new))


def remove_page(pagedir: PathLike, doc_id: int) -> None:
    page_path(pagedir, doc_id).unlink(missing_ok=True)
    partial_path(page_path(pagedir, doc_id)).unlink(missing_ok=True)


def remove_pages_above(pagedir: PathLike, last: int) -> list[int]:
    """Remove the page files numbered past *last*; return their docIDs, in order."""
    above = sorted(
        int(entry.name) for entry in os.scandir(pagedir) if is_page_name(entry.name) and int(entry.name) > last
    )
    for doc_id in above:
        remove_page(pagedir, doc_id)
    return above
