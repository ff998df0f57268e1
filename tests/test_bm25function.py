"""FTS5's bm25() as an auxiliary function in Python (fulltext/bm25function.py): the same rows and floats
as SQLite's own bm25(), the oracle here, on random tables (rows deleted as ``--update`` deletes them)
and on the multilingual fixture's index as ``tse`` reads it."""

import contextlib
import math

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.multilingual import fixture_pages
from tests.support.pages import write_pages
from tests.test_fts5bm25 import WORDS, same_scores
from tse_scrapy.fulltext import bm25function, searcher
from tse_scrapy.fulltext.bm25function import Bm25Function
from tse_scrapy.fulltext.matching import Vocabulary, compile_query
from tse_scrapy.fulltext.searcher import SearchIndex
from tse_scrapy.index.indexer import write_index_files
from tse_scrapy.index.storage import IndexReader
from tse_scrapy.rules.queries import fts5bm25
from tse_scrapy.rules.queries.searchquery import parse_search_query
from tse_scrapy.rules.text.pagetext import page_title

COLUMNS = ("title", "headings", "url", "body")


def fts_table(rows, deleted=()):
    """An in-memory FTS5 table of four columns as the search index makes its fts table (with the
    tables the vocabulary reads beside it), *deleted* rows taken out as ``--update`` takes them out."""
    db = apsw.Connection(":memory:")
    columns = ", ".join(COLUMNS)
    db.execute(f"CREATE VIRTUAL TABLE fts USING fts5({columns}, content='', tokenize='ascii')")
    for table in ("titles_fts", "anchors_fts"):
        db.execute(f"CREATE VIRTUAL TABLE {table} USING fts5(text, content='', tokenize='ascii')")
    with db:
        for doc_id, texts in rows.items():
            db.execute(f"INSERT INTO fts(rowid, {columns}) VALUES (?, ?, ?, ?, ?)", (doc_id, *texts))
    with db:  # in a transaction of its own: the deletions are segments of their own
        sql = f"INSERT INTO fts(fts, rowid, {columns}) VALUES ('delete', ?, ?, ?, ?, ?)"
        for doc_id in deleted:
            db.execute(sql, (doc_id, *rows[doc_id]))
    return db


def both(db, expression, weights):
    """FTS5's bm25() and this function's, each as (docID, score) pairs of the rows matched."""
    arguments = ", ".join(map(str, weights))
    sql = "SELECT rowid, {}(fts, {}) FROM fts WHERE fts MATCH ?"
    ours = dict(db.execute(sql.format("tse_bm25", arguments), (expression,)).fetchall())
    theirs = dict(db.execute(sql.format("bm25", arguments), (expression,)).fetchall())
    return ours, theirs


def quoted(phrase):
    return '"' + " ".join(phrase) + '"'


text_strategy = st.lists(st.sampled_from(WORDS), max_size=8).map(" ".join)
phrase_strategy = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)
weight_strategy = st.lists(st.integers(0, 5).map(float), min_size=1, max_size=5)


@settings(max_examples=150, deadline=None)
@given(
    rows=st.dictionaries(st.integers(1, 200), st.tuples(*[text_strategy] * 4), min_size=1, max_size=30),
    deleted_share=st.sampled_from([0.0, 0.3]),
    queries=st.lists(
        st.tuples(st.lists(st.lists(phrase_strategy, min_size=1, max_size=3), min_size=1, max_size=4), weight_strategy),
        min_size=1,
        max_size=4,
    ),
)
def test_scores_are_fts5s_to_the_last_bit(rows, deleted_share, queries):
    # Groups of phrases joined by OR, the groups by AND, as the searcher's scoring expressions are;
    # one function for several queries (phrases counted once are counted again from the memo);
    # column weights fewer or more than the columns.
    deleted = sorted(rows)[: int(len(rows) * deleted_share)]
    with contextlib.closing(fts_table(rows, deleted)) as db:
        Bm25Function(db, "fts", Vocabulary(db), "tse_bm25")
        for groups, weights in queries:
            expression = " AND ".join(f"({' OR '.join(quoted(p) for p in group)})" for group in groups)
            ours, theirs = both(db, expression, weights)
            assert same_scores(ours, theirs), expression


def test_a_row_scores_as_the_formula_says():
    # One phrase twice in a row of 10 tokens, a table of 5 tokens a row, IDF 1.5: k1 = 1.2, b = 0.75.
    saturation = 1.2 * (1 - 0.75 + 0.75 * 10 / 5)  # 2.1
    assert math.isclose(fts5bm25.score([2.0], [1.5], 10, 5.0), -1.5 * (2 * 2.2) / (2 + saturation))
    assert fts5bm25.score([0.0, 1.0], [7.0, 1.0], 5, 5.0) == -(2.2 / 2.2)  # a phrase not in the row adds 0


def test_a_phrase_of_several_words_is_counted_once():
    rows = {1: ("", "", "", "boot loader de"), 2: ("boot loader", "", "", ""), 3: ("", "", "", "loader boot")}
    with contextlib.closing(fts_table(rows)) as db:
        function = Bm25Function(db, "fts", Vocabulary(db), "tse_bm25")
        for _ in range(2):
            ours, theirs = both(db, '("boot loader") AND ("de" OR "boot")', (0.0, 2.0, 1.0, 1.0))
            assert ours == theirs and set(ours) == {1, 2}  # 2: only in the title, weighed 0
        assert function._held == {("boot", "loader"): 2}


def test_whole_number_weights_only():
    assert Bm25Function.usable([0.0, 2.0, 1.0, 1.0])
    assert not Bm25Function.usable([0.5, 1.0])
    assert not Bm25Function.usable([2.0**40])


@pytest.fixture(scope="module")
def fixture_index(tmp_path_factory):
    pages = {page.doc_id: (page.url, 1, page.body) for page in fixture_pages()}
    directory = write_pages(tmp_path_factory.mktemp("multilingual") / "pages", pages)
    index = tmp_path_factory.mktemp("index") / "index"
    write_index_files(directory, index, jobs=1)
    return index


def opened(index):
    reader = IndexReader(index)
    found = SearchIndex.open(index, reader.size, reader.digest)
    assert isinstance(found, SearchIndex), found
    return found


def test_real_pages_in_every_script_score_as_fts5_scores_them(fixture_index):
    # Each page's title as typed, and its words reversed: the scoring expression over the fts table.
    index = opened(fixture_index)
    titles = [page_title(page.body) for page in fixture_pages()]
    queries = [title for title in titles if title] + [" ".join(reversed(t.split())) for t in titles if t]
    compared = scored = 0
    for text in queries:
        compiled = compile_query(parse_search_query(text), index.vocabulary, index.languages)
        expression = compiled.rare(index.vocabulary.documents, index.pages, " AND ")
        if not expression or "*" in expression:
            continue
        ours, theirs = both(index.db, expression, [searcher.TEXT_FIELDS[name] for name in COLUMNS])
        assert same_scores(ours, theirs), text
        compared += 1
        scored += len(ours)
    assert compared >= len(titles) and scored >= compared
    index.close()


def test_searches_answer_alike_whichever_scores_them(fixture_index, monkeypatch):
    titles = [page_title(page.body) for page in fixture_pages()]
    queries = [title for title in titles if title] + ["debian -installation", '"installation guide"', "instalation"]
    calls = []
    bm25 = Bm25Function._bm25
    monkeypatch.setattr(Bm25Function, "_bm25", lambda *arguments: calls.append(1) or bm25(*arguments))
    answers = {}
    for rows_here in (0, 10**9):
        monkeypatch.setattr(searcher, "ROWS_SCORED_HERE", rows_here)
        index = opened(fixture_index)
        answers[rows_here] = [index.search(parse_search_query(query)) for query in queries]
        index.close()
        if rows_here == 0:
            assert not calls
    assert len(calls) >= len(queries)  # the function scored rows of most queries
    assert [found.ranked for found in answers[0]] == [found.ranked for found in answers[10**9]]
    assert sum(1 for found in answers[0] if found.ranked) >= len(titles) // 2


def test_a_prefix_query_is_fts5s_to_score(fixture_index):
    # A single character of a bigram script is a prefix query: its rows are not the vocabulary's count.
    index = opened(fixture_index)
    assert index._body_bm25('("日"*) AND ("debian")', 1) == index._bm25
    assert index._body_bm25('("debian")', 1) != index._bm25
    assert index._body_bm25('("debian")', bm25function.ROWS_SCORED_HERE + 1) == index._bm25
    assert index._body_bm25('("debian")', None) == index._bm25
    index.close()
