"""RedisOutage: a worker rides out a Redis that is unreachable for a while.

When a command fails because Redis cannot be reached or is not serving
(connection refused or dropped, a timeout, ``LOADING`` while it reads its
data back, ``MASTERDOWN`` or ``READONLY`` from a replica:
``store.is_outage``), the component that saw it calls ``failed``: the worker
sends no more page requests and keeps what it holds, logs one warning, and
asks Redis again (``PING``, then a write) with exponential backoff, capped.
When Redis answers, one line says so and every component waiting goes on
(``wait_for_redis``, ``on_back``).  After *patience* seconds without Redis,
``on_give_up`` stops the worker (exit 1); its pages return to the frontier
when their leases run out, and starting a worker again continues the crawl.

Redis may have lost its last writes (killed, with append-only ``everysec``):
it is another server if its ``run_id`` changed, and the scheduler then hands
back what it held (``RedisTseScheduler._back``).  A restarted Redis that no
longer holds the crawl (no persistence: it came back empty) stops the worker,
exit 1, with ``lost_line``: nothing is written for a crawl whose state is gone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from time import monotonic

import redis
from scrapy.statscollectors import StatsCollector
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import defer, threads

from ..crawl.extensions.progress import WAITING_FOR_REDIS
from .store import CrawlGone, RedisCrawl

logger = logging.getLogger(__name__)

FIRST_RETRY = 0.1  # seconds before the first PING, doubled after each failure
RETRY_CAP = 5.0


def server_run_id(server: redis.Redis) -> str | None:
    """The server's ``run_id``, new at each start (None if this user may not ask: INFO)."""
    try:
        return str(server.info("server").get("run_id"))
    except redis.ResponseError:
        return None


class RedisOutage:
    """Whether Redis is reachable, as this worker last saw it (see the module's docstring)."""

    def __init__(
        self,
        server: redis.Redis,
        patience: float,
        shown_url: str,
        resumed_key: str | None = None,
        stats: StatsCollector | None = None,
        crawl: RedisCrawl | None = None,
    ):
        self.server = server
        self.stats = stats  # its WAITING_FOR_REDIS is set while Redis is away (the status line shows it)
        self.resumed_key = resumed_key  # set to Redis's clock (ms) when Redis is back
        # The crawl joined: when Redis is back without it, the worker stops with lost_line.
        self.crawl = crawl
        self.lost_line = "Redis no longer holds the crawl: its state is lost"
        self.patience = patience
        self.shown_url = shown_url  # the URL with its password masked
        self.run_id = server_run_id(server)
        self.down_since: float | None = None
        self.gave_up = False
        self.outages = 0
        self.on_back: list[Callable[[bool], None]] = []  # called with whether Redis restarted
        self.on_give_up: list[Callable[[str], None]] = []  # called with the one-line reason
        self._waiting: list[defer.Deferred] = []
        self._retry = FIRST_RETRY

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def failed(self, error: BaseException) -> None:
        """A command failed with *error*, an outage (``is_outage``): wait for Redis."""
        if self.down or self.gave_up:
            return
        self.down_since = monotonic()
        self._show(True)
        self.outages += 1
        self._retry = FIRST_RETRY
        logger.warning(
            "Redis at %s is unreachable (%s): waiting for it, up to %g s (--redis-patience)",
            self.shown_url,
            error,
            self.patience,
        )
        self._schedule()

    def restarted(self, unknown: bool = True) -> bool:
        """Whether Redis is another server than when last seen (asked now; it must be up);
        *unknown* when this user may not ask (no INFO)."""
        run_id = server_run_id(self.server)
        changed = unknown if run_id is None else run_id != self.run_id
        self.run_id = run_id
        return changed

    async def wait_for_redis(self) -> bool:
        """Return once Redis is back (True), or when this worker gave up on it (False)."""
        if not self.down:
            return not self.gave_up
        waiting: defer.Deferred = defer.Deferred()
        self._waiting.append(waiting)
        # Scrapy runs coroutines as asyncio tasks (the asyncio reactor): a Deferred is awaited as a future.
        return await maybe_deferred_to_future(waiting)

    def _schedule(self) -> None:
        from twisted.internet import reactor  # the crawl's (importing it earlier installs one)

        reactor.callLater(self._retry, self._probe)
        self._retry = min(self._retry * 2, RETRY_CAP)

    def _probe(self) -> None:
        if not self.down:
            return
        probe = threads.deferToThread(self._ask)
        probe.addCallbacks(self._back, self._still_down)

    def _ask(self) -> tuple[bool, bool]:
        """(whether Redis restarted, whether it lost the crawl)."""
        # A replica whose master is down answers PING: it is back once it takes a write.
        self.server.ping()
        gone = False
        if self.resumed_key:
            # No worker's lease is taken from it until it has had a lease time to renew (queue.py).
            seconds, microseconds = self.server.time()
            now = seconds * 1000 + microseconds // 1000
            try:
                if self.crawl is not None:
                    self.crawl.guarded_write("SET", self.resumed_key, now)
                else:
                    self.server.set(self.resumed_key, now)
            except CrawlGone:
                gone = True
        return self.restarted(), gone

    def _still_down(self, failure: object) -> None:
        waited = monotonic() - (self.down_since or monotonic())
        if waited >= self.patience:
            self._give_up(waited)
        else:
            self._schedule()

    def _show(self, waiting: bool) -> None:
        if self.stats is not None:
            self.stats.set_value(WAITING_FOR_REDIS, waiting)

    def _back(self, answer: tuple[bool, bool]) -> None:
        restarted, gone = answer
        if gone and restarted:
            # Came back empty (no persistence), or with another crawl under the name: going on would
            # hand out docIDs from 1 again, over the pages saved.  (Gone from the same server: the
            # crawl ended meanwhile, which the scheduler tells.)
            self.lose()
            return
        waited = monotonic() - (self.down_since or monotonic())
        self.down_since = None
        self._show(False)
        logger.warning(
            "Redis at %s is back after %.1f s%s: going on",
            self.shown_url,
            waited,
            " (restarted: this worker hands back the pages it held)" if restarted else "",
        )
        for listener in self.on_back:
            listener(restarted)
        self._release(True)

    def lose(self) -> None:
        """Redis no longer holds the crawl: this worker stops (exit 1) with ``lost_line``, and sends
        Redis nothing more."""
        if not self.gave_up:
            self._stop(self.lost_line)

    def _give_up(self, waited: float) -> None:
        self._stop(
            f"Redis at {self.shown_url} unreachable for {waited:.0f} s (--redis-patience {self.patience:g}): "
            "this worker stops; start it again (or tse crawl --resume) to go on"
        )

    def _stop(self, reason: str) -> None:
        self.gave_up = True
        self.down_since = None
        self._show(False)
        for listener in self.on_give_up:
            listener(reason)
        self._release(False)

    def _release(self, back: bool) -> None:
        waiting, self._waiting = self._waiting, []
        for deferred in waiting:
            deferred.callback(back)
