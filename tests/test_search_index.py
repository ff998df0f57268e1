"""The search index file (fulltext/store.py): the same whatever the workers and ranges, bounded on
hostile pages, refused when it belongs to another index."""

import os
import shutil
import threading
import time
import zlib
from pathlib import Path
from unittest import mock

import apsw
import pytest
import Stemmer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import run_tse
from tests.support import multilingual
from tests.support.fulldisk import files_of_at_most
from tests.support.inprocess import tse_ok_here
from tests.support.multilingual import write_fixture_directory
from tests.support.pages import write_pages
from tests.support.searchrows import opened, search_rows
from tests.support.searchsite import damaged_fts
from tse_scrapy.atomicfile import partial_path
from tse_scrapy.fulltext import matching, searcher, store
from tse_scrapy.fulltext.searcher import SearchIndex
from tse_scrapy.fulltext.store import ANCHOR_TERMS, search_path
from tse_scrapy.index import indexer
from tse_scrapy.index.docstore import docs_path
from tse_scrapy.index.engine import QueryEngine
from tse_scrapy.index.indexer import write_index_files
from tse_scrapy.index.storage import IndexReader
from tse_scrapy.index.update import update_index
from tse_scrapy.rules.queries import fts5bm25, searchsnippet
from tse_scrapy.rules.queries.searchquery import parse_search_query
from tse_scrapy.rules.queries.searchsnippet import snippet
from tse_scrapy.rules.text.pagefields import BODY_CHARACTERS, BODY_TERMS, MAX_LINKS
from tse_scrapy.search.app import _results

QUERIES = ["installation", "debian", "установка", "インストール", "설치", "安装", "debian -linux", '"boot loader"']


def answers(pages, indexfile):
    engine = QueryEngine(pages, IndexReader(indexfile))
    return {query: engine.answer(query, "relevance").ranked for query in QUERIES}


@pytest.fixture(scope="module")
def fixture_pages(tmp_path_factory):
    return write_fixture_directory(tmp_path_factory.mktemp("multilingual") / "pages")


@pytest.fixture(scope="module")
def fixture_indexed(fixture_pages, tmp_path_factory):
    """The fixture's pages indexed once with `tse index`: the index's directory (read only by the tests:
    ``indexed_copy``)."""
    directory = tmp_path_factory.mktemp("indexed")
    tse_ok_here("index", fixture_pages, directory / "index")  # (the command's code, in this process)
    return directory


# The text and its sidecar are never written in place (a build or an update renames new files over
# them), and the stamp names their inodes: linked, they stay as stamped; the rest is copied.
LINKED = ("index", "index.bin", "index.stamp")


def indexed_copy(fixture_indexed, out, *, linked=LINKED):
    """The index of the fixture's pages (as `tse index` wrote it) in *out*; its INDEXFILE."""
    out.mkdir(exist_ok=True)
    for path in fixture_indexed.iterdir():
        if path.name in linked:
            os.link(path, out / path.name)
        else:
            shutil.copy2(path, out / path.name)
    return out / "index"


@pytest.fixture(scope="module")
def one_run_index(fixture_pages, tmp_path_factory):
    """The fixture's pages indexed in one process, in one range."""
    indexfile = tmp_path_factory.mktemp("one") / "index"
    write_index_files(fixture_pages, indexfile, jobs=1, run_pages=1000)
    return indexfile


@pytest.mark.parametrize(
    "jobs, run_pages, sent_words", [(2, 1, None), (2, 7, None), (1, 3, None), (1, 2, 40), (2, 3, 150)]
)
def test_the_same_search_index_whatever_the_workers_and_ranges(
    fixture_pages, one_run_index, tmp_path, monkeypatch, jobs, run_pages, sent_words
):
    if sent_words is not None:  # the vocabulary's words a process remembers sending, forgotten often
        monkeypatch.setattr(indexer, "SENT_WORDS", sent_words)
    write_index_files(fixture_pages, tmp_path / "other", jobs=jobs, run_pages=run_pages)
    assert search_rows(tmp_path / "other") == search_rows(one_run_index)
    found = answers(fixture_pages, one_run_index)
    assert found == answers(fixture_pages, tmp_path / "other")
    assert all(found[query] for query in QUERIES[:6]), found


def test_the_stored_heads_give_the_snippets_worked_out(fixture_pages, fixture_indexed, tmp_path):
    indexed_copy(fixture_indexed, tmp_path)
    engine = QueryEngine(fixture_pages, IndexReader(tmp_path / "index"))
    index = engine.search_index
    with opened(tmp_path / "index") as db:
        stored = {doc_id for (doc_id,) in db.execute("SELECT doc_id FROM heads")}
    # Every page has one, in every script (Japanese, Chinese and Korean text too).
    assert stored == set(index.page_languages)
    used, results = 0, 0
    for query in QUERIES:
        answer = engine.answer(query, "relevance")
        shown = [doc_id for doc_id, _ in answer.ranked[:10]]
        results += len(shown)
        documents, heads = engine.documents(shown), index.snippet_heads(shown)
        assert documents.keys() == set(shown) and heads.keys() == stored & set(shown)
        for doc_id in shown:
            text, languages = documents[doc_id].text, (None, index.page_languages[doc_id] or None)
            assert text == engine.document(doc_id).text
            head = heads.get(doc_id)
            assert snippet(text, answer.marks, languages, head=head) == snippet(text, answer.marks, languages)
            # Each head is the text's, in its language: taken (not only read).
            used += head is not None and searchsnippet._head_serves(head, searchsnippet.first_read(text), languages)
    assert used == results >= 10


def test_a_search_index_without_heads_still_answers_with_snippets(fixture_pages, fixture_indexed, tmp_path):
    indexed_copy(fixture_indexed, tmp_path)
    engine = QueryEngine(fixture_pages, IndexReader(tmp_path / "index"))
    before = app_results(engine, "installation")
    with opened(tmp_path / "index") as db:
        db.execute("UPDATE heads SET head = 'not a head' WHERE doc_id % 2 = 0")
        db.execute("UPDATE heads SET head = zeroblob(300000) WHERE doc_id % 3 = 0")
    assert app_results(QueryEngine(fixture_pages, IndexReader(tmp_path / "index")), "installation") == before
    with opened(tmp_path / "index") as db:
        db.execute("DROP TABLE heads")
    assert app_results(QueryEngine(fixture_pages, IndexReader(tmp_path / "index")), "installation") == before


def test_a_search_takes_no_lock_on_the_files_it_reads(fixture_pages, tmp_path):
    """tse index changes no file of an index in place (it renames new ones over them): a search opens
    the search index and the document store immutable, and a lock another program holds on either
    (an exclusive one: no reader that locks could read) does not stop it."""
    write_index_files(fixture_pages, tmp_path / "index", jobs=1)
    expected = app_results(QueryEngine(fixture_pages, IndexReader(tmp_path / "index")), "installation")
    engine = QueryEngine(fixture_pages, IndexReader(tmp_path / "index"))  # its files opened at its first search
    holders = [apsw.Connection(str(path)) for path in (search_path(tmp_path / "index"), docs_path(tmp_path / "index"))]
    try:
        for holder in holders:
            holder.execute("BEGIN EXCLUSIVE")
        assert app_results(engine, "installation") == expected
    finally:
        for holder in holders:
            holder.close()


def test_the_search_index_opened_is_the_one_checked(fixture_pages, tmp_path, monkeypatch):
    # Another search index renamed over it while it is opened (a tse index --update ending then) is
    # not taken for the one its SPEC index was checked against: the connection checked is kept.
    write_index_files(fixture_pages, tmp_path / "a", jobs=1)
    write_index_files(write_pages(tmp_path / "other", {1: ("http://h/one", 0, b"pear")}), tmp_path / "b", jobs=1)
    opened_first = store.connect

    def connect_then_replaced(path, **options):
        db = opened_first(path, **options)
        if path == search_path(tmp_path / "a") and search_path(tmp_path / "b").exists():
            os.replace(search_path(tmp_path / "b"), path)
        return db

    monkeypatch.setattr(store, "connect", connect_then_replaced)
    reader = IndexReader(tmp_path / "a")
    index = SearchIndex.open(tmp_path / "a", reader.size, reader.digest)
    assert not isinstance(index, str), index
    assert dict(index.db.execute("SELECT key, value FROM meta"))["index_digest"] == reader.digest.hex()
    assert index.pages > 1  # the fixture's pages, not the other index's one
    index.close()


def app_results(engine, query):
    answer = engine.answer(query, "relevance")
    assert answer.ranked
    return [(result.doc_id, result.snippet, result.highlights) for result in _results(engine, answer, 1, 10)]


def test_hostile_pages_are_bounded(tmp_path):
    many_words = " ".join(f"w{number}" for number in range(BODY_TERMS * 3))
    many_links = "".join(f'<a href="/p{number}.html">link {number}</a>' for number in range(MAX_LINKS * 3))
    menu = '<a href="/target.html">' + "menu " * 300 + "</a>"  # cut at ANCHOR_CHARACTERS: 40 words
    pages = write_pages(
        tmp_path / "pages",
        {
            1: ("http://h/target.html", 0, b"<title>target</title>target page"),
            2: ("http://h/words.html", 1, f"<title>words</title><p>{many_words} zeppelinbeyond</p>".encode()),
            3: ("http://h/links.html", 1, f"<title>links</title>{many_links}".encode()),
            **{n: (f"http://h/menu{n}.html", 1, f"<title>menu {n}</title>{menu}".encode()) for n in range(4, 104)},
        },
    )
    tse_ok_here("index", pages, tmp_path / "index")
    with opened(tmp_path / "index") as db:
        (anchors,) = db.execute("SELECT terms FROM anchors WHERE doc_id = 1").fetchone()
        (links,) = db.execute("SELECT count(*) FROM links").fetchone()
    assert ANCHOR_TERMS - 40 < len(anchors.split()) <= ANCHOR_TERMS  # 100 pages link to it with 40 words each
    assert links == 1 + 100  # a row a page with links to its host
    engine = QueryEngine(pages, IndexReader(tmp_path / "index"))
    assert [doc for doc, _ in engine.answer(f"w{BODY_TERMS - 1}", "relevance").ranked] == [2]
    assert engine.answer("zeppelinbeyond", "relevance").ranked == []  # past the bound: not found
    # ... but kept for exclusions: `-word` leaves out a page holding the word anywhere.
    assert docs(engine, "words") == [2]
    assert docs(engine, "words -zeppelinbeyond") == docs(engine, f"words -w{BODY_TERMS * 2}") == []
    assert docs(engine, f'words -"w{BODY_TERMS - 1} w{BODY_TERMS}"') == []  # a phrase across the cut
    assert docs(engine, f'words -"w{BODY_TERMS} w{BODY_TERMS - 1}"') == docs(engine, "words -zeppelin") == [2]


def docs(engine, query):
    return [doc for doc, _ in engine.answer(query, "relevance").ranked]


def long_page(last_word: str, characters: int = BODY_CHARACTERS + 1000) -> bytes:
    """A page of more than BODY_CHARACTERS characters of text, *last_word* last."""
    return ('<html lang="en"><title>long</title><p>' + "filler " * (characters // 7) + last_word + "</p>").encode()


def test_exclusions_see_past_the_body_and_an_update_keeps_them(tmp_path):
    pages = {
        1: ("http://h/long.html", 0, long_page("aardvark")),
        2: ("http://h/short.html", 1, b'<html lang="en"><title>short</title><p>filler text</p>'),
    }
    write_pages(tmp_path / "pages", pages)
    tse_ok_here("index", tmp_path / "pages", tmp_path / "updated")
    engine = QueryEngine(tmp_path / "pages", IndexReader(tmp_path / "updated"))
    assert docs(engine, "filler") == [2, 1] or docs(engine, "filler") == [1, 2]
    assert docs(engine, "filler -aardvark") == [2]
    assert docs(engine, "filler -aardvarks") == [2]  # any form of the word (stemmed alike)
    # The long page changes: the word past its body is another; a short page becomes long.
    write_pages(tmp_path / "pages", {1: ("http://h/long.html", 0, long_page("zebra")), 2: pages[2]})
    write_pages(tmp_path / "pages", {2: ("http://h/short.html", 1, long_page("aardvark", BODY_CHARACTERS * 2))})
    said = tse_ok_here("index", tmp_path / "pages", tmp_path / "updated", "--update")
    assert "cannot update" not in said, said
    tse_ok_here("index", tmp_path / "pages", tmp_path / "fresh")
    # The same rows, the vocabulary's too (the words the long page lost, and its first spellings).
    updated, fresh = search_rows(tmp_path / "updated"), search_rows(tmp_path / "fresh")
    assert updated == fresh
    engine = QueryEngine(tmp_path / "pages", IndexReader(tmp_path / "updated"))
    assert docs(engine, "filler -aardvark") == [1] and docs(engine, "filler -zebra") == [2]


def test_an_excluded_words_other_language_stems_past_the_body_leave_a_page_in(tmp_path):
    # "the" is the Spanish stem of "their" (PyStemmer below): past a long English page's body it is the
    # English "the", and "-their" keeps the page; "-aardvark" (there too) leaves it out.
    assert Stemmer.Stemmer("spanish").stemWord("their") == "the"
    spanish = next(page for page in multilingual.fixture_pages() if page.name == "es/ch01s01.html")
    pages = {1: ("http://h/long.html", 0, long_page("the aardvark")), 2: (spanish.url, 1, spanish.body)}
    write_pages(tmp_path / "pages", pages)
    tse_ok_here("index", tmp_path / "pages", tmp_path / "index")
    engine = QueryEngine(tmp_path / "pages", IndexReader(tmp_path / "index"))
    assert engine.search_index.page_languages == {1: "en", 2: "es"}
    assert docs(engine, "filler") == [1]
    assert docs(engine, "filler -their") == [1]
    assert docs(engine, "filler -aardvark") == []


MANUAL = Path("/usr/share/debian-reference")  # debian-reference-en (make test installs it)


@pytest.mark.skipif(
    not (MANUAL / "ch01.en.html").is_file(), reason="debian-reference-en is missing (make test installs it)"
)
def test_a_page_matching_past_the_stored_text_shows_where(tmp_path):
    # The Debian Reference's first chapter (86,000 characters of text): "workstation" only past the
    # document store's text, which results show (at about 12,000 characters).
    chapters = [MANUAL / f"ch0{number}.en.html" for number in (1, 2)]
    pages = {
        number: (f"https://www.debian.org/doc/manuals/debian-reference/{path.name}", 0, path.read_bytes())
        for number, path in enumerate(chapters, start=1)
    }
    write_pages(tmp_path / "pages", pages)
    tse_ok_here("index", tmp_path / "pages", tmp_path / "index")
    engine = QueryEngine(tmp_path / "pages", IndexReader(tmp_path / "index"))
    assert "workstation" not in engine.document(1).text.lower()
    (shown,) = [result for result in app_results(engine, "workstation") if result[0] == 1]
    _, snippet_text, highlights = shown
    assert snippet_text.startswith("… ")
    assert {snippet_text[start:end].lower() for start, end in highlights} == {"workstation"}
    # Deeper: "udpkg" is at character 67,229 of the second chapter's 97,851 (a snippet of its table of
    # contents, nothing marked, while the rest kept was 30,000 characters: a tester's find).
    (shown,) = [result for result in app_results(engine, "udpkg") if result[0] == 2]
    assert {shown[1][start:end].lower() for start, end in shown[2]} == {"udpkg"}, shown[1]
    # A damaged or overlong row, or none: the snippet of the stored text, unmarked (no error).
    unmarked = engine.document(1).text[:100]
    for damage in ("UPDATE rests SET rest = 'not compressed'", "UPDATE rests SET rest = ?", "DROP TABLE rests"):
        with opened(tmp_path / "index") as db:
            db.execute(damage, (zlib.compress(b"work" * 5_000_000),) if "?" in damage else ())
        engine = QueryEngine(tmp_path / "pages", IndexReader(tmp_path / "index"))
        (shown,) = [result for result in app_results(engine, "workstation") if result[0] == 1]
        assert shown[1].startswith(unmarked) and not shown[2]
        assert all(len(rest) <= searcher.REST_BYTES for rest in engine.search_index.rests([1, 2]).values())
    tse_ok_here("index", tmp_path / "pages", tmp_path / "index")
    # An update of a page (the second chapter becomes the third) keeps the rows a build writes.
    write_pages(tmp_path / "pages", {2: (pages[2][0], 0, (MANUAL / "ch03.en.html").read_bytes())})
    tse_ok_here("index", tmp_path / "pages", tmp_path / "index", "--update")
    tse_ok_here("index", tmp_path / "pages", tmp_path / "fresh")
    updated, fresh = search_rows(tmp_path / "index"), search_rows(tmp_path / "fresh")
    assert updated == fresh and len(fresh["rests"]) == 2


def test_a_search_index_of_another_index_is_not_used(fixture_pages, fixture_indexed, tmp_path):
    indexed_copy(fixture_indexed, tmp_path, linked=())  # (copies: the text is written to below)
    shutil.copy2(search_path(fixture_indexed / "index"), search_path(tmp_path / "other"))
    search_path(tmp_path / "other").replace(search_path(tmp_path / "index"))
    (tmp_path / "index").write_bytes((tmp_path / "index").read_bytes() + b"zzzz 1 1\n")
    engine = QueryEngine(fixture_pages, IndexReader(tmp_path / "index"))
    answer = engine.answer("installation", "relevance")
    assert answer.error and "run tse index again" in answer.error


@pytest.mark.parametrize("where", ["the SPEC index's merge", "the search index's thread"])
def test_an_error_at_the_end_stops_the_search_index_thread_and_changes_nothing(
    fixture_pages, fixture_indexed, tmp_path, monkeypatch, where
):
    # The last part of a build: the SPEC index merged while a thread merges the search index's segments.
    indexed_copy(fixture_indexed, tmp_path)
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()}
    merging = threading.Event()
    merged_in_thread = []
    merge_segments = store._merge_segments

    def merge_in_thread(db, tables=store.FTS_TABLES):
        if threading.current_thread() is not threading.main_thread():
            merging.set()
            if where == "the search index's thread":
                raise apsw.FullError("database or disk is full")
            time.sleep(1)  # still at work when the SPEC index's merge fails
            merged_in_thread.append(tables)
        return merge_segments(db, tables)

    def failing_merge(runs, width):
        assert merging.wait(10)
        raise KeyboardInterrupt

    monkeypatch.setattr(store, "_merge_segments", merge_in_thread)
    if where == "the SPEC index's merge":
        monkeypatch.setattr(indexer, "merge_runs", failing_merge)
    with pytest.raises(KeyboardInterrupt if where == "the SPEC index's merge" else apsw.FullError):
        write_index_files(fixture_pages, tmp_path / "index", jobs=2)
    assert not [thread for thread in threading.enumerate() if thread.name.startswith("search-index")]
    if where == "the SPEC index's merge":  # the thread stopped after the table it was merging
        assert merged_in_thread == [store.PAGES_FTS_TABLES[:1]]
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(before)  # no partial file left
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir()} == before


@pytest.mark.parametrize("limit", [10_000, 100_000, 300_000, 600_000])
def test_an_index_that_cannot_be_written_fails_in_one_line_and_changes_nothing(
    fixture_pages, fixture_indexed, tmp_path, limit
):
    out = tmp_path / "out"
    indexed_copy(fixture_indexed, out)
    before = {path.name: path.read_bytes() for path in out.iterdir()}
    # 600 KB: only the search index fails (the document store fits, and so does the spilled fields
    # file of the one range, about 450 KB); less, the store or the spilled fields too.
    assert len(before["index.search"]) > 600_000 > len(before["index.docs"])
    result = run_tse("index", fixture_pages, out / "index", "--jobs", "2", preexec_fn=files_of_at_most(limit))
    assert result.returncode == 1
    stderr = result.stderr.decode()
    assert "Traceback" not in stderr and len(stderr.splitlines()) == 1, stderr
    if limit == 600_000:
        assert f"{out / 'index'}.search: " in stderr
    assert {path.name: path.read_bytes() for path in out.iterdir()} == before  # no partial file left


def _failed_update(fixture_pages, fixture_indexed, tmp_path, block=None, **options):
    """The fixture's pages indexed (copies of both, the pages' times kept), one changed ("orchard"
    added), then ``tse index --update`` run with *options* after *block* (given the index's directory;
    returns what undoes it, run after the update): the update must fail in one line, every file of the
    index as it was; then an update without hindrance finds the change."""
    pages = tmp_path / "pages"
    shutil.copytree(fixture_pages, pages)
    out = tmp_path / "out"
    indexed_copy(fixture_indexed, out)
    before = {path.name: path.read_bytes() for path in out.iterdir()}
    (pages / "3").write_bytes((pages / "3").read_bytes() + b" <p>orchard</p>")
    unblock = block(out) if block else None
    result = run_tse("index", pages, out / "index", "--update", **options)
    assert result.returncode == 1
    stderr = result.stderr.decode()
    assert "Traceback" not in stderr and len(stderr.splitlines()) == 1, stderr
    if unblock:
        unblock()
    assert {path.name: path.read_bytes() for path in out.iterdir()} == before  # no partial file left
    tse_ok_here("index", pages, out / "index", "--update")
    assert docs(QueryEngine(pages, IndexReader(out / "index")), "orchard") == [3]
    return before


@pytest.mark.parametrize("limit", [100_000, 300_000, 600_000])
def test_an_update_that_cannot_be_written_fails_in_one_line_and_changes_nothing(
    fixture_pages, fixture_indexed, tmp_path, limit
):
    before = _failed_update(fixture_pages, fixture_indexed, tmp_path, preexec_fn=files_of_at_most(limit))
    # Every limit is under the search index's size: its copy fails, before any file is put in place.
    assert len(before["index.search"]) > 600_000


def test_an_update_whose_other_files_cannot_be_written_leaves_the_search_index_as_it_was(
    fixture_pages, fixture_indexed, tmp_path
):
    # The search index is written (to its partial file) first; then the store cannot be: a directory
    # stands where its partial file goes.  The search index's partial file must be gone too.
    def block(out):
        blocker = partial_path(out / "index.docs")
        blocker.mkdir()
        return blocker.rmdir

    _failed_update(fixture_pages, fixture_indexed, tmp_path, block)


def test_an_index_in_a_directory_whose_name_is_not_utf8(fixture_pages, tmp_path):
    out = tmp_path / os.fsdecode(b"caf\xe9")  # Latin-1 bytes, as an old file system may hold
    out.mkdir()
    result = run_tse("index", fixture_pages, out / "index", "--jobs", "2")
    assert result.returncode == 0, result.stderr
    assert run_tse("index", fixture_pages, out / "index", "--update").returncode == 0
    found = run_tse("query", fixture_pages, out / "index", "--rank", "relevance", input=b"installation\n")
    assert found.returncode == 0 and b"Matches" in found.stdout, found.stdout


def test_an_update_writes_anew_a_search_index_damaged_where_every_search_reads(
    fixture_pages, fixture_indexed, tmp_path
):
    index = indexed_copy(fixture_indexed, tmp_path)
    damaged_fts(index)  # its meta as written: the SPEC index's size and digest match
    refused = run_tse("query", fixture_pages, index, "--rank", "relevance", input=b"installation\n")
    assert refused.returncode == 1 and refused.stdout == b"", refused
    assert refused.stderr.decode().count("\n") == 1 and "cannot be read" in refused.stderr.decode()
    # Nothing else changed, yet the update does not leave it so: it writes every file anew.
    said = tse_ok_here("index", fixture_pages, index, "--update")  # (the command's code, in this process)
    assert "cannot update" in said and "indexing every page" in said
    found = run_tse("query", fixture_pages, index, "--rank", "relevance", input=b"installation\n")
    assert found.returncode == 0 and b"Matches" in found.stdout and found.stderr == b"", found


def test_a_search_index_damaged_once_opened_is_an_answer_not_a_traceback(fixture_pages, fixture_indexed, tmp_path):
    indexed_copy(fixture_indexed, tmp_path)
    engine = QueryEngine(fixture_pages, IndexReader(tmp_path / "index"))
    assert engine.answer("installation", "relevance").ranked  # opened, its checks passed
    with open(search_path(tmp_path / "index"), "r+b") as search:  # its FTS5 pages zeroed, its meta kept
        size = search.seek(0, os.SEEK_END)
        search.seek(size // 4)
        search.write(bytes(size // 2))
    answers = [engine.answer(query, "relevance") for query in QUERIES]
    assert any(answer.error and "cannot read the search index" in answer.error for answer in answers), answers


_TARGETS = ["http://h/a", "http://h/b", "http://h/c", "http://elsewhere/"]
_ANCHOR = st.text(alphabet="xyz", min_size=1, max_size=3)


# (In-process and cheap, but a small space: three targets, three letters; 25 new examples a run.  Its
# lists are drawn slowly on a loaded machine: a draw stalled 2 s failed the health check, not the test.)
@settings(max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(
    links=st.lists(
        st.lists(st.tuples(st.sampled_from(_TARGETS), st.lists(_ANCHOR, min_size=1, max_size=40).map(" ".join))),
        max_size=120,
    ),
)
def test_anchors_are_gathered_in_page_order_to_their_bound(links):
    pages_at = {"http://h/a": [1], "http://h/b": [2, 3], "http://h/c": [4]}  # b: a URL two pages share
    sources = list(enumerate(links, start=1))  # page 1 links to itself too: not its anchor
    # As SearchIndexWriter.finish's docstring says: each target's anchors in the linking pages'
    # order, a page's links in their order, until a target has ANCHOR_TERMS terms.
    expected: dict[int, list[str]] = {}
    held = dict.fromkeys(pages_at, 0)
    for source, page_links in sources:
        for target, terms in page_links:
            if target in pages_at and held[target] + len(terms.split()) <= ANCHOR_TERMS:
                held[target] += len(terms.split())
                for doc_id in pages_at[target]:
                    if doc_id != source:
                        expected.setdefault(doc_id, []).append(terms)
    gathered: dict[int, list[str]] = {}
    for doc_id, terms in store.anchor_pieces(pages_at, sources):  # (each page's joined in this order)
        gathered.setdefault(doc_id, []).append(terms)
    assert gathered == expected


def anchor_terms(indexfile) -> dict[int, str]:
    with opened(indexfile) as db:
        return dict(db.execute("SELECT doc_id, terms FROM anchors"))


def test_links_with_tabs_and_newlines_in_their_urls(tmp_path):
    # A browser (and the crawl) drops tabs and newlines inside a URL: the anchor text reaches the page.
    pages = {
        1: ("http://h/target.html", 0, b"<title>target</title>the target page"),
        2: ("http://h/a.html", 1, b'<title>a</title><a href="/tar\nget.html">zeppelin</a> <a href="/x\ty.html">x</a>'),
        3: ("http://h/xy.html", 1, b"<title>b</title>another page"),
    }
    write_pages(tmp_path / "pages", pages)
    tse_ok_here("index", tmp_path / "pages", tmp_path / "index")
    assert anchor_terms(tmp_path / "index") == {1: "zeppelin", 3: "x"}
    write_pages(
        tmp_path / "pages", {3: ("http://h/xy.html", 1, b'<title>b</title><a href="/target\r\n.html">airship</a>')}
    )
    said = tse_ok_here("index", tmp_path / "pages", tmp_path / "index", "--update")
    assert "cannot update" not in said, said
    assert anchor_terms(tmp_path / "index") == {1: "zeppelin airship", 3: "x"}
    tse_ok_here("index", tmp_path / "pages", tmp_path / "fresh")
    updated, fresh = search_rows(tmp_path / "index"), search_rows(tmp_path / "fresh")
    assert updated == fresh


def test_a_query_words_forms_are_its_stems_in_each_language_of_the_index():
    # PyStemmer itself is the oracle; each language's forms are kept apart (the memo is by both).
    english, french = Stemmer.Stemmer("english"), Stemmer.Stemmer("french")
    for word in ("installations", "système"):
        assert matching.word_forms(word, ["en"]) == list(dict.fromkeys([word, english.stemWord(word)]))
        assert matching.word_forms(word, ["fr"]) == list(dict.fromkeys([word, french.stemWord(word)]))
    words = ["installations", "guides"]
    rows = [words, [english.stemWord(word) for word in words], [french.stemWord(word) for word in words]]
    assert len({" ".join(row) for row in rows}) == 3
    assert matching._phrase(words, ["en", "fr"]) == " OR ".join(f'"{" ".join(row)}"' for row in rows)


@pytest.mark.parametrize(
    ("words", "forms", "languages", "restricted"),
    [
        # Snowball's stems, as written: "in" is the Catalan stem of "init", "instal" the English and
        # "install" the French one of "installation"; German keeps "installation" whole.
        (["init"], ["init", "in"], ("ca", "en"), {"in": {"ca"}}),
        (
            ["installation"],
            ["installation", "instal", "install"],
            ("de", "en", "fr"),
            {"instal": {"en"}, "install": {"fr"}},
        ),
        # The stem of every language of the index, or the word itself: matched in any.
        (["installation"], ["installation", "instal"], ("en",), {}),
        (["books"], ["books", "book"], ("da", "en"), {}),
        # A correction's two words: a form is restricted to the languages it is a stem of either in.
        (["installer", "installed"], ["installer", "instal", "installed"], ("en", "fr"), {"instal": {"en"}}),
        # A language without a stemmer (its pages' words are as written) restricts nothing.
        (["installation"], ["installation", "instal"], ("en", "ja", "zh"), {}),
        ([], [], (), {}),
    ],
)
def test_the_forms_a_word_matches_in_some_languages_only(words, forms, languages, restricted):
    assert matching.stemmed_only_in(words, forms, languages) == restricted


def test_forms_restricted_are_those_not_every_languages_stem_of_a_word():
    # PyStemmer is the oracle: a form is restricted to exactly the languages whose stem of a word it is.
    languages = ("ca", "de", "en", "es", "fr", "it", "ja", "ru")
    stemmers = {
        language: Stemmer.Stemmer(name)
        for language, name in zip(
            languages, ("catalan", "german", "english", "spanish", "french", "italian", None, "russian"), strict=True
        )
        if name
    }
    for word in ("init", "unix", "partito", "installation", "their", "does", "установки"):
        stems = {
            language: stemmers[language].stemWord(word) if language in stemmers else word for language in languages
        }
        forms = list(dict.fromkeys([word, *stems.values()]))
        expected = {
            form: {language for language, stem in stems.items() if stem == form}
            for form in forms
            if form != word and sum(stem == form for stem in stems.values()) < len(stemmers)
        }
        assert matching.stemmed_only_in([word], forms, languages) == expected, word


def test_the_phrase_bonus_leaves_out_only_the_variants_no_page_can_hold(fixture_pages, fixture_indexed, tmp_path):
    # The oracle: FTS5's own count of each term's pages, and its matches of the phrase with every variant.
    indexed_copy(fixture_indexed, tmp_path)
    index = QueryEngine(fixture_pages, IndexReader(tmp_path / "index")).search_index
    dropped, matched = 0, set()
    for line in ("installing debian", "the installation system", "debian reference", "установка системы"):
        query = parse_search_query(line)
        words = [word for clause in query.clauses for word in clause.words]
        every = matching._phrase(words, index.languages).split(" OR ")
        held = matching.compile_query(query, index.vocabulary, index.languages).phrase
        kept = held.split(" OR ") if held else []
        for variant in every:
            counts = [
                index.db.execute("SELECT count(*) FROM fts WHERE fts MATCH ?", (f'"{term}"',)).fetchone()[0]
                for term in variant.strip('"').split(" ")
            ]
            assert (variant in kept) == all(counts), (line, variant, counts)
        dropped += len(every) - len(kept)
        matched |= index._matching(" OR ".join(every))
        assert index._matching(" OR ".join(every)) == (index._matching(held) if held else set())
    assert dropped and matched  # (some variant was a stem no page has; some phrase is a page's)


@pytest.mark.parametrize("counted", [True, False], ids=["term_counts", "fts5vocab"])
def test_pages_counted_together_are_those_counted_one_by_one(
    fixture_pages, fixture_indexed, tmp_path, monkeypatch, counted
):
    # The oracle: FTS5's own count of the rows matching each term as a phrase; the counts read from
    # the index's term_counts table (written by tse index) or counted by fts5vocab (an index without it).
    indexed_copy(fixture_indexed, tmp_path)
    monkeypatch.setattr(matching, "COUNTED_TOGETHER", 7)  # several statements
    with opened(tmp_path / "index") as db:
        words = [word for (word,) in db.execute("SELECT word FROM vocabulary ORDER BY word LIMIT 40")]
        terms = [
            *words,
            "installation",
            "instal",
            "установк",
            "インス",
            "书店",
            "설치",
            "absentword",
            "",
            "installation",
        ]
        for table in ("fts", "titles_fts", "anchors_fts"):
            expected = {}
            for term in terms:
                quoted = '"' + term.replace('"', '""') + '"'
                sql = f"SELECT count(*) FROM {table} WHERE {table} MATCH ?"
                expected[(term, table)] = db.execute(sql, (quoted,)).fetchone()[0]
            vocabulary = matching.Vocabulary(db, counted)
            vocabulary.count(terms, table)
            assert vocabulary._documents == expected  # counted together, none left to look up one by one
            # Kept to DOCUMENT_COUNTS_KEPT: cleared on the way, and still right.
            monkeypatch.setattr(matching, "DOCUMENT_COUNTS_KEPT", 10)
            vocabulary = matching.Vocabulary(db, counted)
            vocabulary.count(terms, table)
            assert 0 < len(vocabulary._documents) <= 10
            assert {(term, table): vocabulary.documents(term, table) for term in terms} == expected
            monkeypatch.undo()
            monkeypatch.setattr(matching, "COUNTED_TOGETHER", 7)
            if table == "fts":
                assert sum(count > 0 for count in expected.values()) > 10  # not a test of absent words only


def test_term_counts_are_read_only_when_counted_with_the_index_they_belong_with(
    fixture_pages, fixture_indexed, tmp_path
):
    indexed_copy(fixture_indexed, tmp_path)
    engine = QueryEngine(fixture_pages, IndexReader(tmp_path / "index"))
    assert isinstance(engine.search_index, SearchIndex) and engine.search_index.vocabulary._counted
    expected = engine.answer("installation debian", "relevance").ranked
    assert expected
    # As a version of tse index that does not count leaves it after an update: the counts of an
    # older index, not to be read; the terms are counted by FTS5 then, and answers are the same.
    with opened(tmp_path / "index") as db:
        db.execute("UPDATE term_counts SET pages = pages + 1000")
        db.execute("UPDATE meta SET value = 'older' WHERE key = ?", (store.COUNTED_WITH,))
    engine = QueryEngine(fixture_pages, IndexReader(tmp_path / "index"))
    assert isinstance(engine.search_index, SearchIndex) and not engine.search_index.vocabulary._counted
    assert engine.answer("installation debian", "relevance").ranked == expected


def test_term_counts_left_by_an_update_that_does_not_count_are_not_read(tmp_path, monkeypatch):
    # Page 1's title and body swap words: the SPEC index (words and counts) stays the same, the
    # titles' counts change ("foo" on one title, not two; "bar" on one).  An update by a version of
    # tse index that does not count (no _count_terms) leaves the counts of before: not to be read.
    def page(title, body):
        return f"<html><title>{title}</title><p>{body}</p></html>".encode()

    write_pages(
        tmp_path / "pages",
        {1: ("http://h/a.html", 0, page("foo", "bar")), 2: ("http://h/b.html", 0, page("foo", "baz"))},
    )
    write_index_files(tmp_path / "pages", tmp_path / "index", jobs=1)
    write_pages(tmp_path / "pages", {1: ("http://h/a.html", 0, page("bar", "foo"))})
    monkeypatch.setattr(store, "_count_terms", lambda db: None)
    assert update_index(tmp_path / "pages", tmp_path / "index") is None
    monkeypatch.undo()
    engine = QueryEngine(tmp_path / "pages", IndexReader(tmp_path / "index"))
    assert isinstance(engine.search_index, SearchIndex) and not engine.search_index.vocabulary._counted
    assert engine.search_index.vocabulary.documents("foo", "titles_fts") == 1
    # Counted again by an update that counts: read.
    write_pages(tmp_path / "pages", {2: ("http://h/b.html", 0, page("foo", "qux"))})
    assert update_index(tmp_path / "pages", tmp_path / "index") is None
    engine = QueryEngine(tmp_path / "pages", IndexReader(tmp_path / "index"))
    assert isinstance(engine.search_index, SearchIndex) and engine.search_index.vocabulary._counted
    assert engine.search_index.vocabulary.documents("foo", "titles_fts") == 1
    assert engine.search_index.vocabulary.documents("bar", "titles_fts") == 1


def test_term_counts_said_counted_but_gone_are_not_read(fixture_pages, fixture_indexed, tmp_path):
    indexed_copy(fixture_indexed, tmp_path)
    with opened(tmp_path / "index") as db:
        db.execute("DROP TABLE term_counts")
    engine = QueryEngine(fixture_pages, IndexReader(tmp_path / "index"))
    assert isinstance(engine.search_index, SearchIndex) and not engine.search_index.vocabulary._counted
    assert engine.answer("installation debian", "relevance").ranked


def test_one_statement_or_two_give_the_same_answers(fixture_pages, fixture_indexed, tmp_path, monkeypatch):
    """Most queries are matched and scored by one FTS5 statement (their scoring expression is their
    matching one); the same answers as a statement each."""
    indexed_copy(fixture_indexed, tmp_path)
    queries = [*QUERIES, "debian installation guide", "安装 debian", "установка debian", "debain", "the debian"]
    statements = {"scored": 0, "matched": 0}

    def counting(name, method):
        def counted(self, *arguments):
            statements[name] += 1
            return method(self, *arguments)

        return counted

    monkeypatch.setattr(SearchIndex, "_scores", counting("scored", SearchIndex._scores))
    monkeypatch.setattr(SearchIndex, "_matching", counting("matched", SearchIndex._matching))
    one = {
        (query, language): engine_answer(fixture_pages, tmp_path / "index", query, language)
        for query in queries
        for language in (None, "en", "ja")
    }
    assert statements["scored"] >= 24
    matched = statements["matched"]
    # The matching expression written another way (the same pages): a statement each.
    written_apart = matching.Compiled.all_of_but_everywhere
    monkeypatch.setattr(
        matching.Compiled, "all_of_but_everywhere", lambda self, *arguments: f"({written_apart(self, *arguments)})"
    )
    two = {
        (query, language): engine_answer(fixture_pages, tmp_path / "index", query, language)
        for query in queries
        for language in (None, "en", "ja")
    }
    assert statements["matched"] - matched > matched
    assert two == one
    assert sum(bool(ranked) for ranked, _ in one.values()) >= 20
    # The language filter keeps some pages and leaves out others.
    assert any(one[query, "ja"][0] != one[query, None][0] and one[query, "ja"][0] for query in queries)


def engine_answer(pages, indexfile, query, language=None):
    answer = QueryEngine(pages, IndexReader(indexfile)).answer(query, "relevance", language=language)
    return answer.ranked, answer.partial


def _indexed_english_pages(tmp_path, texts: dict[int, str]) -> QueryEngine:
    """English pages of *texts* (docID: text) written under tmp_path/pages and indexed into tmp_path/index."""
    _write_english_pages(tmp_path, texts)
    write_index_files(tmp_path / "pages", tmp_path / "index", jobs=1)
    return QueryEngine(tmp_path / "pages", IndexReader(tmp_path / "index"))


def _updated_and_built_afresh(tmp_path, texts: dict[int, str]) -> list[QueryEngine]:
    """*texts* written over those pages, tmp_path/index updated and tmp_path/fresh built: their engines."""
    _write_english_pages(tmp_path, texts)
    assert update_index(tmp_path / "pages", tmp_path / "index") is None
    write_index_files(tmp_path / "pages", tmp_path / "fresh", jobs=1)
    return [QueryEngine(tmp_path / "pages", IndexReader(tmp_path / index)) for index in ("index", "fresh")]


def _write_english_pages(tmp_path, texts: dict[int, str]) -> None:
    page = "<html lang='en'><title>t</title><p>{}</p></html>"
    write_pages(
        tmp_path / "pages", {n: (f"http://h/{n}.html", 0, page.format(text).encode()) for n, text in texts.items()}
    )


def test_a_word_is_a_pages_word_after_an_update_as_after_a_build(tmp_path):
    # is_word answers from the words the pages have now: an update that drops the only page holding
    # "kernle" answers as a fresh build.
    engine = _indexed_english_pages(tmp_path, {1: "kernel build 1", 2: "a kernle typo"})
    assert isinstance(engine.search_index, SearchIndex) and engine.search_index.vocabulary.is_word("kernle")
    for engine in _updated_and_built_afresh(tmp_path, {2: "a kernel typo mended"}):
        assert isinstance(engine.search_index, SearchIndex)
        vocabulary = engine.search_index.vocabulary
        assert not vocabulary.is_word("kernle") and vocabulary.is_word("kernel") and vocabulary.is_word("mended")


def test_a_word_an_update_leaves_no_page_holding_is_no_correction_as_after_a_build(tmp_path):
    # A page changes one form of a word for another with its stem ("frobnicating" to "frobnicated"):
    # the old one, whose stem the index still holds, must not be offered (a "Did you mean" to a word no
    # page has), as a fresh build offers nothing.
    engine = _indexed_english_pages(tmp_path, {1: "frobnicating widgets", 2: "other text"})
    answer = engine.answer("frobnicatingg", "relevance")
    assert answer.corrections == {"frobnicatingg": "frobnicating"} and [d for d, _ in answer.ranked] == [1]

    def corrected(engine: QueryEngine) -> list[tuple[dict[str, str], list[tuple[int, float]]]]:
        answers = [engine.answer(query, "relevance") for query in ("frobnicatingg", "frobnicatng", "frobnicatedd")]
        return [(answer.corrections, answer.ranked) for answer in answers]

    updated, fresh = map(corrected, _updated_and_built_afresh(tmp_path, {1: "frobnicated widgets"}))
    assert updated == fresh
    assert fresh[0] == ({}, [])
    assert fresh[2] == ({"frobnicatedd": "frobnicated"}, fresh[2][1])


def test_a_search_index_of_another_analysis_is_not_read_and_an_update_indexes_every_page(
    fixture_pages, fixture_indexed, tmp_path
):
    # Its terms are another analysis's (an older tse, another Unicode or Snowball version): a query's
    # would not meet them, nor would an update's pages the others'.
    indexed_copy(fixture_indexed, tmp_path)
    before = search_rows(tmp_path / "index")
    with opened(tmp_path / "index") as db:
        db.execute("UPDATE meta SET value = 'older' WHERE key = 'analysis'")
    engine = QueryEngine(fixture_pages, IndexReader(tmp_path / "index"))
    problem = f"{search_path(tmp_path / 'index')} was written by another version of tse index"
    assert engine.search_index == f"{problem}: run tse index again"
    assert update_index(fixture_pages, tmp_path / "index") == problem
    result = run_tse("index", fixture_pages, tmp_path / "index", "--update")
    assert result.returncode == 0
    assert result.stderr.decode().startswith("tse index: cannot update: ")
    assert search_rows(tmp_path / "index") == before
    engine = QueryEngine(fixture_pages, IndexReader(tmp_path / "index"))
    assert isinstance(engine.search_index, SearchIndex)


def test_the_phrases_counted_and_kept_hold_a_bounded_number_of_words(
    fixture_pages, fixture_indexed, tmp_path, monkeypatch
):
    # A phrase can be a hyphenated word of hundreds: a query of them, each new, kept 0.8 GB in 30 s
    # when only the phrases were counted.
    indexed_copy(fixture_indexed, tmp_path)
    engine = QueryEngine(fixture_pages, IndexReader(tmp_path / "index"))
    vocabulary = engine.search_index.vocabulary
    phrases = [("debian", "gnu", "linux"), ("the", "debian"), ("instal", "debian", "gnu", "linux"), ("zzz", "yyy")]
    expected = [vocabulary.holding(phrase) for phrase in phrases]
    assert expected[0] > 0
    monkeypatch.setattr(matching, "PHRASE_WORDS_KEPT", 5)
    fresh = QueryEngine(fixture_pages, IndexReader(tmp_path / "index")).search_index.vocabulary
    for _ in range(2):
        assert [fresh.holding(phrase) for phrase in phrases] == expected
        assert fresh._phrase_words <= 5 and sum(map(len, (p for p, _ in fresh._phrases))) == fresh._phrase_words


def test_a_long_expression_s_phrases_are_not_kept():
    long_expression = " OR ".join(f'"w{n} x{n}"' for n in range(200))
    searcher._kept_expression_phrases.cache_clear()
    assert searcher._expression_phrases(long_expression) == tuple(fts5bm25.expression_phrases(long_expression))
    assert searcher._kept_expression_phrases.cache_info().currsize == 0
    assert searcher._expression_phrases('"w1 x1" OR "w2"') == (("w1", "x1"), ("w2",))
    assert searcher._kept_expression_phrases.cache_info().currsize == 1


def test_a_character_ending_a_run_is_found_and_excluded(tmp_path):
    # Real text of the Debian reference (ja): 章 ends the run 序章, 項 the run 免責事項.  A query of one
    # character matches the bigrams it starts, and a page holding it anywhere (phrases_fts's characters:
    # also where it ends a run, starting no bigram); excluded, a page holding it anywhere is left out.
    def page(text):
        return f'<html lang="ja"><head><title>t</title></head><body><p>{text}</p></body></html>'.encode()

    write_pages(
        tmp_path / "pages",
        {
            1: ("http://h/1.html", 0, page("目次 序章 1. 免責事項 2. Debian とはなにか")),
            2: ("http://h/2.html", 0, page("2. Debian とはなにか 3. 本書について")),
            3: ("http://h/3.html", 0, page("章立て Debian")),
        },
    )
    write_index_files(tmp_path / "pages", tmp_path / "index", jobs=1)
    engine = QueryEngine(tmp_path / "pages", IndexReader(tmp_path / "index"))

    def found(query):
        return sorted(doc_id for doc_id, _ in engine.answer(query, "relevance").ranked)

    def ranked(query):
        answer = engine.answer(query, "relevance")
        return [doc_id for doc_id, _ in answer.ranked], answer.partial

    assert found("Debian") == [1, 2, 3]
    assert found("Debian -章") == found('Debian -"章"') == [2]
    assert found("Debian -項") == found('Debian -"項"') == [2, 3]
    # Where it starts a bigram (章立), the page ranks above one holding it only where a run ends (序章).
    # Quoted, one character is found as unquoted (not only where it stands alone between two runs).
    assert ranked("章") == ranked('"章"') == ([3, 1], False)
    assert ranked("項") == ranked("項 OR 項") == ([1], False)
    assert ranked("章 OR 項") == ([3, 1], False)
    # With other words, excluded ones, and as a partial match.
    assert found("章 Debian") == found("Debian 章") == [1, 3]
    assert found("章 免責") == found("章 -立て") == found("章 1 -本書") == [1]
    assert found("章 項") == [1]
    assert found("章 -Debian") == found("章 -章") == found("項 -目次") == []
    assert ranked("項 nonesuchword") == ([1], True)
    assert ranked("章 なにか") == ([1], False)
    # Among other alternatives (a word, a phrase), and typed quoted and not (one group, not two).
    assert found("章 OR nonesuchword") == found('章 OR "nonesuch word"') == found('nonesuchword OR "章"') == [1, 3]
    assert found("項 OR 立て") == found('"項" OR "章立"') == [1, 3]
    assert found("(章 OR nonesuchword) 免責") == found('"免責事項" 章 OR 立て') == found('"目次" "章" OR "立て"') == [1]
    assert engine.answer('章 "章"', "relevance").ranked == engine.answer("章", "relevance").ranked
    # A phrase ending in one character: the bigrams it starts stand after the others ("目次 序章").
    assert found('"目次 序"') == found("目次 序") == [1]


def test_a_character_ending_a_run_adds_nothing_and_comes_after(tmp_path):
    # A page holding the character only where a run ends (序章) is scored by the query's words it holds
    # (the character adds nothing, and takes nothing away), and comes after the pages where it starts a
    # bigram (章立て), which rank as they would without it.
    def page(text):
        return f'<html lang="ja"><head><title>t</title></head><body><p>{text}</p></body></html>'.encode()

    pages = {
        1: ("http://h/1.html", 0, page("序章 kernel kernel kernel linux")),
        2: ("http://h/2.html", 0, page("章立て kernel " + "とはなにか " * 40)),
    }
    for doc_id in range(3, 12):
        pages[doc_id] = (f"http://h/{doc_id}.html", 0, page(f"目次 {doc_id} とはなにか"))
    write_pages(tmp_path / "pages", pages)
    write_index_files(tmp_path / "pages", tmp_path / "index", jobs=1)
    engine = QueryEngine(tmp_path / "pages", IndexReader(tmp_path / "index"))

    def scores(query):
        return dict(engine.answer(query, "relevance").ranked)

    alone = scores("kernel linux")
    assert alone[1] > 0
    assert scores("章 kernel linux")[1] == pytest.approx(alone[1])
    assert scores("linux 章")[1] == pytest.approx(scores("linux")[1])
    assert list(scores("kernel")) == [1, 2]  # (in rank order)
    assert list(scores("章 kernel")) == [2, 1]


def test_a_page_answering_through_a_character_ending_a_run_comes_after_exact_phrases(tmp_path):
    # `"running dogs" OR 章`: pages 2 and 4 hold the phrase only stemmed (run dog), which the quotes
    # refuse, and 章 only where a run ends: they answer through 章 alone, after the pages holding the
    # phrase as typed (1) or 章 starting a bigram (3).
    def page(text):
        return f'<html lang="en"><head><title>t</title></head><body><p>{text}</p></body></html>'.encode()

    texts = {1: "running dogs everywhere", 2: "run dog 序章", 3: "章立て", 4: "run dog run dog 序章 dogs"}
    pages = {doc_id: (f"http://h/{doc_id}.html", 0, page(text)) for doc_id, text in texts.items()}
    write_pages(tmp_path / "pages", pages)
    write_index_files(tmp_path / "pages", tmp_path / "index", jobs=1)
    engine = QueryEngine(tmp_path / "pages", IndexReader(tmp_path / "index"))
    ranked = [doc_id for doc_id, _ in engine.answer('"running dogs" OR 章', "relevance").ranked]
    assert sorted(ranked[:2]) == [1, 3] and sorted(ranked[2:]) == [2, 4]


# Real pages of the Debian installation guide (installation-guide-amd64): titles that fold and stem
# alike across languages, each with its page's first sentence.
TYPED_TITLES = {
    1: ("pt", "A.1. Preliminares", "Se encontrar bugs durante a instalação, por favor consulte a Secção 5.4.7"),
    2: ("en", "A.1. Preliminaries", "If you encounter bugs during your install, please refer to Section 5.4.7"),
    3: ("it", "A.1. Preliminari", "Se durante l'installazione si scopre qualche bug, per favore si veda Sezione 5.4.7"),
    4: (
        "ca",
        "A.1. Preliminars",
        "Si trobeu errors al llarg de la instal·lació per favor dirigiu-vos a la Secció 5.4.7",
    ),
    5: (
        "ro",
        "A.1. Preliminarii",
        "Dacă întâmpinați erori în timpul instalării, vă rugăm să consultați Secțiune 5.4.7",
    ),
    6: ("es", "1.3. ¿Qué es Debian GNU/Linux?", "La combinación de la filosofía y metodología de Debian"),
    7: ("ca", "1.3. Què és Debian GNU/Linux?", "La combinació de la filosofia i metodologia Debian"),
}


def test_the_page_whose_title_was_typed_comes_first(tmp_path):
    # Their words stem alike (Preliminaries, Preliminares) or fold alike (Què és, Qué es), so the
    # index's terms score them about equally: the page whose title holds the words as typed, accents
    # included, ranks first, whatever the other pages' scores.
    pages = {
        doc_id: (
            f"http://h/{language}/{doc_id}.html",
            0,
            f'<html lang="{language}"><title>{title}</title><p>{text}'.encode(),
        )
        for doc_id, (language, title, text) in TYPED_TITLES.items()
    }
    # Other pages, so that the titles' words are as rare as in a real site (in 7 pages every word's
    # weight is an artefact of a handful of pages).
    for doc_id in range(8, 38):
        pages[doc_id] = (
            f"http://h/en/{doc_id}.html",
            0,
            f"<title>Chapter {doc_id}</title><p>Section {doc_id}".encode(),
        )
    write_pages(tmp_path / "pages", pages)
    tse_ok_here("index", tmp_path / "pages", tmp_path / "index")
    engine = QueryEngine(tmp_path / "pages", IndexReader(tmp_path / "index"))
    for doc_id, (_, title, _) in TYPED_TITLES.items():
        assert docs(engine, title)[0] == doc_id, (title, docs(engine, title))
    assert set(docs(engine, "que es debian")) == {6, 7}  # typed without accents: both, as before
    assert docs(engine, "A.1. Preliminari")[1:]  # the pages whose words stem alike are still found, after it


def test_the_page_whose_whole_title_was_typed_gains_the_larger_bonus():
    # A translation whose rarer stem scores it half again as much (the real case: `5.2. Accessibility`
    # behind the French `5.2. Accessibilité`, 95.0 against 89.7 with the half) ranks after the page
    # whose whole title was typed; a title holding more than was typed gains the half only.
    titles = {1: "5.2. Accessibilité", 2: "5.2. Accessibility", 3: "5.2. Accessibility and more", 4: "Other"}
    scores = {1: 95.0, 2: 59.8, 3: 59.8, 4: 70.0}
    query = parse_search_query("5.2. Accessibility")
    searcher._add_typed_title_bonus(
        scores, query, lambda doc_ids: {doc_id: titles[doc_id] for doc_id in doc_ids}, set()
    )
    assert scores == pytest.approx({1: 95.0, 2: 59.8 * 2, 3: 59.8 * 1.5, 4: 70.0})
    assert sorted(scores, key=scores.get, reverse=True)[0] == 2


def test_the_pages_of_forms_kept_between_searches_are_bounded_and_change_no_answer(
    fixture_pages, fixture_indexed, tmp_path, monkeypatch
):
    # Stems of some languages only ("the" is "their"'s Spanish stem) have their pages read and kept
    # (searcher.FORM_PAGES_KEPT); a bound of a few pages keeps the last form's and answers the same.
    indexed_copy(fixture_indexed, tmp_path)
    queries = ["their", "does", "init", "installation", "their zzzyqx", "debian -their", "booting", "their"]
    fresh = QueryEngine(fixture_pages, IndexReader(tmp_path / "index"))
    expected = [fresh.answer(query, "relevance").ranked for query in queries]
    monkeypatch.setattr(searcher, "FORM_PAGES_KEPT", 5)
    engine = QueryEngine(fixture_pages, IndexReader(tmp_path / "index"))
    index = engine.search_index
    for query, ranked in zip(queries, expected, strict=True):
        assert engine.answer(query, "relevance").ranked == ranked, query
        assert index._form_pages_kept == sum(len(pages) + 1 for pages in index._form_pages.values())
        assert index._form_pages_kept <= 5 or len(index._form_pages) == 1
    assert index._form_pages  # (some form's pages were read)


def test_anchors_are_gathered_in_bounded_memory(tmp_path):
    # A review's find: every page's anchor terms were held at once until the last link was read (about
    # 40 KB of peak a much-linked page: 4 GB at 100,000).  400 pages, each linking to 40 others with 20
    # words: the anchors gathered again, as a build does, from the index's links.
    import random
    import tracemalloc

    chosen = random.Random(27)
    count = 400
    words = ["".join(chosen.choice("abcdefghij") for _ in range(10)) for _ in range(300)]
    pages = {}
    for doc_id in range(1, count + 1):
        links = " ".join(
            f'<a href="/p{chosen.randrange(1, count + 1)}.html">{" ".join(chosen.choices(words, k=20))}</a>'
            for _ in range(40)
        )
        pages[doc_id] = (f"http://h/p{doc_id}.html", 1, f"<title>p{doc_id}</title><p>{links}</p>".encode())
    write_pages(tmp_path / "pages", pages)
    indexfile = tmp_path / "index"
    tse_ok_here("index", tmp_path / "pages", indexfile, "--jobs", "1")
    with opened(indexfile) as db:
        built = dict(db.execute("SELECT doc_id, terms FROM anchors"))
        held = sum(len(terms) for terms in built.values())
        assert len(built) == count and held > 3_000_000  # (the pages' anchors, 3 MB and more)
        db.execute("DELETE FROM anchors")
        db.execute("DELETE FROM anchors_fts")
        tracemalloc.start()
        try:
            with mock.patch.object(store, "ANCHORS_HELD", 100_000):  # (its bound, 8 MB, made small)
                store._index_anchors(db, store._gather_anchors(db, None))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert dict(db.execute("SELECT doc_id, terms FROM anchors")) == built
    assert peak < held / 4, (peak, held)
