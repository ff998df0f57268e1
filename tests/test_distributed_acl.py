"""Least privilege and secrets: two workers crawl over TLS, with certificate
verification, as a Redis ACL user allowed exactly the commands
docs/distributed.md lists (``keys.worker_acl``), on ``tse:*`` keys only; the
password appears in no message, log, record or status line, and the URL may
come from the environment.  Debian's redis-server (built with TLS)."""

import subprocess

import pytest

from tests.conftest import ROOT, clean_env, popen
from tests.support.inprocess import tse_here
from tests.support.tlsredis import TlsRedisServer, require_tls_redis
from tests.support.wait import wait_until
from tests.test_distributed import (  # noqa: F401 - the site fixture and the workers' helpers
    check_shared_directory,
    crawl_args,
    finish,
    no_worker_outlives_its_test,
    site,
    start_worker,
)
from tse_scrapy.distributed.keys import WORKER_COMMANDS, worker_acl
from tse_scrapy.distributed.store import RedisCrawl, connect

PASSWORD = "Pw-7f3a9c1e-secret"


@pytest.fixture
def tls_redis(tmp_path):
    require_tls_redis()
    with TlsRedisServer(tmp_path / "tls") as server:
        server.add_user("crawler", PASSWORD, worker_acl())
        yield server


def test_the_docs_give_exactly_the_acl_a_worker_needs():
    docs = (ROOT / "docs" / "distributed.md").read_text()
    assert worker_acl() in docs
    assert len(set(WORKER_COMMANDS)) == len(WORKER_COMMANDS)


def test_two_workers_crawl_over_tls_as_the_least_privileged_user(tls_redis, site, tmp_path):  # noqa: F811
    graph, proxy = site
    pagedir = tmp_path / "pages"
    pagedir.mkdir()
    url = tls_redis.url("crawler", PASSWORD)
    record = tmp_path / "record.jsonl"
    log = tmp_path / "worker.log"
    env = clean_env(http_proxy=proxy.url, TSE_REDIS_URL=url)
    commands = [
        # tse crawl --redis (no URL), and scrapy crawl -s TSE_REDIS_URL=env: the URL from the environment
        [
            *(str(ROOT / ".venv/bin/tse"), "crawl", *crawl_args(pagedir), "--redis", "--name", "acl"),
            *("-s", "DOWNLOAD_DELAY=0.2", "--record", str(record), "--log-file", str(log), "-v"),
        ],
        [
            *(str(ROOT / ".venv/bin/scrapy"), "crawl", "tse", "-a", f"pagedir={pagedir}"),
            *("-s", "TSE_REDIS_URL=env", "-s", "TSE_CRAWL_NAME=acl", "-s", "DOWNLOAD_DELAY=0.2"),
        ],
    ]
    workers = [popen(commands[0], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)]
    wait_until(lambda: (pagedir / "1").exists(), 60, "the first worker never created the crawl", 0.02)
    workers.append(popen(commands[1], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
    for worker in workers:
        assert PASSWORD not in " ".join(worker.args)  # the URL came from the environment
    results = finish(workers, timeout=180)
    for status, out, err in results:
        assert status == 0, err[-3000:]
        assert PASSWORD not in out + err
    # A command the ACL denies, in either worker's log (scrapy crawl exits 0 when a callback raised),
    # checked before the pages it would have left wrong.
    for text in (log.read_text(), *(err for _, _, err in results)):
        assert "NOPERM" not in text and "no permissions" not in text, text[-3000:]
    denied = tls_redis.admin_client().acl_log()
    assert not [entry for entry in denied if entry.get("username") == "crawler"], denied
    assert "Overridden settings" in log.read_text()  # Scrapy logs the settings given: masked
    for path in (log, record):
        assert PASSWORD not in path.read_text(), path
    # (On a failure here, what each worker logged at its end says whether and how it cleaned up.)
    ends = [line for text in (log.read_text(), results[1][2]) for line in text.splitlines()[-40:]]
    try:
        check_shared_directory(pagedir, graph, tmp_path, proxy)
    except AssertionError as failure:
        raise AssertionError(f"{failure}\nthe workers' last log lines:\n" + "\n".join(ends)) from None


def test_a_refused_password_or_a_plain_url_to_tls_is_one_line_with_the_password_masked(tls_redis, tmp_path):
    pagedir = tmp_path / "pages"
    pagedir.mkdir()
    wrong = tls_redis.url("crawler", "not-" + PASSWORD)
    plain = wrong.replace("rediss://", "redis://")
    for url in (wrong, plain):
        # Refusals, their messages what is checked: in this process (cli.main).
        done = tse_here("crawl", "http://a.test/", str(pagedir), "1", "--redis", url)
        err = done.stderr.decode()
        assert done.returncode == 2 and len(err.splitlines()) == 1, err
        assert PASSWORD not in err and "crawler:***@127.0.0.1" in err, err
    status = tse_here("status", "--redis", wrong, "c")
    assert status.returncode == 1 and PASSWORD not in status.stderr.decode() + status.stdout.decode()
    unset = tse_here("status", "c", env=clean_env())
    assert unset.returncode == 2  # (a bad argument, as tse crawl's)
    assert unset.stderr.decode() == (
        "tse status: the Redis URL is to come from the environment, but TSE_REDIS_URL is not set\n"
    )


def test_tse_status_reads_the_url_from_the_environment(tls_redis, tmp_path):
    url = tls_redis.url("crawler", PASSWORD)
    done = tse_here("status", "nothing", env=clean_env(TSE_REDIS_URL=url))  # in this process, in that environment
    assert done.returncode == 1
    assert done.stderr.decode() == "tse status: no crawl named nothing in Redis at " + (
        url.replace(PASSWORD, "***") + "\n"
    )


def test_the_messages_of_an_outage_mask_the_password(tls_redis, site, tmp_path):  # noqa: F811
    _, proxy = site
    pagedir = tmp_path / "pages"
    pagedir.mkdir()
    url = tls_redis.url("crawler", PASSWORD)
    worker = start_worker(
        [
            *(str(ROOT / ".venv/bin/tse"), "crawl", *crawl_args(pagedir), "--redis", url),
            *("--redis-patience", "1", "-s", "DOWNLOAD_DELAY=0.5", "-v"),
        ],
        proxy,
    )
    wait_until(lambda: (pagedir / "2").exists(), 60, "the crawl never got going", 0.02)
    tls_redis.stop()
    ((status, out, err),) = finish([worker], timeout=60)
    assert status == 1, err[-3000:]
    assert PASSWORD not in out + err
    masked = url.replace(PASSWORD, "***")
    assert f"Redis at {masked} is unreachable" in err
    assert err.strip().splitlines()[-1].startswith(f"tse crawl: Redis at {masked} unreachable for ")


def test_the_last_page_is_moved_to_a_free_docid_as_the_least_privileged_user(tls_redis):
    # redis-py's decr() sends DECRBY, which the ACL does not grant: a two-worker crawl that freed a docID
    # failed at its end (seen once in CI, where the crawl happened to free one).
    crawl = RedisCrawl(connect(tls_redis.url("crawler", PASSWORD)), "moved")
    crawl.server.set(crawl.keys.doc_id, 5)
    crawl.server.zadd(crawl.keys.free_ids, {"3": 3})
    crawl.server.hset(crawl.keys.pages, "fingerprint-of-5", 5)
    assert crawl.move_last_doc(3) == 5
    assert crawl.last_doc_id() == 4 and crawl.server.zcard(crawl.keys.free_ids) == 0
    assert crawl.server.hget(crawl.keys.pages, "fingerprint-of-5") == b"3"
