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
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import redis
from scrapy import Spider, signals
from scrapy.exceptions import CloseSpider, NotConfigured
from scrapy.utils.defer import deferred_from_coro

from ..crawl.downloader.record import CrawlRecordMiddleware
from ..exitcodes import SUCCESS_REASONS, WRITE_ERROR, StartFailed
from ..rules.crawling.secrets import mask_url
from ..rules.files import pagedir
from .join import CREATED_HERE
from .outage import RedisOutage
from .store import (
    CrawlGone,
    RedisCrawl,
    connect,
    is_outage,
    outage_line,
    redis_url,
    refused_line,
    worker_name,
)

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
        # Not asked at once (check=False): Redis answered this worker's join a moment ago, before Scrapy
        # started, and its first question here is the join below, whose outage or refusal is one line.
        # Asked at once, a Redis gone in between was connect's ArgumentError, raised in Scrapy's start:
        # a traceback ("Task exception was never retrieved"), exit 1 with no line of tse's.
        self.crawl = RedisCrawl(connect(url, check=False), settings["TSE_CRAWL_NAME"])
        self.directory = settings.get("TSE_PAGEDIR")
        # The politeness is the crawl's, set by its first worker: a worker joining with a smaller
        # DOWNLOAD_DELAY must not make the crawl less polite.
        self.host_delay = settings.getfloat("TSE_HOST_DELAY")
        self.max_crawl_delay = settings.getfloat("TSE_MAX_CRAWL_DELAY")
        try:
            # From here on, this worker writes only while Redis holds the crawl as it is now.
            joined = self.crawl.join()
            # Shared by every component that talks to Redis: they wait out an outage together.
            self.outage = RedisOutage(
                self.crawl.server,
                settings.getfloat("TSE_REDIS_PATIENCE"),
                mask_url(url),
                self.crawl.keys.resumed,
                crawler.stats,
                self.crawl,
            )
            self._settle_politeness(joined, settings.getbool("TSE_REDIS_KEEP"))
        except redis.RedisError as error:
            # Redis went away (or refused) in the moments between this worker's join, before Scrapy
            # started, and here: the worker's start fails as it would have failed a moment earlier, in
            # one line (exit 1), not a traceback.
            if is_outage(error):
                line = f"{outage_line(error, mask_url(url))} as this worker started: start it again to go on"
            else:
                line = refused_line(self.crawl, error)
            raise StartFailed(line) from None
        self.outage.lost_line = lost_line(self.crawl.name, self.outage.shown_url, self.directory)
        self.worker = worker_name()
        # URL fingerprint -> docID reserved for a page this worker leased: the scheduler's and the pipeline's.
        self.reservations: dict[bytes, Reservation] = {}

    def _settle_politeness(self, joined: bool, keep: bool) -> None:
        """The crawl's keys kept at its end when *keep* (TSE_REDIS_KEEP); its politeness stored by its
        first worker, taken by the others (the crawl's, not this worker's settings)."""
        if joined and keep:
            self.crawl.keep_when_finished()  # whichever worker finishes keeps them
        if joined and self.crawl.name in CREATED_HERE:
            self.crawl.set_delay(self.host_delay, self.max_crawl_delay)
        elif joined:
            stored = self.crawl.delay()
            if stored is not None and stored != (self.host_delay, self.max_crawl_delay):
                logger.info(
                    "Crawl %s's politeness: DOWNLOAD_DELAY=%g, TSE_MAX_CRAWL_DELAY=%g (not this worker's %g, %g)",
                    self.crawl.name,
                    *stored,
                    self.host_delay,
                    self.max_crawl_delay,
                )
            if stored is not None:
                self.host_delay, self.max_crawl_delay = stored

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> DistributedCrawlExtension:
        extension = cls(crawler)
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self, spider: Spider) -> None:
        if self.crawler.stats.get_value("tse/error"):
            raise CloseSpider(WRITE_ERROR)  # the scheduler met a refusal opening (said in its line)
        if self.outage.down or self.outage.gave_up:
            return  # the scheduler met an outage opening: the mark comes with the renewals once Redis is back
        try:
            self.heartbeat()
        except CrawlGone:
            # Redis restarted without the crawl before this worker's first mark: the scheduler finds it
            # at its first look and stops the worker in one line (raised here, it was a traceback too).
            logger.debug("Redis no longer holds crawl %s at this worker's start", self.crawl.name)
            return
        except redis.RedisError as error:
            # As with any later mark (the scheduler's renewals): an outage is waited out, and the mark
            # comes with the next renewal; a refusal stops the worker in one line (exit 1).
            if is_outage(error):
                self.outage.failed(error)
                return
            self._refused(error)
            raise CloseSpider(WRITE_ERROR) from None
        logger.info("Worker %s in distributed crawl %s", self.worker, self.crawl.name)

    async def mark_seeded(self) -> None:
        """Say every seed is queued (the spider's start, once it yielded them), once Redis answers:
        seeds held in an outage are pushed when it is back, before this mark (``on_back``)."""
        while True:
            if self.outage.down and not await self.outage.wait_for_redis():
                return  # the worker stops: gave up, or the crawl is lost
            if self.outage.gave_up or self.crawler.stats.get_value("tse/error"):
                return
            try:
                self.crawl.mark_seeded()
                return
            except CrawlGone:
                return  # lost, or over: the scheduler tells which at its next look, and stops
            except redis.RedisError as error:
                if not is_outage(error):
                    self._refused(error)
                    deferred_from_coro(self.crawler.engine.close_spider_async(reason=WRITE_ERROR))
                    return
                self.outage.failed(error)

    def _refused(self, error: redis.RedisError) -> None:
        """Redis refused a command (not an outage): the worker's one line (exit 1)."""
        message = refused_line(self.crawl, error)
        logger.error(message)
        self.crawler.stats.set_value("tse/error", message)

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
        # The end, waited out through an outage as any other moment of the crawl (the clean-up is
        # safe to begin again); else one line, exit 1 (it was a traceback from this signal handler).
        patience = self.outage.patience
        waited, pause = 0.0, 0.1
        while True:
            try:
                self._finish_if_over()
                return
            except redis.RedisError as error:
                if is_outage(error) and waited < patience:
                    if not waited:
                        logger.warning(
                            "%s as this worker finishes the crawl: waiting for it, up to %g s (--redis-patience)",
                            outage_line(error, self.outage.shown_url),
                            patience,
                        )
                    time.sleep(min(pause, patience - waited))
                    waited, pause = waited + pause, min(2 * pause, 5.0)
                    continue
                if is_outage(error):
                    message = (
                        f"{outage_line(error, self.outage.shown_url)} for {waited:.0f} s as this worker finished"
                        f" crawl {self.crawl.name}: start a worker again to finish it"
                    )
                else:
                    message = refused_line(self.crawl, error)
                logger.error(message)
                self.crawler.stats.set_value("tse/error", message)
                return

    def _finish_if_over(self) -> None:
        """Clean up if the crawl is over and no other worker is at it (or this one was, before an outage)."""
        status = self.crawl.status()
        lease_seconds = self.crawler.settings.getfloat("TSE_LEASE_SECONDS")
        if not status["exists"] or status["frontier"] or status["leased"] or not self.crawl.claim_finish(lease_seconds):
            return  # not over, or another worker is cleaning up (claim_finish: only the crawl joined)
        # The mark renewed while the clean-up runs: should this worker die in it, the mark
        # expires and the next worker to find the crawl over takes the clean-up over.
        done = threading.Event()

        def renew() -> None:
            while not done.wait(lease_seconds / 3):
                try:
                    self.crawl.renew_finish(lease_seconds)
                except redis.RedisError:
                    pass  # the clean-up meets the outage too, and waits it out

        renewal = threading.Thread(target=renew, name="tse-finishing", daemon=True)
        renewal.start()
        try:
            self._clean_up()
        except OSError as error:  # one line, not a traceback in a signal handler
            logger.error("Cannot finish the page directory %s: %s", self.directory, error)
            self.crawler.stats.set_value("tse/error", f"cannot finish the page directory {self.directory}: {error}")
        finally:
            done.set()
            renewal.join()

    def _clean_up(self) -> None:
        unfinished = self.crawl.unfinished_move()
        if unfinished is not None:
            # A worker stopped in the middle of moving a page (this clean-up is taken over).
            last, hole = unfinished
            if last != hole and pagedir.page_path(self.directory, last).is_file():
                pagedir.move_page(self.directory, last, hole)
                self._record_move(last, hole)
            self.crawl.moved_last_doc()
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
        else:
            self.crawl.renew_finish(None)  # kept: the crawl is over for good

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
    free last docID is dropped, else the last page fills the lowest hole.  A last page
    whose file is not there is not moved (a warning): the hole stays, no page is lost."""
    holes = set(crawl.free_doc_ids())
    while holes:
        top = crawl.last_doc_id()
        hole = top if top in holes else min(holes)
        holes.discard(hole)
        if hole != top and not pagedir.page_path(directory, top).is_file():
            logger.warning("Page file %s is not there: docID %d stays free", pagedir.page_path(directory, top), hole)
            continue
        last = crawl.move_last_doc(hole)
        if last != hole:
            try:
                pagedir.move_page(directory, last, hole)
            except FileNotFoundError:  # removed meanwhile, by hand
                logger.warning("Page file %d is gone: docID %d stays free", last, hole)
                crawl.moved_last_doc()
                continue
            crawl.moved_last_doc()
            if moved is not None:
                moved(last, hole)
        else:
            pagedir.remove_page(directory, hole)
            crawl.moved_last_doc()


def lost_line(name: str, shown_url: str, directory: str | None) -> str:
    """Why a worker stops when Redis no longer holds its crawl, and what its user can do: one line."""
    return (
        f"Redis at {shown_url} no longer holds crawl {name} (it restarted without persistence, or the "
        f"crawl's keys were removed): the crawl's state is lost and this worker stops; the pages in "
        f"{directory} stay as they are: crawl again into a new, empty directory, with a Redis that "
        "persists (redis-server --appendonly yes --dir DIR)"
    )


def distributed_crawl(crawler: Crawler) -> DistributedCrawlExtension:
    """The worker's extension (a distributed component is built only in a distributed crawl)."""
    extension = crawler.get_extension(DistributedCrawlExtension)
    if extension is None:
        raise NotConfigured("not a distributed crawl (no TSE_REDIS_URL)")
    return extension
