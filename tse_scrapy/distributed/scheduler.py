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

from ..crawl.progresslog import ProgressHold, await_verdict, hold_progress, is_found_link, log_link, release_progress
from ..crawl.scheduling.engineturn import wake_engine
from ..crawl.signals import page_done
from ..exitcodes import WRITE_ERROR
from ..rules.crawling.secrets import mask_secrets
from .dupefilter import RedisUrlDupeFilter
from .extension import distributed_crawl
from .outage import RedisOutage
from .queue import FinishedPage, LeasedLevelQueue, Link, Reservation, Settled, Unreadable
from .store import CrawlGone, RedisCrawl, is_outage, refused_line, url_fingerprint

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

# How long a settled page's lease is remembered: a Redis killed with append-only
# ``everysec`` may lose the last second or two of writes, the page's end among them.
RECENT_SECONDS = 10.0


class _Settle:
    """A settle under way: what it carries, and its answer when it comes."""

    __slots__ = ("answer", "finished", "found", "lease", "token", "unreadable")

    def __init__(
        self,
        found: list[tuple[Request, Link]],
        finished: dict[str, FinishedPage],
        lease: bool,
        unreadable: list[Unreadable],
        token: int,
    ):
        self.found, self.finished, self.lease, self.unreadable, self.token = found, finished, lease, unreadable, token
        self.answer: Future[Settled] | None = None


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
        outage: RedisOutage | None = None,
        max_depth: int | None = None,
    ):
        outage = outage or RedisOutage(crawl.server, float("inf"), "Redis")
        queue = partial(
            LeasedLevelQueue,
            keys=crawl.keys,
            lease_seconds=lease_seconds,
            patience=outage.patience,
            joined=crawl.joined,
            max_depth=max_depth,
        )
        super().__init__(
            crawl.server, persist=True, queue_key=crawl.keys.frontier, queue_cls=queue, dupefilter=dupefilter
        )
        self.crawl = crawl
        self.stats = stats
        self.lease_seconds = lease_seconds
        self.poll_interval = poll_interval
        self.leases: set[str] = set()  # held by this worker, page not over (leased requests' too)
        self.lease_batch = lease_batch  # how many requests one round trip leases
        self.leased: deque[Request] = deque()  # leased, not handed out yet
        self.found_links: list[tuple[Request, Link]] = []  # found on held pages, not pushed yet
        self.finished: dict[str, FinishedPage] = {}  # lease -> page over here, not yet in Redis
        self.unreadable: list[Unreadable] = []  # leased entries that are no request, to quarantine
        # Leases of pages over and settled lately: Redis may lose its last writes (outage.py).
        self.recently_finished: deque[tuple[float, str]] = deque()
        # URL fingerprint -> the docID reserved for a leased page (shared with the pipeline)
        self.reservations = reservations if reservations is not None else {}
        self.replacements: deque = deque()  # redirects and retries of held pages
        self.next_poll = 0.0  # when to ask again for requests, after Redis had none to hand out
        self.redis_failed = False  # Redis refused, or stayed away: the worker is stopping, it settles no more
        self.crawl_over = False  # the crawl's keys were removed by its last worker while this one held nothing
        self.outage = outage
        self.outage.on_back.append(self._back)
        self.outage.on_give_up.append(self._give_up)
        self.unsent: _Settle | None = None  # a settle that failed in an outage: sent again when Redis is back
        self.held_requests: list[Request] = []  # requests to enqueue once Redis is back
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
            distributed.outage,
            # The crawl's maxDepth (the spider sets it): no request tse queues is deeper.
            settings.getint("DEPTH_LIMIT"),
        )
        scheduler.crawler = crawler
        crawler.signals.connect(scheduler._item_saved, signal=signals.item_scraped)
        crawler.signals.connect(scheduler._spider_error, signal=signals.spider_error)
        crawler.signals.connect(scheduler._page_done, signal=page_done)
        # A held page's request dropped (a redirect or retry of it refused before it is fetched): over.
        crawler.signals.connect(scheduler._page_done, signal=signals.request_dropped)
        return scheduler

    def open(self, spider: Spider) -> None:
        try:
            # scrapy_redis asks the frontier's size (ZCARD), for a "Resuming crawl" line.
            super().open(spider)
        except redis.RedisError as error:
            # Redis went away (or restarted) while this worker was starting: the same as later,
            # an outage waited out or one line and exit 1, not a traceback from the engine's open.
            if is_outage(error):
                self._redis_error(error)
            else:
                self._fail(refused_line(self.crawl, error), opening=True)
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
            if self.outage.down or self.outage.gave_up:
                # Not a word to Redis: its pages return to the frontier when their leases run out.
                logger.info("Redis is unreachable: this worker's pages return when their leases run out")
                self.leases.clear()
            else:
                if self.settling is not None:
                    self._settled(self.settling, wait=True)
                if not self.redis_failed and (self.finished or self.found_links or self.unsent):
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
        if self.crawl_over:
            return False
        if self.replacements or self.leased or self.settling is not None or self.redis_failed:
            return True  # a settle under way may lease more; after a failure, until the engine stops
        if self.outage.down or self.unsent or self.held_requests:
            return True  # the crawl goes on once Redis is back
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
            self._redis_error(error)
            return True
        if not exists:
            # Its keys gone: finished (its last worker removed them), or lost (Redis restarted
            # empty, unseen between two looks): _crawl_gone tells which (the server's run_id).
            self._crawl_gone()
            return not self.crawl_over  # lost: until the engine stops (exit 1, one line)
        return not seeded or bool(frontier) or bool(leased)

    def enqueue_request(self, request: Request) -> bool:
        if self.outage.down:
            self.held_requests.append(request)  # enqueued once Redis is back
            return True
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
            if is_outage(error):
                self.held_requests.append(request)
            self._redis_error(error)
            return is_outage(error)
        if not queued:
            self.df.log(request, self.spider)
            return False
        if filtered:
            self.queued_here.add(fingerprint)
        self.stats.inc_value("scheduler/enqueued/redis")
        return True

    def _enqueue_replacement(self, request: Request, lease: str) -> bool:
        try:
            seen = not request.dont_filter and not self.queue.own_seen(lease, self.df.request_fingerprint(request))
        except redis.RedisError as error:
            if is_outage(error):
                self.held_requests.append(request)
            self._redis_error(error)
            return is_outage(error)
        if seen:
            self.df.log(request, self.spider)
            self._over(request)
            return False
        self.replacements.append(request)
        return True

    def next_request(self) -> Request | None:
        if self.outage.down:
            return None  # no page request while Redis is away: what is held waits
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
        if self.settling is None and not self.redis_failed and not self.outage.down and not self.crawl_over:
            self.settling = self._start_settle(lease)

    def _start_settle(self, lease: bool) -> _Settle:
        """One round trip, in the settle thread: push the links found, finish the pages
        that are over, quarantine the unreadable entries, lease more (*lease*).  The reactor
        goes on meanwhile; ``_settled`` takes the answer.  A settle that failed in an
        outage is sent again first, as it was (its token makes it run once)."""
        if self.unsent is not None:
            settle, self.unsent = self.unsent, None
        else:
            settle = _Settle(self.found_links, self.finished, lease, self.unreadable, next(self.queue.settles))
            self.found_links, self.finished, self.unreadable = [], {}, []
        links, finished = [link for _, link in settle.found], list(settle.finished.values())
        wanted = max(0, self.lease_batch - len(self.leased)) if settle.lease else 0
        settle.answer = self._settler.submit(
            self.queue.settle, links, finished, wanted, settle.unreadable, settle.token
        )
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
            if isinstance(error, CrawlGone):
                self._crawl_gone(holding=bool(settle.found or settle.finished or settle.unreadable))
                return
            if is_outage(error):
                # Whether or not the script ran, it is sent again, as it was, when Redis is back.
                self.unsent = settle
            # Else nothing is lost either: unsettled pages are fetched again when their
            # leases run out, with the docIDs reserved.
            self._redis_error(error)
            return
        except Exception as error:  # in a reactor callback: one line and a stop, not a traceback
            if wait:
                raise
            if not self.redis_failed:
                self.redis_failed = True
                self._fail(mask_secrets(f"cannot apply Redis's answer: {error!r}"))
            return
        if not wait:
            wake_engine(self.crawler)  # requests to hand out, or the end to see

    def _apply(self, settle: _Settle) -> None:
        """What *settle* did, here: the leases taken, the links' verdicts logged in their place
        (waits for its answer if it has not come yet; raises RedisError if it failed)."""
        queued, leased, unreadable = settle.answer.result()
        self.unreadable.extend(unreadable)  # quarantined by the next settle
        now = monotonic()
        self.recently_finished.extend((now, lease) for lease in settle.finished)
        while self.recently_finished and self.recently_finished[0][0] < now - RECENT_SECONDS:
            self.recently_finished.popleft()
        for request in leased:
            if request.errback is None:
                # A request that fails with no errback says so to no one: its page would never end
                # and its lease be renewed for ever (the crawl's checks let none by: frontierentries).
                request.errback = self._failed_unheard
            reservation = request.meta["tse_reserved"]
            self.reservations[reservation.fingerprint] = reservation
            self.leases.add(request.meta["tse_lease"])
        self.leased.extend(leased)
        if settle.lease and not leased and not unreadable:
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
        if self.redis_failed or self.outage.down:
            return
        held = self._held()
        in_hand = set(self.leases)
        try:
            if self.outage.restarted(unknown=False):
                if not self.crawl.holds_crawl():
                    self.outage.lose()  # restarted empty, unseen: the crawl's state is lost
                    return
                # Restarted between two commands, unseen: it may have lost its last writes.
                logger.warning(
                    "Redis at %s was restarted: this worker hands back the pages it held", self.outage.shown_url
                )
                self._back(restarted=True)
                return
            self.heartbeat()
            lost = self.queue.renew(held)
        except redis.RedisError as error:
            self._redis_error(error)
            return
        # Pages over may have been settled meanwhile, in the settle thread: only pages in hand count.
        if lost & in_hand:
            logger.warning(
                "%d lease(s) expired before renewal: another worker may fetch those pages too", len(lost & in_hand)
            )

    def _held(self) -> list[str]:
        """The leases this worker holds: pages in hand and pages over but not settled."""
        return [
            *self.leases,
            *self.finished,
            *(self.settling.finished if self.settling else ()),
            *(self.unsent.finished if self.unsent else ()),
            *(lease for lease, _, _ in self.unreadable),
        ]

    def _back(self, restarted: bool) -> None:
        """Redis answers again.  The same server: renew the leases at once, send again the
        settle that failed, go on.  Another (*restarted*: it may have lost its last writes):
        hand back every page held or lately settled, forget what was learnt from it, and
        go on from what it kept; a page in hand is still saved, under the docID Redis
        gives it now (the pipeline asks), and fetched again by whoever leases it."""
        if self.redis_failed:
            return
        try:
            # The worker's mark first (a worker that met the outage at its start has none yet): the
            # other workers judge the leases it takes by the lease time its mark says (queue.py).
            self.heartbeat()
            if restarted:
                held = [*self._held(), *(lease for _, lease in self.recently_finished)]
                self.stats.inc_value("tse/handed_back_after_restart", len(held))
                self.leases.clear()
                self.leased.clear()
                self.finished, self.found_links, self.unreadable, self.unsent = {}, [], [], None
                self.recently_finished.clear()
                self.reservations.clear()
                self.queued_here.clear()
                self.replacements.clear()
                self.held_requests = [r for r in self.held_requests if r.meta.get("tse_lease") is None]
                self.progress.flush(drop_awaited=True)
                self.queue.give_back(held)
            else:
                self.queue.renew(self._held())
        except redis.RedisError as error:
            self._redis_error(error)
            return
        # The settle that failed goes first: the settle thread takes calls in order, and a
        # later call's answer would replace the one kept for it (queue.py).
        self._settle()
        held_requests, self.held_requests = self.held_requests, []
        for request in held_requests:
            self.enqueue_request(request)
        self.next_poll = 0.0
        wake_engine(self.crawler)

    def _give_up(self, reason: str) -> None:
        if not self.redis_failed:
            self.redis_failed = True
            self._fail(reason)

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

    def _redis_error(self, error: redis.RedisError) -> None:
        """A command failed: wait out an outage (``outage.py``); any other error stops this worker, once."""
        if isinstance(error, CrawlGone):
            self._crawl_gone()
        elif is_outage(error):
            self.outage.failed(error)
        elif not self.redis_failed:
            self.redis_failed = True
            self._fail(refused_line(self.crawl, error))

    def _crawl_gone(self, holding: bool = False) -> None:
        """Redis no longer holds the crawl joined (a script refused to write).  This worker held
        nothing, on the same server: the last worker removed the crawl's keys, the crawl is over.
        Else its state is lost: the worker stops (exit 1), writing nothing more."""
        if self.redis_failed or self.crawl_over:
            return
        holding = holding or bool(self.leases or self.leased or self.finished or self.found_links)
        holding = holding or bool(self.unsent or self.held_requests or self.replacements)
        try:
            restarted = self.outage.restarted()
        except redis.RedisError:
            restarted = True
        if holding or restarted:
            self.outage.lose()
            return
        self.crawl_over = True
        wake_engine(self.crawler)

    def _fail(self, message: str, opening: bool = False) -> None:
        """Stop this worker (exit 1): its pages go back to the frontier.  While the engine opens
        (*opening*), the extension closes it once open (a CloseSpider raised from here skips the
        scraper's open, and its close fails: a traceback)."""
        self.redis_failed = True
        logger.error(message)
        self.stats.set_value("tse/error", message)
        if not opening:
            deferred_from_coro(self.crawler.engine.close_spider_async(reason=WRITE_ERROR))

    def _failed_unheard(self, failure: Failure) -> None:
        """The errback of a leased request that had none: its page is over."""
        self._over(getattr(failure, "request", None))

    def _item_saved(self, item: Any, response: Response, **kwargs: Any) -> None:
        # item.url is normalized; the pipeline reserved its docID and wrote the page file.
        self._over(getattr(response, "request", None), item.url)

    def _spider_error(self, failure: Failure, response: Response, **kwargs: Any) -> None:
        self._over(getattr(response, "request", None) or getattr(failure, "request", None))

    def _page_done(self, request: Request, **kwargs: Any) -> None:
        self._over(request)
