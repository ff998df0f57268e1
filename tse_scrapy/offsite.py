"""PrefixOffsiteMiddleware: only URLs under the internal prefixes are fetched (SPEC 1.2).

A downloader middleware, as Scrapy's own OffsiteMiddleware is since 2.11.2,
so start requests and redirect targets are checked too.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from scrapy import signals
from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware
from scrapy.exceptions import IgnoreRequest

from .progress import is_found_link, log_link
from .urls import DEFAULT_PREFIX, is_internal, normalize_url


class PrefixOffsiteMiddleware(OffsiteMiddleware):
    def __init__(self, stats, prefixes=(DEFAULT_PREFIX,)):
        super().__init__(stats)
        self.prefixes = tuple(prefixes)
        # robots.txt lives outside any /path/ prefix but must be fetched.
        self.robots_urls = {_robots_url(prefix) for prefix in self.prefixes}

    @classmethod
    def from_crawler(cls, crawler):
        middleware = cls(crawler.stats, crawler.settings.getlist("TSE_PREFIXES") or [DEFAULT_PREFIX])
        middleware.crawler = crawler
        crawler.signals.connect(middleware.request_scheduled, signal=signals.request_scheduled)
        return middleware

    def request_scheduled(self, request, spider) -> None:
        # Found links are judged as they are scheduled, so the log keeps link
        # order.  Anything else (the seed, a redirect, a retry) is judged at
        # download time, where a refusal reaches the spider's errback.
        if is_found_link(request) and not self.should_follow(request, spider):
            log_link(request, "IgnExtrn")
            self.stats.inc_value("offsite/filtered")
            raise IgnoreRequest(f"Not under the internal prefix: {request.url}")

    def should_follow(self, request, spider) -> bool:
        if request.url in self.robots_urls:
            return True
        return is_internal(normalize_url(request.url), self.prefixes)


def _robots_url(prefix: str) -> str:
    parts = urlsplit(prefix)
    return f"{parts.scheme}://{parts.netloc}/robots.txt"
