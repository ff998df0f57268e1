"""RedisTseScheduler: scrapy-redis's scheduler for a crawl shared by many workers.

The frontier is a ``LeasedLevelQueue`` (breadth-first, leased) and the seen
set a ``RedisUrlDupeFilter``, both in Redis under the crawl's name.  A link
is marked seen and queued in one atomic step, so a worker killed between the
two loses nothing.  This worker renews the leases of the pages it holds;
a redirect or retry of a held page stays with this worker under the same
lease.  The crawl is over when the seeds were queued, the frontier is empty
and no worker holds a lease: until then every worker keeps asking (no idle
timer), and each exits when it sees the end.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider, signals
from scrapy.http import Response
from scrapy.statscollectors import StatsCollector
from scrapy.utils.misc import build_from_crawler, load_object
from scrapy_redis.scheduler import Scheduler
from twisted.internet import task
from twisted.python.failure import Failure

from ..crawl.progresslog import is_found_link, log_link
from ..crawl.signals import page_done
from .dupefilter import RedisUrlDupeFilter
from .extension import distributed_crawl
from .queue import LeasedLevelQueue
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
    ):
        queue = partial(LeasedLevelQueue, keys=crawl.keys, lease_seconds=lease_seconds)
        super().__init__(
            crawl.server, persist=True, queue_key=crawl.keys.frontier, queue_cls=queue, dupefilter=dupefilter
        )
        self.crawl = crawl
        self.stats = stats
        self.lease_seconds = lease_seconds
        self.poll_interval = poll_interval
        self.leases: set[int] = set()  # held by this worker
        self.replacements: deque = deque()  # redirects and retries of held pages
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
        if self.leases:
            # Stopped early (Ctrl-C, a page that could not be written): other
            # workers take these pages now.
            logger.info("Returning %d leased request(s) to the frontier", len(self.leases))
            self.queue.give_back(self.leases)
            self.leases.clear()
        super().close(reason)

    def has_pending_requests(self) -> bool:
        if self.replacements:
            return True
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
        fingerprint = None if request.dont_filter else self.df.request_fingerprint(request)
        if not self.queue.push_unseen(request, fingerprint):
            self.df.log(request, self.spider)
            return False
        if is_found_link(request):
            log_link(request, "Added")
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
        request = self.queue.pop()
        if request is None:
            return None
        self.leases.add(request.meta["tse_lease"])
        self.stats.inc_value("scheduler/dequeued/redis")
        return request

    def _renew(self) -> None:
        self.heartbeat()
        held = self.queue.renew(self.leases) if self.leases else 0
        if held < len(self.leases):
            logger.warning(
                "%d lease(s) expired before renewal: another worker may fetch those pages too", len(self.leases) - held
            )

    def _over(self, request: Request | None, *, unreserve: bool = False) -> None:
        """The page of *request* is over: its lease goes (and, if it failed, its docID)."""
        lease = request.meta.get("tse_lease") if request is not None else None
        if lease not in self.leases:
            return
        self.leases.discard(lease)
        if unreserve:
            self.crawl.unreserve(url_fingerprint(self.df.request_key(request)))
        self.queue.ack(lease)

    def _item_saved(self, item: Any, response: Response, **kwargs: Any) -> None:
        self._over(getattr(response, "request", None))

    def _spider_error(self, failure: Failure, response: Response, **kwargs: Any) -> None:
        self._over(getattr(response, "request", None) or getattr(failure, "request", None), unreserve=True)

    def _page_done(self, request: Request, **kwargs: Any) -> None:
        self._over(request, unreserve=True)
