"""The query engine shared by ``tse query`` and ``tse serve``: a line in, ranked docIDs out.

``rank="tse"`` is SPEC 4 exactly (``and`` = min, ``or`` = sum); ``rank="bm25"``
orders the same matching documents by Okapi BM25 (``rules.queries.ranking``); both
read the SPEC index.  ``rank="relevance"`` reads the search index beside it
(``fulltext``) with the search box's query language (``rules.queries.searchquery``).
Pages listed in ``PAGEDIR/.tse-gone`` are never an answer, even from an
index written before they went.
"""

from __future__ import annotations

import functools
import logging
import os
from dataclasses import dataclass, field

import apsw

from ..fulltext.matching import Marks
from ..fulltext.searcher import Found, SearchIndex
from ..rules.files import pagedir
from ..rules.queries import query as rules
from ..rules.queries.query import Query, QueryError
from ..rules.queries.ranking import bm25_scores
from ..rules.queries.searchquery import SearchQuery, SearchQueryError, parse_search_query
from ..rules.web.duplicates import collapse_duplicates
from .docstore import DocStore, Document
from .storage import IndexReader

RANKINGS = ("tse", "bm25", "relevance")

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Answer:
    """What a query line gives: its parsed query (None when it could not be parsed),
    the querier's error message, or the ranked (docID, score) pairs."""

    query: Query | None
    error: str | None = None
    ranked: list[tuple[int, float]] = field(default_factory=list)
    # rank=relevance: the query parsed, whether the pages are partial matches, what to mark
    # (sequences of terms), and the words corrected (typed -> found).
    search_query: SearchQuery | None = None
    partial: bool = False
    marks: Marks = field(default_factory=list)
    corrections: dict[str, str] = field(default_factory=dict)
    # rank=relevance: a result -> the other pages of its group of duplicates that answered
    # (the same content, or joined by a canonical URL), shown as "also at".
    aliases: dict[int, list[int]] = field(default_factory=dict)
    # rank=relevance: the terms of *marks* to mark only in pages of some languages.
    mark_languages: dict[str, frozenset[str]] = field(default_factory=dict)
    # rank=relevance: the pages answering a run of Chinese or Japanese by its pieces apart, and
    # what they mark instead of *marks* (``Found.apart``).
    apart: frozenset[int] = frozenset()
    apart_marks: Marks = field(default_factory=list)
    # rank=relevance, partial matches: the words typed (required groups) no page holds (``Found.missing``).
    missing: tuple[str, ...] = ()
    # rank=relevance: those of *marks* that place a snippet's window, rarest first (``Found.placing``).
    placing: Marks = field(default_factory=list)
    # *error* is the index's, not the query's: a search index found damaged while it was read
    # (`tse serve` answers 503, not 400: the same query answers once the index is written again).
    index_failed: bool = False

    @property
    def words(self) -> list[str]:
        return rules.query_words(self.query) if self.query else []


class QueryEngine:
    """An index and its page directory, opened once, answering any number of queries."""

    def __init__(self, directory: str | os.PathLike, index: IndexReader, pages_checked: bool = False):
        """*pages_checked*: the document store was just found to match the page files (by the
        process that forked this one), which are not read again."""
        self.directory = directory
        self.index = index
        self.pages_checked = pages_checked
        self.gone = pagedir.gone_docs(directory)
        self._docs: DocStore | None = None
        self._stored_docs_checked = False
        self._docs_problem = ""  # why there is no store written with the index and pages (stored_docs)
        self._search: SearchIndex | str | None = None

    def stored_docs(self) -> DocStore | None:
        """The document store written with the index and these page files, or None (opened once, never built)."""
        if not self._stored_docs_checked:
            found = DocStore.open(
                self.index.path, self.index.size, self.index.digest, self.directory, not self.pages_checked
            )
            self._docs, self._docs_problem = (None, found) if isinstance(found, str) else (found, "")
            self._stored_docs_checked = True
        return self._docs if self._docs is not None and self._docs.from_file else None

    @property
    def docs_problem(self) -> str:
        """Why there is no document store written with the index and these page files ("" when there is one)."""
        self.stored_docs()
        return self._docs_problem

    @property
    def docs(self) -> DocStore:
        """The document store written with the index, else one built from the pages (once)."""
        if self._docs is None:
            self._docs = self.stored_docs()
            if self._docs is None:
                logger.warning("%s: reading the pages for titles and snippets", self._docs_problem)
                self._docs = DocStore.build(self.directory, self.index.size, self.index.digest)
        return self._docs

    @property
    def search_index(self) -> SearchIndex | str:
        """The search index written with the index and these pages (opened once), or why there is none."""
        if self._search is None:
            if self.stored_docs() is None:
                self._search = f"{self._docs_problem}: run tse index again"
            else:
                self._search = SearchIndex.open(self.index.path, self.index.size, self.index.digest)
                if isinstance(self._search, str):
                    self._search += ": run tse index again"
        return self._search

    def answer(
        self,
        line: str,
        ranking: str = "tse",
        *,
        limit_size: bool = False,
        language: str | None = None,
        preferred: str | None = None,
    ) -> Answer | None:
        """The answer to one query line; None for a blank line (SPEC 4: nothing to print).

        *limit_size* refuses lines longer than a search box accepts; *language* keeps only the
        pages in that language, *preferred* ranks them higher (rank=relevance only).
        """
        if rules.is_blank(line):
            return None
        if limit_size and (problem := rules.size_error(line)):
            return Answer(None, problem)
        if ranking == "relevance":
            return self._relevance(line, language, preferred)
        try:
            query = rules.parse_query(line)
        except QueryError as error:
            return Answer(None, str(error))
        problem = rules.structure_error(query)
        if problem:
            return Answer(query, problem)
        # A word's postings are decoded once a query, for every clause it is in and for BM25.
        postings = functools.cache(self._postings if self.gone else self.index.postings)
        scores = rules.score(query, postings)
        if ranking == "bm25" and scores:
            docs = self.docs
            scores = bm25_scores(
                scores, rules.query_words(query), postings, docs.lengths, docs.pages, docs.average_length
            )
        return Answer(query, None, rules.rank(scores))

    def _relevance(self, line: str, language: str | None, preferred: str | None = None) -> Answer:
        try:
            query = parse_search_query(line)
        except SearchQueryError as error:
            return Answer(None, str(error))
        index = self.search_index
        if isinstance(index, str):
            return Answer(None, f"rank=relevance needs the search index: {index}")
        try:
            found = self._found(index, query, language, preferred)
        except apsw.Error as error:  # damaged since it was opened (its checks passed)
            message = f"rank=relevance cannot read the search index ({error}): run tse index again without --update"
            return Answer(None, message, index_failed=True)
        ranked, aliases = collapse_duplicates(found.ranked, index.representatives)
        corrections = found.corrections
        if corrections and not (ranked and self._finds_pages(index, query.typed(corrections), language)):
            # A suggestion is made for what it finds: one finding nothing (a quoted phrase no page holds
            # once corrected either, "instalaltion -installation") would lead to an empty page again.
            corrections = {}
        return Answer(
            None,
            ranked=ranked,
            search_query=query,
            partial=found.partial,
            marks=found.marks,
            corrections=corrections,
            aliases=aliases,
            mark_languages=found.mark_languages,
            apart=found.apart,
            apart_marks=found.apart_marks,
            missing=found.missing,
            placing=found.placing,
        )

    def _found(
        self, index: SearchIndex, query: SearchQuery, language: str | None, preferred: str | None = None
    ) -> Found:
        """What the search index *index* finds for *query* among this index's pages (raises apsw.Error)."""
        return index.search(query, self.docs.lengths.keys(), self.gone, language, self.docs.titles, preferred)

    def _finds_pages(self, index: SearchIndex, line: str, language: str | None) -> bool:
        """Whether the query *line* (a suggestion) finds a page: searched as typed (a typo's search, a
        few milliseconds more)."""
        try:
            return bool(self._found(index, parse_search_query(line), language).ranked)
        except (SearchQueryError, apsw.Error):
            return False

    def document(self, doc_id: int) -> Document | None:
        return self.docs.document(doc_id)

    def documents(self, doc_ids: list[int]) -> dict[int, Document]:
        """``document`` of each of *doc_ids* that has one, read together."""
        return self.docs.documents(doc_ids)

    def close(self) -> None:
        """Close the document store and search index (opened again when used)."""
        if self._docs is not None:
            self._docs.close()
            self._docs = None
        self._stored_docs_checked = False
        if self._search is not None and not isinstance(self._search, str):
            self._search.close()
        self._search = None

    def _postings(self, word: str) -> dict[int, int]:
        """A word's postings without the gone pages (which an index updated since has not)."""
        return {doc_id: count for doc_id, count in self.index.postings(word).items() if doc_id not in self.gone}
