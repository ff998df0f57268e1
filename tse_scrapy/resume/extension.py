"""CrawlStateExtension: opens the crawl's durable state (``statedb``) for the
scheduler, the dupefilter and the pipeline, and removes it when the crawl has
finished (unless it lives in a JOBDIR, as Scrapy's job state does)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import Spider, signals
from scrapy.exceptions import NotConfigured

from ..exitcodes import SUCCESS_REASONS
from .statedb import CrawlStateDB, state_path

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class CrawlStateExtension:
    """Holds the crawl's ``CrawlStateDB``; ``resuming`` when it was there already."""

    def __init__(self, crawler: Crawler):
        settings = crawler.settings
        if not settings.getbool("TSE_STATE_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self.keep = bool(settings.get("JOBDIR"))
        self.state = CrawlStateDB(
            state_path(settings.get("TSE_PAGEDIR"), settings.get("JOBDIR")),
            synchronous=settings.get("TSE_STATE_SYNCHRONOUS", "NORMAL"),
        )
        self.resuming = self.state.arguments() is not None
        if not self.resuming:
            self.state.set_arguments(settings.getdict("TSE_ARGUMENTS"))

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlStateExtension:
        extension = cls(crawler)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_closed(self, spider: Spider, reason: str) -> None:
        finished = reason in SUCCESS_REASONS and not self.crawler.stats.get_value("tse/error")
        self.state.close(remove=finished and not self.keep)


def crawl_state(crawler: Crawler) -> CrawlStateExtension | None:
    """The crawl's state extension, or None when the crawl keeps no state."""
    return crawler.get_extension(CrawlStateExtension)
