"""RedisPolitenessMiddleware: one politeness clock per host, shared by all workers.

Scrapy's download delay is kept per process, so N workers would hit a host N
times as often.  Here a request to a host first takes the host's lease, a
Redis key set only if absent (``SET NX PX``) to a token of that request's,
held while the request is in flight (renewed every third of the lease time,
``TSE_LEASE_SECONDS``, however slow the host: a worker that dies mid-request
blocks its host no longer than its pages), and set for the delay when the
request ends, if the key is still its own (or gone): two requests to one
host, from any workers, are never in flight at once and start at least the
delay apart, counted from the end of the previous one as in a single crawl.
A request that never took the lease (refused before it was sent: robots.txt,
another host) changes nothing.  Different hosts proceed in parallel.  The
lease keys are shared by every crawl on the Redis server, so two crawls of
one site are polite together too.  A robots.txt Crawl-delay longer than the
delay is used.

It sits last before the download handler, and the worker's own delay is
zero, so the time the lease is taken is the time the request starts.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import secrets
from time import monotonic
from typing import TYPE_CHECKING, Any

import redis
from scrapy import Request, Spider, signals
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.statscollectors import StatsCollector
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.interfaces import IDelayedCall, IReactorTime

from ..crawl.extensions.politeness import crawl_delay_said, robots_crawl_delay, robots_user_agent
from ..rules.crawling.secrets import mask_secrets
from .extension import distributed_crawl
from .keys import politeness_key
from .outage import RedisOutage
from .store import is_outage, worker_name

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

NO_EXPIRY = -1  # PTTL of a key without one
HOLD_AT_MOST = 3600.0  # seconds: no Crawl-delay is honoured for longer

# A request's end: the host held for the delay from now, only if the key is still that request's (or
# gone: held past its lease); another worker's request in flight meanwhile keeps its hold.
# KEYS[1] the host's key; ARGV: the request's token, the value of the hold after it, its milliseconds.
_RELEASE = """
local held = redis.call('GET', KEYS[1])
if held == ARGV[1] or not held then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0
"""
# A request still in flight: its hold renewed, if it is still its own.  ARGV: the token, milliseconds.
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""


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
        clock: IReactorTime | None = None,
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
        # The requests of this worker in flight holding their host's key: the key and its token.
        self.holding: dict[Request, tuple[str, str]] = {}
        # Each request's token: this worker's name, this middleware's own mark (two crawls may run in
        # one process) and a number.
        self._own = f"{self.worker}:{secrets.token_hex(4)}"
        self._tokens = itertools.count(1)
        self._release = server.register_script(_RELEASE)
        self._renew = server.register_script(_RENEW)
        # The renewals' clock: the reactor once the crawl opens (not touched before: importing it
        # outside a crawl installs Twisted's default one), or the one given (a test's task.Clock).
        self.clock = clock
        self._renewal: IDelayedCall | None = None
        self._renewing = False
        self.crawler: Crawler | None = None  # (from_crawler): a wait ends when its engine closes

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
        middleware.crawler = crawler
        crawler.signals.connect(middleware.robots_parsed, signal=signals.robots_parsed)
        crawler.signals.connect(middleware.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(middleware.spider_closed, signal=signals.spider_closed)
        return middleware

    def spider_opened(self, spider: Spider | None) -> None:
        if self.clock is None:
            from twisted.internet import reactor

            self.clock = reactor  # type: ignore[assignment]
        self._renewing = True
        self._renew_later()

    def spider_closed(self, spider: Spider | None) -> None:
        self._renewing = False
        if self._renewal is not None and self._renewal.active():
            self._renewal.cancel()

    def _renew_later(self) -> None:
        if self._renewing and self.clock is not None:
            self._renewal = self.clock.callLater(max(self.in_flight / 3, 0.1), self._renew_then_again)

    def _renew_then_again(self) -> None:
        try:
            self.renew()
        except redis.RedisError as error:  # (a refusal: said, the holds then lapse as a dead worker's would)
            logger.warning("Cannot renew the politeness leases in Redis: %s", mask_secrets(str(error)))
        finally:
            self._renew_later()

    def renew(self) -> None:
        """The holds of the requests in flight renewed for the lease time more than their delay."""
        for request, (key, token) in list(self.holding.items()):
            milliseconds = self._in_flight_ms(self.host_delay(request)[1])
            try:
                self._renew(keys=[key], args=[token, milliseconds])
            except redis.RedisError as error:
                if self.outage is None or not is_outage(error):
                    raise
                self.outage.failed(error)  # (its hold lapses: another worker may start; said by the outage)
                return

    def _in_flight_ms(self, delay: float) -> int:
        return max(1, int(min(delay + self.in_flight, HOLD_AT_MOST) * 1000))

    def host_delay(self, request: Request) -> tuple[str, float]:
        host = urlparse_cached(request).netloc.lower()
        return host, max(self.delay, self.crawl_delays.get(host, 0.0))

    async def process_request(self, request: Request, spider: Spider | None = None) -> None:
        host, delay = self.host_delay(request)
        if delay <= 0:
            return None
        key, milliseconds = politeness_key(host), self._in_flight_ms(delay)
        delay_ms = max(1, int(delay * 1000))
        token = f"{self._own}:{next(self._tokens)}"
        while True:
            self._unless_closing(request)
            wait = self.own_holds.get(host, 0.0) - monotonic()
            if wait > 0:
                await asyncio.sleep(min(wait, 1.0))  # (a second at a time: the engine may close)
                continue
            try:
                if self.server.set(key, token, px=milliseconds, nx=True):
                    self.holding[request] = (key, token)
                    return None
                remaining = self.server.pttl(key)
            except redis.RedisError as error:
                if self.outage is None or not is_outage(error):
                    raise
                self.outage.failed(error)
                if not await self.outage.wait_for_redis():
                    raise IgnoreRequest(f"Redis is unreachable: {error}") from None
                continue
            if remaining == NO_EXPIRY or remaining > self._longest_hold_ms(delay):
                # No worker sets a lease without an expiry, nor for this long: a client of Redis
                # did; this worker takes the lease rather than wait for it (an hour, or for ever).
                logger.warning("The politeness lease %s holds for %d ms: taken over", key, remaining)
                self.server.set(key, token, px=milliseconds)
                self.holding[request] = (key, token)
                return None
            if self.stats is not None:
                self.stats.inc_value("tse/politeness_waits")
            # Held for a request in flight, the key is set for the delay once it ends: asked again
            # within a delay, the wait then ends when that delay does.
            await asyncio.sleep(min(max(remaining, 1), delay_ms, 1000) / 1000)

    def _longest_hold_ms(self, delay: float) -> int:
        """The longest a worker holds a host: a request in flight, its hold renewed for the lease
        time more than its delay (at most the longest Crawl-delay honoured, TSE_MAX_CRAWL_DELAY)."""
        return int(min(max(delay, self.max_crawl_delay) + self.in_flight, HOLD_AT_MOST) * 1000)

    def _unless_closing(self, request: Request) -> None:
        """Stop waiting for the host when the engine is closing (a SIGTERM, Ctrl-C, an error): the
        request is dropped unsent, unheard by its errback (which would end its page as failed):
        its page is still leased, and handed back to the frontier as the worker stops."""
        engine = getattr(self.crawler, "engine", None)
        slot = getattr(engine, "_slot", None)
        if engine is None or (engine.running and (slot is None or slot.closing is None)):
            return
        request.errback = None  # (Scrapy logs no IgnoreRequest without an errback)
        raise IgnoreRequest(f"the worker is stopping: {request.url} not sent")

    def process_response(self, request: Request, response: Response, spider: Spider | None = None) -> Response:
        self._restart(request)
        return response

    def process_exception(self, request: Request, exception: Exception, spider: Spider | None = None) -> None:
        self._restart(request)

    def _restart(self, request: Request) -> None:
        held = self.holding.pop(request, None)
        if held is not None:  # (else never sent: refused by a middleware before this one, or by this one)
            self._hold(*self.host_delay(request), token=held[1])

    def _hold(self, host: str, delay: float, token: str | None = None) -> None:
        """No request to *host*, from any worker, for *delay* seconds from now, unless another
        worker's request holds it now: the key is set only if it is *token*'s, this worker's
        hold after a request (None: any of them), or gone."""
        if delay <= 0:
            return
        self.own_holds[host] = monotonic() + delay
        after = f"{self._own}:after"
        try:
            self._release(keys=[politeness_key(host)], args=[token or after, after, max(1, int(delay * 1000))])
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
