"""The distributed crawl's Redis parts on a real Redis: frontier leases, the
breadth-first gate, docID reservations, joining a crawl."""

import time

import pytest
import redis
import scrapy

from tse_scrapy.distributed.join import create_or_join_crawl
from tse_scrapy.distributed.keys import CrawlKeys
from tse_scrapy.distributed.queue import LeasedLevelQueue
from tse_scrapy.distributed.store import RedisCrawl, url_fingerprint
from tse_scrapy.rules.crawlargs import ArgumentError

SPIDER = scrapy.Spider(name="t")
SEED = "http://a.test/index.html"


KEYS = CrawlKeys("t")


def queue(url, lease_seconds=30.0) -> LeasedLevelQueue:
    return LeasedLevelQueue(redis.Redis.from_url(url), SPIDER, KEYS.frontier, keys=KEYS, lease_seconds=lease_seconds)


def push(q, path, depth) -> bool:
    url = f"http://a.test/{path}"
    return q.push_unseen(scrapy.Request(url, meta={"depth": depth}), url_fingerprint(url))


def test_shallowest_first_then_first_pushed(redis_url):
    q = queue(redis_url)
    for path, depth in [("b", 2), ("a", 1), ("c", 1), ("d", 2)]:
        assert push(q, path, depth)
    popped = []
    while (request := q.pop()) is not None:
        popped.append(request.url.rsplit("/", 1)[1])
        q.finish(request.meta["tse_lease"])
    assert popped == ["a", "c", "b", "d"]


def test_a_url_is_queued_once(redis_url):
    q = queue(redis_url)
    assert push(q, "a", 1)
    assert not push(q, "a", 2)
    assert len(q) == 1


def test_deeper_pages_wait_while_a_shallower_one_is_leased(redis_url):
    q = queue(redis_url)
    push(q, "a", 0)
    push(q, "b", 1)
    first = q.pop()
    assert q.pop() is None  # b (depth 1) waits for a (depth 0)
    q.finish(first.meta["tse_lease"])
    assert q.pop().url.endswith("/b")


def test_an_expired_lease_returns_its_request_to_its_place(redis_url):
    dead, alive = queue(redis_url, lease_seconds=0.2), queue(redis_url)
    push(dead, "a", 1)
    push(dead, "b", 1)
    taken = dead.pop()
    assert taken.url.endswith("/a")
    assert alive.pop().url.endswith("/b")
    time.sleep(0.3)
    again = alive.pop()
    assert again.url.endswith("/a") and again.meta["tse_lease"] != taken.meta["tse_lease"]
    dead.finish(taken.meta["tse_lease"])  # too late: it is someone else's now...
    assert alive.server.zscore(KEYS.leases, again.meta["tse_lease"])  # ...and stays theirs


def test_renewed_leases_do_not_expire(redis_url):
    q = queue(redis_url, lease_seconds=0.3)
    push(q, "a", 0)
    lease = q.pop().meta["tse_lease"]
    for _ in range(4):
        time.sleep(0.15)
        assert q.renew([lease]) == 1
    assert q.pop() is None and q.server.zcard(KEYS.leases) == 1


def test_given_back_leases_are_taken_at_once(redis_url):
    q = queue(redis_url)
    push(q, "a", 0)
    q.give_back([q.pop().meta["tse_lease"]])
    assert q.pop().url.endswith("/a")


def test_seen_keys_owned_by_an_expired_lease_are_forgotten(redis_url):
    q = queue(redis_url, lease_seconds=0.2)
    push(q, "a", 0)
    lease = q.pop().meta["tse_lease"]
    target = url_fingerprint("http://a.test/redirected")
    assert q.own_seen(lease, target)
    assert not q.own_seen(lease, target)
    time.sleep(0.3)
    assert q.pop().url.endswith("/a")
    assert q.server.sismember(KEYS.seen, target) == 0  # the second fetch may follow it again


def test_a_url_keeps_its_reserved_doc_id_and_is_saved_once(redis_url):
    crawl = RedisCrawl(redis.Redis.from_url(redis_url), "t")
    q = queue(redis_url)
    a, b, c = (url_fingerprint(f"http://a.test/{x}") for x in "abc")
    assert crawl.reserve_doc_id(a) == (1, False)
    assert crawl.reserve_doc_id(b) == (2, False)
    assert crawl.reserve_doc_id(a) == (1, False)  # a worker died mid-save: same docID
    q.finish(7, saved=a)
    assert crawl.reserve_doc_id(a) == (1, True)  # saved: not again
    q.finish(8, freed=b)  # b failed after all
    assert crawl.free_doc_ids() == [2]
    assert crawl.reserve_doc_id(c) == (2, False)  # the next page takes the hole
    assert crawl.free_doc_ids() == []


def test_the_first_worker_creates_later_ones_join_with_the_name(redis_url, tmp_path):
    crawl, args, created = create_or_join_crawl(
        redis_url, None, dict(seed=SEED, pagedir=str(tmp_path), depth="2", prefix="http://a.test/")
    )
    assert created and args.order == "bfs"
    joined, joined_args, created = create_or_join_crawl(redis_url, crawl.name, {})
    assert joined.name == crawl.name and not created and joined_args == args
    again, _, created = create_or_join_crawl(redis_url, None, dict(seed=SEED, depth=2))
    assert again.name == crawl.name and not created


@pytest.mark.parametrize(
    "name, arguments, message",
    [
        ("nope", {}, "no crawl named nope"),
        (None, {}, "needs its seed(s) or its name"),
        (None, dict(seed=SEED, depth="3"), "has depth=2, not 3"),
        (None, dict(seed=SEED, order="tse"), "breadth-first"),
        ("bad name", {}, "crawl name must be"),
        ("polite", {}, "crawl name polite is reserved"),
    ],
)
def test_joining_is_refused_with_one_line(redis_url, tmp_path, name, arguments, message):
    create_or_join_crawl(redis_url, None, dict(seed=SEED, pagedir=str(tmp_path), depth="2", prefix="http://a.test/"))
    with pytest.raises(ArgumentError, match=message.replace("(", r"\(").replace(")", r"\)")):
        create_or_join_crawl(redis_url, name, arguments)


def test_an_unreachable_redis_is_one_line(tmp_path):
    with pytest.raises(ArgumentError, match=r"cannot use Redis at redis://127\.0\.0\.1:1/0"):
        create_or_join_crawl(
            "redis://127.0.0.1:1/0", None, dict(seed=SEED, pagedir=str(tmp_path), depth="2", prefix="http://a.test/")
        )


def test_holes_left_by_failed_reservations_are_filled_with_the_last_pages(redis_url, tmp_path):
    from tse_scrapy.distributed.extension import fill_doc_id_holes
    from tse_scrapy.rules import pagedir

    crawl = RedisCrawl(redis.Redis.from_url(redis_url), "t")
    q = queue(redis_url)
    keys = [url_fingerprint(f"http://a.test/{n}") for n in range(5)]
    assert [crawl.reserve_doc_id(key) for key in keys] == [(n, False) for n in range(1, 6)]
    for n, key in enumerate(keys, start=1):
        if n in (2, 5):
            q.finish(n, freed=key)  # fetched again after a worker died, and failed
        else:
            pagedir.write_page(tmp_path, n, pagedir.Page(f"http://a.test/{n - 1}", 1, b"x"))
            q.finish(n, saved=key)
    fill_doc_id_holes(crawl, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["1", "2", "3"]
    assert [pagedir.read_page(tmp_path, n).url for n in (1, 2, 3)] == [
        "http://a.test/0",
        "http://a.test/3",
        "http://a.test/2",
    ]
    assert crawl.last_doc_id() == 3
    assert crawl.reserve_doc_id(keys[3]) == (2, True)  # the record follows the file


def test_a_worker_joining_with_default_arguments_takes_the_crawls_own(redis_url, tmp_path):
    from tse_scrapy.cli import build_parser
    from tse_scrapy.crawlstart import prepare_crawl
    from tse_scrapy.spiders.tse import TseSpider

    arguments = dict(seed=SEED, pagedir=str(tmp_path), depth="2", prefix="http://a.test/", links="tse")
    crawl, _, _ = create_or_join_crawl(redis_url, "links", arguments)
    settings = {"TSE_REDIS_URL": redis_url, "TSE_CRAWL_NAME": crawl.name}
    # What `scrapy crawl tse -s TSE_REDIS_URL=... -s TSE_CRAWL_NAME=...` gives: the spider's defaults.
    assert prepare_crawl(TseSpider().arguments, settings.get).args.links == "tse"
    # What `tse crawl --redis URL --name NAME` gives.
    options = build_parser().parse_args(["crawl", "--redis", redis_url, "--name", crawl.name])
    assert options.links is None and options.order is None


@pytest.mark.parametrize("key_type", ["string", "list"])
def test_a_crawl_record_that_is_not_one_is_refused_in_one_line(redis_url, key_type):
    client = redis.Redis.from_url(redis_url)
    if key_type == "string":
        client.set("tse:odd:params", "not json")
    else:
        client.lpush("tse:odd:params", "x")
    with pytest.raises(ArgumentError, match=r"^cannot read crawl odd in Redis at redis://"):
        create_or_join_crawl(redis_url, "odd", {})


@pytest.mark.parametrize("value, refused", [("0", False), ("", False), ("5", True), ("x", True)])
def test_any_page_limit_is_refused_in_a_distributed_crawl(value, refused):
    from tse_scrapy.distributed.join import check_no_page_limit

    setting = {"CLOSESPIDER_PAGECOUNT": value}.get
    if refused:
        with pytest.raises(ArgumentError, match="page limit"):
            check_no_page_limit(setting)
    else:
        check_no_page_limit(setting)
