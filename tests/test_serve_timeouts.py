"""`tse serve` closes a connection whose request's head is not whole in time (a silent connection, a
slowloris), and times nothing else: not a request being answered, nor a client taking its answer."""

from __future__ import annotations

import asyncio
import functools
import selectors
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, closing, contextmanager

import pytest
import uvicorn

from bench.search_bench import connections_by_worker
from tests.conftest import BIN, ROOT, clean_env, run_tse
from tests.support.searchsite import write_search_site
from tests.support.serving import tse_serve
from tests.support.wait import wait_until
from tse_scrapy.search.protocol import DRAIN_CHECK_SECONDS, REQUEST_HEAD_SECONDS, BoundedHttpToolsProtocol

# The bound the server under test is given (--head-timeout), short to keep the tests short; and how
# much later than it a close may be seen (the machine's 2 cores are shared).
BOUND = 2.0
MARGIN = 1.5
HEAD = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: test\r\n\r\n"
TIMED_OUT = b"Request timeout.\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """`tse serve --head-timeout BOUND` (its default workers) on a free port: its run and its port."""
    pages, index = write_search_site(tmp_path_factory.mktemp("timeouts"))
    command = [str(BIN / "tse"), "serve", str(pages), str(index), "--head-timeout", f"{BOUND:g}"]
    with tse_serve(command, clean_env(), ROOT) as run:
        yield run, int(run.base.rsplit(":", 1)[1])
    assert run.process.returncode == 0, run.stderr


def test_the_bound_said_is_the_bound():
    said = " ".join(run_tse("serve", "--help").stdout.decode().split())
    assert f"of its start or of the previous answer (default {REQUEST_HEAD_SECONDS:g};" in said


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=10)


def _until_closed(connections: list[socket.socket], since: list[float], limit: float) -> list[tuple[bytes, float]]:
    """What each connection received until the server closed it, and when: seconds after its *since*
    (inf: still open *limit* seconds from now)."""
    received = [b""] * len(connections)
    closed = [float("inf")] * len(connections)
    with selectors.DefaultSelector() as selector:
        for number, connection in enumerate(connections):
            selector.register(connection, selectors.EVENT_READ, number)
        deadline = time.monotonic() + limit
        while selector.get_map() and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=0.05):
                number = key.data
                try:
                    chunk = connections[number].recv(65536)
                except ConnectionResetError:
                    chunk = b""
                if chunk:
                    received[number] += chunk
                else:
                    closed[number] = time.monotonic() - since[number]
                    selector.unregister(connections[number])
    return list(zip(received, closed, strict=True))


def _answer(connection: socket.socket) -> bytes:
    """One answer (its head and its content-length of body) read from *connection*."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += connection.recv(65536) or pytest.fail(f"closed before an answer: {data!r}")
    head, body = data.split(b"\r\n\r\n", 1)
    length = int(next(line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:"))[15:])
    while len(body) < length:
        body += connection.recv(65536) or pytest.fail("closed within an answer")
    assert len(body) == length, "more than the answer came"
    return head + b"\r\n\r\n" + body


def _in_time(seconds: float, margin: float = MARGIN) -> bool:
    return BOUND - 0.1 <= seconds <= BOUND + margin


def test_silent_connections_are_closed_without_an_answer(server):
    _, port = server
    with ExitStack() as stack:
        # One that never asks, and one kept alive after an answer (from which its time runs).
        never, kept = (stack.enter_context(_connect(port)) for _ in range(2))
        since = [time.monotonic()]
        kept.sendall(HEAD)
        assert _answer(kept).endswith(b"\r\n\r\nok")
        since.append(time.monotonic())
        outcomes = _until_closed([never, kept], since, BOUND + MARGIN + 2)
    assert all(received == b"" and _in_time(closed) for received, closed in outcomes), outcomes


def test_half_a_head_is_answered_408_and_closed(server):
    _, port = server
    with _connect(port) as connection:
        connection.sendall(HEAD[:30])
        [(received, closed)] = _until_closed([connection], [time.monotonic()], BOUND + MARGIN + 2)
    assert received.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), received
    assert b"\r\nconnection: close\r\n" in received and received.endswith(TIMED_OUT)
    assert _in_time(closed), closed


def test_a_head_sent_slowly_but_within_the_bound_is_answered(server):
    _, port = server
    with _connect(port) as connection:
        began = time.monotonic()
        for start in range(0, len(HEAD), 6):  # about 1.4 s in 10 writes
            connection.sendall(HEAD[start : start + 6])
            time.sleep(0.14)
        assert time.monotonic() - began < BOUND - 0.3
        assert _answer(connection).endswith(b"\r\n\r\nok")


def test_a_kept_alive_connection_is_timed_from_each_answer(server):
    _, port = server
    with _connect(port) as connection:
        began = time.monotonic()
        for _ in range(3):
            connection.sendall(HEAD)
            assert _answer(connection).startswith(b"HTTP/1.1 200 ")
            time.sleep(BOUND * 0.6)  # asking again well within the bound, past it since the first
        connection.sendall(HEAD)
        assert _answer(connection).startswith(b"HTTP/1.1 200 ")
        assert time.monotonic() - began > 1.5 * BOUND
        # A byte cancels uvicorn's keep-alive close: the head's time, counted from the answer, holds.
        answered = time.monotonic()
        connection.sendall(b"G")
        [(received, closed)] = _until_closed([connection], [answered], BOUND + MARGIN + 2)
    assert received.startswith(b"HTTP/1.1 408 ") and received.endswith(TIMED_OUT), received
    assert _in_time(closed), closed


def test_many_silent_connections_are_all_closed_while_searches_are_answered(server):
    run, port = server
    with ExitStack() as stack:
        connections, since = [], []
        for _ in range(200):
            connections.append(stack.enter_context(_connect(port)))
            since.append(time.monotonic())
        for _ in range(3):
            with urllib.request.urlopen(f"{run.base}/search?q=emu", timeout=10) as response:
                assert response.status == 200 and b"documents match" in response.read()
        outcomes = _until_closed(connections, since, BOUND + 2 * MARGIN + 2)
    late = [outcome for outcome in outcomes if outcome[0] or not _in_time(outcome[1], 2 * MARGIN)]
    assert not late, f"{len(late)} of 200 not closed in time: {late[:5]}"
    wait_until(lambda: sum(connections_by_worker(run.process.pid, port).values()) == 0, 5, "connections held")


# A server in this process, serving an app whose answers are slow or big: the head's time runs neither
# while a request is answered nor while the client takes its answer.
SHORT = 0.5
SLOW = 3 * SHORT
BIG = 2_000_000


async def _app(scope, receive, send) -> None:
    if scope["path"] == "/slow":
        await asyncio.sleep(SLOW)
    body = b"b" * BIG if scope["path"] == "/big" else b"ok"
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"%d" % len(body))]})
    await send({"type": "http.response.body", "body": body})


@contextmanager
def _in_process_server() -> Iterator[int]:
    """uvicorn with the bounded protocol (head_seconds SHORT) on a free port, in a thread; a small
    send buffer, so that a big answer a client takes slowly waits in the server's buffer."""
    listening = socket.socket()
    listening.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 16384)  # the connections accepted inherit it
    listening.bind(("127.0.0.1", 0))
    listening.listen()
    protocol = functools.partial(BoundedHttpToolsProtocol, head_seconds=SHORT)
    config = uvicorn.Config(_app, http=protocol, lifespan="off", log_level="warning", access_log=False)  # type: ignore[arg-type]
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True)
    thread.start()
    try:
        wait_until(lambda: server.started, 10, "the server never started")
        yield listening.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)
        listening.close()


def test_no_time_runs_while_a_request_is_answered():
    with _in_process_server() as port, _connect(port) as connection:
        connection.sendall(b"GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
        began = time.monotonic()
        assert _answer(connection).endswith(b"\r\n\r\nok")
        assert time.monotonic() - began >= SLOW - 0.05
        connection.sendall(b"GET / HTTP/1.1\r\nHost: a\r\n\r\n")  # still open
        assert _answer(connection).endswith(b"\r\n\r\nok")


def test_no_time_runs_while_the_client_takes_a_big_answer_slowly():
    with _in_process_server() as port, closing(socket.socket()) as connection:
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        connection.connect(("127.0.0.1", port))
        # The next request's head begun (a byte: uvicorn's keep-alive close no longer applies), then
        # the big answer taken 16 KB at a time, in 3 times the bound.
        connection.sendall(b"GET /big HTTP/1.1\r\nHost: a\r\n\r\nG")
        began = time.monotonic()
        data = b""
        while len(data) < BIG:
            data += connection.recv(16384) or pytest.fail(f"closed after {len(data)} bytes")
            time.sleep(3 * SHORT * 16384 / BIG)
        assert time.monotonic() - began > 2 * SHORT
        connection.sendall(b"ET / HTTP/1.1\r\nHost: a\r\n\r\n")
        connection.settimeout(10)
        data += connection.recv(65536)
        while data.count(b"HTTP/1.1 ") < 2 or not data.endswith(b"ok"):
            data += connection.recv(65536) or pytest.fail(f"closed: {data[-300:]!r}")
    first, second = data.split(b"HTTP/1.1 ")[1:]
    assert first.startswith(b"200 ") and first.endswith(b"b" * 1000) and second.startswith(b"200 "), data[-300:]


def test_a_client_taking_nothing_of_its_answer_is_cut_off():
    # It asks for a big answer and takes none of it: the answer waited in the server's full buffer,
    # holding the connection for good.  Taken slowly, it is not cut (the test above).
    with _in_process_server() as port, closing(socket.socket()) as connection:
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
        connection.connect(("127.0.0.1", port))
        connection.sendall(b"GET /big HTTP/1.1\r\nHost: a\r\n\r\n")
        time.sleep(SHORT + 2 * DRAIN_CHECK_SECONDS + MARGIN)
        connection.settimeout(10)
        received, closed = 0, False
        try:
            while chunk := connection.recv(65536):
                received += len(chunk)
            closed = True
        except ConnectionResetError:
            closed = True
        except TimeoutError:  # the whole answer taken, and the connection kept: not cut
            pass
    assert closed and received < BIG, received
