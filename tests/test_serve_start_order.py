"""`tse serve`'s start: its workers opening the index one after the other (the first alone), and what
an API answer does not need left unimported.  Real processes, forked as the server forks its workers."""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import time

import pytest

from tests.conftest import BIN, ROOT, clean_env
from tse_scrapy.search.balancing import START_ALONE_SECONDS, ConnectionShares

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the workers are forked")

_TIME = struct.Struct("!d")


def _worker(shares: ConnectionShares, said: int, listens_after: float | None) -> int:
    """A process as a server's worker starts: its turn waited for, the moment it went written to *said*,
    then (*listens_after* seconds later) its listening said; it ends at once when *listens_after* is None."""
    pid = os.fork()
    if pid == 0:
        try:
            shares.wait_turn()
            os.write(said, _TIME.pack(time.monotonic()))
            if listens_after is not None:
                time.sleep(listens_after)  # (its index opened, say)
                shares.said_listening()
                time.sleep(2)
        finally:
            os._exit(0)
    return pid


def _went(read: int) -> float:
    return _TIME.unpack(os.read(read, _TIME.size))[0]


def test_a_worker_starts_once_the_first_listens_and_a_worker_started_later_at_once():
    shares = ConnectionShares(2)
    read, write = os.pipe()
    pids = []
    try:
        pids.append(_worker(shares, write, listens_after=0.3))
        first_went = _went(read)
        pids.append(_worker(shares, write, listens_after=None))
        second_went = _went(read)
        # (Started together, each took half the cores: the first answer waited for the first of them.)
        assert second_went - first_went >= 0.3, "the second worker started before the first listened"
        assert second_went - first_went < START_ALONE_SECONDS
        pids.append(_worker(shares, write, listens_after=None))  # (a worker uvicorn starts again, later)
        began = time.monotonic()
        assert _went(read) - began < 0.2
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(read)
        os.close(write)


def test_the_other_workers_start_when_the_first_ends_before_it_listens():
    shares = ConnectionShares(2)
    read, write = os.pipe()
    first = _worker(shares, write, listens_after=None)  # (ends without listening: its start failed)
    try:
        _went(read)
        began = time.monotonic()
        second = _worker(shares, write, listens_after=None)
        assert _went(read) - began < START_ALONE_SECONDS / 2
        os.waitpid(second, 0)
    finally:
        os.waitpid(first, 0)
        os.close(read)
        os.close(write)


def test_the_server_imports_no_templates_before_a_page_asks_for_them():
    # jinja2 (10 ms of each start) is the HTML pages' only: the server's first API answer needs none.
    code = "import sys, tse_scrapy.cli, tse_scrapy.search.server; print('jinja2' in sys.modules)"
    found = subprocess.run([str(BIN / "python"), "-c", code], env=clean_env(), cwd=ROOT, capture_output=True)
    assert found.stdout == b"False\n", found.stderr
