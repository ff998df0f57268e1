"""URL rules of the TSE (SPEC 1.1-1.2): pure functions, no Scrapy import."""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from urllib.parse import quote, urljoin, urlsplit

DEFAULT_PREFIX = "http://cs50tse.cs.dartmouth.edu/tse/"
# The TSE extension rule widened by ``--pdf``: ``.htm*`` pages and ``.pdf`` documents.
TSE_AND_PDF = frozenset({"pdf"})

_REPEATED_SLASHES = re.compile(r"/{2,}")
_SCHEME_END = re.compile(r"[:/?#]")
# A crawl normalizes each URL several times (the link, the dupefilter, the
# offsite check, the saved page) and meets most links many times over: the
# last few thousand answers are kept.  Longer URLs (a hostile page's) are not.
_CACHED_URLS = 4096
_CACHED_URL_LENGTH = 2083
# The characters that change the direction of the text after them (the Arabic letter mark, the marks,
# the embeddings and overrides, the isolates): in a URL shown as text, an override would turn the rest
# of it around (``http://h/\u202elmth.exe`` reads ``http://h/exe.html``), and, unclosed, what follows it.
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_BIDI_CONTROL = re.compile(f"[{BIDI_CONTROLS}]")


def url_as_shown(url: str) -> str:
    """*url* with its bidirectional controls percent-encoded (UTF-8: ``%E2%80%AE``), as a browser's URL
    parser writes them in a path or query, so that a URL shown cannot reorder itself or what follows."""
    if url.isascii():
        return url
    return _BIDI_CONTROL.sub(lambda found: quote(found.group(), safe=""), url)


def text_as_shown(text: str) -> str:
    """*text* a user typed (a query echoed) with its bidirectional controls shown by their code points
    (``U+202E``), as the search page shows a query outside an element of its own: text, not a URL, that
    cannot reorder itself or what follows it on the line."""
    if text.isascii():
        return text
    return _BIDI_CONTROL.sub(lambda found: f"U+{ord(found.group()):04X}", text)


def normalize_url(url: str, tse_extensions: bool | frozenset[str] = True) -> str | None:
    """Return the normalized form of the absolute *url*, or None.

    None means "non-normalizable": relative, empty path, or (unless
    *tse_extensions* is false) a last path segment whose extension does not
    begin with ``htm``, nor is one of *tse_extensions* when it is a set of
    extensions also taken (``TSE_AND_PDF``).
    """
    if len(url) > _CACHED_URL_LENGTH:
        return _normalize(url, tse_extensions)
    return _normalize_cached(url, tse_extensions)


def _normalize(url: str, tse_extensions: bool | frozenset[str]) -> str | None:
    found = _SCHEME_END.search(url)
    if found is None or found.group() != ":" or found.start() == 0:
        return None
    rest = url[found.end() :]
    scheme = url[: found.end()].lower()
    if rest.startswith("//"):
        scheme += "//"
        rest = rest[2:]
    rest = rest.split("#", 1)[0]
    authority_end = _first_of(rest, "/?")
    authority, tail = rest[:authority_end], rest[authority_end:]
    user, at, host = authority.partition("@")
    if not at:
        user, host = "", authority
    else:
        user += "@"
    path, question, query = tail.partition("?")
    if not path or (tse_extensions and not _extension_ok(path, tse_extensions)):
        return None
    if "%2" in path:
        path = _dots_decoded(path)
    path = remove_dot_segments(_REPEATED_SLASHES.sub("/", path))
    return scheme + user + host.lower() + path + question + query


_ENCODED_DOT_SEGMENTS = {"%2e": ".", ".%2e": "..", "%2e.": "..", "%2e%2e": ".."}


def _dots_decoded(path: str) -> str:
    """*path* with its dot segments written percent-encoded (``%2e``, ``.%2E``, ``%2e%2e``) written as
    dots: servers and browsers take them as dot segments (WHATWG URL), and left so, a link
    ``/tse/%2e%2e/admin/x.html`` was fetched as under the prefix ``/tse/`` and not under robots.txt's
    ``Disallow: /admin/`` (a reviewer's find)."""
    segments = path.split("/")
    for number, segment in enumerate(segments):
        if len(segment) <= 6 and (dots := _ENCODED_DOT_SEGMENTS.get(segment.lower())) is not None:
            segments[number] = dots
    return "/".join(segments)


_normalize_cached = lru_cache(maxsize=_CACHED_URLS)(_normalize)


def is_internal(normalized_url: str | None, prefixes: Iterable[str] = (DEFAULT_PREFIX,)) -> bool:
    """True when the normalized URL begins with one of the internal prefixes."""
    if normalized_url is None:
        return False
    return any(normalized_url.startswith(prefix) for prefix in prefixes)


def remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4; ``..`` above the root is dropped.  The RFC's loop, reading *path* from a
    position instead of cutting its head off at each step: cutting copied the rest of the path each
    segment, quadratic (400,000 segments took 5 s: an archive's URL, tse import)."""
    output: list[str] = []
    at, size = 0, len(path)
    while at < size:
        if path.startswith("../", at):
            at += 3
        elif path.startswith("./", at) or path.startswith("/./", at):
            at += 2
        elif path.startswith("/../", at):
            at += 3
            if output:
                output.pop()
        elif at + 2 == size and path.endswith("/."):  # the rest is "/.": it becomes "/"
            output.append("/")
            break
        elif at + 3 == size and path.endswith("/.."):  # the rest is "/..": "/", the last segment dropped
            if output:
                output.pop()
            output.append("/")
            break
        elif size - at <= 2 and path[at:] in (".", ".."):
            break
        else:
            end = path.find("/", at + 1)
            if end == -1:
                end = size
            output.append(path[at:end])
            at = end
    return "".join(output)


def _extension_ok(path: str, also: bool | frozenset[str]) -> bool:
    last_segment = path.rsplit("/", 1)[-1]
    if "." not in last_segment:
        return True
    extension = last_segment.rsplit(".", 1)[1]
    if extension == "" or extension[:3].lower() == "htm":
        return True
    return isinstance(also, frozenset) and extension.lower() in also


def _first_of(text: str, chars: str) -> int:
    positions = [i for i in (text.find(c) for c in chars) if i != -1]
    return min(positions, default=len(text))


# WHATWG URL parsing: C0 controls and spaces stripped from both ends, tabs and newlines dropped inside.
_URL_ENDS = "".join(chr(code) for code in range(0x21))
_URL_INSIDE = re.compile(r"[\t\n\r]")


def clean_href(href: str) -> str:
    """An href as a browser takes it before parsing: C0 controls and spaces stripped from its ends,
    tabs and newlines dropped inside (WHATWG URL)."""
    href = href.strip(_URL_ENDS)
    if "\t" in href or "\n" in href or "\r" in href:
        href = _URL_INSIDE.sub("", href)
    return href


# WHATWG URL: the special schemes, in whose URLs a backslash before the query is a "/"; a scheme is a letter,
# then letters, digits, "+", "-" or ".", then ":".
_SPECIAL_SCHEMES = frozenset({"http", "https", "ws", "wss", "ftp", "file"})
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*(?=:)")


def backslashes_as_slashes(href: str, base_url: str) -> str:
    """*href* with each ``\\`` before its query or fragment written ``/``, when it is a URL of a special
    scheme (http, https ...: its own scheme, else *base_url*'s, the URL it resolves against), as a
    browser reads it (WHATWG URL); urljoin keeps it, and Scrapy makes it a ``/`` only once the link
    is resolved: ``\\tse\\b.html`` on ``/tse/a.html`` was asked as ``/tse/tse/b.html``, not ``/tse/b.html``,
    and ``/\\otherhost\\x.html`` as a path of this host, not another host's page."""
    if "\\" not in href:
        return href
    scheme = _SCHEME.match(href) or _SCHEME.match(base_url)
    if scheme is None or scheme.group().lower() not in _SPECIAL_SCHEMES:
        return href
    end = _first_of(href, "?#")
    return href[:end].replace("\\", "/") + href[end:]


class LinkResolver:
    """Links made absolute against a page's URL: the usual forms (absolute, from the root, a plain
    relative path) with string operations, the others with urljoin."""

    def __init__(self, page_url: str):
        self.page_url = page_url
        try:
            parts = urlsplit(page_url)
            self.origin: str | None = f"{parts.scheme}://{parts.netloc}"
        except ValueError:  # a URL no parser takes ("http://[e.com/a", a page of an archive): nothing is under it
            self.origin = None
        self.directory = page_url.split("?", 1)[0].split("#", 1)[0].rsplit("/", 1)[0] + "/"

    def __call__(self, href: str) -> str | None:
        href = backslashes_as_slashes(href.split("#", 1)[0], self.page_url)  # (as the crawl's links resolve)
        if href.startswith(("http://", "https://")):
            return href
        if self.origin is None:
            return None
        try:
            if href.startswith("/") and not href.startswith("//") and "/." not in href:
                return self.origin + href
            if ":" not in href and not href.startswith((".", "/", "?")) and "/." not in href and href:
                return self.directory + href
            target = urljoin(self.page_url, href)
            if urlsplit(target).scheme not in ("http", "https", "file"):
                return None
        except ValueError:
            return None
        return target.split("#", 1)[0]
