"""CrawlRecordMiddleware: writes the crawl record (TSE_RECORD), one line per request.

The format is rules/files/crawlrecord.py's.  Next to the downloader, the
middleware sees every attempt as sent and answered: robots.txt, each
redirect hop, each retry.  A page's last attempt waits for the page's fate
(saved with its docID, failed, or not saved) before its line is written.
Lines are appended with one write each, so a killed crawl leaves at most one
torn line, which a resumed crawl cuts before it appends.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from dataclasses import dataclass, field, replace
from time import monotonic, time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import Request, Spider, signals
from scrapy.exceptions import CloseSpider, IgnoreRequest, NotConfigured
from scrapy.http.request import NO_CALLBACK
from scrapy.spidermiddlewares.httperror import HttpError
from scrapy.utils.httpobj import urlparse_cached
from twisted.python.failure import Failure

from ...exitcodes import WRITE_ERROR
from ...resume.statedb import RESUMABLE
from ...rules.files.crawlrecord import (
    IGNORED_KINDS,
    MAX_LINKS,
    MAX_LINKS_TEXT,
    MAX_URL,
    RequestRecord,
    format_record,
)
from ...update.extension import UpdateExtension, update_session
from ..signals import page_done
from .offsite import SITEMAP_REQUEST, URL_NOT_TAKEN, URL_TOO_LONG
from .redirect import INVALID_REDIRECT, TOO_MANY_REDIRECTS

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

logger = logging.getLogger(__name__)

# The stats that count ignored links, by the record's kinds.
IGNORED_STATS = {"external": "offsite/filtered", "duplicate": "dupefilter/filtered", "denied": "tse/denied"}

TOO_LARGE = "larger than DOWNLOAD_MAXSIZE"
HEADERS_TOO_LARGE = "headers larger than TSE_MAX_HEADER_BYTES"  # (handler.py)
# Reasons (``failure_reason``) that say something of the page itself, not of its site's state for now,
# besides those update/extension.py knows: an update does not keep a saved copy for them (the spider).
LASTING_REASONS = frozenset({URL_TOO_LONG, HEADERS_TOO_LARGE, TOO_MANY_REDIRECTS, INVALID_REDIRECT})
# Short reasons for the exceptions a download fails with (by class name: Scrapy's and Twisted's).
DATA_LOSS = "data loss"  # an answer cut short (its Content-Length or last chunk never came)
_REASONS = {
    "DownloadTimeoutError": "timeout",
    "TimeoutError": "timeout",
    "TCPTimedOutError": "timeout",
    "DownloadConnectionRefusedError": "connection refused",
    "ConnectionRefusedError": "connection refused",
    "CannotResolveHostError": "dns lookup failed",
    "DNSLookupError": "dns lookup failed",
    "DownloadCancelledError": "cancelled (too large?)",
    "ResponseDataLossError": DATA_LOSS,
    "ConnectionLost": "connection lost",
    "ConnectionDone": "connection lost",
    "ResponseFailed": "connection lost",
    "ResponseNeverReceived": "connection lost",
    "UnsupportedURLSchemeError": "unsupported scheme",
    "HeadersTooLarge": HEADERS_TOO_LARGE,
}


def decompressed_too_large(error: BaseException) -> bool:
    """Whether *error* is Scrapy's refusal of a response whose body, decompressed (``Content-Encoding``),
    grew past DOWNLOAD_MAXSIZE: an IgnoreRequest raised from its private error of it (Scrapy 2.19)."""
    return isinstance(error, IgnoreRequest) and type(error.__cause__).__name__ == "_DecompressionMaxSizeExceeded"


def failure_reason(error: BaseException) -> str:
    """A short reason for *error*, a request's failure."""
    if isinstance(error, HttpError):
        return f"http {error.response.status}"
    if isinstance(error, IgnoreRequest):
        if decompressed_too_large(error):
            return TOO_LARGE
        message = str(error)
        if "robots.txt" in message:
            return "robots.txt"
        # Scrapy's own offsite check refuses a redirect off the site; ours, a link.
        if message.startswith(("IgnExtrn", "Filtered offsite request")):
            return "offsite"
        if message.startswith("IgnDeny"):
            return "denied"
        for reason in (URL_TOO_LONG, TOO_MANY_REDIRECTS, INVALID_REDIRECT):
            if message.startswith(reason):
                return reason
        if message.startswith(URL_NOT_TAKEN):  # "not a page: a .pdf URL ...", up to the URL
            return message.split(": http", 1)[0]
        return "ignored"
    if type(error).__name__ == "DownloadCancelledError" and "larger than download max size" in str(error):
        return TOO_LARGE  # (Scrapy's message for a body past DOWNLOAD_MAXSIZE: said, not guessed)
    return _REASONS.get(type(error).__name__, type(error).__name__)


@dataclass
class _Attempt:
    """One request as the record knows it, before its line is written."""

    url: str
    depth: int
    host: str
    sent: float  # time the downloader got it
    sent_clock: float = field(default_factory=monotonic)
    start: float | None = None
    end: float | None = None
    # When it left the downloader (its answer in), by both clocks: the moment politeness counts the
    # delay from, before the middlewares (slower under load) see the answer.
    left: tuple[float, float] | None = None
    status: int | None = None
    failure: str | None = None
    size: int = 0
    redirect: bool = False  # a 3xx answer with a Location


class CrawlRecordMiddleware:
    """A downloader middleware that records each request (see the module's docstring)."""

    def __init__(self, crawler: Crawler, path: str):
        self.crawler = crawler
        self.path = path
        self.fd: int | None = None
        self.worker: str | None = crawler.settings.get("TSE_WORKER")  # set for a distributed worker
        self.sent: dict[Request, _Attempt] = {}  # attempts on their way
        self.pending: dict[Any, _Attempt] = {}  # page key -> its last attempt, until the page's fate is known
        self.ignored_before = dict.fromkeys(IGNORED_KINDS, 0)
        self.update: UpdateExtension | None = None  # an update's catalog: every line says "update"

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlRecordMiddleware:
        path = crawler.settings.get("TSE_RECORD")
        if not path:
            raise NotConfigured
        middleware = cls(crawler, str(path))
        connect = crawler.signals.connect
        connect(middleware.spider_opened, signal=signals.spider_opened)
        connect(middleware.spider_closed, signal=signals.spider_closed)
        connect(middleware.item_scraped, signal=signals.item_scraped)
        connect(middleware.item_not_saved, signal=signals.item_dropped)
        connect(middleware.item_not_saved, signal=signals.item_error)
        connect(middleware.spider_error, signal=signals.spider_error)
        connect(middleware.page_done, signal=page_done)
        connect(middleware.request_dropped, signal=signals.request_dropped)
        connect(middleware.request_left_downloader, signal=signals.request_left_downloader)
        return middleware

    # The file

    def spider_opened(self, spider: Spider) -> None:
        session = update_session(self.crawler)
        self.update = session if session is not None and session.is_update else None
        try:
            self.fd = self._open()
        except OSError as error:
            message = f"cannot write the crawl record {self.path}: {error.strerror or error}"
            logger.info("Stopping the crawl: %s", message)  # (said once, by the reason line, on a quiet terminal)
            self.crawler.stats.set_value("tse/error", message)
            raise CloseSpider(WRITE_ERROR) from None

    def _open(self) -> int:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise OSError("another crawl is writing it") from None
            whole = _whole_lines_end(fd)
            size = os.fstat(fd).st_size
            if whole < size:
                logger.warning("%s: removed a torn last line (%d bytes) of a killed crawl", self.path, size - whole)
                os.ftruncate(fd, whole)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _write(self, attempt: _Attempt, outcome: str, **fields: Any) -> None:
        if self.fd is None:
            return
        ignored = {}
        stats = self.crawler.stats
        for kind, stat in IGNORED_STATS.items():
            now = stats.get_value(stat, 0)
            ignored[kind], self.ignored_before[kind] = now - self.ignored_before[kind], now
        start = attempt.start
        record = RequestRecord(
            url=attempt.url,
            outcome=outcome,
            depth=attempt.depth,
            host=attempt.host,
            status=attempt.status,
            failure=attempt.failure,
            bytes=attempt.size,
            start=start,
            end=attempt.end,
            wait=max(start - attempt.sent, 0.0) if start is not None else 0.0,
            worker=self.worker,
            ignored=ignored,
            update=self.update is not None,
        )
        self._write_line(replace(record, **fields) if fields else record)

    def _write_line(self, record: RequestRecord) -> None:
        if self.fd is None:
            return
        line = format_record(record).encode("ascii")
        try:
            os.write(self.fd, line)
        except OSError as error:
            self._fail(f"cannot write the crawl record {self.path}: {error.strerror}")

    def _fail(self, message: str) -> None:
        """Stop the crawl: the record could not be written (a full disk).  Resumable: a resume cuts a torn
        line and appends, and the reason line says how (``outcome.crawl_failure``)."""
        from scrapy.utils.defer import deferred_from_coro

        logger.info("Stopping the crawl: %s", message)  # (said once, by the reason line, on a quiet terminal)
        os.close(self.fd)
        self.fd = None
        if not self.crawler.stats.get_value("tse/error"):
            self.crawler.stats.set_value("tse/error", message)
            self.crawler.stats.set_value(RESUMABLE, True)
        deferred_from_coro(self.crawler.engine.close_spider_async(reason=WRITE_ERROR))

    def spider_closed(self, spider: Spider) -> None:
        for attempt in [*self.pending.values(), *self.sent.values()]:
            self._write(attempt, "unsaved")
        self.pending.clear()
        self.sent.clear()
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError as error:  # the crawl state stays: --resume cuts a torn line and goes on
                if not self.crawler.stats.get_value("tse/error"):
                    message = f"cannot write the crawl record {self.path}: {error.strerror}"
                    self.crawler.stats.set_value("tse/error", message)
                    self.crawler.stats.set_value(RESUMABLE, True)
            self.fd = None

    # Each attempt

    def process_request(self, request: Request) -> None:
        key = _page_key(request)
        earlier = self.pending.pop(key, None) if key is not None else None
        if earlier is not None:  # the next hop of a redirect, or a retry of an attempt that failed
            self._write(earlier, "redirect" if earlier.redirect else "retried")
        self.sent[request] = _attempt(request)

    def request_left_downloader(self, request: Request, spider: Spider | None = None) -> None:
        attempt = self.sent.get(request)
        if attempt is not None and attempt.left is None:
            attempt.left = (time(), monotonic())

    def process_response(self, request: Request, response: Response) -> Response:
        attempt = self.sent.pop(request, None)
        if attempt is None:
            return response  # not sent by this process (a page read back on resume)
        self._answered(attempt, request.meta.get("download_latency"))
        attempt.status, attempt.size = response.status, len(response.body)
        attempt.redirect = 300 <= response.status < 400 and b"Location" in response.headers
        key = _page_key(request)
        if _is_robots(request):
            self._write(attempt, "robots")
        elif request.meta.get(SITEMAP_REQUEST):  # (whatever its status: a sitemap is no page that failed)
            self._write(attempt, "sitemap")
        elif key is None:
            self._write(attempt, "redirect" if attempt.redirect else "failed" if response.status != 200 else "unsaved")
        else:
            # Its line waits for what comes next: the redirect's next hop, a retry, or the page's fate.
            self.pending[key] = attempt
        return response

    def process_exception(self, request: Request, exception: BaseException) -> None:
        attempt = self.sent.pop(request, None)
        if attempt is None:
            return
        self._answered(attempt, None)
        attempt.failure = failure_reason(exception)
        key = _page_key(request)
        if key is None:
            self._write(
                attempt,
                "robots" if _is_robots(request) else "sitemap" if request.meta.get(SITEMAP_REQUEST) else "failed",
            )
        else:
            self.pending[key] = attempt

    @staticmethod
    def _answered(attempt: _Attempt, latency: float | None) -> None:
        attempt.end, clock = attempt.left if attempt.left is not None else (time(), monotonic())
        held = clock - attempt.sent_clock
        # The download handler times the exchange itself; the rest of the time it was held by politeness.
        attempt.start = attempt.end - min(latency, held) if latency is not None else attempt.sent

    # Each page's fate

    def moved(self, url: str, depth: int, old_doc: int, new_doc: int) -> None:
        """Saved page *old_doc* is *new_doc* now (a distributed crawl's last worker fills freed docIDs)."""
        # Not a request: the links ignored since the line before stay for the next request's line.
        host = urlsplit(url).hostname or ""
        self._write_line(RequestRecord(url, "moved", depth, host, doc=new_doc, worker=self.worker, moved_from=old_doc))

    def item_scraped(self, item: Any, response: Response, spider: Spider) -> None:
        attempt = self.pending.pop(_page_key(response.request), None)
        if attempt is None:
            if getattr(item, "replayed", False):  # written just before a kill, read back on resume: not fetched
                host = urlparse_cached(response).hostname or ""
                read = _Attempt(item.url, item.depth, host, time(), size=len(item.body))
                self._write(read, "saved", doc=item.doc_id)
            return
        doc = getattr(item, "doc_id", None)
        if doc is None:  # another worker saved it first (its lease had run out)
            self._write(attempt, "unsaved")
            return
        links, more = _bounded(response.meta.get("tse_links", ()))
        outcome = "unchanged" if self.update is not None and self.update.take_kept(doc) else "saved"
        self._write(attempt, outcome, doc=doc, links=links, more_links=more)

    def item_not_saved(self, item: Any, response: Response, spider: Spider, **kwargs: Any) -> None:
        attempt = self.pending.pop(_page_key(response.request), None)
        if attempt is not None:
            self._write(attempt, "unsaved")

    def spider_error(self, failure: Failure, response: Response, spider: Spider) -> None:
        attempt = self.pending.pop(_page_key(response.request), None)
        if attempt is not None:
            self._write(attempt, "unsaved", failure=f"spider error: {type(failure.value).__name__}")

    def request_dropped(self, request: Request, spider: Spider) -> None:
        """A redirect's next hop not fetched: its target was seen already, or it is a loop."""
        attempt = self.pending.pop(_page_key(request), None)
        if attempt is None:
            return
        if request.meta.get("tse_redirect_loop"):
            self._write(attempt, "failed", failure="redirect loop")
        else:
            self._write(attempt, "redirect")

    def page_done(self, request: Request, status: int | None = None, reason: str | None = None, **kw: Any) -> None:
        attempt = self.pending.pop(_page_key(request), None)
        if attempt is not None and attempt.redirect and attempt.url != request.url:
            # The redirect was followed, and its target refused before it was sent (off the site).
            self._write(attempt, "redirect")
            attempt = None
        if attempt is None:  # refused before it was sent (robots.txt, a redirect off the site)
            attempt = _attempt(request)
        redirect_failed = attempt.redirect and reason in (TOO_MANY_REDIRECTS, INVALID_REDIRECT)
        if attempt.failure is None and reason is not None and (attempt.status in (None, 200) or redirect_failed):
            attempt.failure = reason  # (and a 3xx not followed for that: one to ftp: says its status alone)
        self._write(attempt, "failed")


def _attempt(request: Request) -> _Attempt:
    """*request* as the record knows it when the downloader gets it (or refuses it)."""
    return _Attempt(request.url, request.meta.get("depth", 0), urlparse_cached(request).hostname or "", time())


def _page_key(request: Request | None) -> Any:
    """What every attempt at one page shares (a redirect or retry keeps the scheduler's token)."""
    if request is None:
        return None
    meta = request.meta
    return meta.get("tse_token", meta.get("tse_lease"))


def _bounded(links: Any) -> tuple[tuple[str, ...], int]:
    """The links a line lists (at most MAX_LINKS, MAX_LINKS_TEXT bytes as the line writes them, none longer
    than MAX_URL characters), and how many more there were.  Measured as written, escaped: a link of 70,000
    characters, or 1.4 million characters of CJK links (6 bytes each, ``\\u65e5``), made a line that
    ``parse_record`` refuses, and ``tse report`` skipped the saved page's line (a review's find)."""
    kept, size = [], 0
    for link in links:
        if len(kept) == MAX_LINKS:
            break
        if len(link) > MAX_URL:
            continue  # never crawled (TSE_MAX_URL_LENGTH) and never read back: counted in more_links
        size += len(json.dumps(link)) - 2  # (its quotes left out, as before)
        if size > MAX_LINKS_TEXT:
            break
        kept.append(link)
    return tuple(kept), len(links) - len(kept)


def _is_robots(request: Request) -> bool:
    return request.callback is NO_CALLBACK and urlparse_cached(request).path == "/robots.txt"


def _whole_lines_end(fd: int) -> int:
    """The size of the file up to and including its last newline."""
    end = os.fstat(fd).st_size
    position = end
    while position > 0:
        size = min(65536, position)
        position -= size
        chunk = os.pread(fd, size, position)
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            return position + newline + 1
    return 0
