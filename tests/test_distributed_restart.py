"""A distributed crawl whose Redis lost it, or that is over: real workers, a real
redis-server, the test site served on 127.0.0.1 (through the test proxy).

A Redis without persistence that restarts mid-crawl comes back empty: the
workers stop (exit 1) with one line, damage no page file and write no key
for the lost crawl.  A new crawl under a name whose keys were left behind is
refused in one line, as is a finished crawl kept with --keep, a page
directory that is not the crawl's, and a joiner with a smaller delay."""

import json
import logging
import os
import subprocess
import time

import msgpack
import pytest
import redis
import scrapy

from tests.conftest import BIN, clean_env, popen
from tests.support.inprocess import tse_here
from tests.support.pages import saved_pages
from tests.support.redisgap import RedisGap
from tests.support.redisserver import RedisServer
from tests.support.sitegen import bfs_depths
from tests.support.wait import wait_until, while_running
from tests.test_distributed import (  # noqa: F401 - the site fixture, and the workers' end
    DEPTH,
    SEEDS,
    STARTED,
    crawl_args,
    finish,
    no_worker_outlives_its_test,
    site,
    tse_worker,
)
from tse_scrapy.distributed.extension import fill_doc_id_holes
from tse_scrapy.distributed.keys import CrawlKeys
from tse_scrapy.distributed.queue import LeasedLevelQueue
from tse_scrapy.distributed.store import RedisCrawl, url_fingerprint
from tse_scrapy.rules.files import pagedir as pagedirs


def start_in(folder, command, proxy):
    """A worker started in *folder* (its relative paths are that folder's)."""
    worker = popen(
        [*command, "-s", "USER_AGENT=tse-test"],
        cwd=folder,
        env=clean_env(http_proxy=proxy.url),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    STARTED.append(worker)  # killed at the end of the test if still running
    return worker


def page_files(pagedir) -> dict[str, bytes]:
    files = {}
    for path in pagedir.iterdir():
        if path.name.isdigit():
            try:
                files[path.name] = path.read_bytes()
            except FileNotFoundError:  # being moved
                pass
    return files


def one_error_line(err: str) -> str:
    """The worker's last stderr line, checked to be its one reason."""
    assert "Traceback" not in err and "Unhandled error" not in err, err[-4000:]
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize("away", [2.0, 0.0])  # seen as an outage; and maybe not (redis-py's own retries)
def test_a_redis_without_persistence_that_restarts_stops_the_workers_and_damages_nothing(site, tmp_path, away):  # noqa: F811
    graph, proxy = site
    pagedir = tmp_path / "pages"
    pagedir.mkdir()
    server = RedisServer(tmp_path / "redis").start()  # --save '' --appendonly no
    try:
        workers = [
            tse_worker(server.url, pagedir, proxy, "--name", "t3", "-s", "TSE_LEASE_SECONDS=3") for _ in range(2)
        ]
        wait_until(lambda: len(page_files(pagedir)) >= 10, 60, "the crawl never got going", 0.02)
        server.kill()
        before = page_files(pagedir)
        time.sleep(away)
        server.start()
        results = finish(workers, timeout=60)
        keys = server.client().keys("tse:t3:*")
    finally:
        server.stop()
    for status, _, err in results:
        assert status == 1, err[-4000:]
        last = one_error_line(err)
        assert last.startswith(f"tse crawl: Redis at {server.url} no longer holds crawl t3 (it restarted"), last
        assert "the crawl's state is lost" in last and "--appendonly yes" in last, last
        assert "going on" not in err, err[-4000:]
    assert keys == []  # nothing written for the lost crawl
    after = page_files(pagedir)
    assert {name: after.get(name) for name in before} == before  # no page file overwritten
    urls = [url for url, _ in saved_pages(pagedir)]
    assert len(urls) == len(set(urls))  # no URL under two docIDs
    assert len(after) < len(graph)


# A worker's first looks at Redis, as it opens: the scheduler's (ZCARD of the frontier, asked by
# scrapy_redis's open), then its first mark (TIME, then the guarded HSET).  Redis cut there met the
# engine's open, or a signal handler: a traceback ("Scraper close failure"), not the worker's lines.
@pytest.mark.parametrize(
    ("trigger", "restart", "patience", "expected"),
    [
        (b"ZCARD", True, 300, "lost"),  # test_a_redis_without_persistence_...[2.0]'s race, every time
        (b"ZCARD", False, 1, "gave up"),
        (b"TIME", False, 300, "back"),
        (b"ZCARD", False, 300, "refused"),  # (a Redis refusal, not an outage: at once)
        (b"TIME", False, 300, "refused"),
    ],
)
def test_redis_cut_while_a_worker_opens_is_met_like_any_later_outage(
    site,  # noqa: F811
    tmp_path,
    trigger,
    restart,
    patience,
    expected,
):
    graph, proxy = site
    pagedir = tmp_path / "pages"
    pagedir.mkdir()
    server = RedisServer(tmp_path / "redis").start()  # no persistence: a restart comes back empty

    def restart_empty():
        server.kill()
        server.start()

    refusal = b"-NOPERM this user has no permissions to run it" if expected == "refused" else None
    # Away long past a patience of 1 s when the worker must give up: on a loaded machine its first look
    # comes late, and Redis back after 2.5 s was then found back, not given up on.
    away = 6.0 if expected == "gave up" else 2.5
    gap = RedisGap(server.port, trigger, away=away, during=restart_empty if restart else None, refusal=refusal)
    try:
        worker = tse_worker(gap.url, pagedir, proxy, "--name", "op", "--redis-patience", str(patience), delay=0)
        ((status, _, err),) = finish([worker], timeout=60)
        assert gap.cut.is_set()
    finally:
        gap.close()
        server.stop()
    if expected == "back":
        assert status == 0, err[-4000:]
        assert f"Redis at {gap.url} is back after" in err, err[-4000:]
        assert "Traceback" not in err, err[-4000:]
        assert set(saved_pages(pagedir)) == set(bfs_depths(graph, SEEDS, DEPTH).items())  # the whole crawl
        return
    assert status == 1, err[-4000:]
    last = one_error_line(err)
    if expected == "refused":
        assert last == "tse crawl: Redis refused: this user has no permissions to run it", last
    elif expected == "lost":
        assert last.startswith(f"tse crawl: Redis at {gap.url} no longer holds crawl op (it restarted"), last
    else:
        assert last.startswith(f"tse crawl: Redis at {gap.url} unreachable for "), last
        assert "(--redis-patience 1)" in last, last


def test_a_name_with_leftover_keys_is_refused_then_free_and_its_finished_kept_crawl_is_refused(
    site,  # noqa: F811
    redis_url,
    tmp_path,
):
    """A new crawl under a name whose keys were left behind is refused; once they are removed the name
    is free again, and that crawl, finished and kept with --keep, is refused in turn (into another
    directory or its own)."""
    _, proxy = site
    client = redis.Redis.from_url(redis_url)
    # What a crawl whose Redis restarted empty under its workers left (before they stopped writing).
    client.hset("tse:t3:pages", url_fingerprint(SEEDS[0]), 18)
    client.sadd("tse:t3:seen", url_fingerprint(SEEDS[0]))
    client.set("tse:t3:doc_id", 18)
    client.zadd("tse:t3:free_ids", {"5": 5})
    client.set("tse:t3:settle:host:1:abcd", "1 x")
    client.lpush("tse:t3:quarantine", "kept for its operator")
    pagedir = tmp_path / "d3b"
    pagedir.mkdir()
    # The refusals here (exit 2, one line) run in this process (cli.main): their messages are what is checked.
    refused = tse_here("crawl", *crawl_args(pagedir), "--redis", redis_url, "--name", "t3", "-s", "DOWNLOAD_DELAY=0.1")
    status, err = refused.returncode, refused.stderr.decode()
    assert status == 2, err[-3000:]
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"tse crawl: Redis at {redis_url} holds 5 leftover key(s) of a crawl named t3"), err
    assert "tse:t3:doc_id" in err and "remove them" in err and "--name" in err, err
    assert os.listdir(pagedir) == []
    assert not client.exists("tse:t3:params") and not client.exists("tse:t3:finishing")
    # Once they are removed (the quarantine may stay), the name is free again.
    client.delete(*[key for key in client.keys("tse:t3:*") if key != b"tse:t3:quarantine"])
    fast = ("--name", "t3", "-s", "DOWNLOAD_DELAY=0")
    ((status, _, err),) = finish([tse_worker(redis_url, pagedir, proxy, *fast, "--keep")])
    assert status == 0, err[-3000:]
    assert saved_pages(pagedir)
    # That crawl, finished and kept with --keep: refused, into another directory and into its own.
    first, again = pagedir, tmp_path / "d8"
    again.mkdir()
    saved = len(saved_pages(first))
    for directory in (again, first):
        refused = tse_here("crawl", *crawl_args(directory), "--redis", redis_url, *fast)
        status, err = refused.returncode, refused.stderr.decode()
        assert status == 2, err[-3000:]
        assert len(err.splitlines()) == 1, err
        assert err.startswith(f"tse crawl: crawl t3 in Redis at {redis_url} is finished (kept with --keep): "), err
        assert f"{saved} pages saved in {first}" in err and "another --name" in err, err
    assert os.listdir(again) == []
    assert len(saved_pages(first)) == saved


def test_filling_doc_id_holes_never_fails_on_a_missing_file(redis_url, tmp_path):
    crawl = RedisCrawl(redis.Redis.from_url(redis_url), "holes")
    keys = crawl.keys
    page = pagedirs.Page("http://a.test/1", 0, b"one")
    pagedirs.write_page(tmp_path, 1, page)
    crawl.server.set(keys.doc_id, 18)
    crawl.server.hset(keys.pages, mapping={url_fingerprint("http://a.test/1"): 1, url_fingerprint("x"): 18})
    crawl.server.zadd(keys.free_ids, {"5": 5})
    fill_doc_id_holes(crawl, str(tmp_path))  # page file 18 is not there
    assert sorted(os.listdir(tmp_path)) == ["1"]
    assert pagedirs.read_page(tmp_path, 1) == page


def test_the_crawl_keeps_its_page_directory_absolute_a_joiner_keeps_its_delay_and_one_elsewhere_is_refused(
    site,  # noqa: F811
    redis_url,
    tmp_path,
):
    """A joiner given only the crawl's name (and Redis), from another folder, works in the crawl's page
    directory (kept absolute) at the crawl's delay, not its own; a joiner that names the directory
    relative to another folder is refused."""
    _, proxy = site
    (tmp_path / "d11").mkdir()
    (tmp_path / "other" / "d11").mkdir(parents=True)
    env_args = [str(BIN / "tse"), "crawl", ",".join(SEEDS), "d11", "3", "--prefix", crawl_args(tmp_path)[4]]
    # 0.3 s (DELAY is 0.1): the joiner, which asks for none, must start while the crawl goes on.
    command = [*env_args, "--redis", redis_url, "--name", "t11", "-s", "DOWNLOAD_DELAY=0.3", "--keep"]
    first = start_in(tmp_path, command, proxy)
    client = redis.Redis.from_url(redis_url)
    created = lambda: client.exists("tse:t11:params") and client.exists("tse:t11:delay")  # noqa: E731
    wait_until(while_running(first, created, "creating its crawl"), 60, "the crawl was never created", 0.02)
    assert json.loads(client.get("tse:t11:params"))["pagedir"] == str(tmp_path / "d11")
    assert json.loads(client.get("tse:t11:delay"))["delay"] == 0.3
    joiner = start_in(
        tmp_path / "other",
        [str(BIN / "tse"), "crawl", "--redis", redis_url, "--name", "t11", "-s", "DOWNLOAD_DELAY=0"],
        proxy,
    )
    # Refused (exit 2, one line) as it opens: in this process (cli.main), in that folder, while the crawl runs.
    wrong = tse_here(*env_args[1:], "--redis", redis_url, "--name", "t11", cwd=tmp_path / "other")
    results = [*finish([first, joiner]), (wrong.returncode, wrong.stdout.decode(), wrong.stderr.decode())]
    assert [status for status, _, _ in results[:2]] == [0, 0], results[1][2][-3000:]
    assert os.listdir(tmp_path / "other" / "d11") == []
    assert saved_pages(tmp_path / "d11")
    status, _, err = results[2]
    assert status == 2 and len(err.splitlines()) == 1, err[-3000:]
    assert "d11 holds no .crawler: it is not crawl t11's page directory" in err, err[-3000:]
    # The joiner kept the crawl's delay: no two requests to a host closer than 0.3 s.
    times: dict[str, list[float]] = {}
    for hit in proxy.hits:
        times.setdefault(hit.key.split("/", 1)[0], []).append(hit.time)
    gaps = [b - a for hits in times.values() for a, b in zip(sorted(hits), sorted(hits)[1:], strict=False)]
    assert min(gaps) >= 0.3, min(gaps)


def test_a_wrong_type_key_is_named(site, redis_url, tmp_path):  # noqa: F811
    _, proxy = site
    pagedir = tmp_path / "pages"
    pagedir.mkdir()
    client = redis.Redis.from_url(redis_url)
    worker = tse_worker(redis_url, pagedir, proxy, "--name", "wt")
    wait_until(while_running(worker, lambda: len(page_files(pagedir)) >= 3, "saving 3 pages"), 60, "no pages", 0.02)
    client.delete("tse:wt:pages")
    client.set("tse:wt:pages", "iamastring")
    ((status, _, err),) = finish([worker], timeout=60)
    assert status == 1
    last = one_error_line(err)
    assert "key tse:wt:pages holds the wrong type of value" in last, last


def test_a_hostile_entry_is_logged_and_quarantined_in_bounded_pieces(redis_url, caplog):
    keys = CrawlKeys("h")
    server = redis.Redis.from_url(redis_url)
    q = LeasedLevelQueue(server, scrapy.Spider(name="h"), keys.frontier, keys=keys)
    entry = url_fingerprint("http://a.test/x") + msgpack.packb(["v" * 30000, "http://a.test/x"])
    server.zadd(keys.frontier, {entry: 0})
    with caplog.at_level(logging.WARNING):
        settled = q.settle(lease=1)
        q.settle(unreadable=settled.unreadable)
    assert len(settled.unreadable) == 1 and len(settled.unreadable[0][2]) <= 200
    assert caplog.records and max(len(record.getMessage()) for record in caplog.records) < 400
    (record,) = server.lrange(keys.quarantine, 0, -1)
    _, _, _, why, size, kept = msgpack.unpackb(record, raw=True)
    assert len(why) <= 200 and size == len(entry) and kept == entry[:4096]
    assert len(record) < 4096 + 400
