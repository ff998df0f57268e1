"""A page's robots directives: ``<meta name="robots">`` and the ``X-Robots-Tag`` header.

``noindex`` (never an answer), ``nofollow`` (its links are not followed) and
``none`` (both); names and values in any case; the most restrictive wins,
whichever says it.  A directive meant for one crawler (``googlebot: noindex``
in the header, ``<meta name="googlebot">``) counts only when it names this
one's user-agent token (or ``*``).  Other directives (``index``, ``follow``,
``all``, ``noarchive``, ``max-snippet: 0``, ``unavailable_after: ...``) are
ignored: none says less than the rest.  ``<meta>`` tags are read in the
head only (up to ``</head>`` or ``<body>``, not one written in a comment
or a script's text), where they belong, as search
engines read them, and not where the head holds text (``headtext``: a
commented-out directive, a script's string, the title); inside a
``<noscript>`` they count, as HTML parses them there for a reader without
scripts, as this crawler reads pages.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Iterable

from w3lib.encoding import read_bom

from .headtext import TEXT_ELEMENTS, HiddenSpans

NOINDEX = "noindex"
NOFOLLOW = "nofollow"
HEAD_BYTES = 64 * 1024  # where <meta> tags are looked for: the head, to its end or this many bytes

_DIRECTIVES = {"noindex": {NOINDEX}, "nofollow": {NOFOLLOW}, "none": {NOINDEX, NOFOLLOW}}
# Directives that take a value after a colon ("max-snippet: 0"): not a crawler's name.
_WITH_VALUE = {"max-snippet", "max-image-preview", "max-video-preview", "unavailable_after"}
_META = re.compile(rb"<meta\b[^>]*>", re.I)
_HEAD_END = re.compile(rb"</head\s*>|<body\b", re.I)
_ATTRIBUTE = re.compile(rb"""([a-z-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>]+))""", re.I)
_UTF16 = {"utf-16", "utf-16-le", "utf-16-be"}  # (codecs.lookup's names)
_NAMED = re.compile(r"\s*([a-z0-9_.*-]+)\s*:\s*(.*)$", re.I)
# The head's texts (a comment, a script ...) in which a "</head>" or "<body>" ends nothing; a <noscript>'s
# markup counts, as this crawler reads pages without scripts.
_HEAD_TEXT = [name for name in TEXT_ELEMENTS if name != "noscript"]


def product_token(user_agent: str) -> str:
    """The product token of a ``User-Agent`` string (its first word, before a ``/`` or a space:
    ``tse-scrapy`` of ``tse-scrapy/0.1.0 (Tiny Search Engine crawler; ...)``): the name robots.txt
    groups (RFC 9309 2.2.1) and robots ``<meta>`` tags are matched against.  Matched against the whole
    string, a group named ``crawler`` or ``Search`` was taken for this crawler's."""
    return re.split(r"[/\s]", user_agent.strip(), maxsplit=1)[0]


def robots_directives(
    header_values: Iterable[str], body: bytes, user_agent: str = "", encoding: str | None = None
) -> frozenset[str]:
    """``noindex`` and ``nofollow``, those the page's X-Robots-Tag *header_values* and its
    ``<meta>`` tags give this crawler (*user_agent*: the token its robots.txt rules use).
    *encoding*: the Python codec the page is read in (``rules.text.encodings.page_encoding``: its
    byte order mark, its HTTP charset ...), when known; a UTF-16 page (by it, or by its byte order
    mark) has its head read as UTF-8 (its bytes hold no ``<meta`` an ASCII pattern finds)."""
    token = user_agent.strip().lower()
    found: set[str] = set()
    for value in header_values:
        named = _NAMED.match(value)
        if named and named.group(1).lower() not in _WITH_VALUE:
            if named.group(1).lower() not in ("*", token):
                continue  # meant for another crawler
            value = named.group(2)
        found |= _parsed(value)
    body = utf16_as_utf8(body, encoding, HEAD_BYTES)
    head = bytes(body[: _head_end(body)])  # robots <meta> tags belong in the head: the body is not read
    for name, content in _meta_tags(head, token):
        if name in ("robots", token) and name:
            found |= _parsed(content)
    return frozenset(found)


def _head_end(body: bytes) -> int:
    """Where the head of *body* ends: its ``</head>`` or ``<body>``, not one written in a comment or in a
    script's, style's or title's text (``var s = "<body>"`` in a script before the robots ``<meta>`` ended
    the head there, and its noindex was never read); else HEAD_BYTES (or the body's end)."""
    limit = min(len(body), HEAD_BYTES)
    found = _HEAD_END.search(body, 0, limit)
    if found is None:
        return limit
    # Most heads hold no "<body" in their texts: only the head is lowercased to tell.
    if not HiddenSpans(bytes(body[: found.start() + 1]).lower(), _HEAD_TEXT).covers(found.start()):
        return found.start()
    hidden = HiddenSpans(bytes(body[:limit]).lower(), _HEAD_TEXT)
    while found is not None and hidden.covers(found.start()):
        found = _HEAD_END.search(body, found.start() + 1, limit)
    return limit if found is None else found.start()


def utf16_as_utf8(body: bytes, encoding: str | None, characters: int | None = None) -> bytes:
    """*body* in UTF-8 when it is UTF-16 (by its byte order mark, first, as a browser reads it, else by
    *encoding*, a Python codec; a UTF-32 mark is UTF-32's, as ``page_encoding`` reads it), its byte
    order mark left out, its first *characters* only (None: all); else *body* itself: an encoding whose
    bytes are ASCII's where markup is, which a scan of its bytes reads as it is (a UTF-16 page's bytes
    hold no ``<meta`` or ``<a`` an ASCII pattern finds)."""
    codec, mark = read_bom(bytes(body[:4]))
    codec = codec or encoding
    try:
        codec = codecs.lookup(codec).name if codec else None
    except LookupError:
        return body
    if codec not in _UTF16:
        return body
    kept = body if characters is None else body[: 2 * characters + len(mark or b"")]
    return bytes(kept).decode(codec, "replace").removeprefix("\ufeff").encode("utf-8")


def _parsed(value: str) -> set[str]:
    found: set[str] = set()
    for part in value.split(","):
        found |= _DIRECTIVES.get(part.strip().lower(), set())
    return found


def _meta_tags(head: bytes, token: str) -> Iterable[tuple[str, str]]:
    """(name, content) of the ``<meta name content>`` tags that may be robots tags (that hold
    ``robots`` or *token*: a page's head has dozens of others), the name lowercased."""
    wanted = [b"robots", *([token.encode("latin-1", "replace")] if token else [])]
    lowered = head.lower()
    if not any(word in lowered for word in wanted):  # most heads hold none: no tag is read
        return
    hidden = HiddenSpans(lowered, _HEAD_TEXT)
    for tag in _META.finditer(head):
        lowered_tag = tag.group().lower()
        if not any(word in lowered_tag for word in wanted) or hidden.covers(tag.start()):
            continue
        attributes = {
            match.group(1).lower(): next(group for group in match.groups()[1:] if group is not None)
            for match in _ATTRIBUTE.finditer(tag.group())
        }
        name, content = attributes.get(b"name"), attributes.get(b"content")
        if name is not None and content is not None:
            yield name.decode("latin-1").strip().lower(), content.decode("latin-1")
