"""`tse index` in sorted runs and worker processes: the same bytes as the index built in one pass
in memory, whatever the runs; errors and interrupts leave no file behind and change no index;
and a sidecar whose text changed is never used (the stamp)."""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import run_tse
from tests.support.pages import write_pages
from tse_scrapy.index.docstore import DocStoreWriter, docs_path
from tse_scrapy.index.indexer import build_index, write_index_files
from tse_scrapy.index.pagefiles import PageScan
from tse_scrapy.index.storage import IndexReader, SidecarPostings, sidecar_path, stamp_path, write_index
from tse_scrapy.rules.indexfile import parse_index
from tse_scrapy.rules.pagedir import GONE_NAME, PageFileError

WORDS = ["apple", "banana", "cherry", "damson", "elder", "grape", "hazel", "kiwi", "lemon", "mango", "olive", "pear"]


def orchard(directory: Path, count: int = 23, seed: int = 1) -> Path:
    """*count* pages of words from a small vocabulary (some pages without a word), page 7 gone."""
    rng = random.Random(seed)
    pages = {}
    for doc_id in range(1, count + 1):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.choice([0, 3, 40])))
        pages[doc_id] = (f"http://h/p{doc_id}.html", 1, f"<title>P{doc_id}</title><p>{text}</p>".encode())
    write_pages(directory, pages)
    (directory / GONE_NAME).write_bytes(b"7\n")
    return directory


def one_pass(pages: Path, indexfile: Path) -> None:
    """The index built whole in memory, then written: what `tse index` wrote before runs."""
    scan = PageScan(pages)
    with DocStoreWriter(docs_path(indexfile)) as docs:
        size, digest = write_index(indexfile, build_index(scan, docs))
        docs.finish(size, digest, scan)


def index_files(indexfile: Path) -> list[bytes]:
    return [path.read_bytes() for path in (indexfile, sidecar_path(indexfile), docs_path(indexfile))]


def store_rows(indexfile: Path) -> list[list[tuple]]:
    with contextlib.closing(sqlite3.connect(docs_path(indexfile))) as db:
        return [db.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall() for table in ("meta", "docs", "files")]


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """An orchard and its one-pass index."""
    directory = tmp_path_factory.mktemp("orchard")
    pages = orchard(directory / "pages")
    one_pass(pages, directory / "one-pass.index")
    return pages, directory / "one-pass.index"


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("run_pages, fan_in", [(1, 64), (2, 3), (5, 2), (1000, 64)])
def test_runs_give_the_one_pass_index_byte_for_byte(reference, tmp_path, jobs, run_pages, fan_in):
    pages, expected = reference
    indexfile = tmp_path / "runs.index"
    write_index_files(pages, indexfile, jobs=jobs, run_pages=run_pages, fan_in=fan_in)
    assert index_files(indexfile) == index_files(expected)
    assert store_rows(indexfile) == store_rows(expected)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        f"runs.index{suffix}" for suffix in ("", ".bin", ".docs", ".stamp")
    ]


@settings(max_examples=25, deadline=None)
@given(
    pages=st.lists(st.lists(st.sampled_from(WORDS), max_size=12), min_size=1, max_size=9),
    run_pages=st.integers(1, 4),
    fan_in=st.integers(2, 4),
)
def test_splitting_into_runs_never_changes_the_index(pages, run_pages, fan_in):
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        write_pages(
            directory / "pages",
            {i: (f"http://h/{i}", 0, " ".join(words).encode()) for i, words in enumerate(pages, start=1)},
        )
        one_pass(directory / "pages", directory / "one.index")
        write_index_files(directory / "pages", directory / "runs.index", run_pages=run_pages, fan_in=fan_in)
        assert index_files(directory / "runs.index") == index_files(directory / "one.index")


def test_large_numbers_take_four_bytes_even_when_a_run_fits_in_two(tmp_path):
    pages = write_pages(tmp_path / "pages", {1: ("http://h/1", 0, b"pear"), 2: ("http://h/2", 0, b"kiwi " * 70000)})
    one_pass(pages, tmp_path / "one.index")
    write_index_files(pages, tmp_path / "runs.index", run_pages=1)
    assert index_files(tmp_path / "runs.index") == index_files(tmp_path / "one.index")
    assert IndexReader(tmp_path / "runs.index").postings("kiwi") == {2: 70000}


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_bad_page_is_one_line_and_changes_nothing(tmp_path, jobs):
    pages = orchard(tmp_path / "pages")
    (pages / "12").write_bytes(b"http://h/p12.html\nnot a depth\n<p>pear</p>\n")
    indexfile = tmp_path / "index"
    indexfile.write_bytes(b"pear 1 1\n")
    result = run_tse("index", pages, indexfile, "--jobs", jobs)
    assert result.returncode == 1
    assert result.stderr.decode().splitlines() == [f"tse index: {pages}/12: not a page file (URL, depth, page)"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index", "pages"]
    assert indexfile.read_bytes() == b"pear 1 1\n"


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_bad_page_after_the_end_is_not_read(tmp_path, jobs):
    pages = orchard(tmp_path / "pages")
    os.remove(pages / "10")  # the directory ends at page 9
    (pages / "12").write_bytes(b"not a page file")
    one_pass(pages, tmp_path / "one.index")
    write_index_files(pages, tmp_path / "runs.index", jobs=jobs, run_pages=2)
    assert index_files(tmp_path / "runs.index") == index_files(tmp_path / "one.index")


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("problem", [KeyboardInterrupt, PageFileError])
def test_an_interrupt_or_error_removes_the_runs(reference, tmp_path, jobs, problem):
    pages, _ = reference
    indexfile = tmp_path / "index"
    write_index_files(pages, indexfile)
    before = index_files(indexfile)

    def interrupt(_pages: int) -> None:  # as Ctrl-C arrives, with runs spilled already
        assert any(tmp_path.glob(".index.*.runs/run-*"))
        raise problem("stop")

    with pytest.raises(problem):
        write_index_files(pages, indexfile, jobs=jobs, run_pages=3, on_page=interrupt)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index", "index.bin", "index.docs", "index.stamp"]
    assert index_files(indexfile) == before


def swap_pear_and_kiwi(text: bytes) -> bytes:
    return text.replace(b"pear", b"zzzz").replace(b"kiwi", b"pear").replace(b"zzzz", b"kiwi")


@pytest.mark.parametrize("how", ["in place", "replaced"])
def test_a_sidecar_is_not_used_once_its_text_is_rewritten_to_the_same_size(reference, tmp_path, how):
    pages, _ = reference
    indexfile = tmp_path / "index"
    write_index_files(pages, indexfile)
    assert IndexReader(indexfile).from_sidecar
    text = indexfile.read_bytes()
    swapped = swap_pear_and_kiwi(text)
    assert len(swapped) == len(text) and swapped != text
    if how == "in place":  # the same inode and size: only the modification time tells
        time.sleep(0.05)  # past the file system clock's tick
        indexfile.write_bytes(swapped)
    else:  # a new file renamed into place, as editors and tools write
        (tmp_path / "new").write_bytes(swapped)
        os.replace(tmp_path / "new", indexfile)
    reader = IndexReader(indexfile)
    assert not reader.from_sidecar
    assert reader.postings("kiwi") == parse_index(text)[b"pear"]
    plain = tmp_path / "plain.index"  # the same text, no sidecar: what the querier must answer
    plain.write_bytes(swapped)
    answer = run_tse("query", pages, indexfile, input=b"kiwi\npear\n").stdout
    assert answer == run_tse("query", pages, plain, input=b"kiwi\npear\n").stdout


def test_a_copied_index_is_hashed_and_its_sidecar_used(reference, tmp_path):
    _, expected = reference
    for path in (expected, sidecar_path(expected), stamp_path(expected)):
        (tmp_path / path.name.replace("one-pass", "copy")).write_bytes(path.read_bytes())
    reader = IndexReader(tmp_path / "copy.index")  # the stamp names another file: the digest is computed
    assert reader.from_sidecar and reader.digest == IndexReader(expected).digest


@settings(max_examples=50, deadline=None)
@given(st.dictionaries(st.integers(1, 500), st.integers(1, 70000), min_size=1), st.lists(st.integers(0, 501)))
def test_sidecar_postings_behave_as_a_dict(postings, probes):
    from array import array

    numbers = array("I", [n for doc_id in sorted(postings) for n in (doc_id, postings[doc_id])])
    lazy = SidecarPostings(memoryview(numbers))
    assert len(lazy) == len(postings)
    for doc_id in probes:  # bisection first, then decoded
        assert (doc_id in lazy) == (doc_id in postings)
        assert lazy.get(doc_id) == postings.get(doc_id)
    assert dict(lazy) == postings and dict(lazy.items()) == postings


def test_query_urls_come_from_the_page_files_once_they_changed(tmp_path):
    pages = orchard(tmp_path / "pages")
    indexfile = tmp_path / "index"
    write_index_files(pages, indexfile)
    before = run_tse("query", pages, indexfile, input=b"pear\n").stdout
    assert b"http://h/p2.html" in before or b"http://h/p3.html" in before
    for doc_id in range(1, 24):
        if doc_id != 7:
            data = (pages / str(doc_id)).read_bytes()
            (pages / str(doc_id)).write_bytes(data.replace(b"http://h/", b"http://moved/"))
    after = run_tse("query", pages, indexfile, input=b"pear\n").stdout
    assert after == before.replace(b"http://h/", b"http://moved/")
