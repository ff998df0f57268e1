"""RedisTseScheduler: scrapy-redis's scheduler for a crawl shared by many workers.

The frontier is a ``LeasedLevelQueue`` (breadth-first, leased) and the seen
set a ``RedisUrlDupeFilter``, both in Redis under the crawl's name.  This
worker renews the leases of the pages it holds; a redirect or retry of a
held page stays with this worker under the same lease.  The crawl is over
when the seeds were queued, the frontier is empty and no worker holds a
lease: until then every worker keeps asking (no idle timer), and each exits
when it sees the end.

Redis round trips are few: the links found and the pages that are over wait
here until the next *settle* (``LeasedLevelQueue.settle``), which pushes the
links, finishes the pages and leases the next few requests in one round
trip: when the requests leased run out, or when lease_batch pages are over.
The pages stay leased until then, so a worker killed before it settles loses
nothing: its pages are fetched again, their links found again.  Leasing a
request reserves its URL's docID too: the pipeline finds it in
``reservations`` (a redirected page, saved under another URL, asks Redis).
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from functools import partial
from time import monotonic
from typing import TYPE_CHECKING, Any

import redis
from scrapy import Request, Spider, signals
from scrapy.http import Response
from scrapy.statscollectors import StatsCollector
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.misc import build_from_crawler, load_object
from scrapy_redis.scheduler import Scheduler
from twisted.internet import task
from twisted.python.failure import Failure

from ..crawl.progresslog import is_found_link, log_link
from ..crawl.signals import page_done
from ..exitcodes import WRITE_ERROR
from .dupefilter import RedisUrlDupeFilter
from .extension import distributed_crawl
from .queue import FinishedPage, LeasedLevelQueue, Link, Reservation
from .store import RedisCrawl, url_fingerprint

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class RedisTseScheduler(Scheduler):
    """Leases pages from the shared frontier, renews the leases, and ends with the crawl (see above)."""

    def __init__(
        self,
        crawl: RedisCrawl,
        dupefilter: RedisUrlDupeFilter,
        stats: StatsCollector,
        lease_seconds: float = 30.0,
        poll_interval: float = 0.1,
        heartbeat: Callable[[], None] | None = None,
        lease_batch: int = 1,
        reservations: dict[bytes, Reservation] | None = None,
    ):
        queue = partial(LeasedLevelQueue, keys=crawl.keys, lease_seconds=lease_seconds)
        super().__init__(
            crawl.server, persist=True, queue_key=crawl.keys.frontier, queue_cls=queue, dupefilter=dupefilter
        )
        self.crawl = crawl
        self.stats = stats
        self.lease_seconds = lease_seconds
        self.poll_interval = poll_interval
        self.leases: set[int] = set()  # held by this worker, page not over (leased requests' too)
        self.lease_batch = lease_batch  # how many requests one round trip leases
        self.leased: deque[Request] = deque()  # leased, not handed out yet
        self.found_links: list[tuple[Request, Link]] = []  # found on held pages, not pushed yet
        self.finished: dict[int, FinishedPage] = {}  # lease -> page over here, not yet in Redis
        # URL fingerprint -> the docID reserved for a leased page (shared with the pipeline)
        self.reservations = reservations if reservations is not None else {}
        self.replacements: deque = deque()  # redirects and retries of held pages
        self.next_poll = 0.0  # when to ask again for requests, after Redis had none to hand out
        self._renewal = task.LoopingCall(self._renew)
        self.heartbeat = heartbeat or (lambda: None)  # the worker's "alive" mark, with the leases

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedisTseScheduler:
        settings = crawler.settings
        dupefilter = build_from_crawler(load_object(settings["DUPEFILTER_CLASS"]), crawler)
        distributed = distributed_crawl(crawler)
        scheduler = cls(
            distributed.crawl,
            dupefilter,
            crawler.stats,
            settings.getfloat("TSE_LEASE_SECONDS"),
            settings.getfloat("TSE_REDIS_POLL_INTERVAL"),
            distributed.heartbeat,
            # Half the downloader's slots: a few requests wait here, none waits long.
            max(1, settings.getint("CONCURRENT_REQUESTS") // 2),
            distributed.reservations,
        )
        scheduler.crawler = crawler
        crawler.signals.connect(scheduler._item_saved, signal=signals.item_scraped)
        crawler.signals.connect(scheduler._spider_error, signal=signals.spider_error)
        crawler.signals.connect(scheduler._page_done, signal=page_done)
        return scheduler

    def open(self, spider: Spider) -> None:
        super().open(spider)
        # The engine asks for requests every 5 s when the scheduler has some
        # pending but returns none; here "pending" is often another worker's.
        self.crawler.engine._SLOT_HEARTBEAT_INTERVAL = self.poll_interval
        self._renewal.start(self.lease_seconds / 3, now=False)

    def close(self, reason: str) -> None:
        if self._renewal.running:
            self._renewal.stop()
        try:
            if self.finished or self.found_links:
                self.queue.settle([link for _, link in self.found_links], list(self.finished.values()))
            if self.leases:
                # Stopped early (Ctrl-C, a page that could not be written): other
                # workers take these pages now.
                logger.info("Returning %d leased request(s) to the frontier", len(self.leases))
                self.queue.give_back(self.leases)
        except redis.RedisError as error:
            logger.warning("Cannot reach Redis (%s): this worker's pages return when their leases run out", error)
        self.leases.clear()
        super().close(reason)

    def has_pending_requests(self) -> bool:
        if self.replacements or self.leased:
            return True
        if self.finished or self.found_links:
            self._settle(lease=False)  # idle here: what is over goes to Redis now
        pipe = self.server.pipeline()
        pipe.exists(self.crawl.keys.params)
        pipe.exists(self.crawl.keys.seeded)
        pipe.zcard(self.queue.key)
        pipe.zcard(self.crawl.keys.leases)
        exists, seeded, frontier, leased = pipe.execute()
        # A crawl whose keys are gone has finished (its last worker removed them).
        return bool(exists) and (not seeded or bool(frontier) or bool(leased))

    def enqueue_request(self, request: Request) -> bool:
        lease = request.meta.get("tse_lease")
        if lease in self.leases:
            return self._enqueue_replacement(request, lease)
        fingerprint = self.df.request_fingerprint(request)
        if is_found_link(request):
            # Pushed at the next settle, which is no later than its page's end.
            self.found_links.append((request, self.queue.link(request, fingerprint, not request.dont_filter)))
            return True
        if not self.queue.push_unseen(request, fingerprint, not request.dont_filter):
            self.df.log(request, self.spider)
            return False
        self.stats.inc_value("scheduler/enqueued/redis")
        return True

    def _enqueue_replacement(self, request: Request, lease: int) -> bool:
        if not request.dont_filter and not self.queue.own_seen(lease, self.df.request_fingerprint(request)):
            self.df.log(request, self.spider)
            self._over(request)
            return False
        self.replacements.append(request)
        return True

    def next_request(self) -> Request | None:
        if self.replacements:
            return self.replacements.popleft()
        if not self.leased and (self.finished or self.found_links or monotonic() >= self.next_poll):
            self._settle()
        if not self.leased:
            return None
        self.stats.inc_value("scheduler/dequeued/redis")
        return self.leased.popleft()

    def _settle(self, lease: bool = True) -> None:
        """One round trip: push the links found, finish the pages that are over, lease more (*lease*)."""
        found, finished = self.found_links, list(self.finished.values())
        try:
            queued, leased = self.queue.settle(
                [link for _, link in found], finished, self.lease_batch - len(self.leased) if lease else 0
            )
        except redis.RedisError as error:
            # Nothing changed in Redis: these pages are fetched again, their links found again.
            self._fail(f"cannot reach Redis: {error}")
            return
        self.found_links, self.finished = [], {}
        for request in leased:
            reservation = request.meta["tse_reserved"]
            self.reservations[reservation.fingerprint] = reservation
            self.leases.add(request.meta["tse_lease"])
        self.leased.extend(leased)
        if lease and not leased:
            # Nothing to hand out yet: ask again after the poll interval, or when a page of ours is over.
            self.next_poll = monotonic() + self.poll_interval
        for (request, _), added in zip(found, queued, strict=True):
            if not added:
                self.df.log(request, self.spider)
                continue
            log_link(request, "Added")
            self.stats.inc_value("scheduler/enqueued/redis")

    def _renew(self) -> None:
        self.heartbeat()
        held = [*self.leases, *self.finished]
        renewed = self.queue.renew(held) if held else 0
        if renewed < len(held):
            logger.warning(
                "%d lease(s) expired before renewal: another worker may fetch those pages too", len(held) - renewed
            )

    def _over(self, request: Request | None, saved_url: str | None = None) -> None:
        """The page of *request* is over: at the next settle, the docID reserved for *saved_url*
        becomes a saved page, the one reserved when it was leased (if another) is freed, and
        its lease goes."""
        lease = request.meta.get("tse_lease") if request is not None else None
        if lease not in self.leases:
            return
        self.leases.discard(lease)
        leased = request.meta["tse_reserved"].fingerprint
        self.reservations.pop(leased, None)
        self.finished[lease] = (lease, url_fingerprint(saved_url) if saved_url else b"", leased)
        if len(self.finished) >= self.lease_batch and self.leased:
            # Else the next request (next_request) settles them, with the next lease.
            self._settle(lease=False)

    def _fail(self, message: str) -> None:
        """Stop this worker (exit 1): its pages go back to the frontier."""
        logger.error(message)
        self.stats.set_value("tse/error", message)
        deferred_from_coro(self.crawler.engine.close_spider_async(reason=WRITE_ERROR))

    def _item_saved(self, item: Any, response: Response, **kwargs: Any) -> None:
        # item.url is normalized; the pipeline reserved its docID and wrote the page file.
        self._over(getattr(response, "request", None), item.url)

    def _spider_error(self, failure: Failure, response: Response, **kwargs: Any) -> None:
        self._over(getattr(response, "request", None) or getattr(failure, "request", None))

    def _page_done(self, request: Request, **kwargs: Any) -> None:
        self._over(request)
