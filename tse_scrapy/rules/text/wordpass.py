"""A page's words as the indexer counts and analyzes them: the Python path of ``wordpass.pyx``.

``make`` compiles ``wordpass.pyx`` (typed Cython: one pass over the bytes or characters, each distinct
word made once) in place of this module (``tse_scrapy/compiled.py``); without a C compiler, or with
``TSE_PURE_PYTHON=1``, this module is loaded.  Both give the same: tests/test_wordpass.py compares
them on a table and on random text of every script.

- ``word_counts``: the SPEC words of a page counted (``words.word_counts``).
- ``add_counts``: a page's counts appended to a run's postings (``index.runs.RunPostings``).
- ``words_and_terms``: a text's words, their index terms (stemmed), spellings and characters
  (``analysis.words_spellings_and_characters`` and ``analysis.stem``).
"""

from __future__ import annotations

from array import array
from collections import Counter

from . import analysis
from .words import word_counts as _spec_word_counts

UINT32 = "I" if array("I").itemsize == 4 else "L"


def word_counts(body: bytes) -> Counter[bytes]:
    """``words.word_counts(body)``: how many times each SPEC word occurs in *body*, in first-occurrence order."""
    return _spec_word_counts(body)


def add_counts(words: dict[bytes, array], doc_id: int, counts: dict[bytes, int]) -> int:
    """Append *doc_id* and its count to each counted word's numbers in *words* (a new ``array(UINT32)``
    for a word not held); the highest count (0 for none)."""
    for word, occurrences in counts.items():
        numbers = words.get(word)
        if numbers is None:
            numbers = words[word] = array(UINT32)
        numbers.append(doc_id)
        numbers.append(occurrences)
    return max(counts.values(), default=0)


def words_and_terms(
    text: str, language: str | None, limit: int | None = None
) -> tuple[list[str], list[str], dict[str, str], list[str]]:
    """The words of *text* (``analysis.words``), the index terms of the first *limit* of them (all for
    None: ``analysis.stem`` in *language*), and the spellings and characters
    ``analysis.words_spellings_and_characters`` gives."""
    found, spellings, characters = analysis.words_spellings_and_characters(text)
    return found, analysis.stem(found if limit is None else found[:limit], language), spellings, characters
