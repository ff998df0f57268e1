"""The crawl's ETA (rules/crawling/eta.py) as pure functions: every expected value is worked out by hand."""

import math
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tse_scrapy.rules.crawling.eta import Estimate, FrontierCensus, HostWork, estimate, format_clock, format_eta


def H(requests, delay=0.0, response=0.0, concurrency=1, ready=0.0):
    return HostWork(requests=requests, delay=delay, response_time=response, concurrency=concurrency, ready=ready)


# (hosts, crawl concurrency, growing, expected seconds, why)
ESTIMATES = [
    ([H(10, delay=1, response=0.2)], 1, False, 11.0, "10 x (1 + 0.2) - 1: no delay after the last request"),
    ([H(1, delay=5, response=0.5)], 1, False, 0.5, "one request: only its response time"),
    ([H(3, delay=2, response=0)], 1, False, 4.0, "3 x 2 - 2: instant answers, two waits"),
    (
        [H(10, delay=1, response=0.2), H(3, delay=2, response=1)],
        16,
        False,
        11.0,
        "side by side: max(11, 3 x 3 - 2 = 7); the work (2 + 3) / 16 is less",
    ),
    (
        [H(2, delay=1, response=0), H(5, delay=2, response=0.5)],
        16,
        False,
        10.5,
        "the slower host sets the end: max(2 x 1 - 1 = 1, 5 x 2.5 - 2 = 10.5)",
    ),
    (
        [H(10, response=1, concurrency=8)] * 4,
        2,
        False,
        20.0,
        "40 requests of 1 s, 2 at a time: 20 s, though each host alone takes ceil(10/8) = 2 s",
    ),
    (
        [H(6, response=0.5, concurrency=8), H(4, response=2, concurrency=8)],
        2,
        False,
        5.5,
        "work (6 x 0.5 + 4 x 2) / 2 = 5.5 beats max(0.5, 2)",
    ),
    ([H(10, response=1, concurrency=4)], 4, False, 3.0, "no delay, 4 at once: ceil(10/4) = 3 rounds"),
    ([H(8, response=1, concurrency=4)], 4, False, 2.0, "8/4: exactly 2 rounds"),
    ([H(3, delay=2, response=0.5, ready=1.5)], 1, False, 7.0, "1.5 still to wait + 3 x 2.5 - 2"),
    ([H(1, delay=1, response=0.25, ready=0.75)], 1, False, 1.0, "0.75 + 0.25"),
    ([H(2, delay=1, response=1, ready=-5)], 1, False, 3.0, "a past ready time counts as now: 2 x 2 - 1"),
    ([H(3, response=1, concurrency=0)], 1, False, 3.0, "a concurrency of 0 counts as 1"),
    ([H(4, response=1, concurrency=4)], 0, False, 4.0, "a crawl concurrency of 0 counts as 1: work 4 / 1"),
    ([], 1, False, 0.0, "no host"),
    ([H(0, delay=3, response=2, ready=5)], 1, False, 0.0, "nothing queued: nothing to wait for"),
    ([H(-2, delay=3, response=2)], 1, False, 0.0, "a negative count is nothing"),
    ([H(0), H(0, delay=1)], 8, True, 0.0, "nothing queued, but a page in flight may add links"),
    ([H(1, response=0.25)], 1, True, 0.25, "growing: a lower bound"),
    ([H(10, delay=1, response=3, concurrency=8)], 8, False, 12.0, "8 at once, a delay: one a second, 9 x 1 + 3"),
    ([H(10, delay=1, response=3, concurrency=2)], 2, False, 21.0, "2 at once: pace max(1, 4 / 2) = 2, 9 x 2 + 3"),
    ([H(5, delay=1, response=0.5), H(0)], 1, True, 6.5, "growing: 5 x 1.5 - 1, a lower bound"),
]


# (hosts, page limit: requests still to answer at most, expected seconds, why)
LIMITED = [
    ([H(10, delay=1, response=0.2)], 3, 2.6, "3 of the 10 queued: 2 x 1.2 + 0.2"),
    ([H(10, delay=1), H(10, delay=1)], 4, 1.0, "2 each: 1 x 1 + 0"),
    ([H(3, delay=1, response=1)], 5, 5.0, "the limit is not reached: 2 x 2 + 1, still growing"),
    ([H(3, delay=1, response=1)], 0, 0.0, "the limit is reached: nothing more"),
]


@pytest.mark.parametrize("hosts, limit, seconds, why", LIMITED, ids=[case[-1] for case in LIMITED])
def test_a_page_limit_bounds_the_estimate(hosts, limit, seconds, why):
    found = estimate(hosts, growing=True, limit=limit)
    assert found.seconds == pytest.approx(seconds, abs=1e-9)
    assert found.lower_bound is (sum(host.requests for host in hosts) < limit)


@pytest.mark.parametrize("hosts, concurrency, growing, seconds, why", ESTIMATES, ids=[case[-1] for case in ESTIMATES])
def test_estimate(hosts, concurrency, growing, seconds, why):
    found = estimate(hosts, concurrency=concurrency, growing=growing)
    assert found.seconds == pytest.approx(seconds, abs=1e-9)
    assert found.lower_bound is growing


def test_estimate_takes_any_iterable():
    assert estimate(iter([H(10, delay=1, response=0.2)])).seconds == pytest.approx(11.0)


@pytest.mark.parametrize(
    "seconds, floor, shown",
    [
        (0, False, "0:00"),
        (0.0, True, "0:00"),
        (0.2, False, "0:00"),  # to the nearest second
        (0.5, False, "0:01"),
        (0.2, True, "0:00"),
        (1, False, "0:01"),
        (9.999, False, "0:10"),
        (9.999, True, "0:09"),  # a time so far: only whole seconds over
        (59, False, "0:59"),
        (59.5, False, "1:00"),
        (59.5, True, "0:59"),
        (60, False, "1:00"),
        (61, False, "1:01"),
        (61.49, False, "1:01"),
        (61.99, True, "1:01"),
        (599, False, "9:59"),
        (600, False, "10:00"),
        (3599, False, "59:59"),
        (3599.5, False, "1:00:00"),
        (3599.9, True, "59:59"),
        (3600, False, "1:00:00"),
        (3661, False, "1:01:01"),
        (3661.5, True, "1:01:01"),
        (36000, False, "10:00:00"),
        (2 * 86400 + 5, False, "48:00:05"),
        (math.inf, False, "0:00"),
        (-math.inf, False, "0:00"),
        (math.nan, False, "0:00"),
        (math.nan, True, "0:00"),
        (-1, False, "0:00"),
        (-0.5, True, "0:00"),
    ],
)
def test_format_clock(seconds, floor, shown):
    assert format_clock(seconds, floor=floor) == shown


@pytest.mark.parametrize(
    "found, at_least, shown",
    [
        (Estimate(65, False), "\u2265", "ETA 1:05"),
        (Estimate(65, True), "\u2265", "ETA \u2265 1:05"),
        (Estimate(65, False), ">=", "ETA 1:05"),
        (Estimate(65, True), ">=", "ETA >= 1:05"),
        (Estimate(0.1, True), ">=", "ETA >= 0:00"),
        (Estimate(0, False), "\u2265", "ETA 0:00"),
        (Estimate(0, True), "\u2265", "ETA \u2265 0:00"),
        (Estimate(3725.2, True), "\u2265", "ETA \u2265 1:02:05"),
    ],
)
def test_format_eta(found, at_least, shown):
    assert format_eta(found, at_least) == shown


def test_format_eta_says_at_least_with_the_sign_by_default():
    assert format_eta(Estimate(5, True)) == "ETA \u2265 0:05"


# FrontierCensus: hosts are named as Scrapy names download slots (the hostname: no port, lower case).


@pytest.mark.parametrize(
    "url, host",
    [
        ("http://h/b", "h"),
        ("http://h:8080/a", "h"),
        ("https://h:443/", "h"),
        ("http://Example.COM:80/x?q=1", "example.com"),
        ("http://user:pw@h.test:81/a", "h.test"),
        ("http://127.0.0.1:34233/index.html", "127.0.0.1"),
        ("http://[::1]:8080/a", "::1"),
        ("http://[::1/a", ""),  # unparseable: no host, no crash
    ],
)
def test_census_host(url, host):
    assert FrontierCensus().host(url) == host


def test_census_by_host_and_depth():
    census = FrontierCensus()
    assert len(census) == 0 and census.shallowest() is None
    census.add("http://h:8080/a", 2)
    census.add("http://h/b", 1)
    census.add("http://other.test/c", 1)
    assert census.by_host == {"h": 2, "other.test": 1}
    assert census.by_depth == {1: 2, 2: 1}
    assert len(census) == 3 and census.shallowest() == 1
    census.remove("http://h/b", 1)
    assert census.by_host == {"h": 1, "other.test": 1}
    assert census.by_depth == {1: 1, 2: 1}
    census.remove("http://other.test/c", 1)
    assert census.by_host == {"h": 1} and census.by_depth == {2: 1}
    assert len(census) == 1 and census.shallowest() == 2
    census.remove("http://h:8080/a", 2)
    assert census.by_host == {} and census.by_depth == {}  # no zero counts left behind
    assert len(census) == 0 and census.shallowest() is None


def test_census_counts_the_same_url_twice():
    census = FrontierCensus()
    census.add("http://h/a", 0)
    census.add("http://h/a", 0)
    assert census.by_host == {"h": 2} and len(census) == 2
    census.remove("http://h/a", 0)
    assert census.by_host == {"h": 1} and len(census) == 1 and census.shallowest() == 0


def test_census_removing_what_is_not_there_goes_no_lower_than_nothing():
    census = FrontierCensus()
    census.remove("http://h/a", 3)
    assert census.by_host == {} and census.by_depth == {} and len(census) == 0


# Properties.

hosts_work = st.builds(
    HostWork,
    requests=st.integers(0, 1000),
    delay=st.floats(0, 100),
    response_time=st.floats(0, 100),
    concurrency=st.integers(1, 16),
    ready=st.floats(0, 100),
)
any_hosts_work = st.builds(  # including the nonsense a measurement may give (negative, zero concurrency)
    HostWork,
    requests=st.integers(-5, 1000),
    delay=st.floats(-10, 100),
    response_time=st.floats(-10, 100),
    concurrency=st.integers(-2, 16),
    ready=st.floats(-100, 100),
)


def own_time(work: HostWork) -> float:
    """A host on its own, by the module's rule (written out again here)."""
    if work.requests <= 0:
        return 0.0
    rounds = -(-work.requests // max(work.concurrency, 1))
    delay, response, ready = max(work.delay, 0), max(work.response_time, 0), max(work.ready, 0)
    return ready + rounds * (delay + response) - delay


@given(st.lists(hosts_work, min_size=1, max_size=6), st.data(), st.integers(1, 32), st.booleans())
def test_adding_a_request_never_makes_the_crawl_shorter(hosts, data, concurrency, growing):
    i = data.draw(st.integers(0, len(hosts) - 1))
    more = [*hosts]
    more[i] = HostWork(
        hosts[i].requests + 1, hosts[i].delay, hosts[i].response_time, hosts[i].concurrency, hosts[i].ready
    )
    before = estimate(hosts, concurrency=concurrency, growing=growing).seconds
    assert estimate(more, concurrency=concurrency, growing=growing).seconds >= before


@given(st.lists(hosts_work, max_size=6), st.integers(1, 32))
def test_the_crawl_takes_at_least_each_host_and_its_whole_work(hosts, concurrency):
    seconds = estimate(hosts, concurrency=concurrency).seconds
    for work in hosts:
        assert seconds >= own_time(work) * (1 - 1e-9)
    whole = sum(w.requests * w.response_time for w in hosts) / concurrency
    assert seconds >= whole * (1 - 1e-9)


@given(st.lists(any_hosts_work, max_size=6), st.integers(-2, 32), st.booleans())
def test_the_estimate_is_never_negative(hosts, concurrency, growing):
    found = estimate(hosts, concurrency=concurrency, growing=growing)
    assert math.isfinite(found.seconds) and found.seconds >= 0
    assert found.lower_bound is growing


HOSTS = {"a.test": "a.test", "B.Test": "b.test", "127.0.0.1": "127.0.0.1", "[::1]": "::1"}
urls = st.builds(
    lambda scheme, host, port, path: f"{scheme}://{host}{port}/{path}",
    st.sampled_from(["http", "https"]),
    st.sampled_from(sorted(HOSTS)),
    st.sampled_from(["", ":80", ":8080"]),
    st.text("abc/.-", max_size=8),
)


@given(st.lists(st.tuples(urls, st.integers(0, 10)), max_size=30), st.randoms(use_true_random=False))
def test_census_after_adds_and_matching_removes_is_empty(queued, rng):
    census = FrontierCensus()
    # Adds and removes interleaved: each remove takes a random request added before it.
    pending = list(queued)
    waiting = []
    while pending or waiting:
        if pending and (not waiting or rng.random() < 0.6):
            url, depth = pending.pop()
            census.add(url, depth)
            waiting.append((url, depth))
        else:
            url, depth = waiting.pop(rng.randrange(len(waiting)))
            census.remove(url, depth)
        model_hosts = Counter(host_of(u) for u, _ in waiting)
        model_depths = Counter(d for _, d in waiting)
        assert census.by_host == model_hosts
        assert census.by_depth == model_depths
        assert len(census) == len(waiting)
        assert census.shallowest() == (min(model_depths) if waiting else None)
    assert len(census) == 0 and census.shallowest() is None
    assert not census.by_host and not census.by_depth


def host_of(url: str) -> str:
    netloc = url.split("://", 1)[1].split("/", 1)[0]
    for written, host in HOSTS.items():
        if netloc == written or netloc.startswith(written + ":"):
            return host
    raise AssertionError(netloc)
