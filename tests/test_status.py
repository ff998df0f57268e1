"""`tse status` when its Redis cannot be reached: on a 127.0.0.1 port nothing listens on, then (with
--every) a real redis-server started on it.  Once, it says so at once and exits 1; with --every it says
so each time and asks again until Redis answers (docs/distributed.md)."""

from __future__ import annotations

import subprocess
import time

from tests.conftest import BIN, ROOT, clean_env, popen, run_tse
from tests.support.redisserver import RedisServer


def test_once_it_says_redis_cannot_be_reached_and_exits_1_without_waiting(tmp_path):
    url = RedisServer(tmp_path / "redis").url  # not started: nothing listens on its port
    started = time.monotonic()
    done = run_tse("status", "--redis", url, "deb", timeout=60)
    assert done.returncode == 1
    assert done.stderr.decode() == f"tse status: cannot reach Redis at {url}: connection refused\n"
    assert done.stdout == b""
    assert time.monotonic() - started < 20  # a few quick retries, no wait


def test_with_every_it_asks_again_until_redis_answers(tmp_path):
    server = RedisServer(tmp_path / "redis")
    command = [str(BIN / "tse"), "status", "--redis", server.url, "deb", "--every", "0.2"]
    status = popen(command, env=clean_env(), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        said = [status.stdout.readline().decode() for _ in range(2)]
        assert (
            said == [f"crawl deb: cannot reach Redis at {server.url}: connection refused; asking again in 0.2 s\n"] * 2
        )
        assert status.poll() is None  # still asking
        server.start()
        try:
            out, err = status.communicate(timeout=60)
        finally:
            server.stop()
    finally:
        if status.poll() is None:
            status.kill()
            status.wait()
    # Redis answered: it holds no such crawl.
    assert status.returncode == 1
    assert err.decode() == f"tse status: no crawl named deb in Redis at {server.url}\n"
    assert all(line.startswith("crawl deb: cannot reach Redis at ") for line in out.decode().splitlines())
