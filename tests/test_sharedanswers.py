"""The processes of one `tse serve` share the answers they made (search/sharedanswers.py): an answer one
process made is sent by another as it was, never one of another index, the store stays within its bound,
and nothing of it outlives the server."""

from __future__ import annotations

import http.client
import logging
import multiprocessing
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

import psutil
import pytest
from starlette.testclient import TestClient

from tests.conftest import BIN, ROOT, clean_env, run_tse
from tests.support.multilingual import indexed_fixture_directory
from tests.support.serving import every_worker_opened, tse_serve
from tests.support.wait import wait_until
from tse_scrapy.index.engine import QueryEngine
from tse_scrapy.index.storage import IndexReader
from tse_scrapy.search import sharedanswers
from tse_scrapy.search.app import create_app
from tse_scrapy.search.sharedanswers import NAME, PREFIX, ROOM, WAL_BYTES, SharedAnswers

# Real searches of the committed multilingual pages: the page and the API, in several scripts.
PATHS = [
    "/api/search?q=debian",
    "/api/search?q=debian&page=2&per_page=3",
    "/api/search?q=%E3%83%91%E3%83%83%E3%82%B1%E3%83%BC%E3%82%B8",  # パッケージ
    "/api/search?q=%D8%AF%D8%A8%DB%8C%D8%A7%D9%86",  # دبیان
    "/search?q=%D0%BF%D0%B0%D0%BA%D0%B5%D1%82",  # пакет
]
HEADERS = [(b"content-type", b"application/json"), (b"content-length", b"2")]


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    return indexed_fixture_directory(tmp_path_factory.mktemp("sharedanswers"))


def _get(connection: http.client.HTTPConnection, path: str) -> tuple[int, bytes]:
    connection.request("GET", path)
    response = connection.getresponse()
    return response.status, response.read()


def test_the_processes_of_a_server_send_the_answers_one_of_them_made(indexed):
    pages, index = indexed
    command = [str(BIN / "tse"), "serve", str(pages), str(index)]
    with tse_serve([*command, "--workers", "1", "--answer-cache", "0"], clean_env(), ROOT) as keeping_none:
        connection = http.client.HTTPConnection(keeping_none.base.removeprefix("http://"), timeout=30)
        expected = {path: _get(connection, path) for path in PATHS}
        connection.close()
    with tse_serve([*command, "--workers", "2"], clean_env(), ROOT) as run:
        # (Both serving: /healthz answers once one does, and a worker still starting takes no connection.)
        wait_until(lambda: every_worker_opened(run.process.pid, index), 30, "a worker never opened the index")
        workers = psutil.Process(run.process.pid).children()
        (store,) = [found for root in _roots() for found in root.glob(f"{PREFIX}{run.process.pid}-*")]
        first, second, opened = _one_with_each(run, workers)
        made = {path: _get(first, path) for path in PATHS}
        sent_again = {path: _get(second, path) for path in PATHS}
        for connection in opened:
            connection.close()
        with sqlite3.connect(f"file:{store / NAME}?mode=ro", uri=True) as db:
            (rows,) = db.execute("SELECT count(*) FROM answers").fetchone()
    assert {status for status, _ in expected.values()} == {200}
    assert made == expected and sent_again == expected
    assert rows == len(PATHS)  # each made once, by the first process, and kept
    assert run.process.returncode == 0, run.stderr
    assert not store.exists()  # removed with the server


def _roots() -> list[Path]:
    """Where a server makes its store: shared memory, else the temporary directory."""
    return [Path("/dev/shm"), Path(tempfile.gettempdir())]


def _one_with_each(run, workers: list[psutil.Process]):
    """Two kept-alive connections to the server, one held by each of its two processes, and every
    connection opened to find them (the processes share connections evenly, but a loaded machine may
    give a busy one's to the other)."""
    host = run.base.removeprefix("http://")
    port = int(host.rpartition(":")[2])
    opened: list[http.client.HTTPConnection] = []
    for _ in range(12):
        connection = http.client.HTTPConnection(host, timeout=30)
        connection.connect()
        opened.append(connection)
        assert _get(connection, "/healthz")[0] == 200  # (taken by a process, which answered)
        holders = {}
        for worker in workers:
            for held in worker.net_connections("tcp"):
                if held.laddr.port == port and held.raddr:
                    holders[held.raddr.port] = worker.pid
        by_worker = {holders.get(connection.sock.getsockname()[1]): connection for connection in opened}
        if len(by_worker.keys() - {None}) == 2:
            first, second = (by_worker[worker.pid] for worker in workers)
            return first, second, opened
    raise AssertionError("twelve connections, all held by one process")


def test_an_answer_another_process_made_is_sent_without_searching_again(indexed, tmp_path):
    pages, index = indexed
    shared = SharedAnswers.create(16 * 1024 * 1024, str(tmp_path))
    try:
        making = TestClient(create_app(QueryEngine(pages, IndexReader(index)), shared=shared))
        made = making.get("/api/search", params={"q": "debian"})
        assert made.status_code == 200 and made.json()["total"] > 0
        # Another process over the same files (as a forked worker opens them), which cannot search: it
        # sends what the first made.
        engine = QueryEngine(pages, IndexReader(index))

        def no_search(*_args, **_kwargs):
            raise AssertionError("searched again")

        engine.answer = no_search
        other = TestClient(create_app(engine, shared=SharedAnswers(shared.directory, shared.limit_bytes)))
        again = other.get("/api/search", params={"q": "debian"})
        assert again.status_code == 200 and again.content == made.content
        assert again.headers["content-type"] == made.headers["content-type"]
        with pytest.raises(AssertionError, match="searched again"):  # (a search not made before: it would)
            other.get("/api/search", params={"q": "paquet"})
    finally:
        shared.remove()


def test_an_answer_of_another_index_is_never_sent(indexed, tmp_path):
    pages, index = tmp_path / "pages", tmp_path / "pages.index"
    shutil.copytree(indexed[0], pages)
    assert run_tse("index", pages, index).returncode == 0
    shared = SharedAnswers.create(16 * 1024 * 1024, str(tmp_path))
    try:
        before = TestClient(create_app(QueryEngine(pages, IndexReader(index)), shared=shared))
        assert before.get("/api/search", params={"q": "zyxwvutsrq"}).json()["total"] == 0
        first = pages / "1"
        first.write_bytes(first.read_bytes() + b"\n<p>zyxwvutsrq</p>\n")
        assert run_tse("index", pages, index).returncode == 0  # written anew: other files
        after = TestClient(create_app(QueryEngine(pages, IndexReader(index)), shared=shared))
        assert after.get("/api/search", params={"q": "zyxwvutsrq"}).json()["total"] == 1
        # Nor of other gone pages: the same index, the page listed gone.
        (pages / ".tse-gone").write_text("1\n")
        gone = TestClient(create_app(QueryEngine(pages, IndexReader(index)), shared=shared))
        assert gone.get("/api/search", params={"q": "zyxwvutsrq"}).json()["total"] == 0
    finally:
        shared.remove()


def test_an_answer_kept_in_one_process_is_found_in_another(tmp_path):
    shared = SharedAnswers.create(1024 * 1024, str(tmp_path))
    key = ("/api/search", "q=日本".encode(), "ja")
    shared.answer(key, "v1")  # (a connection open before the fork: the child opens its own)
    child = multiprocessing.get_context("fork").Process(target=shared.keep, args=(key, "v1", b"{}", HEADERS))
    child.start()
    child.join(30)
    assert child.exitcode == 0
    assert shared.answer(key, "v1") == (b"{}", HEADERS)
    assert shared.answer(key, "v2") is None  # made from other files
    assert shared.answer(("/api/search", "q=日本".encode(), ""), "v1") is None  # for another reader's language
    assert shared.answer(("/search", "q=日本".encode(), "ja"), "v1") is None
    shared.remove()
    assert not shared.directory.exists()


def test_the_store_stays_within_its_bound_the_oldest_answers_going_first(tmp_path):
    limit = 256 * 1024
    shared = SharedAnswers.create(limit, str(tmp_path))
    body = os.urandom(3000)  # (not compressible: SQLite stores it as it is)
    keys = [("/api/search", f"q=word{number}".encode(), "") for number in range(2000)]
    for key in keys:
        shared.keep(key, "v", body, HEADERS)
    found = [shared.answer(key, "v") is not None for key in keys]
    # The last ones kept, the first ones gone, and no hole between (the oldest go first).
    assert found[-1] and not found[0]
    assert found == sorted(found)
    assert 40 < sum(found) <= limit // len(body)
    sizes = sum(path.stat().st_size for path in shared.directory.iterdir())
    assert sizes <= limit * ROOM + WAL_BYTES + 64 * 1024
    # An answer larger than a sixteenth of the bound is not kept (a few would push out all the others).
    shared.keep(("/api/search", b"q=large", ""), "v", os.urandom(limit // 16), HEADERS)
    assert shared.answer(("/api/search", b"q=large", ""), "v") is None
    shared.remove()


def test_a_store_that_goes_away_is_said_once_and_answers_are_still_made(tmp_path, caplog):
    shared = SharedAnswers.create(1024 * 1024, str(tmp_path))
    key = ("/api/search", b"q=a", "")
    shared.keep(key, "v", b"{}", HEADERS)
    shutil.rmtree(shared.directory)  # a cleaner of temporary files, say
    other = SharedAnswers(shared.directory, shared.limit_bytes)  # a process opening it afterwards
    with caplog.at_level(logging.WARNING, logger=sharedanswers.__name__):
        for _ in range(3):
            assert other.answer(key, "v") is None
            other.keep(key, "v", b"{}", HEADERS)
    said = [record.getMessage() for record in caplog.records]
    assert len(said) == 1 and "cannot be used" in said[0], said


def test_a_store_that_cannot_be_made_is_one_line_and_none(tmp_path, caplog):
    (tmp_path / "file").write_text("")
    with caplog.at_level(logging.WARNING, logger=sharedanswers.__name__):
        assert SharedAnswers.create(1024 * 1024, str(tmp_path / "file")) is None
    said = [record.getMessage() for record in caplog.records]
    assert len(said) == 1 and "each keeps its own" in said[0], said


def test_the_stores_of_servers_that_are_gone_are_removed(tmp_path):
    gone = multiprocessing.get_context("fork").Process(target=int)
    gone.start()
    gone.join()
    stale = tmp_path / f"{PREFIX}{gone.pid}-abc"
    running = tmp_path / f"{PREFIX}{os.getpid()}-def"
    other = tmp_path / "tse-serve-something-else"
    for directory in (stale, running, other):
        directory.mkdir()
        (directory / NAME).write_bytes(b"")
    sharedanswers.remove_stale(str(tmp_path))
    assert not stale.exists() and running.exists() and other.exists()
