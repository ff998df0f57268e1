"""NormalizedUrlDupeFilter: a URL is seen once, by its normalized form (SPEC 1.1)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import Request, Spider
from scrapy.dupefilters import BaseDupeFilter
from scrapy.statscollectors import StatsCollector

from ...resume.extension import crawl_state
from ...resume.statedb import CrawlStateDB
from ...rules.web.urls import normalize_url
from ..progresslog import is_found_link, log_link, log_progress
from ..urlfilter import UrlFilter

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class UrlKeyLogging:
    """Keys on the normalized URL and logs what was filtered in TSE words.

    Shared with the distributed dupefilter; needs ``tse_extensions``,
    ``debug`` and ``stats`` attributes."""

    tse_extensions: bool | frozenset[str]
    debug: bool
    stats: StatsCollector | None

    def request_key(self, request: Request) -> str:
        return self.normalize(request.url) or request.url

    def normalize(self, url: str) -> str | None:
        return normalize_url(url, self.tse_extensions)

    def log(self, request: Request, spider: Spider) -> None:
        if is_found_link(request):
            log_link(request, "IgnDupl")
        elif "redirect_urls" in request.meta:
            depth, key = request.meta.get("depth", 0), self.request_key(request)
            chain = request.meta["redirect_urls"]
            if key in {self.normalize(url) or url for url in chain}:
                # A redirect loop: the page cannot be fetched.
                log_progress(depth, "Failed", self.normalize(chain[0]) or chain[0])
                request.meta["tse_redirect_loop"] = True  # for the crawl record
                if self.stats is not None:
                    self.stats.inc_value("tse/pages_failed")
            else:
                # A redirect to a page already seen: it is not fetched twice.
                log_progress(depth, "IgnDupl", key)
        if self.debug:
            logger.debug("Filtered duplicate request: %(request)s", {"request": request})
        if self.stats is not None:
            self.stats.inc_value("dupefilter/filtered")


class NormalizedUrlDupeFilter(UrlKeyLogging, BaseDupeFilter):
    """The seen set of one process, kept in the crawl state when there is one."""

    def __init__(
        self,
        stats: StatsCollector | None = None,
        debug: bool = False,
        state: CrawlStateDB | None = None,
        tse_extensions: bool | frozenset[str] = True,
    ):
        self.seen: set[str] = set()
        self.tse_extensions = tse_extensions
        self.stats = stats
        self.debug = debug
        self.state = state
        if state is not None:
            self.seen.update(state.seen_keys())

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> NormalizedUrlDupeFilter:
        extension = crawl_state(crawler)
        return cls(
            crawler.stats,
            crawler.settings.getbool("DUPEFILTER_DEBUG"),
            extension.state if extension else None,
            UrlFilter.from_settings(crawler.settings).tse_extensions,
        )

    def request_seen(self, request: Request) -> bool:
        key = self.request_key(request)
        if key in self.seen:
            return True
        self.seen.add(key)
        if self.state is not None:
            self.state.add_seen(key)
        return False
