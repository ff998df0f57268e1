"""Pages from web archives (``tse import``): which records are pages, one page per URL, and depths.

Pure functions over what a WARC record says (its target URI, its HTTP status and headers, its first
bytes) and over the link graph of the pages kept; the reading of archives is ``webarchive/``.

- A page is a ``200`` response whose ``Content-Type`` is HTML (``text/html``,
  ``application/xhtml+xml``), or a PDF with ``--pdf``; with no type, or only ``octet-stream``, its
  first bytes decide (``<!doctype html``, ``<html``, ``%PDF-``), as a browser sniffs them.
- Captures of the same URL (after the crawl's normalization) are one page: the last capture's
  bytes, under the docID of the first capture's place (see ``docs/import.md``).
- Depth is the link distance from the archive's first page; a page no link reaches starts a part
  of its own, at depth 0, in archive order (``link_depths``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence

from .pdftext import looks_like_pdf
from .urls import normalize_url

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
PDF_TYPES = frozenset({"application/pdf", "application/x-pdf"})
UNTYPED = frozenset({"", "application/octet-stream", "binary/octet-stream", "application/unknown"})
HTML = "html"
PDF = "pdf"
# Redirects followed from a link to the page it lands on; a longer chain is a loop or a trap.
MAX_REDIRECTS = 10
_SNIFFED = (b"<!doctype html", b"<html", b"<head", b"<body", b"<title")
_SNIFF_BYTES = 512


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
    head = first_bytes[:_SNIFF_BYTES].lstrip(b"\xef\xbb\xbf \t\r\n\f").lower()
    while head.startswith(b"<!--"):  # comments before the document
        end = head.find(b"-->")
        if end < 0:
            return None
        head = head[end + 3 :].lstrip(b" \t\r\n\f")
    return HTML if head.startswith(_SNIFFED) else None


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
    part of its own at depth 0, the first of them in order first."""
    depths = [-1] * len(links)
    for root in range(len(links)):
        if depths[root] >= 0:
            continue
        depths[root] = 0
        queue = deque([root])
        while queue:
            page = queue.popleft()
            for target in links[page]:
                if depths[target] < 0:
                    depths[target] = depths[page] + 1
                    queue.append(target)
    return depths
