"""BoundedHeadersDownloadHandler: Scrapy's HTTP/1.1 download handler, with the header section bounded.

DOWNLOAD_MAXSIZE bounds a response's body; nothing bounded its status line and headers: Twisted's
parser takes lines of up to 16 KB, as many as come, and keeps them all (a server sending 60,000 header
lines of 10 KB took the crawl to 754 MB).  Here a response whose status line and header lines hold more
than TSE_MAX_HEADER_BYTES fails once that many have come, its connection closed: a download error,
``HeadersTooLarge`` (said "headers larger than TSE_MAX_HEADER_BYTES": record.py), not retried.

Scrapy itself swaps the parser's class for its lenient one (``_LenientHTTP11ClientProtocol``); this
handler's protocol swaps it for a subclass of that one, which counts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.core.downloader.handlers.http11 import (
    HTTP11DownloadHandler,
    _LenientHTTP11ClientFactory,
    _LenientHTTP11ClientProtocol,
    _LenientHTTPClientParser,
)
from scrapy.exceptions import DownloadFailedError

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.internet.defer import Deferred
    from twisted.internet.interfaces import IAddress
    from twisted.web._newclient import Request as TxRequest
    from twisted.web.iweb import IResponse


class HeadersTooLarge(Exception):
    """A response's status line and headers past TSE_MAX_HEADER_BYTES."""


class _BoundedHeadersParser(_LenientHTTPClientParser):
    """Scrapy's lenient response parser, failing once the header section passes its bound.  Every
    line it receives is the status line or a header line: the body is received raw."""

    header_bytes_left: int  # set by the protocol when it makes the parser

    def lineReceived(self, line: bytes) -> None:
        self.header_bytes_left -= len(line) + 1  # (and its "\n")
        if self.header_bytes_left < 0:
            raise HeadersTooLarge("the status line and headers are larger than TSE_MAX_HEADER_BYTES")
        super().lineReceived(line)


class _BoundedHeadersProtocol(_LenientHTTP11ClientProtocol):
    max_header_bytes: int

    def request(self, request: TxRequest) -> Deferred[IResponse]:
        answer = super().request(request)
        # (A raise in the parser gives the request up: its connection closed, its answer failed.)
        self._parser.__class__ = _BoundedHeadersParser
        self._parser.header_bytes_left = self.max_header_bytes
        return answer


class _BoundedHeadersFactory(_LenientHTTP11ClientFactory):
    max_header_bytes: int  # set on a subclass made for each handler

    def buildProtocol(self, addr: IAddress | None) -> _BoundedHeadersProtocol:
        protocol = _BoundedHeadersProtocol(self._quiescentCallback)
        protocol.max_header_bytes = self.max_header_bytes
        return protocol


class BoundedHeadersDownloadHandler(HTTP11DownloadHandler):
    """``http`` and ``https`` (settings.py: DOWNLOAD_HANDLERS): Scrapy's, a response's header section
    bounded to TSE_MAX_HEADER_BYTES."""

    def __init__(self, crawler: Crawler):
        super().__init__(crawler)
        bound = max(crawler.settings.getint("TSE_MAX_HEADER_BYTES"), 1)
        self._pool._factory = type("BoundedHeadersFactory", (_BoundedHeadersFactory,), {"max_header_bytes": bound})

    async def download_request(self, request: Request) -> Response:
        try:
            return await super().download_request(request)
        except DownloadFailedError as error:
            too_large = _headers_too_large(error.__cause__)
            if too_large is None:
                raise
            raise too_large from None  # (not retried: DownloadFailedError is, and the same answer would come)


def _headers_too_large(cause: Any) -> HeadersTooLarge | None:
    """The HeadersTooLarge among the reasons of a Twisted ResponseFailed, or None."""
    for reason in getattr(cause, "reasons", None) or ():
        if isinstance(getattr(reason, "value", None), HeadersTooLarge):
            return reason.value
    return None
