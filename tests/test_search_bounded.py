"""What a search asks of FTS5 stays bounded on queries a careless or hostile client sends: a typo beside
a Japanese character (``の ebiani``), or tens of words of letters and digits, took 1-3 s on the
known-item bench's index (a tester's find), as the partial answer's check of the pages answering
through another language's stems evaluated one expression of every group once per language, and a few
pages were sought one by one in each of tens of phrases (80 phrases among 154 pages: 250 ms, the
expression's pages read whole: 11 ms).  Counted here in the statements FTS5 runs (speed is the
benchmarks' business)."""

from collections import Counter

import pytest

from tests.support.pages import write_pages
from tse_scrapy.fulltext import searcher
from tse_scrapy.index.engine import QueryEngine
from tse_scrapy.index.indexer import write_index_files
from tse_scrapy.index.storage import IndexReader


def _page(language: str, text: str) -> bytes:
    return f'<html lang="{language}"><head><title>{text[:20]}</title></head><body><p>{text}</p></body></html>'.encode()


# "in", the Catalan stem of "init", is on English, French and German pages as their own word: such
# pages answer "init" only through another language's stem.  "linux" is the same in every language.
PAGES = {
    1: ("http://example.org/en/linux.html", 0, _page("en", "We went in the house with linux on a laptop.")),
    2: ("http://example.org/en/morning.html", 1, _page("en", "Early in the morning the birds sing.")),
    3: ("http://example.org/fr/linux.html", 1, _page("fr", "Le noyau linux, cité in extenso dans le manuel.")),
    4: ("http://example.org/fr/vin.html", 1, _page("fr", "In vino veritas, disent les anciens du village.")),
    5: ("http://example.org/de/stadt.html", 1, _page("de", "Wir wohnen in der Stadt und fahren mit dem Rad.")),
    6: ("http://example.org/de/linux.html", 1, _page("de", "Ein Rechner mit linux steht in dem Garten.")),
    7: ("http://example.org/ca/casa.html", 1, _page("ca", "La casa de la platja és molt bonica i gran.")),
}


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    directory = tmp_path_factory.mktemp("languages")
    pages = write_pages(directory / "pages", PAGES)
    write_index_files(pages, directory / "index")
    return QueryEngine(pages, IndexReader(directory / "index"))


def _traced(engine, query):
    """The answer to *query*, and how many times each MATCH expression was evaluated for the pages it
    matches in fts (not scored)."""
    evaluated: Counter[str] = Counter()

    def trace(_cursor, sql, bindings):
        if sql.startswith("SELECT rowid FROM fts WHERE fts MATCH ?") and bindings:
            evaluated[bindings[0]] += 1
        return True

    engine.search_index.db.exec_trace = trace
    try:
        return engine.answer(query, "relevance", limit_size=True), evaluated
    finally:
        engine.search_index.db.exec_trace = None


def test_a_partial_answers_check_of_other_languages_stems_reads_each_expression_once(engine):
    answer, evaluated = _traced(engine, "init linux")
    # No page holds both: the pages holding "linux" answer; those holding only "in" do not.
    assert answer.partial
    assert sorted(doc_id for doc_id, _ in answer.ranked) == [1, 3, 6]
    # The group of no such forms ("linux") is read once for the pages of every language in doubt
    # (English, French, German), not once a language.
    assert [times for times in evaluated.values() if times > 1] == [], evaluated


def test_an_expression_of_many_phrases_is_read_whole_not_sought_page_by_page(engine, monkeypatch):
    index = engine.search_index
    statements = []
    index.db.exec_trace = lambda _cursor, sql, _bindings: statements.append(sql) or True
    try:
        expression = " OR ".join(f'"word{number}"' for number in range(80))
        assert index._matching_in(expression, {1, 2, 3, 4, 5, 6}) == set()
        assert index._matching_in('"linux"', {1, 2, 3, 4, 5, 6}) == {1, 3, 6}
    finally:
        index.db.exec_trace = None
    # 80 phrases among 6 pages: 480 seeks, under MATCHED_AMONG; 81 phrases would be read whole.
    assert searcher.MATCHED_AMONG == 500
    assert [" rowid IN (" in sql for sql in statements] == [True, True]
    statements.clear()
    index.db.exec_trace = lambda _cursor, sql, _bindings: statements.append(sql) or True
    try:
        expression = " OR ".join(f'"word{number}"' for number in range(90))
        assert index._matching_in(expression, {1, 2, 3, 4, 5, 6}) == set()
    finally:
        index.db.exec_trace = None
    assert [" rowid IN (" in sql for sql in statements] == [False]
