"""CrawlStateExtension: opens the crawl's durable state (see ``state``) for the
scheduler, the dupefilter and the pipeline, and removes it when the crawl has
finished (unless it lives in a JOBDIR, as Scrapy's job state does)."""

from __future__ import annotations

from scrapy import signals
from scrapy.exceptions import NotConfigured

from .runner import SUCCESS
from .state import CrawlState, state_path


class CrawlStateExtension:
    def __init__(self, crawler):
        settings = crawler.settings
        if not settings.getbool("TSE_STATE_ENABLED"):
            raise NotConfigured
        self.crawler = crawler
        self.keep = bool(settings.get("JOBDIR"))
        self.state = CrawlState(state_path(settings.get("TSE_PAGEDIR"), settings.get("JOBDIR")),
                                synchronous=settings.get("TSE_STATE_SYNCHRONOUS", "NORMAL"))
        self.resuming = self.state.arguments() is not None
        if not self.resuming:
            self.state.set_arguments(settings.getdict("TSE_ARGUMENTS"))

    @classmethod
    def from_crawler(cls, crawler):
        extension = cls(crawler)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_closed(self, spider, reason):
        finished = reason in SUCCESS and not self.crawler.stats.get_value("tse/error")
        self.state.close(remove=finished and not self.keep)


def crawl_state(crawler) -> CrawlStateExtension | None:
    return crawler.get_extension(CrawlStateExtension)
