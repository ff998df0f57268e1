"""How ``tse status`` words a Redis it cannot reach (``store.outage_line``): from the type of redis-py's
error and the OS error under it, not by parsing redis-py's message.  Real failures of a real client:
a port nothing listens on, a Unix socket that is not there, a server that hangs up at once."""

from __future__ import annotations

import socket
import threading
from urllib.parse import quote

import pytest
import redis

from tests.support.redisserver import RedisServer
from tse_scrapy.distributed.store import RedisCrawl, connect, outage_line


def _failure(url: str) -> redis.RedisError:
    """The error ``tse status`` gets asking Redis at *url* for a crawl's status."""
    with pytest.raises(redis.RedisError) as raised:
        RedisCrawl(connect(url, check=False), "deb").status()
    return raised.value


def test_a_port_nothing_listens_on_is_connection_refused(tmp_path):
    url = RedisServer(tmp_path / "redis").url  # not started
    assert outage_line(_failure(url), url) == f"cannot reach Redis at {url}: connection refused"


def test_a_unix_socket_that_is_not_there_says_so_whatever_its_path(tmp_path):
    # The message was parsed: a path with a space ("Error 2 connecting to /x/a b.c/redis.sock. No such
    # file or directory.") gave "error 2 connecting to /x/a b.c/redis.sock. No such file or directory".
    folder = tmp_path / "a b.c"
    folder.mkdir()
    url = "unix://" + quote(str(folder / "redis.sock"))
    assert outage_line(_failure(url), url) == f"cannot reach Redis at {url}: no such file or directory"


def test_a_server_that_hangs_up_says_what_redis_py_says(tmp_path):
    # No OS error under it: redis-py's own reason, as a reason.
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def hang_up():
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            connection.recv(1024)
            connection.close()

    thread = threading.Thread(target=hang_up, daemon=True)
    thread.start()
    try:
        url = f"redis://127.0.0.1:{listener.getsockname()[1]}/0"
        line = outage_line(_failure(url), url)
    finally:
        stop.set()
        thread.join()
        listener.close()
    assert line == f"cannot reach Redis at {url}: connection closed by server"


def test_a_server_loading_its_data_is_not_serving():
    # LOADING is redis-py's BusyLoadingError, a ConnectionError: it was worded "cannot reach Redis".
    url = "redis://127.0.0.1:6379/0"
    error = redis.exceptions.BusyLoadingError("Redis is loading the dataset in memory")
    assert outage_line(error, url) == f"Redis at {url} is not serving: Redis is loading the dataset in memory"
    error = redis.exceptions.MasterDownError("MASTERDOWN Link with MASTER is down")
    assert outage_line(error, url) == f"Redis at {url} is not serving: MASTERDOWN Link with MASTER is down"
