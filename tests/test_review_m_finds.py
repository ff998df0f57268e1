"""What a user reads (`tse serve`, `tse report`, `tse status`, `tse query`, `tse indextest`): a
review's finds, each mended and held here by a test that failed before its mend."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request

import pytest

from tests.conftest import BIN, ROOT, clean_env
from tests.support.inprocess import tse_here
from tests.support.multilingual import fixture_pages, write_fixture_directory
from tests.support.serving import tse_serve


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    return write_fixture_directory(tmp_path_factory.mktemp("pages") / "pages")


@pytest.mark.parametrize("command", ["query", "indextest"])
def test_an_index_that_is_a_directory_is_named_not_a_descriptor(command, pages, tmp_path):
    # An INDEXFILE (OLDINDEX) that is a directory is opened, then read by its descriptor, whose error
    # names the descriptor's number: "tse query: 3: Is a directory", the path nowhere in the line.
    directory = tmp_path / "an index"
    directory.mkdir()
    arguments = [pages, directory] if command == "query" else [directory, tmp_path / "new"]
    done = tse_here(command, *arguments, input=b"word\n")
    assert done.returncode == 1
    assert done.stderr.decode() == f"tse {command}: {directory}: Is a directory\n"
    assert done.stdout == b""
    assert not (tmp_path / "new").exists()


def test_a_tse_score_past_64_bits_is_answered_by_the_api(pages, tmp_path):
    # An index file's counts are a user's numbers (SPEC 3: positive integers), and rank=tse sums those
    # of an OR's words: twenty ORs of a count of 18 digits passed 64 bits, which orjson refuses (500).
    count = 999_999_999_999_999_999
    index = tmp_path / "index"
    index.write_text(f"zebra 1 {count}\n")
    query = " or ".join(["zebra"] * 20)
    command = [str(BIN / "tse"), "serve", str(pages), str(index), "--workers", "1"]
    with tse_serve(command, clean_env(), ROOT) as server:
        parameters = urllib.parse.urlencode({"q": query, "rank": "tse"})
        with urllib.request.urlopen(f"{server.base}/api/search?{parameters}", timeout=30) as response:
            assert response.status == 200
            answer = json.loads(response.read())
        with urllib.request.urlopen(f"{server.base}/api/search?q=zebra&rank=tse", timeout=30) as response:
            alone = json.loads(response.read())
    assert answer["total"] == 1
    assert [(result["docid"], result["score"]) for result in answer["results"]] == [(1, 20 * count)]
    (first,) = [page.url for page in fixture_pages() if page.doc_id == 1]
    assert answer["results"][0]["url"] == alone["results"][0]["url"] == first
    assert "Traceback" not in server.stderr


@pytest.mark.parametrize("command", ["query", "indextest"])
def test_an_index_holding_a_number_of_5000_digits_is_refused_in_one_line(command, pages, tmp_path):
    # int() refuses a number past 4,300 digits: the ValueError was a traceback (tse serve's start too).
    index = tmp_path / "index"
    index.write_bytes(b"zebra 1 " + b"9" * 5000 + b"\n")
    arguments = [pages, index] if command == "query" else [index, tmp_path / "new"]
    done = tse_here(command, *arguments, input=b"zebra\n")
    assert done.returncode == 1, done.stderr
    assert done.stderr.decode().startswith(f"tse {command}: {index}:1: a number of more than 18 digits: '9999")
    assert done.stderr.decode().count("\n") == 1 and done.stdout == b""
