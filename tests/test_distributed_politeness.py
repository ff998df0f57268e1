"""A distributed crawl's politeness lease (distributed/politeness.py) on a real Redis, three workers'
middlewares side by side: a request's end, a request never sent and a request slower than its hold
never let two requests to one host be in flight at once."""

import asyncio
import time

import pytest
import redis
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from twisted.internet.task import Clock

from tse_scrapy.distributed.keys import politeness_key
from tse_scrapy.distributed.politeness import RedisPolitenessMiddleware

KEY = politeness_key("h.test")
DELAY = 0.3


def workers(url: str, count: int = 3, in_flight: float = 30.0) -> list[RedisPolitenessMiddleware]:
    return [RedisPolitenessMiddleware(redis.Redis.from_url(url), DELAY, in_flight=in_flight) for _ in range(count)]


def page(path: str) -> Request:
    return Request(f"http://h.test/{path}")


def starts_within(worker: RedisPolitenessMiddleware, request: Request, seconds: float) -> bool:
    """Whether *worker* may send *request* within *seconds*."""

    async def asked() -> bool:
        try:
            await asyncio.wait_for(worker.process_request(request), seconds)
        except TimeoutError:
            return False
        return True

    return asyncio.run(asked())


def test_a_request_never_sent_leaves_another_workers_request_in_flight_alone(redis_url):
    a, b, c = workers(redis_url)
    assert starts_within(a, page("slow"), 1)
    # B's link refused by robots.txt before politeness saw it: Scrapy still calls every middleware's
    # process_exception.  Before, it set the host's lease to the delay: C started a delay later, A's
    # request still in flight.
    b.process_exception(page("private"), IgnoreRequest("Forbidden by robots.txt"))
    assert redis.Redis.from_url(redis_url).pttl(KEY) > 20_000
    assert not starts_within(c, page("other"), 4 * DELAY)
    a.process_response(page("unrelated"), Response("http://h.test/unrelated"))  # (another request of A's: not sent)
    assert not starts_within(c, page("other"), 2 * DELAY)
    slow = next(iter(a.holding))
    a.process_response(slow, Response(slow.url))
    began = time.monotonic()
    assert starts_within(c, page("other"), 10 * DELAY)
    assert time.monotonic() - began >= DELAY * 0.9  # the delay from A's end


def test_the_end_of_a_request_past_its_hold_does_not_cut_the_next_ones_short(redis_url):
    # A's hold lapsed (no renewal: a worker frozen, or Redis away) and B took the host; A's end then
    # set the host's lease to the delay over B's: C started with B in flight.
    a, b, c = workers(redis_url, in_flight=0.3)
    first, second = page("first"), page("second")
    assert starts_within(a, first, 1)
    assert starts_within(b, second, 3)  # once A's hold lapsed
    a.process_response(first, Response(first.url))
    assert not starts_within(c, page("third"), 0.5)  # B's hold (0.6 s), renewed while in flight
    b.renew()
    assert redis.Redis.from_url(redis_url).pttl(KEY) > 400
    assert not starts_within(c, page("third"), 0.5)
    b.process_response(second, Response(second.url))
    assert starts_within(c, page("third"), 10 * DELAY)


def test_a_request_in_flight_holds_its_host_while_its_worker_renews_it(redis_url):
    (a, c) = workers(redis_url, 2, in_flight=0.3)
    slow = page("slow")
    assert starts_within(a, slow, 1)
    for _ in range(4):  # 1.2 s in flight: twice its hold of 0.6 s
        assert not starts_within(c, page("other"), 0.3)
        a.renew()
    a.process_response(slow, Response(slow.url))
    assert starts_within(c, page("other"), 10 * DELAY)


def test_the_renewal_runs_a_third_of_the_lease_time_apart_while_the_crawl_is_open(redis_url):
    clock = Clock()  # (the crawl's reactor in a crawl; none is installed here)
    a = RedisPolitenessMiddleware(redis.Redis.from_url(redis_url), DELAY, in_flight=3.0, clock=clock)
    slow = page("slow")
    assert starts_within(a, slow, 1)
    a.spider_opened(None)
    assert [call.getTime() for call in clock.getDelayedCalls()] == [pytest.approx(1.0)]
    server = redis.Redis.from_url(redis_url)
    for _ in range(3):
        server.pexpire(KEY, 500)  # (as if 2.8 s had passed)
        clock.advance(1.0)
        assert server.pttl(KEY) > 3000  # renewed: the delay and the lease time from now
    a.spider_closed(None)
    assert clock.getDelayedCalls() == []
    a.process_response(slow, Response(slow.url))
    assert 0 < server.pttl(KEY) <= DELAY * 1000


def test_robots_crawl_delay_does_not_cut_another_workers_request_short(redis_url):
    a, b = workers(redis_url, 2)
    assert starts_within(a, page("slow"), 1)

    class Parsed:  # protego's parser, as Scrapy gives it: a Crawl-delay of 2 s
        class rp:
            @staticmethod
            def crawl_delay(_agent):
                return "2"

    b.robots_parsed(Parsed(), page("robots.txt"))  # B read robots.txt: A's request still in flight
    assert redis.Redis.from_url(redis_url).pttl(KEY) > 20_000
    assert b.host_delay(page("x"))[1] == 2.0
