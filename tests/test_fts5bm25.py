"""FTS5's bm25() worked out in Python (rules/queries/fts5bm25.py, fulltext/searcher.KeptField): the
same floats as SQLite's own, which is the oracle here."""

import contextlib
import math

import apsw
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.fts5scores import WORDS, quoted, same_scores
from tests.support.multilingual import fixture_pages
from tests.support.pages import write_pages
from tse_scrapy.fulltext import searcher
from tse_scrapy.fulltext.matching import Vocabulary, compile_query
from tse_scrapy.fulltext.searcher import ANCHOR_WEIGHT, TITLE_WEIGHT, KeptField, SearchIndex
from tse_scrapy.fulltext.store import search_path
from tse_scrapy.index.indexer import write_index_files
from tse_scrapy.rules.queries import fts5bm25
from tse_scrapy.rules.queries.searchquery import parse_search_query
from tse_scrapy.rules.text.pagetext import page_title


@pytest.mark.parametrize(
    "text, tokens",
    [
        ("", ()),
        ("installation guide", ("installation", "guide")),
        ("Hello, World_x Ab-C", ("hello", "world", "x", "ab", "c")),
        ("sécurité ÉTÉ", ("sécurité", "ÉtÉ")),  # only ASCII letters are lowered
        ("установка системы", ("установка", "системы")),
        ("インス ンス", ("インス", "ンス")),
        ("ipv6 3 11 2", ("ipv6", "3", "11", "2")),
        ("نصب دبیان", ("نصب", "دبیان")),
    ],
)
def test_ascii_tokens(text, tokens):
    assert fts5bm25.ascii_tokens(text) == tokens


@pytest.mark.parametrize(
    "expression, phrases",
    [
        ('("boot") OR ("boot loader" OR "loader")', [("boot",), ("boot", "loader"), ("loader",)]),
        ('"de" OR "de"', [("de",), ("de",)]),  # a phrase written twice counts twice
        ('"a""b"', [("a", "b")]),  # "" is a quote inside a string: a separator
        ('"ORa" OR "установка"', [("ora",), ("установка",)]),
        ('"a" AND "b"', None),
        ('("a") NOT ("b")', None),
        ('"x"*', None),
        ('"x" *', None),
        ('{title} : "a"', None),
        ("a OR b", None),
        ('"boot" "de"', None),  # side by side: an AND
        ('"boot" OR', None),
        ('OR "boot"', None),
        ('("boot"', None),
        ('() OR "boot"', None),
        ('"boot" OR OR "de"', None),
        ("", None),
        ('(("a")) OR "b"', [("a",), ("b",)]),
    ],
)
def test_expression_phrases(expression, phrases):
    assert fts5bm25.expression_phrases(expression) == phrases


def test_deep_nesting_is_not_read_and_ends_nothing():
    # Compiled (tse_scrapy/compiled.py), a recursion per group would run past the C stack and end
    # the process; bounded, such an expression is one for FTS5 to score.
    nested = "(" * fts5bm25.MAX_NESTING + '"a"' + ")" * fts5bm25.MAX_NESTING
    assert fts5bm25.expression_phrases(nested) == [("a",)]
    assert fts5bm25.expression_phrases("(" + nested + ")") is None
    assert fts5bm25.expression_phrases("(" * 200_000 + '"a"' + ")" * 200_000) is None


@pytest.mark.parametrize(
    "tokens, phrase, count",
    [
        (("a", "b", "a"), ("a",), 2),
        (("a", "a", "a"), ("a", "a"), 2),  # overlapping instances
        (("a", "b", "c"), ("b", "c"), 1),
        (("a", "b"), ("a", "b", "c"), 0),
        (("a",), (), 0),
    ],
)
def test_instances(tokens, phrase, count):
    assert fts5bm25.instances(tokens, phrase) == count


@settings(max_examples=200, deadline=None)
@given(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40))
def test_ascii_tokens_are_the_tokens_fts5_stores(text):
    with contextlib.closing(fts5_table({1: text})) as db:
        db.execute("CREATE VIRTUAL TABLE temp.instances USING fts5vocab(main, titles_fts, instance)")
        stored = [term for term, _ in sorted(db.execute("SELECT term, offset FROM temp.instances"), key=lambda r: r[1])]
    assert list(fts5bm25.ascii_tokens(text)) == stored


def test_idf_is_floored_as_fts5_floors_it():
    assert fts5bm25.idf(10, 1) == math.log(9.5 / 1.5)
    assert fts5bm25.idf(10, 5) == fts5bm25.LEAST_IDF  # ln(1) = 0
    assert fts5bm25.idf(10, 9) == fts5bm25.LEAST_IDF


def test_a_damaged_averages_record_is_refused():
    with pytest.raises(ValueError):
        fts5bm25.averages(b"\x91")
    with pytest.raises(ValueError):
        fts5bm25.averages(b"\x05")


def fts5_table(rows):
    """An in-memory FTS5 table as the search index makes its titles_fts, and a table of its rows' texts."""
    db = apsw.Connection(":memory:")
    db.execute("CREATE VIRTUAL TABLE titles_fts USING fts5(title, content='', contentless_delete=1, tokenize='ascii')")
    db.execute("CREATE TABLE texts (doc_id INTEGER PRIMARY KEY, text TEXT NOT NULL)")
    for doc_id, text in rows.items():
        db.execute("INSERT INTO titles_fts(rowid, title) VALUES (?, ?)", (doc_id, text))
        db.execute("INSERT INTO texts VALUES (?, ?)", (doc_id, text))
    return db


def kept_scores(db, doc_ids, expression):
    scores = dict.fromkeys(doc_ids, 0.0)
    field = KeptField(db, "titles_fts", "SELECT doc_id, text FROM texts WHERE doc_id IN ({})", Vocabulary(db))
    assert field.add_scores(scores, TITLE_WEIGHT, expression)
    return scores


def fts5_scores(db, doc_ids, expression):
    scores = dict.fromkeys(doc_ids, 0.0)
    sql = "SELECT rowid, bm25(titles_fts) FROM titles_fts WHERE titles_fts MATCH ?"
    for doc_id, score in db.execute(sql, (expression,)):
        if doc_id in scores:
            scores[doc_id] -= TITLE_WEIGHT * score
    return scores


def test_a_table_whose_averages_cannot_be_read_is_left_to_fts5():
    with contextlib.closing(fts5_table({1: "a boot"})) as db:
        db.execute("UPDATE titles_fts_data SET block = x'91' WHERE id = 1")
        field = KeptField(db, "titles_fts", "SELECT doc_id, text FROM texts WHERE doc_id IN ({})", Vocabulary(db))
        assert not field.add_scores({1: 0.0}, TITLE_WEIGHT, '"boot"')


def test_the_averages_record_is_fts5s_rows_and_tokens():
    rows = {1: "a boot", 2: "", 3: "установка インス ンス 3 11", 4: "de de de"}
    with contextlib.closing(fts5_table(rows)) as db:
        record = db.execute("SELECT block FROM titles_fts_data WHERE id = 1").fetchone()[0]
        assert fts5bm25.averages(record) == (4, 10)


phrase_strategy = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)


@settings(max_examples=150, deadline=None)
@given(
    rows=st.dictionaries(
        st.integers(1, 300), st.lists(st.sampled_from(WORDS), max_size=12).map(" ".join), min_size=1, max_size=40
    ),
    queries=st.lists(
        st.tuples(
            st.lists(st.lists(phrase_strategy, min_size=1, max_size=3), min_size=1, max_size=4),
            st.sets(st.integers(1, 300), max_size=5),
            st.randoms(use_true_random=False),
        ),
        min_size=1,
        max_size=4,
    ),
    kept_tokens=st.sampled_from([1, 30, searcher.KEPT_TOKENS]),
)
def test_kept_scores_are_fts5s_to_the_last_bit(rows, queries, kept_tokens):
    # One field for several queries (rows read again after being forgotten: kept_tokens), each
    # groups of phrases joined by OR, as the searcher's title expressions are, over some of the
    # rows' pages and some pages without a row.
    with contextlib.closing(fts5_table(rows)) as db:
        field = KeptField(db, "titles_fts", "SELECT doc_id, text FROM texts WHERE doc_id IN ({})", Vocabulary(db))
        original, searcher.KEPT_TOKENS = searcher.KEPT_TOKENS, kept_tokens
        last_read: set[int] = set()
        try:
            for phrases, others, chooser in queries:
                expression = " OR ".join(f"({' OR '.join(quoted(p) for p in group)})" for group in phrases)
                asked = {*chooser.sample(sorted(rows), chooser.randint(0, len(rows))), *others}
                kept = dict.fromkeys(asked, 0.0)
                # Rows are read only for an expression some row holds (else no row can score).
                held = db.execute("SELECT count(*) FROM titles_fts WHERE titles_fts MATCH ?", (expression,)).fetchone()
                if held[0] and not asked <= field.rows.keys():
                    last_read = asked
                assert field.add_scores(kept, TITLE_WEIGHT, expression)
                assert same_scores(kept, fts5_scores(db, asked, expression))
                # Bounded: over the bound, only the rows of the last query that read rows are kept.
                assert field._tokens_kept == searcher._size(field.rows)
                assert field._tokens_kept <= kept_tokens or field.rows.keys() <= last_read
        finally:
            searcher.KEPT_TOKENS = original


def varint(value):
    """*value* as an SQLite varint (9 bytes from 2**56, the last giving 8 bits)."""
    if value >= 1 << 56:
        groups = [(value >> (8 + 7 * n)) & 0x7F for n in range(8)]
        return bytes(group | 0x80 for group in reversed(groups)) + bytes([value & 0xFF])
    groups = [value & 0x7F]
    value >>= 7
    while value:
        groups.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(reversed(groups))


@pytest.mark.parametrize(
    "rows, tokens", [(5, 9), (300, 5_000), (2**20, 3 * 2**20), (2**40, 2**41 + 7), (2**56 + 3, 2**57 + 11)]
)
def test_large_averages_score_as_fts5_scores_them(rows, tokens):
    # A crafted averages record: the counts of a table far larger than any test could fill.
    texts = {1: "a boot", 2: "boot loader de", 3: "de de a", 4: "loader"}
    with contextlib.closing(fts5_table(texts)) as db:
        record = varint(rows) + varint(tokens)
        db.execute("UPDATE titles_fts_data SET block = ? WHERE id = 1", (record,))
        assert fts5bm25.averages(record) == (rows, tokens)
        expression = '"boot" OR "de" OR "loader de"'
        assert same_scores(kept_scores(db, texts, expression), fts5_scores(db, texts, expression))


def test_a_negative_count_is_a_damaged_record():
    with pytest.raises(ValueError):
        fts5bm25.averages(varint(7) + varint(2**64 - 5))


@pytest.fixture(scope="module")
def fixture_index(tmp_path_factory):
    """The multilingual fixture's index, with two pages more a page linking to it by its title (so
    that every page has anchor text, in its own script)."""
    pages = {page.doc_id: (page.url, 1, page.body) for page in fixture_pages()}
    for doc_id, (url, _, body) in list(pages.items()):
        origin = "/".join(url.split("/")[:3])
        for hub in range(2):
            link = f'<html><title>hub</title><p><a href="{url}">{page_title(body)}</a></p>'.encode()
            pages[len(pages) + 1] = (f"{origin}/hub-{doc_id}-{hub}.html", 1, link)
    directory = write_pages(tmp_path_factory.mktemp("multilingual") / "pages", pages)
    index = tmp_path_factory.mktemp("index") / "index"
    write_index_files(directory, index, jobs=1)
    return index


@pytest.mark.parametrize("table, weight", [("titles_fts", TITLE_WEIGHT), ("anchors_fts", ANCHOR_WEIGHT)])
def test_real_pages_in_every_script_score_as_fts5_scores_them(fixture_index, table, weight):
    # Each page's title as the query: the page's title and the anchor text of the links to it hold it.
    db = apsw.Connection(str(search_path(fixture_index)))
    index = SearchIndex(db)
    texts = [title for title in map(page_title, (page.body for page in fixture_pages())) if title]
    assert len(texts) >= 10
    every_page = [doc_id for (doc_id,) in db.execute("SELECT doc_id FROM pages")]
    compared = scored = 0
    for text in texts:
        compiled = compile_query(parse_search_query(text), index.vocabulary, index.languages)
        expression = compiled.rare(lambda term: index.vocabulary.documents(term, table), index.pages, " OR ")
        if expression is None or fts5bm25.expression_phrases(expression) is None:
            continue
        kept = dict.fromkeys(every_page, 0.0)
        asked = dict.fromkeys(every_page, 0.0)
        assert index.kept[table].add_scores(kept, weight, expression)
        index._add_scores(asked, table, f"bm25({table})", weight, expression)
        assert same_scores(kept, asked), text
        compared += 1
        scored += sum(1 for score in asked.values() if score)
    assert compared >= len(texts) // 2 and scored >= compared
    db.close()


def test_a_large_anchor_text_is_left_to_fts5(fixture_index, monkeypatch):
    monkeypatch.setattr(searcher, "ANCHOR_TOKENS", 10)
    with contextlib.closing(apsw.Connection(str(search_path(fixture_index)))) as db:
        index = SearchIndex(db)
        assert not index.kept["anchors_fts"].add_scores(dict.fromkeys([1, 2], 0.0), ANCHOR_WEIGHT, '"debian"')
        assert index.kept["titles_fts"].add_scores(dict.fromkeys([1, 2], 0.0), TITLE_WEIGHT, '"debian"')


def test_many_matched_pages_are_left_to_fts5(fixture_index, monkeypatch):
    monkeypatch.setattr(searcher, "KEPT_SCORED", 2)
    with contextlib.closing(apsw.Connection(str(search_path(fixture_index)))) as db:
        index = SearchIndex(db)
        assert not index.kept["titles_fts"].add_scores(dict.fromkeys([1, 2, 3], 0.0), TITLE_WEIGHT, '"debian"')
        assert index.kept["titles_fts"].add_scores(dict.fromkeys([1, 2], 0.0), TITLE_WEIGHT, '"debian"')


def test_a_term_of_some_languages_only_is_scored_on_their_pages_only():
    # "in" is the Catalan stem of "init" and the English "in": on the English pages, the titles score
    # as FTS5 scores "init" alone; on the Catalan page, as it scores both.
    rows = {1: "log in", 2: "init scripts in debian", 3: "in init", 4: "instal·lar en un sistema in"}
    languages = {1: "en", 2: "en", 3: "ca", 4: "ca"}
    expression = '"init" OR "in"'
    with contextlib.closing(fts5_table(rows)) as db:
        field = KeptField(db, "titles_fts", "SELECT doc_id, text FROM texts WHERE doc_id IN ({})", Vocabulary(db))
        kept = dict.fromkeys(rows, 0.0)
        assert field.add_scores(kept, TITLE_WEIGHT, expression, {"in": frozenset({"ca"})}, languages.__getitem__)
        english = fts5_scores(db, [1, 2], '"init"')
        catalan = fts5_scores(db, [3, 4], expression)
        # (The IDFs are the whole expression's: each phrase's own, as FTS5 works them out.)
        assert same_scores(kept, {**english, **catalan})
        assert kept[1] == 0.0 and kept[2] > 0.0
