"""The scheduler, frontiers and dupefilter, driven with real Scrapy objects."""

import pytest
from scrapy import Request, signals
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from tse_scrapy import settings as project_settings
from tse_scrapy.crawl.scheduling.dupefilter import NormalizedUrlDupeFilter
from tse_scrapy.crawl.scheduling.frontier import LevelFrontier, StackFrontier
from tse_scrapy.crawl.scheduling.scheduler import TseScheduler
from tse_scrapy.crawl.signals import page_done, page_writing


def link(url, depth, found_at=None):
    meta = {"depth": depth, "tse_found_at": depth - 1 if found_at is None else found_at, "tse_link": url}
    return Request(url, meta=meta)


PROJECT_SETTINGS = {name: getattr(project_settings, name) for name in dir(project_settings) if name.isupper()}


@pytest.fixture
def make_scheduler():
    def make(order="tse", **settings):
        # The project's settings, without the extensions (no crawl state here).
        crawler = get_crawler(settings_dict={**PROJECT_SETTINGS, "EXTENSIONS": {}, "TSE_ORDER": order, **settings})
        crawler.stats.open_spider()
        scheduler = TseScheduler.from_crawler(crawler)
        scheduler.open(None)
        return crawler, scheduler

    return make


def release(crawler, request):
    crawler.signals.send_catch_log(page_done, request=request)


def test_stack_frontier_is_lifo_and_level_frontier_is_bfs():
    stack, levels = StackFrontier(), LevelFrontier()
    for url, depth in [("a", 1), ("b", 2), ("c", 1), ("d", 0)]:
        request = Request(f"http://h/{url}", meta={"depth": depth})
        stack.push(request)
        levels.push(request)
    assert [stack.pop().url[-1] for _ in range(4)] == ["d", "c", "b", "a"]
    assert [levels.pop().url[-1] for _ in range(4)] == ["d", "a", "c", "b"]
    assert len(stack) == len(levels) == 0


def test_tse_order_waits_for_the_page_in_flight(make_scheduler, capsys):
    crawler, scheduler = make_scheduler("tse")
    seed = Request("http://h/index.html", meta={"depth": 0})
    assert scheduler.enqueue_request(seed)
    assert scheduler.next_request() is seed
    for name in ("a", "b", "c"):
        assert scheduler.enqueue_request(link(f"http://h/{name}.html", 1))
    assert scheduler.next_request() is None  # the seed is still in flight
    assert scheduler.has_pending_requests()
    release(crawler, seed)
    assert scheduler.next_request().url == "http://h/c.html"
    assert scheduler.next_request() is None
    assert capsys.readouterr().out == "".join(
        f" 0     Found: http://h/{n}.html\n 0     Added: http://h/{n}.html\n" for n in "abc"
    )


def test_duplicates_by_normalized_url(make_scheduler, capsys):
    crawler, scheduler = make_scheduler("tse")
    assert scheduler.enqueue_request(link("http://h/a.html", 1))
    assert not scheduler.enqueue_request(link("HTTP://H//a.html#frag", 1))
    assert not scheduler.enqueue_request(link("http://h/x/../a.html", 1))
    out = capsys.readouterr().out.splitlines()
    assert out[2:] == [
        " 0     Found: HTTP://H//a.html#frag",
        " 0   IgnDupl: HTTP://H//a.html#frag",
        " 0     Found: http://h/x/../a.html",
        " 0   IgnDupl: http://h/x/../a.html",
    ]
    assert crawler.stats.get_value("dupefilter/filtered") == 2


def test_replacement_is_served_first_and_releases_when_dropped(make_scheduler, capsys):
    _, scheduler = make_scheduler("tse")
    scheduler.enqueue_request(Request("http://h/index.html", meta={"depth": 0}))
    seed = scheduler.next_request()
    scheduler.enqueue_request(link("http://h/a.html", 1))
    redirected = seed.replace(url="http://h/moved.html")
    redirected.meta["redirect_urls"] = [seed.url]
    assert scheduler.enqueue_request(redirected)
    assert scheduler.next_request() is redirected  # served although the seed is in flight
    again = redirected.replace(url="http://h/a.html")  # a redirect to a page already seen
    again.meta["redirect_urls"] = [seed.url, redirected.url]
    assert not scheduler.enqueue_request(again)
    assert scheduler.next_request().url == "http://h/a.html"  # the page is over
    assert capsys.readouterr().out.splitlines()[-1] == " 0   IgnDupl: http://h/a.html"


def test_bfs_hands_out_a_level_only_when_shallower_pages_are_done(make_scheduler):
    crawler, scheduler = make_scheduler("bfs", CONCURRENT_REQUESTS=3)
    first = [link(f"http://h/d1-{i}.html", 1) for i in range(2)]
    for request in first:
        scheduler.enqueue_request(request)
    a, b = scheduler.next_request(), scheduler.next_request()
    assert (a.url, b.url) == ("http://h/d1-0.html", "http://h/d1-1.html")
    scheduler.enqueue_request(link("http://h/d2.html", 2))
    release(crawler, a)
    assert scheduler.next_request() is None  # b, of depth 1, is in flight
    scheduler.enqueue_request(link("http://h/d1-2.html", 1, found_at=0))
    c = scheduler.next_request()
    assert c.url == "http://h/d1-2.html"  # same depth: no wait
    release(crawler, b)
    assert scheduler.next_request() is None
    release(crawler, c)
    assert scheduler.next_request().url == "http://h/d2.html"


@pytest.mark.parametrize("order", ["bfs", "priority"])
@pytest.mark.parametrize("concurrency", [1, 2])
def test_no_more_pages_than_concurrent_requests_are_in_flight(make_scheduler, order, concurrency):
    # With CONCURRENT_REQUESTS=1, order=bfs handed out a page while the one before it was still queuing
    # its links (in flight: Scrapy's downloader had done with it): under load the two pages' links came
    # interleaved, and a crawl killed and resumed saved two pages of a level the other way round.
    crawler, scheduler = make_scheduler(order, CONCURRENT_REQUESTS=concurrency)
    for i in range(4):
        scheduler.enqueue_request(link(f"http://h/d1-{i}.html", 1))
    handed = [scheduler.next_request() for _ in range(concurrency)]
    assert [request.url for request in handed] == [f"http://h/d1-{i}.html" for i in range(concurrency)]
    assert scheduler.next_request() is None  # as many in flight as may be
    release(crawler, handed[0])
    assert scheduler.next_request().url == f"http://h/d1-{concurrency}.html"
    assert scheduler.next_request() is None


def test_item_signals_release_the_page(make_scheduler):
    crawler, scheduler = make_scheduler("tse")
    scheduler.enqueue_request(Request("http://h/index.html", meta={"depth": 0}))
    seed = scheduler.next_request()
    scheduler.enqueue_request(link("http://h/a.html", 1))
    response = HtmlResponse(seed.url, body=b"", request=seed)
    crawler.signals.send_catch_log(signals.item_scraped, item={}, response=response, spider=None)
    assert scheduler.next_request().url == "http://h/a.html"


def test_a_page_being_written_lets_the_next_go_and_counts_once_toward_the_limit(make_scheduler):
    crawler, scheduler = make_scheduler("tse", TSE_MAX_PAGES=3)
    scheduler.enqueue_request(Request("http://h/index.html", meta={"depth": 0}))
    seed = scheduler.next_request()
    for name in ("a", "b", "c"):
        scheduler.enqueue_request(link(f"http://h/{name}.html", 1))
    assert scheduler.next_request() is None
    crawler.signals.send_catch_log(page_writing, token=seed.meta["tse_token"])
    c = scheduler.next_request()  # while the seed's file is being written
    assert c.url == "http://h/c.html"
    crawler.signals.send_catch_log(page_writing, token=c.meta["tse_token"])
    for request in (seed, c):  # written: saved once, not twice
        response = HtmlResponse(request.url, body=b"", request=request)
        crawler.signals.send_catch_log(signals.item_scraped, item={}, response=response, spider=None)
    b = scheduler.next_request()
    assert b.url == "http://h/b.html"
    crawler.signals.send_catch_log(page_writing, token=b.meta["tse_token"])
    assert scheduler.next_request() is None  # three pages saved or being written: the limit
    response = HtmlResponse(b.url, body=b"", request=b)
    crawler.signals.send_catch_log(signals.item_error, item={}, response=response, spider=None, failure=None)
    assert scheduler.next_request().url == "http://h/a.html"  # b's write failed: one more may go


def test_dupefilter_from_crawler():
    crawler = get_crawler(settings_dict={"DUPEFILTER_DEBUG": True})
    dupefilter = NormalizedUrlDupeFilter.from_crawler(crawler)
    assert dupefilter.debug
    assert not dupefilter.request_seen(Request("http://h/a.html"))
    assert dupefilter.request_seen(Request("http://H/./a.html#x"))
    assert not dupefilter.request_seen(Request("http://h/a.pdf"))  # non-normalizable: exact URL
    assert dupefilter.request_seen(Request("http://h/a.pdf"))
