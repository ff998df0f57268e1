"""TseRobotsTxtMiddleware: robots.txt that cannot be read means "stay out".

RFC 9309 (2.3.1.3-4): a 4xx robots.txt means no rules; a 5xx answer or a
network error (a timeout, a reset) means the site is unreachable and the
crawler must assume complete disallow.  Scrapy allows everything in both
cases; a polite crawler does not.  A robots.txt larger than DOWNLOAD_MAXSIZE
is not read either, sent as it is or compressed (Scrapy refuses the latter as
it refuses a page it is told to ignore, and then allowed everything).  Of one
that is read, its first KEPT_ROBOTS_BYTES (500 KiB, RFC 9309 2.5's least)
are parsed, to the last whole line: 21 MB of rules took 14 s and 1 GB to
parse, and 0.3 s a page to check.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import build_from_crawler

from ...update.extension import ROBOTS_FORBIDS
from ..extensions.politeness import robots_user_agent
from .record import TOO_LARGE, decompressed_too_large, failure_reason

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.robotstxt import RobotParser

DISALLOW_ALL = b"User-agent: *\nDisallow: /\n"
# What is read of each host's robots.txt, its rules and its Sitemap: lines (--sitemaps), to the last
# whole line: RFC 9309 2.5 asks crawlers to read at least 500 KiB, as Google does.
KEPT_ROBOTS_BYTES = 512 * 1024
# Why a host's pages are refused when its robots.txt is larger than DOWNLOAD_MAXSIZE (each was said
# "larger than DOWNLOAD_MAXSIZE", as if the page were).
ROBOTS_TOO_LARGE = "robots.txt larger than DOWNLOAD_MAXSIZE"


logger = logging.getLogger(__name__)
# The loggers that say a body is larger than DOWNLOAD_MAXSIZE: the download handler's, the decompression's.
_SIZE_LOGGERS = ("scrapy.core.downloader.handlers.http11", "scrapy.downloadermiddlewares.httpcompression")
_RETRY_LOGGER = "scrapy.downloadermiddlewares.retry"


def kept_robots(body: bytes) -> bytes:
    """What is read of a robots.txt of *body*: its first KEPT_ROBOTS_BYTES, to the end of the last
    whole line in them (all of them when there is none)."""
    kept = body[:KEPT_ROBOTS_BYTES]
    end = max(kept.rfind(b"\n"), kept.rfind(b"\r"))
    return kept[: end + 1] if len(body) > KEPT_ROBOTS_BYTES and end >= 0 else kept


class _NoTraceback(logging.Filter):
    """An unreachable robots.txt is a fact about the site, not a bug: log it
    on one line, without the traceback Scrapy attaches, saying what it is and why (Scrapy's line
    names the page that asked for it and ends in the exception's text, empty for a connection lost)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.exc_info = record.exc_text = None
        args = record.args
        if isinstance(args, dict) and isinstance(args.get("f_exception"), Exception):
            netloc = urlparse_cached(args["request"]).netloc if isinstance(args.get("request"), Request) else "?"
            # (f_exception kept: _SaidHere reads it next)
            record.args = {**args, "netloc": netloc, "reason": failure_reason(args["f_exception"])}
            record.msg = "robots.txt of %(netloc)s could not be read (%(reason)s): disallow all"
        return True


class _ReasonNamed(logging.Filter):
    """Scrapy's "Gave up retrying <GET URL> (failed 3 times): REASON" ends in the exception's text,
    empty for a connection reset or an answer cut short: the reason is then its name (``failure_reason``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, dict) and isinstance(args.get("reason"), BaseException) and not str(args["reason"]).strip():
            record.args = {**args, "reason": failure_reason(args["reason"])}
        return True


class _SaidHere(logging.Filter):
    """A robots.txt larger than DOWNLOAD_MAXSIZE is said in one line (``_robots_error``): not also by
    the downloader's warning, the decompression's, or Scrapy's error naming the page that asked for it."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, dict) and isinstance(args.get("f_exception"), Exception):  # (Scrapy's robots.txt error)
            return failure_reason(args["f_exception"]) != TOO_LARGE
        message = record.getMessage()
        return not (
            "/robots.txt>" in message and ("larger than download max size" in message or "DOWNLOAD_MAXSIZE" in message)
        )


class RobotsHopRefused(IgnoreRequest):
    """A robots.txt's redirect not followed (``--render``: to a host a page may not make the crawler
    contact): that robots.txt was not read, so the host is "disallow all", as an unreachable one."""


class TseRobotsTxtMiddleware(RobotsTxtMiddleware):
    """Scrapy's robots.txt middleware, with a 5xx or unreachable robots.txt as "disallow all"."""

    def __init__(self, crawler: Crawler):
        super().__init__(crawler)
        # The product token, not the whole User-Agent (Scrapy's attribute, as of Scrapy 2.19; it gives
        # Protego the whole string when ROBOTSTXT_USER_AGENT is unset).
        self._robotstxt_useragent = robots_user_agent(crawler.settings)
        self.bodies: dict[str, bytes] = {}  # netloc -> its robots.txt as fetched (a 200's), for Sitemap: lines
        # netloc -> why its robots.txt could not be read ("connection refused", "robots.txt answered HTTP 503"),
        # the reason its pages are refused (said when a seed is: crawl/seeds.py)
        self.unreachable: dict[str, str] = {}
        logger = logging.getLogger(RobotsTxtMiddleware.__module__)
        if not any(isinstance(f, _NoTraceback) for f in logger.filters):
            logger.addFilter(_NoTraceback())
        for name in (RobotsTxtMiddleware.__module__, *_SIZE_LOGGERS):
            said = logging.getLogger(name)
            if not any(isinstance(f, _SaidHere) for f in said.filters):
                said.addFilter(_SaidHere())
        # (Every page's, here with the robots.txt's: an unreachable robots.txt is first said by it.)
        retries = logging.getLogger(_RETRY_LOGGER)
        if not any(isinstance(f, _ReasonNamed) for f in retries.filters):
            retries.addFilter(_ReasonNamed())

    async def robots_txt(self, url: str) -> bytes:
        """The robots.txt of *url*'s host as fetched (fetched now if not yet; b"" when it has none)."""
        await self.robot_parser(Request(url))
        return self.bodies.get(urlsplit(url).netloc, b"")

    # The two hooks below are Scrapy's own (private) ones, as of Scrapy 2.19.
    async def _parse_robots(self, response: Response, netloc: str, request: Request) -> None:
        if len(response.body) > KEPT_ROBOTS_BYTES:
            response = response.replace(body=kept_robots(response.body))
        if response.status == 200:
            self.bodies[netloc] = bytes(response.body)
        if response.status >= 500:
            self._stats.inc_value("tse/robotstxt_unreachable")
            self.unreachable[netloc] = f"robots.txt answered HTTP {response.status}"
            response = response.replace(body=DISALLOW_ALL)
        await super()._parse_robots(response, netloc, request)

    def process_request_2(self, rp: RobotParser | None, request: Request) -> None:
        try:
            super().process_request_2(rp, request)
        except IgnoreRequest:
            if urlparse_cached(request).netloc not in self.unreachable:
                # The site's robots.txt, as read, forbids the page: an update takes it for gone
                # (update/extension.py); "disallow all" for a robots.txt not read keeps it.
                request.meta[ROBOTS_FORBIDS] = True
            raise

    def _robots_error(self, exc: Exception, netloc: str) -> None:
        refused_hop = isinstance(exc, RobotsHopRefused)
        if isinstance(exc, IgnoreRequest) and not decompressed_too_large(exc) and not refused_hop:
            super()._robots_error(exc, netloc)
            return
        reason = failure_reason(exc)
        if refused_hop:  # (Scrapy logs no IgnoreRequest: said here, in one line)
            logger.warning("%s: disallow all", exc)
        elif reason == TOO_LARGE:  # as sent, or once decompressed: said here only (_SaidHere)
            reason = ROBOTS_TOO_LARGE
            maxsize = self.crawler.settings.getint("DOWNLOAD_MAXSIZE")
            logger.warning("robots.txt of %s is larger than DOWNLOAD_MAXSIZE (%d bytes): disallow all", netloc, maxsize)
        self._stats.inc_value(f"robotstxt/exception_count/{type(exc)}")
        self._stats.inc_value("tse/robotstxt_unreachable")
        self.unreachable[netloc] = reason
        waiting = self._parsers[netloc]
        parser = build_from_crawler(self._parserimpl, self.crawler, DISALLOW_ALL)
        self._parsers[netloc] = parser
        waiting.callback(parser)
