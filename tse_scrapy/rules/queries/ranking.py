"""Okapi BM25: another order for the documents a query matches (SPEC 4 decides which match).

A document's score is summed over the query's distinct words it contains:

    idf(w)   = ln(1 + (N - n + 0.5) / (n + 0.5))
    score(d) = sum of idf(w) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))

with N the pages of the page directory, n the documents whose postings hold
w, tf the index count of w in d, dl the sum of d's counts over all words of
the index, avgdl the mean dl over the N pages; k1 = 1.2, b = 0.75.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

from .query import PostingsLookup

K1 = 1.2
B = 0.75


def bm25_scores(
    matching: Iterable[int],
    words: Iterable[str],
    postings: PostingsLookup,
    lengths: Mapping[int, int],
    pages: int,
    average_length: float,
) -> dict[int, float]:
    """The BM25 score of each document of *matching* (docIDs), for the query *words*.

    *lengths* maps a docID to its dl; *pages* is N and *average_length* avgdl.
    """
    scores = dict.fromkeys(matching, 0.0)
    for word in dict.fromkeys(words):
        found = postings(word)
        if not found:
            continue
        idf = math.log(1 + (pages - len(found) + 0.5) / (len(found) + 0.5))
        for doc_id in scores.keys() & found.keys():
            tf = found[doc_id]
            norm = 1 - B + B * lengths.get(doc_id, 0) / average_length if average_length else 1.0
            scores[doc_id] += idf * tf * (K1 + 1) / (tf + K1 * norm)
    return scores
