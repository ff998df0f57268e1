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

from ...rules.web.robotsmeta import product_token

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


def robots_user_agent(settings: BaseSettings) -> str:
    """The name robots.txt's groups are matched against: ``ROBOTSTXT_USER_AGENT``, else the product
    token of ``USER_AGENT`` (``tse-scrapy``), not the whole string (Protego finds a group's name at any
    word of it: ``User-agent: crawler`` was taken for this crawler's)."""
    return settings.get("ROBOTSTXT_USER_AGENT") or product_token(settings.get("USER_AGENT") or "")


def robots_crawl_delay(robotparser: Any, user_agent: str) -> float | None:
    """The Crawl-delay robots.txt sets for *user_agent* (Scrapy's parser is protego's), None for none
    or one that is no number of seconds above 0 (protego takes ``nan``)."""
    crawl_delay = getattr(getattr(robotparser, "rp", None), "crawl_delay", None)
    delay = crawl_delay(user_agent) if crawl_delay else None
    try:
        seconds = float(delay) if delay else None
    except (TypeError, ValueError):
        return None
    return seconds if seconds is not None and seconds > 0 else None


def crawl_delay_said(delay: float, at_most: float, host: str) -> tuple[float, str]:
    """The Crawl-delay honoured (*delay*, or *at_most* when longer) and the line that says so."""
    if delay <= at_most:
        return delay, f"robots.txt asks for a Crawl-delay of {delay:.1f} s: honoured for {host}"
    return (
        at_most,
        f"robots.txt asks for a Crawl-delay of {delay:g} s: {at_most:.1f} s honoured for {host} (TSE_MAX_CRAWL_DELAY)",
    )


class Politeness:
    """An extension that moves each download slot's clock to the end of its last request
    and raises the slot's delay to robots.txt's Crawl-delay."""

    def __init__(self, crawler: Crawler):
        if crawler.settings.get("TSE_REDIS_URL"):
            raise NotConfigured  # distributed/politeness.py keeps the clock in Redis
        self.crawler = crawler
        self.user_agent = robots_user_agent(crawler.settings)
        self.max_crawl_delay = crawler.settings.getfloat("TSE_MAX_CRAWL_DELAY")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Politeness:
        extension = cls(crawler)
        crawler.signals.connect(extension.request_left_downloader, signal=signals.request_left_downloader)
        crawler.signals.connect(extension.robots_parsed, signal=signals.robots_parsed)
        return extension

    def _slot(self, request: Request) -> Slot | None:
        downloader = self.crawler.engine.downloader
        return downloader.slots.get(downloader.get_slot_key(request))

    def _keep_delay(self, request: Request, delay: float) -> None:
        """Make *delay* the delay of every slot the downloader makes for *request*'s key from now on:
        Scrapy drops a slot idle for a minute and makes a new one at ``DOWNLOAD_DELAY`` (its
        ``DOWNLOAD_SLOTS`` settings, ``per_slot_settings``, are what it reads then), and robots.txt,
        read once, would not raise it again."""
        downloader = self.crawler.engine.downloader
        key = downloader.get_slot_key(request)
        downloader.per_slot_settings[key] = {**downloader.per_slot_settings.get(key, {}), "delay": delay}

    def request_left_downloader(self, request: Request, spider: Spider | None = None) -> None:
        slot = self._slot(request)
        if slot is not None and slot.delay:
            # Scrapy's downloader keeps lastseen on the monotonic clock.
            slot.lastseen = max(slot.lastseen, monotonic())

    def robots_parsed(self, robotparser: Any, request: Request) -> None:
        delay = robots_crawl_delay(robotparser, self.user_agent)
        slot = self._slot(request)
        if delay and slot is not None and delay > slot.delay:
            delay, said = crawl_delay_said(delay, self.max_crawl_delay, urlsplit(request.url).netloc)
            # At WARNING, shown on tse crawl's quiet terminal (once per host: robots.txt is read once):
            # the crawl of that host is slower than its DOWNLOAD_DELAY says.
            logger.warning("%s", said)
            # Never below DOWNLOAD_DELAY (a TSE_MAX_CRAWL_DELAY under it made a host that asked for a
            # delay crawled without one), as distributed/politeness.py takes the longer too.
            slot.delay = max(slot.delay, delay)
            self._keep_delay(request, slot.delay)
            self.crawler.stats.set_value("tse/crawl_delay", slot.delay)
