"""A crawl begun when requests were stored pickled (crawl format 2): refused
in one line, converted by --migrate without running any pickle, finished
exactly.  Planted entries in every structure of a running crawl: none runs,
none stops a worker, each is quarantined."""

import json
import pickle

import msgpack
import redis

from tests.support.inprocess import tse_here
from tests.support.pages import saved_pages
from tests.support.planted import Planted
from tests.test_distributed import (  # noqa: F401 - the site fixture and the workers' helpers
    DEPTH,
    PREFIX,
    SEEDS,
    check_shared_directory,
    finish,
    no_worker_outlives_its_test,
    site,
    tse_worker,
)
from tse_scrapy.distributed.keys import CrawlKeys
from tse_scrapy.distributed.store import url_fingerprint
from tse_scrapy.rules.crawling.crawlargs import check_crawl_args


def legacy_entry(url: str, depth: int) -> bytes:
    """A frontier entry as format 2 stored it: fingerprint, then Request.to_dict pickled (scrapy-redis)."""
    fields = dict(
        url=url,
        callback="parse",
        errback="fetch_failed",
        method="GET",
        headers={},
        body=b"",
        cookies={},
        meta={"depth": depth},
        encoding="utf-8",
        priority=0,
        dont_filter=False,
        flags=[],
        cb_kwargs={},
    )
    return url_fingerprint(url) + pickle.dumps(fields, protocol=-1)


def plant_pickles(server, keys, pwned, *, frontier=True):
    """A code-running pickle behind prefixes of every length in each of the crawl's lists, sorted sets and hashes."""
    planted = 0
    for prefix in range(33):  # the fingerprint is the first 16 bytes: shorter, as long, longer
        evil = b"\x00" * prefix + pickle.dumps(Planted(pwned), protocol=pickle.HIGHEST_PROTOCOL)
        if frontier:
            server.zadd(keys.frontier, {evil: 0})
        server.zadd(keys.free_ids, {evil: 0})
        server.zadd(keys.lease_scores, {evil: 0})
        server.zadd(keys.leases, {evil: 2**50})
        server.hset(keys.leased, evil, evil)
        server.hset(keys.pages, evil, evil)
        server.hset(keys.reserved, evil, evil)
        server.hset(keys.workers, evil, evil)
        planted += 8 if frontier else 7
    return planted


def format_2_crawl(redis_url, pagedir, name):
    server = redis.Redis.from_url(redis_url)
    keys = CrawlKeys(name)
    args = check_crawl_args(seed=",".join(SEEDS), pagedir=str(pagedir), depth=str(DEPTH), prefix=PREFIX, order="bfs")
    server.set(keys.params, json.dumps({**args.identity(), "pagedir": str(pagedir), "format": 2}))
    for score, seed in enumerate(SEEDS):
        server.sadd(keys.seen, url_fingerprint(seed))
        server.zadd(keys.frontier, {legacy_entry(seed, 0): score})
    server.set(keys.seeded, 1)
    return server, keys


def test_a_pickled_crawl_is_refused_then_migrated_without_running_any_pickle(redis_url, site, tmp_path):  # noqa: F811
    graph, proxy = site
    pagedir = tmp_path / "pages"
    pagedir.mkdir()
    pwned = tmp_path / "pwned"
    server, keys = format_2_crawl(redis_url, pagedir, "old")
    for prefix in (0, 16, 17):
        server.zadd(keys.frontier, {b"\x00" * prefix + pickle.dumps(Planted(pwned)): 5})
    refused = tse_here("crawl", "--redis", redis_url, "--name", "old")  # a refusal before any crawl: in this process
    err = refused.stderr.decode()
    assert refused.returncode == 2 and len(err.splitlines()) == 1, err
    assert "stored requests pickled" in err and "--migrate" in err
    ((status, _, err),) = finish([tse_worker(redis_url, pagedir, proxy, "--name", "old", "--migrate", "--keep")])
    assert status == 0, err[-3000:]
    assert "Crawl old converted to requests stored as data: 2 entries converted, 3 moved to tse:old:quarantine" in err
    assert not pwned.exists()
    check_shared_directory(pagedir, graph, tmp_path, proxy)
    shown = tse_here("status", "--redis", redis_url, "old").stdout.decode()  # Redis read: in this process
    assert "quarantined 3 (tse:old:quarantine)" in shown, shown
    assert shown.count("quarantined: tse:old:frontier: not a request of an earlier version") == 3, shown


def test_planted_pickles_in_every_structure_run_nothing_and_are_quarantined(redis_url, site, tmp_path):  # noqa: F811
    graph, proxy = site
    pagedir = tmp_path / "pages"
    pagedir.mkdir()
    pwned = tmp_path / "pwned"
    keys = CrawlKeys("p")
    server = redis.Redis.from_url(redis_url)
    planted = plant_pickles(server, keys, pwned)
    # One worker meets every planted entry itself: a forged lease that gated the crawl at depth 0 hung a
    # lone worker every time (two finished only when one of them polled while the frontier was empty).
    results = finish([tse_worker(redis_url, pagedir, proxy, "--name", "p", "-s", "TSE_LEASE_SECONDS=3")], timeout=120)
    for status, _, err in results:
        assert status == 0, err[-3000:]
        assert "Traceback" not in err and "Unhandled error" not in err, err[-3000:]
    assert not pwned.exists()
    check_shared_directory(pagedir, graph, tmp_path, proxy)
    records = [msgpack.unpackb(record, raw=True) for record in server.lrange(keys.quarantine, 0, -1)]
    assert len(records) == planted, sorted((r[2], r[3]) for r in records)
    assert {r[2].decode() for r in records} == {
        keys.frontier,
        keys.free_ids,
        keys.lease_scores,
        keys.leases,
        keys.leased,
        keys.pages,
        keys.reserved,
        keys.workers,
    }
    assert server.keys("tse:p:*") == [keys.quarantine.encode()]  # the rest removed at the end
    assert len(saved_pages(pagedir)) == len(set(saved_pages(pagedir)))
    # The quarantine is a list too: a record planted there is shown as what it is, never loaded.
    server.lpush(keys.quarantine, pickle.dumps(Planted(pwned)))
    # What Redis holds, read in this process (cli.main): a pickle it loaded would run here, and be seen.
    shown = tse_here("status", "--redis", redis_url, "p")
    out = shown.stdout.decode()
    assert shown.returncode == 0, shown.stderr.decode()
    assert out.startswith(f"crawl p: over (its keys are removed), quarantined {planted + 1} (tse:p:quarantine)\n")
    assert "quarantined: (a record of" in out and "that is not one of tse's)" in out, out
    assert not pwned.exists()
