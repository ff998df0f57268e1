"""What a review of the distributed crawl found, each mended: real workers, a real Redis, sites
on 127.0.0.1.  Forged frontier entries (any client of the crawl's Redis may write one) are
quarantined, never fetched, never hold the crawl."""

import subprocess

import redis

from tests.conftest import BIN, ROOT, clean_env
from tests.support.pages import saved_pages
from tests.support.sitegen import write_site
from tests.support.wait import wait_until, while_running
from tse_scrapy.devtools.siteserver import Rule
from tse_scrapy.distributed.store import url_fingerprint
from tse_scrapy.rules.files.frontierentries import RequestData, encode_entry

PAGES = [f"p{i}.html" for i in range(6)]


def start_worker(site_url, out, redis_url, name, *extra):
    command = [
        *(str(BIN / "tse"), "crawl", f"{site_url}/index.html", str(out), "1", "--no-progress"),
        *("--redis", redis_url, "--name", name, "-s", "DOWNLOAD_DELAY=0", "-s", "TSE_LEASE_SECONDS=3"),
        *extra,
    ]
    return subprocess.Popen(command, cwd=ROOT, env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)


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
