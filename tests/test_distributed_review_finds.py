"""What a review of the distributed crawl found, each mended: real workers, a real Redis, sites
on 127.0.0.1.  Forged frontier entries (any client of the crawl's Redis may write one) are
quarantined, never fetched, never hold the crawl."""

import os
import signal
import subprocess
import time

import redis

from tests.conftest import BIN, ROOT, clean_env, popen, run_tse
from tests.support.pages import saved_pages
from tests.support.redisserver import RedisServer
from tests.support.sitegen import write_site
from tests.support.tlsredis import TlsRedisServer, require_tls_redis
from tests.support.wait import wait_until, while_running
from tse_scrapy.devtools.siteserver import Rule
from tse_scrapy.distributed.store import url_fingerprint
from tse_scrapy.rules.files.frontierentries import RequestData, encode_entry

PAGES = [f"p{i}.html" for i in range(6)]
IDLE_WORKERS = 4  # each exited 0 about one time in two: all four of them, one in 16


def start_worker(site_url, out, redis_url, name, *extra):
    command = [
        *(str(BIN / "tse"), "crawl", f"{site_url}/index.html", str(out), "1", "--no-progress"),
        *("--redis", redis_url, "--name", name, "-s", "DOWNLOAD_DELAY=0", "-s", "TSE_LEASE_SECONDS=3"),
        *extra,
    ]
    return popen(command, cwd=ROOT, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(worker, timeout):
    try:
        _, err = worker.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        worker.kill()
        _, err = worker.communicate()
        raise AssertionError(f"still running after {timeout} s; its log's end:\n{err.decode()[-3000:]}") from None
    return worker.returncode, err.decode()


def crawl_with_forged_entries(serve, redis_url, tmp_path, name, forged):
    """A crawl of a seed and six pages (slow: the forged entries come in meanwhile) under two prefixes,
    the site's and a trap's, which nothing links: *forged(site_url, trap_url)* gives the entries
    written into the frontier, first in line, once the seed is saved.  (exit status, stderr, pages
    saved, quarantine records, the trap's hits.)"""
    site = serve(write_site(tmp_path / "site", {"index.html": PAGES, **{page: [] for page in PAGES}}).root)
    for page in PAGES:
        site.rules[f"/{page}"] = Rule(delay=0.3)
    trap = serve(write_site(tmp_path / "trap", {"index.html": []}).root)
    out = tmp_path / "out"
    out.mkdir()
    worker = start_worker(site.url, out, redis_url, name, "--prefix", f"{site.url}/,{trap.url}/")
    try:
        wait_until(while_running(worker, (out / "1").exists, "saving the seed"), 60, "the seed was never saved")
        entries = {encode_entry(url_fingerprint(request.url), request): 0 for request in forged(site.url, trap.url)}
        server = redis.Redis.from_url(redis_url)
        assert server.zadd(f"tse:{name}:frontier", entries) == len(entries)
        status, err = finish(worker, 30)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    return status, err, saved_pages(out), server.lrange(f"tse:{name}:quarantine", 0, -1), trap.hits


def test_an_entry_whose_failure_no_errback_hears_is_quarantined_and_the_crawl_ends(serve, redis_url, tmp_path):
    """An entry with no errback, whose request fails (a 404, off the prefixes, the placeholder the
    spider never queues), held its page for ever: the crawl never ended."""

    def forged(site_url, trap_url):
        return [
            RequestData(f"{site_url}/missing.html", meta={"depth": 1}, callback="parse"),
            RequestData("http://127.0.0.1:9/elsewhere.html", meta={"depth": 1}, callback="parse"),
            RequestData("data:,", meta={"depth": 1}),
            RequestData(f"{site_url}/gone.html", meta={"depth": 1}),
        ]

    status, err, pages, quarantined, _ = crawl_with_forged_entries(serve, redis_url, tmp_path, "noerrback", forged)
    assert status == 0, err[-3000:]
    assert sorted(url.rsplit("/", 1)[1] for url, _ in pages) == sorted(["index.html", *PAGES])
    assert len(quarantined) == 4
    assert err.count("is no request (callback") == 4, err[-3000:]


def test_entries_tse_never_queues_are_quarantined_unsent(serve, redis_url, tmp_path):
    """Another method, credentials in headers, a body, a depth past maxDepth: a worker sent them all."""

    def forged(site_url, trap_url):
        also = {"meta": {"depth": 1}, "callback": "parse", "errback": "fetch_failed"}
        return [
            RequestData(f"{trap_url}/post", method="POST", body=b"x" * 32 * 1024, **also),
            RequestData(f"{trap_url}/delete", method="DELETE", headers=((b"Authorization", b"Bearer forged"),), **also),
            RequestData(f"{trap_url}/head", method="HEAD", **also),
            RequestData(f"{trap_url}/cookie", headers=((b"Cookie", b"session=forged"),), **also),
            RequestData(f"{trap_url}/body", body=b"forged", **also),
            RequestData(f"{trap_url}/deep", meta={"depth": 1_000_000}, callback="parse", errback="fetch_failed"),
            RequestData(f"{trap_url}/deeper", meta={"depth": 2}, callback="parse", errback="fetch_failed"),
        ]

    status, err, pages, quarantined, hits = crawl_with_forged_entries(serve, redis_url, tmp_path, "forged", forged)
    assert status == 0, err[-3000:]
    assert hits == []  # not one request reached the trap
    assert sorted(url.rsplit("/", 1)[1] for url, _ in pages) == sorted(["index.html", *PAGES])
    assert len(quarantined) == 7, err[-3000:]


def test_a_referer_tse_sends_if_asked_is_no_forged_header(serve, redis_url, tmp_path):
    """-s REFERER_ENABLED=True: Scrapy's RefererMiddleware stores a Referer in each entry tse queues."""
    site = serve(write_site(tmp_path / "site", {"index.html": PAGES, **{page: [] for page in PAGES}}).root)
    out = tmp_path / "out"
    out.mkdir()
    worker = start_worker(site.url, out, redis_url, "referer", "--prefix", f"{site.url}/", "-s", "REFERER_ENABLED=True")
    status, err = finish(worker, 30)
    assert status == 0, err[-3000:]
    assert len(saved_pages(out)) == 1 + len(PAGES)
    assert {hit.header("Referer") for hit in site.hits if hit.key.endswith("p0.html")} == {f"{site.url}/index.html"}
    assert not redis.Redis.from_url(redis_url).exists("tse:referer:quarantine")


# A worker's clean-up made slow where it hurts most: in the middle of moving a page into a docID hole,
# its docIDs changed in Redis, the page file not moved yet.
SLOW_MOVE = """
import os, time
if os.environ.get("Q_SLOW_MOVE"):
    from tse_scrapy.rules.files import pagedir
    real = pagedir.move_page
    def slow(directory, old, new):
        print("moving", old, new, flush=True)
        time.sleep(float(os.environ["Q_SLOW_MOVE"]))
        real(directory, old, new)
    pagedir.move_page = slow
"""


def site_with_holes(serve, tmp_path):
    """A seed, six pages, and three links to missing pages, which fail after the last lease: their
    docIDs stay free, holes below the last pages' (the clean-up moves pages into them)."""
    missing = [f"missing{i}.html" for i in range(3)]
    site = serve(write_site(tmp_path / "site", {"index.html": [*missing, *PAGES], **{p: [] for p in PAGES}}).root)
    for page in missing:
        site.rules[f"/{page}"] = Rule(status=404, delay=0.3)
    out = tmp_path / "out"
    out.mkdir()
    return site, out


def start_slow_clean_up(site, out, redis_url, name, tmp_path, seconds, *extra):
    """A worker that crawls *site* into *out*, running, *seconds* into moving its first page in its clean-up."""
    patch = tmp_path / "patch"
    patch.mkdir(exist_ok=True)
    (patch / "sitecustomize.py").write_text(SLOW_MOVE)
    env = clean_env(Q_SLOW_MOVE=str(seconds), PYTHONPATH=f"{patch}{os.pathsep}{ROOT}")
    command = [
        *(str(BIN / "tse"), "crawl", f"{site.url}/index.html", str(out), "1", "--prefix", f"{site.url}/"),
        *("--no-progress", "--redis", redis_url, "--name", name, "-s", "DOWNLOAD_DELAY=0"),
        *("-s", "TSE_LEASE_SECONDS=2", "-s", "CONCURRENT_REQUESTS=32", *extra),
    ]
    worker = popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = ""
    while line := worker.stdout.readline().decode():  # the progress log, then the move
        if line.startswith("moving "):
            return worker
    worker.kill()
    raise AssertionError(f"the worker moved no page:\n{worker.communicate(timeout=30)[1].decode()[-3000:]}")


def test_a_worker_killed_in_its_clean_up_leaves_it_to_the_next(serve, redis_url, tmp_path):
    """The finishing mark stayed for ever: no worker could join, the docIDs kept their holes."""
    site, out = site_with_holes(serve, tmp_path)
    first = start_slow_clean_up(site, out, redis_url, "killed", tmp_path, 60)
    try:
        first.kill()  # kill -9, in the middle of the clean-up
        first.wait()
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    server = redis.Redis.from_url(redis_url)
    wait_until(lambda: not server.exists("tse:killed:finishing"), 10, "the dead worker's finishing mark stays")
    second = popen(
        [str(BIN / "tse"), "crawl", "--redis", redis_url, "--name", "killed", "-s", "TSE_LEASE_SECONDS=2"],
        cwd=ROOT,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    status, err = finish(second, 30)
    assert status == 0, err[-3000:]
    pages = saved_pages(out)
    assert sorted(url.rsplit("/", 1)[1] for url, _ in pages) == sorted(["index.html", *PAGES])
    assert sorted(name for name in os.listdir(out) if name.isdigit()) == [str(i) for i in range(1, 8)]
    assert not server.keys("tse:killed:*")
    index = run_tse("index", out, tmp_path / "index", timeout=120)
    assert index.returncode == 0, index.stderr.decode()[-2000:]


def test_redis_gone_in_the_clean_up_is_waited_out_then_one_line(serve, tmp_path):
    """It was a 77-line traceback from a signal handler, and exit 0."""
    site, out = site_with_holes(serve, tmp_path)
    with RedisServer(tmp_path / "redis") as redis_server:
        worker = start_slow_clean_up(site, out, redis_server.url, "gone", tmp_path, 1, "--redis-patience", "1")
        try:
            redis_server.stop()
            status, err = finish(worker, 30)
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    assert status == 1, err[-3000:]
    assert "Traceback" not in err and "Unhandled error" not in err, err[-3000:]
    assert err.count("as this worker finishes the crawl: waiting for it, up to 1 s") == 1, err[-3000:]
    assert err.splitlines()[-1].startswith(f"tse crawl: cannot reach Redis at {redis_server.url}"), err[-3000:]
    assert "as this worker finished crawl gone: start a worker again to finish it" in err.splitlines()[-1]


def test_redis_back_in_the_clean_up_the_worker_finishes_the_crawl(serve, tmp_path):
    site, out = site_with_holes(serve, tmp_path)
    with RedisServer(tmp_path / "redis", appendonly=True) as redis_server:
        worker = start_slow_clean_up(site, out, redis_server.url, "back", tmp_path, 1, "--redis-patience", "30")
        try:
            redis_server.stop()
            time.sleep(2)
            redis_server.start()
            status, err = finish(worker, 60)
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
        keys = redis.Redis.from_url(redis_server.url).keys("tse:back:*")
    assert status == 0, err[-3000:]
    assert "as this worker finishes the crawl: waiting for it" in err, err[-3000:]
    assert sorted(name for name in os.listdir(out) if name.isdigit()) == [str(i) for i in range(1, 8)]
    assert sorted(url.rsplit("/", 1)[1] for url, _ in saved_pages(out)) == sorted(["index.html", *PAGES])
    assert not keys


def slow_page_leased(client) -> bool:
    return bool(client.zcard("tse:empty:leases")) and not client.zcard("tse:empty:frontier")


def test_idle_workers_whose_redis_restarts_empty_stop_with_one_line(serve, tmp_path):
    """Redis restarted empty within a moment (redis-py's retries hide the gap), between two looks of
    idle workers: each took the crawl's keys gone for a crawl over, and exited 0 without a word, when
    its first look was its scheduler's has_pending_requests (not a settle, which saw the loss)."""
    site = serve(write_site(tmp_path / "site", {"index.html": ["slow.html"], "slow.html": []}).root)
    site.rules["/slow.html"] = Rule(delay=20)
    out = tmp_path / "out"
    out.mkdir()
    with RedisServer(tmp_path / "redis") as redis_server:
        holder = start_worker(site.url, out, redis_server.url, "empty", "--prefix", f"{site.url}/")
        idle = []
        try:
            # The holder leases the slow page; the other workers, with nothing to lease, wait.
            wait_until(while_running(holder, (out / "1").exists, "saving the seed"), 60, "the seed was never saved")
            client = redis_server.client()
            wait_until(lambda: slow_page_leased(client), 30, "the slow page was never leased")
            idle = [
                start_worker(site.url, out, redis_server.url, "empty", "--prefix", f"{site.url}/")
                for _ in range(IDLE_WORKERS)
            ]
            wait_until(lambda: client.hlen("tse:empty:workers") == 1 + IDLE_WORKERS, 30, "the workers never joined")
            time.sleep(0.5)  # idle, asking
            redis_server.kill()
            redis_server.start()  # at once, empty (no persistence)
            ended = [finish(worker, 30) for worker in idle]
        finally:
            for worker in (holder, *idle):
                if worker.poll() is None:
                    worker.kill()
                    worker.wait()
    for status, err in ended:
        assert status == 1, err[-3000:]
        assert "Traceback" not in err, err[-3000:]
        assert err.splitlines()[-1].startswith(f"tse crawl: Redis at {redis_server.url} no longer holds crawl empty")


def test_a_forged_politeness_lease_is_taken_over(serve, redis_url, tmp_path):
    """A lease no worker sets (longer than the longest Crawl-delay honoured and a lease time) held the
    host for up to an hour."""
    site = serve(write_site(tmp_path / "site", {"index.html": PAGES, **{page: [] for page in PAGES}}).root)
    redis.Redis.from_url(redis_url).set(f"tse:polite:{site.url.split('//')[1]}", "forged", px=60_000)
    out = tmp_path / "out"
    out.mkdir()
    worker = start_worker(
        *(site.url, out, redis_url, "takeover", "--prefix", f"{site.url}/"),
        *("-s", "DOWNLOAD_DELAY=0.05", "-s", "TSE_MAX_CRAWL_DELAY=2"),  # (the later -s wins)
    )
    status, err = finish(worker, 30)
    assert status == 0, err[-3000:]
    assert "holds for" in err and "taken over" in err, err[-3000:]
    assert len(saved_pages(out)) == 1 + len(PAGES)


def test_a_worker_waiting_for_its_host_stops_at_one_sigterm_and_its_page_is_handed_back(serve, redis_url, tmp_path):
    """A lease a worker may hold (here, another crawl's on the same host) kept the worker waiting
    through a SIGTERM: it stopped only when the lease ran out."""
    site = serve(write_site(tmp_path / "site", {"index.html": PAGES, **{page: [] for page in PAGES}}).root)
    server = redis.Redis.from_url(redis_url)
    key = f"tse:polite:{site.url.split('//')[1]}"
    out = tmp_path / "out"
    out.mkdir()
    politeness = ("-s", "DOWNLOAD_DELAY=0.05", "-s", "TSE_MAX_CRAWL_DELAY=60")
    args = (site.url, out, redis_url, "sigterm", "--prefix", f"{site.url}/", *politeness)
    server.set(key, "another crawl's request", px=50_000)  # under 60 s and a lease time: waited for
    worker = start_worker(*args)
    try:
        wait_until(lambda: server.zcard("tse:sigterm:leases"), 30, "the seed was never leased")
        time.sleep(1)  # waiting for the host
        worker.send_signal(signal.SIGTERM)
        status, err = finish(worker, 15)
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert status != 0 and "Traceback" not in err, err[-3000:]
    assert not (out / "1").exists() and f"failed: {site.url}/index.html" not in err, err[-3000:]
    server.delete(key)
    again = start_worker(*args)
    status, err = finish(again, 30)
    assert status == 0, err[-3000:]
    assert len(saved_pages(out)) == 1 + len(PAGES)


def test_tse_status_with_rediss_to_a_plain_port_says_so_after_one_timeout(redis_url):
    """It asked four times (41 s) and gave no hint; a worker says it after one timeout (11.7 s)."""
    plain = redis_url.replace("redis://", "rediss://")
    started = time.monotonic()
    done = run_tse("status", "--redis", plain, "anything", timeout=60)
    took = time.monotonic() - started
    err = done.stderr.decode()
    assert done.returncode == 1 and len(err.splitlines()) == 1, err
    assert err.rstrip().endswith("(no TLS answer: is that port's server plain Redis, redis://?)"), err
    assert took < 25, f"{took:.1f} s"  # one timeout (10 s), not four


def test_tse_status_every_says_a_certificate_it_cannot_verify_in_one_line(tmp_path):
    """A verification error is a refusal, not an outage: --every asked again for ever."""
    require_tls_redis()
    with TlsRedisServer(tmp_path / "tls") as server:
        server.add_user("crawler", "pw", "~tse:* +@all")
        no_ca = server.url("crawler", "pw").split("?")[0] + "?ssl_cert_reqs=required"
        done = run_tse("status", "--every", "1", "--redis", no_ca, "anything", timeout=30)
    err = done.stderr.decode()
    assert done.returncode == 1 and len(err.splitlines()) == 1 and not done.stdout, err + done.stdout.decode()
    assert "its TLS certificate is not verified" in err and "ssl_ca_certs" in err and ":pw@" not in err, err
