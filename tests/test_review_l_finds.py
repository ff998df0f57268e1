"""revL's finds in crash-safe and distributed crawls, each with the test that failed before its mend."""

from __future__ import annotations

import os
import pickle
import shutil
import sqlite3

import pytest
import redis

from tests.conftest import run_tse
from tests.support.l_redisgap import NthRedisGap
from tests.support.pages import saved_pages, tree
from tests.support.redisserver import RedisServer
from tests.support.resumestate import uncommitted
from tests.support.sitegen import bfs_depths, write_site
from tests.support.wait import wait_until
from tests.test_distributed import (  # noqa: F401 - the site fixture, and the workers' end
    DEPTH,
    SEEDS,
    finish,
    no_worker_outlives_its_test,
    site,
    tse_worker,
)
from tse_scrapy.devtools.siteserver import SiteServer


def jobdir_crawl(server, out, jobdir):
    seed, prefix = f"{server.url}/index.html", f"{server.url}/"
    return run_tse("crawl", seed, out, 1, "--prefix", prefix, "-s", "DOWNLOAD_DELAY=0", "-s", f"JOBDIR={jobdir}")


@pytest.fixture(scope="module")
def finished_job_once(tmp_path_factory):
    """A four-page site, served for the module, and its finished crawl with a JOBDIR (whose state stays)."""
    root = tmp_path_factory.mktemp("finished_job")
    written = write_site(
        root / "site", {"index.html": ["a.html", "b.html", "c.html"], "a.html": [], "b.html": [], "c.html": []}
    )
    with SiteServer(written.root) as server:
        out, jobdir = root / "out", root / "job"
        out.mkdir()
        done = jobdir_crawl(server, out, jobdir)
        assert done.returncode == 0, done.stderr.decode()
        yield server, out, jobdir


class _Planted:
    """A pickle that makes a directory when loaded: what a foreign state could hold instead."""

    def __init__(self, path):
        self.path = str(path)

    def __reduce__(self):
        return (os.mkdir, (self.path,))


def _set(jobdir, sql, *parameters):
    db = sqlite3.connect(jobdir / "tse-state.sqlite")
    try:
        with db:
            db.execute(sql, parameters)
    finally:
        db.close()


@pytest.mark.parametrize(
    "damage", ["planted pickle", "planted request class", "damaged request", "damaged arguments", "damaged counter"]
)
def test_a_foreign_or_damaged_resume_state_runs_nothing_and_is_refused_in_one_line(tmp_path, finished_job_once, damage):
    """The state's requests were pickles loaded as they came: a page directory (or a JOBDIR) from
    elsewhere ran whatever its state named on ``--resume``, and a damaged one was a traceback."""
    server, crawled, crawled_job = finished_job_once
    out, jobdir = tmp_path / "out", tmp_path / "job"
    shutil.copytree(crawled, out)
    shutil.copytree(crawled_job, jobdir)
    last = max(int(name) for name in tree(out) if name.isdigit())
    uncommitted(jobdir, last)  # a crawl killed before its last page's commit: its request is read on resume
    (out / str(last)).unlink()
    marker = tmp_path / "ran"
    where = "frontier row"
    if damage == "planted pickle":
        _set(jobdir, "UPDATE frontier SET request = ?", pickle.dumps(_Planted(marker)))
    elif damage == "planted request class":
        request = {"url": f"{server.url}/a.html", "_class": "subprocess.Popen", "args": ["mkdir", str(marker)]}
        _set(jobdir, "UPDATE pages SET request = ? WHERE doc_id = 1", pickle.dumps(request, protocol=4))
        where = "the request of page 1"
    elif damage == "damaged request":
        _set(jobdir, "UPDATE frontier SET request = ?", b"\x80\x04\x95 not a pickle")
    elif damage == "damaged arguments":
        _set(jobdir, "UPDATE meta SET value = ? WHERE key = 'arguments'", '{"seed": ')
        where = "its crawl's arguments are not what tse records"
    else:
        _set(jobdir, "UPDATE meta SET value = ? WHERE key = 'next_doc_id'", "4x")
        where = "its next docID is not a number"
    before, hits = tree(out), len(server.hits)
    result = jobdir_crawl(server, out, jobdir)
    stderr = result.stderr.decode()
    assert not marker.exists()
    assert result.returncode == 2, stderr
    assert stderr.startswith(f"tse crawl: cannot read the crawl state: {jobdir / 'tse-state.sqlite'}: {where}")
    assert stderr.count("\n") == 1 and "Traceback" not in stderr
    assert tree(out) == before
    assert len(server.hits) == hits  # nothing fetched


# The first command of each new connection of redis-py's (RESP 3): a worker's join before Scrapy starts
# opens one, its distributed extension, as Scrapy builds it, the second.
HELLO = b"$5\r\nHELLO\r\n"


def test_redis_gone_as_the_extension_connects_is_one_line(site, tmp_path):  # noqa: F811
    """Redis cut at the extension's first question (its new connection's HELLO), a moment after the
    join had its answers: the worker's start was connect's ArgumentError raised in Scrapy's start, a
    traceback ("Task exception was never retrieved") and exit 1 with no line of tse's.  (That a worker
    started again crawls it all is test_distributed_start_outage's, a gap a moment later.)"""
    _, proxy = site
    pagedir = tmp_path / "pages"
    pagedir.mkdir()
    server = RedisServer(tmp_path / "redis").start()
    gap = NthRedisGap(server.port, HELLO, nth=2, away=2.0)
    try:
        worker = tse_worker(gap.url, pagedir, proxy, "--name", "ping", delay=0)
        ((status, _, err),) = finish([worker], timeout=60)
        assert gap.cut.is_set() and gap.seen == 2
        assert "Traceback" not in err and "never retrieved" not in err, err[-4000:]
        assert status == 1, err[-4000:]
        last = err.strip().splitlines()[-1]
        assert last.startswith(f"tse crawl: cannot reach Redis at {gap.url}: "), last  # (how the relay cut it)
        assert last.endswith(" as this worker started: start it again to go on"), last
        assert saved_pages(pagedir) == []  # nothing fetched, nothing written
    finally:
        gap.close()
        server.stop()


def test_a_forged_worker_mark_with_a_huge_time_is_set_aside_not_a_traceback_at_the_crawls_end(site, tmp_path):  # noqa: F811
    """A ``workers`` entry whose "seen" is an integer too large for a float (JSON reads it as one) made
    every status of the crawl an OverflowError: the last worker's end a traceback, its clean-up never
    run (the crawl's keys left), ``tse status`` a traceback."""
    graph, proxy = site
    pagedir = tmp_path / "pages"
    pagedir.mkdir()
    server = RedisServer(tmp_path / "redis").start()
    client = redis.Redis(port=server.port)
    forged = b'{"seen": 1' + b"0" * 400 + b', "lease": 30}'
    try:
        worker = tse_worker(server.url, pagedir, proxy, "--name", "huge", delay=0.05)
        wait_until(lambda: client.exists("tse:huge:seeded"), 60, "the crawl was never seeded")
        client.hset("tse:huge:workers", "forged", forged)
        # And the crawl's politeness forged alike: a worker joining now read it as an OverflowError,
        # a traceback and exit 1 (it keeps its own settings now).
        client.set("tse:huge:delay", b'{"delay": 1' + b"0" * 400 + b', "max_crawl_delay": 60}')
        joining = tse_worker(server.url, pagedir, proxy, "--name", "huge", delay=0.05)
        status = run_tse("status", "--redis", server.url, "huge")
        assert status.returncode == 0 and status.stderr == b"", status.stderr.decode()[-2000:]
        assert status.stdout.decode().startswith("crawl huge: saved ")
        for code, _, err in finish([worker, joining], timeout=120):
            assert code == 0 and "Traceback" not in err, err[-4000:]
        assert set(saved_pages(pagedir)) == set(bfs_depths(graph, SEEDS, DEPTH).items())
        # Cleaned up: only the quarantine is left, holding the forged mark.
        assert client.keys("tse:huge:*") == [b"tse:huge:quarantine"]
        (record,) = client.lrange("tse:huge:quarantine", 0, -1)
        assert forged[:60] in record
    finally:
        server.stop()


def test_a_jobdir_spider_state_is_never_unpickled(tmp_path, finished_job_once):
    """Scrapy's SpiderState extension loads ``JOBDIR/spider.state`` with pickle: a JOBDIR from elsewhere
    ran what it named as the crawl resumed.  tse keeps nothing there: the extension is off."""
    server, crawled, crawled_job = finished_job_once
    out, jobdir = tmp_path / "out", tmp_path / "job"
    shutil.copytree(crawled, out)
    shutil.copytree(crawled_job, jobdir)
    last = max(int(name) for name in tree(out) if name.isdigit())
    uncommitted(jobdir, last)  # a crawl killed before its last page's commit: Scrapy starts to resume it
    (out / str(last)).unlink()
    marker = tmp_path / "ran"
    (jobdir / "spider.state").write_bytes(pickle.dumps(_Planted(marker)))
    result = jobdir_crawl(server, out, jobdir)
    assert result.returncode == 0, result.stderr.decode()
    assert not marker.exists()
    assert tree(out) == tree(crawled)
