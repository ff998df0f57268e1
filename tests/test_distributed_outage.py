"""Workers ride out a Redis that goes away: shut down cleanly, killed with
SIGKILL (append-only, everysec), or away longer than --redis-patience.  Real
workers, a real redis-server (the bundled one, AOF on) stopped and started
again by the test; each result is compared with the single-process crawl."""

import re
import time

from tests.support.net import free_port
from tests.support.redisserver import RedisServer
from tests.support.wait import wait_until
from tests.test_distributed import (  # noqa: F401 - the site fixture, and the workers' end
    check_shared_directory,
    finish,
    no_worker_outlives_its_test,
    site,
    start_worker,
    tse_worker,
)

# Longer than a lease (every lease held runs out while Redis is away: they must survive it), and
# shorter than 3.1 s, when a worker asks again (after 0.1, 0.2, 0.4, 0.8 and 1.6 s; then 3.2 s later):
# it sees Redis back then, not 6.3 s after it went (6 s and a lease of 4 s made every such test 6 s longer).
OUTAGE = 2.7
LEASE = "TSE_LEASE_SECONDS=2.5"


def saved_files(pagedir) -> int:
    return sum(1 for path in pagedir.iterdir() if path.name.isdigit())


def ride_out(tmp_path, site, stop, start=RedisServer.start, during=None):  # noqa: F811 - the fixture's value
    """Two workers crawl; Redis is stopped with *stop* for OUTAGE seconds (*during*(server) is done
    within them), started again with *start*: both workers see it go, once, and come back, once."""
    graph, proxy = site
    pagedir = tmp_path / "pages"
    pagedir.mkdir()
    server = RedisServer(tmp_path / "redis", appendonly=True).start()
    try:
        workers = [tse_worker(server.url, pagedir, proxy, "-s", LEASE, "-v") for _ in range(2)]
        wait_until(lambda: saved_files(pagedir) >= 12, 60, "the crawl never got going", 0.02)
        stop(server)
        saved_during = saved_files(pagedir)
        away = time.monotonic()
        if during is not None:
            during(server)
        time.sleep(max(0.0, OUTAGE - (time.monotonic() - away)))
        start(server)
        results = finish(workers, timeout=180)
    finally:
        server.stop()
    for status, _, err in results:
        assert status == 0, err[-4000:]
        assert err.count("is unreachable") == 1, err[-4000:]  # one warning
        assert err.count("is back after") == 1, err[-4000:]  # one line when it is back
        assert "Traceback" not in err and "Unhandled error" not in err, err[-4000:]
    assert saved_files(pagedir) > saved_during  # the crawl went on after the outage
    check_shared_directory(pagedir, graph, tmp_path, proxy)


def test_two_workers_ride_out_redis_shut_down_cleanly_and_tse_status_says_it_cannot_reach_it(site, tmp_path):  # noqa: F811
    from tests.support.inprocess import tse_here

    def status_while_away(server):
        done = tse_here("status", "--redis", server.url, "w")  # a one-line answer: in this process (cli.main)
        assert done.returncode == 1
        assert done.stderr.decode() == f"tse status: cannot reach Redis at {server.url}: connection refused\n"

    ride_out(tmp_path, site, RedisServer.stop, during=status_while_away)


def master_down(server):
    """The server becomes a replica of a master that is not there: MASTERDOWN to reads, READONLY to writes."""
    client = server.client()
    client.config_set("replica-serve-stale-data", "no")
    client.execute_command("REPLICAOF", "127.0.0.1", str(free_port()))


def master_again(server):
    server.client().execute_command("REPLICAOF", "NO", "ONE")


def test_two_workers_ride_out_masterdown_on_the_same_server(site, tmp_path):  # noqa: F811
    # Nothing is lost: the workers keep every page they hold, renew their leases, send the
    # settle that failed again, and hand nothing back.
    ride_out(tmp_path, site, master_down, master_again)


def test_two_workers_ride_out_redis_killed(site, tmp_path):  # noqa: F811
    # SIGKILL with append-only everysec: the last second of writes may be lost; the crawl repairs it.
    ride_out(tmp_path, site, RedisServer.kill)


# Shorter than the next ask after 3.1 s (3.2 s later): the workers give up then, not at 11.3 s as with 10.
PATIENCE = 3


def test_an_outage_longer_than_the_patience_stops_the_workers_and_resume_finishes(site, tmp_path):  # noqa: F811
    graph, proxy = site
    pagedir = tmp_path / "pages"
    pagedir.mkdir()
    server = RedisServer(tmp_path / "redis", appendonly=True).start()
    try:
        patience = ("--redis-patience", str(PATIENCE))
        workers = [tse_worker(server.url, pagedir, proxy, "-s", LEASE, *patience) for _ in range(2)]
        wait_until(lambda: saved_files(pagedir) >= 12, 60, "the crawl never got going", 0.02)
        server.stop()
        results = finish(workers, timeout=60)
        for status, _, err in results:
            assert status == 1, err[-3000:]
            assert "Traceback" not in err, err[-3000:]
            last = err.strip().splitlines()[-1]
            waited = re.match(rf"tse crawl: Redis at {re.escape(server.url)} unreachable for (\d+) s ", last)
            assert waited and int(waited[1]) >= PATIENCE, err[-3000:]  # not before the patience ran out
            assert f"(--redis-patience {PATIENCE})" in last and "--resume" in last
        server.start()
        resumed = tse_worker(server.url, pagedir, proxy, "-s", LEASE, "--resume")
        ((status, _, err),) = finish([resumed], timeout=180)
    finally:
        server.stop()
    assert status == 0, err[-3000:]
    check_shared_directory(pagedir, graph, tmp_path, proxy)


def test_the_status_line_says_waiting_for_redis(site, tmp_path, monkeypatch):  # noqa: F811
    import threading

    from tests import test_terminal
    from tests.conftest import BIN
    from tests.test_distributed import crawl_args

    _, proxy = site
    env = {**test_terminal.terminal_env(), "http_proxy": proxy.url}
    monkeypatch.setattr(test_terminal, "terminal_env", lambda: env)
    pagedir = tmp_path / "pages"
    pagedir.mkdir()
    server = RedisServer(tmp_path / "redis", appendonly=True).start()

    def outage():
        wait_until(lambda: saved_files(pagedir) >= 5, 60, "the crawl never got going", 0.02)
        server.stop()
        # The worker asks again 1.5 s after it saw Redis go, the line saying so meanwhile: 3 s away, so that
        # a loaded machine's slower status line still shows it (1 s once showed none in CI).
        time.sleep(3.0)
        server.start()

    away = threading.Thread(target=outage)
    away.start()
    try:
        status, written, _, _ = test_terminal.on_pty(
            [BIN / "tse", "crawl", *crawl_args(pagedir), "--redis", server.url, "-s", "DOWNLOAD_DELAY=0.1"],
            stdout=open(tmp_path / "log", "wb"),  # noqa: SIM115 - closed with the process
            timeout=120,
        )
    finally:
        away.join()
        server.stop()
    assert status == 0
    lines = re.split(r"[\r\n]", written.decode())
    assert [line for line in lines if line.startswith("waiting for Redis · saved ")], lines[-40:]
    assert [line for line in lines if line.startswith("saved ")]  # and not before, nor after
