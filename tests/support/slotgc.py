"""A test extension that drops the crawl's idle download slots once, when the seed's answer arrives:
what Scrapy's downloader does to a slot idle for a minute (``Downloader._slot_gc``), without the wait.

    tse crawl ... -s 'EXTENSIONS={..., "tests.support.slotgc.DropIdleSlotsOnce": 900}'

It logs the slots it dropped ("dropped idle download slots: [...]"), so a test can see it did."""

from __future__ import annotations

import logging

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.http import Response

logger = logging.getLogger(__name__)


class DropIdleSlotsOnce:
    def __init__(self, crawler: Crawler):
        self.crawler = crawler
        self.dropped = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DropIdleSlotsOnce:
        extension = cls(crawler)
        crawler.signals.connect(extension.response_received, signal=signals.response_received)
        return extension

    def response_received(self, response: Response, request: Request, spider=None) -> None:
        if self.dropped or request.url.endswith("/robots.txt"):
            return
        self.dropped = True
        downloader = self.crawler.engine.downloader
        before = set(downloader.slots)
        # A slot is dropped when idle and its last request older than its delay plus *age*: -1 h is
        # "now", as a minute's wait makes it.
        downloader._slot_gc(age=-3600)
        logger.warning("dropped idle download slots: %s", sorted(before - set(downloader.slots)))
