"""The order rank=relevance gives its pages (fulltext/searcher.py): best score first, the lowest docID
first among equal scores, the pages answering only through a run's end or its pieces apart after the
others; and the first pages it gives a bonus to.  Worked out in C for thousands of pages, checked here
against the order as its docstrings say it, a key a page, with many equal scores."""

import heapq

from hypothesis import given
from hypothesis import strategies as st

from tse_scrapy.fulltext.searcher import _first, _ranked

# Few distinct scores, so that many pages tie (0.0 and -0.0 among them: equal).
SCORES = st.dictionaries(st.integers(1, 60), st.sampled_from([0.0, -0.0, 0.5, 1.0, 2.5, 7.0]), max_size=60)
PAGES = st.frozensets(st.integers(1, 60), max_size=20)


def as_said(scores, last, later):
    return sorted(scores.items(), key=lambda pair: (pair[0] in last, pair[0] in later, -pair[1], pair[0]))


@given(SCORES, PAGES, PAGES)
def test_ranked_as_said(scores, last, later):
    assert _ranked(scores, last, later) == as_said(scores, last, later)


@given(SCORES)
def test_ranked_without_pages_apart(scores):
    assert _ranked(scores, frozenset(), frozenset()) == as_said(scores, frozenset(), frozenset())


def test_ranked_examples():
    scores = {5: 1.0, 3: 2.0, 9: 1.0, 1: 0.0, 2: 2.0}
    assert _ranked(scores, frozenset(), frozenset()) == [(2, 2.0), (3, 2.0), (5, 1.0), (9, 1.0), (1, 0.0)]
    assert _ranked(scores, frozenset({3}), frozenset({9})) == [(2, 2.0), (5, 1.0), (1, 0.0), (9, 1.0), (3, 2.0)]


@given(SCORES, st.integers(1, 25), PAGES, st.one_of(st.none(), st.frozensets(st.integers(1, 60), max_size=40)))
def test_first_as_said(scores, count, after, among):
    kept = scores if among is None else [doc_id for doc_id in scores if doc_id in among]
    said = heapq.nsmallest(count, [doc_id for doc_id in kept if doc_id not in after], key=lambda d: (-scores[d], d))
    chosen = None if among is None else [doc_id for doc_id in among if doc_id in scores]
    assert _first(scores, count, after, chosen) == said


def test_first_examples():
    scores = {4: 1.0, 2: 1.0, 7: 3.0, 1: 1.0, 3: 0.5}
    assert _first(scores, 2, frozenset()) == [7, 1]  # of three tied, the lowest docID
    assert _first(scores, 3, frozenset({7})) == [1, 2, 4]
    assert _first(scores, 10, frozenset()) == [7, 1, 2, 4, 3]
    assert _first(scores, 2, frozenset(), [3, 4]) == [4, 3]
