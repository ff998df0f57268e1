"""A saved page as ``tse serve`` shows it: its bytes as crawled, with a ``<base>`` naming the page's
URL first, so that its relative links lead where they led on the site, not to the server's own paths
(``/doc/7`` linking to ``whatsnew/changelog.html`` reached ``/doc/whatsnew/changelog.html``, a 404:
a tester's find).  Pure functions, no Scrapy import.

The tag goes after a byte order mark (which must stay first) and after the page's prolog (an XML
declaration, comments, a doctype: a tag before a doctype would put the page in quirks mode), written in
the page's own encoding.  A page whose head names a ``<base href>`` of its own gets that one, resolved
against its URL as a browser resolves it: the browser keeps a document's first base, and the page's is
the one its links were written for (the crawl reads them so); left to itself, a relative one (Angular's
``<base href="/">``) was resolved against ``/doc/N`` (a tester's find).  A ``<base>`` written in a
comment, a script, a style or a title is none: the browser does not read it as a tag (a reviewer's find:
the copy's relative links then led to the server's paths); nor is one in a ``<template>``, whose content
is inert (a fragment of its own, not the page's).

The tag also says ``target="_top"``: shown in the frame of ``/saved/N`` (under its banner), a link the
reader follows leaves the copy for the site, as it does where the copy is shown alone.
"""

from __future__ import annotations

import codecs
import html
import re
from urllib.parse import urljoin

from .entities import unescape

# (A UTF-32 page's mark is looked for first: its little-endian one starts as UTF-16's does, and the tag
# went in after two of its four bytes, the rest of the copy shifted: a tester's find.)
_BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
_UTF32_BOMS = (codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)
# What may stand before a page's first tag of its own: an XML declaration, comments, a doctype.  A comment
# ends where a browser ends it: at "-->" or "--!>", or at once for "<!-->" and "<!--->" (a reviewer's
# find: read on to the next "-->", a page's own tag after "<!-->" was taken for the prolog).
_PROLOG = re.compile(r"(?:\s+|<\?xml[^>]*>|<!--(?:-?>|.*?--!?>)|<!doctype[^>]*>)*", re.I | re.S)
_DOCTYPE = re.compile(r"<!doctype", re.I)
# A <base> tag, to its ">" (or the end), and an href attribute in it.  Each pattern reads a character
# once whatever the page: "<base " 10,000 times without a ">" took a former one 9 s (a reviewer's find).
_BASE_TAG = re.compile(r"<base(?=[\s/>]|\Z)[^>]*", re.I)
_HREF = re.compile(r"""[\s/"']href\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']*))""", re.I)
# What a browser reads as no tags in a head: comments (ended as it ends them, or by the page's end) and
# the text of the elements whose text is not markup (raw text and RCDATA), to their end tag as a
# browser reads one ("</script/>", "</title foo>"; not "</style-x>"), or the page's end.
_NOT_TAGS = re.compile(
    r"<!--(?:-?>|.*?(?:--!?>|\Z))"
    r"|<(script|style|title|textarea|xmp|iframe|noembed|noframes)(?=[\s/>]|\Z)[^>]*"
    r"(?:>.*?(?:</\1(?=[\s/>]|\Z)[^>]*(?:>|\Z)|\Z)|\Z)",
    re.I | re.S,
)
_HEAD_END = re.compile(r"</head\s*>|<body\b", re.I)
# A template's start and end tags: its content is inert (a fragment of its own, not the page's), so a
# <base> in it names no base, nor does a "<body" in it end the head.
_TEMPLATE_TAG = re.compile(r"<(/?)template(?=[\s/>]|\Z)", re.I)
# The prolog and a page's own <base> are looked for in its first characters only (a hostile page cannot
# make them read more).
DOCTYPE_CHARACTERS = 1024
HEAD_CHARACTERS = 64 * 1024


def base_tag(url: str | None) -> str:
    """The ``<base>`` naming *url* (None: none, for a page naming its own), its characters escaped for
    the attribute, and the top of the window as where links lead."""
    return '<base target="_top">' if url is None else f'<base href="{html.escape(url, quote=True)}" target="_top">'


def with_base(body: bytes, url: str, encoding: str) -> bytes:
    """*body*, a page in the Python codec *encoding* (``encodings.page_encoding``'s), with ``base_tag(url)``
    before its markup (when its head names a base of its own: ``base_tag`` of that one resolved, or of
    None where that is no http or https URL); *body* as it is when *url* is not http or https, or the
    encoding cannot write the tag (an unknown codec)."""
    if not url.lower().startswith(("http://", "https://")):
        return body
    boms = (*_UTF32_BOMS, *_BOMS) if encoding.lower().replace("_", "-").startswith("utf-32") else _BOMS
    start = next((len(bom) for bom in boms if body.startswith(bom) and _is_bom_of(bom, encoding)), 0)
    head = _decoded_head(body[start:], encoding, HEAD_CHARACTERS)
    tags = _without_templates(_NOT_TAGS.sub(" ", head))
    end = _HEAD_END.search(tags)
    own = _own_base(tags, end.start() if end else len(tags), url)  # (the one its links were written for)
    if own is not None:
        url = own if own.lower().startswith(("http://", "https://")) else None
    try:
        tag = base_tag(url).encode(_without_bom(encoding))
    except (LookupError, UnicodeError):
        return body
    at = start + _prolog_bytes(body[start:], head, encoding)
    return body[:at] + tag + body[at:]


def _without_templates(tags: str) -> str:
    """*tags* (a head, what is no tag masked) without its templates' content: each outermost template
    replaced by a space to the end tag that closes it (nested ones counted), or to the end."""
    spans: list[tuple[int, int]] = []
    depth = start = 0
    for tag in _TEMPLATE_TAG.finditer(tags):
        if not tag.group(1):
            start = tag.start() if depth == 0 else start
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                spans.append((start, tag.end()))
    if depth:
        spans.append((start, len(tags)))
    if not spans:
        return tags
    pieces, at = [], 0
    for begin, end in spans:
        pieces.append(tags[at:begin])
        at = end
    return " ".join([*pieces, tags[at:]])


def _own_base(tags: str, end: int, url: str) -> str | None:
    """The URL named by the first ``<base href>`` of *tags* (a page's head, what is no tag masked) before
    *end*, resolved against the page's *url*; None for none."""
    for tag in _BASE_TAG.finditer(tags, 0, end):
        if href := _HREF.search(tag.group()):
            value = next(value for value in href.groups() if value is not None)
            return urljoin(url, unescape(value).strip(" \t\n\r\f"))
    return None


def _is_bom_of(bom: bytes, encoding: str) -> bool:
    """Whether *bom* is *encoding*'s byte order mark: another's bytes are the page's text (a UTF-8 mark
    before text said to be UTF-16: the tag written in UTF-16 after it would be read a byte out of step)."""
    try:
        return bom.decode(_without_bom(encoding)) == "\ufeff"
    except (LookupError, UnicodeError):
        return False


def _without_bom(encoding: str) -> str:
    """The codec writing *encoding*'s text without a byte order mark (``utf-16`` and ``utf-8-sig`` write one)."""
    name = codecs.lookup(encoding).name
    return {"utf-16": "utf-16-le", "utf-32": "utf-32-le", "utf-8-sig": "utf-8"}.get(name, name)


def _decoded_head(body: bytes, encoding: str, characters: int) -> str:
    """About the first *characters* of *body* (after any byte order mark) decoded, bytes that are no
    text in *encoding* replaced; "" for a codec Python does not have."""
    try:
        decoder = codecs.getincrementaldecoder(_without_bom(encoding))("replace")
    except LookupError:
        return ""
    return decoder.decode(body[: 4 * characters])[:characters]


def _prolog_bytes(body: bytes, head: str, encoding: str) -> int:
    """How many bytes of *body* (after any byte order mark) the page's prolog takes, when it holds a
    doctype (an XML declaration and comments before it, whitespace); 0 for none: the tag then opens it."""
    prolog = _PROLOG.match(head[:DOCTYPE_CHARACTERS])
    if prolog is None or not _DOCTYPE.search(prolog.group()):
        return 0
    taken = head[: prolog.end()].rstrip().encode(_without_bom(encoding), "replace")  # (the spaces after it stay)
    # (Decoded with replacements, a prefix may not encode back to its bytes: then the tag opens the page.)
    return len(taken) if body.startswith(taken) else 0
