"""PrefixOffsiteMiddleware: only URLs under the internal prefixes, allowed
by the user's filters (``urlfilter``) and no longer than TSE_MAX_URL_LENGTH, are
fetched (SPEC 1.2).

A downloader middleware, as Scrapy's own OffsiteMiddleware is since 2.11.2,
so start requests and redirect targets are checked too.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from scrapy import Request, Spider, signals
from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.statscollectors import StatsCollector

from ...rules.files.pagedir import MAX_URL_CHARACTERS
from ...rules.web.urls import DEFAULT_PREFIX, is_internal, normalize_url
from ..progresslog import is_found_link, log_link
from ..urlfilter import UrlFilter

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

# The meta key of the requests that fetch sitemaps (--sitemaps, crawl/sitemaps.py).
SITEMAP_REQUEST = "tse_sitemap"
# Why a request that is no found link (a seed, a redirect's next hop) is refused, when its URL is longer
# than TSE_MAX_URL_LENGTH: the start of its IgnoreRequest's message, the reason record.failure_reason gives.
URL_TOO_LONG = "URL too long"
# ... when its URL is in the prefixes but for the TSE extension rule (a redirect to a PDF without --pdf).
URL_NOT_TAKEN = "not a page: a "

logger = logging.getLogger(__name__)


class PrefixOffsiteMiddleware(OffsiteMiddleware):
    """Drops requests outside the prefixes (``IgnExtrn``) or refused by the filters (``IgnDeny``)."""

    def __init__(
        self,
        stats: StatsCollector,
        prefixes: Iterable[str] = (DEFAULT_PREFIX,),
        url_filter: UrlFilter | None = None,
        max_url_length: int = MAX_URL_CHARACTERS,
    ):
        super().__init__(stats)
        self.prefixes = tuple(prefixes)
        self.filter = url_filter or UrlFilter()
        self.max_url_length = max_url_length
        self.prefix_hosts = {(urlsplit(p).scheme.lower(), urlsplit(p).netloc.lower()) for p in self.prefixes}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PrefixOffsiteMiddleware:
        middleware = cls(
            crawler.stats,
            crawler.settings.getlist("TSE_PREFIXES") or [DEFAULT_PREFIX],
            UrlFilter.from_settings(crawler.settings),
            _max_url_length(crawler.settings.getint("TSE_MAX_URL_LENGTH")),
        )
        middleware.crawler = crawler
        crawler.signals.connect(middleware.request_scheduled, signal=signals.request_scheduled)
        return middleware

    def request_scheduled(self, request: Request, spider: Spider) -> None:
        # Found links are judged as they are scheduled, so the log keeps link
        # order.  Anything else (the seed, a redirect, a retry) is judged at
        # download time, where a refusal reaches the spider's errback.
        verdict = self.verdict(request.url) if is_found_link(request) else None
        if verdict is not None:
            log_link(request, verdict)
            self.count_ignored(verdict)
            raise IgnoreRequest(f"{verdict}: {request.url}")

    def process_request(self, request: Request, spider: Spider | None = None) -> None:
        """Scrapy's check of a request that is no found link (a seed, a redirect's next hop), refused
        with the reason it is refused for (``refusal``): a redirect to a URL too long was said "offsite",
        and counted as an external link.  Every request is judged, ``dont_filter`` or not: a retry has it
        (Scrapy's RetryMiddleware), and the hop of a redirect answered to a retry inherits it, so that a
        page answering 503, then 302 to another host or out of the prefixes, was fetched and saved there
        (a review's find).  tse makes no request that must skip this check."""
        if request.meta.get("allow_offsite") or self.should_follow(request, spider):
            return
        why = self.refusal(request.url)
        if why is None:
            # Scrapy's refusal, off the site: counted, and said "offsite" (its check lets dont_filter pass).
            super().process_request(request.replace(dont_filter=False) if request.dont_filter else request)
            return
        raise IgnoreRequest(f"{why}: {request.url[:200]}")

    def refusal(self, url: str) -> str | None:
        """Why *url*, refused, is refused, or None when it is off the site (Scrapy's "offsite"): too long,
        refused by the filters (``IgnDeny``), or in the prefixes but no page by the TSE extension rule
        (a redirect to a PDF without --pdf was said "redirected out of the prefixes")."""
        extensions = self.filter.tse_extensions
        normalized = normalize_url(url, extensions)
        if is_internal(normalized, self.prefixes):
            return URL_TOO_LONG if len(normalized) > self.max_url_length else "IgnDeny"
        if extensions is False:
            return None
        anything = normalize_url(url, False)
        if not is_internal(anything, self.prefixes):
            return None
        extension = PurePosixPath(urlsplit(anything).path).suffix.lower()[:16]
        pdf = ", without --pdf" if extension == ".pdf" else ""
        return f"{URL_NOT_TAKEN}{extension} URL{pdf}" if extension else f"{URL_NOT_TAKEN}URL without .htm*"

    def count_ignored(self, verdict: str, links: int = 1) -> None:
        """Count *links* found links ignored with *verdict* (here, or by the spider, which asks ``verdict`` first)."""
        self.stats.inc_value("offsite/filtered" if verdict == "IgnExtrn" else "tse/denied", links)

    def should_follow(self, request: Request, spider: Spider) -> bool:
        if request.meta.get("dont_obey_robotstxt") and _robots_txt_or_its_hop(request):
            # robots.txt, which Scrapy asks for only for a request that passed here, or for a request
            # of the browser rendering a page (--render): it is fetched, whatever its host; and the hops
            # of its redirects, wherever they lead (RFC 9309 2.3.1.2: at least five, across authorities).
            # A hop refused here left the robots.txt unread, and the whole host was crawled.
            return True
        if request.meta.get(SITEMAP_REQUEST):
            # A sitemap may live outside the prefixes' paths (robots.txt names it): on their hosts only.
            return self.on_prefix_host(request.url)
        return self.verdict(request.url) is None

    def on_prefix_host(self, url: str) -> bool:
        """*url* is on the scheme and host of one of the prefixes."""
        parts = urlsplit(url)
        return (parts.scheme.lower(), parts.netloc.lower()) in self.prefix_hosts

    def verdict(self, url: str) -> str | None:
        """None for a URL to fetch, else the progress word for ignoring it.  A robots.txt is judged as
        any URL (its own fetch passes ``should_follow``): a link or a redirect to ``/robots.txt`` was let
        through, out of the prefixes and past the TSE extension rule, and saved as a page."""
        normalized = normalize_url(url, self.filter.tse_extensions)
        if not is_internal(normalized, self.prefixes):
            return "IgnExtrn"
        if len(normalized) > self.max_url_length or not self.filter.allows(normalized):
            return "IgnDeny"
        return None


def _max_url_length(given: int) -> int:
    """The longest URL crawled: TSE_MAX_URL_LENGTH, at most MAX_URL_CHARACTERS (`tse import`'s bound)."""
    if given > MAX_URL_CHARACTERS or given < 1:
        logger.warning(
            "TSE_MAX_URL_LENGTH=%d: URLs are crawled to %d characters (it may be lowered, to 1 at least)",
            given,
            MAX_URL_CHARACTERS,
        )
        return MAX_URL_CHARACTERS
    return given


def _robots_txt_or_its_hop(request: Request) -> bool:
    """Whether *request* asks for a robots.txt, or for a redirect's hop from one."""
    if urlsplit(request.url).path == "/robots.txt":
        return True
    redirected = request.meta.get("redirect_urls")
    return bool(redirected) and urlsplit(redirected[0]).path == "/robots.txt"
