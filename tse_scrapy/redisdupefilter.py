"""RedisUrlDupeFilter: scrapy-redis's dupefilter, keyed on the normalized URL.

The seen set is shared by every worker of a distributed crawl.  Members are
16-byte BLAKE2b digests of the normalized URL (scrapy-redis stores 40-character
SHA-1 hex strings of Scrapy's fingerprint), which keeps Redis small.
"""

from __future__ import annotations

from scrapy_redis.dupefilter import RFPDupeFilter

from .distributed import distributed_crawl
from .dupefilter import UrlKeyLogging
from .redisstore import url_fingerprint
from .urlfilter import UrlFilter


class RedisUrlDupeFilter(UrlKeyLogging, RFPDupeFilter):
    def __init__(self, server, key, debug=False, stats=None, tse_extensions: bool = True):
        super().__init__(server, key, debug)
        self.stats = stats
        self.tse_extensions = tse_extensions

    @classmethod
    def from_crawler(cls, crawler):
        crawl = distributed_crawl(crawler).crawl
        return cls(crawl.server, crawl.keys.seen, crawler.settings.getbool("DUPEFILTER_DEBUG"),
                   crawler.stats, UrlFilter.from_settings(crawler.settings).tse_extensions)

    def request_fingerprint(self, request) -> bytes:
        return url_fingerprint(self.request_key(request))
