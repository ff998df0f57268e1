"""``tse serve`` given what a careless or hostile user gives it (a review's finds): a query of a word
and a quoted word no page holds, docIDs of thousands of digits, a page file or gone list that is a
FIFO or a device, a gone list of a huge number, a document store damaged while served, a page whose
URL line is no UTF-8.  Each gets an answer (or a 4xx/503 and one line), never a 500, a traceback or a
worker stuck for good."""

from __future__ import annotations

import json
import os
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from tests.conftest import BIN, ROOT, clean_env, run_tse
from tests.support.inprocess import query_here, tse_ok_here
from tests.support.multilingual import indexed_fixture_directory, write_fixture_directory
from tests.support.serving import QUICK_LOOKS, tse_serve
from tests.support.wait import wait_until
from tse_scrapy.rules.files import pagedir

HUGE_DOCID = "9" * 4301  # past int()'s 4,300 digits


def get(base: str, path: str, timeout: float = 10) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(base + path, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def api(base: str, query: str) -> tuple[int, dict]:
    status, body = get(base, "/api/search?" + urllib.parse.urlencode({"q": query, "per_page": 100}))
    return status, json.loads(body)


def serving(pages, index):
    command = [str(BIN / "tse"), "serve", str(pages), str(index), "--workers", "1"]
    return tse_serve(command, clean_env(**QUICK_LOOKS), ROOT)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    return indexed_fixture_directory(tmp_path_factory.mktemp("odd"))


@pytest.fixture
def copied(indexed, tmp_path):
    """A copy of the indexed fixture, for a test that changes its files."""
    pages, _ = indexed
    shutil.copytree(pages.parent, tmp_path / "copy")
    return tmp_path / "copy" / "pages", tmp_path / "copy" / "index"


def test_a_word_and_a_quoted_word_no_page_holds(indexed):
    # "debian" has a stem in each language of the index (forms weighed as one word); a word quoted
    # alone that no page holds had none, and the weighing took the largest of no counts: a 500.
    pages, index = indexed
    lines = ['debian "xyzzyq"', '"xyzzyq" debian', 'debian OR "xyzzyq"', 'debian "日"']
    assert len(query_here(pages, index, lines, "relevance")) == len(lines)  # (tse query: a traceback)
    with serving(pages, index) as run:
        for line in lines:
            status, answer = api(run.base, line)
            assert status == 200, (line, answer)
            assert answer["rank"] == "relevance" and isinstance(answer["results"], list), line
        assert get(run.base, "/search?" + urllib.parse.urlencode({"q": lines[0]}))[0] == 200
        # A docID of thousands of digits is no page (int() refused it: a 500).
        zeros = "/doc/" + "0" * 5000 + "1"
        for path in (f"/doc/{HUGE_DOCID}", f"/saved/{HUGE_DOCID}", f"/doc/{HUGE_DOCID}.pdf", zeros):
            assert get(run.base, path)[0] == 404, path[:20]
        assert get(run.base, "/doc/1")[0] == 200
    assert "Traceback" not in run.stderr, run.stderr


def test_a_page_file_or_gone_list_that_is_no_regular_file(copied):
    pages, index = copied
    with serving(pages, index) as run:
        found = lambda: {result["docid"] for result in api(run.base, "debian")[1]["results"]}  # noqa: E731
        listed = min(found() - {3, 4})
        fifo, device = pages / "3", pages / "4"
        fifo.unlink()
        os.mkfifo(fifo)  # opened for reading, it waits for a writer for ever: the worker with it
        device.unlink()
        device.symlink_to("/dev/zero")  # read, it never ends
        for path in ("/doc/3", "/saved/3", "/doc/3.pdf", "/doc/4", "/saved/4"):
            began = time.monotonic()
            assert get(run.base, path, timeout=10)[0] == 404, path
            assert time.monotonic() - began < 5, path
        assert get(run.base, "/healthz")[0] == 200
        # A gone list that is a FIFO: said, not waited on; once a list is there again, it is read.
        gone = pages / pagedir.GONE_NAME
        os.mkfifo(gone)
        time.sleep(1)  # (four looks)
        gone.unlink()
        pagedir.write_gone(pages, [listed])
        wait_until(lambda: listed not in found(), 10, "the gone list written after the FIFO was never read")
    assert "not a regular file" in run.stderr, run.stderr
    assert "Traceback" not in run.stderr, run.stderr


def test_a_gone_list_of_a_number_past_what_int_reads(copied):
    pages, index = copied
    (pages / pagedir.GONE_NAME).write_bytes(b"9" * 5000 + b"\n")
    with pytest.raises(pagedir.PageFileError, match="not a list of docIDs"):
        pagedir.gone_docs(pages)
    for command in (["serve", pages, index, "--port", "0"], ["index", pages, index]):
        done = run_tse(*command, timeout=60)
        stderr = done.stderr.decode()
        assert done.returncode != 0 and stderr.count("\n") == 1, stderr
        assert "not a list of docIDs" in stderr and "Traceback" not in stderr, stderr


def test_a_document_store_damaged_while_served_and_a_url_line_of_no_utf8(tmp_path):
    pages = write_fixture_directory(tmp_path / "pages")
    last = max(int(name) for name in os.listdir(pages) if pagedir.is_page_name(name))
    (pages / str(last + 1)).write_bytes(b"http://example.com/caf\xe9\xff\n1\n<html><title>zebra</title>zebra</html>\n")
    index = tmp_path / "index"
    tse_ok_here("index", pages, index)
    with serving(pages, index) as run:
        # The saved copy's banner shows the URL line's bytes that are no UTF-8 as U+FFFD (they were a 500).
        status, banner = get(run.base, f"/saved/{last + 1}")
        assert status == 200 and "http://example.com/caf\ufffd\ufffd".encode() in banner
        store = index.with_name(index.name + ".docs")
        with open(store, "r+b") as damaged:
            damaged.truncate(store.stat().st_size // 2)
        status, answer = api(run.base, "debian")
        assert status == 503 and "document store cannot be read" in answer["error"], answer
        status, page = get(run.base, "/search?q=debian")
        assert status == 503 and b"document store cannot be read" in page
        assert get(run.base, "/healthz")[0] == 200
    assert "Traceback" not in run.stderr, run.stderr
