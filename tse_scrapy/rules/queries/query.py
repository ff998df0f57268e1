"""Query parsing and scoring of the querier (SPEC 4): pure functions, no Scrapy import.

query  ::= andseq [or andseq]...
andseq ::= word [[and] word]...

Everything here is linear in the length of the query: a search box receives
anything, a line of a million words included.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

# word -> its postings (docID -> count), empty when the word is not indexed
PostingsLookup = Callable[[str], Mapping[int, int]]
OPERATORS = ("and", "or")
# What a search box accepts (the querier, like the reference, answers any line).
MAX_QUERY_CHARACTERS = 1000
MAX_QUERY_WORDS = 100
# What it says of a longer query, whatever the ranking (the search box's query language too).
TOO_LONG = f"Error: the query is too long (at most {MAX_QUERY_CHARACTERS:,} characters)."
TOO_MANY_WORDS = f"Error: the query has too many words (at most {MAX_QUERY_WORDS})."
_BAD_CHARACTER = re.compile(r"[^A-Za-z \t\n\r\f\v]")


class QueryError(ValueError):
    """A query the querier refuses; its message is printed as is."""


@dataclass(frozen=True)
class Query:
    """A parsed query line."""

    tokens: tuple[str, ...]  # lowercased, as echoed
    clauses: tuple[tuple[str, ...], ...]  # or-ed and-sequences of words


def is_blank(line: str) -> bool:
    return not line.strip(" \t\n\r\f\v")


BAD_CHARACTER = "Error: bad character "  # (the start of the message of a line holding one)


def size_error(line: str) -> str | None:
    """Why a search box refuses *line* for its size (the limit it is over), or None."""
    if len(line) > MAX_QUERY_CHARACTERS:
        return TOO_LONG
    # (OR between words is no word: 51 words joined by OR are 51, a tester's find.)
    if sum(token != "OR" for token in line.split()) > MAX_QUERY_WORDS:
        return TOO_MANY_WORDS
    return None


def parse_query(line: str) -> Query:
    """Parse one input line (not blank); raise QueryError for a bad character."""
    bad = _BAD_CHARACTER.search(line)
    if bad:
        raise QueryError(f"{BAD_CHARACTER}'{bad.group()}' in query.")
    tokens = tuple(line.lower().split())
    clauses: list[list[str]] = [[]]
    for token in tokens:
        if token == "or":
            clauses.append([])
        elif token != "and":
            clauses[-1].append(token)
    return Query(tokens, tuple(map(tuple, clauses)))


def query_words(query: Query) -> list[str]:
    """The distinct words of *query*, in the order they first appear."""
    return list(dict.fromkeys(word for clause in query.clauses for word in clause))


def structure_error(query: Query) -> str | None:
    """The first structural error (first, then last, then adjacency), or None."""
    tokens = query.tokens
    if tokens[0] in OPERATORS:
        return f"Error: '{tokens[0]}' cannot be first"
    if tokens[-1] in OPERATORS:
        return f"Error: '{tokens[-1]}' cannot be last"
    for left, right in itertools.pairwise(tokens):
        if left in OPERATORS and right in OPERATORS:
            return f"Error: '{left}' and '{right}' cannot be adjacent"
    return None


def score(query: Query, postings: PostingsLookup) -> dict[int, int]:
    """Score every matching document: min over an and-sequence, sum over or.

    *postings(word)* returns a mapping docID -> count (empty when unknown).
    An and-sequence is a set of words (``a and a`` is ``a``), and equal
    and-sequences are scored once and counted (``a or a`` is twice ``a``).
    """
    totals: dict[int, int] = {}
    for words, times in Counter(frozenset(clause) for clause in query.clauses).items():
        for doc_id, value in _and_scores(words, postings).items():
            totals[doc_id] = totals.get(doc_id, 0) + times * value
    return {doc_id: value for doc_id, value in totals.items() if value > 0}


def rank(scores: Mapping[int, float]) -> list[tuple[int, float]]:
    """(docID, score) by decreasing score, ties by increasing docID."""
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def _and_scores(words: Iterable[str], postings: PostingsLookup) -> dict[int, int]:
    lists = sorted((postings(word) for word in words), key=len)
    result = dict(lists[0])
    for other in lists[1:]:
        result = {doc_id: min(value, other[doc_id]) for doc_id, value in result.items() if doc_id in other}
        if not result:
            break
    return result
