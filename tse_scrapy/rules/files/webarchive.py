"""Pages from web archives (``tse import``): which records are pages, one page per URL, and depths.

Pure functions over what a WARC record says (its target URI, its HTTP status and headers, its first
bytes) and over the link graph of the pages kept; the reading of archives is ``webarchive/``.

- A page is a ``200`` response whose ``Content-Type`` is HTML (``text/html``,
  ``application/xhtml+xml``), or a PDF with ``--pdf``; with no type, or only ``octet-stream``, its
  first bytes decide (``<!doctype html``, ``<html``, ``%PDF-``), as a browser sniffs them.  A crawl's
  answers are judged by the same sniffing (``crawled_page_kind``), but keep any text as a page.
- Captures of the same URL (after the crawl's normalization) are one page: the last capture's
  bytes, under the docID of the first capture's place (see ``docs/import.md``).
- Depth is the link distance from the archive's first page; a page no link reaches starts a part
  of its own, at depth 0, in archive order (``link_depths``).  The links are read by ``page_links``,
  a regular expression over the page's bytes, not an HTML parser: it reads every page of an archive,
  and the crawl's lxml extractor made an import 20 times slower than reading the archive.  It reads
  the page's markup only (``markup_spans``), as the crawl's parser does: no link in a comment, a
  script or a template's content.
"""

from __future__ import annotations

import functools
import re
import sys
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote

from ..text.pdftext import looks_like_pdf
from ..web.entities import unescape
from ..web.urls import LinkResolver, clean_href, normalize_url

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
PDF_TYPES = frozenset({"application/pdf", "application/x-pdf"})
UNTYPED = frozenset({"", "application/octet-stream", "binary/octet-stream", "application/unknown"})
# Text a crawl keeps as a page besides text/* (and any type ending +xml or +json): crawled_page_kind.
TEXT_TYPES = frozenset({"application/xhtml+xml", "application/xml", "application/json"})
# Media types' top-level kinds: a crawl's answer of one of them is never a page.
MEDIA_KINDS = frozenset({"image", "audio", "video", "font", "model"})
HTML = "html"
PDF = "pdf"
# Redirects followed from a link to the page it lands on; a longer chain is a loop or a trap.
MAX_REDIRECTS = 10
# The starts of an HTML document (the WHATWG's MIME sniffing: each followed by a space or ">").
_SNIFFED = tuple(
    f"<{tag}".encode()
    for tag in [
        "!doctype html",
        "html",
        "head",
        "script",
        "iframe",
        "h1",
        "div",
        "font",
        "table",
        "a",
        "style",
        "title",
        "b",
        "body",
        "br",
        "p",
    ]
)
_TAG_ENDS = b" >\t\n\r\f"
# A byte only binary data holds (the WHATWG's "binary data byte"): text has none in its first bytes.
_BINARY_BYTE = re.compile(rb"[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f]")
_SNIFF_BYTES = 512
# An <a> or <area> tag's href, and the first <base href>: a tag is looked into for its first TAG_WINDOW
# bytes after its name, up to its first ">" (``_tag_hrefs``).  An href longer than MAX_HREF_BYTES is no
# link (a crawl keeps URLs to 2,083 characters: Scrapy's URLLENGTH_LIMIT).
TAG_WINDOW = 2000
MAX_HREF_BYTES = 8192
# Characters a crawl never writes raw in a URL (Scrapy's safe_url_string percent-encodes them): C0
# controls, space, DEL and C1 controls.  An archive's URL may hold them (a hostile one: ESC, BEL).
_UNSAFE_IN_URL = re.compile("[\x00-\x20\x7f-\x9f]")
# What a page's markup stops at (``markup_spans``): a comment (``<!--``, or a bogus one: ``<!``, ``<?``,
# ``</`` not followed by a letter), a raw text element's start tag (HTML's raw text and escapable raw
# text elements, and <plaintext>, which runs to the end: libxml2 reads them so too), a template's
# start or end tag.
_RAW_TEXT = frozenset(
    [b"script", b"style", b"xmp", b"iframe", b"noembed", b"noframes", b"textarea", b"title", b"plaintext"]
)
# (The names' alternatives factored: the expression is tried at every "<" of a page, twice as fast so.)
_INERT_START = re.compile(
    rb"<(?:!--|[!?]|/(?![a-z>])|(?P<name>/?t(?:emplate|itle|extarea)|s(?:cript|tyle)|xmp|iframe"
    rb"|no(?:embed|frames)|plaintext)(?=[\s/>]))",
    re.I,
)
# Where one of them may begin: its first two bytes, as plain classes (a "<" of the page is tried against
# this a few times faster than against _INERT_START's alternatives, which check what it finds).
_INERT_CANDIDATE = re.compile(
    rb"<(?:[!?]|/[^a-zA-Z>]|/[tT][eE]|[tT][eEiI]|[sS][cCtT]|[xX][mM]|[iI][fF]|[nN][oO]|[pP][lL])"
)
_COMMENT_END = re.compile(rb"--!?>")
# Where a tag page_hrefs reads (``<a``, ``<area``, ``<base``, as ``_tag_pattern`` finds them) starts.
_LINK_TAG_START = re.compile(rb"<(?:a|area|base)\s", re.I)
_TAG_START = re.compile(rb"</?[a-z]", re.I)


def archived_url(target_uri: str | None) -> str:
    """A record's ``WARC-Target-URI`` as a URL, as a crawl writes it: spaces around it and the ``<...>``
    of WARC/1.0 writers (wget among them) removed, control characters and spaces inside percent-encoded
    (UTF-8, as ``rules.crawling.progress.shown_url``: ``ESC`` -> ``%1B``, `` `` -> ``%20``), every other
    character as archived; "" when the record names none."""
    url = (target_uri or "").strip()
    if url.startswith("<") and url.endswith(">"):
        url = url[1:-1].strip()
    if _UNSAFE_IN_URL.search(url) is None:
        return url
    return _UNSAFE_IN_URL.sub(lambda found: quote(found.group(), safe="", errors="surrogateescape"), url)


def url_key(url: str) -> str:
    """What makes two URLs one page: the crawl's normalization (any extension), the fragment cut."""
    return normalize_url(url, False) or url.split("#", 1)[0]


def media_type(content_type: str | None) -> str:
    """The media type of a ``Content-Type`` value, lowercased, without its parameters."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def may_be_page(content_type: str | None, pdf: bool) -> bool:
    """Whether a response with this ``Content-Type`` may hold a page: its bytes are worth reading."""
    kind = media_type(content_type)
    return kind in HTML_TYPES or kind in UNTYPED or (pdf and kind in PDF_TYPES)


def page_kind(content_type: str | None, first_bytes: bytes, pdf: bool) -> str | None:
    """``HTML``, ``PDF`` (only when *pdf*) or None: what a 200 response with this ``Content-Type``
    whose payload begins with *first_bytes* is as a page."""
    kind = media_type(content_type)
    if kind in HTML_TYPES:
        return HTML
    if kind in PDF_TYPES:
        return PDF if pdf else None
    if kind not in UNTYPED:
        return None
    if looks_like_html(first_bytes):  # (first: a page about PDFs may name "%PDF-1.7" near its start)
        return HTML
    return PDF if pdf and looks_like_pdf(first_bytes) else None


def crawled_page_kind(content_type: str | None, first_bytes: bytes) -> str | None:
    """``HTML``, ``PDF`` or None (not a page: neither saved nor indexed): what a crawl's 200 answer
    (``--links html``) with this ``Content-Type`` whose body begins with *first_bytes* is as a page.

    Wider than an import's ``page_kind``, as the crawl always was: any text (``text/*``, XML, JSON) is
    a page, which the indexer reads as it reads HTML, and a PDF is one with or without ``--pdf``.
    Media (``image/*``, ``audio/*``, ``video/*``, ``font/*``, ``model/*``, SVG too) never are; any
    other type (``application/octet-stream``, an archive's, ``application/x-httpd-php``) is a page only
    when its first bytes are HTML's, as an import sniffs them, or, untyped and not opening as HTML, a
    PDF's.  An answer with
    no ``Content-Type`` at all is sniffed as browsers do (the WHATWG's MIME sniffing): HTML, an XML
    document, a PDF, else text when its first bytes hold none that only binary data holds."""
    kind = media_type(content_type)
    if kind.partition("/")[0] in MEDIA_KINDS:  # (first: image/svg+xml is an image)
        return None
    if kind.startswith("text/") or kind in TEXT_TYPES or kind.endswith(("+xml", "+json")):
        return HTML
    if kind in PDF_TYPES:
        return PDF
    # An untyped document that opens as HTML is HTML, whatever it says further on: a page about PDFs
    # naming "%PDF-1.7" in its first 1,024 bytes was taken for a PDF (and gave no text).
    if looks_like_html(first_bytes):
        return HTML
    if kind in UNTYPED and looks_like_pdf(first_bytes):
        return PDF
    if kind == "" and (_without_mark(first_bytes).startswith(b"<?xml") or not _BINARY_BYTE.search(first_bytes)):
        return HTML
    return None


def looks_like_html(first_bytes: bytes) -> bool:
    """Whether a payload beginning with *first_bytes* opens as an HTML document does (a byte order
    mark, spaces and comments before ``<!doctype html``, ``<html``, ``<head``, ``<body`` or ``<title``)."""
    head = _without_mark(first_bytes).lower()
    while head.startswith(b"<!--"):  # comments before the document
        end = head.find(b"-->")
        if end < 0:
            return False
        head = head[end + 3 :].lstrip(b" \t\r\n\f")
    return any(head.startswith(start) and head[len(start) : len(start) + 1] in _TAG_ENDS for start in _SNIFFED)


def _without_mark(first_bytes: bytes) -> bytes:
    """The first bytes of a payload, without a UTF-8 byte order mark and the spaces before its start."""
    return first_bytes[:_SNIFF_BYTES].lstrip(b"\xef\xbb\xbf \t\r\n\f")


@dataclass(frozen=True)
class PageHrefs:
    """What a page's bytes say of its links, before they are resolved against its URL: the value of
    its first ``<base href>`` (None without one), and those of its ``<a href>`` and ``<area href>``,
    each once, in order."""

    base: bytes | None
    hrefs: tuple[bytes, ...]


def page_links(body: bytes, page_url: str, limit: int | None = None) -> list[str]:
    """The absolute http(s) URLs of the ``<a href>`` and ``<area href>`` of a page's bytes, each once,
    in order, resolved against its first ``<base href>``, fragments cut; links to the page itself and
    ``#...`` links left out; the first *limit* only."""
    return resolved_links(page_hrefs(body), page_url, limit)


def page_hrefs(body: bytes) -> PageHrefs:
    """The hrefs of a page's bytes (``PageHrefs``), read in time linear in its size (``_tag_hrefs``),
    in its markup only (``markup_spans``): not in a comment, a script, a ``<template>``'s content."""
    base = None
    base_pattern = _tag_pattern(b"base", TAG_WINDOW)
    hrefs: dict[bytes, None] = {}  # each href written once is kept once: a page names the same few many times
    # A span is read only when one of the tags starts in it (most of a hostile page's spans hold none:
    # 700,000 in 4 MB of "<!-->x", each read by two expressions, took 2.5 s), and the page's spans no
    # further than its last one: a page without them is not split at all.
    tag = _LINK_TAG_START.search(body)
    if tag is None:
        return PageHrefs(None, ())
    for start, end in markup_spans(body):  # (not listed: a page of 4 MB of "<!-->" has 800,000)
        if tag.start() < start and (tag := _LINK_TAG_START.search(body, start)) is None:
            break
        if tag.start() >= end:
            continue
        if base is None and (first_base := base_pattern.search(body, start, end)) is not None:
            base = first_base.group(first_base.lastindex or 0)
        hrefs.update(dict.fromkeys(_tag_hrefs(body, b"a|area", start, end)))
        if (tag := _LINK_TAG_START.search(body, end)) is None:
            break
    return PageHrefs(base, tuple(hrefs))


def markup_spans(body: bytes) -> Iterator[tuple[int, int]]:
    """The parts of a page's bytes (start, end offsets, in order) that an HTML parser reads as the page's
    own tags: what lies outside comments (``<!-- -->``, and the bogus ones ``<!...>``, ``<?...>``,
    ``</1...>``), the text of ``<script>``, ``<style>``, ``<textarea>``, ``<title>`` and the other raw
    text elements, and a ``<template>``'s content (inert: a fragment of its own, nested templates
    counted), as HTML's tokenizer and, on ordinary markup, the crawl's parser
    (``rules.web.links.extract_links_html``) read them: a link in them is none (docs/import.md names where
    they still differ).  A ``<!--`` inside a tag (an attribute's value) begins nothing.  One pass, each
    byte looked at a bounded number of times."""
    depth = 0  # templates open
    kept = 0  # where the page's markup resumed
    position = 0
    while (candidate := _INERT_CANDIDATE.search(body, position)) is not None:
        start = candidate.start()
        found = _INERT_START.match(body, start)
        if found is None:  # (<strong ..., <time ...: a tag, whose attributes begin nothing; past its end)
            closed = body.find(b">", start)
            if closed < 0:
                break
            position = closed + 1
            continue
        opened = body.rfind(b"<", position, start)
        if opened > body.rfind(b">", position, start) and _TAG_START.match(body, opened):
            closed = body.find(b">", start)  # in a tag: go on past its end
            if closed < 0:
                break
            position = closed + 1
            continue
        end = _inert_end(body, found)
        name = (found.group("name") or b"").lower()
        if name == b"template":
            if depth == 0 and kept < start:
                yield kept, start
            depth += 1
        elif name == b"/template":
            if depth:  # (a stray end tag is only a tag)
                depth -= 1
                kept = end
        elif depth == 0:
            if kept < start:
                yield kept, start
            kept = end
        position = end
    if depth == 0 and kept < len(body):
        yield kept, len(body)


def _inert_end(body: bytes, found: re.Match[bytes]) -> int:
    """Where what *found* (``_INERT_START``) begins ends: a comment past its ``-->``, a raw text element
    past its end tag, a tag (a template's) past its ``>``; the page's end when it does not end."""
    name = found.group("name")
    if name is None:  # a comment
        if found.group().endswith(b"--"):
            if body.startswith((b">", b"->"), found.end()):  # <!--> and <!---> are empty comments
                return body.index(b">", found.end()) + 1
            closed = _COMMENT_END.search(body, found.end())
            return len(body) if closed is None else closed.end()
        closed = body.find(b">", found.end())  # a bogus comment: to its first ">"
        return len(body) if closed < 0 else closed + 1
    tag_end = body.find(b">", found.end())
    if tag_end < 0:
        return len(body)
    name = name.lower()
    if name in _RAW_TEXT:
        if name == b"plaintext":
            return len(body)
        closing = _end_tag_pattern(name).search(body, tag_end + 1)
        if closing is None:
            return len(body)
        tag_end = body.find(b">", closing.end())
        if tag_end < 0:
            return len(body)
    return tag_end + 1


@functools.lru_cache(maxsize=16)
def _end_tag_pattern(name: bytes) -> re.Pattern[bytes]:
    return re.compile(rb"</%s(?=[\s/>])" % name, re.I)


def resolved_links(found: PageHrefs, page_url: str, limit: int | None = None) -> list[str]:
    """The links of ``page_links`` from a page's hrefs (``page_hrefs``), for the page at *page_url*: an
    href's URL depends on the page's, so that the hrefs of one payload serve each URL it is archived at."""
    resolve = LinkResolver(page_url)
    if found.base is not None:
        base = resolve(_href(found.base))
        if base:
            resolve = LinkResolver(base)
    links: dict[str, None] = {}
    for raw in found.hrefs:
        if limit is not None and len(links) >= limit:
            break
        if len(raw) > MAX_HREF_BYTES:
            continue
        href = _href(raw)
        if not href or href[0] == "#":
            continue
        url = resolve(href)
        if url and url != page_url and url.startswith(("http://", "https://")):
            links[url] = None
    return list(links)


def _tag_hrefs(
    body: bytes, tag: bytes, start: int = 0, end: int = sys.maxsize, window: int = TAG_WINDOW
) -> Iterator[bytes]:
    """The href values of the tags *tag* (``a|area``) starts, one after another, in *body*'s bytes from
    *start* to *end*, as the regular expression
    ``<(?:a|area)\\s[^>]{0,2000}?\\bhref\\s*=\\s*(?:"([^"]*)"|'([^']*)'|([^\\s"'>]+))`` finds them (its
    ``findall``), in time linear in the page's size (``_tag_pattern``)."""
    for double, single, bare in _tag_pattern(tag, window).findall(body, start, end):
        yield double or single or bare


@functools.lru_cache(maxsize=8)
def _tag_pattern(tag: bytes, window: int) -> re.Pattern[bytes]:
    """A tag *tag* starts and its first href, within *window* bytes and before its ``>``.

    The bytes before the href are looked into only up to the next tag *tag* starts: tried at each
    tag's start, the expression without it read up to 2,000 bytes past it, and a quoted value to its
    closing quote, so that each byte of a page of unclosed ``<a `` was read by the 666 tags before it
    (an hour for 32 MB).  With it, a byte is in one tag's reach only.  The links found are the same:
    where the first tag's href lies past the second tag's start, the first tag finds none, and the
    second finds that same href (the first viable one after it, within its own 2,000 bytes)."""
    start = rb"<(?:%s)\s" % tag
    before = rb"(?:(?!%s)[^>]){0,%d}?" % (start, window)
    return re.compile(start + before + rb"""\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""", re.I)


def _href(raw: bytes) -> str:
    """An href as HTML reads it: a NUL byte U+FFFD, references decoded, C0 controls and spaces
    stripped from its ends, tabs and newlines dropped inside."""
    href = raw.decode("utf-8", "replace").replace("\0", "\ufffd")
    if "&" in href:
        href = unescape(href)
    return clean_href(href)


def landing(key: str, redirects: Mapping[str, str]) -> str:
    """Where a link to *key* lands after the archive's redirects (at most MAX_REDIRECTS of them)."""
    for _ in range(MAX_REDIRECTS):
        target = redirects.get(key)
        if target is None or target == key:
            break
        key = target
    return key


def link_depths(links: Sequence[Sequence[int]]) -> list[int]:
    """The depth of each page, given the pages each one links to (*links*, by index into the
    pages, in docID order): the link distance from page 0; a page no earlier part reaches starts a
    part of its own at depth 0, the first of them in order first.  Once every page has its depth,
    no more of *links* is read: it may be a lazy sequence, whose pages are scanned when asked for."""
    depths = [-1] * len(links)
    unreached = len(links)
    for root in range(len(links)):
        if depths[root] >= 0:
            continue
        depths[root] = 0
        unreached -= 1
        queue = deque([root])
        while queue and unreached:
            page = queue.popleft()
            for target in links[page]:
                if depths[target] < 0:
                    depths[target] = depths[page] + 1
                    unreached -= 1
                    queue.append(target)
    return depths
