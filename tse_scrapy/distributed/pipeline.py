"""SharedPageDirPipeline: saves a worker's pages under docIDs handed out by Redis."""

from __future__ import annotations

from typing import TYPE_CHECKING

import redis
from scrapy.exceptions import DropItem

from ..crawl.items import PageItem
from ..crawl.pipeline import PageDirPipeline
from ..rules.files import pagedir
from .extension import distributed_crawl
from .store import CrawlGone, is_outage, refused_line, shorten, url_fingerprint

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class SharedPageDirPipeline(PageDirPipeline):
    """PageDirPipeline for one worker of many: each URL's docID is reserved in
    Redis before its page file is written, when the scheduler leased the page
    (a redirected page, saved under another URL, reserves one here).  The
    scheduler records it as saved when the item has been through
    (``item_scraped``), with the page's links and its lease
    (``RedisTseScheduler._over``)."""

    def __init__(self, crawler: Crawler):
        super().__init__(crawler)
        distributed = distributed_crawl(crawler)
        self.shared = distributed.crawl
        self.reservations = distributed.reservations
        self.outage = distributed.outage

    async def save(self, item: PageItem) -> bool:
        fingerprint = url_fingerprint(item.url)  # item.url is normalized
        reserved = self.reservations.get(fingerprint)
        if reserved is not None:
            doc_id, saved = reserved.doc_id, reserved.saved
            if not saved and self._taken_by_another_url(doc_id, item.url):
                doc_id, saved = await self._reserve(fingerprint)
        else:
            doc_id, saved = await self._reserve(fingerprint)
        if saved:
            # A worker whose lease had expired saved it meanwhile.
            self.crawler.stats.inc_value("tse/saved_by_another_worker")
            return False
        await self.write(doc_id, item)
        item.doc_id = doc_id  # for the crawl record
        return True

    async def _reserve(self, fingerprint: bytes) -> tuple[int, bool]:
        """The URL's docID as Redis has it, once Redis answers (an outage is waited out)."""
        while True:
            try:
                return self.shared.reserve_doc_id(fingerprint)
            except CrawlGone:
                # A page in hand, and the crawl is gone from Redis: its state is lost (outage.py).
                self.outage.lose()
                raise DropItem("Redis no longer holds the crawl") from None
            except redis.RedisError as error:
                if not is_outage(error):
                    self.fail(refused_line(self.shared, error))
                    raise DropItem(shorten(str(error))) from None
                self.outage.failed(error)
            if not await self.outage.wait_for_redis():
                raise DropItem("Redis is unreachable")

    def _taken_by_another_url(self, doc_id: int, url: str) -> bool:
        """Page file *doc_id* holds another URL: the reservation was lost with Redis's last
        writes (a restart), and the docID given to that URL since; Redis is asked again."""
        try:
            return pagedir.read_page_url(self.directory, doc_id) != url
        except (OSError, ValueError):
            return False  # no such file yet (the usual case)
