"""A distributed worker when Redis goes away or holds a crawl it cannot read:
one line, a non-zero exit, no traceback (real worker, real Redis)."""

import json
import subprocess

import redis

from tests.conftest import BIN, ROOT, clean_env, popen, run_tse
from tests.support.redisserver import RedisServer
from tests.support.sitegen import write_site
from tests.support.wait import wait_until, while_running
from tse_scrapy.devtools.siteserver import Rule


def test_a_worker_that_loses_redis_for_longer_than_its_patience_stops_with_one_error(serve, tmp_path):
    slow = {f"s{i}.html": [] for i in range(6)}
    server = serve(write_site(tmp_path / "site", {"index.html": list(slow), **slow}).root)
    for name in slow:
        server.rules[f"/{name}"] = Rule(delay=1.0)
    out = tmp_path / "out"
    out.mkdir()
    with RedisServer(tmp_path / "redis") as redis_server:
        worker = popen(
            [
                *(str(BIN / "tse"), "crawl", f"{server.url}/index.html", str(out), "2"),
                # 1.5 s: given up at the ask 1.5 s after the outage began (0.1, 0.3, 0.7, 1.5), not at 3.1 s.
                *("--prefix", f"{server.url}/", "--redis", redis_server.url, "--redis-patience", "1.5"),
                *("-s", "DOWNLOAD_DELAY=0", "-s", "CONCURRENT_REQUESTS=4", "-s", "TSE_LEASE_SECONDS=3"),
            ],
            cwd=ROOT,
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            # The seed is saved, the slow pages are being fetched: Redis goes.
            wait_until(
                while_running(worker, (out / "1").exists, "saving the seed"), 60, "the seed was never saved", 0.02
            )
            redis_server.stop()
            _, err = worker.communicate(timeout=60)
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    err = err.decode()
    assert worker.returncode == 1
    assert err.count("is unreachable") == 1, err[-3000:]  # one warning, then one error line
    assert err.count(f"ERROR: Redis at {redis_server.url} unreachable for ") == 1, err[-3000:]
    assert "Traceback" not in err and "Unhandled error" not in err, err[-3000:]
    assert err.splitlines()[-1].startswith(f"tse crawl: Redis at {redis_server.url} unreachable for ")


def test_a_crawl_begun_by_another_version_is_refused_in_one_line(redis_url, tmp_path):
    # What the version before the crawl format was stored left in Redis.
    params = dict(seed="http://a.test/index.html", depth=2, order="bfs", links="html", prefix="http://a.test/")
    params.update(allow="", deny="", deny_ext=None, pagedir=str(tmp_path))
    redis.Redis.from_url(redis_url).set("tse:older:params", json.dumps(params))
    done = run_tse("crawl", "--redis", redis_url, "--name", "older", timeout=60)
    err = done.stderr.decode()
    assert done.returncode == 2
    assert len(err.splitlines()) == 1, err
    assert "crawl older in Redis at" in err and "begun by another version of tse-scrapy (crawl format 1" in err


def test_a_distributed_crawl_into_a_finished_crawl_of_its_seed_names_it(redis_url, tmp_path):
    """The first worker says what the directory holds, as tse crawl does in one process (it said
    "another crawl" of a crawl of the very seed), and sends to an update in one process."""
    seed = "http://a.test/index.html"
    (tmp_path / "1").write_bytes(f"{seed}\n0\n<html></html>\n".encode())
    (tmp_path / ".crawler").touch()
    prefix = ("--prefix", "http://a.test/")
    done = run_tse("crawl", seed, tmp_path, "1", *prefix, "--redis", redis_url, "--name", "finished", timeout=60)
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        f"tse crawl: {tmp_path} holds a finished crawl of {seed}: crawl it again with --update (-a update=yes) in"
        " one process (an update is not distributed), or crawl into an empty directory"
    ]
    one_process = run_tse("crawl", seed, tmp_path, "1", *prefix, "--update", "--redis", redis_url, timeout=60)
    assert one_process.returncode == 2 and "drop --redis" in one_process.stderr.decode()  # as it says
    # The same pages with a crawl state beside them: a crawl in one process, interrupted or running, was
    # said to be a finished one to update (a review's find).
    (tmp_path / ".tse-state.sqlite").touch()
    done = run_tse("crawl", seed, tmp_path, "1", *prefix, "--redis", redis_url, "--name", "interrupted", timeout=60)
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        f"tse crawl: {tmp_path} holds a crawl in one process, interrupted or still running: continue it with"
        " --resume (in one process), or crawl into an empty directory"
    ]
