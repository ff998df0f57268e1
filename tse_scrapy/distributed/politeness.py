"""RedisPolitenessMiddleware: one politeness clock per host, shared by all workers.

Scrapy's download delay is kept per process, so N workers would hit a host N
times as often.  Here a request to a host first takes the host's lease, a
Redis key set only if absent (``SET NX PX``), held while the request is in
flight (up to the lease time, ``TSE_LEASE_SECONDS``: a worker that dies
mid-request blocks its host no longer than its pages), and set again for the
delay when the request ends: two requests to one host, from any workers, are
never in flight at once and start at least the delay apart, counted from the
end of the previous one as in a single crawl.  Different hosts proceed in
parallel.  The lease keys are shared by every crawl on the Redis server, so
two crawls of one site are polite together too.  A robots.txt Crawl-delay
longer than the delay is used.

It sits last before the download handler, and the worker's own delay is
zero, so the time the lease is taken is the time the request starts.
"""

from __future__ import annotations

import asyncio
import logging
from time import monotonic
from typing import TYPE_CHECKING, Any

import redis
from scrapy import Request, Spider, signals
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.statscollectors import StatsCollector
from scrapy.utils.httpobj import urlparse_cached

from ..crawl.extensions.politeness import crawl_delay_said, robots_crawl_delay, robots_user_agent
from .extension import distributed_crawl
from .keys import politeness_key
from .outage import RedisOutage
from .store import is_outage, worker_name

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

NO_EXPIRY = -1  # PTTL of a key without one
HOLD_AT_MOST = 3600.0  # seconds: no Crawl-delay is honoured for longer


class RedisPolitenessMiddleware:
    """A downloader middleware: a request waits for its host's lease, and holds it for the delay."""

    def __init__(
        self,
        server: redis.Redis,
        delay: float,
        user_agent: str | None = None,
        stats: StatsCollector | None = None,
        outage: RedisOutage | None = None,
        max_crawl_delay: float = HOLD_AT_MOST,
        in_flight: float = 30.0,
    ):
        self.server = server
        # How long a request may hold its host before it ends (then the delay counts from its end):
        # held only for the delay, a request slower than it let another worker's start meanwhile.
        self.in_flight = in_flight
        self.max_crawl_delay = max_crawl_delay
        self.delay = delay
        self.user_agent = user_agent
        self.stats = stats
        self.crawl_delays: dict[str, float] = {}
        self.worker = worker_name()
        # host -> when this worker may next start a request to it, by its own clock:
        # the delay holds even when Redis could not be told (an outage).
        self.own_holds: dict[str, float] = {}
        self.outage = outage

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedisPolitenessMiddleware:
        distributed = distributed_crawl(crawler)
        settings = crawler.settings
        middleware = cls(
            distributed.crawl.server,
            distributed.host_delay,  # the crawl's, not this worker's (extension.py)
            robots_user_agent(settings),
            crawler.stats,
            distributed.outage,
            distributed.max_crawl_delay,
            settings.getfloat("TSE_LEASE_SECONDS"),
        )
        crawler.signals.connect(middleware.robots_parsed, signal=signals.robots_parsed)
        return middleware

    def host_delay(self, request: Request) -> tuple[str, float]:
        host = urlparse_cached(request).netloc.lower()
        return host, max(self.delay, self.crawl_delays.get(host, 0.0))

    async def process_request(self, request: Request, spider: Spider | None = None) -> None:
        host, delay = self.host_delay(request)
        if delay <= 0:
            return None
        key, milliseconds = politeness_key(host), max(1, int(min(delay + self.in_flight, HOLD_AT_MOST) * 1000))
        delay_ms = max(1, int(delay * 1000))
        while True:
            wait = self.own_holds.get(host, 0.0) - monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            try:
                if self.server.set(key, self.worker, px=milliseconds, nx=True):
                    return None
                remaining = self.server.pttl(key)
            except redis.RedisError as error:
                if self.outage is None or not is_outage(error):
                    raise
                self.outage.failed(error)
                if not await self.outage.wait_for_redis():
                    raise IgnoreRequest(f"Redis is unreachable: {error}") from None
                continue
            if remaining == NO_EXPIRY or remaining > HOLD_AT_MOST * 1000:
                # No worker sets a lease without an expiry, nor for this long: a client of Redis
                # did; this worker takes the lease rather than wait forever.
                logger.warning("The politeness lease %s holds for %d ms: taken over", key, remaining)
                self.server.set(key, self.worker, px=milliseconds)
                return None
            if self.stats is not None:
                self.stats.inc_value("tse/politeness_waits")
            # Held for a request in flight, the key is set for the delay once it ends: asked again
            # within a delay, the wait then ends when that delay does.
            await asyncio.sleep(min(max(remaining, 1), delay_ms) / 1000)

    def process_response(self, request: Request, response: Response, spider: Spider | None = None) -> Response:
        self._restart(request)
        return response

    def process_exception(self, request: Request, exception: Exception, spider: Spider | None = None) -> None:
        self._restart(request)

    def _restart(self, request: Request) -> None:
        self._hold(*self.host_delay(request))

    def _hold(self, host: str, delay: float) -> None:
        """No request to *host*, from any worker, for *delay* seconds from now."""
        if delay <= 0:
            return
        self.own_holds[host] = monotonic() + delay
        try:
            self.server.set(politeness_key(host), self.worker, px=max(1, int(delay * 1000)))
        except redis.RedisError as error:
            if self.outage is None or not is_outage(error):
                raise
            self.outage.failed(error)  # this worker keeps the delay itself (own_holds)

    def robots_parsed(self, robotparser: Any, request: Request) -> None:
        delay = robots_crawl_delay(robotparser, self.user_agent)
        host, current = self.host_delay(request)
        if delay and delay > current:
            # (At most TSE_MAX_CRAWL_DELAY, below HOLD_AT_MOST: a lease longer is taken over, process_request.)
            delay, said = crawl_delay_said(delay, min(self.max_crawl_delay, HOLD_AT_MOST), host)
            # At WARNING, as a single-machine crawl says it (crawl/extensions/politeness.py): shown on
            # tse crawl's quiet terminal, once per host and worker (each reads robots.txt once).
            logger.warning("%s", said)
            self.crawl_delays[host] = delay
            # robots.txt has just been fetched: the longer delay counts from now,
            # for the other workers too (they learn it from their own robots.txt).
            self._hold(host, delay)
