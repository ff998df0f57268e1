"""WarcMiddleware: archives every HTTP exchange as WARC/1.1 records (TSE_WARC)."""

from __future__ import annotations

import fcntl
import json
import logging
import os
from dataclasses import dataclass
from http import HTTPStatus
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO
from urllib.parse import urlsplit
from weakref import WeakKeyDictionary

from scrapy import Request, signals
from scrapy.exceptions import CloseSpider, NotConfigured
from scrapy.http import Headers, Response
from scrapy.utils.defer import deferred_from_coro
from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from .. import __version__
from ..exitcodes import WRITE_ERROR
from .warcindex import NotAWarcFile, scan_warc, write_cdxj

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

NOT_MODIFIED_PROFILE = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
WARC_1_1 = "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"
# Scrapy has already undone the chunked coding of the body it hands over; a
# Transfer-Encoding header would tell a WARC reader to undo it again.
DROPPED_RESPONSE_HEADERS = {b"transfer-encoding"}
# Meant for the proxy, not the server, and a secret: not archived.
DROPPED_REQUEST_HEADERS = {b"proxy-authorization"}


@dataclass(frozen=True)
class _Sent:
    """A request as it left the downloader middlewares."""

    method: str
    headers: Headers
    body: bytes


class WarcMiddleware:
    """A downloader middleware next to the downloader: a ``request`` record and a ``response``
    (or, for a 304, a ``revisit``) record for every HTTP answer, appended to ``TSE_WARC``;
    the ``.cdxj`` index beside it is rewritten when the crawl closes."""

    def __init__(self, crawler: Crawler, path: str | os.PathLike):
        self.crawler = crawler
        self.path = Path(path)
        self.fsync = crawler.settings.getbool("TSE_FSYNC")
        self.file: BinaryIO | None = None
        self.failed = False
        # Requests that reached the downloader.  A response to any other one
        # was made up by a middleware (a page replayed from disk on resume, a
        # cached copy): it is not an HTTP exchange.
        self.sent: WeakKeyDictionary[Request, _Sent] = WeakKeyDictionary()
        # Each exchange is built here, then appended with one write.
        self.buffer = BytesIO()
        self.writer = WARCWriter(self.buffer, gzip=True, warc_version="1.1")
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WarcMiddleware:
        path = crawler.settings.get("TSE_WARC")
        if not path:
            raise NotConfigured
        return cls(crawler, path)

    def spider_opened(self) -> None:
        """Open the WARC file for appending: cut a record torn by a killed crawl, else start it with warcinfo."""
        try:
            self.file = self._open()
        except (OSError, NotAWarcFile) as error:
            self._record_error(_reason(error, f"cannot write the WARC file {self.path}"))
            # Scrapy's way for a component that cannot start to close the spider.
            raise CloseSpider(WRITE_ERROR) from None

    def _open(self) -> BinaryIO:
        file = open(self.path, "ab")  # noqa: SIM115 (kept open for the whole crawl)
        try:
            # Scanning and cutting a file another process is appending to would
            # destroy its records: each worker or crawl needs its own file.
            try:
                fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise OSError("another crawl is writing it") from None
            scan = scan_warc(self.path)
            if scan.end < scan.size:
                logger.warning(
                    "%s: removed the last %d bytes, a record cut short (a crawl killed or failing while writing it)",
                    self.path,
                    scan.size - scan.end,
                )
                os.ftruncate(file.fileno(), scan.end)
            if scan.end == 0:
                self.writer.write_record(self.writer.create_warcinfo_record(self.path.name, self._warcinfo()))
                self._append(file)
        except BaseException:
            file.close()
            raise
        return file

    def _warcinfo(self) -> dict[str, str]:
        settings = self.crawler.settings
        return {
            "software": f"tse-scrapy/{__version__}",
            "format": "WARC File Format 1.1",
            "conformsTo": WARC_1_1,
            "robots": "obey" if settings.getbool("ROBOTSTXT_OBEY") else "ignore",
            "http-header-user-agent": settings.get("USER_AGENT"),
            "tse-arguments": json.dumps(settings.getdict("TSE_ARGUMENTS"), sort_keys=True),
        }

    def process_request(self, request: Request) -> None:
        if self.file is not None and urlsplit(request.url).scheme in ("http", "https"):
            self.sent[request] = _Sent(request.method, request.headers.copy(), request.body)

    def process_response(self, request: Request, response: Response) -> Response:
        sent = self.sent.pop(request, None)
        if sent is None or self.file is None or self.failed or "replayed" in response.flags:
            return response
        try:
            self.write_exchange(request, sent, response)
        except OSError as error:
            self.fail(_reason(error, f"cannot write the WARC file {self.path}"))
        return response

    def write_exchange(self, request: Request, sent: _Sent, response: Response) -> None:
        """Append the response (or revisit) record, then its request record, with one write."""
        self.buffer.seek(0)
        self.buffer.truncate()  # what an exchange that raised half-way left behind
        protocol = _protocol(response.protocol)
        answer = self._response_record(request, response, protocol)
        self.writer.write_request_response_pair(_request_record(self.writer, request, sent, protocol), answer)
        self._append(self.file)
        self.crawler.stats.inc_value("tse/warc_exchanges")

    def _response_record(self, request: Request, response: Response, protocol: str) -> ArcWarcRecord:
        try:
            reason = HTTPStatus(response.status).phrase
        except ValueError:  # a status Python has no name for
            reason = ""
        http_headers = StatusAndHeaders(
            f"{response.status} {reason}".rstrip(), _header_list(response.headers, DROPPED_RESPONSE_HEADERS), protocol
        )
        if response.status == 304:
            # Not modified: the headers only; the conditional middleware names the copy it has.
            record = self.writer.create_warc_record(request.url, "revisit", http_headers=http_headers)
            record.rec_headers.add_header("WARC-Profile", NOT_MODIFIED_PROFILE)
            original = request.meta.get("tse_revisit_of")
            if isinstance(original, dict) and original.get("uri") and original.get("date"):
                record.rec_headers.add_header("WARC-Refers-To-Target-URI", str(original["uri"]))
                record.rec_headers.add_header("WARC-Refers-To-Date", str(original["date"]))
        else:
            record = self.writer.create_warc_record(
                request.url,
                "response",
                payload=BytesIO(response.body),
                length=len(response.body),
                http_headers=http_headers,
            )
            # The date a later revisit of this page refers to (the catalog keeps it).
            request.meta["tse_warc_date"] = record.rec_headers.get_header("WARC-Date")
        if response.ip_address is not None:
            record.rec_headers.add_header("WARC-IP-Address", str(response.ip_address))
        if "dataloss" in response.flags:  # DOWNLOAD_FAIL_ON_DATALOSS=False kept a body cut short
            record.rec_headers.add_header("WARC-Truncated", "disconnect")
        return record

    def _append(self, file: BinaryIO) -> None:
        """Append what the writer built, whole, and flush it (a killed crawl loses at most a torn tail)."""
        data = self.buffer.getvalue()
        self.buffer.seek(0)
        self.buffer.truncate()
        file.write(data)
        file.flush()
        if self.fsync:
            os.fsync(file.fileno())

    def spider_closed(self) -> None:
        """Close the WARC file and index all of it, this run and earlier ones."""
        if self.file is None:
            return
        try:
            self.file.close()
        except OSError as error:
            self._record_error(_reason(error, f"cannot write the WARC file {self.path}"))
        self.file = None
        if self.failed:
            return  # a torn record may end the file: the crawl that resumes cuts it, then indexes
        try:
            write_cdxj(self.path, fsync=self.fsync)
        except OSError as error:
            self._record_error(_reason(error, f"cannot write the index of {self.path}"))

    def fail(self, message: str) -> None:
        """Stop the crawl at once; the records written so far stay valid."""
        if self.failed:
            return
        self._record_error(message)
        deferred_from_coro(self.crawler.engine.close_spider_async(reason=WRITE_ERROR))

    def _record_error(self, message: str) -> None:
        self.failed = True
        logger.error(message)
        if not self.crawler.stats.get_value("tse/error"):
            self.crawler.stats.set_value("tse/error", message)


def _request_record(writer: WARCWriter, request: Request, sent: _Sent, protocol: str) -> ArcWarcRecord:
    """The request as sent: its line with the path and query, its headers (with Host), its body."""
    parts = urlsplit(request.url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = _header_list(sent.headers, DROPPED_REQUEST_HEADERS)
    if not any(name.lower() == "host" for name, _ in headers):
        # Added by the HTTP client below Scrapy's middlewares.
        headers.insert(0, ("Host", parts.netloc.rpartition("@")[2]))
    http_headers = StatusAndHeaders(f"{sent.method} {target} {protocol}", headers, is_http_request=True)
    return writer.create_warc_record(
        request.url, "request", payload=BytesIO(sent.body), length=len(sent.body), http_headers=http_headers
    )


def _header_list(headers: Headers, dropped: set[bytes]) -> list[tuple[str, str]]:
    # Header bytes are latin-1 on the wire; warcio writes them back as they were
    # (percent-encoding what is not ASCII).
    return [
        (name.decode("latin-1"), value.decode("latin-1"))
        for name, values in headers.items()
        if name.lower() not in dropped
        for value in values
    ]


def _protocol(protocol: str | None) -> str:
    """The HTTP version for the status and request lines: Scrapy says "h2" for HTTP/2."""
    if protocol and protocol.startswith("HTTP/"):
        return protocol
    return "HTTP/2" if protocol == "h2" else "HTTP/1.1"


def _reason(error: OSError | NotAWarcFile, prefix: str) -> str:
    """One line for the log and the exit message."""
    if isinstance(error, OSError) and error.strerror:
        return f"{prefix}: {error.strerror}"
    return f"{prefix}: {error}"
