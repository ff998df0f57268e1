"""PageDirPipeline: saves each page as the next docID of the page directory."""

from __future__ import annotations

import logging

from scrapy.exceptions import DropItem
from scrapy.utils.defer import deferred_from_coro

from . import pagedir
from .items import PageItem

logger = logging.getLogger(__name__)

WRITE_ERROR = "tse_write_error"


class PageDirPipeline:
    def __init__(self, crawler):
        self.crawler = crawler
        self.directory = crawler.settings.get("TSE_PAGEDIR")
        self.fsync = crawler.settings.getbool("TSE_FSYNC")
        self.next_id = 1
        self.failed = False

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def open_spider(self):
        try:
            pagedir.mark(self.directory)
        except OSError as error:
            self._fail(f"cannot create {self.directory}/{pagedir.MARKER}: {error.strerror}")

    def process_item(self, item):
        if not isinstance(item, PageItem):
            return item
        if self.failed:
            raise DropItem("the page directory is not writable any more")
        page = pagedir.Page(item.url, item.depth, item.body)
        try:
            pagedir.write_page(self.directory, self.next_id, page, fsync=self.fsync)
        except OSError as error:
            self._fail(f"cannot write page file {self.directory}/{self.next_id}: {error.strerror}")
            raise DropItem(str(error)) from None
        self.crawler.stats.inc_value("tse/pages_saved")
        self.next_id += 1
        return item

    def _fail(self, message: str) -> None:
        # The crawl stops at once; what was written stays valid.
        self.failed = True
        logger.error(message)
        self.crawler.stats.set_value("tse/error", message)
        deferred_from_coro(self.crawler.engine.close_spider_async(reason=WRITE_ERROR))
