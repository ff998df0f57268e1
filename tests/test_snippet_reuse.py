"""A long text a snippet reads again (a page's text past its first read, by every search its page answers
there) has its words cut and stemmed once, and gives the marks it gave when read the first time; a page's
rest (its text past what the document store keeps) is read from the search index once."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.inprocess import tse_ok_here
from tests.support.pages import write_pages
from tse_scrapy.index.engine import QueryEngine
from tse_scrapy.index.storage import IndexReader
from tse_scrapy.rules.queries import searchsnippet
from tse_scrapy.rules.text import analysis
from tse_scrapy.search.app import _results

WORDS = [
    "Installation",
    "installer",
    "Debian",
    "système",
    "réseau",
    "books",
    "book",
    "the",
    "de",
    "5.2",
    "A-Z",
    "GNU/Linux",
]
LANGUAGES = [None, "en", "fr", "de"]


def _marks(*sequences):
    return [tuple(frozenset(position) for position in sequence) for sequence in sequences]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.sampled_from(WORDS), min_size=200, max_size=400),
    st.lists(
        st.lists(
            st.sampled_from(["instal", "install", "debian", "system", "reseau", "book", "5", "2", "gnu"]),
            min_size=1,
            max_size=2,
        ),
        min_size=1,
        max_size=3,
    ),
    st.sampled_from(LANGUAGES),
)
def test_a_long_text_read_again_gives_the_same_marks_without_cutting_its_words_again(words, sequences, language):
    text = " ".join(words)
    assert len(text) > searchsnippet.FIRST_READ
    marks = _marks(*[[[word] for word in sequence] for sequence in sequences])
    languages = (None, language)
    searchsnippet._kept_words.clear()
    searchsnippet._read_seen.clear()
    first = searchsnippet.marked_ranges(text, marks, languages)
    second = searchsnippet.marked_ranges(text, marks, languages)  # (read twice: its words kept now)
    cut = []
    word_runs_of = analysis.word_runs_of
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(analysis, "word_runs_of", lambda text: cut.append(text) or word_runs_of(text))
        again = [searchsnippet.marked_ranges(text, marks, languages) for _ in range(3)]
        # Other marks in the same text (another search) read the words kept too.
        other = _marks([["the"]], [["de"]])
        other_again = searchsnippet.marked_ranges(text, other, languages)
    assert first == second == again[0] == again[1] == again[2]
    searchsnippet._kept_words.clear()
    searchsnippet._read_seen.clear()
    assert other_again == searchsnippet.marked_ranges(text, other, languages)
    assert not cut


class _NoRestsRead:
    """A search index's connection that refuses to read its rests again."""

    def __init__(self, db):
        self.db = db

    def execute(self, sql, *arguments):
        assert "FROM rests" not in sql, "a rest read again"
        return self.db.execute(sql, *arguments)


def test_a_pages_rest_read_again_is_the_one_read_before(tmp_path):
    # The Debian Reference's first two chapters: text past what the document store keeps (their rests).
    manual = Path("/usr/share/debian-reference")  # debian-reference-en (make test installs it)
    pages = {
        number: (f"https://www.debian.org/doc/manuals/debian-reference/{path.name}", 0, path.read_bytes())
        for number, path in enumerate([manual / "ch01.en.html", manual / "ch02.en.html"], start=1)
    }
    write_pages(tmp_path / "pages", pages)
    tse_ok_here("index", tmp_path / "pages", tmp_path / "index")
    engine = QueryEngine(tmp_path / "pages", IndexReader(tmp_path / "index"))
    index = engine.search_index
    read = index.rests([1, 2])
    assert sorted(read) == [1, 2] and all(read.values())
    index.db = _NoRestsRead(index.db)
    assert index.rests([2, 1]) == read
    assert index.rests([2]) == {2: read[2]}
    (shown,) = [
        result for result in _results(engine, engine.answer("workstation", "relevance"), 1, 10) if result.doc_id == 1
    ]
    assert {shown.snippet[start:end].lower() for start, end in shown.highlights} == {"workstation"}
