"""``tse import WARC... PAGEDIR``: the pages of web archives as a page directory.

Two passes.  The first reads the archives once, in order: each page's payload goes to a spool file
(one per import, deleted at the end), and each URL keeps its last capture; revisit records take the
payload of the record they refer to (found earlier, else, at the end of the reading, later).  A URL
whose last answer that counts says it is gone (404, 410, a redirect elsewhere), as an update takes
it, keeps its page file and is listed in ``.tse-gone``.  The second works out the depths
(``rules.files.webarchive.link_depths``), scanning a page's links only when the breadth-first walk
reaches it and stopping once every page has its depth (in a crawl's archive, the pages of the last
level are never scanned), and writes the page files 1, 2, ... in the order of each URL's first
capture, with the notes a crawl writes (charset, noindex, PDF, canonical ``Link:``).
A bad archive stops being read where it is bad; what was read before it, and the other archives,
are imported.
"""

from __future__ import annotations

import dataclasses
import os
import stat
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import SplitResult, urljoin, urlsplit

from ..atomicfile import write_atomically
from ..rules.crawling.changes import GONE_STATUSES
from ..rules.crawling.secrets import mask_url
from ..rules.files import pagedir
from ..rules.files.crawlrecord import MAX_LINKS, RequestRecord, format_record
from ..rules.files.outputfile import file_type
from ..rules.files.pagedir import MAX_URL_CHARACTERS
from ..rules.files.pagenotes import (
    CANONICAL,
    CHARSETS,
    FOLLOW,
    MAX_LINE_BYTES,
    NOINDEX,
    PDF,
    ROBOTS,
    TYPES,
    URL_VALUED,
    PageNotes,
    note_line,
)
from ..rules.files.pagenotes import NOFOLLOW as NOFOLLOW_NOTE
from ..rules.files.webarchive import (
    HTML,
    PageHrefs,
    landing,
    link_depths,
    may_be_page,
    page_hrefs,
    page_kind,
    resolved_links,
    url_key,
)
from ..rules.files.webarchive import PDF as PDF_KIND
from ..rules.text.encodings import header_charset, page_encoding
from ..rules.web.duplicates import named_canonical
from ..rules.web.robotsmeta import NOFOLLOW, robots_directives, utf16_as_utf8
from ..rules.web.robotsmeta import NOINDEX as NOINDEX_DIRECTIVE
from .reader import BadArchive, BadPayload, Record, archive_records, readable_url

NOTES_NAME = "import"
# Made before the first page file and removed after ``.crawler``, which is written last: a directory
# holding it holds an import that did not finish (interrupted, killed, a full disk), which ``tse index``
# refuses (no ``.crawler``) and ``tse import`` names.
UNFINISHED_NAME = ".tse-import-unfinished"
# The links of a page kept for its depth and record, as a crawl record lists at most this many.
MAX_PAGE_LINKS = MAX_LINKS
# Damaged payloads said one a line (a hostile archive may hold a million); the rest are counted.
DAMAGED_SAID = 10
# A record at a URL longer than MAX_URL_CHARACTERS (the bound a crawl's URLs are held to: the package's
# __init__) is skipped, a longer link not followed.
# Records skipped for their URL (one no URL can be made of, not http(s), ...) said one a line; the rest counted.
SKIPPED_SAID = 10
# The hrefs of payloads several pages hold (revisits) kept at once, in bytes, about.
SCANNED_HREF_BYTES = 64 * 1024 * 1024
# The token of robots <meta> directives meant for this program: the first word of the crawl's USER_AGENT.
ROBOTS_TOKEN = "tse-scrapy"
# The Link header values naming a canonical URL kept of a record, in bytes, at most (a canonical URL the
# crawl notes is 8,192 characters at most): a record's headers may hold a MB of Link lines, and every
# page's were kept (300 such records held 689 MB).
MAX_LINK_BYTES = 64 * 1024
# The record IDs of HEAD requests (and of the records they say are their exchange's) kept to tell their
# answers, which hold no payload, from pages: the last so many (an exchange's records are written together).
HEAD_IDS_KEPT = 4096


@dataclass
class Capture:
    """The capture of a URL that becomes its page."""

    url: str  # as archived
    kind: str  # rules.files.webarchive.HTML or PDF
    offset: int  # where its payload is in the spool
    size: int
    http_charset: str | None
    robots: list[str]  # X-Robots-Tag values, as ``_robots_kept`` keeps them
    links_header: list[str]  # Link values, as ``_links_kept`` keeps them
    date: float | None  # when it was archived (WARC-Date), Unix time
    # The link targets, as numbers of the URLs as written (at most MAX_PAGE_LINKS); None until scanned.
    links: list[int] | None = None
    # Its robots directives (rules.web.robotsmeta), worked out once from headers and payload; None until then.
    directives: frozenset[str] | None = None


@dataclass
class ImportSummary:
    """What an import did, counted."""

    pages: int = 0
    pdfs: int = 0
    records: int = 0
    revisits: int = 0  # revisit records resolved to the payload of the record they refer to
    unresolved: int = 0  # revisits whose record is in none of the archives
    revisits_of_no_page: int = 0  # revisits of a record no page was taken of (an image, robots.txt ...)
    resolved_later: int = 0  # revisits resolved to a record read after them (archives not oldest first?)
    gone: int = 0  # pages whose last answer says they are gone, listed in .tse-gone
    oversized: int = 0  # payloads over reader.MAX_PAYLOAD_BYTES, skipped
    unnoted: int = 0  # pages skipped: their URL is too long for the note that says what they are
    recaptured: int = 0  # captures of a URL replaced by a later one
    bad: list[str] = field(default_factory=list)  # one line per archive that could not be read to its end
    damaged: int = 0  # payloads not taken (the archive read on): the first DAMAGED_SAID said one a line
    # Records skipped for their URL: none can be made of it (``http://[e.com/a``), or not http(s) with a host.
    bad_urls: int = 0
    long_urls: int = 0  # records skipped: a URL over MAX_URL_CHARACTERS
    # Answers to HEAD requests (no payload), and empty payloads whose Content-Length says otherwise: skipped.
    headless: int = 0

    @property
    def failed(self) -> bool:
        """Something of the archives could not be read, or no page was in them: ``tse import`` exits 1."""
        return bool(self.bad) or self.damaged > 0 or self.pages == 0

    def describe(self) -> str:
        """The one-line summary ``tse import`` ends with."""
        saved = _count(self.pages, "page") + " saved"
        parts = [f"{saved} ({self.pdfs} PDF)" if self.pdfs else saved]
        if self.gone:
            parts.append(f"{self.gone} gone (a later 404, 410 or redirect: listed in {pagedir.GONE_NAME})")
        parts.append(_count(self.records, "record") + " read")
        if self.recaptured:
            parts.append(_count(self.recaptured, "earlier capture") + " replaced")
        if self.revisits or self.unresolved:
            parts.append(f"{_count(self.revisits, 'revisit')} resolved, {self.unresolved} not found")
        if self.revisits_of_no_page:
            parts.append(f"{_count(self.revisits_of_no_page, 'revisit')} of no page skipped")
        if self.resolved_later:
            # The page of a URL is its capture in the last archive given: in the wrong order, an older one.
            points = "points" if self.resolved_later == 1 else "point"
            parts.append(
                f"{_count(self.resolved_later, 'revisit')} {points} to records later in the archives given: "
                "give the archives oldest first"
            )
        if self.oversized:
            parts.append(f"{self.oversized} over the size bound")
        if self.unnoted:
            parts.append(f"{_count(self.unnoted, 'page')} skipped (a URL too long for its note)")
        if self.bad_urls:
            parts.append(f"{_count(self.bad_urls, 'record')} skipped (no http(s) URL with a host)")
        if self.headless:
            parts.append(
                f"{_count(self.headless, 'empty answer')} skipped (a HEAD request's, or its Content-Length says more)"
            )
        if self.long_urls:
            parts.append(f"{_count(self.long_urls, 'record')} skipped (a URL over {MAX_URL_CHARACTERS:,} characters)")
        if self.damaged:
            parts.append(_count(self.damaged, "damaged payload") + " not taken")
        if self.bad:
            parts.append(_count(len(self.bad), "archive") + " not read to the end")
        if not self.pages:
            parts.append("nothing written (no page to import)")
        return "; ".join(parts)


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


_NOTE_WORDS = {
    ROBOTS: "noindex",
    FOLLOW: "nofollow",
    TYPES: "a PDF",
    CHARSETS: "its HTTP charset",
    CANONICAL: "its canonical URL",
}


class ImportRefused(Exception):
    """The import cannot start (PAGEDIR not usable); the message is for the user."""


class _SpoolFailed(Exception):
    """The spool could not be written: raised through the reading of an archive, which would take an
    OSError for the archive's."""

    def __init__(self, error: OSError):
        super().__init__(error)
        self.error = error


class _SpoolError(OSError):
    """The spool could not be written: the import stops (``tse import`` says it in one line)."""


@dataclass
class _Taken:
    """A response taken as a page, kept in its place only once the next response or revisit is read (or
    the archive's end): a HEAD request written after it (``WARC-Concurrent-To``) says it has no payload."""

    record_id: str
    concurrent_to: tuple[str, ...]
    key: str
    capture: Capture
    at: int
    payload_digest: str
    date: str


@dataclass
class _Revisit:
    """A revisit record whose record was not read yet: resolved once every archive is read."""

    at: int  # its place among the records read
    url: str
    status: int | None
    date: str
    refers_to_url: str
    refers_to_date: str
    payload_digest: str
    typed: bool  # it has a Content-Type
    http_charset: str | None  # the charset its Content-Type declares (the value itself may be a MB)
    robots: list[str]
    links_header: list[str]


def check_archives(paths: Iterable[str]) -> list[str]:
    """The archives *paths*, each a file that can be opened for reading (not a directory), none given twice
    (by its identity: two names of one file are one archive); ImportRefused naming the first that is not."""
    seen: dict[tuple[int, int], str] = {}
    checked = []
    for path in paths:
        try:
            # Without blocking: opening a FIFO for reading waits for a writer, for ever.
            descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
            try:
                identity = os.fstat(descriptor)
            finally:
                os.close(descriptor)
        except OSError as error:
            raise ImportRefused(f"cannot read {path}: {error.strerror or error}") from None
        if stat.S_ISDIR(identity.st_mode):
            raise ImportRefused(f"cannot read {path}: Is a directory")
        if not stat.S_ISREG(identity.st_mode):
            raise ImportRefused(f"cannot read {path}: not a regular file ({file_type(identity.st_mode)})")
        key = (identity.st_dev, identity.st_ino)
        if key in seen:
            same = "twice" if seen[key] == path else f"twice (as {seen[key]} too)"
            raise ImportRefused(f"{path} is given {same}")
        seen[key] = path
        checked.append(path)
    return checked


def check_import_directory(directory: str) -> None:
    """PAGEDIR must be a directory holding none of a crawl's or an import's files: the imported
    directory says what the archives say, not what notes left there before say (a stale ``.tse-gone``
    hides pages, a stale noindex note too)."""
    if not os.path.isdir(directory):
        raise ImportRefused(f"{directory} is not a directory (make an empty one first, as for tse crawl)")
    names = os.listdir(directory)
    if UNFINISHED_NAME in names:
        raise ImportRefused(f"{directory} holds an import that did not finish: empty it and import again")
    found = sorted(
        (name for name in names if pagedir.is_page_directory_file(name)),
        key=lambda name: (pagedir.is_page_name(name), int(name) if pagedir.is_page_name(name) else 0, name),
    )
    if found:
        shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        what = "page files" if pagedir.is_page_name(found[0]) else "a crawl's or an import's files"
        raise ImportRefused(f"{directory} already holds {what} ({shown}): import into an empty directory")
    if not os.access(directory, os.W_OK):
        raise ImportRefused(f"cannot write in {directory}: permission denied")


def check_record(record: str | None, archives: Iterable[str], directory: str) -> None:
    """The record file must be a new one (as ``tse crawl --record``'s): not an existing file, least of
    all one of the archives (by identity, as ``check_archives`` compares them), nor a file of the page
    directory or of any other (one holding ``.crawler``: another crawl's next page, say); ImportRefused
    saying which."""
    if record is None:
        return
    try:
        identity = os.stat(record)
    except OSError:
        identity = None  # (none there: a name in a directory that cannot be written is refused before)
    if identity is not None:
        for path in archives:
            try:
                archive = os.stat(path)
            except OSError:
                continue
            if (archive.st_dev, archive.st_ino) == (identity.st_dev, identity.st_ino):
                raise ImportRefused(f"--record: {record} is the archive {path}: give a new file name")
        if stat.S_ISDIR(identity.st_mode):
            raise ImportRefused(f"--record: {record} is a directory: give a new file name")
        raise ImportRefused(f"--record: {record} exists: an import writes a new record: give a new file name")
    parent = os.path.dirname(os.path.abspath(record))
    try:
        in_page_directory = os.path.samefile(parent, directory)
    except OSError:
        in_page_directory = False
    # This import's page directory (no .crawler yet), or another crawl's (tse crawl --record's rule).
    in_page_directory = in_page_directory or os.path.lexists(os.path.join(parent, pagedir.MARKER))
    if in_page_directory and pagedir.is_page_directory_file(os.path.basename(record)):
        shown = os.path.dirname(record) or "."
        raise ImportRefused(f"--record: {record} is a file of the page directory {shown}: give another name")


class _Numbers:
    """Strings as numbers, so that the link graph of a large archive stays small."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}
        self.texts: list[str] = []  # number -> string

    def number(self, text: str) -> int:
        found = self.numbers.get(text)
        if found is None:
            found = self.numbers[text] = len(self.texts)
            self.texts.append(text)
        return found


class _ScannedWhenAsked(Sequence[list[int]]):
    """A sequence of *length* items, item *i* being ``scan(i)``, worked out when asked for."""

    def __init__(self, length: int, scan: Callable[[int], list[int]]):
        self.length = length
        self.scan = scan

    def __len__(self) -> int:
        return self.length

    def __getitem__(self, index: int) -> list[int]:  # type: ignore[override] - read by index only
        return self.scan(index)


class ArchiveImport:
    """One import into *directory*; ``read`` each archive, then ``write``."""

    def __init__(
        self,
        directory: str,
        *,
        pdf: bool = False,
        record: str | None = None,
        warn: Callable[[str], None] = lambda _: None,
    ):
        self.directory = directory
        self.record = record
        self.pdf = pdf
        self.warn = warn
        self.summary = ImportSummary()
        self.graph = _Numbers()  # the pages' URL keys
        self.targets = _Numbers()  # the links' URLs as written (each normalized once, when first followed)
        # URL number -> its last capture, in first-capture order; None keeps the place of a revisit
        # whose record is read later (``_resolve_later``).
        self.captures: dict[int, Capture | None] = {}
        # URL number -> the place (among the records read) of its last answer that counts: a capture,
        # or an answer that says it is gone.
        self.answered_at: dict[int, int] = {}
        self.gone: set[int] = set()  # URL numbers whose last answer that counts says they are gone
        self.later: list[_Revisit] = []  # revisits to resolve at the end of the reading
        self.by_digest: dict[str, Capture] = {}  # WARC-Payload-Digest -> a capture with that payload
        self.by_capture: dict[tuple[str, str], Capture] = {}  # (URL key, WARC-Date) -> that capture
        self.redirects: dict[str, str] = {}  # URL key -> the URL key its 3xx answer sends to
        # The hashes of the payload digests and of the (URL key, WARC-Date) of the responses no page was
        # taken of (an image, a stylesheet, robots.txt, a 404 ...): their revisits are no page either, not
        # revisits whose record is missing.  (Hashes: a crawl's archive holds millions of them.)
        self.no_page_digests: set[int] = set()
        self.no_page_captures: set[int] = set()
        # For the record (--record): the other answers that may have been pages, (URL, status, date).
        self.not_pages: list[tuple[str, int, float | None]] = []
        # The hrefs of each payload more than one page holds (a revisit's), scanned once for them all.
        # (Kept while a holder is left to scan, to SCANNED_HREF_BYTES in all: past it a payload is scanned
        # again for each page, which costs time linear in its size, where keeping it would cost memory.)
        self.shared_payloads: dict[int, int] = {}  # offset in the spool -> its holders not scanned yet
        self.scanned: dict[int, PageHrefs] = {}
        self.scanned_bytes = 0
        self.taken: _Taken | None = None  # the last response taken, not yet in its place
        self.head_ids: dict[str, None] = {}  # record IDs of the last HEAD requests and of their exchanges
        self.spool = tempfile.TemporaryFile(dir=directory, prefix=".tse-import-")  # noqa: SIM115 - closed by write

    def read(self, path: str) -> None:
        """Read the archive *path*; a bad one is reported (``summary.bad``) and read up to where it is bad.
        The spool that cannot be written (a full disk) stops the import: an OSError saying so."""
        try:
            try:
                for record in archive_records(path, self._bad):
                    self.summary.records += 1
                    self._take(record)
            except _SpoolFailed as failed:  # not the archive's fault: no archive is blamed
                raise self._spool_error(failed.error) from None
            finally:
                self._put_taken()
        except BadArchive as error:
            self.summary.bad.append(str(error))
            self.warn(str(error))
        except OSError as error:
            if isinstance(error, _SpoolError):
                raise
            message = f"{path}: {error.strerror or error}"
            self.summary.bad.append(message)
            self.warn(message)

    def _bad(self, error: BadArchive) -> None:
        """A part of an archive (a WACZ's member) that cannot be read on: said, the rest read."""
        self.summary.bad.append(str(error))
        self.warn(str(error))

    def _take(self, record: Record) -> None:
        if record.type == "request":
            self._request(record)
            return
        if record.type not in ("response", "revisit") or not record.url:
            return
        self._put_taken()
        if not _web_url(record.url):
            why = "no URL can be made of it" if _split(record.url) is None else "not an http(s) URL with a host"
            self._skip_url(record, why)
            return
        if len(record.url) > MAX_URL_CHARACTERS:
            self._skip_url(record, f"a URL of {len(record.url):,} characters, over {MAX_URL_CHARACTERS:,}", long=True)
            return
        if record.status is not None and self._says_gone(record):
            self._gone(url_key(record.url))
        if record.type == "revisit":
            self._revisit(record)
        elif record.status == 200:
            if not self._response(record):
                self._no_page(record)
        elif (
            record.status is not None
            and self.record is not None
            and may_be_page(record.header("Content-Type"), self.pdf)
        ):
            self.not_pages.append((record.url, record.status, _unix_time(record.date)))
        if record.type == "response" and record.status != 200:
            self._no_page(record)

    def _request(self, record: Record) -> None:
        """A HEAD request: its answer (said by their WARC-Concurrent-To, either way) is no page."""
        if record.method != "HEAD":
            return
        exchange = {record.record_id, *record.concurrent_to} - {""}
        taken = self.taken
        if taken is not None and (taken.record_id in exchange or exchange & set(taken.concurrent_to)):
            self.taken = None  # the answer read before it: not put in its place
            self.summary.headless += 1
            return
        for record_id in exchange:
            self.head_ids[record_id] = None
        while len(self.head_ids) > HEAD_IDS_KEPT:
            del self.head_ids[next(iter(self.head_ids))]

    def _to_head(self, record: Record) -> bool:
        """Whether *record* answers a HEAD request read before it."""
        return record.record_id in self.head_ids or any(other in self.head_ids for other in record.concurrent_to)

    def _put_taken(self) -> None:
        """The last response taken put in its place (no HEAD request said it has no payload)."""
        taken, self.taken = self.taken, None
        if taken is None:
            return
        self._keep(taken.key, taken.capture, taken.at)
        if taken.payload_digest:
            self.by_digest[taken.payload_digest] = taken.capture
        if taken.date:
            self.by_capture[(taken.key, taken.date)] = taken.capture

    def _skip_url(self, record: Record, why: str, *, long: bool = False) -> None:
        """A record whose URL no page can have (``tse index`` and the record read it as a web URL):
        skipped, said (the first SKIPPED_SAID) and counted when it might have been a page (a crawler's
        ``dns:`` records, say, are no page: skipped without a word)."""
        if record.type != "revisit" and not may_be_page(record.header("Content-Type"), self.pdf):
            return
        if long:
            self.summary.long_urls += 1
        else:
            self.summary.bad_urls += 1
        skipped = self.summary.bad_urls + self.summary.long_urls
        if skipped <= SKIPPED_SAID:
            self.warn(f"{record.archive}: {readable_url(record.url)}: {why}: skipped")
        if skipped == SKIPPED_SAID:
            self.warn(
                f"more records skipped for their URL are counted, not said one by one (the first {SKIPPED_SAID} are)"
            )

    def _says_gone(self, record: Record) -> bool:
        """Whether the answer says the page of its URL is gone, as ``tse crawl --update`` takes it: a 404
        or 410, or a redirect to another URL (noted for the links to it).  A failure for a while (5xx,
        no answer) says nothing of the page, nor another answer (403, a 304 record, no longer a page ...)."""
        status = record.status or 0
        if status in GONE_STATUSES:
            return True
        location = record.header("Location") if 300 <= status < 400 else None
        if not location:
            return False
        key = url_key(record.url)
        try:  # (a Location no URL can be made of says nothing)
            target = urljoin(record.url, location.strip())
        except ValueError:
            return False
        # A redirect to a URL longer than a crawl keeps lands on no page: the URL is not kept (a hostile
        # archive's Locations of a MB each, kept for every redirect, were the import's memory).
        target = url_key(target) if len(target) <= MAX_URL_CHARACTERS else ""
        self.redirects[key] = target
        return target != key

    def _gone(self, key: str) -> None:
        """The page of *key* is gone from now on: an update lists it, keeping its file (a URL that
        was never a page stays none)."""
        number = self.graph.numbers.get(key)
        if number is not None and number in self.captures:
            self.gone.add(number)
            self.answered_at[number] = self.summary.records

    def _no_page(self, record: Record) -> None:
        """*record*, a response, gave no page: a revisit of it is none either."""
        if record.payload_digest:
            self.no_page_digests.add(hash(record.payload_digest))
        if record.date:
            self.no_page_captures.add(hash((url_key(record.url), record.date)))

    def _of_no_page(self, revisit: _Revisit) -> bool:
        """Whether *revisit* refers to a response no page was taken of."""
        if revisit.refers_to_date:
            key = url_key(revisit.refers_to_url or revisit.url)
            if hash((key, revisit.refers_to_date)) in self.no_page_captures:
                return True
        return bool(revisit.payload_digest) and hash(revisit.payload_digest) in self.no_page_digests

    def _response(self, record: Record) -> bool:
        """Take a response of status 200 as a page; False when it gives none (for its revisits)."""
        content_type = record.header("Content-Type")
        if not may_be_page(content_type, self.pdf):
            return False
        if self._to_head(record):
            self.summary.headless += 1
            return False
        try:
            payload = record.payload()
        except BadPayload as error:  # the archive is sound around it: its next records are read
            self.summary.damaged += 1
            if self.summary.damaged <= DAMAGED_SAID:
                self.warn(str(error))
            if self.summary.damaged == DAMAGED_SAID:
                self.warn(f"more damaged payloads are counted, not said one by one (the first {DAMAGED_SAID} are)")
            return False
        if payload is None:
            self.summary.oversized += 1
            shown = readable_url(record.url)
            self.warn(f"{record.archive}: {shown}: a payload over the size bound, skipped")
            return False
        if not payload and _said_length(record) > 0:  # (an answer to a HEAD request, or cut short)
            self.summary.headless += 1
            return False
        kind = page_kind(content_type, payload[:1024], self.pdf)
        if kind is None:
            return False
        try:
            offset = self.spool.seek(0, os.SEEK_END)
            self.spool.write(payload)
        except OSError as error:
            raise _SpoolFailed(error) from None
        key = url_key(record.url)
        charset = header_charset(content_type) if content_type and kind == HTML else None
        capture = Capture(
            url=record.url,
            kind=kind,
            offset=offset,
            size=len(payload),
            http_charset=charset,
            robots=_robots_kept(record),
            links_header=_links_kept(record),
            date=_unix_time(record.date),
        )
        self.taken = _Taken(
            record.record_id,
            record.concurrent_to,
            key,
            capture,
            self.summary.records,
            record.payload_digest,
            record.date,
        )
        return True

    def _revisit(self, record: Record) -> None:
        """A revisit record: the page again, its payload that of the record it refers to (by URL and
        date, else by payload digest: the identical-payload-digest and server-not-modified profiles).
        One whose record is not read yet is resolved at the end, in its place (``_resolve_later``)."""
        if record.status not in (None, 200, 304):  # a revisit of a page that now answers otherwise
            return
        content_type = record.header("Content-Type")
        if record.status == 200 and content_type and not may_be_page(content_type, self.pdf):
            self.summary.revisits_of_no_page += 1  # (an image's, a stylesheet's ...: its own type says so)
            return
        # A WARC-Refers-To-Target-URI longer than a page's URL can be refers to no page: the revisit is
        # resolved by its payload digest alone (the URI, a MB in a hostile archive, is not kept).
        by_url = len(record.refers_to_url) <= MAX_URL_CHARACTERS
        revisit = _Revisit(
            at=self.summary.records,
            url=record.url,
            status=record.status,
            date=record.date,
            refers_to_url=record.refers_to_url if by_url else "",
            refers_to_date=record.refers_to_date if by_url else "",
            payload_digest=record.payload_digest,
            typed=bool(content_type),
            http_charset=(header_charset(content_type) or None) if content_type else None,
            robots=_robots_kept(record),
            links_header=_links_kept(record),
        )
        referred = self._referred(revisit)
        if referred is None and self._of_no_page(revisit):
            self.summary.revisits_of_no_page += 1
            return
        if referred is None:
            self.later.append(revisit)
            self.captures.setdefault(self.graph.number(url_key(record.url)), None)  # its docID's place
            return
        self.summary.revisits += 1
        self._keep(url_key(record.url), _revisited(referred, revisit), revisit.at)

    def _referred(self, revisit: _Revisit) -> Capture | None:
        """The capture a revisit refers to, among those read so far."""
        referred = None
        if revisit.refers_to_date:
            referred = self.by_capture.get((url_key(revisit.refers_to_url or revisit.url), revisit.refers_to_date))
        if referred is None and revisit.payload_digest:
            referred = self.by_digest.get(revisit.payload_digest)
        return referred

    def _resolve_later(self) -> None:
        """The revisits whose record was read after them, now that every record is read: each takes
        its URL's page when no answer that counts came after it, as if read in its place."""
        for revisit in self.later:
            referred = self._referred(revisit)
            if referred is None:
                if self._of_no_page(revisit):  # (read after it: no page either)
                    self.summary.revisits_of_no_page += 1
                else:
                    self.summary.unresolved += 1
                continue
            self.summary.revisits += 1
            self.summary.resolved_later += 1
            number = self.graph.numbers[url_key(revisit.url)]
            capture = _revisited(referred, revisit)
            if self.captures[number] is None:
                self.captures[number] = capture  # its URL's only capture, even if gone since
            elif self.answered_at.get(number, -1) < revisit.at:
                self._keep(url_key(revisit.url), capture, revisit.at)
            else:
                self.summary.recaptured += 1  # replaced by the later answer
            if self.answered_at.get(number, -1) < revisit.at:
                self.answered_at[number] = revisit.at
                self.gone.discard(number)
                self.redirects.pop(url_key(revisit.url), None)
        for number in [number for number, capture in self.captures.items() if capture is None]:
            del self.captures[number]  # a revisit never resolved: no page
            self.gone.discard(number)

    def _keep(self, key: str, capture: Capture, at: int) -> None:
        """*capture* is the page of *key*, from the answer read at *at*: live again if it was gone."""
        number = self.graph.number(key)
        if self.captures.get(number) is not None:
            self.summary.recaptured += 1
        self.captures[number] = capture  # a dict keeps the first insertion's place: first-capture order
        self.answered_at[number] = at
        self.gone.discard(number)
        self.redirects.pop(key, None)  # its links land on it again

    def _spool_error(self, error: OSError) -> OSError:
        """The spool that could not be written (a full disk, ``ulimit -f``), said for the user: the import
        stops, before anything is put in PAGEDIR."""
        said = (
            f"{error.strerror or error}, writing the pages read from the archives: the import stopped, nothing written"
        )
        return _SpoolError(error.errno, said, self.directory)

    def close(self) -> None:
        """Close the spool (a file without a name: gone with it)."""
        self.spool.close()

    def write(self) -> ImportSummary:
        """Write the page files and notes; close the spool."""
        try:
            try:
                self.spool.flush()  # (what is left in its buffer: a full disk is said before any page is written)
            except OSError as error:
                raise self._spool_error(error) from None
            self._resolve_later()
            self._write_pages()
        finally:
            self.spool.close()
        return self.summary

    def _write_pages(self) -> None:
        captures = {number: capture for number, capture in self._pages().items() if self._notable(capture)}
        if not captures:
            # No page to import (not a WARC file, revisits alone): nothing is written, not even
            # `.crawler`, which would make the directory refuse the import tried again.
            return
        held = Counter(capture.offset for capture in captures.values())
        self.shared_payloads = {offset: pages for offset, pages in held.items() if pages > 1}
        numbers = list(captures)
        position = {number: index for index, number in enumerate(numbers)}
        # A link counts when it lands, after the archive's redirects, on one of the pages.  Only the
        # links to a host of the pages or redirects are normalized: most links of a site go elsewhere.
        written = self.targets.texts  # link number -> the URL as written (grows as pages are scanned)
        hosts = {_host(key) for key in (*self.graph.numbers, *self.redirects)}
        landed: dict[int, int | None] = {}

        def target(number: int) -> int | None:
            found = landed.get(number, -1)
            if found == -1:
                url = written[number]
                found = None
                if _host(url) in hosts:
                    end = landing(url_key(url), self.redirects)
                    found = position.get(self.graph.numbers.get(end, -1))
                landed[number] = found
            return found

        def pages_linked(index: int) -> list[int]:
            if numbers[index] in self.gone:  # a page gone links to nothing any more
                return []
            found = (target(number) for number in self._links(captures[numbers[index]]))
            return sorted({page for page in found if page is not None})

        depths = link_depths(_ScannedWhenAsked(len(numbers), pages_linked))
        unfinished = os.path.join(self.directory, UNFINISHED_NAME)
        try:
            with open(unfinished, "xb") as said:
                said.write(b"tse import was writing this directory and did not finish: empty it and import again\n")
            self._write_files(captures, numbers, depths)
            if self.record is not None:
                self._write_record(numbers, depths, written)
            pagedir.mark(self.directory)  # last: tse index refuses a directory without it
            os.unlink(unfinished)
        except KeyboardInterrupt:
            if os.path.exists(unfinished):
                self.warn(f"{self.directory} holds an import that did not finish: empty it and import again")
            raise
        except OSError as error:
            if not os.path.exists(unfinished):
                raise
            said = f"{error.strerror or error}: the import did not finish: empty {self.directory} and import again"
            raise OSError(error.errno, said, error.filename) from None

    def _write_files(self, captures: dict[int, Capture], numbers: list[int], depths: list[int]) -> None:
        """The page files, their notes and ``.tse-gone``."""
        kinds = (CHARSETS, ROBOTS, FOLLOW, TYPES, CANONICAL)
        notes = {kind: PageNotes(self.directory, kind, NOTES_NAME) for kind in kinds}
        try:
            for doc_id, (number, depth) in enumerate(zip(numbers, depths, strict=True), start=1):
                capture = captures[number]
                body = self._body(capture)
                pagedir.write_page(self.directory, doc_id, pagedir.Page(capture.url, depth, body))
                if capture.date is not None:  # a page file's time is when it was saved (tse serve's banner)
                    os.utime(pagedir.page_path(self.directory, doc_id), (capture.date, capture.date))
                for kind, value in self._notes(capture, body):
                    notes[kind].note(capture.url, value)
                self.summary.pages += 1
                self.summary.pdfs += capture.kind == PDF_KIND
        finally:
            for kept in notes.values():
                kept.close()
        # Kept, as an update keeps a gone page's file, so that the docIDs after it stay theirs.
        gone = [doc_id for doc_id, number in enumerate(numbers, start=1) if number in self.gone]
        if gone:
            pagedir.write_gone(self.directory, gone)
        self.summary.gone = len(gone)

    def _body(self, capture: Capture) -> bytes:
        self.spool.seek(capture.offset)
        return self.spool.read(capture.size)

    def _notable(self, capture: Capture) -> bool:
        """Whether the notes of a page (noindex, PDF, charset, canonical URL) can be written: a page at a
        URL too long for a note's line would be indexed as what it is not (a noindex page indexed, a PDF
        read as HTML), so it is skipped, with one line (the crawl keeps URLs to 2,083 characters)."""
        if len(capture.url) * 4 + 64 < MAX_LINE_BYTES and not any(c in capture.url for c in "\t\n\r"):
            return True  # (short enough for any note, whatever its characters' UTF-8: the body is not read)
        unnoted = [
            kind
            for kind, value in self._notes(capture, self._body(capture))
            if note_line(capture.url, value, kind in URL_VALUED) is None
            and note_line("", value, kind in URL_VALUED) is not None  # (the URL, not the value, is the reason)
        ]
        if not unnoted:
            return True
        shown = readable_url(capture.url)
        said = ", ".join(_NOTE_WORDS[kind] for kind in unnoted)
        self.warn(f"{shown}: a URL of {len(capture.url):,} characters, too long for its note ({said}): skipped")
        self.summary.unnoted += 1
        return False

    def _pages(self) -> dict[int, Capture]:
        """URL number -> its page, every revisit resolved (``_resolve_later``)."""
        return {number: capture for number, capture in self.captures.items() if capture is not None}

    def _links(self, capture: Capture) -> list[int]:
        """The links of a page (numbered in ``targets``), scanned from the spool the first time; none
        for a PDF or a nofollow page, whose links a crawl does not follow.  The hrefs of a payload that
        several pages hold (revisits) are scanned once; each page resolves them against its own URL."""
        if capture.links is None:
            found: list[str] = []
            if capture.kind == HTML:
                body = self._body(capture)
                if NOFOLLOW not in _directives(capture, body):
                    # A UTF-16 page's links read as the crawl reads them, in its encoding (its bytes
                    # hold no "<a" the scan finds: its links were lost, a review's find).
                    scanned = utf16_as_utf8(body, page_encoding(b"", capture.http_charset)[0])
                    hrefs = self._shared_hrefs(capture.offset, scanned)
                    try:
                        found = resolved_links(hrefs, capture.url, MAX_PAGE_LINKS)
                    except ValueError:  # a target URI no link can be resolved against
                        found = []
                    # (A link longer than a crawl keeps is no link it follows.)
                    found = [link for link in found if len(link) <= MAX_URL_CHARACTERS]
            capture.links = [self.targets.number(link) for link in found]
        return capture.links

    def _shared_hrefs(self, offset: int, body: bytes) -> PageHrefs:
        """The hrefs of the payload at *offset* in the spool, scanned once for the pages that hold it (but
        past SCANNED_HREF_BYTES kept), and forgotten once its last holder has them."""
        hrefs = self.scanned.get(offset)
        if hrefs is None:
            hrefs = page_hrefs(body)
        left = self.shared_payloads.get(offset, 1) - 1
        if left <= 0:
            self.shared_payloads.pop(offset, None)
            if self.scanned.pop(offset, None) is not None:
                self.scanned_bytes -= _href_bytes(hrefs)
        elif offset in self.scanned:
            self.shared_payloads[offset] = left
        else:
            self.shared_payloads[offset] = left
            size = _href_bytes(hrefs)
            if self.scanned_bytes + size <= SCANNED_HREF_BYTES:
                self.scanned[offset] = hrefs
                self.scanned_bytes += size
        return hrefs

    def _notes(self, capture: Capture, body: bytes) -> list[tuple[str, str]]:
        """The notes of a page, (kind, value), as a crawl notes them (a PDF is never noted nofollow: its
        links are never followed)."""
        url = capture.url
        notes = []
        directives = _directives(capture, body)
        if NOINDEX_DIRECTIVE in directives:
            notes.append((ROBOTS, NOINDEX))
        if capture.links_header:  # (a PDF's too: its Link header is its only way to name one)
            named = named_canonical(capture.links_header, b"", url)
            if named:
                notes.append((CANONICAL, named))
        if capture.kind == PDF_KIND:
            return [*notes, (TYPES, PDF)]
        if NOFOLLOW in directives:
            notes.append((FOLLOW, NOFOLLOW_NOTE))
        if capture.http_charset:
            notes.append((CHARSETS, capture.http_charset))
        return notes

    def _write_record(self, numbers: list[int], depths: list[int], written: list[str]) -> None:
        """The crawl record of the import (``rules/files/crawlrecord.py``): a ``saved`` line a page, at
        the time it was archived, with its links; a ``redirect`` or ``failed`` line for each other
        answer that might have been a page, at one link deeper than the first page naming it.  Its URLs
        have their passwords masked (``user:***@``, ``?password=***``), as every message shows them: a
        record is read, and shown (``tse report``), where an archive's secrets are not to be."""
        lines = []
        deeper: dict[int, int] = {}
        captures = self._pages()
        for doc_id, (number, depth) in enumerate(zip(numbers, depths, strict=True), start=1):
            capture = captures[number]
            links = self._links(capture)
            for target in links:
                deeper[target] = min(deeper.get(target, depth + 1), depth + 1)
            lines.append(
                RequestRecord(
                    url=mask_url(capture.url),
                    outcome="saved",
                    depth=depth,
                    host=urlsplit(capture.url).hostname or "",
                    doc=doc_id,
                    status=200,
                    bytes=capture.size,
                    start=capture.date,
                    end=capture.date,
                    links=tuple(mask_url(written[target]) for target in links[:MAX_LINKS]),
                    more_links=max(0, len(links) - MAX_LINKS),
                )
            )
        for url, status, date in self.not_pages:
            number = self.targets.numbers.get(url)
            lines.append(
                RequestRecord(
                    url=mask_url(url),
                    outcome="redirect" if 300 <= status < 400 else "failed",
                    depth=deeper.get(number, 0) if number is not None else 0,
                    host=urlsplit(url).hostname or "",
                    status=status,
                    start=date,
                    end=date,
                )
            )
        write_atomically(self.record, [format_record(line).encode() for line in lines])


def _revisited(referred: Capture, revisit: _Revisit) -> Capture:
    """The page a revisit gives: the payload it refers to, under the revisit's URL."""
    capture = dataclasses.replace(referred, url=revisit.url, date=_unix_time(revisit.date), links=None)
    if revisit.status == 200:  # its own headers (identical payload, this answer's headers)
        capture.http_charset = revisit.http_charset
        capture.robots = revisit.robots
        capture.links_header = revisit.links_header
        capture.directives = None
    elif revisit.status == 304:  # those of its headers it carries (as the crawl reads a 304: pagenotes)
        if revisit.typed:
            capture.http_charset = revisit.http_charset
            capture.directives = None  # (its robots <meta> is read in that charset)
        if revisit.robots:
            capture.robots = revisit.robots
            capture.directives = None
        if revisit.links_header:
            capture.links_header = revisit.links_header
    return capture


def _said_length(record: Record) -> int:
    """The length a response's Content-Length header gives its body; -1 for none (or no number)."""
    value = (record.header("Content-Length") or "").strip()
    return int(value) if value.isascii() and value.isdigit() else -1


def _robots_kept(record: Record) -> list[str]:
    """A record's X-Robots-Tag values as a page keeps them: the directives they give this program
    (``noindex``, ``nofollow``), as one value; ``all`` for values that give none (a 304's header still
    says its page has none now).  The values themselves may be a MB (a hostile archive's)."""
    values = record.header_values("X-Robots-Tag")
    if not values:
        return []
    return [", ".join(sorted(robots_directives(values, b"", ROBOTS_TOKEN))) or "all"]


def _links_kept(record: Record) -> list[str]:
    """A record's Link values that may name a canonical URL (what a page's notes read of them), to
    MAX_LINK_BYTES in all: later ones are dropped."""
    kept = []
    size = 0
    for value in record.header_values("Link"):
        if "canonical" in value.lower():
            size += len(value)
            if size > MAX_LINK_BYTES:
                break
            kept.append(value)
    return kept


def _href_bytes(hrefs: PageHrefs) -> int:
    """About the memory *hrefs* take: their bytes, and a bytes object's own 33 and a tuple slot's 8."""
    return sum(len(href) + 41 for href in hrefs.hrefs) + len(hrefs.base or b"")


def _directives(capture: Capture, body: bytes) -> frozenset[str]:
    """``noindex`` and ``nofollow`` as the crawl reads them for this page: a PDF's X-Robots-Tag only
    (its bytes are no head to read a <meta> in), an HTML page's header and robots <meta>."""
    if capture.directives is None:
        head = b"" if capture.kind == PDF_KIND else body
        # Read in its HTTP charset, as the crawl reads a page's robots <meta>: a UTF-16 page's (its
        # bytes hold no "<meta" an ASCII pattern finds; its byte order mark is read there).
        encoding = page_encoding(b"", capture.http_charset)[0]
        capture.directives = robots_directives(capture.robots, head, ROBOTS_TOKEN, encoding)
    return capture.directives


def _split(url: str) -> SplitResult | None:
    """*url*'s parts, its port read too; None when ``urlsplit`` refuses it (``http://[e.com/a``)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - read for its ValueError (a port that is no number, or out of range)
    except ValueError:
        return None
    return parts


def _web_url(url: str) -> bool:
    """Whether *url* is one a page may have: http(s), with a host, its parts readable."""
    parts = _split(url)
    return parts is not None and parts.scheme.lower() in ("http", "https") and bool(parts.hostname)


def _host(url: str) -> str:
    """The host (and port) of an http(s) URL, lowercased; "" for another."""
    scheme, _, rest = url.partition("://")
    return rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0].lower() if scheme else ""


def _unix_time(warc_date: str) -> float | None:
    """A WARC-Date (ISO 8601, UTC) as Unix time; None when it is not one."""
    try:
        return datetime.fromisoformat(warc_date.strip().replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def import_archives(
    paths: Iterable[str],
    directory: str,
    *,
    pdf: bool = False,
    record: str | None = None,
    warn: Callable[[str], None] = lambda _: None,
) -> ImportSummary:
    """Import the archives *paths* into the empty page directory *directory*; with *record*, write
    the crawl record of the import there too."""
    check_import_directory(directory)
    paths = check_archives(paths)  # before anything is written
    check_record(record, paths, directory)
    job = ArchiveImport(directory, pdf=pdf, record=record, warn=warn)
    try:
        for path in paths:
            job.read(path)
    except BaseException:
        job.close()
        raise
    return job.write()
