"""A page's fields for the search index: its language, title, headings, URL words, body and links.

Pure functions over page bytes, with the same tolerant, linear regular
expressions as ``pagetext`` (no HTML parser: they run over every page when
the index is written).  Each field is given as index terms (``analysis``),
space-separated, stemmed in the page's language: declared by ``<html lang>``
or ``<meta http-equiv="content-language">``, else detected from its text.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from urllib.parse import unquote, urljoin, urlsplit

from . import analysis
from .pagetext import _NOT_VISIBLE, _TAG, _clean, _decode, _without_unclosed_tag, page_title, visible_text

# Bounds a page cannot make larger: its body's characters read, its links kept, a link's anchor text.
BODY_CHARACTERS = 200_000
BODY_TERMS = 10_000
MAX_LINKS = 1_000
ANCHOR_CHARACTERS = 200
HEADING_CHARACTERS = 5_000
# Words of at least this many characters are kept for typo tolerance (shorter ones are not expanded).
VOCABULARY_MIN = 5

_HTML_LANG = re.compile(r"<html\b[^>]*?\blang\s*=\s*[\"']?([A-Za-z_-]{2,20})", re.I)
_META_LANG = re.compile(
    r"<meta\b[^>]*?http-equiv\s*=\s*[\"']?content-language[\"']?[^>]*?content\s*=\s*[\"']?([A-Za-z_-]{2,20})", re.I
)
_HEADING = re.compile(r"<h([1-6])(?=[\s>])[^>]*>(.{0,2000}?)</h\1\s*>", re.I | re.S)
_ANCHOR = re.compile(
    r"<a(?=[\s>])[^>]*?\shref\s*=\s*(?:\"([^\"]*)\"|'([^']*)'|([^\s>]+))[^>]*>(.{0,2000}?)</a\s*>", re.I | re.S
)
_URL_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*://", re.I)


@dataclass(frozen=True)
class PageFields:
    """What the search index holds of a page: its language (ISO 639 code or "") and its fields as
    space-separated terms; its links (target URL, anchor terms); its words for typo tolerance."""

    language: str
    title: str
    headings: str
    url: str
    body: str
    links: tuple[tuple[str, str], ...]
    vocabulary: frozenset[str]


def page_language(text_head: str, body_text: str) -> str | None:
    """The language a page declares in *text_head* (its first characters), else the one its text seems in."""
    for pattern in (_HTML_LANG, _META_LANG):
        found = pattern.search(text_head)
        if found:
            code = analysis.language_code(found.group(1))
            if code:
                return code
    return analysis.detect_language(body_text)


def page_fields(url: str, body: bytes) -> PageFields:
    """The fields of the page at *url* whose bytes are *body*."""
    text = _without_unclosed_tag(_decode(body))
    visible = visible_text(body, BODY_CHARACTERS)
    language = page_language(text[:4000], visible) or ""
    body_words = analysis.words(visible)[:BODY_TERMS]
    vocabulary = frozenset(word for word in body_words if len(word) >= VOCABULARY_MIN and not analysis.is_segmented(word))
    title = page_title(body)
    headings = " ".join(_clean(_TAG.sub(" ", found.group(2))) for found in _HEADING.finditer(text))
    terms = analysis.stem
    return PageFields(
        language=language,
        title=_joined(terms(analysis.words(title), language)),
        headings=_joined(terms(analysis.words(headings[:HEADING_CHARACTERS]), language)),
        url=_joined(terms(url_words(url), language)),
        body=_joined(terms(body_words, language)),
        links=tuple(anchors(text, url, language)),
        vocabulary=vocabulary | frozenset(w for w in analysis.words(title) if len(w) >= VOCABULARY_MIN),
    )


def url_words(url: str) -> list[str]:
    """The words of a URL without its scheme (``http://example.org/books/light.html`` → example, org,
    books, light, html), percent-encoding decoded."""
    return analysis.words(unquote(_URL_SCHEME.sub("", url), errors="replace"))


def anchors(text: str, page_url: str, language: str | None) -> list[tuple[str, str]]:
    """The first MAX_LINKS links of the page (decoded *text*): (absolute URL without fragment, its anchor
    text's terms), for links with any anchor text."""
    found = []
    for match in _ANCHOR.finditer(text):
        href = html.unescape(match.group(1) or match.group(2) or match.group(3) or "").strip()
        label = _clean(_NOT_VISIBLE.sub(" ", match.group(4)))[:ANCHOR_CHARACTERS]
        if not href or href.startswith("#") or not label:
            continue
        try:
            target = urljoin(page_url, href)
            if urlsplit(target).scheme not in ("http", "https", "file"):
                continue
        except ValueError:
            continue
        link_terms = _joined(analysis.terms(label, language))
        if link_terms:
            found.append((target.split("#", 1)[0], link_terms))
            if len(found) >= MAX_LINKS:
                break
    return found


def _joined(terms: list[str]) -> str:
    return " ".join(terms)
