"""RedisUrlDupeFilter: scrapy-redis's dupefilter, keyed on the normalized URL.

The seen set is shared by every worker of a distributed crawl.  Members are
16-byte BLAKE2b digests of the normalized URL (scrapy-redis stores 40-character
SHA-1 hex strings of Scrapy's fingerprint), which keeps Redis small.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import redis
from scrapy import Request
from scrapy.statscollectors import StatsCollector
from scrapy_redis.dupefilter import RFPDupeFilter

from ..crawl.scheduling.dupefilter import UrlKeyLogging
from ..crawl.urlfilter import UrlFilter
from .extension import distributed_crawl
from .store import url_fingerprint

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class RedisUrlDupeFilter(UrlKeyLogging, RFPDupeFilter):
    """The seen set of all workers (``keys.seen``); the scheduler marks and queues in one step."""

    def __init__(
        self,
        server: redis.Redis,
        key: str,
        debug: bool = False,
        stats: StatsCollector | None = None,
        tse_extensions: bool | frozenset[str] = True,
    ):
        super().__init__(server, key, debug)
        self.stats = stats
        self.tse_extensions = tse_extensions

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedisUrlDupeFilter:
        crawl = distributed_crawl(crawler).crawl
        return cls(
            crawl.server,
            crawl.keys.seen,
            crawler.settings.getbool("DUPEFILTER_DEBUG"),
            crawler.stats,
            UrlFilter.from_settings(crawler.settings).tse_extensions,
        )

    def request_fingerprint(self, request: Request) -> bytes:
        return url_fingerprint(self.request_key(request))
