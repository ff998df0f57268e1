"""DistributedCrawlExtension: the Redis side of a distributed crawl (TSE_REDIS_URL).

It connects to the crawl the spider created or joined (``join``) for the
scheduler, dupefilter, pipeline and politeness middleware, registers this
worker, and at the end lets exactly one worker clean up: fill the docID
holes (a page that fails frees its docID for the next page leased; those
freed after the last lease stay free) with the last pages, saying so in its
crawl record, and remove the crawl's keys (unless a worker was started with
TSE_REDIS_KEEP).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import redis
from scrapy import Spider, signals
from scrapy.exceptions import NotConfigured

from ..crawl.downloader.record import CrawlRecordMiddleware
from ..exitcodes import SUCCESS_REASONS
from ..rules.crawling.secrets import mask_url
from ..rules.files import pagedir
from .outage import RedisOutage
from .store import RedisCrawl, connect, redis_url, worker_name

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from .queue import Reservation

logger = logging.getLogger(__name__)


class DistributedCrawlExtension:
    """This worker's connection to the crawl (``crawl``), its heartbeat and the clean-up at the end."""

    def __init__(self, crawler: Crawler):
        settings = crawler.settings
        if not settings.get("TSE_REDIS_URL"):
            raise NotConfigured
        self.crawler = crawler
        url = redis_url(settings["TSE_REDIS_URL"])
        self.crawl = RedisCrawl(connect(url), settings["TSE_CRAWL_NAME"])
        # Shared by every component that talks to Redis: they wait out an outage together.
        self.outage = RedisOutage(
            self.crawl.server,
            settings.getfloat("TSE_REDIS_PATIENCE"),
            mask_url(url),
            self.crawl.keys.resumed,
            crawler.stats,
        )
        if settings.getbool("TSE_REDIS_KEEP"):
            self.crawl.keep_when_finished()  # whichever worker finishes keeps them
        self.directory = settings.get("TSE_PAGEDIR")
        self.worker = worker_name()
        # URL fingerprint -> docID reserved for a page this worker leased: the scheduler's and the pipeline's.
        self.reservations: dict[bytes, Reservation] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DistributedCrawlExtension:
        extension = cls(crawler)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self, spider: Spider) -> None:
        self.heartbeat()
        logger.info("Worker %s in distributed crawl %s", self.worker, self.crawl.name)

    def heartbeat(self) -> None:
        self.crawl.register_worker(self.worker, self.crawler.settings.getfloat("TSE_LEASE_SECONDS"))

    def spider_closed(self, spider: Spider, reason: str) -> None:
        self.count_round_trips()
        self.crawler.stats.set_value("tse/redis_outages", self.outage.outages)
        if self.outage.down or self.outage.gave_up:
            return  # its mark goes stale after TSE_LEASE_SECONDS
        try:
            self.crawl.unregister_worker(self.worker)
        except redis.RedisError as error:
            # The worker stops anyway; its mark goes stale after TSE_LEASE_SECONDS.
            logger.warning("Cannot reach Redis to unregister worker %s: %s", self.worker, error)
            return
        if reason not in SUCCESS_REASONS or self.crawler.stats.get_value("tse/error"):
            return
        status = self.crawl.status()
        if not status["exists"] or status["frontier"] or status["leased"] or not self.crawl.claim_finish():
            return  # not over, or another worker is cleaning up
        moved = self.crawl.quarantine_leftovers()
        if moved:
            logger.warning(
                "%d entries no worker wrote were left in the crawl's keys: moved to %s",
                moved,
                self.crawl.keys.quarantine,
            )
        fill_doc_id_holes(self.crawl, self.directory, self._record_move)
        for doc_id in pagedir.remove_pages_above(self.directory, self.crawl.last_doc_id()):
            # Written under a docID Redis lost with its last writes (a restart), and saved again since.
            logger.warning("Removed page file %d: past the crawl's last docID", doc_id)
        logger.info("Distributed crawl %s finished: %d pages", self.crawl.name, self.crawl.last_doc_id())
        if not self.crawl.kept():
            self.crawl.remove()

    def _record_move(self, old: int, new: int) -> None:
        """Page *old* is page *new* now: a line in this worker's crawl record (when it keeps one)."""
        # Built after the extensions, so its spider_closed (which closes the file) runs after this one's.
        record = self.crawler.get_downloader_middleware(CrawlRecordMiddleware)
        if record is None:
            return
        try:
            page = pagedir.read_page(self.directory, new)
        except (OSError, ValueError) as error:  # the clean-up goes on: the record only lacks this line
            logger.warning("Cannot record the move of page %d to docID %d: %s", old, new, error)
            return
        record.moved(page.url, page.depth, old, new)

    def count_round_trips(self) -> None:
        """Put this worker's Redis round trips in the crawl's stats (``tse/redis_round_trips``, and per page)."""
        stats = self.crawler.stats
        round_trips = self.crawl.server.round_trips
        stats.set_value("tse/redis_round_trips", round_trips)
        pages = stats.get_value("tse/pages_saved", 0)
        if pages:
            stats.set_value("tse/redis_round_trips_per_page", round(round_trips / pages, 2))
        logger.info("Worker %s: %d Redis round trips for %d pages saved", self.worker, round_trips, pages)


def fill_doc_id_holes(crawl: RedisCrawl, directory: str, moved: Callable[[int, int], None] | None = None) -> None:
    """DocIDs freed by pages that failed after all get the last pages, so 1..N has no gap;
    ``moved(old, new)`` is called after each page moved.  A page moves once at most: a
    free last docID is dropped, else the last page fills the lowest hole."""
    holes = set(crawl.free_doc_ids())
    while holes:
        top = crawl.last_doc_id()
        hole = top if top in holes else min(holes)
        holes.discard(hole)
        last = crawl.move_last_doc(hole)
        if last != hole:
            pagedir.move_page(directory, last, hole)
            if moved is not None:
                moved(last, hole)
        else:
            pagedir.remove_page(directory, hole)


def distributed_crawl(crawler: Crawler) -> DistributedCrawlExtension:
    """The worker's extension (a distributed component is built only in a distributed crawl)."""
    extension = crawler.get_extension(DistributedCrawlExtension)
    if extension is None:
        raise NotConfigured("not a distributed crawl (no TSE_REDIS_URL)")
    return extension
