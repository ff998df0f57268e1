"""`tse index --update` on real page directories: what it writes is what a fresh `tse index` writes
(the same bytes: text, sidecar and store), and gone pages leave index, query and serve."""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import sqlite3
import subprocess
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import BIN, ROOT, clean_env, run_tse
from tests.support.inprocess import tse_ok_here
from tests.support.pages import write_pages
from tests.support.reference import triples
from tests.support.serving import tse_serve
from tse_scrapy.fulltext.store import search_path
from tse_scrapy.index import update
from tse_scrapy.index.docstore import docs_path
from tse_scrapy.index.engine import QueryEngine
from tse_scrapy.index.storage import IndexReader, sidecar_path
from tse_scrapy.index.update import update_index
from tse_scrapy.rules.files import pagedir

# fmt: off
VOCABULARY = [
    "apple", "banana", "cherry", "damson", "elder", "fig", "grape", "hazel", "iris", "juniper", "kiwi", "lemon",
    "mango", "nectar", "olive", "pear", "quince", "rowan", "sloe", "tamarind", "ugli", "vanilla", "walnut", "yam",
]
# fmt: on


def body(seed: int, words: int = 60, extra: str = "") -> bytes:
    """A page body of realistic HTML: a title, a paragraph of words from a small vocabulary, markup."""
    rng = random.Random(seed)
    text = " ".join(rng.choice(VOCABULARY) for _ in range(words))
    return (
        f"<!DOCTYPE html><html><head><title>Orchard {seed}</title><style>p {{ color: navy }}</style></head>"
        f'<body><h1>Orchard {seed}</h1><p class="fruit">{text} {extra}</p>'
        f'<a href="other{seed}.html">more &amp; more</a></body></html>'
    ).encode()


def make_site(directory: Path, count: int = 10) -> Path:
    return write_pages(
        directory, {doc_id: (f"http://h/p{doc_id}.html", 1, body(doc_id)) for doc_id in range(1, count + 1)}
    )


def rewrite(pages: Path, doc_id: int, new_body: bytes) -> None:
    """As `tse crawl --update` changes a page: the file replaced atomically under its docID."""
    page = pagedir.read_page(pages, doc_id)
    pagedir.write_page(pages, doc_id, pagedir.Page(page.url, page.depth, new_body))


def add(pages: Path, new_body: bytes) -> int:
    """A new page, under the docID after the highest."""
    doc_id = max(int(name.name) for name in pages.iterdir() if pagedir.is_page_name(name.name)) + 1
    pagedir.write_page(pages, doc_id, pagedir.Page(f"http://h/new{doc_id}.html", 2, new_body))
    return doc_id


def index(pages: Path, indexfile: Path, *flags: str) -> subprocess.CompletedProcess:
    result = run_tse("index", pages, indexfile, *flags)
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout == b""
    return result


def tables(indexfile: Path) -> dict[str, list[tuple]]:
    """Every row of the document store beside *indexfile*."""
    with contextlib.closing(sqlite3.connect(docs_path(indexfile))) as db:
        return {name: db.execute(f"SELECT * FROM {name} ORDER BY 1").fetchall() for name in ("meta", "docs", "files")}


def files_of(indexfile: Path) -> dict[str, bytes]:
    return {str(path): path.read_bytes() for path in (indexfile, sidecar_path(indexfile), docs_path(indexfile))}


def assert_same_as_fresh(pages: Path, updated: Path, fresh: Path) -> None:
    """*updated* is what `tse index` of *pages* writes into *fresh* (the oracle: in this process, no workers;
    the index is the same whatever the workers, test_an_update_read_in_ranges_by_workers_equals_a_fresh_index)."""
    assert tse_ok_here("index", pages, fresh, "--jobs", "1") == ""
    assert updated.read_bytes() == fresh.read_bytes()
    assert sidecar_path(updated).read_bytes() == sidecar_path(fresh).read_bytes()
    assert IndexReader(updated).from_sidecar
    assert tables(updated) == tables(fresh)
    assert docs_path(updated).read_bytes() == docs_path(fresh).read_bytes()  # the same SQLite file, even


@pytest.fixture
def site(tmp_path):
    """make_site's pages, indexed (by `tse index` in this process: the tests run the updates they check)."""
    pages = make_site(tmp_path / "pages")
    assert tse_ok_here("index", pages, tmp_path / "index", "--jobs", "1") == ""
    return pages, tmp_path / "index"


def test_update_equals_a_fresh_index_after_changes_new_and_gone_pages(site, tmp_path):
    pages, indexfile = site
    rewrite(pages, 2, body(102, 80))  # another size
    old = (pages / "5").stat()
    same_size = body(5).replace(b"more &amp; more", b"less &amp; less")
    assert len(same_size) == len(body(5)) and same_size != body(5)
    rewrite(pages, 5, same_size)
    os.utime(pages / "5", ns=(old.st_atime_ns, old.st_mtime_ns))  # the same size and mtime: a new inode only
    new = [add(pages, body(200, extra="newcomer")), add(pages, body(201))]
    pagedir.write_gone(pages, [3, 7])
    result = index(pages, indexfile, "--update")
    assert result.stderr == b""
    assert_same_as_fresh(pages, indexfile, tmp_path / "fresh")
    found = triples(indexfile.read_bytes())
    assert new == [11, 12] and ("newcomer", 11, 1) in found and ("less", 5, 2) in found
    assert {doc_id for _, doc_id, _ in found} == {1, 2, 4, 5, 6, 8, 9, 10, 11, 12}
    assert [row[0] for row in tables(indexfile)["docs"]] == [1, 2, 4, 5, 6, 8, 9, 10, 11, 12]


def test_pages_edited_with_a_word_more_update_equals_fresh(site, tmp_path):
    # Most words of such a page are on it as often as before: their lines are copied, not merged.
    pages, indexfile = site
    before = {(word, doc_id): count for word, doc_id, count in triples(indexfile.read_bytes())}
    for doc_id, added in ((2, b"walnut"), (4, b"walnut walnut"), (9, b"zyzzyva")):
        rewrite(pages, doc_id, body(doc_id) + b"<p>%s</p>" % added)
    index(pages, indexfile, "--update")
    assert_same_as_fresh(pages, indexfile, tmp_path / "fresh")
    found = triples(indexfile.read_bytes())
    assert ("zyzzyva", 9, 1) in found and ("orchard", 9, before["orchard", 9]) in found
    assert ("walnut", 4, before.get(("walnut", 4), 0) + 2) in found


@pytest.mark.parametrize("jobs", [1, 2])
def test_an_update_read_in_ranges_by_workers_equals_a_fresh_index(tmp_path, monkeypatch, jobs):
    # Ranges of 3 docIDs: changed, new, gone and unchanged pages in several ranges, handed out ahead.
    monkeypatch.setattr(update, "RANGE_PAGES", 3)
    pages = make_site(tmp_path / "pages", 20)
    tse_ok_here("index", pages, tmp_path / "index")  # (set-up: in this process)
    rewrite(pages, 2, body(2) + b"<p>walnut</p>")
    rewrite(pages, 13, body(113, 30))
    new = add(pages, body(300, extra="newcomer"))
    pagedir.write_gone(pages, [5, 11])
    assert update_index(pages, tmp_path / "index", jobs=jobs) is None
    assert_same_as_fresh(pages, tmp_path / "index", tmp_path / "fresh")
    found = triples((tmp_path / "index").read_bytes())
    assert ("newcomer", new, 1) in found and not any(doc_id in (5, 11) for _, doc_id, _ in found)


def test_a_second_update_and_a_page_that_comes_back(site, tmp_path):
    pages, indexfile = site
    pagedir.write_gone(pages, [4])
    index(pages, indexfile, "--update")
    assert_same_as_fresh(pages, indexfile, tmp_path / "fresh1")
    pagedir.write_gone(pages, [])  # page 4 is back, its file unchanged
    rewrite(pages, 1, body(301))
    index(pages, indexfile, "--update")
    assert_same_as_fresh(pages, indexfile, tmp_path / "fresh2")
    assert 4 in [row[0] for row in tables(indexfile)["docs"]]


def test_no_change_writes_nothing_and_reads_no_page(site, tmp_path):
    pages, indexfile = site
    before = {path: os.stat(path) for path in files_of(indexfile)}
    # A page edited in place keeping its size, mtime and inode is taken as unchanged: the update
    # trusts the files' status and reads no page (the price of not reading the corpus).
    page = pages / "3"
    status = page.stat()
    data = page.read_bytes()
    paragraph = data.index(b'class="fruit">') + len(b'class="fruit">')
    with open(page, "r+b") as file:
        file.seek(paragraph)
        file.write(b"zebra")
    os.utime(page, ns=(status.st_atime_ns, status.st_mtime_ns))
    result = index(pages, indexfile, "--update")
    assert result.stderr == b""
    for path, status in before.items():
        now = os.stat(path)
        assert (now.st_ino, now.st_mtime_ns, now.st_size) == (status.st_ino, status.st_mtime_ns, status.st_size)
    assert b"zebra" not in indexfile.read_bytes()
    assert tse_ok_here("index", pages, tmp_path / "fresh", "--jobs", "1") == ""
    assert b"zebra 3 1" in (tmp_path / "fresh").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir() if "fresh" not in p.name) == [
        "index", "index.bin", "index.docs", "index.lock", "index.search", "index.stamp", "pages"
    ]  # fmt: skip


def test_a_gone_page_file_touched_rewrites_only_the_store(site, tmp_path):
    pages, indexfile = site
    pagedir.write_gone(pages, [6])
    index(pages, indexfile, "--update")
    text = indexfile.read_bytes()
    rewrite(pages, 6, body(606))  # a gone page's file is not indexed, but the store records it
    index(pages, indexfile, "--update")
    assert indexfile.read_bytes() == text
    assert_same_as_fresh(pages, indexfile, tmp_path / "fresh")


def test_the_sidecar_widens_and_narrows_as_a_fresh_one(site, tmp_path):
    pages, indexfile = site
    huge = add(pages, b"<p>" + b"zap " * 70_000 + b"</p>")  # a count over 65,535: 4-byte numbers
    index(pages, indexfile, "--update")
    assert_same_as_fresh(pages, indexfile, tmp_path / "wide")
    assert "zap 11 70000" in indexfile.read_text()
    pagedir.write_gone(pages, [huge])
    index(pages, indexfile, "--update")
    assert_same_as_fresh(pages, indexfile, tmp_path / "narrow")


def test_pages_removed_from_the_end_leave_the_index(site, tmp_path):
    pages, indexfile = site
    (pages / "10").unlink()
    (pages / "9").unlink()
    index(pages, indexfile, "--update")
    assert_same_as_fresh(pages, indexfile, tmp_path / "fresh")


def test_every_page_gone_but_the_first_leaves_an_empty_index(site, tmp_path):
    pages, indexfile = site
    pagedir.write_gone(pages, range(1, 11))
    index(pages, indexfile, "--update")
    assert indexfile.read_bytes() == b""
    assert_same_as_fresh(pages, indexfile, tmp_path / "fresh")


def fallback_line(result: subprocess.CompletedProcess) -> str:
    lines = result.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("tse index: cannot update: ") and lines[0].endswith("; indexing every page")
    return lines[0]


def test_without_a_document_store_update_indexes_every_page(site, tmp_path):
    pages, indexfile = site
    docs_path(indexfile).unlink()
    rewrite(pages, 1, body(111))
    line = fallback_line(index(pages, indexfile, "--update"))
    assert line == f"tse index: cannot update: no document store {indexfile}.docs; indexing every page"
    assert_same_as_fresh(pages, indexfile, tmp_path / "fresh")


def test_without_an_index_update_indexes_every_page(tmp_path):
    pages = make_site(tmp_path / "pages")
    line = fallback_line(index(pages, tmp_path / "index", "--update"))
    assert line == f"tse index: cannot update: no index {tmp_path}/index to update; indexing every page"
    assert_same_as_fresh(pages, tmp_path / "index", tmp_path / "fresh")


def test_most_pages_changed_give_way_to_a_full_build_and_fewer_do_not(tmp_path):
    # A copy of the pages without their files' times (cp -r) changes every file's key: the update read
    # every page and rewrote every row, slower than a full build (1.4 times its time on 2,256 pages).
    pages = make_site(tmp_path / "pages", update.FULL_BUILD_PAGES)
    tse_ok_here("index", pages, tmp_path / "index")  # (set-up: in this process)
    copied = tmp_path / "copy"
    shutil.copytree(pages, copied, copy_function=shutil.copyfile)  # (new files: new inodes, new times)
    for suffix in ("", ".bin", ".docs", ".search"):
        shutil.copy2(f"{tmp_path}/index{suffix}", f"{tmp_path}/copied{suffix}")
    line = fallback_line(index(copied, tmp_path / "copied", "--update"))
    assert line == (
        f"tse index: cannot update: {update.FULL_BUILD_PAGES} of its {update.FULL_BUILD_PAGES} page files are new or"
        " changed, which a full build indexes sooner; indexing every page"
    )
    assert_same_as_fresh(copied, tmp_path / "copied", tmp_path / "fresh")
    # Three quarters changed: updated.
    for doc_id in range(1, int(update.FULL_BUILD_SHARE * update.FULL_BUILD_PAGES) + 1):
        rewrite(copied, doc_id, body(1000 + doc_id))
    assert index(copied, tmp_path / "copied", "--update").stderr == b""
    assert_same_as_fresh(copied, tmp_path / "copied", tmp_path / "fresh")


def test_a_store_of_an_older_version_or_another_index_is_not_used(site, tmp_path):
    pages, indexfile = site
    with contextlib.closing(sqlite3.connect(docs_path(indexfile))) as db:  # as tse index wrote it before --update
        db.execute("DROP TABLE files")
        db.execute("DELETE FROM meta WHERE key IN ('format', 'last')")
        db.commit()
    assert "was written by an older tse index" in fallback_line(index(pages, indexfile, "--update"))
    assert_same_as_fresh(pages, indexfile, tmp_path / "fresh")
    # The reference indexer's index (same triples, another order) beside this store: not the store's index.
    lines = indexfile.read_text().splitlines()
    indexfile.write_text("\n".join(reversed(lines)) + "\n")
    assert f"does not match {indexfile}" in fallback_line(index(pages, indexfile, "--update"))
    assert_same_as_fresh(pages, indexfile, tmp_path / "fresh2")
    sidecar_path(indexfile).unlink()
    assert "no sidecar" in fallback_line(index(pages, indexfile, "--update"))
    assert_same_as_fresh(pages, indexfile, tmp_path / "fresh3")


def test_a_malformed_page_leaves_the_index_files_as_they_were(site, tmp_path):
    pages, indexfile = site
    rewrite(pages, 1, body(1001))
    (pages / "4").write_bytes(b"http://h/p4.html\nnot a depth\n<p>page</p>\n")
    before = files_of(indexfile)
    result = run_tse("index", pages, indexfile, "--update")
    full = run_tse("index", pages, tmp_path / "full")
    assert result.returncode == full.returncode == 1
    assert result.stderr.decode().splitlines() == [
        f"tse index: {pages}/4: not a page file (URL, depth, page): line 2 is not a depth (a number, digits 0-9 only)"
    ]
    assert result.stderr == full.stderr
    assert files_of(indexfile) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == [  # (a lock file stays, even the failed build's)
        "full.lock", "index", "index.bin", "index.docs", "index.lock", "index.search", "index.stamp", "pages"
    ]  # fmt: skip


def test_a_malformed_gone_list_is_one_line(site):
    pages, indexfile = site
    (pages / pagedir.GONE_NAME).write_bytes(b"3\nthree\n")
    before = files_of(indexfile)
    result = run_tse("index", pages, indexfile, "--update")
    assert result.returncode == 1
    assert result.stderr.decode().splitlines() == [f"tse index: {pages}/.tse-gone: not a list of docIDs, one a line"]
    assert files_of(indexfile) == before


# Gone pages in the querier and the server.


def gone_site(tmp_path: Path) -> tuple[Path, Path]:
    """Ten pages, each with its own word ``onlyN``, all with ``orchard``; pages 3 and 7 gone since indexed."""
    pages = write_pages(
        tmp_path / "pages",
        {n: (f"http://h/p{n}.html", 1, body(n, extra=f"only{'abcdefghij'[n - 1]} " * n)) for n in range(1, 11)},
    )
    assert tse_ok_here("index", pages, tmp_path / "index", "--jobs", "1") == ""  # (in this process: set-up)
    pagedir.write_gone(pages, [3, 7])
    return pages, tmp_path / "index"


def query_rows(pages: Path, indexfile: Path, lines: list[str], *flags: str) -> list[list[str]]:
    """The result rows ``tse query`` answers each of *lines* with, in their order: one ``tse query`` for all."""
    result = run_tse("query", pages, indexfile, *flags, input="".join(f"{line}\n" for line in lines).encode())
    assert result.returncode == 0 and result.stderr == b"", result.stderr
    blocks = result.stdout.decode().split("Query: ")[1:]
    assert len(blocks) == len(lines), result.stdout
    return [[row for row in block.splitlines() if row.startswith("score")] for block in blocks]


@pytest.mark.parametrize("updated", [True, False], ids=["updated", "stale-index"])
def test_gone_pages_are_no_answer_of_tse_query(tmp_path, updated):
    pages, indexfile = gone_site(tmp_path)
    if updated:
        index(pages, indexfile, "--update")
    rows, own, either = query_rows(pages, indexfile, ["orchard", "onlyc", "onlyc or onlyd"])
    assert [int(row.split("doc")[1].split(":")[0]) for row in rows] == [1, 2, 4, 5, 6, 8, 9, 10]
    assert own == []  # page 3's own word
    assert either == ["score   4 doc   4: http://h/p4.html"]


def test_bm25_does_not_count_gone_pages(tmp_path):
    pages, indexfile = gone_site(tmp_path)
    index(pages, indexfile, "--update")
    # The same pages without 3 and 7, renumbered: the same BM25 scores, URL by URL.
    kept = {new: pagedir.read_page(pages, old) for new, old in enumerate([1, 2, 4, 5, 6, 8, 9, 10], start=1)}
    other = write_pages(tmp_path / "kept", {n: (p.url, p.depth, p.body) for n, p in kept.items()})
    tse_ok_here("index", other, tmp_path / "kept.index")  # (the oracle: in this process)
    lines = ["orchard", "onlyd or onlyh or apple", "mango"]
    mine = query_rows(pages, indexfile, lines, "--rank", "bm25")
    theirs = query_rows(other, tmp_path / "kept.index", lines, "--rank", "bm25")
    for line, my_rows, their_rows in zip(lines, mine, theirs, strict=True):
        assert {row.split(": ")[1]: row.split()[1] for row in my_rows} == {
            row.split(": ")[1]: row.split()[1] for row in their_rows
        }, line
    engine = QueryEngine(pages, IndexReader(indexfile))
    assert engine.docs.from_file and engine.docs.pages == 8


def test_a_store_written_before_pages_went_gone_is_not_used(tmp_path):
    pages, indexfile = gone_site(tmp_path)
    engine = QueryEngine(pages, IndexReader(indexfile))
    assert not engine.docs.from_file and 3 not in engine.docs.lengths and engine.docs.pages == 8


def get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_gone_pages_are_not_served(tmp_path):
    pages, indexfile = gone_site(tmp_path)
    index(pages, indexfile, "--update")
    with tse_serve([str(BIN / "tse"), "serve", str(pages), str(indexfile)], clean_env(), ROOT) as run:
        base = run.base
        status, content = get(f"{base}/api/search?q=orchard&per_page=100")
        assert status == 200
        answer = json.loads(content)
        assert answer["total"] == 8 and sorted(r["docid"] for r in answer["results"]) == [1, 2, 4, 5, 6, 8, 9, 10]
        assert json.loads(get(f"{base}/api/search?q=onlyg&rank=tse")[1])["total"] == 0  # page 7's own word
        assert get(f"{base}/doc/3")[0] == 404 and get(f"{base}/doc/7")[0] == 404 and get(f"{base}/doc/11")[0] == 404
        status, content = get(f"{base}/doc/8")
        saved = pagedir.read_page(pages, 8)
        base_tag = f'<base href="{saved.url}" target="_top">'.encode()  # (naming the page's URL for its links)
        assert status == 200 and base_tag in content and content.replace(base_tag, b"", 1) == saved.body
    assert run.process.returncode == 0, run.stderr
    assert "one process" not in run.stderr  # the updated store was used, not rebuilt from the pages


# Any sequence of changes: update == fresh.

CHANGES = st.lists(
    st.one_of(
        st.tuples(st.just("change"), st.integers(1, 8), st.integers(0, 10**6)),
        # An edit keeping most of the page: its other words on it as often as before.
        st.tuples(st.just("extend"), st.integers(1, 8), st.integers(0, 10**6)),
        st.tuples(st.just("add"), st.just(0), st.integers(0, 10**6)),
        st.tuples(st.just("gone"), st.integers(1, 8), st.just(0)),
        st.tuples(st.just("back"), st.integers(1, 8), st.just(0)),
        st.tuples(st.just("drop_last"), st.just(0), st.just(0)),
    ),
    max_size=6,
)


def apply(pages: Path, changes: list[tuple[str, int, int]]) -> None:
    """Apply a round of *changes* as a crawl would: each page file written or removed at most once a round
    (a page file written twice between two updates may get back the inode it had)."""
    gone, touched = set(pagedir.gone_docs(pages)), set()
    last = max(int(p.name) for p in pages.iterdir() if pagedir.is_page_name(p.name))
    for kind, doc_id, seed in changes:
        if kind == "change" and doc_id <= last and doc_id not in touched:
            rewrite(pages, doc_id, body(seed, words=seed % 50))
            touched.add(doc_id)
        elif kind == "extend" and doc_id <= last and doc_id not in touched:
            word = VOCABULARY[seed % len(VOCABULARY)].encode()
            rewrite(pages, doc_id, pagedir.read_page(pages, doc_id).body + b"<p>%s</p>" % word)
            touched.add(doc_id)
        elif kind == "add" and last + 1 not in touched:
            last = add(pages, body(seed, words=seed % 50, extra=f"fresh{'xyz'[seed % 3]}"))
            touched.add(last)
        elif kind == "gone" and doc_id <= last:
            gone.add(doc_id)
        elif kind == "back":
            gone.discard(doc_id)
        elif kind == "drop_last" and last > 1 and last not in touched:
            (pages / str(last)).unlink()
            touched.add(last)
            gone.discard(last)
            last -= 1
    pagedir.write_gone(pages, gone)


# (Six pages, a few kinds of change: 15 new examples a run, each up to six builds in this process.)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rounds=st.lists(CHANGES, min_size=1, max_size=3))
def test_any_changes_update_equals_fresh(rounds):
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary)
        pages = make_site(root / "pages", 6)
        assert tse_ok_here("index", pages, root / "index", "--jobs", "1") == ""
        for number, changes in enumerate(rounds):
            apply(pages, changes)
            assert tse_ok_here("index", pages, root / "index", "--update") == ""
            fresh = root / f"fresh{number}"
            assert tse_ok_here("index", pages, fresh, "--jobs", "1") == ""
            assert (root / "index").read_bytes() == fresh.read_bytes()
            assert sidecar_path(root / "index").read_bytes() == sidecar_path(fresh).read_bytes()
            assert tables(root / "index") == tables(fresh)
            assert docs_path(root / "index").read_bytes() == docs_path(fresh).read_bytes()
        shutil.rmtree(pages)


def test_a_store_whose_words_are_damaged_stops_the_update_and_its_search_index_is_left_as_it_was(site):
    # The text index's merge failing on a damaged row of the store stops the update in one line before
    # the search index is written: every file of the index as it was, no partial file left.
    pages, indexfile = site
    rewrite(pages, 3, body(3, extra="quince"))
    with contextlib.closing(sqlite3.connect(docs_path(indexfile))) as db:
        db.execute("UPDATE files SET words = x'00ff' WHERE doc_id = 3")  # not a zlib stream
        db.commit()
    search = search_path(indexfile)
    before = {**files_of(indexfile), str(search): search.read_bytes()}
    problem = update_index(pages, indexfile)
    assert problem is not None and f"{docs_path(indexfile)} is damaged (page 3: " in problem, problem
    assert {**files_of(indexfile), str(search): search.read_bytes()} == before
    assert sorted(path.name for path in indexfile.parent.iterdir() if "partial" in path.name) == []


def test_a_store_damaged_in_the_row_of_an_unchanged_page_gives_way_to_a_full_build(site, tmp_path):
    # The row is copied, not merged: it failed the update with SQLite's message, the whole text
    # quoted in it, exit 1; it is said in a short line and every page indexed, as for any store that
    # cannot be updated.
    pages, indexfile = site
    rewrite(pages, 3, body(3, extra="quince"))
    with contextlib.closing(sqlite3.connect(docs_path(indexfile))) as db:
        db.execute("UPDATE docs SET text = CAST(x'ff80' || CAST(text AS BLOB) AS TEXT) WHERE doc_id = 7")
        db.commit()
    result = run_tse("index", pages, indexfile, "--update")
    message = result.stderr.decode()
    assert result.returncode == 0, message
    assert message.startswith(f"tse index: cannot update: {docs_path(indexfile)} is damaged (page 7: ")
    assert message.endswith("; indexing every page\n") and message.count("\n") == 1 and len(message) < 300
    assert_same_as_fresh(pages, indexfile, tmp_path / "fresh")
    assert sorted(path.name for path in indexfile.parent.iterdir() if "partial" in path.name) == []


def test_a_missing_page_file_with_page_files_after_it_is_one_warning_and_the_same_index(tmp_path):
    # SPEC 3: the walk ends at the first page that cannot be opened, and so does the index; the
    # user is told, on stderr, which pages that leaves out.
    pages = make_site(tmp_path / "pages", 10)
    reference = make_site(tmp_path / "reference", 5)  # pages 1..5: what the index holds without page 6
    (pages / "6").unlink()
    gone = pages / ".tse-gone"
    warning = (
        "tse index: warning: page file 6 is missing: the 4 page files past it, up to 10, are not indexed (the"
        " index stops at"
        f" the first missing page; to remove a page, keep its file and list its docID in {gone})\n"
    )
    assert tse_ok_here("index", reference, tmp_path / "reference.index", "--jobs", "1") == ""
    expected = (tmp_path / "reference.index").read_bytes()
    result = run_tse("index", pages, tmp_path / "index", "--jobs", "1")  # the command, as a process
    assert (result.returncode, result.stdout, result.stderr.decode()) == (0, b"", warning)
    assert (tmp_path / "index").read_bytes() == expected
    # The rest through the command's code in this process (tse_ok_here: exit 0, nothing on stdout; its stderr).
    for options in [("--jobs", "2"), ("--update",)]:
        assert tse_ok_here("index", pages, tmp_path / "index", *options) == warning, options
        assert (tmp_path / "index").read_bytes() == expected, options
    (pages / "8").unlink()
    (pages / "9").unlink()  # files past the end with gaps between them: counted, not a range of docIDs
    said = tse_ok_here("index", pages, tmp_path / "index", "--update")
    assert said == warning.replace("the 4 page files", "the 2 page files")
    (pages / "10").unlink()
    said = tse_ok_here("index", pages, tmp_path / "index", "--update")  # one page file past the end
    assert said == warning.replace("the 4 page files past it, up to 10, are", "the page file past it, 7, is")
    (pages / "7").unlink()
    for options in [(), ("--update",)]:  # the directory's end: nothing to say
        assert tse_ok_here("index", pages, tmp_path / "index", *options) == "", options
        assert (tmp_path / "index").read_bytes() == expected, options
