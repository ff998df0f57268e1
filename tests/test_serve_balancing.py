"""`tse serve --workers N` shares kept-alive connections evenly among its workers, and a stopped
worker does not hold new connections back (a real server; connections counted in /proc)."""

from __future__ import annotations

import http.client
import os
import signal
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, closing

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.search_bench import connections_by_worker, process_tree
from tests.conftest import BIN, ROOT, clean_env
from tests.support.searchsite import write_search_site
from tests.support.serving import tse_serve
from tse_scrapy.search.balancing import WAIT_LIMIT, ConnectionShares, takes_connection

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the workers are forked and counted in /proc")


@pytest.mark.parametrize(
    ("held", "fewest_elsewhere", "waited", "takes"),
    [
        (0, None, 0.0, True),  # the only worker
        (5, None, 0.0, True),
        (0, 0, 0.0, True),  # as few as any other: either may take it
        (3, 3, 0.0, True),
        (1, 0, 0.0, False),  # another holds fewer: it is theirs
        (4, 1, 0.0, False),
        (4, 1, WAIT_LIMIT / 2, False),
        (4, 1, WAIT_LIMIT, True),  # left waiting long enough: the other may be busy or stopped
        (1, 0, 1.0, True),
    ],
)
def test_who_takes_a_connection(held, fewest_elsewhere, waited, takes):
    assert takes_connection(held, fewest_elsewhere, waited) is takes


@given(st.integers(0, 1000), st.none() | st.integers(0, 1000), st.floats(0, 10))
def test_the_worker_holding_fewest_always_takes_and_none_waits_past_the_limit(held, fewest, waited):
    if fewest is None or held <= fewest or waited >= WAIT_LIMIT:
        assert takes_connection(held, fewest, waited)
    # Waiting longer never turns a taken connection into a refused one.
    if takes_connection(held, fewest, waited):
        assert takes_connection(held, fewest, waited + 1.0)


def _answered(connection: http.client.HTTPConnection) -> None:
    connection.request("GET", "/api/search?q=cat")
    response = connection.getresponse()
    assert response.status == 200
    response.read()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    pages, index = write_search_site(tmp_path_factory.mktemp("balancing"))
    command = [str(BIN / "tse"), "serve", str(pages), str(index), "--workers", "2"]
    with tse_serve(command, clean_env(), ROOT) as run:
        port = int(run.base.rsplit(":", 1)[1])
        # A worker still starting takes no connections, and rightly: wait until both answer.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with ExitStack() as stack:
                for _ in range(4):
                    _answered(stack.enter_context(closing(http.client.HTTPConnection("127.0.0.1", port, timeout=10))))
                serving = [count for count in connections_by_worker(run.process.pid, port).values() if count]
            _wait_for_no_connections(run.process.pid, port)
            if len(serving) == 2:
                break
            time.sleep(0.1)
        yield run, port


def test_connections_opened_at_once_are_shared_evenly(served):
    run, port = served
    splits = []
    for count in (8, 8, 8, 16, 16):
        # Left to the kernel they were 1 and 7, 0 and 8, 2 and 14, 0 and 16.  A worker the machine does
        # not run for WAIT_LIMIT leaves a connection to the other, rightly (seen under the suite's load:
        # 3 and 5, 6 and 10): a round so split is tried again, twice at most.
        for _ in range(3):
            held = _split_of_a_burst(run, port, count)
            if held[1] - held[0] <= 2:
                break
        assert len(held) == 2 and held[1] - held[0] <= 2, held
        splits.append(held)
    assert sum(held[0] == held[1] for held in splits) >= 3, splits  # most rounds exactly even


def _split_of_a_burst(run, port: int, count: int) -> list[int]:
    """How *count* connections opened at once are held by the workers (fewest first)."""
    with ExitStack() as stack:
        connections = [
            stack.enter_context(closing(http.client.HTTPConnection("127.0.0.1", port, timeout=10)))
            for _ in range(count)
        ]
        for connection in connections:  # all connect before any asks: the burst a bench starts with
            connection.connect()
        for connection in connections:
            _answered(connection)
        held = sorted(connections_by_worker(run.process.pid, port).values())
    _wait_for_no_connections(run.process.pid, port)
    return [0] * (2 - len(held)) + held  # (a worker holding none may not be counted)


def test_short_connections_at_once_are_all_answered(served):
    """Many clients each asking once and closing: every one answered, and no connection is left
    counted (a worker not watching is woken when it may take one)."""
    run, port = served

    def ask_once(_: int) -> int:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            connection.request("GET", "/healthz", headers={"Connection": "close"})
            response = connection.getresponse()
            response.read()
            return response.status
        finally:
            connection.close()

    with ThreadPoolExecutor(16) as pool:
        statuses = list(pool.map(ask_once, range(400)))
    assert statuses == [200] * 400
    _wait_for_no_connections(run.process.pid, port)
    assert sum(connections_by_worker(run.process.pid, port).values()) == 0


def test_a_burst_of_connections_all_connect_at_once(served):
    # 1,000 connections opened as fast as a client can: the two workers take them one at a time by
    # turns, and the kernel's queue of connections not yet taken held 128; past it a connection's
    # SYN was dropped and sent again a second later (7.2 s for the 1,000, a second for some).
    run, port = served
    waits = []
    with ExitStack() as stack:
        for _ in range(1000):
            began = time.monotonic()
            stack.enter_context(closing(socket.create_connection(("127.0.0.1", port), timeout=30)))
            waits.append(time.monotonic() - began)
        with closing(http.client.HTTPConnection("127.0.0.1", port, timeout=30)) as connection:
            _answered(connection)  # (answered meanwhile)
    assert max(waits) < 0.9, sorted(waits)[-5:]  # none waited for a SYN sent again (1 s)
    _wait_for_no_connections(run.process.pid, port)


def test_a_stopped_worker_does_not_hold_new_connections_back(served):
    run, port = served
    workers = process_tree(run.process.pid)[1:]
    assert len(workers) == 2
    os.kill(workers[0], signal.SIGSTOP)
    try:
        with ExitStack() as stack:
            began = time.monotonic()
            for _ in range(6):
                connection = stack.enter_context(closing(http.client.HTTPConnection("127.0.0.1", port, timeout=10)))
                _answered(connection)
            # Each waited at most about WAIT_LIMIT for the stopped worker before the other took it.
            assert time.monotonic() - began < 5
            held = connections_by_worker(run.process.pid, port)
            assert held[workers[1]] == 6, held
    finally:
        os.kill(workers[0], signal.SIGCONT)
    # Awake again, it takes its share of new connections once it has run: it is passed over until
    # then, and on a loaded machine (the suite's other processes) the first round may come before
    # the scheduler gives it the CPU (seen once: all 8 to the other).  A few rounds, one must share.
    for _ in range(5):
        _wait_for_no_connections(run.process.pid, port)
        with ExitStack() as stack:
            for _ in range(8):
                _answered(stack.enter_context(closing(http.client.HTTPConnection("127.0.0.1", port, timeout=10))))
            held = sorted(connections_by_worker(run.process.pid, port).values())
        assert sum(held) == 8, held
        if held[1] - held[0] <= 2:
            break
    assert held[1] - held[0] <= 2, held


def test_a_stopped_worker_holding_fewer_is_passed_over(served):
    """The worker holding the fewest connections stopped (or busy with a long search): the first new
    connection waits WAIT_LIMIT for it, the next ones are taken at once by the other worker."""
    run, port = served
    # Three connections shared 1 and 2; a worker the scheduler has not run lately is passed over, as
    # the test shows, and on a loaded machine may be so at once (seen: all 3 to the other): again.
    for _ in range(5):
        stack = ExitStack()
        kept = [
            stack.enter_context(closing(http.client.HTTPConnection("127.0.0.1", port, timeout=10))) for _ in range(3)
        ]
        for connection in kept:
            _answered(connection)
        held = connections_by_worker(run.process.pid, port)
        if sorted(held.values()) == [1, 2]:
            break
        stack.close()
        _wait_for_no_connections(run.process.pid, port)
    with stack:
        assert sorted(held.values()) == [1, 2], held
        fewer = min(held, key=held.__getitem__)
        os.kill(fewer, signal.SIGSTOP)
        try:
            began = time.monotonic()
            for _ in range(100):  # one after another: each would wait WAIT_LIMIT (2 s in all) if not passed over
                with closing(http.client.HTTPConnection("127.0.0.1", port, timeout=10)) as connection:
                    connection.request("GET", "/healthz", headers={"Connection": "close"})
                    assert connection.getresponse().status == 200
            took = time.monotonic() - began
        finally:
            os.kill(fewer, signal.SIGCONT)
        assert took < 100 * WAIT_LIMIT / 2, took
    _wait_for_no_connections(run.process.pid, port)


def _wait_for_no_connections(server_pid: int, port: int) -> None:
    deadline = time.monotonic() + 10
    while sum(connections_by_worker(server_pid, port).values()) and time.monotonic() < deadline:
        time.sleep(0.02)


def test_a_worker_killed_holding_the_shares_lock_leaves_it_free():
    """A worker killed (SIGKILL) while it holds the lock of the connections' shares (in ``claim``, or
    freeing a dead worker's slot): the lock was a semaphore, held for good, and every other worker froze
    at its next look at the shares, and at its shutdown (a server Ctrl-C did not stop: seen in a test's
    leftover).  Real processes, forked as the server forks its workers."""
    shares = ConnectionShares(2)
    ready_read, ready_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker: takes the lock, says so, and is killed holding it
        try:
            shares.lock.__enter__()
            os.write(ready_write, b"x")
            os.kill(os.getpid(), signal.SIGKILL)
        finally:
            os._exit(1)
    try:
        assert os.read(ready_read, 1) == b"x"
        assert os.waitpid(pid, 0)[1] == signal.SIGKILL  # (killed while it held the lock)
    finally:
        os.close(ready_read)
        os.close(ready_write)
    claimed: list[int | None] = []
    # (A thread of its own, not waited for: with the lock held for good, claim never returned.)
    claiming = threading.Thread(target=lambda: claimed.append(shares.claim()), daemon=True)
    claiming.start()
    claiming.join(10)
    assert claimed and claimed[0] is not None, "claim waited for a lock its dead holder kept"
