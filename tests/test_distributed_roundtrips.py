"""A worker's Redis work per page, on a real Redis: links, the page's end and
the next leases in one round trip (``LeasedLevelQueue.settle``), docIDs
reserved with the lease, and few round trips per page in a real crawl."""

import re
import time

import scrapy

from tests.conftest import clean_env, run_tse
from tests.support.sitegen import bfs_depths, generate_multisite
from tse_scrapy.devtools.siteserver import SiteServer
from tse_scrapy.distributed.keys import CrawlKeys
from tse_scrapy.distributed.queue import LeasedLevelQueue
from tse_scrapy.distributed.store import RedisCrawl, connect, url_fingerprint

SPIDER = scrapy.Spider(name="t")
KEYS = CrawlKeys("t")


def queue(url, lease_seconds=30.0) -> LeasedLevelQueue:
    return LeasedLevelQueue(connect(url), SPIDER, KEYS.frontier, keys=KEYS, lease_seconds=lease_seconds)


def page(path, depth):
    url = f"http://a.test/{path}"
    return scrapy.Request(url, meta={"depth": depth}), url_fingerprint(url)


def test_a_pages_links_and_its_end_are_one_step(redis_url):
    q = queue(redis_url, lease_seconds=0.2)
    q.push_unseen(*page("index", 0))
    (taken,) = q.settle(lease=1)[1]
    assert taken.meta["tse_reserved"].doc_id == 1  # reserved with the lease
    # The worker found two links, then was killed before settling: nothing of them is in Redis...
    again = queue(redis_url)
    time.sleep(0.3)
    (retaken,) = again.settle(lease=1)[1]
    assert retaken.url == taken.url and retaken.meta["tse_reserved"].doc_id == 1  # ...the page comes back, same docID
    assert q.server.scard(KEYS.seen) == 1
    # The next worker settles the page: its links, its docID and its lease in one round trip.
    links = [again.link(*page(path, 1)) for path in ("a", "b", "a")]
    before = again.server.round_trips
    fingerprint = retaken.meta["tse_reserved"].fingerprint
    queued, leased, _ = again.settle(links, [(retaken.meta["tse_lease"], fingerprint, fingerprint)], lease=8)
    assert again.server.round_trips == before + 1
    assert queued == [True, True, False]
    assert [request.url for request in leased] == ["http://a.test/a", "http://a.test/b"]
    assert [request.meta["tse_reserved"].doc_id for request in leased] == [2, 3]
    assert RedisCrawl(again.server, "t").reserve_doc_id(fingerprint) == (1, True)  # saved
    assert again.server.zcard(KEYS.leases) == 2  # the page's lease is gone, a and b are leased


def test_a_lease_stops_at_the_next_level_and_a_redirected_page_frees_its_docid(redis_url):
    q = queue(redis_url)
    for path, depth in [("a", 1), ("b", 1), ("c", 2)]:
        q.push_unseen(*page(path, depth))
    a, b = q.settle(lease=8)[1]  # not c: a and b (depth 1) are leased
    # a was redirected and saved under another URL; b failed.
    target = url_fingerprint("http://a.test/target")
    doc, saved = RedisCrawl(q.server, "t").reserve_doc_id(target)
    assert (doc, saved) == (3, False)
    q.settle(finished=[(a.meta["tse_lease"], target, a.meta["tse_reserved"].fingerprint)])
    q.settle(finished=[(b.meta["tse_lease"], b"", b.meta["tse_reserved"].fingerprint)])
    assert RedisCrawl(q.server, "t").free_doc_ids() == [1, 2]
    (c,) = q.settle(lease=8)[1]
    assert c.url.endswith("/c") and c.meta["tse_reserved"].doc_id == 1  # the first freed docID


def test_a_worker_makes_few_redis_round_trips_per_page(redis_url, tmp_path):
    hosts = ["a.test", "b.test"]
    seed = "http://a.test/index.html"
    graph = generate_multisite(tmp_path / "site", hosts, pages=250, cross=3, seed=5)
    pagedir = tmp_path / "pages"
    pagedir.mkdir()
    with SiteServer(tmp_path / "site") as proxy:
        done = run_tse(
            "crawl",
            seed,
            str(pagedir),
            "3",
            "--prefix",
            ",".join(f"http://{host}/" for host in hosts),
            "--redis",
            redis_url,
            "-v",  # the stats, on stderr
            "-s",
            "DOWNLOAD_DELAY=0",  # no politeness lease: two round trips per request when there is a delay
            "-s",
            "CONCURRENT_REQUESTS=16",  # leases 8 requests at a time
            env=clean_env(http_proxy=proxy.url),
        )
    err = done.stderr.decode()
    assert done.returncode == 0, err[-3000:]
    pages = int(re.search(r"'tse/pages_saved': (\d+)", err).group(1))
    round_trips = int(re.search(r"'tse/redis_round_trips': (\d+)", err).group(1))
    assert pages == len(bfs_depths(graph, [seed], 3))
    # One round trip per few pages, plus the start and the end: it was 8 a page with one round
    # trip per link, lease, acknowledgement, docID reservation and record.
    assert round_trips / pages < 0.75, (round_trips, pages)
