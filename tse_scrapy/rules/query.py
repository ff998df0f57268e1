"""Query parsing and scoring of the querier (SPEC 4): pure functions, no Scrapy import.

query  ::= andseq [or andseq]...
andseq ::= word [[and] word]...
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

# word -> its postings (docID -> count), empty when the word is not indexed
PostingsLookup = Callable[[str], Mapping[int, int]]
OPERATORS = ("and", "or")


class QueryError(ValueError):
    """A query the querier refuses; its message is printed as is."""


@dataclass(frozen=True)
class Query:
    """A parsed query line."""

    tokens: tuple[str, ...]  # lowercased, as echoed
    clauses: tuple[tuple[str, ...], ...]  # or-ed and-sequences of words


def is_blank(line: str) -> bool:
    return not line.strip(" \t\n\r\f\v")


def parse_query(line: str) -> Query:
    """Parse one input line (not blank); raise QueryError for a bad character."""
    for char in line:
        if not (_is_letter(char) or char in " \t\n\r\f\v"):
            raise QueryError(f"Error: bad character '{char}' in query.")
    tokens = tuple(line.lower().split())
    clauses: list[tuple[str, ...]] = [()]
    for token in tokens:
        if token == "or":
            clauses.append(())
        elif token != "and":
            clauses[-1] += (token,)
    return Query(tokens, tuple(clauses))


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
    """
    totals: dict[int, int] = {}
    for clause in query.clauses:
        for doc_id, value in _and_scores(clause, postings).items():
            totals[doc_id] = totals.get(doc_id, 0) + value
    return {doc_id: value for doc_id, value in totals.items() if value > 0}


def rank(scores: dict[int, int]) -> list[tuple[int, int]]:
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


def _is_letter(char: str) -> bool:
    return "a" <= char <= "z" or "A" <= char <= "Z"
