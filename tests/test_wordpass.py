"""The indexer's word pass (tse_scrapy/rules/text/wordpass): its typed copy (``wordpass.pyx``, built by
``make``) gives what its Python path gives, which gives what the SPEC words and ``analysis`` give: on a
table of texts that take each way through the analysis, and on random text of every script."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tse_scrapy import compiled
from tse_scrapy.index.runs import RunPostings
from tse_scrapy.rules.text import analysis, wordpass
from tse_scrapy.rules.text.words import page_words

_SOURCE = Path(wordpass.__file__).with_name("wordpass.py")
_spec = importlib.util.spec_from_file_location("tse_scrapy.rules.text.wordpass_python_path", _SOURCE)
assert _spec is not None and _spec.loader is not None
python_path = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(python_path)


def test_make_compiled_the_typed_copy():
    assert compiled.loaded_compiled(wordpass), "run make: it compiles wordpass.pyx"


_SISYPHOS = "\u03c3\u03b9\u03c3\u03c5\u03c6\u03bf\u03c3"  # folded: the accent dropped, each sigma U+03C3
# text, its words, the terms of its first 3 words in English
TEXTS = [
    ("", [], []),
    ("Hello, World! hello", ["hello", "world", "hello"], ["hello", "world", "hello"]),
    ("Running runs ran_away", ["running", "runs", "ran", "away"], ["run", "run", "ran"]),
    ("Straße STRASSE straße", ["strasse", "strasse", "strasse"], ["strass", "strass", "strass"]),
    ("instal\u00b7laci\u00f3 x", ["installacio", "x"], ["installacio", "x"]),
    ("\u65e5\u672c\u8a9e text", ["\u65e5\u672c", "\u672c\u8a9e", "text"], ["\u65e5\u672c", "\u672c\u8a9e", "text"]),
    ("\ufb01ne \uff21\uff22\uff23", ["fine", "abc"], ["fine", "abc"]),
    ("Unix\u2122 \u21165", ["unix", "5"], ["unix", "5"]),
    ("e\u0301t\u00e9 \u00e9t\u00e9", ["ete", "ete"], ["ete", "ete"]),
    # normalized whole (NFKC composes h and U+0331), the marks dropped by folding
    ("H\u0331 a\u0338b", ["h", "ab"], ["h", "ab"]),
    ("x\xa0y\u3000z\u0085w", ["x", "y", "z", "w"], ["x", "y", "z"]),
    (
        "\u03a3\u038a\u03a3\u03a5\u03a6\u039f\u03a3 caf\u00e9s cafe",
        [_SISYPHOS, "cafes", "cafe"],
        [_SISYPHOS, "cafe", "cafe"],
    ),
]


@pytest.mark.parametrize("module", [wordpass, python_path], ids=["typed", "python"])
@pytest.mark.parametrize(("text", "words", "terms"), TEXTS)
def test_words_and_terms(module, text, words, terms):
    found, stems, spellings, characters = module.words_and_terms(text, "en", 3)
    assert (found, stems) == (words, terms)
    assert (spellings, characters) == analysis.words_spellings_and_characters(text)[1:]


@pytest.mark.parametrize("module", [wordpass, python_path], ids=["typed", "python"])
def test_word_counts(module):
    body = b"<p>The cat, THE Cat</p><a href='x'>the<b>cat</b>s to</a> dog <unclosed cat"
    counts = module.word_counts(body)
    assert list(counts.items()) == [(b"the", 3), (b"cat", 3), (b"dog", 1)]
    assert type(counts).__name__ == "Counter"


# Characters the analysis treats apart, mixed with any character at all.
SPECIAL = (
    "aAzZ09_ -<>=\u0338\u00df\u1e9e\u00b7\u0387\u2027\u00ad\u200d\ufeff\u0301\u0308\u00e9\u0131\u0130\u2122\u2116"
    "\u3000\u00a0\u0085\u1680\u65e5\u672c\u3042\u30a2\uac00\u0e01\u0627\u0623\u064b\u05d0\u05b0\u03a3\u03c3\u0416"
    "\ufb01\uff21\U00020000\U0001d400\x1c\x1f\t\n\ud800"
)
texts = st.text(alphabet=st.one_of(st.sampled_from(SPECIAL), st.characters()), max_size=150)


@settings(max_examples=200, deadline=None)
@given(texts, st.sampled_from(["en", "fr", "ja", None]), st.one_of(st.none(), st.integers(0, 30)))
def test_typed_words_and_terms_as_the_python_path(text, language, limit):
    typed = wordpass.words_and_terms(text, language, limit)
    assert typed == python_path.words_and_terms(text, language, limit)
    words, spellings, characters = analysis.words_spellings_and_characters(text)
    assert typed[0] == words and typed[2:] == (spellings, characters)


bodies = st.binary(max_size=200) | st.lists(
    st.sampled_from([b"<", b">", b"a", b"Ab", b"xyz", b"XYZ", b" ", b"\xc3\xa9", b"<p>", b"abc<b>def", b"\x00"]),
    max_size=60,
).map(b"".join)


@settings(max_examples=200, deadline=None)
@given(st.lists(bodies, max_size=6))
def test_typed_counts_and_postings_as_the_python_path(pages):
    typed, python = RunPostings(), {}
    for doc_id, body in enumerate(pages, 1):
        counts = wordpass.word_counts(body)
        assert list(counts.items()) == list(python_path.word_counts(body).items())
        assert sorted(counts.elements()) == sorted(word.lower() for word in page_words(body))
        typed.add(doc_id, counts)
        python_path.add_counts(python, doc_id, counts)
    assert typed._words == python


@pytest.mark.parametrize("module", [wordpass, python_path], ids=["typed", "python"])
def test_add_counts_refuses_what_an_array_of_unsigned_ints_cannot_hold_as_its_python_path_does(module):
    # The typed copy cast a held value unchecked (a list held: a segmentation fault) and wrapped a
    # docID or count of 2**32 or a negative one round, where array("I") raises OverflowError.
    if module is wordpass:  # (the Python path appends to whatever is held: a list takes them too)
        with pytest.raises(TypeError):
            module.add_counts({b"x": [1]}, 1, {b"x": 3})
    for doc_id, count in ((2**32, 1), (-1, 1), (1, 2**32), (1, -1)):
        with pytest.raises(OverflowError):
            module.add_counts({}, doc_id, {b"x": count})


@pytest.mark.parametrize("limit", [None, 0, 1, 2, 10, -1, -2, -10])
def test_a_limit_bounds_the_terms_as_a_slice_does_in_both(limit):
    text = "running runs ran away"
    assert wordpass.words_and_terms(text, "en", limit) == python_path.words_and_terms(text, "en", limit)
