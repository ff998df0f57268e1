"""SharedPageDirPipeline: saves a worker's pages under docIDs handed out by Redis."""

from __future__ import annotations

from typing import TYPE_CHECKING

import redis
from scrapy.exceptions import DropItem

from ..crawl.items import PageItem
from ..crawl.pipeline import PageDirPipeline
from .extension import distributed_crawl
from .store import url_fingerprint

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

    async def save(self, item: PageItem) -> bool:
        fingerprint = url_fingerprint(item.url)  # item.url is normalized
        try:
            reserved = self.reservations.get(fingerprint)
            if reserved is not None:
                doc_id, saved = reserved.doc_id, reserved.saved
            else:
                doc_id, saved = self.shared.reserve_doc_id(fingerprint)
            if saved:
                # A worker whose lease had expired saved it meanwhile.
                self.crawler.stats.inc_value("tse/saved_by_another_worker")
                return False
            await self.write(doc_id, item)
            item.doc_id = doc_id  # for the crawl record
        except redis.RedisError as error:
            self.fail(f"cannot reach Redis: {error}")
            raise DropItem(str(error)) from None
        return True
