"""A long text a snippet reads again (a page's text past its first read, by every search its page answers
there) has its words cut and stemmed once, and gives the marks it gave when read the first time."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tse_scrapy.rules.queries import searchsnippet
from tse_scrapy.rules.text import analysis

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
