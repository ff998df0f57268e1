"""A distributed crawl's frontier entries: requests stored as data, never as pickles.

Every worker reads what any client of the crawl's Redis wrote, so an entry is
plain data (msgpack) that decoding only checks, and a bad one can never run
code.  An entry is the 16-byte fingerprint of its URL (what the docID is
reserved for, ``distributed/store.url_fingerprint``), then a msgpack array:

    [ENTRY_VERSION, url, method, headers, body, meta, priority, dont_filter, callback, errback]

``headers`` is a flat list of names and values (bytes); ``meta`` holds only
the keys tse sets on a request it queues (``META_TYPES``); the callback and
errback name the spider's methods (``CALLBACKS``, ``ERRBACKS``).  Decoding refuses, with EntryError,
anything else: another version, a truncated or oversized entry, a field of
the wrong type, an unknown meta key, a URL that is not http(s), a request
that would skip the filters (``dont_filter``: the offsite check lets it pass).

A worker decodes with its crawl's maxDepth (``max_depth``): then only a request
tse itself queues is accepted (``tse_request``): a GET with no body and no
header but a Referer (-s REFERER_ENABLED=True), calling back ``parse`` with ``fetch_failed`` as errback, at a depth
no deeper than maxDepth.  Anything else in a crawl's frontier was forged (it
would make a worker send another method, credentials, a body, or hold a page
no failure ends): it is quarantined like any other bad entry.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import msgpack

ENTRY_VERSION = 1
FINGERPRINT_SIZE = 16
# Bounds on what decoding accepts: a tse request is a few hundred bytes.
MAX_ENTRY_BYTES = 64 * 1024
MAX_URL_CHARACTERS = 8192
MAX_HEADERS = 64  # names and values, each
MAX_BODY_BYTES = 32 * 1024
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"})
# The request meta keys tse sets before a request is queued, with their types.
META_TYPES: dict[str, type] = {
    "depth": int,
    "tse_found_at": int,
    "tse_found_on": str,
    "tse_link": str,
    "tse_lastmod": str,  # a sitemap's lastmod (--sitemaps)
}
MAX_DEPTH = 1_000_000
# The spider methods a stored request may name (the tse spider's: spiders/tse.py).
CALLBACKS = frozenset({"parse"})
ERRBACKS = frozenset({"fetch_failed"})

_FIELDS = 10
_HTTP = re.compile(r"https?://", re.IGNORECASE)
# The spider's placeholder for a link Scrapy cannot represent (spiders/tse.py): queued, never fetched.
_PLACEHOLDER_URL = "data:,"
# Strings as Python has them, lone surrogates included (a link decoded with surrogateescape).
_UNICODE_ERRORS = "surrogatepass"


class EntryError(ValueError):
    """Why an entry cannot be read as a request (one line)."""


@dataclass(frozen=True)
class RequestData:
    """What a queued request is: what is stored, and all that is."""

    url: str
    method: str = "GET"
    headers: tuple[tuple[bytes, bytes], ...] = ()
    body: bytes = b""
    meta: dict[str, Any] = field(default_factory=dict)
    priority: int = 0
    dont_filter: bool = False
    callback: str | None = None
    errback: str | None = None


def encode_entry(fingerprint: bytes, request: RequestData) -> bytes:
    """*fingerprint* then *request* as data (meta keys other than ``META_TYPES`` are left out)."""
    meta = {key: value for key, value in request.meta.items() if key in META_TYPES}
    headers = [part for pair in request.headers for part in pair]
    fields = [ENTRY_VERSION, request.url, request.method, headers, request.body, meta]
    fields += [request.priority, request.dont_filter, request.callback, request.errback]
    return fingerprint + msgpack.packb(fields, use_bin_type=True, unicode_errors=_UNICODE_ERRORS)


def decode_entry(entry: bytes, max_depth: int | None = None) -> tuple[bytes, RequestData]:
    """The fingerprint and request of *entry*; EntryError if it is not one this version wrote
    (with *max_depth*, the crawl's maxDepth: not one tse queues in that crawl, ``tse_request``)."""
    if not isinstance(entry, bytes):
        raise EntryError(f"an entry is bytes, not {type(entry).__name__}")
    if len(entry) > MAX_ENTRY_BYTES:
        raise EntryError(f"entry of {len(entry)} bytes, over the bound of {MAX_ENTRY_BYTES}")
    if len(entry) <= FINGERPRINT_SIZE:
        raise EntryError(f"entry of {len(entry)} bytes: too short")
    try:
        fields = msgpack.unpackb(
            entry[FINGERPRINT_SIZE:],
            raw=False,
            use_list=True,
            strict_map_key=True,
            unicode_errors=_UNICODE_ERRORS,
            max_ext_len=0,
        )
    except Exception as error:  # msgpack raises several kinds for malformed data: all mean the same here
        raise EntryError(f"not a frontier entry ({type(error).__name__})") from None
    if not isinstance(fields, list) or not fields or fields[0] != ENTRY_VERSION or type(fields[0]) is not int:
        version = fields[0] if isinstance(fields, list) and fields else None
        raise EntryError(f"not a frontier entry of version {ENTRY_VERSION} (version {version!r})")
    if len(fields) != _FIELDS:
        raise EntryError(f"entry of {len(fields)} fields, not {_FIELDS}")
    _, url, method, headers, body, meta, priority, dont_filter, callback, errback = fields
    request = RequestData(
        url=_url(url),
        method=_choice("method", method, METHODS),
        headers=_headers(headers),
        body=_bytes("body", body, MAX_BODY_BYTES),
        meta=_meta(meta),
        priority=_int("priority", priority, -(2**31), 2**31 - 1),
        dont_filter=_filtered(dont_filter),
        callback=_name("callback", callback, CALLBACKS),
        errback=_name("errback", errback, ERRBACKS),
    )
    if max_depth is not None:
        tse_request(request, max_depth)
    return entry[:FINGERPRINT_SIZE], request


def tse_request(request: RequestData, max_depth: int) -> None:
    """EntryError unless *request* is one tse queues in a crawl of *max_depth*: the tse spider's
    requests (seeds, sitemap URLs, links found) are GETs with no body and no header (but the
    Referer Scrapy's RefererMiddleware sets if REFERER_ENABLED), calling back
    ``parse`` and ``fetch_failed``, at depth 0 to maxDepth (a page at maxDepth is not scanned).
    (Its placeholder for a link Scrapy cannot represent is dropped before it is queued.)"""
    if request.method != "GET":
        raise EntryError(f"method {request.method}: tse queues only GET requests")
    names = [name.lower() for name, _ in request.headers]
    if names not in ([], [b"referer"]) or not all(_HTTP.match(value.decode("latin-1")) for _, value in request.headers):
        # Scrapy's RefererMiddleware, if -s REFERER_ENABLED=True, sets a Referer: the page's URL.
        raise EntryError("headers other than a Referer: tse queues none (the downloader adds its own)")
    if request.body:
        raise EntryError("a body: tse queues requests with none")
    if request.callback not in CALLBACKS or request.errback not in ERRBACKS:
        raise EntryError(
            f"callback {request.callback!r} and errback {request.errback!r}: tse queues its requests with"
            f" {'/'.join(sorted(CALLBACKS))} and {'/'.join(sorted(ERRBACKS))}"
        )
    depth = request.meta.get("depth")
    if depth is None or depth > max_depth:
        raise EntryError(f"depth {depth!r}: not one of this crawl's (0 to {max_depth})")
    if request.url == _PLACEHOLDER_URL:
        raise EntryError("the placeholder URL: tse drops it before it is queued")


def _url(value: Any) -> str:
    if not isinstance(value, str) or not (_HTTP.match(value) or value == _PLACEHOLDER_URL):
        raise EntryError("the URL is not an http(s) URL")
    if len(value) > MAX_URL_CHARACTERS:
        raise EntryError(f"a URL of {len(value)} characters, over {MAX_URL_CHARACTERS}")
    return value


def _choice(name: str, value: Any, allowed: frozenset[str]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise EntryError(f"{name} {value!r:.40} is not one of {', '.join(sorted(allowed))}")
    return value


def _headers(value: Any) -> tuple[tuple[bytes, bytes], ...]:
    if not isinstance(value, list) or len(value) % 2 or len(value) > 2 * MAX_HEADERS:
        raise EntryError("headers are not a list of names and values")
    parts = [_bytes("a header", part, MAX_URL_CHARACTERS) for part in value]
    return tuple(zip(parts[::2], parts[1::2], strict=True))


def _bytes(name: str, value: Any, bound: int) -> bytes:
    if not isinstance(value, bytes):
        raise EntryError(f"{name} is not bytes")
    if len(value) > bound:
        raise EntryError(f"{name} of {len(value)} bytes, over {bound}")
    return value


def _meta(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise EntryError("meta is not a map")
    for key, item in value.items():
        kind = META_TYPES.get(key)
        if kind is None:
            raise EntryError(f"meta key {key!r:.40} is not one tse sets")
        if kind is int:
            _int(key, item, 0, MAX_DEPTH)
        elif not isinstance(item, str) or len(item) > MAX_URL_CHARACTERS:
            raise EntryError(f"meta {key} is not a string of at most {MAX_URL_CHARACTERS} characters")
    return value


def _int(name: str, value: Any, low: int, high: int) -> int:
    if type(value) is not int or not low <= value <= high:
        raise EntryError(f"{name} is not a whole number from {low} to {high}")
    return value


def _filtered(value: Any) -> bool:
    # tse queues no request that skips the filters (Scrapy's offsite check skips such a request).
    if value is not False:
        raise EntryError("dont_filter is not false: tse queues no request that skips the filters")
    return value


def _name(name: str, value: Any, allowed: frozenset[str]) -> str | None:
    if value is not None and (not isinstance(value, str) or value not in allowed):
        raise EntryError(f"{name} {value!r:.40} is not one of the spider's: {', '.join(sorted(allowed))}")
    return value
