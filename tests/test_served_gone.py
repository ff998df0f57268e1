"""A running `tse serve` answers without the pages `tse crawl --update` lists in `.tse-gone` once it
writes the list, and with them again once it is removed, as a server started on the same files."""

import http.client
import json
import time
from pathlib import Path

import psutil

from tests.conftest import BIN, ROOT, clean_env
from tests.support.searchsite import write_search_site
from tests.support.serving import QUICK_LOOKS, every_worker_opened, tse_serve
from tests.support.wait import wait_until
from tse_scrapy.rules.files import pagedir

RANKS = ("relevance", "tse", "bm25")
QUERIES = ("cat", "dog", "emu", "cat dog")
GONE = [2, 7]  # dogs.html (the only page with "dog" but for cats.html, one with "cat"), and an emu page
# Longer than a server process's looks at the files (served.CHECK_SECONDS, 0.25 s with QUICK_LOOKS: the
# list settled, then read).
SETTLED = 2.0
WAIT = 20.0


def _get(connection: http.client.HTTPConnection, path: str) -> tuple[int, bytes]:
    connection.request("GET", path)
    response = connection.getresponse()
    return response.status, response.read()


def _on_every_process(base: str, paths: list[str]) -> list[dict[str, tuple[int, bytes]]]:
    """What each of two connections open at once gets for *paths* (a server's two processes share
    connections evenly: one each), and a connection of its own."""
    host, port = base.removeprefix("http://").split(":")
    connections = [http.client.HTTPConnection(host, int(port), timeout=10) for _ in range(3)]
    try:
        for connection in connections[:2]:
            connection.connect()
        return [{path: _get(connection, path) for path in paths} for connection in connections]
    finally:
        for connection in connections:
            connection.close()


def _search_paths(ranks=RANKS) -> list[str]:
    return [f"/api/search?q={query.replace(' ', '+')}&rank={rank}&per_page=100" for rank in ranks for query in QUERIES]


def _answers(base: str, ranks=RANKS) -> dict[str, tuple[int, dict]] | None:
    """Each search's status and JSON, when every process answers the same (else None: one has not taken
    the change yet)."""
    seen = [
        {path: (status, json.loads(body)) for path, (status, body) in answers.items()}
        for answers in _on_every_process(base, _search_paths(ranks))
    ]
    return seen[0] if all(answers == seen[0] for answers in seen) else None


def _docids(answer: dict) -> list[int]:
    return [result["docid"] for result in answer["results"]]


def _without(answers: dict[str, tuple[int, dict]] | None, gone: list[int]) -> bool:
    """Whether every process answered, and no answer lists a page of *gone*, and each of them answered 200."""
    return answers is not None and all(
        status == 200 and not set(_docids(answer)) & set(gone) for status, answer in answers.values()
    )


def _doc_statuses(base: str, doc_ids: list[int]) -> set[int]:
    """The statuses of /doc/N for *doc_ids*, on every process."""
    seen = _on_every_process(base, [f"/doc/{doc_id}" for doc_id in doc_ids])
    return {status for answers in seen for status, _ in answers.values()}


def _fresh_answers(pages: Path, index: Path, ranks=RANKS) -> dict[str, tuple[int, dict]]:
    """What a server started now on the same files answers."""
    command = [str(BIN / "tse"), "serve", str(pages), str(index), "--workers", "1"]
    with tse_serve(command, clean_env(**QUICK_LOOKS), ROOT) as fresh:
        answers = _answers(fresh.base, ranks)
    assert answers is not None
    return answers


def test_a_running_server_answers_without_the_pages_gone_and_with_them_once_back(tmp_path):
    pages, index = write_search_site(tmp_path)
    command = [str(BIN / "tse"), "serve", str(pages), str(index), "--workers", "2"]
    with tse_serve(command, clean_env(**QUICK_LOOKS), ROOT) as run:
        before = _answers(run.base)
        assert before is not None
        assert all(2 in _docids(before[f"/api/search?q=cat&rank={rank}&per_page=100"][1]) for rank in RANKS)
        assert all(7 in _docids(before[f"/api/search?q=emu&rank={rank}&per_page=100"][1]) for rank in RANKS)
        assert _doc_statuses(run.base, GONE) == {200}

        pagedir.write_gone(pages, GONE, fsync=True)  # as tse crawl --update writes it (update/extension.py)
        wait_until(lambda: _without(_answers(run.base), GONE), WAIT, "the gone pages were still answers")
        wait_until(lambda: _doc_statuses(run.base, GONE) == {404}, WAIT, "/doc/N of a gone page still answered")
        gone = _answers(run.base)
        assert gone is not None
        for path, (_, answer) in gone.items():
            # Only the gone pages are left out: the others as they were, in the same order.
            kept = [doc_id for doc_id in _docids(before[path][1]) if doc_id not in GONE]
            assert _docids(answer) == kept and answer["total"] == len(kept), path
        assert gone["/api/search?q=dog&rank=tse&per_page=100"][1]["total"] == 1
        assert _doc_statuses(run.base, [1, 3, 8]) == {200}
        # A server started now answers the same with rank=tse and bm25 (BM25 not counting the gone pages:
        # other scores than before); it cannot use the search index (its store was written before the
        # pages went), where this one still does.
        fresh = _fresh_answers(pages, index, ("tse", "bm25"))
        assert {path: gone[path] for path in fresh} == fresh
        assert fresh["/api/search?q=emu&rank=bm25&per_page=100"] != before["/api/search?q=emu&rank=bm25&per_page=100"]

        (pages / pagedir.GONE_NAME).unlink()  # (tse crawl --update removes an empty list)
        wait_until(lambda: _answers(run.base) == before, WAIT, "the pages back were no answers again")
        assert _doc_statuses(run.base, GONE) == {200}
        assert _fresh_answers(pages, index) == before
    assert run.process.returncode == 0, run.stderr
    assert "gone pages" not in run.stderr and "written anew" not in run.stderr


def test_a_server_without_a_store_builds_it_again_without_the_pages_gone(tmp_path):
    pages, index = write_search_site(tmp_path)
    Path(f"{index}.docs").unlink()  # (as an index of the reference indexer: titles from the pages, rank=tse)
    command = [str(BIN / "tse"), "serve", str(pages), str(index)]
    ranks = ("tse", "bm25")
    with tse_serve(command, clean_env(**QUICK_LOOKS), ROOT) as run:
        before = _answers(run.base, ranks)
        assert before is not None
        # A list that is no list of docIDs: answered as before, said once.
        (pages / ".tse-gone.new").write_bytes(b"2\nseven\n")
        (pages / ".tse-gone.new").rename(pages / pagedir.GONE_NAME)
        time.sleep(SETTLED)
        assert _answers(run.base, ranks) == before and _doc_statuses(run.base, GONE) == {200}

        pagedir.write_gone(pages, GONE)
        wait_until(lambda: _without(_answers(run.base, ranks), GONE), WAIT, "the gone pages were still answers")
        assert _doc_statuses(run.base, GONE) == {404}
        assert _answers(run.base, ranks) == _fresh_answers(pages, index, ranks)

        pagedir.write_gone(pages, [])
        wait_until(lambda: _answers(run.base, ranks) == before, WAIT, "the pages back were no answers again")
        assert _doc_statuses(run.base, GONE) == {200}
    assert run.process.returncode == 0, run.stderr
    warnings = [line for line in run.stderr.splitlines() if "gone pages" in line]
    assert warnings == [
        f"tse serve: the gone pages cannot be read again ({pages}/.tse-gone: not a list of docIDs, one a line):"
        " answering as before"
    ], run.stderr


def test_a_server_process_started_again_answers_without_the_pages_gone_as_its_sibling(tmp_path):
    # A process the server starts in place of one that died (uvicorn's supervisor does, a process
    # killed or not answering its pings on a loaded machine) opens the store its parent checked at the
    # start, before the list was written: it left the gone pages in the store's documents, so its /doc/N
    # of a gone page answered 200 and its BM25 counted them (CI's failure of the test above, its
    # second process started again on a loaded machine).  No answer kept: each process answers itself.
    pages, index = write_search_site(tmp_path)
    command = [str(BIN / "tse"), "serve", str(pages), str(index), "--workers", "2", "--answer-cache", "0"]
    with tse_serve(command, clean_env(**QUICK_LOOKS), ROOT) as run:
        wait_until(lambda: every_worker_opened(run.process.pid, index), WAIT, "a server process never opened the index")
        pagedir.write_gone(pages, GONE, fsync=True)
        gone = wait_until(lambda: _without(_answers(run.base), GONE) and _answers(run.base), WAIT, "still answers")
        killed = psutil.Process(run.process.pid).children()[0]
        killed.kill()
        wait_until(
            lambda: (
                killed.pid not in {child.pid for child in psutil.Process(run.process.pid).children()}
                and len(psutil.Process(run.process.pid).children()) == 2
                and every_worker_opened(run.process.pid, index)
            ),
            WAIT,
            "no process was started in place of the one killed",
        )
        time.sleep(SETTLED)  # (its first look at the files taken)
        # Two connections at once are one a process, as a rule: a few rounds reach both.
        for _ in range(4):
            assert _doc_statuses(run.base, GONE) == {404}
            assert _answers(run.base) == gone  # every process the same, BM25's scores included
    assert run.process.returncode == 0, run.stderr
