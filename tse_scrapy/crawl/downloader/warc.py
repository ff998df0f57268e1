"""WarcMiddleware: archives every HTTP exchange as WARC/1.1 records (TSE_WARC)."""

from __future__ import annotations

import fcntl
import json
import logging
import os
import re
import threading
import zlib
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_for
from dataclasses import dataclass, field
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
from warcio.statusandheaders import StatusAndHeaders, StatusAndHeadersParser
from warcio.utils import Digester
from warcio.warcwriter import WARCWriter

from ... import __version__
from ...exitcodes import WRITE_ERROR
from ...resume.statedb import RESUMABLE
from ..warcindex import CdxjIndexer, NotAWarcFile, scan_warc, write_cdxj

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

NOT_MODIFIED_PROFILE = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
WARC_1_1 = "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"
# Scrapy has already undone the chunked coding of the body it hands over; a
# Transfer-Encoding header would tell a WARC reader to undo it again.
DROPPED_RESPONSE_HEADERS = {b"transfer-encoding"}
# The headers that describe a body as it was coded on the wire: left out where the body is handed
# over decoded (by the browser to this archive, by Scrapy to the browser: crawl/downloader/render.py).
CODED_BODY_HEADERS = frozenset({"transfer-encoding", "content-encoding", "content-length"})
# Meant for the proxy, not the server, and a secret: not archived.
DROPPED_REQUEST_HEADERS = {b"proxy-authorization"}
# The gzip level of each record.  warcio's own writer uses 9; here 1: on the wikipedia benchmark
# it compresses 2.9x faster than 6 and 4x faster than 9, for a file 17 % larger (52.8 MB
# against 45.0 and 44.8 MB for 195 MB of pages), and compressing is most of a record's cost.
GZIP_LEVEL = 1


@dataclass(frozen=True)
class _Sent:
    """A request as it left the downloader middlewares."""

    method: str
    headers: Headers
    body: bytes


@dataclass(frozen=True)
class _Exchange:
    """What the writer thread reads of one exchange, copied on the reactor thread: Scrapy's
    objects are never touched from another thread."""

    url: str
    date: str  # the answer's WARC-Date, known to the spider before the record is written
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    protocol: str
    ip_address: str | None
    truncated: bool  # DOWNLOAD_FAIL_ON_DATALOSS=False kept a body cut short
    refers_to: tuple[str, str] | None  # a 304's earlier copy: its URI and WARC-Date
    sent: _Sent
    # Set by the writer thread once it compresses the answer (or gives up): the GIL is free.
    compressing: threading.Event = field(default_factory=threading.Event)


class WarcMiddleware:
    """A downloader middleware next to the downloader: a ``request`` record and a ``response``
    (or, for a 304, a ``revisit``) record for every HTTP answer, appended to ``TSE_WARC``;
    the ``.cdxj`` index beside it is rewritten when the crawl closes.

    The records are built, compressed, appended and indexed by one writer thread, in the order
    the answers came (the reactor thread only copies what it needs); ``wait_written`` is how the
    pipeline saves a page only once its exchange is in the file."""

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
        # Each record is written here, uncompressed, by warcio, then gzipped as its own member.
        self.buffer = BytesIO()
        self.writer = WARCWriter(self.buffer, gzip=False, warc_version="1.1")
        # The writer thread (one: the records keep the order they were handed over in) and what it
        # shares with the reactor thread: it sets error, end, written and lines; the reactor
        # thread reads them once the thread has finished what it was given (wait_written).
        self.worker: ThreadPoolExecutor | None = None
        self.last: Future | None = None  # the last exchange handed to the writer thread
        self.error: Exception | None = None  # why the writer thread stopped writing
        self.end = 0  # the file's size, as the writer thread has written it
        self.written = 0  # exchanges written
        self.index: CdxjIndexer | None = None  # made in the writer thread (it imports cdxj-indexer)
        self.lines: list[str] = []  # the CDXJ lines of this run's records
        # The index of the records an earlier run wrote, made in a thread of its own as the crawl goes.
        self.earlier: _Indexing | None = None
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
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tse-warc")

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
            self.end = scan.end
            if scan.end == 0:
                warcinfo = self.writer.create_warcinfo_record(self.path.name, self._warcinfo())
                self._append(file, _gzip(self._record_bytes(warcinfo)))
            else:
                # Only appended to from now on: its records are indexed while the crawl goes.
                self.earlier = _Indexing(self.path, scan.end)
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
        if sent is None or self.worker is None or "replayed" in response.flags:
            return response
        self._surface_error()
        if self.failed:
            return response
        # The answer's WARC-Date, set now: the spider keeps it for a later revisit to refer to.
        date = self.writer.curr_warc_date()
        if response.status != 304:
            request.meta["tse_warc_date"] = date
        exchange = _exchange(request, sent, response, date)
        self.last = self.worker.submit(self._write, exchange)
        # Let the writer thread run until it compresses the body, which it does without the GIL
        # while the spider parses the page.  Otherwise it would wait for the GIL until the
        # pipeline waits for it, and nothing would overlap.
        exchange.compressing.wait()
        return response

    def archive(
        self,
        *,
        url: str,
        method: str,
        request_headers: dict[str, str],
        status: int,
        headers: list[tuple[str, str]],
        body: bytes,
    ) -> None:
        """Archive an exchange made outside Scrapy's downloader: a request of the browser that
        renders a page (``--render``), as it was sent and answered."""
        if self.worker is None or self.file is None or self.failed or urlsplit(url).scheme not in ("http", "https"):
            return
        sent = _Sent(method, Headers(request_headers), b"")
        exchange = _Exchange(
            url=url,
            date=self.writer.curr_warc_date(),
            status=status,
            headers=[(name, value) for name, value in headers if name.lower() not in CODED_BODY_HEADERS],
            body=body,
            protocol="HTTP/1.1",
            ip_address=None,
            truncated=False,
            refers_to=None,
            sent=sent,
        )
        self.last = self.worker.submit(self._write, exchange)

    def wait_written(self) -> None:
        """Return once every exchange handed over so far is in the file, flushed (and fsynced with
        ``TSE_FSYNC``).  If one could not be written, the crawl stops here, on the reactor thread."""
        last = self.last
        if last is not None:
            wait_for([last])
        self._surface_error()

    def _surface_error(self, *, closing: bool = False) -> None:
        """Tell the crawl what the writer thread has done: its count, and why it stopped writing
        (which stops the crawl, unless it is *closing* already)."""
        if self.written:
            self.crawler.stats.set_value("tse/warc_exchanges", self.written)
        error = self.error
        if error is not None and not self.failed:
            message = _reason(error, f"cannot write the WARC file {self.path}")
            if closing:
                self._record_error(message, error, resumable=True)
            else:
                self.fail(message, error)

    # -- in the writer thread ---------------------------------------------------
    def _write(self, exchange: _Exchange) -> None:
        """Build the response (or revisit) record and its request record, append them with one
        write, and index the answer.  Never raises: an error stops all writing (the file may end
        with a torn record) and is reported on the reactor thread."""
        try:
            if self.error is not None or self.file is None:
                return
            answer = self._response_record(exchange)
            answer_bytes = self._record_bytes(answer)
            request = _gzip(self._record_bytes(_request_record(self.writer, exchange, answer)))
        except Exception as error:  # any error stops the crawl, on the reactor thread
            self.error = error
            return
        finally:
            exchange.compressing.set()
        try:
            answer_member = _gzip(answer_bytes)  # most of the work, and the GIL is free meanwhile
            if self.index is None:
                self.index = CdxjIndexer(self.path.name)
            lines = self.index.index_built(answer, self.end, len(answer_member))
            self._append(self.file, answer_member + request)
        except Exception as error:
            self.error = error
            return
        self.lines += lines
        self.written += 1

    def _response_record(self, exchange: _Exchange) -> ArcWarcRecord:
        try:
            reason = HTTPStatus(exchange.status).phrase
        except ValueError:  # a status Python has no name for
            reason = ""
        http_headers = StatusAndHeaders(f"{exchange.status} {reason}".rstrip(), exchange.headers, exchange.protocol)
        if exchange.status == 304:
            # Not modified: the headers only; the conditional middleware names the copy it has.
            record = self.writer.create_warc_record(
                exchange.url,
                "revisit",
                http_headers=http_headers,
                warc_headers_dict=_warc_headers("revisit", exchange.url, exchange.date),
            )
            record.rec_headers.add_header("WARC-Profile", NOT_MODIFIED_PROFILE)
            if exchange.refers_to is not None:
                record.rec_headers.add_header("WARC-Refers-To-Target-URI", exchange.refers_to[0])
                record.rec_headers.add_header("WARC-Refers-To-Date", exchange.refers_to[1])
        else:
            # The digests warcio would compute, each in one pass (warcio reads the body 16 kB at a time).
            http_headers.compute_headers_buffer(self.writer.header_filter)
            payload_digest, block_digest = Digester("sha1"), Digester("sha1")
            payload_digest.update(exchange.body)
            block_digest.update(http_headers.headers_buff)
            block_digest.update(exchange.body)
            record = self.writer.create_warc_record(
                exchange.url,
                "response",
                payload=BytesIO(exchange.body),
                length=len(exchange.body),
                http_headers=http_headers,
                warc_headers_dict=_warc_headers(
                    "response",
                    exchange.url,
                    exchange.date,
                    {"WARC-Payload-Digest": str(payload_digest), "WARC-Block-Digest": str(block_digest)},
                ),
            )
        if exchange.ip_address is not None:
            record.rec_headers.add_header("WARC-IP-Address", exchange.ip_address)
        if exchange.truncated:
            record.rec_headers.add_header("WARC-Truncated", "disconnect")
        return record

    def _record_bytes(self, record: ArcWarcRecord) -> bytes:
        """*record* as warcio writes it (with its digests), uncompressed."""
        self.buffer.seek(0)
        self.buffer.truncate()
        self.writer.write_record(record)
        return self.buffer.getvalue()

    def _append(self, file: BinaryIO, data: bytes) -> None:
        """Append *data* (whole records) with one write, and flush it (a killed crawl loses at most a torn tail)."""
        file.write(data)
        file.flush()
        if self.fsync:
            os.fsync(file.fileno())
        self.end += len(data)

    # ---------------------------------------------------------------------------
    def spider_closed(self) -> None:
        """Write what is left to write, close the WARC file, and index all of it, this run and earlier ones."""
        if self.file is None:
            return
        if self.worker is not None:
            self.worker.shutdown(wait=True)  # each exchange takes milliseconds; after an error, none
            self.worker = None
        self._surface_error(closing=True)
        try:
            self.file.close()
        except OSError as error:
            self._record_error(_reason(error, f"cannot write the WARC file {self.path}"), resumable=True)
        self.file = None
        earlier, self.earlier = self.earlier, None
        if self.failed:
            if earlier is not None:
                earlier.stop()
            return  # a torn record may end the file: the crawl that resumes cuts it, then indexes
        try:
            lines = earlier.result() if earlier is not None else []
            write_cdxj(self.path, lines + self.lines, fsync=self.fsync)
        except Exception as error:  # the crawl state stays: --resume indexes the file again
            self._record_error(_reason(error, f"cannot write the index of {self.path}"), error)

    def fail(self, message: str, error: BaseException | None = None) -> None:
        """Stop the crawl at once; the records written so far stay valid."""
        if self.failed:
            return
        self._record_error(message, error, resumable=True)
        deferred_from_coro(self.crawler.engine.close_spider_async(reason=WRITE_ERROR))

    def _record_error(self, message: str, error: BaseException | None = None, *, resumable: bool = False) -> None:
        """*message* the crawl's reason line; *resumable* (a write that failed once the file was open, a full
        disk say): the line says how to go on, as a resume cuts a torn record and appends."""
        self.failed = True
        if error is not None and not isinstance(error, OSError):  # no write error: a bug, its traceback logged
            logger.error(message, exc_info=error)
            resumable = False
        else:  # said once, by the reason line, on a quiet terminal (the log keeps it at INFO)
            logger.info("Stopping the crawl: %s", message)
        if not self.crawler.stats.get_value("tse/error"):
            self.crawler.stats.set_value("tse/error", message)
            self.crawler.stats.set_value(RESUMABLE, resumable)


class _Indexing:
    """The CDXJ lines of the records a file held when the crawl opened it, made in a thread
    (a daemon: a crawl stopped at once does not wait for it) while the crawl appends."""

    def __init__(self, path: Path, end: int):
        self.lines: list[str] = []
        self.error: BaseException | None = None
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(path, end), name="tse-warc-index", daemon=True)
        self.thread.start()

    def _run(self, path: Path, end: int) -> None:
        try:
            self.lines = CdxjIndexer(path.name).index_file(path, end, self.stopping)
        except BaseException as error:  # reported by result()
            self.error = error

    def result(self) -> list[str]:
        self.thread.join()
        if self.error is not None:
            raise self.error
        return self.lines

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join()


def _exchange(request: Request, sent: _Sent, response: Response, date: str) -> _Exchange:
    """Copy what the writer thread needs of an exchange (headers are mutable; body bytes are not)."""
    original = request.meta.get("tse_revisit_of")
    refers_to = None
    if response.status == 304 and isinstance(original, dict) and original.get("uri") and original.get("date"):
        refers_to = (str(original["uri"]), str(original["date"]))
    return _Exchange(
        url=request.url,
        date=date,
        status=response.status,
        headers=_header_list(response.headers, DROPPED_RESPONSE_HEADERS),
        body=response.body,
        protocol=_protocol(response.protocol),
        ip_address=str(response.ip_address) if response.ip_address is not None else None,
        truncated="dataloss" in response.flags,
        refers_to=refers_to,
        sent=sent,
    )


def _request_record(writer: WARCWriter, exchange: _Exchange, answer: ArcWarcRecord) -> ArcWarcRecord:
    """The request as sent: its line with the path and query, its headers (with Host), its body;
    paired with its answer as warcio's ``write_request_response_pair`` pairs them."""
    sent = exchange.sent
    parts = urlsplit(exchange.url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = _header_list(sent.headers, DROPPED_REQUEST_HEADERS)
    if not any(name.lower() == "host" for name, _ in headers):
        # Added by the HTTP client below Scrapy's middlewares.
        headers.insert(0, ("Host", parts.netloc.rpartition("@")[2]))
    http_headers = StatusAndHeaders(f"{sent.method} {target} {exchange.protocol}", headers, is_http_request=True)
    record = writer.create_warc_record(
        exchange.url,
        "request",
        payload=BytesIO(sent.body),
        length=len(sent.body),
        http_headers=http_headers,
        warc_headers_dict=_warc_headers("request", exchange.url, exchange.date),
    )
    record.rec_headers.add_header("WARC-Concurrent-To", answer.rec_headers.get_header("WARC-Record-ID"))
    return record


def _warc_headers(record_type: str, url: str, date: str, digests: dict[str, str] | None = None) -> dict[str, str]:
    """The first WARC headers of a record, in warcio's order, with the date given (warcio would
    use the time it builds the record)."""
    return {
        "WARC-Type": record_type,
        "WARC-Record-ID": StatusAndHeadersParser.make_warc_id(),
        "WARC-Target-URI": url,
        "WARC-Date": date,
        **(digests or {}),
    }


def _header_list(headers: Headers, dropped: set[bytes]) -> list[tuple[str, str]]:
    # A WARC's HTTP headers are ASCII: each byte that is not (nor printable), percent-encoded here,
    # the rest as it was.  warcio would encode such a value itself, but only its ``name=value``
    # parts, then fail on the rest (``Link: <.../canoné.html>; rel="canonical"``: a traceback and a
    # crawl that stopped there, resumed or not).
    return [
        (_ascii(name), _ascii(value))
        for name, values in headers.items()
        if name.lower() not in dropped
        for value in values
    ]


_NOT_ASCII = re.compile(rb"[^\t\x20-\x7e]")


def _ascii(raw: bytes) -> str:
    """*raw*, a header's bytes as received, with each byte past printable ASCII percent-encoded."""
    return _NOT_ASCII.sub(lambda byte: b"%%%02X" % byte.group()[0], raw).decode("ascii")


def _protocol(protocol: str | None) -> str:
    """The HTTP version for the status and request lines: Scrapy says "h2" for HTTP/2."""
    if protocol and protocol.startswith("HTTP/"):
        return protocol
    return "HTTP/2" if protocol == "h2" else "HTTP/1.1"


def _gzip(record: bytes) -> bytes:
    """*record* as one gzip member, as warcio writes it (no name, no time), at GZIP_LEVEL: in one
    call (Python 3.11's wbits), so that the writer thread needs the GIL back only once."""
    return zlib.compress(record, GZIP_LEVEL, wbits=zlib.MAX_WBITS | 16)


def _reason(error: BaseException, prefix: str) -> str:
    """One line for the log and the exit message."""
    if isinstance(error, OSError) and error.strerror:
        return f"{prefix}: {error.strerror}"
    return f"{prefix}: {error}"
