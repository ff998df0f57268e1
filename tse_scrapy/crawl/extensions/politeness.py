"""Politeness: the download delay counts from the end of the previous request,
and a robots.txt ``Crawl-delay`` longer than the delay is honoured.

Scrapy counts the delay from the moment it starts a request; when that
request first has to open a connection, the next one (on the kept-alive
connection) reaches the server sooner than the delay after it.  Scrapy also
parses robots.txt with protego but ignores its Crawl-delay.
"""

from __future__ import annotations

import logging
from time import monotonic
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import Request, Spider, signals
from scrapy.core.downloader import Slot
from scrapy.exceptions import NotConfigured
from scrapy.settings import BaseSettings

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


def robots_user_agent(settings: BaseSettings) -> str:
    return settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT")


def robots_crawl_delay(robotparser: Any, user_agent: str) -> float | None:
    """The Crawl-delay robots.txt sets for *user_agent* (Scrapy's parser is protego's)."""
    crawl_delay = getattr(getattr(robotparser, "rp", None), "crawl_delay", None)
    delay = crawl_delay(user_agent) if crawl_delay else None
    return float(delay) if delay else None


class Politeness:
    """An extension that moves each download slot's clock to the end of its last request
    and raises the slot's delay to robots.txt's Crawl-delay."""

    def __init__(self, crawler: Crawler):
        if crawler.settings.get("TSE_REDIS_URL"):
            raise NotConfigured  # distributed/politeness.py keeps the clock in Redis
        self.crawler = crawler
        self.user_agent = robots_user_agent(crawler.settings)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Politeness:
        extension = cls(crawler)
        crawler.signals.connect(extension.request_left_downloader, signal=signals.request_left_downloader)
        crawler.signals.connect(extension.robots_parsed, signal=signals.robots_parsed)
        return extension

    def _slot(self, request: Request) -> Slot | None:
        downloader = self.crawler.engine.downloader
        return downloader.slots.get(downloader.get_slot_key(request))

    def request_left_downloader(self, request: Request, spider: Spider | None = None) -> None:
        slot = self._slot(request)
        if slot is not None and slot.delay:
            # Scrapy's downloader keeps lastseen on the monotonic clock.
            slot.lastseen = max(slot.lastseen, monotonic())

    def robots_parsed(self, robotparser: Any, request: Request) -> None:
        delay = robots_crawl_delay(robotparser, self.user_agent)
        slot = self._slot(request)
        if delay and slot is not None and delay > slot.delay:
            # At WARNING, shown on tse crawl's quiet terminal (once per host: robots.txt is read once):
            # the crawl of that host is slower than its DOWNLOAD_DELAY says.
            logger.warning(
                "robots.txt asks for a Crawl-delay of %.1f s: honoured for %s", delay, urlsplit(request.url).netloc
            )
            slot.delay = delay
            self.crawler.stats.set_value("tse/crawl_delay", delay)
