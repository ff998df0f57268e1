"""Redis cut in the moments between a worker's join (before Scrapy starts) and its
distributed extension's start (the crawl's params read again, Redis's run_id asked): the worker's
start fails in one line, exit 1, as it would have a moment earlier, not with Scrapy's traceback; and a
worker started again once Redis is back crawls the whole site."""

from __future__ import annotations

from tests.support.pages import saved_pages
from tests.support.redisgap import RedisGap
from tests.support.redisserver import RedisServer
from tests.support.sitegen import bfs_depths
from tests.support.wait import wait_until
from tests.test_distributed import (  # noqa: F401 - the site fixture, and the workers' end
    DEPTH,
    SEEDS,
    finish,
    no_worker_outlives_its_test,
    site,
    tse_worker,
)

# The extension's first look of its own at Redis: ``INFO server`` (the run_id an outage compares), as
# RESP sends it (redis-py's ``CLIENT SETINFO`` of each new connection is another command).
INFO_SERVER = b"$4\r\nINFO\r\n$6\r\nserver\r\n"


def _last_line(err: str) -> str:
    assert "Traceback" not in err and "Unhandled error" not in err and "never retrieved" not in err, err[-4000:]
    return err.strip().splitlines()[-1]


def test_redis_lost_as_a_worker_starts_is_one_line_and_a_new_start_crawls_it_all(site, tmp_path):  # noqa: F811
    graph, proxy = site
    pagedir = tmp_path / "pages"
    pagedir.mkdir()
    server = RedisServer(tmp_path / "redis").start()
    gap = RedisGap(server.port, INFO_SERVER, away=2.0)
    try:
        worker = tse_worker(gap.url, pagedir, proxy, "--name", "st", "--redis-patience", "300", delay=0)
        ((status, _, err),) = finish([worker], timeout=60)
        assert gap.cut.is_set()
        assert status == 1, err[-4000:]
        last = _last_line(err)
        assert gap.url in last and last.startswith("tse crawl: "), last
        assert last.endswith("as this worker started: start it again to go on"), last
        assert saved_pages(pagedir) == []  # nothing fetched, nothing written

        # Started again once Redis answers (the gap cuts once, for 2 s), the worker joins the crawl it
        # created and crawls it all.
        wait_until(lambda: not gap.refusing, 30, "the gap never ended")
        again = tse_worker(gap.url, pagedir, proxy, "--name", "st", delay=0)
        ((status, _, err),) = finish([again], timeout=120)
        assert status == 0, err[-4000:]
        assert "Traceback" not in err, err[-4000:]
        assert set(saved_pages(pagedir)) == set(bfs_depths(graph, SEEDS, DEPTH).items())
    finally:
        gap.close()
        server.stop()
