"""FTS5's bm25() as an auxiliary function in Python (fulltext/bm25function.py): the same rows and floats
as SQLite's own bm25(), the oracle here, on random tables (rows deleted as ``--update`` deletes them)
and on the multilingual fixture's index as ``tse`` reads it."""

import contextlib
import math

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.fts5scores import WORDS, quoted, same_scores
from tests.support.multilingual import fixture_pages
from tests.support.pages import write_pages
from tse_scrapy.fulltext import bm25function, searcher
from tse_scrapy.fulltext.bm25function import Bm25Function
from tse_scrapy.fulltext.matching import Compiled, Vocabulary, compile_query
from tse_scrapy.fulltext.searcher import SearchIndex
from tse_scrapy.fulltext.store import search_path
from tse_scrapy.index.indexer import write_index_files
from tse_scrapy.index.storage import IndexReader
from tse_scrapy.rules.queries import fts5bm25
from tse_scrapy.rules.queries.searchquery import parse_search_query
from tse_scrapy.rules.text.pagetext import page_title

COLUMNS = ("title", "headings", "url", "body")


def fts_table(rows, deleted=()):
    """An in-memory FTS5 table of four columns as the search index makes its fts table (with the
    tables the vocabulary reads beside it), *deleted* rows taken out as ``--update`` takes them out
    (by docID: contentless_delete tables), not yet merged away."""
    db = apsw.Connection(":memory:")
    columns = ", ".join(COLUMNS)
    options = "content='', contentless_delete=1, tokenize='ascii'"
    db.execute(f"CREATE VIRTUAL TABLE fts USING fts5({columns}, {options})")
    for table in ("titles_fts", "anchors_fts"):
        db.execute(f"CREATE VIRTUAL TABLE {table} USING fts5(text, {options})")
    with db:
        for doc_id, texts in rows.items():
            db.execute(f"INSERT INTO fts(rowid, {columns}) VALUES (?, ?, ?, ?, ?)", (doc_id, *texts))
    with db:  # in a transaction of its own: the deletions are tombstones of their own
        for doc_id in deleted:
            db.execute("DELETE FROM fts WHERE rowid = ?", (doc_id,))
    return db


def both(db, expression, weights):
    """FTS5's bm25() and this function's, each as (docID, score) pairs of the rows matched."""
    arguments = ", ".join(map(str, weights))
    sql = "SELECT rowid, {}(fts, {}) FROM fts WHERE fts MATCH ?"
    ours = dict(db.execute(sql.format("tse_bm25", arguments), (expression,)).fetchall())
    theirs = dict(db.execute(sql.format("bm25", arguments), (expression,)).fetchall())
    return ours, theirs


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


def test_a_phrase_of_several_words_is_counted_once(monkeypatch):
    walks = []
    walked = bm25function._walked
    monkeypatch.setattr(bm25function, "_walked", lambda api, number: walks.append(number) or walked(api, number))
    rows = {1: ("", "", "", "boot loader de"), 2: ("boot loader", "", "", ""), 3: ("", "", "", "loader boot")}
    with contextlib.closing(fts_table(rows)) as db:
        vocabulary = Vocabulary(db)
        Bm25Function(db, "fts", vocabulary, "tse_bm25")
        counts = []
        # (A tracer returns true to let the statement run.)
        db.exec_trace = lambda _cursor, sql, _bindings: ("count(*)" in sql and counts.append(sql)) or True
        for _ in range(3):
            ours, theirs = both(db, '("boot loader") AND ("de" OR "boot")', (0.0, 2.0, 1.0, 1.0))
            assert ours == theirs and set(ours) == {1, 2}  # 2: only in the title, weighed 0
        assert vocabulary._phrases == {(("boot", "loader"), "fts"): 2}
        # The words' rows are the vocabulary's; the phrase's counted once, and no phrase walked.
        assert len(counts) == 1 and walks == []


def test_two_calls_in_a_statement_weigh_each_their_columns():
    rows = {1: ("boot", "boot de", "", "de"), 2: ("", "", "boot", "boot boot loader")}
    with contextlib.closing(fts_table(rows)) as db:
        Bm25Function(db, "fts", Vocabulary(db), "tse_bm25")
        sql = "SELECT rowid, {0}(fts, 1, 1, 1, 1), {0}(fts, 0, 5, 1, 2) FROM fts WHERE fts MATCH ?"
        ours = db.execute(sql.format("tse_bm25"), ('"boot" OR "de"',)).fetchall()
        assert ours == db.execute(sql.format("bm25"), ('"boot" OR "de"',)).fetchall()
        assert all(first != second for _, first, second in ours)


def test_a_row_scores_as_the_formula_says():
    # One phrase twice in a row of 10 tokens, a table of 5 tokens a row, IDF 1.5: k1 = 1.2, b = 0.75.
    saturation = 1.2 * (1 - 0.75 + 0.75 * 10 / 5)  # 2.1
    assert math.isclose(fts5bm25.score([2.0], [1.5], 10, 5.0), -1.5 * (2 * 2.2) / (2 + saturation))
    assert fts5bm25.score([0.0, 1.0], [7.0, 1.0], 5, 5.0) == -(2.2 / 2.2)  # a phrase not in the row adds 0


def test_more_hits_than_rows_is_nan_as_in_c():
    # A damaged table: C's log() of a negative number is NaN, kept by FTS5 (SQLite then gives NULL).
    assert math.isnan(fts5bm25.idf(2, 4))
    assert fts5bm25.idf(10, 9) == fts5bm25.LEAST_IDF
    scores = {1: 0.0, 2: 0.0}
    searcher._add_weighed(scores, [(1, None), (2, -1.5), (3, -1.0)], 2.0)
    assert scores == {1: 0.0, 2: 3.0}


def test_whole_number_weights_only():
    assert Bm25Function.usable([0.0, 2.0, 1.0, 1.0])
    assert not Bm25Function.usable([0.5, 1.0])
    assert not Bm25Function.usable([2.0**40])


@pytest.mark.parametrize(
    "expression, plain",
    [
        ('("a") AND ("b c" OR "d")', True),
        ('"a"', True),
        ('"a" "b"', True),  # side by side: an AND
        ('("a")AND("b")', True),
        ('"a""b"', True),  # "" is a quote inside the phrase
        ('"установка" OR "安装 装"', True),
        ('"a"*', False),  # a prefix query
        ('("a"*) AND ("b")', False),
        ('{title}: "a"', False),  # a column filter
        ('title : "a"', False),
        ('^"a"', False),  # the first token of a column
        ('NEAR("a" "b")', False),
        ('"a" NOT "b"', False),
        ("a", False),  # a bareword
        ('"a', False),
        ("", False),
        ("AND", False),
        ("()", False),
    ],
)
def test_plain_phrases(expression, plain):
    assert fts5bm25.plain_phrases(expression) is plain


phrase_text = st.lists(st.sampled_from([*WORDS, "x_y", "A"]), min_size=1, max_size=3).map(" ".join)


@given(
    groups=st.lists(st.lists(phrase_text, min_size=1, max_size=3), min_size=1, max_size=4),
    spoiler=st.sampled_from(["*", "{body}: ", "^", "NEAR(", " NOT ", "body:", "bare"]),
    where=st.randoms(use_true_random=False),
)
def test_plain_phrases_property(groups, spoiler, where):
    expression = " AND ".join("(" + " OR ".join(f'"{phrase}"' for phrase in group) + ")" for group in groups)
    assert fts5bm25.plain_phrases(expression)
    # Anything else, put after a phrase or before one, makes it not plain.
    quotes = [index for index, character in enumerate(expression) if character == '"']
    at = where.choice(quotes[1::2]) + 1 if spoiler == "*" else where.choice(quotes[0::2])
    assert not fts5bm25.plain_phrases(expression[:at] + spoiler + expression[at:])


def test_the_scoring_cost_is_of_the_groups_scored():
    pages = {"a": 3, "b": 4, "c": 10, "d": 90, "e": 60}
    groups = [("x", "x", ["a", "b"]), ("y", "y", ["c"]), ("p", "p", []), ("z", "z", ["d", "e"])]
    compiled = Compiled("", "", None, groups=groups)
    # z's words are on more than half the pages: rare() leaves it out, and so does the cost.
    assert compiled.rare(pages.get, 100, " AND ") == "(x) AND (y) AND (p)"
    assert compiled.scoring_cost(pages.get, 100) == (7, 17)
    assert compiled.scoring_cost(pages.get, 1000) == (7, 167)
    assert Compiled("", "", None, groups=[("p", "p", [])]).scoring_cost(pages.get, 100) is None


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
    for here in (False, True):
        monkeypatch.setattr(Bm25Function, "worth_it", staticmethod(lambda rows, phrases, walked, here=here: here))
        index = opened(fixture_index)
        answers[here] = [index.search(parse_search_query(query)) for query in queries]
        index.close()
        if not here:
            assert not calls
    assert len(calls) >= len(queries)  # the function scored rows of most queries
    # The same pages in the same order, the same scores but for the last bits: where a word's forms are
    # weighed as one, FTS5's scores are corrected form by form, in another order of additions.
    for theirs, ours in zip(answers[False], answers[True], strict=True):
        assert [doc_id for doc_id, _ in theirs.ranked] == [doc_id for doc_id, _ in ours.ranked]
        assert [score for _, score in theirs.ranked] == pytest.approx([score for _, score in ours.ranked], rel=1e-12)
    assert sum(1 for found in answers[False] if found.ranked) >= len(titles) // 2
    # Among them, queries whose words' forms are weighed as one ("Debian" is "debi" in Spanish).
    index = opened(fixture_index)
    weighed = [
        query
        for query in queries
        if index._forms_weighed(compile_query(parse_search_query(query), index.vocabulary, index.languages))
    ]
    assert len(weighed) >= 10, weighed
    index.close()


def test_fts5_scores_what_the_function_cannot_or_should_not(fixture_index, monkeypatch):
    index = opened(fixture_index)
    few = (1, 1_000)  # one row at most, a thousand rows walked
    assert index._body_bm25('("debian") AND ("guide" OR "guid")', few) == index._python_bm25
    assert index._body_bm25('("日"*) AND ("debian")', few) == index._bm25  # a prefix: not one word's rows
    assert index._body_bm25('{body}: ("debian")', few) == index._bm25
    assert index._body_bm25('("debian") AND ("guide" OR "guid")', (1_400, 1_000)) == index._bm25  # 3 phrases
    assert index._body_bm25('("debian")', None) == index._bm25
    assert index._body_bm25(None, few) == index._bm25
    index.close()
    monkeypatch.setattr(Bm25Function, "usable", staticmethod(lambda weights: False))  # weights it cannot score
    with contextlib.closing(apsw.Connection(str(search_path(fixture_index)))) as db:
        without = SearchIndex(db)
        assert without._bm25_function is None
        assert without._body_bm25('("debian")', few) == without._bm25


@pytest.mark.parametrize(
    ("rows", "phrases", "walked", "here"),
    [
        (8, 10, 20, True),  # a title's words, most in no page: FTS5 sets up 10 phrases for 8 rows
        (166, 20, 166, True),  # a misspelt word's corrections
        (75, 1, 0, True),  # rows x (1 + 1/16) <= 80
        (76, 1, 0, False),
        (76, 1, 50, True),  # a row more for each 50 walked
        (218, 3, 1_000, True),
        (219, 3, 1_000, False),
        (1_434, 2, 3_766, False),  # the 20,000-page bench's titles: their median rows, 2.6 walked a row
        (14_391, 1, 14_391, False),  # "computer" in those pages: 47 ms here, 15 ms by FTS5
        (2_250, 51, 2_250, False),  # 51 words OR'd on 2,000 rows: 7.1 ms here, 1.7 ms by FTS5
        (8_100, 100, 8_100, False),  # 38.5 ms here, 9.4 ms by FTS5
        (8, 100, 1_000_000, True),  # a few rows of 100 long lists: FTS5 would walk them all
    ],
)
def test_rows_are_scored_here_only_where_that_costs_less(rows, phrases, walked, here):
    assert Bm25Function.worth_it(rows, phrases, walked) is here
