"""PageDirPipeline: saves each page as the next docID of the page directory."""

from __future__ import annotations

import logging
import sqlite3

import redis

from scrapy.exceptions import DropItem
from scrapy.utils.defer import deferred_from_coro

from . import pagedir
from .crawlstate import crawl_state
from .distributed import distributed_crawl
from .items import PageItem
from .redisstore import url_fingerprint

logger = logging.getLogger(__name__)

WRITE_ERROR = "tse_write_error"
PAGE_LIMIT = "closespider_pagecount"   # Scrapy's own reason for the same stop


class PageDirPipeline:
    def __init__(self, crawler):
        self.crawler = crawler
        self.directory = crawler.settings.get("TSE_PAGEDIR")
        self.fsync = crawler.settings.getbool("TSE_FSYNC")
        extension = crawl_state(crawler)
        self.state = extension.state if extension else None
        distributed = distributed_crawl(crawler)
        self.shared = distributed.crawl if distributed else None   # docIDs from Redis
        self.next_id = self._first_free_id()
        self.max_pages = crawler.settings.getint("TSE_MAX_PAGES")
        self.failed = False

    def _first_free_id(self) -> int:
        if self.state is None:
            return 1
        return max([self.state.next_doc_id(), *(doc + 1 for doc in self.state.writing_docs())])

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
        if self.shared is not None:
            return self._save_shared(item)
        doc_id = item.doc_id if item.doc_id is not None else self.next_id
        try:
            if not item.replayed:
                if self.state is not None:
                    self.state.writing(item.state_row, doc_id)
                page = pagedir.Page(item.url, item.depth, item.body)
                pagedir.write_page(self.directory, doc_id, page, fsync=self.fsync)
            if self.state is not None:
                self.state.saved(item.state_row, doc_id)
        except OSError as error:
            self._fail(f"cannot write page file {self.directory}/{doc_id}: {error.strerror}")
            raise DropItem(str(error)) from None
        except sqlite3.Error as error:
            self._fail(f"cannot write the crawl state: {error}")
            raise DropItem(str(error)) from None
        self.crawler.stats.inc_value("tse/pages_saved")
        self.next_id = max(self.next_id, doc_id + 1)
        if self.max_pages and self.next_id - 1 >= self.max_pages:
            deferred_from_coro(self.crawler.engine.close_spider_async(reason=PAGE_LIMIT))
        return item

    def _save_shared(self, item):
        """Distributed: the docID reserved for this URL in Redis, recorded once written."""
        fingerprint = url_fingerprint(item.url)
        try:
            doc_id, saved = self.shared.reserve_doc_id(fingerprint)
            if saved:
                # A worker whose lease had expired saved it meanwhile.
                self.crawler.stats.inc_value("tse/saved_by_another_worker")
                return item
            pagedir.write_page(self.directory, doc_id, pagedir.Page(item.url, item.depth, item.body),
                               fsync=self.fsync)
            self.shared.record_page(fingerprint)
        except OSError as error:
            self._fail(f"cannot write page file {self.directory}/{doc_id}: {error.strerror}")
            raise DropItem(str(error)) from None
        except redis.RedisError as error:
            self._fail(f"cannot reach Redis: {error}")
            raise DropItem(str(error)) from None
        self.crawler.stats.inc_value("tse/pages_saved")
        return item

    def _fail(self, message: str) -> None:
        # The crawl stops at once; what was written stays valid.
        self.failed = True
        logger.error(message)
        self.crawler.stats.set_value("tse/error", message)
        deferred_from_coro(self.crawler.engine.close_spider_async(reason=WRITE_ERROR))
