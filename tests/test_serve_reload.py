"""A running `tse serve` answers from the index `tse index` writes anew, once it is whole."""

import http.client
import json
import os
import shutil
import time
import urllib.error
import urllib.request

import psutil

from tests.conftest import BIN, ROOT, clean_env
from tests.support.inprocess import tse_here
from tests.support.pages import write_pages
from tests.support.searchsite import write_search_site
from tests.support.serving import QUICK_LOOKS, every_worker_opened, tse_serve
from tests.support.wait import wait_until

# Longer than a server process's looks at the files (served.CHECK_SECONDS, 0.25 s with QUICK_LOOKS: the
# files settled, then opened) and its opening of the index;
# a process answers from the new index that soon whatever its requests (each connection here a request
# of its own: the two processes may answer them in any share).
SETTLED = 2.0
INDEX_FILES = ("", ".bin", ".stamp", ".docs", ".search")


def _api(base: str, query: str) -> dict:
    try:
        with urllib.request.urlopen(f"{base}/api/search?{query}", timeout=10) as response:
            return {"status": response.status, **json.load(response)}
    except urllib.error.HTTPError as error:
        return {"status": error.code, **json.load(error)}


def _wombats(base: str, rank: str = "relevance") -> list[str]:
    """The URLs of the pages answering "wombat", as one request answers (a connection of its own:
    with two server processes, the requests go to both)."""
    answer = _api(base, f"q=wombat&rank={rank}")
    assert answer["status"] == 200, answer
    return sorted(result["url"] for result in answer["results"])


def _every_process_answers(base: str, expected: list[str], rank: str = "relevance") -> bool:
    """Whether "wombat" is answered by *expected*, asked on two connections open at once (the server's
    two processes share connections evenly: one each) and on eight of their own."""
    host, port = base.removeprefix("http://").split(":")
    connections = [http.client.HTTPConnection(host, int(port), timeout=10) for _ in range(2)]
    try:
        for connection in connections:
            connection.connect()
        for connection in connections * 2:
            connection.request("GET", f"/api/search?q=wombat&rank={rank}")
            response = connection.getresponse()
            answer = json.load(response)
            assert response.status == 200, answer
            if sorted(result["url"] for result in answer["results"]) != expected:
                return False
    finally:
        for connection in connections:
            connection.close()
    return all(_wombats(base, rank) == expected for _ in range(8))


def _changed(pages) -> None:
    """Page 2 now holds "wombat", and a page 31 with it is added (as a crawl --update leaves them)."""
    write_pages(
        pages,
        {
            2: ("http://h/dogs.html", 0, b"<title>Dogs</title><body>dog dog dog, one cat and a wombat</body>"),
            31: ("http://h/wombat.html", 1, b"<title>Wombats</title><body>the wombat digs</body>"),
        },
    )


WOMBAT_PAGES = ["http://h/dogs.html", "http://h/wombat.html"]


def test_a_running_server_answers_from_the_index_written_anew(tmp_path):
    pages, index = write_search_site(tmp_path)
    command = [str(BIN / "tse"), "serve", str(pages), str(index), "--workers", "2"]
    with tse_serve(command, clean_env(), ROOT) as run:
        # (No search before the change: a process that had no request takes the new index too.)
        _changed(pages)
        # One process held up (as a loaded machine may) while the other takes the new index: every
        # answer comes from the other, and the page files must not change (page 31 removed, below)
        # before the held one has taken it too: it would find them not those its store was written
        # with, and keep the index before (said "written anew but cannot be used": half the runs of CI).
        held = psutil.Process(run.process.pid).children()[0]
        held.suspend()
        try:
            # (tse index writes the index anew: in this process (cli.main), the server is what is tested.)
            result = tse_here("index", pages, index, "--update")
            assert result.returncode == 0, result.stderr
            # (As soon as every process answers from it, not SETTLED later: only a wait for nothing to
            # change needs all of SETTLED.)
            wait_until(lambda: _every_process_answers(run.base, WOMBAT_PAGES), 20, "the updated index never answered")
        finally:
            held.resume()
        wait_until(lambda: every_worker_opened(run.process.pid, index), 20, "a process never took the updated index")
        assert _every_process_answers(run.base, WOMBAT_PAGES, rank="tse")
        with urllib.request.urlopen(f"{run.base}/doc/31", timeout=10) as response:
            assert b"the wombat digs" in response.read()
        with urllib.request.urlopen(f"{run.base}/search?q=wombat", timeout=10) as response:
            assert "Wombats" in response.read().decode()
        # A full build written anew too (its files replaced again), a page gone from it.
        (pages / "31").unlink()
        result = tse_here("index", pages, index)
        assert result.returncode == 0, result.stderr
        wait_until(lambda: _every_process_answers(run.base, WOMBAT_PAGES[:1]), 20, "the rebuilt index never answered")
    assert run.process.returncode == 0, run.stderr
    assert "written anew but" not in run.stderr  # (a rewrite's files are taken once settled)


def _moved_in(source, target, suffixes) -> None:
    """The files of index *source* with *suffixes* put in place of *target*'s, as tse index renames them."""
    for suffix in suffixes:
        shutil.copy2(f"{source}{suffix}", f"{target}{suffix}.new")
        os.replace(f"{target}{suffix}.new", f"{target}{suffix}")


def test_a_server_answers_from_its_index_until_the_new_one_is_whole(tmp_path):
    pages, index = write_search_site(tmp_path)
    command = [str(BIN / "tse"), "serve", str(pages), str(index), "--workers", "2"]
    with tse_serve(command, clean_env(**QUICK_LOOKS), ROOT) as run:
        before = _api(run.base, "q=cat")
        assert before["total"] == 5 and before["rank"] == "relevance"
        _changed(pages)
        written = tmp_path / "new" / "index"
        written.parent.mkdir()
        result = tse_here("index", pages, written)  # (in this process: the server is what is tested)
        assert result.returncode == 0, result.stderr
        # The new index and its sidecar in place, its document store and search index not yet: the
        # server answers as before, from whole files (titles from the store, rank=relevance).
        _moved_in(written, index, (".stamp", "", ".bin"))
        time.sleep(SETTLED)
        for _ in range(8):
            assert _api(run.base, "q=cat") == before
            assert _wombats(run.base) == []
        _moved_in(written, index, (".docs",))
        time.sleep(SETTLED)
        assert _every_process_answers(run.base, [])
        _moved_in(written, index, (".search",))
        wait_until(lambda: _every_process_answers(run.base, WOMBAT_PAGES), 20, "the whole new index never answered")
        time.sleep(SETTLED)
        # The index's files removed: the server goes on answering from the one it opened.
        for suffix in INDEX_FILES:
            os.unlink(f"{index}{suffix}")
        time.sleep(SETTLED)
        assert _every_process_answers(run.base, WOMBAT_PAGES)
    assert run.process.returncode == 0, run.stderr
    # Said once for the files it could not use, by one of its processes (not once a process): the
    # half-written ones (twice: each half), gone.
    warnings = [line for line in run.stderr.splitlines() if "written anew" in line]
    assert len(warnings) == 3, warnings
    half, gone = (
        f"tse serve: {index} was written anew but cannot be used (",
        f"tse serve: {index} was written anew but cannot be opened (",
    )
    assert sorted(line.split("(")[0] + "(" for line in warnings) == [gone] + [half] * 2, warnings
    assert all(line.endswith("): answering from the index open") for line in warnings), warnings


def test_a_server_process_started_again_waits_for_an_index_it_cannot_open(tmp_path):
    # A worker that dies is started again by the server (uvicorn's supervisor); with the index moved away
    # meanwhile, the new one failed with a 20-line traceback, and was started again every half second,
    # for good. It says so once, the other process answering meanwhile, and opens the index once back.
    pages, index = write_search_site(tmp_path)
    command = [str(BIN / "tse"), "serve", str(pages), str(index), "--workers", "2"]
    with tse_serve(command, clean_env(**QUICK_LOOKS), ROOT) as run:
        # Both processes serving before the index is moved away (one still starting would wait for it).
        wait_until(lambda: every_worker_opened(run.process.pid, index), 30, "a process never opened the index")
        before = _api(run.base, "q=cat")
        assert before["status"] == 200 and before["total"] > 0
        (tmp_path / "away").mkdir()
        for suffix in INDEX_FILES:
            os.replace(f"{index}{suffix}", tmp_path / "away" / f"index{suffix}")
        first, survivor = psutil.Process(run.process.pid).children()
        _killed_and_started_again(run, first)
        assert all(_api(run.base, "q=cat") == before for _ in range(6))  # the other process answers
        for suffix in INDEX_FILES:
            os.replace(tmp_path / "away" / f"index{suffix}", f"{index}{suffix}")

        def started_again_answers() -> bool:
            # (The survivor held up: a new connection is taken by the process started again, or by none.)
            survivor.suspend()
            try:
                return _api(run.base, "q=cat") == before
            except OSError:
                return False
            finally:
                survivor.resume()

        wait_until(started_again_answers, 20, "the process started again never answered")
        # Stopped while a process waits for the index: it stops too (it kept the server from stopping).
        for suffix in INDEX_FILES:
            os.replace(f"{index}{suffix}", tmp_path / "away" / f"index{suffix}")
        _killed_and_started_again(run, psutil.Process(run.process.pid).children()[0])
    assert run.process.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr, run.stderr
    waiting = (
        f"tse serve: a server process cannot open {index} ([Errno 2] No such file or directory: '{index}'):"
        " trying it every second"
    )
    opened = f"tse serve: a server process opened {index} again"
    assert [line for line in run.stderr.splitlines() if "server process" in line] == [waiting, opened, waiting]


def _killed_and_started_again(run, worker: psutil.Process) -> None:
    """*worker* killed, and another started in its place by the server, which has then tried to open
    the index (its first try is at its start: a second is enough, SETTLED left on a loaded machine)."""
    worker.kill()
    wait_until(
        lambda: len({child.pid for child in psutil.Process(run.process.pid).children()} - {worker.pid}) == 2,
        20,
        "no process was started in place of the one killed",
    )
    time.sleep(SETTLED)
