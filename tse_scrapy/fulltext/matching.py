"""A parsed search query (``rules.searchquery``) to FTS5 match expressions, with typo tolerance.

Each word matches its folded form and its stem in every language of the
index (the query's language is not known; a page's words were stemmed in the
page's).  A word none of whose forms the index holds matches the index's
words within one edit (from 5 characters) or two (from 9), a transposition
counting as one (OSA distance, as Lucene's fuzzy queries), bigram scripts
excepted.  A single character of a bigram script matches the bigrams it
starts (a prefix query).
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field

from rapidfuzz import process
from rapidfuzz.distance import OSA

from ..rules import analysis
from ..rules.searchquery import Clause, SearchQuery

ONE_EDIT_FROM = 5
TWO_EDITS_FROM = 9
CORRECTIONS = 3  # the closest words a misspelt one matches


@dataclass
class Compiled:
    """FTS5 expressions of a query: all required clauses, any of them, and the phrase of all its words
    (for the proximity bonus); the terms to mark; the corrections made."""

    all_of: str
    any_of: str
    phrase: str | None
    terms: set[str] = field(default_factory=set)
    corrections: dict[str, str] = field(default_factory=dict)  # word typed -> word found


class Vocabulary:
    """The index's terms (FTS5's vocabulary) and words (for corrections), read as needed."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db
        db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.terms USING fts5vocab(main, fts, row)")
        self._by_length: dict[int, list[str]] | None = None

    def documents(self, term: str) -> int:
        row = self.db.execute("SELECT doc FROM temp.terms WHERE term = ?", (term,)).fetchone()
        return row[0] if row else 0

    def closest(self, word: str) -> list[str]:
        """The words within the edits allowed for *word*'s length, closest and most frequent first."""
        edits = 2 if len(word) >= TWO_EDITS_FROM else 1
        if self._by_length is None:
            self._by_length = {}
            for (known,) in self.db.execute("SELECT word FROM vocabulary"):
                self._by_length.setdefault(len(known), []).append(known)
        candidates = [known for size in range(len(word) - edits, len(word) + edits + 1) for known in self._by_length.get(size, ())]
        found = process.extract(word, candidates, scorer=OSA.distance, score_cutoff=edits, limit=50)
        return [known for known, _, _ in sorted(found, key=lambda match: match[1])]


def compile_query(query: SearchQuery, vocabulary: Vocabulary, languages: list[str]) -> Compiled:
    """The FTS5 expressions of *query* over an index of pages in *languages*."""
    compiled = Compiled("", "", None)
    groups = []
    for alternatives in query.required:
        groups.append(" OR ".join(_clause(clause, vocabulary, languages, compiled) for clause in alternatives))
    excluded = [_clause(clause, vocabulary, languages, None) for clause in query.excluded]
    exclusion = "".join(f" NOT ({expression})" for expression in excluded)
    compiled.all_of = " AND ".join(f"({group})" for group in groups)
    compiled.any_of = " OR ".join(f"({group})" for group in groups)
    if exclusion:
        compiled.all_of = f"({compiled.all_of}){exclusion}"
        compiled.any_of = f"({compiled.any_of}){exclusion}"
    words = [word for clause in query.clauses for word in clause.words]
    single = all(len(alternatives) == 1 for alternatives in query.required)
    if single and len(words) > 1 and len(query.required) > 1:
        compiled.phrase = _phrase(words, languages)
    return compiled


def _clause(clause: Clause, vocabulary: Vocabulary, languages: list[str], compiled: Compiled | None) -> str:
    if clause.is_phrase:
        if compiled is not None:
            compiled.terms.update(term for language in [None, *languages] for term in analysis.stem(list(clause.words), language))
        return _phrase(list(clause.words), languages)
    (word,) = clause.words
    forms = _forms(word, languages)
    if analysis.is_segmented(word):
        if compiled is not None:
            compiled.terms.add(word)
        return f'"{word}"*' if len(word) == 1 else f'"{word}"'
    if compiled is not None and len(word) >= ONE_EDIT_FROM and not any(vocabulary.documents(form) for form in forms):
        corrected = [known for known in vocabulary.closest(word) if any(vocabulary.documents(form) for form in _forms(known, languages))]
        if corrected:
            compiled.corrections[clause.text] = corrected[0]
            for known in corrected[:CORRECTIONS]:
                forms += [form for form in _forms(known, languages) if form not in forms]
    if compiled is not None:
        compiled.terms.update(forms)
    return " OR ".join(f'"{form}"' for form in forms)


def _forms(word: str, languages: list[str]) -> list[str]:
    """*word* (folded) and its stem in each language, each once."""
    return list(dict.fromkeys([word, *(analysis.stem([word], language)[0] for language in languages)]))


def _phrase(words: list[str], languages: list[str]) -> str:
    """Words at consecutive positions, stemmed alike in one of the languages (or not at all)."""
    variants = dict.fromkeys(" ".join(analysis.stem(words, language)) for language in [None, *languages])
    return " OR ".join(f'"{variant}"' for variant in variants)
