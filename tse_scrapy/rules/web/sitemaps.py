"""Sitemaps: the ``Sitemap:`` lines of a robots.txt, and the sitemap files they name.

Every sitemap is hostile until proven otherwise, so reading one is bounded:

* A body is gzip when it starts with the gzip magic bytes (``1f 8b``), whatever
  its URL says.  It is inflated a chunk at a time and never past *max_bytes*
  (``MAX_SITEMAP_BYTES``, sitemaps.org's 50 MB), so a gzip bomb costs at most
  that much inflating and a chunk of memory.  A body over the bound, compressed
  or not, is not a sitemap: it gives no entries (cut ``"too large"``).  So does
  a broken or truncated gzip stream (cut ``"bad gzip"``), even when what was
  inflated before the break parsed: its end, and so its checksum, never came.
  Gzip members one after another are one stream, as in ``gzip``; bytes after
  the last member are ignored.  As gzip is read as it inflates, the first bound
  met ends the reading: a stream past *max_urls* entries ends as ``"too many
  URLs"`` before its size or its end is known.  UTF-16 XML is read when it
  starts with its byte order mark; everything else is UTF-8 or says its
  encoding in its XML declaration.
* What starts with ``<`` (after whitespace and a byte order mark) is XML: a
  ``<urlset>`` of pages or a ``<sitemapindex>`` of child sitemaps, in any
  namespace or none (sitemaps.org's 0.9, Google's old 0.84, a prefix such as
  ``<sm:urlset>``).  Its ``<url>``/``<sitemap>`` elements are the root's
  children in the root's namespace; each one's first ``<loc>`` and
  ``<lastmod>`` children (same namespace) are its URL and date, so the
  ``<image:loc>`` of an extension is never a page.  The XML is read by a pull
  parser that never loads an external DTD, never reads an external entity and
  never touches the network; an entity the document declares itself may be
  expanded by libxml2, within its amplification bound (a billion-laughs
  document stops with an error), and a ``<loc>`` left holding an entity
  reference is skipped.  Elements are
  dropped once read, and reading stops at the first entry past *max_urls*
  (cut ``"too many URLs"``, the first *max_urls* kept).  XML that breaks after
  its root was read keeps the entries read before the break (cut ``"bad
  XML"``); a root that is neither ``urlset`` nor ``sitemapindex`` (an HTML
  page, an RSS feed) is ``"not a sitemap"``, and XML broken before its root is
  ``"bad XML"``, both of kind ``"invalid"``.  Each element costs about a
  microsecond, so the worst file of *max_bytes* (tiny empty elements) costs
  seconds of parsing, never more memory.
* Anything else is a plain-text sitemap: UTF-8, one absolute http(s) URL a
  line; other lines, and lines that are not valid UTF-8, are skipped.  A text
  with no URL at all (an empty body, binary junk) is ``"not a sitemap"``.

A ``<loc>`` (or a text line) is stripped of the whitespace around it and
skipped when empty, longer than ``MAX_LOC_LENGTH``, holding whitespace or a
control character, or not an http(s) URL with a host.  A relative ``<loc>``
(sitemaps.org says they must be absolute; one without a scheme: ``http:x``
is no relative URL here) is resolved against the sitemap's own URL.  Entries
keep their document order and their duplicates: the frontier removes
duplicates, and the caller decides which hosts a sitemap may name.  A
``<lastmod>`` is a W3C datetime, normalized to UTC (``parse_lastmod``); an
invalid one is ``None``, its entry kept.

Whenever the entries are discarded (``"too large"``, ``"bad gzip"``, ``"not a
sitemap"``) the kind is ``"invalid"``.  Nothing here raises on any input.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from urllib.parse import urljoin, urlsplit

from lxml import etree

from .urls import normalize_url

MAX_SITEMAP_URLS = 50_000  # sitemaps.org: per file
MAX_SITEMAP_BYTES = 50 * 1024 * 1024  # sitemaps.org: 50 MB uncompressed per file
MAX_SITEMAP_DEPTH = 3  # index -> index -> ... nesting bound (robots/seed level is 0)
# A longer <loc> is skipped: sitemaps.org's bound ("less than 2,048 characters").  At 8,192, 20 gzipped
# sitemaps of 2.2 MB in all made 120,000 URLs of 8,000 characters, and 3 GB of crawl state (a tester's).
MAX_LOC_LENGTH = 2047

URLSET, SITEMAPINDEX, TEXT, INVALID = "urlset", "sitemapindex", "text", "invalid"
TOO_LARGE, TOO_MANY, NOT_A_SITEMAP, BAD_GZIP, BAD_XML = (
    "too large",
    "too many URLs",
    "not a sitemap",
    "bad gzip",
    "bad XML",
)

_ENTRY = {URLSET: "url", SITEMAPINDEX: "sitemap"}
_GZIP_MAGIC = b"\x1f\x8b"
_UTF8_BOM = b"\xef\xbb\xbf"
_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
_CHUNK = 64 * 1024  # bytes handed to the parser (and inflated) at a time
_GZIP_INPUT = 16 * 1024  # compressed bytes given to zlib at a time: its leftover copies stay small
# A text line longer than this cannot hold a URL of MAX_LOC_LENGTH characters (4 bytes each at most,
# plus room for whitespace around it): it is skipped without being kept whole.
_MAX_LINE_BYTES = 4 * MAX_LOC_LENGTH + 1024
_LINE_END = re.compile(rb"\r\n?|\n")
# re's \s is str.isspace(): Unicode spaces too.  C0 and C1 controls are never in a URL.
_NOT_IN_URL = re.compile(r"[\s\x00-\x1f\x7f-\x9f]")
_ROBOTS_LINE_END = re.compile(r"\r\n?|\n")
# "site-map" too, as Google's robots.txt parser accepts it.
_ROBOTS_SITEMAP = re.compile(r"[ \t]*site-?map[ \t]*:(.*)", re.I)
# A lastmod longer than this is not a date (a fraction of 40 digits is no real date either).
_MAX_LASTMOD_LENGTH = 64
_W3C_DATETIME = re.compile(
    r"(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-]\d{2}:\d{2}))?)?)?", re.ASCII
)


@dataclass(frozen=True, slots=True)
class SitemapEntry:
    """A page (of a urlset or text sitemap) or a child sitemap (of a sitemap index)."""

    loc: str  # absolute http(s) URL, whitespace stripped, entities decoded
    lastmod: str | None  # "YYYY-MM-DDTHH:MM:SSZ" (UTC), or None if absent or invalid


@dataclass(frozen=True, slots=True)
class Sitemap:
    """What one sitemap file held, and why reading it stopped early, if it did."""

    kind: str  # "urlset", "sitemapindex", "text" or "invalid"
    entries: tuple[SitemapEntry, ...]  # in document order, the first max_urls only
    cut: str | None  # None, or "too large", "too many URLs", "not a sitemap", "bad gzip", "bad XML"


class _Cut(Exception):
    """Reading stops: the body is not trusted (too large, bad gzip)."""


# An HTML page's start: its byte order mark, white space and comments, then a doctype or an <html> tag.
# (Possessive: tried again with each comment running on to a later "-->", 40 comments before no tag took
# 2^40 steps.)
_HTML_START = re.compile(rb"(?:\xef\xbb\xbf)?(?:\s|<!--.*?-->)*+<(?:!doctype\s+html|html)[\s>]", re.I | re.S)


def is_html_page(body: bytes) -> bool:
    """Whether *body* starts as an HTML page does, which no sitemap does (an XML sitemap starts with its
    declaration or root element, a gzipped one with gzip's magic): a site's "not found" page answered
    with a 200 (a soft 404) where a sitemap was looked for.  Only the first 4 KB are read."""
    return _HTML_START.match(body[:4096]) is not None


def sitemap_key(url: str) -> str:
    """The file a sitemap's *url* names, one key for each way of writing it: normalized as the crawl
    normalizes a URL (fragment dropped, scheme and host in lower case, dot segments removed, repeated
    slashes collapsed), whatever its extension."""
    return normalize_url(url, tse_extensions=False) or url.split("#", 1)[0]


def sitemap_urls_in_robots(robots_txt: bytes) -> list[str]:
    """The `Sitemap:` lines of a robots.txt (any case, anywhere in the file, not tied to a group), in order,
    duplicates dropped; only absolute http(s) URLs."""
    text = robots_txt.decode("utf-8", "replace").removeprefix("\ufeff")
    found: dict[str, None] = {}  # a dict keeps the order
    for line in _ROBOTS_LINE_END.split(text):
        # "#" starts a comment anywhere on a line, as in every robots.txt parser.
        match = _ROBOTS_SITEMAP.match(line.split("#", 1)[0])
        if match:
            url = _web_url(match.group(1))
            if url is not None and "\ufffd" not in url:  # not UTF-8: the URL is not known
                found.setdefault(url)
    return list(found)


def read_sitemap(
    body: bytes, url: str = "", *, max_bytes: int = MAX_SITEMAP_BYTES, max_urls: int = MAX_SITEMAP_URLS
) -> Sitemap:
    """Parse one fetched sitemap file (gzip, XML urlset or sitemapindex, or plain text) within
    *max_bytes* uncompressed and *max_urls* entries; *url*, the sitemap's own, resolves relative
    ``<loc>`` values."""
    body = bytes(body)
    if body.startswith(_GZIP_MAGIC):
        chunks: Iterator[bytes] = _gunzipped(body, max_bytes)
    elif len(body) > max_bytes:
        return Sitemap(INVALID, (), TOO_LARGE)
    else:
        chunks = (body[start : start + _CHUNK] for start in range(0, len(body), _CHUNK))
    try:
        first = _content_start(chunks)
        if first is None:
            return Sitemap(INVALID, (), NOT_A_SITEMAP)
        if first.startswith((b"<", *_UTF16_BOMS)):
            return _read_xml(first, chunks, url, max_urls)
        return _read_text(first, chunks, max_urls)
    except _Cut as cut:  # raised by the inflater, whichever reader was pulling from it
        return Sitemap(INVALID, (), str(cut))


def parse_lastmod(text: str) -> str | None:
    """W3C datetime (YYYY, YYYY-MM, YYYY-MM-DD, YYYY-MM-DDThh:mmTZD, with seconds, with fractions,
    Z or +hh:mm) -> "YYYY-MM-DDTHH:MM:SSZ" in UTC; date-only values are midnight UTC; anything else None."""
    if len(text) > _MAX_LASTMOD_LENGTH:
        return None
    match = _W3C_DATETIME.fullmatch(text.strip())
    if not match:
        return None
    year, month, day, hour, minute, second, zone = match.groups()
    try:
        if zone is None:  # a date alone (the regex asks a zone of every time): its midnight, UTC
            moment = datetime(int(year), int(month or 1), int(day or 1), tzinfo=UTC)
        else:
            offset = timedelta(0)
            if zone != "Z":
                hours, minutes = int(zone[1:3]), int(zone[4:6])
                if hours > 23 or minutes > 59:
                    return None
                offset = timedelta(hours=hours, minutes=minutes) * (-1 if zone[0] == "-" else 1)
            local = datetime(
                int(year), int(month), int(day), int(hour), int(minute), int(second or 0), tzinfo=timezone(offset)
            )
            moment = local.astimezone(UTC)
    except (ValueError, OverflowError):  # 2024-13-01, 25:00, or out of datetime's years once in UTC
        return None
    # Not strftime: its %Y does not pad years below 1000 on every platform.
    return (
        f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}"
        f"T{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}Z"
    )


def _gunzipped(body: bytes, max_bytes: int) -> Iterator[bytes]:
    """The inflated bytes of a gzip *body*, a chunk at a time; raises _Cut past *max_bytes*,
    or when the stream is broken or ends early."""
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    pending = b""  # compressed bytes given to zlib but not yet inflated
    position = 0
    total = 0
    while True:
        if not pending:
            if position >= len(body):
                break
            pending = body[position : position + _GZIP_INPUT]
            position += _GZIP_INPUT
        try:
            # max_length: a bomb never inflates more than a chunk at a time.
            inflated = inflater.decompress(pending, _CHUNK)
        except zlib.error:
            raise _Cut(BAD_GZIP) from None
        pending = inflater.unconsumed_tail
        if inflated:
            total += len(inflated)
            if total > max_bytes:
                raise _Cut(TOO_LARGE)
            yield inflated
        if inflater.eof:
            rest = inflater.unused_data + body[position : position + 2]
            if not rest.startswith(_GZIP_MAGIC):
                return  # the end, or bytes after the last member: ignored
            pending = inflater.unused_data
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)  # another member
    if not inflater.eof:
        raise _Cut(BAD_GZIP)


def _content_start(chunks: Iterator[bytes]) -> bytes | None:
    """The first chunk from its first byte that is not whitespace (nor a UTF-8 byte order mark
    at the start), or None when there is none."""
    first = True
    for chunk in chunks:
        if first:
            chunk = chunk.removeprefix(_UTF8_BOM)
            first = False
        chunk = chunk.lstrip(b" \t\r\n")
        if chunk:
            return chunk
    return None


def _read_xml(first: bytes, chunks: Iterable[bytes], url: str, max_urls: int) -> Sitemap:
    parser = etree.XMLPullParser(
        events=("start", "end"),
        resolve_entities=False,  # no external entity is read, no internal one expanded
        no_network=True,
        load_dtd=False,
        huge_tree=False,  # libxml2's limits on depth and text sizes stay on
        remove_comments=True,
        remove_pis=True,
    )
    reader = _XmlReader(url, max_urls)
    try:
        for chunk in _prepended(first, chunks):
            parser.feed(chunk)
            stop = reader.take(parser.read_events())
            if stop:
                return reader.sitemap(stop)
        parser.close()
    except etree.LxmlError:  # XMLSyntaxError, or any other refusal of libxml2's
        # The events before the break are still there: the entries they close are kept.
        stop = reader.take(parser.read_events())
        return reader.sitemap(stop or BAD_XML)
    return reader.sitemap(reader.take(parser.read_events()))


def _prepended(first: bytes, chunks: Iterable[bytes]) -> Iterator[bytes]:
    yield first
    yield from chunks


class _XmlReader:
    """The entries of a sitemap's XML, from its parser's events."""

    def __init__(self, url: str, max_urls: int) -> None:
        self.url = url
        self.max_urls = max_urls
        self.kind: str | None = None
        self.entries: list[SitemapEntry] = []
        self.depth = 0
        self.names: tuple[str, str, str] = ("", "", "")  # the entry, <loc> and <lastmod> tags
        self.kept: set[str] = set()  # the tags of the current entry's children kept (its first loc, lastmod)
        self.spoiled: set[str] = set()  # tags of its children that held an element (not text)
        self.nested = False  # the current child of the entry holds an element

    def take(self, events: Iterable[tuple[str, etree._Element]]) -> str | None:
        """Read *events*; the reason to stop reading, if there is one."""
        for event, element in events:
            if event == "start":
                self.depth += 1
                if self.depth == 2:
                    self.kept, self.spoiled = set(), set()
                elif self.depth == 3:
                    self.nested = False
                if self.depth == 1:
                    name = etree.QName(element)
                    if name.localname not in _ENTRY:
                        return NOT_A_SITEMAP
                    self.kind = name.localname
                    prefix = "" if name.namespace is None else "{" + name.namespace + "}"
                    self.names = (prefix + _ENTRY[self.kind], prefix + "loc", prefix + "lastmod")
                continue
            if self.depth >= 3:
                # Within an entry only its first <loc> and <lastmod> are kept: every other element is
                # dropped as it ends, so that an entry of millions of elements holds no memory.
                self._child_ended(element)
                self.depth -= 1
                continue
            if self.depth == 2:
                entry = self._entry(element) if element.tag == self.names[0] else None
                # Read: dropped, with what came before it, so the tree stays one entry deep.
                element.clear(keep_tail=False)
                while element.getprevious() is not None:
                    del element.getparent()[0]
                if entry is not None:
                    if len(self.entries) >= self.max_urls:
                        return TOO_MANY
                    self.entries.append(entry)
            self.depth -= 1
        return None

    def _child_ended(self, element: etree._Element) -> None:
        if self.depth > 3:
            self.nested = True  # its depth-3 ancestor holds more than text
        elif element.tag in self.names[1:] and element.tag not in self.kept:
            self.kept.add(element.tag)
            if not self.nested:
                return
            self.spoiled.add(element.tag)
        element.clear(keep_tail=False)
        parent = element.getparent()
        if parent is not None:
            parent.remove(element)

    def _entry(self, element: etree._Element) -> SitemapEntry | None:
        _, loc_tag, lastmod_tag = self.names
        if loc_tag in self.spoiled:
            return None  # its <loc> held an element: no URL
        loc = lastmod = None
        if lastmod_tag in self.spoiled:
            lastmod = ""
        for child in element:
            if child.tag == loc_tag and loc is None:
                loc = _text(child)
                if loc is None:
                    return None
            elif child.tag == lastmod_tag and lastmod is None:
                lastmod = _text(child) or ""
        if loc is None:
            return None
        page = _web_url(loc, self.url)
        return None if page is None else SitemapEntry(page, None if lastmod is None else parse_lastmod(lastmod))

    def sitemap(self, cut: str | None) -> Sitemap:
        if self.kind is None:
            return Sitemap(INVALID, (), cut or NOT_A_SITEMAP)
        return Sitemap(self.kind, tuple(self.entries), cut)


def _text(element: etree._Element) -> str | None:
    """An element's text, or None when it holds more than text: an element, or an entity reference
    left unexpanded."""
    if len(element):
        return None
    return element.text or ""


def _read_text(first: bytes, chunks: Iterable[bytes], max_urls: int) -> Sitemap:
    entries: list[SitemapEntry] = []
    partial = b""  # the start of a line whose end has not come yet
    overlong = False  # the line being read is too long: skipped up to its end
    for chunk in _prepended(first, chunks):
        lines = _LINE_END.split(partial + chunk)
        partial = lines.pop()
        for line in lines:
            if overlong:
                overlong = False
                continue
            url = _text_line_url(line)
            if url is not None:
                if len(entries) >= max_urls:
                    return Sitemap(TEXT, tuple(entries), TOO_MANY)
                entries.append(SitemapEntry(url, None))
        if len(partial) > _MAX_LINE_BYTES:
            partial, overlong = b"", True
    # A CR at the end of a chunk may be the start of a CRLF: an empty line between them is skipped anyway.
    url = None if overlong else _text_line_url(partial)
    if url is not None:
        if len(entries) >= max_urls:
            return Sitemap(TEXT, tuple(entries), TOO_MANY)
        entries.append(SitemapEntry(url, None))
    if not entries:
        return Sitemap(INVALID, (), NOT_A_SITEMAP)
    return Sitemap(TEXT, tuple(entries), None)


def _text_line_url(line: bytes) -> str | None:
    if len(line) > _MAX_LINE_BYTES:
        return None
    text = line.decode("utf-8", "replace")
    return None if "\ufffd" in text else _web_url(text)


def _web_url(text: str, base: str = "") -> str | None:
    """*text* stripped, when it is an absolute http(s) URL (or one relative to *base*) fit to fetch."""
    url = text.strip()
    if not url or len(url) > MAX_LOC_LENGTH or _NOT_IN_URL.search(url):
        return None
    if _is_web(url):
        return url  # as written: urljoin would rewrite it ("http://h/?" loses its "?")
    try:
        if not base or urlsplit(url).scheme:
            return None  # a URL with a scheme is not relative, even "http:x" (urljoin would make it one)
        url = urljoin(base, url)
    except ValueError:  # a base or URL such as "http://[" that urllib cannot split
        return None
    if len(url) > MAX_LOC_LENGTH or _NOT_IN_URL.search(url) or not _is_web(url):
        return None
    return url


def _is_web(url: str) -> bool:
    try:
        parts = urlsplit(url)
        return parts.scheme in ("http", "https") and bool(parts.hostname)
    except ValueError:
        return False
