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
    Redis, and recorded there once its page file is written."""

    def __init__(self, crawler: Crawler):
        super().__init__(crawler)
        self.shared = distributed_crawl(crawler).crawl

    def save(self, item: PageItem) -> bool:
        fingerprint = url_fingerprint(item.url)  # item.url is normalized
        try:
            doc_id, saved = self.shared.reserve_doc_id(fingerprint)
            if saved:
                # A worker whose lease had expired saved it meanwhile.
                self.crawler.stats.inc_value("tse/saved_by_another_worker")
                return False
            self.write(doc_id, item)
            self.shared.record_page(fingerprint)
            item.doc_id = doc_id  # for the crawl record
        except redis.RedisError as error:
            self.fail(f"cannot reach Redis: {error}")
            raise DropItem(str(error)) from None
        return True
