"""A saved page as ``tse serve`` shows it: its bytes as crawled, with a ``<base>`` naming the page's
URL first, so that its relative links lead where they led on the site, not to the server's own paths
(``/doc/7`` linking to ``whatsnew/changelog.html`` reached ``/doc/whatsnew/changelog.html``, a 404:
a tester's find).  Pure functions, no Scrapy import.

The tag goes after a byte order mark (which must stay first) and after a doctype (a tag before it
would put the page in quirks mode), written in the page's own encoding; the browser keeps the first
``<base href>`` of a document, so a page's own comes second and changes nothing.
"""

from __future__ import annotations

import codecs
import html
import re

_BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
_DOCTYPE = re.compile(r"\s*<!doctype[^>]*>", re.I)
# A doctype is looked for in the page's first characters only (a hostile page cannot make it read more).
DOCTYPE_CHARACTERS = 1024


def base_tag(url: str) -> str:
    """The ``<base>`` naming *url*, its characters escaped for the attribute."""
    return f'<base href="{html.escape(url, quote=True)}">'


def with_base(body: bytes, url: str, encoding: str) -> bytes:
    """*body*, a page in the Python codec *encoding* (``encodings.page_encoding``'s), with ``base_tag(url)``
    before its markup; *body* as it is when *url* is not http or https, or the encoding cannot write
    the tag (an unknown codec)."""
    if not url.lower().startswith(("http://", "https://")):
        return body
    try:
        tag = base_tag(url).encode(_without_bom(encoding))
    except (LookupError, UnicodeError):
        return body
    start = next((len(bom) for bom in _BOMS if body.startswith(bom)), 0)
    at = start + _doctype_bytes(body[start:], encoding)
    return body[:at] + tag + body[at:]


def _without_bom(encoding: str) -> str:
    """The codec writing *encoding*'s text without a byte order mark (``utf-16`` and ``utf-8-sig`` write one)."""
    name = codecs.lookup(encoding).name
    return {"utf-16": "utf-16-le", "utf-32": "utf-32-le", "utf-8-sig": "utf-8"}.get(name, name)


def _doctype_bytes(body: bytes, encoding: str) -> int:
    """How many bytes of *body* (after any byte order mark) its leading doctype and the whitespace
    before it take; 0 for none."""
    try:
        head = codecs.getincrementaldecoder(_without_bom(encoding))("replace").decode(body[: 4 * DOCTYPE_CHARACTERS])
    except LookupError:
        return 0
    found = _DOCTYPE.match(head[:DOCTYPE_CHARACTERS])
    if found is None:
        return 0
    taken = head[: found.end()].encode(_without_bom(encoding), "replace")
    # (Decoded with replacements, a prefix may not encode back to its bytes: then no doctype is skipped.)
    return len(taken) if body.startswith(taken) else 0
