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
trip: when the requests leased run out, when lease_batch pages are over,
when the worker is idle, and when it stops.  A settle runs in a thread of
its own, one at a time, while the reactor goes on with the pages in hand.
The pages stay leased until their settle, so a worker killed before it
settles loses nothing: its pages are fetched again, their links found again.
A link to a URL this worker queued itself is a duplicate for good (nothing
leaves the seen set but a redirect target's mark, ``own_seen``): it is
logged ``IgnDupl`` without a word to Redis.  Leasing a request reserves its
URL's docID too: the pipeline finds it in ``reservations`` (a redirected
page, saved under another URL, asks Redis).

The progress log is held (``crawl.progresslog.hold_progress``) so that a
page's links keep their order although their verdicts come with the settle.
If Redis cannot be reached, the worker stops (exit 1) with one error line
and settles no more.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
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

from ..crawl.engineturn import wake_engine
from ..crawl.progresslog import ProgressHold, await_verdict, hold_progress, is_found_link, log_link, release_progress
from ..crawl.signals import page_done
from ..exitcodes import WRITE_ERROR
from .dupefilter import RedisUrlDupeFilter
from .extension import distributed_crawl
from .queue import FinishedPage, LeasedLevelQueue, Link, Reservation
from .store import RedisCrawl, url_fingerprint

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class _Settle:
    """A settle under way: what it carries, and its answer when it comes."""

    __slots__ = ("answer", "finished", "found", "lease")

    def __init__(self, found: list[tuple[Request, Link]], finished: dict[int, FinishedPage], lease: bool):
        self.found, self.finished, self.lease = found, finished, lease
        self.answer: Future[tuple[list[bool], list[Request]]] | None = None


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
        self.redis_failed = False  # Redis could not be reached: the worker is stopping, it settles no more
        # Fingerprints this worker queued (or is about to push): seen in Redis for good, so
        # a link to one is IgnDupl without a word to Redis.
        self.queued_here: set[bytes] = set()
        self.settling: _Settle | None = None  # the settle under way, in the settle thread
        self._settler = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tse-settle")
        self.progress = ProgressHold()  # the progress log, held in link order until each settle (open)
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
        self.progress = hold_progress()
        # The engine asks for requests every 5 s when the scheduler has some
        # pending but returns none; here "pending" is often another worker's.
        self.crawler.engine._SLOT_HEARTBEAT_INTERVAL = self.poll_interval
        self._renewal.start(self.lease_seconds / 3, now=False)

    def close(self, reason: str) -> None:
        if self._renewal.running:
            self._renewal.stop()
        try:
            # Stopped (Ctrl-C, an error) or done: the settle under way ends, what is
            # over goes to Redis, the links pushed are logged.
            if self.settling is not None:
                self._settled(self.settling, wait=True)
            if not self.redis_failed and (self.finished or self.found_links):
                self._apply(self._start_settle(lease=False))
            if self.leases:
                # Stopped early (Ctrl-C, a page that could not be written): other
                # workers take these pages now.
                logger.info("Returning %d leased request(s) to the frontier", len(self.leases))
                self.queue.give_back(self.leases)
        except redis.RedisError as error:
            logger.warning("Cannot reach Redis (%s): this worker's pages return when their leases run out", error)
        # The links never pushed get no line: their pages are fetched again.
        release_progress()
        self.leases.clear()
        self._settler.shutdown(wait=False)
        super().close(reason)

    def has_pending_requests(self) -> bool:
        if self.replacements or self.leased or self.settling is not None or self.redis_failed:
            return True  # a settle under way may lease more; after a failure, until the engine stops
        if self.finished or self.found_links:
            self._settle(lease=False)  # idle here: what is over goes to Redis now
            return True
        pipe = self.server.pipeline()
        pipe.exists(self.crawl.keys.params)
        pipe.exists(self.crawl.keys.seeded)
        pipe.zcard(self.queue.key)
        pipe.zcard(self.crawl.keys.leases)
        try:
            exists, seeded, frontier, leased = pipe.execute()
        except redis.RedisError as error:
            self._redis_failed(error)
            return True
        # A crawl whose keys are gone has finished (its last worker removed them).
        return bool(exists) and (not seeded or bool(frontier) or bool(leased))

    def enqueue_request(self, request: Request) -> bool:
        lease = request.meta.get("tse_lease")
        if lease in self.leases:
            return self._enqueue_replacement(request, lease)
        fingerprint = self.df.request_fingerprint(request)
        filtered = not request.dont_filter
        if is_found_link(request):
            if filtered and fingerprint in self.queued_here:
                # Queued by this worker (or about to be): seen in Redis for good.
                self.df.log(request, self.spider)
                return False
            if filtered:
                self.queued_here.add(fingerprint)
            # Pushed at the next settle, which is no later than its page's end; its
            # verdict is logged then, in its place among the page's links.
            await_verdict(request)
            self.found_links.append((request, self.queue.link(request, fingerprint, filtered)))
            return True
        try:
            # In the settle thread: one settle at a time keeps their tokens in order (queue.py).
            queued = self._settler.submit(self.queue.push_unseen, request, fingerprint, filtered).result()
        except redis.RedisError as error:
            self._redis_failed(error)
            return False
        if not queued:
            self.df.log(request, self.spider)
            return False
        if filtered:
            self.queued_here.add(fingerprint)
        self.stats.inc_value("scheduler/enqueued/redis")
        return True

    def _enqueue_replacement(self, request: Request, lease: int) -> bool:
        try:
            seen = not request.dont_filter and not self.queue.own_seen(lease, self.df.request_fingerprint(request))
        except redis.RedisError as error:
            self._redis_failed(error)
            return False
        if seen:
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
            return None  # until the settle under way ends (it wakes the engine), or the next poll
        self.stats.inc_value("scheduler/dequeued/redis")
        return self.leased.popleft()

    def _settle(self, lease: bool = True) -> None:
        """Start a settle, unless one is under way (the next one takes what comes meanwhile)."""
        if self.settling is None and not self.redis_failed:
            self.settling = self._start_settle(lease)

    def _start_settle(self, lease: bool) -> _Settle:
        """One round trip, in the settle thread: push the links found, finish the pages
        that are over, lease more (*lease*).  The reactor goes on meanwhile; ``_settled``
        takes the answer."""
        settle = _Settle(self.found_links, self.finished, lease)
        self.found_links, self.finished = [], {}
        links, finished = [link for _, link in settle.found], list(settle.finished.values())
        wanted = max(0, self.lease_batch - len(self.leased)) if lease else 0
        settle.answer = self._settler.submit(self.queue.settle, links, finished, wanted)
        from twisted.internet import reactor  # the one the crawl installed (importing it earlier installs one)

        settle.answer.add_done_callback(lambda _: reactor.callFromThread(self._settled, settle))
        return settle

    def _settled(self, settle: _Settle, wait: bool = False) -> None:
        """The settle under way has its answer (*wait*: wait for it, raising RedisError)."""
        if settle is not self.settling:
            return  # close() took it already
        self.settling = None
        try:
            self._apply(settle)
        except redis.RedisError as error:
            if wait:
                raise
            # Whether or not the script ran, nothing is lost: unsettled pages are
            # fetched again when their leases run out, with the docIDs reserved.
            self._redis_failed(error)
            return
        if not wait:
            wake_engine(self.crawler)  # requests to hand out, or the end to see

    def _apply(self, settle: _Settle) -> None:
        """What *settle* did, here: the leases taken, the links' verdicts logged in their place
        (waits for its answer if it has not come yet; raises RedisError if it failed)."""
        queued, leased = settle.answer.result()
        for request in leased:
            reservation = request.meta["tse_reserved"]
            self.reservations[reservation.fingerprint] = reservation
            self.leases.add(request.meta["tse_lease"])
        self.leased.extend(leased)
        if settle.lease and not leased:
            # Nothing to hand out yet: ask again after the poll interval, or when a page of ours is over.
            self.next_poll = monotonic() + self.poll_interval
        for (request, link), added in zip(settle.found, queued, strict=True):
            if not added:
                self.queued_here.discard(link[0])  # seen, maybe on a lease's behalf only (own_seen)
                self.df.log(request, self.spider)  # IgnDupl, in its place in the log
                continue
            log_link(request, "Added")
            self.stats.inc_value("scheduler/enqueued/redis")
        self.progress.flush()

    def _renew(self) -> None:
        if self.redis_failed:
            return
        held = [*self.leases, *self.finished, *(self.settling.finished if self.settling else ())]
        try:
            self.heartbeat()
            renewed = self.queue.renew(held) if held else 0
        except redis.RedisError as error:
            self._redis_failed(error)
            return
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

    def _redis_failed(self, error: redis.RedisError) -> None:
        """Redis cannot be reached (redis-py gave up retrying): stop this worker, once."""
        if not self.redis_failed:
            self.redis_failed = True
            self._fail(f"cannot reach Redis: {error}")

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
