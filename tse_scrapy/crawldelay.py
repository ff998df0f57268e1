"""RobotsCrawlDelay: honour a robots.txt ``Crawl-delay`` longer than DOWNLOAD_DELAY.

Scrapy parses robots.txt (with protego) but ignores Crawl-delay.
"""

from __future__ import annotations

import logging

from scrapy import signals
from scrapy.exceptions import NotConfigured

logger = logging.getLogger(__name__)


class RobotsCrawlDelay:
    def __init__(self, crawler):
        if not crawler.settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured
        self.crawler = crawler
        self.user_agent = crawler.settings.get("ROBOTSTXT_USER_AGENT") or crawler.settings.get("USER_AGENT")

    @classmethod
    def from_crawler(cls, crawler):
        extension = cls(crawler)
        crawler.signals.connect(extension.robots_parsed, signal=signals.robots_parsed)
        return extension

    def robots_parsed(self, robotparser, request):
        protego = getattr(robotparser, "rp", None)
        crawl_delay = getattr(protego, "crawl_delay", None)
        delay = crawl_delay(self.user_agent) if crawl_delay else None
        if not delay:
            return
        downloader = self.crawler.engine.downloader
        slot = downloader.slots.get(downloader.get_slot_key(request))
        if slot is not None and delay > slot.delay:
            logger.info("robots.txt Crawl-delay %.1f s for %s", delay, request.url)
            slot.delay = float(delay)
            self.crawler.stats.set_value("tse/crawl_delay", float(delay))
