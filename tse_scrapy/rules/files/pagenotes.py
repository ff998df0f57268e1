"""What a crawl notes of its pages beside the page files, which keep no header (SPEC 2).

A crawl in ``--links html`` mode notes, when a page is saved:

- ``PAGEDIR/.tse-charsets/``: the charset its HTTP ``Content-Type`` declared,
  which a browser reads the page in before any it declares itself
  (``encodings``);
- ``PAGEDIR/.tse-robots/``: ``noindex`` when its ``X-Robots-Tag`` header or
  ``<meta name="robots">`` says so (``robotsmeta``): the page is saved, but
  the indexer leaves it out;
- ``PAGEDIR/.tse-follow/``: ``nofollow`` when its ``X-Robots-Tag`` header or
  ``<meta name="robots">`` says so (``robotsmeta``), for an HTML page: its
  links are not followed, and a later reading of the page from its file (a
  304 of an update, a copy kept after a failure, a page read back on resume),
  which has no header, does not follow them either (``page_nofollow``).  A
  page not noted so (a page directory made before these notes were kept) is
  followed;
- ``PAGEDIR/.tse-types/``: ``pdf`` for a PDF document (``--pdf``): the
  indexer reads its text, not its bytes as HTML;
- ``PAGEDIR/.tse-canonical/``: the canonical URL its ``Link:`` header names
  (``duplicates``), when not its own; a ``<link rel="canonical">`` is read
  from the page file by the indexer.

An update notes every page it writes as it is now, where it was noted
otherwise before: its type (``html``), ``index`` when it is not noindex,
``follow`` when it is not nofollow, its canonical URL and its charset (``-``
for none); the last note of a URL wins.  A page whose notes would change
while its bytes do not (a server that now sends ``X-Robots-Tag: noindex``) is
written again with them (``differing_notes``): the indexer reads it anew.  A 304
speaks only to the notes whose headers it carries (``notes_said``; nginx's
``add_header`` adds them to a 304 as to a 200), and to what its body, the saved
one, says for certain (a robots ``<meta>`` noindex or nofollow, a PDF's bytes); a
copy kept after a failure to none.  (A page noted noindex or nofollow is asked for
whole by an update, so that only a whole answer can clear its note.)

One line ``URL<TAB>value`` a page, in a file of its own per process
(``NAME.tsv``: the workers of a distributed crawl share the page directory),
appended to on resume.  A crawl writes a page's notes before its page file,
each handed to the kernel as it is noted (fsynced before the page file with
``TSE_FSYNC``): a page file a crawl killed at any instant leaves has its
notes (``PageDirPipeline.write``).  Readers read every file; a URL noted twice keeps its
last value.  Lines that are not such a line (a torn last line, a file
someone else wrote) are skipped, and reading is bounded.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from .pagedir import SYMBOLIC_LINK_REFUSED, open_own_file, open_regular_file

CHARSETS = ".tse-charsets"
ROBOTS = ".tse-robots"
FOLLOW = ".tse-follow"
TYPES = ".tse-types"
CANONICAL = ".tse-canonical"
MAX_LINE_BYTES = 9000  # a URL of 8,192 characters and a charset label
MAX_LABEL_BYTES = 40
MAX_URL_VALUE_BYTES = 8192
URL_VALUED = frozenset({CANONICAL})  # kinds whose values are URLs, not short ASCII names
NOINDEX = "noindex"
INDEX = "index"  # an update's note that a page is no longer noindex
NOFOLLOW = "nofollow"
FOLLOWED = "follow"  # an update's note that a page is no longer nofollow
PDF = "pdf"
HTML = "html"
NO_CANONICAL = "-"
NO_CHARSET = "-"
MAX_FILE_BYTES = 256 * 1024 * 1024
NOTE_KINDS = frozenset({CHARSETS, ROBOTS, FOLLOW, TYPES, CANONICAL})
# The header each kind of note is read from.
_NOTED_FROM = {"x-robots-tag": (ROBOTS, FOLLOW), "link": (CANONICAL,), "content-type": (CHARSETS, TYPES)}


def note_line(url: str, value: str, url_value: bool = False) -> bytes | None:
    """The line noting *value* (a URL if *url_value*) for *url*, or None if they cannot make one."""
    label = value.strip()
    if not _good_value(label, url_value):
        return None  # values are short ASCII names (charset labels, directives), or URLs
    if any(c in url for c in "\t\n\r"):
        return None
    try:
        line = f"{url}\t{label}\n".encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a URL no page file could hold either
        return None
    return line if len(line) <= _line_bound(url_value) else None


def noted_value(url: str, value: str | None, url_value: bool = False) -> str | None:
    """*value* (a charset or canonical URL) of the page at *url* as its note reads back (``note_line``),
    None for none: one that cannot be noted (nor a URL too long for a line), or "-", which notes none
    (NO_CHARSET, NO_CANONICAL)."""
    label = (value or "").strip()
    return label if label != NO_CHARSET and note_line(url, label, url_value) is not None else None


def _good_value(label: str, url_value: bool) -> bool:
    if not label or not label.isprintable():
        return False
    if url_value:
        return len(label) <= MAX_URL_VALUE_BYTES and "\t" not in label
    return label.isascii() and len(label) <= MAX_LABEL_BYTES


def _line_bound(url_value: bool) -> int:
    return MAX_LINE_BYTES + (MAX_URL_VALUE_BYTES if url_value else 0)


def parse_note_lines(data: bytes, url_value: bool = False) -> dict[str, str]:
    """URL -> value of the lines in *data* (bad lines skipped, the last of a URL kept)."""
    found: dict[str, str] = {}
    bound = _line_bound(url_value)
    for line in data.split(b"\n")[:-1]:  # a last piece without its newline is torn
        if len(line) > bound or line.count(b"\t") != 1:
            continue
        url, label = line.decode("utf-8", "surrogateescape").split("\t")
        if url and _good_value(label, url_value):
            found[url] = label
    return found


@dataclass(frozen=True)
class NotedPages:
    """What a crawl noted of its pages, as the indexer uses it: read once per indexing process."""

    charsets: dict[str, str]  # URL -> the charset its HTTP header declared
    noindex: frozenset[str]  # the URLs never to be an answer
    pdfs: frozenset[str] = frozenset()  # the URLs of PDF documents
    canonicals: dict[str, str] = field(default_factory=dict)  # URL -> the canonical URL it names
    nofollow: frozenset[str] = frozenset()  # the URLs whose links are not followed (an update's)

    def charset(self, url: str) -> str | None:
        return self.charsets.get(url)


def notes_said(header_names: Iterable[str]) -> frozenset[str]:
    """The kinds of note an answer whose headers are *header_names* speaks to (a 304's: those it carries)."""
    return frozenset(kind for name in header_names for kind in _NOTED_FROM.get(name.lower(), ()))


def page_nofollow(said: frozenset[str], answered: bool, noted: bool) -> bool:
    """Whether the links of a page are not to be followed: *answered*, what its answer says (its
    X-Robots-Tag header and robots ``<meta>``), when the answer speaks to it (*said*, ``notes_said``: a
    whole answer, a 304 that carries X-Robots-Tag); else what its answer's body says or *noted* (its
    ``nofollow`` note): a 304 without the header, a copy kept after a failure, a page read back on
    resume, whose header only the note kept."""
    return answered or (FOLLOW not in said and noted)


def differing_notes(
    before: NotedPages,
    url: str,
    http_charset: str | None,
    noindex: bool,
    pdf: bool,
    canonical: str | None,
    nofollow: bool = False,
) -> frozenset[str]:
    """The kinds of note of the page at *url* (its HTTP charset, noindex, PDF, canonical URL, nofollow)
    that would not read back as *before* has them, of those that can be noted (a URL too long for a
    note's line has none: it would differ at every update)."""
    notable = note_line(url, NOINDEX) is not None
    differing = {
        ROBOTS: notable and noindex != (url in before.noindex),
        FOLLOW: notable and nofollow != (url in before.nofollow),
        TYPES: notable and pdf != (url in before.pdfs),
        CANONICAL: noted_value(url, canonical, url_value=True) != before.canonicals.get(url),
        CHARSETS: noted_value(url, http_charset) != before.charsets.get(url),
    }
    return frozenset(kind for kind, differs in differing.items() if differs)


def read_page_notes(pagedir: str | os.PathLike) -> NotedPages:
    """Every note of *pagedir*: charsets, noindex pages, PDFs, canonical URLs (the indexer's), nofollow
    pages (an update's)."""
    return NotedPages(
        read_charsets(pagedir),
        read_noindex(pagedir),
        frozenset(url for url, value in read_notes(pagedir, TYPES).items() if value == PDF),
        read_canonicals(pagedir),
        read_nofollow(pagedir),
    )


def read_charsets(pagedir: str | os.PathLike) -> dict[str, str]:
    """URL -> the charset its HTTP header declared, of every page noted in *pagedir*."""
    return {url: value for url, value in read_notes(pagedir, CHARSETS).items() if value != NO_CHARSET}


def read_canonicals(pagedir: str | os.PathLike) -> dict[str, str]:
    """URL -> the canonical URL its Link headers named, of every page noted in *pagedir*."""
    return {url: value for url, value in read_notes(pagedir, CANONICAL).items() if value != NO_CANONICAL}


def read_noindex(pagedir: str | os.PathLike) -> frozenset[str]:
    """The URLs of the pages noted ``noindex`` in *pagedir*."""
    return frozenset(url for url, value in read_notes(pagedir, ROBOTS).items() if value == NOINDEX)


def read_nofollow(pagedir: str | os.PathLike) -> frozenset[str]:
    """The URLs of the pages noted ``nofollow`` in *pagedir* (none in a page directory made before they
    were noted: every page is followed)."""
    return frozenset(url for url, value in read_notes(pagedir, FOLLOW).items() if value == NOFOLLOW)


def read_notes(pagedir: str | os.PathLike, kind: str) -> dict[str, str]:
    """Every note of *kind* (``CHARSETS``, ``ROBOTS``, ...) in *pagedir* (none: {})."""
    found: dict[str, str] = {}
    directory = Path(pagedir, kind)
    try:
        names = sorted(entry.name for entry in os.scandir(directory) if entry.name.endswith(".tsv"))
    except OSError:
        return found
    for name in names:
        try:
            # (A regular file only, its opening not waited on: a FIFO there held tse index for ever.)
            with open_regular_file(directory / name) as notes:
                found.update(parse_note_lines(notes.read(MAX_FILE_BYTES), kind in URL_VALUED))
        except OSError:
            continue
    return found


class PageNotes:
    """Appends the notes of one process to ``PAGEDIR/KIND/NAME.tsv`` (opened when first needed)."""

    def __init__(self, pagedir: str | os.PathLike, kind: str, name: str):
        self.path = Path(pagedir, kind, f"{name}.tsv")
        self.url_valued = kind in URL_VALUED
        self._file: BinaryIO | None = None
        self._name_synced = False

    def note(self, url: str, value: str) -> None:
        """Note *value* for *url*, written through to the kernel (a killed process loses none of it; a
        power cut may, short of ``sync``); raises OSError."""
        line = note_line(url, value, self.url_valued)
        if line is None:
            return
        if self._file is None:
            self._file = self._open()
        self._file.write(line)
        self._file.flush()

    def _open(self) -> BinaryIO:
        """The notes file open for appending (created with its directory if need be), neither of them
        through a symbolic link: a ``NAME.tsv`` linked to a file elsewhere had crawl lines appended to
        it, a ``KIND`` directory linked elsewhere had the notes written there.  OSError, one line
        (``open_own_file``'s)."""
        directory = self.path.parent
        directory.mkdir(exist_ok=True)
        try:
            folder = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            if directory.is_symlink():  # (ENOTDIR or ELOOP, as the kernel says it)
                raise OSError(errno.ELOOP, SYMBOLIC_LINK_REFUSED, str(directory)) from None
            raise
        try:
            descriptor = open_own_file(self.path.name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, dir_fd=folder)
        except OSError as error:
            raise OSError(error.errno, error.strerror, str(self.path)) from None  # (named in full)
        finally:
            os.close(folder)
        return open(descriptor, "ab")  # kept open for the crawl, closed by close()

    def sync(self) -> None:
        """Make the notes written so far survive a power cut (fsync), the file's name too the first time
        (raises OSError).  Safe from any thread while ``note`` appends."""
        file = self._file
        if file is None:
            return
        os.fsync(file.fileno())
        if not self._name_synced:
            for directory in (self.path.parent, self.path.parent.parent):
                descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
                try:
                    os.fsync(descriptor)
                finally:
                    os.close(descriptor)
            self._name_synced = True

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
