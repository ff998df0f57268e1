"""Link extraction: pure functions from (page bytes, page URL) to absolute URLs.

``extract_links_html`` is the standards-based extractor (``links=html``);
``extract_links_tse`` reproduces the reference C scanner (``links=tse``),
quirks included, so that reference crawls can be reproduced byte for byte.
Neither normalizes nor filters by prefix: that is ``urls``' job.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from urllib.parse import urljoin, urlsplit

import lxml.html
from lxml import etree
from w3lib.encoding import html_to_unicode

from .urls import backslashes_as_slashes

_FOLLOWED_SCHEMES = {"http", "https"}
# HTML strips leading/trailing ASCII whitespace from URLs and drops tabs and
# newlines inside them (WHATWG URL parsing).
_URL_WHITESPACE = re.compile(r"[\t\n\r]")
_C_WHITESPACE = b" \t\n\v\f\r"
_C_SCHEME_END = re.compile(rb"[:/?#]")
_COLON = ord(":")
_UTF8_PARSER = lxml.html.HTMLParser(encoding="utf-8")
# libxml2 ends a page's tree where its elements nest 256 deep (unclosed <font>s of legacy pages do; a
# browser goes on), and every link after that was lost, unsaid.  Such a page is read again as its
# anchors alone: every other tag dropped, and comments, scripts and styles whole (each to its end, or
# the page's: a match never fails once begun, which keeps it linear).
_TOO_DEEP = "Excessive depth"
_ANCHORS_ALONE = re.compile(
    rb"<!--.*?(?:-->|\Z)|<(script|style)(?=[\s/>])(?:[^<]+|<(?!/\1))*(?:</\1[^>]*(?:>|\Z)|\Z)"
    rb"|<(?!/?(?:a|area|base|template)(?=[\s/>]))[^>]*(?:>|\Z)",
    re.I | re.S,
)


def extract_links_html(body: bytes, page_url: str, encoding: str | None = None) -> list[str]:
    """The href of every ``<a>`` and ``<area>``, in document order, made absolute.

    Resolved against ``<base href>`` when there is one, a ``\\`` before the query read as ``/`` (WHATWG URL),
    fragment cut off;
    ``#...`` links and schemes other than http/https are skipped.  A ``<template>``'s content is inert
    (a fragment of its own, not the page's, as a browser reads it): a ``<base>`` or a link in it is none.
    *encoding*: the Python codec the page is read with (``page_text``).
    """
    text = page_text(body, encoding)
    # Parse UTF-8 bytes rather than str: lxml refuses str holding an XML
    # encoding declaration, and NUL bytes: each is U+FFFD, as HTML's tokenizer reads
    # it in a tag (an href's "a\0b" is a browser's a%EF%BF%BDb, not "ab": another page).
    data = text.replace("\0", "\ufffd").encode("utf-8", "surrogatepass")
    if not data.strip():
        return []
    try:
        root = lxml.html.document_fromstring(data, parser=_UTF8_PARSER)
        if any(_TOO_DEEP in error.message for error in _UTF8_PARSER.error_log):
            root = lxml.html.document_fromstring(_ANCHORS_ALONE.sub(b" ", data), parser=_UTF8_PARSER)
    except (etree.ParserError, ValueError):
        return []
    for template in list(root.iter("template")):  # (a nested one goes with the outer one's content)
        for inert in list(template):
            template.remove(inert)
    base = page_url
    for element in root.iter("base"):
        href = element.get("href")
        if href is not None:
            try:
                base = urljoin(page_url, backslashes_as_slashes(_clean_href(href), page_url))
                urlsplit(base)
            except ValueError:  # a host Python cannot read ("http://[x/"): no base, as a browser takes it
                base = page_url
            break
    links = []
    for element in root.iter("a", "area"):
        href = element.get("href")
        if href is None:
            continue
        href = _clean_href(href)
        if href.startswith("#"):
            continue
        href = backslashes_as_slashes(href, base)  # ("\\" is "/" in an http(s) URL, as a browser reads it)
        try:
            url = urljoin(base, href)
            scheme = urlsplit(url).scheme
        except ValueError:  # a host Python cannot read ("[" unclosed): a link all the same, logged, never fetched
            links.append(href.split("#", 1)[0])
            continue
        if scheme not in _FOLLOWED_SCHEMES:
            continue
        links.append(url.split("#", 1)[0])
    return links


def extract_links_tse(body: bytes, page_url: str, encoding: str | None = None) -> list[str]:
    """The links the reference C scanner finds, in its order (SPEC 1.3).

    With *encoding* (the Python codec the page is read with, ``page_text``) the scanner reads the
    page as UTF-8 and its links are text: a link written in Shift_JIS or UTF-16 is the URL the page
    names (``/ссылка.html``, percent-encoded as UTF-8 when requested, as a browser asks for its path).
    Without, its bytes are scanned as they are and each link's bytes are characters (Latin-1).
    """
    if encoding is not None:
        body = page_text(body, encoding).encode("utf-8", "surrogatepass")
    html = body.split(b"\0", 1)[0].translate(None, _C_WHITESPACE)
    lowered = html.lower()
    # Every search starts where the last one of its kind started, or further (the tags, and so their
    # hrefs, come in page order): each keeps what it found while that is still ahead, and no stretch
    # of the page is searched twice (each link's search to the page's end made it quadratic: 10,000
    # "<a href=x.html>" took 10 s).
    next_href = _Ahead(lambda at: lowered.find(b"href=", at))
    next_tag_end = _Ahead(lambda at: html.find(b">", at))
    next_end = {
        delimiter: _Ahead(lambda at, delimiter=delimiter: html.find(delimiter, at)) for delimiter in (b'"', b"'", b">")
    }
    next_fragment = _Ahead(lambda at: html.find(b"#", at))
    next_scheme_end = _Ahead(lambda at: found.start() if (found := _C_SCHEME_END.search(html, at)) else -1)
    link_codec = "utf-8" if encoding is not None else "latin-1"
    links = []
    pos = 0
    while True:
        tag = lowered.find(b"<a", pos)
        if tag == -1:
            break
        href = next_href.at(tag)
        if href == -1:
            break
        tag_end = next_tag_end.at(tag)
        pos = tag + 1
        if tag_end != -1 and tag_end < href:
            continue
        start = href + 5
        delimiter = html[start : start + 1]
        if delimiter in (b'"', b"'"):
            start += 1
        else:
            delimiter = b">"
        end = next_end[delimiter].at(start)
        if end == -1:
            continue
        fragment = next_fragment.at(start)
        if fragment != -1 and fragment < end:
            end = fragment
        if html[start : start + 1] == b"#":
            continue
        # The C scanner looks for the first of : / ? # in the rest of the *page*,
        # not of the link: a colon in later text can make a relative link absolute.
        scheme_end = next_scheme_end.at(start)
        if scheme_end != -1 and html[scheme_end] == _COLON:
            # (Its first four bytes tell, before the link is copied: a link refused is met again by
            # every "<a" before its href.)
            if html[start : start + 4].lower() != b"http":
                continue
            links.append(html[start:end].decode(link_codec))
        else:
            links.append(_join_to_directory(page_url, html[start:end].decode(link_codec)))
        pos = end
    return links


class _Ahead:
    """The first match at or after a position (*find*'s, -1 for none), the last one found kept while
    it is still ahead of the positions asked (searching afresh for one before the last asked)."""

    __slots__ = ("_asked", "_find", "_found")

    def __init__(self, find: Callable[[int], int]):
        self._find = find
        self._asked = sys.maxsize  # (none asked yet: the first position is searched from)
        self._found = -1

    def at(self, position: int) -> int:
        if position < self._asked or -1 < self._found < position:
            self._found = self._find(position)
        self._asked = position
        return self._found


def page_text(body: bytes, encoding: str | None) -> str:
    """*body* as text: decoded with *encoding*, the Python codec the crawl reads the page with (its byte
    order mark, HTTP charset, ``<meta>`` or detected encoding, as the indexer reads it:
    ``rules.text.encodings.page_encoding``), its byte order mark left out; without one, as w3lib reads
    it (a byte order mark, a ``<meta>``, else UTF-8)."""
    if encoding is None:
        return html_to_unicode(None, body)[1]
    text = bytes(body).decode(encoding, "replace")
    return text[1:] if text.startswith("\ufeff") else text  # (only a byte order mark decodes so)


def _clean_href(href: str) -> str:
    return _URL_WHITESPACE.sub("", href.strip(" \t\n\r\f"))


def _join_to_directory(page_url: str, link: str) -> str:
    scheme_end = page_url.find("://")
    host_end = page_url.find("/", scheme_end + 3) if scheme_end != -1 else -1
    if host_end == -1:
        return page_url + "/" + link
    root, path = page_url[:host_end], page_url[host_end:]
    if link.startswith("/"):
        return root + link
    path = re.split(r"[?#]", path, maxsplit=1)[0]
    directory = path[: path.rfind("/")]
    return root + directory + "/" + link


# ``links=NAME``: the extractor a crawl uses.
EXTRACTORS = {"html": extract_links_html, "tse": extract_links_tse}
