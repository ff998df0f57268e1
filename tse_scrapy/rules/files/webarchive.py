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
  and the crawl's lxml extractor made an import 20 times slower than reading the archive.
"""

from __future__ import annotations

import html
import re
from collections import deque
from collections.abc import Mapping, Sequence

from ..text.pdftext import looks_like_pdf
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
# An <a> or <area> tag's href, and the first <base href>; a tag is looked into for its first 2,000
# bytes only, so that a page of unclosed tags costs linear time.
_HREF = rb"""\s[^>]{0,2000}?\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))"""
_LINK = re.compile(rb"<(?:a|area)" + _HREF, re.I)
_BASE = re.compile(rb"<base" + _HREF, re.I)


def archived_url(target_uri: str | None) -> str:
    """A record's ``WARC-Target-URI`` as a URL: spaces around it and the ``<...>`` of WARC/1.0
    writers (wget among them) removed; "" when the record names none."""
    url = (target_uri or "").strip()
    if url.startswith("<") and url.endswith(">"):
        url = url[1:-1].strip()
    return url


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
    if pdf and looks_like_pdf(first_bytes):
        return PDF
    return HTML if looks_like_html(first_bytes) else None


def crawled_page_kind(content_type: str | None, first_bytes: bytes) -> str | None:
    """``HTML``, ``PDF`` or None (not a page: neither saved nor indexed): what a crawl's 200 answer
    (``--links html``) with this ``Content-Type`` whose body begins with *first_bytes* is as a page.

    Wider than an import's ``page_kind``, as the crawl always was: any text (``text/*``, XML, JSON) is
    a page, which the indexer reads as it reads HTML, and a PDF is one with or without ``--pdf``.
    Media (``image/*``, ``audio/*``, ``video/*``, ``font/*``, ``model/*``, SVG too) never are; any
    other type (``application/octet-stream``, an archive's, ``application/x-httpd-php``) is a page only
    when its first bytes are HTML's, as an import sniffs them, or, untyped, a PDF's.  An answer with
    no ``Content-Type`` at all is sniffed as browsers do (the WHATWG's MIME sniffing): HTML, an XML
    document, a PDF, else text when its first bytes hold none that only binary data holds."""
    kind = media_type(content_type)
    if kind.partition("/")[0] in MEDIA_KINDS:  # (first: image/svg+xml is an image)
        return None
    if kind.startswith("text/") or kind in TEXT_TYPES or kind.endswith(("+xml", "+json")):
        return HTML
    if kind in PDF_TYPES or (kind in UNTYPED and looks_like_pdf(first_bytes)):
        return PDF
    if looks_like_html(first_bytes):
        return HTML
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


def page_links(body: bytes, page_url: str) -> list[str]:
    """The absolute http(s) URLs of the ``<a href>`` and ``<area href>`` of a page's bytes, each once,
    in order, resolved against its first ``<base href>``, fragments cut; links to the page itself and
    ``#...`` links left out."""
    base = _BASE.search(body)
    resolve = LinkResolver(page_url)
    if base is not None:
        found = resolve(_href(base.group(1) or base.group(2) or base.group(3) or b""))
        if found:
            resolve = LinkResolver(found)
    links: dict[str, None] = {}
    # Each href written once is read once: a page names the same few targets many times.
    for raw in dict.fromkeys(double or single or bare for double, single, bare in _LINK.findall(body)):
        href = _href(raw)
        if not href or href[0] == "#":
            continue
        url = resolve(href)
        if url and url != page_url and url.startswith(("http://", "https://")):
            links[url] = None
    return list(links)


def _href(raw: bytes) -> str:
    """An href as HTML reads it: references decoded, C0 controls and spaces stripped from its ends,
    tabs and newlines dropped inside."""
    href = raw.decode("utf-8", "replace")
    if "&" in href:
        href = html.unescape(href)
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
