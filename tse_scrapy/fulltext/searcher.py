"""``rank=relevance``: a search query over the search index, ranked for people.

Which pages match is one FTS5 query: every required group, or (when no page
has them all) any of them, flagged as partial matches; scored in the same
statement when the scoring expression is the matching one (most queries), else
matched without scores.  A single character of a bigram script also matches
the pages holding it where it ends a run (another statement, over phrases_fts).
Their scores are BM25F-style, from FTS5's ``bm25()``: the headings, URL words
and body in one table (FTS5 sums each field's term frequency times its weight,
then saturates once by the row's length), the title and the anchor text each
in a table of its own (their own lengths and document frequencies), weighted
and added; pages holding the query's words as a phrase gain a bonus.

The index is read with apsw's own SQLite (3.54), not the system's (Debian 12:
3.40): its FTS5 matches and scores the known-item bench's queries about a fifth
faster, to the same rows and floats (docs/search.md), and the system's cannot
read the index's tables (``contentless_delete``, store.py).
"""

from __future__ import annotations

import heapq
import os
import re
import sys
import zlib
from collections.abc import Callable, Collection, Mapping, Set
from dataclasses import dataclass, field
from functools import lru_cache
from itertools import chain
from operator import itemgetter

import apsw

from ..rules.queries import fts5bm25
from ..rules.queries.searchquery import SearchQuery
from ..rules.queries.searchsnippet import HEAD_BYTES, Head, unpacked_head
from ..rules.text import analysis
from ..rules.text.pagefields import REST_CHARACTERS
from .bm25function import Bm25Function
from .matching import Compiled, Connection, KeptLanguage, Marks, Restricted, Vocabulary, compile_query
from .store import COUNTED_WITH, FIELDS, counted_key, open_checked, search_path

# Weights, chosen on the known-item benchmark (bench/RESULTS.md, docs/search.md).  A page's score is
# the BM25 of its headings, URL words and body (FTS5's bm25() over the fts table, each field weighed
# as TEXT_FIELDS says), plus TITLE_WEIGHT times the BM25 of its title (a table of its own), plus
# ANCHOR_WEIGHT times its anchor text's.
TEXT_FIELDS = {"title": 0.0, "headings": 2.0, "url": 1.0, "body": 1.0}
TITLE_WEIGHT = 2.0
ANCHOR_WEIGHT = 0.5
# Pages holding all the words as a phrase (among the first PHRASE_CANDIDATES) gain this share of their score.
PHRASE_BONUS = 0.5
# The pages holding a run of a bigram script's pieces apart are scored by its bigrams on at most one
# page in this many (``SearchIndex._rarer_bigrams``).
APART_SCORED_SHARE = 10
# The pages in the reader's language (its browser's Accept-Language) gain this share of their score (three
# times it), where the results are not kept to a language: a word many languages write alike
# ("installation", "Debian") finds the reader's pages first (0.5 and 1.0 left them 13th and 4th, 29th and
# 21st, on the all-languages known-item index), and a word of another language, "réseau", its own
# language's pages still.  Titles typed by a reader of another language: MRR 0.997, worst 0.987.
PREFERRED_LANGUAGE_BONUS = 2.0
PHRASE_CANDIDATES = 200
# The first TYPED_TITLE_CANDIDATES pages whose title holds the query's words as typed (the accents typed
# included) gain this share of their score: the index's terms are folded and stemmed, so that `Preliminaries`
# finds `Preliminares` (Portuguese) and `Què és` finds `Qué es` (Spanish) as well as the page that says
# them, which must not rank below (bench/RESULTS.md: with Catalan and Portuguese pages stemmed as such,
# such pages took the first place from the page whose title was typed).
TYPED_TITLE_BONUS = 0.5
# ... and this share when the query is the whole title (``SearchQuery.is_whole_title``): a person typing a
# page's title means that page, even where a translation's rarer stem scores it half again as much
# (`5.2. Accessibility` behind the French `5.2. Accessibilité`: 95.0 against 89.7 with the half).
WHOLE_TITLE_BONUS = 1.0
TYPED_TITLE_CANDIDATES = 20
# The titles and the anchor text are scored from memory (KeptField) for at most KEPT_SCORED matched
# pages (more: by FTS5, which scores only the rows holding a phrase); each field's rows read are kept
# to KEPT_TOKENS tokens in all (about 15 MB: the 20,000-page bench's titles hold 126,000); the
# phrases' counts are the vocabulary's (matching.Vocabulary.holding).  The anchor text only where all
# of it holds at most ANCHOR_TOKENS words: a page's can hold thousands (the 20,000-page bench's 1.26
# million would take about 77 MB, and rows forgotten would be read again and again).
KEPT_SCORED = 500
KEPT_TOKENS = 200_000
ANCHOR_TOKENS = 200_000
EXPRESSIONS_KEPT = 4_096  # the phrases of the last expressions scored from memory
EXPRESSION_KEPT_CHARACTERS = 1_000  # ... of at most this many characters (a query's can be tens of KB)
# The snippet heads a process keeps once read (``SearchIndex.snippet_heads``: a search's results'
# pages, popular pages again and again), to this many bytes in all as stored.
HEADS_KEPT_BYTES = 16_000_000
# A page's rest (store.py) read to at most this many bytes: REST_CHARACTERS of four bytes each.
REST_BYTES = 4 * REST_CHARACTERS
# The rests a process keeps once read (``SearchIndex.rests``), to this many characters in all: a page's
# rest is read again by every search its page answers past the text results show, and inflating and
# decoding it again (up to REST_CHARACTERS), then hashing the new string to find what later_snippet
# kept of it (searchsnippet's _later_texts, keyed by the text), cost each time.
RESTS_KEPT_CHARACTERS = 8_000_000
# Looking a page up in a form's list (FTS5 seeks it: about 13 us) costs about what reading this many
# rows of a list whole does: fewer pages than the lists' rows / this / the forms are looked up one by one.
ROWID_LOOKUP_ROWS = 40
# At most this many pages are looked up one by one (_matching_in), in each phrase of an expression:
# FTS5 seeks each page in each phrase's list (an expression of 80 phrases among 154 pages took 250 ms
# so, its pages read whole 11 ms).
MATCHED_AMONG = 500
# A query all of whose words are on most pages is scored in the body too (FTS5's walk of their positions)
# when it matches at most this many pages: 0.8 ms for "debian" on 1,342 of the known-item bench's pages.
COMMON_SCORED_PAGES = 5_000
# The pages holding a form, read for the stems of some languages only (_form_holding), kept by a process
# for the next searches (a query's words recur: "installation", "debian"), to this many pages in all
# (about 8 MB).
FORM_PAGES_KEPT = 200_000


@dataclass
class Found:
    """What a search gives: ranked (docID, score) pairs, whether they are partial matches, what to
    mark in snippets, and the words corrected (typed -> as pages spell it)."""

    ranked: list[tuple[int, float]]
    partial: bool = False
    marks: Marks = field(default_factory=list)
    corrections: dict[str, str] = field(default_factory=dict)
    # The terms of *marks* to mark only in pages of some languages (``Compiled.mark_languages``).
    mark_languages: dict[str, frozenset[str]] = field(default_factory=dict)
    # The pages holding a run of a bigram script only apart (``Compiled.apart``), and what their
    # snippets mark: *marks* and each bigram of the run (the others mark the run whole).
    apart: frozenset[int] = frozenset()
    apart_marks: Marks = field(default_factory=list)
    # Partial matches: the required words (groups, as typed) no page of the index holds at all.
    missing: tuple[str, ...] = ()
    # Of *marks*, those that place a snippet's window, rarest first (``SearchIndex._placing``).
    placing: Marks = field(default_factory=list)


class SearchIndex:
    """The search index beside a SPEC index, opened read-only once."""

    def __init__(self, db: Connection):
        self.db = db
        meta = dict(db.execute("SELECT key, value FROM meta"))
        self.languages = meta.get("languages", "").split()
        self.page_languages: dict[int, str] = dict(db.execute("SELECT doc_id, lang FROM pages"))
        # (Each language's pages, for set operations: a query of common words matches most pages.)
        grouped: dict[str, set[int]] = {}
        for doc_id, language in self.page_languages.items():
            grouped.setdefault(language, set()).add(doc_id)
        self.language_pages = {language: frozenset(pages) for language, pages in grouped.items()}
        self._form_pages: dict[tuple[str, str], frozenset[int]] = {}  # see FORM_PAGES_KEPT
        self._form_pages_kept = 0
        # The language whose stems a page of each language holds (``analysis.stems_language``), and the
        # pages holding each language's stems.
        self.stems_languages = {language: analysis.stems_language(language) for language in self.language_pages}
        by_stems: dict[str, set[int]] = {}
        for language, pages in self.language_pages.items():
            by_stems.setdefault(self.stems_languages[language], set()).update(pages)
        self.stems_language_pages = {language: frozenset(pages) for language, pages in by_stems.items()}
        self.pages = len(self.page_languages)
        # The term counts the index keeps, where they are those of its tables as they are now.
        counted = meta.get(COUNTED_WITH, "")
        self.vocabulary = Vocabulary(db, bool(counted) and counted == counted_key(db) and _has_table(db, "term_counts"))
        weights = [TEXT_FIELDS[name] for name in FIELDS]
        arguments = ", ".join(map(str, weights))
        self._bm25 = f"bm25(fts, {arguments})"
        # The same scores without FTS5's walk of each phrase's rows, where that costs less (bm25function.py).
        self._bm25_function: Bm25Function | None = None
        if Bm25Function.usable(weights):
            self._bm25_function = Bm25Function(db, "fts", self.vocabulary, "tse_bm25")
        self._python_bm25 = f"tse_bm25(fts, {arguments})"
        # Each table's rows, as its bm25() counts them (its averages record: see ``_add_scores``).
        self._table_rows = {table: _rows_of(db, table) for table in ("fts", "titles_fts", "anchors_fts")}
        self._has_beyond = db.execute("SELECT 1 FROM beyond_fts LIMIT 1").fetchone() is not None
        self._heads: dict[int, Head] = {}  # the snippet heads read (``snippet_heads``)
        self._heads_kept = 0  # their bytes as stored
        self._rests: dict[int, str] = {}  # the rests read (``rests``)
        self._rests_kept = 0  # their characters
        # Each page in a group of duplicates -> the page that stands for the group (store.py).
        self.representatives: dict[int, int] = dict(db.execute("SELECT doc_id, representative FROM groups"))
        # The titles' and anchor texts' scores worked out from their words (see KeptField).
        self.kept = {
            "titles_fts": KeptField(
                db, "titles_fts", "SELECT doc_id, title FROM pages WHERE doc_id IN ({})", self.vocabulary
            ),
            "anchors_fts": KeptField(
                db,
                "anchors_fts",
                "SELECT doc_id, terms FROM anchors WHERE doc_id IN ({})",
                self.vocabulary,
                ANCHOR_TOKENS,
            ),
        }

    @classmethod
    def open(cls, indexfile: str | os.PathLike, index_size: int, index_digest: bytes) -> SearchIndex | str:
        """The search index written with that SPEC index, or why there is none."""
        path = search_path(indexfile)
        # Read with apsw's SQLite (a newer FTS5 than the system's: see the module's docstring).
        db = open_checked(path, index_size, index_digest)
        if isinstance(db, str):
            return db
        try:
            return cls(db)
        except apsw.Error as error:
            db.close()
            return f"{path} cannot be read ({error})"

    def search(
        self,
        query: SearchQuery,
        pages: Set[int] | None = None,
        gone: Set[int] = frozenset(),
        language: str | None = None,
        titles: Callable[[list[int]], dict[int, str]] | None = None,
        preferred: str | None = None,
    ) -> Found:
        """The pages that answer *query*, best first: of *pages* (None: any), not *gone*, and in
        *language* when given; *titles*: the titles of pages, as shown (for TYPED_TITLE_BONUS); the pages
        in the language *preferred* (the reader's) ranked higher (PREFERRED_LANGUAGE_BONUS)."""
        kept_language = None
        if language is not None:
            kept_pages = self.language_pages.get(language, frozenset())
            kept_language = KeptLanguage(
                language,
                lambda form: len(self._form_holding(form) & kept_pages),
                lambda word: not self._form_holding(word, "phrases_fts").isdisjoint(kept_pages),
            )
        compiled = compile_query(query, self.vocabulary, self.languages, kept_language)
        weighed = self._forms_weighed(compiled)
        if self._bm25_function is not None:
            self._bm25_function.weighed = weighed.get("fts", {})
        try:
            return self._search(query, compiled, weighed, pages, gone, language, titles, preferred)
        finally:
            if self._bm25_function is not None:
                self._bm25_function.weighed = {}

    def _search(
        self,
        query: SearchQuery,
        compiled: Compiled,
        weighed: dict[str, dict[str, int]],
        pages: Set[int] | None,
        gone: Set[int],
        language: str | None,
        titles: Callable[[list[int]], dict[int, str]] | None,
        preferred: str | None,
    ) -> Found:
        """``search`` of *query* compiled, its words' forms *weighed* as one (``_forms_weighed``)."""
        # Long pages holding an excluded word past their body, where fts does not see it; pages
        # holding an excluded quoted phrase as typed.
        excluded: set[int] = set()
        if compiled.excluded and self._has_beyond:
            excluded = self._matching(compiled.excluded, "beyond_fts")
        for phrase in compiled.exact_excluded:
            excluded |= self._matching(phrase, "phrases_fts")

        def wanted(found: set[int]) -> set[int]:
            # Set operations, not a test a page: a query of common words matches most pages.
            if pages is not None:
                found &= pages
            found -= gone
            found -= excluded
            if compiled.excluded_restricted:
                found -= self._excluded_in_their_languages(found, compiled)
            if language is not None:
                found &= self.language_pages.get(language, frozenset())
            return found

        documents = self.vocabulary.documents
        weighed_fts = weighed.get("fts", {})

        def documents_weighed(term: str) -> int:
            return weighed_fts.get(term) or documents(term)

        # Which pages match: every required group (or, when no page has them all, any), without
        # scoring unless the scoring expression is the same: FTS5 then only walks the lists of
        # pages, not every position of every word.  Scored without the groups whose words are on
        # most pages (no weight in FTS5's BM25, the most positions to read): the pages matched hold
        # them anyway.  A query of only such words is ranked by the titles and anchor text alone.
        matching = compiled.all_of_but_everywhere(documents, self.pages)
        scoring = compiled.rare(documents_weighed, self.pages, " AND ")
        bm25 = self._body_bm25(scoring, compiled.scoring_cost(documents, self.pages))
        scored: list[tuple[int, float | None]] | None = None
        if scoring == matching:
            # (Most queries: no common word, no exclusion.)  The scores' statement matches the same
            # pages: one statement, not two walks of the same lists.
            scored = self._scores("fts", bm25, scoring)
            matched = self._exactly(wanted({doc_id for doc_id, _ in scored}), compiled, False)
        else:
            matched = self._exactly(wanted(self._matching(matching)), compiled, False)
        matched = self._in_their_languages(matched, compiled)
        # Pages answering through a single character of a bigram script held where it ends a run: not
        # matched by fts, scored below by the words they hold, ranked after the others.
        ending_runs = self._exactly(wanted(self._ending_runs(compiled, matched)), compiled, False, True)
        ending_runs = self._in_their_languages(ending_runs, compiled)
        # A run of a bigram script typed without spaces (as Chinese and Japanese are typed): the pages
        # holding its pieces apart answer too (``matching._apart``), after those holding it as typed, or
        # alone when none does, not flagged partial then.
        apart = self._apart(compiled, matched) if compiled.apart else set()
        apart = self._in_their_languages(self._exactly(wanted(apart), compiled, False), compiled)
        after_apart = apart if matched else set()
        partial = False
        if not matched and not ending_runs and not apart and compiled.any_of != compiled.all_of:
            matched, partial = self._exactly(wanted(self._matching(compiled.any_of)), compiled, True), True
            matched = self._in_their_languages(matched, compiled, partial=True)
            ending_runs = wanted(self._ending_runs(compiled, matched, partial=True))
            ending_runs = self._in_their_languages(ending_runs, compiled, partial=True)
            scoring, scored = compiled.rare(documents_weighed, self.pages, " OR ", True), None
            bm25 = self._bm25  # (any group: the cost worked out above is all the groups')
        if not matched and not ending_runs and not apart:
            return Found([], False, compiled.marks, compiled.corrections, compiled.mark_languages)
        scores = dict.fromkeys(matched | ending_runs, 0.0)
        terms = [term for _, _, group_terms in compiled.groups for term in group_terms]
        for table in self.kept:
            self.vocabulary.count(terms, table)
        if scored is not None:
            _add_weighed(scores, scored, 1.0)
            self._add_weighing(scores, "fts", bm25, 1.0, scoring, weighed_fts)
        elif not scores:
            pass  # (only pages holding a run apart: scored below)
        elif scoring:
            self._add_scores(scores, "fts", bm25, 1.0, scoring, weighed_fts)
        elif not partial and len(scores) <= COMMON_SCORED_PAGES:
            # Every group's words on most pages (a small site's own words, "installation" on an installation
            # guide's): FTS5's BM25 weighs them 1e-6 an instance (an IDF at most 0), which still orders the
            # pages by how often and how densely they hold them where the titles and anchor text do not
            # (a tester's find: a page saying it 7 times tied with those saying it once, in docID order).
            self._add_scores(scores, "fts", self._bm25, 1.0, compiled.all_of, weighed_fts)
        # (Partial matches are all scored so above; with one group they hold nothing else it could score.)
        scored_apart = ending_runs and not partial and len(compiled.groups) > 1
        if scored_apart and (words := compiled.rare(documents_weighed, self.pages, " OR ")):
            ending_scores = dict.fromkeys(ending_runs, 0.0)
            self._add_scores(ending_scores, "fts", self._bm25, 1.0, words, weighed_fts)
            for doc_id, score in ending_scores.items():
                scores[doc_id] += score
        self._add_title_and_anchor_scores(scores, compiled, partial, weighed)
        if apart:  # scored as partial matches are, by any of the runs' bigrams, apart from the others
            apart_scores = dict.fromkeys(apart, 0.0)
            self._add_scores(apart_scores, "fts", self._bm25, 1.0, self._rarer_bigrams(compiled.apart_bigrams))
            self._add_title_and_anchor_scores(apart_scores, compiled, True, weighed)
            scores.update(apart_scores)
        after = ending_runs | after_apart
        candidates = None  # the first PHRASE_CANDIDATES pages, when worked out
        if compiled.phrase and len(scores) > 1:
            candidates = _first(scores, PHRASE_CANDIDATES, after)
            self._add_phrase_bonus(scores, compiled.phrase, candidates)
        if titles is not None and len(scores) > 1:
            # A bonus only raises the scores it is given (none is below 0): the first pages after it are
            # among the first PHRASE_CANDIDATES before it, not looked for among all again.
            if candidates and min(scores[doc_id] for doc_id in candidates) < 0:
                candidates = None
            _add_typed_title_bonus(scores, query, titles, after, candidates)
        if preferred is not None and language is None and len(scores) > 1:
            for doc_id in self.language_pages.get(preferred, frozenset()) & scores.keys():
                scores[doc_id] *= 1 + PREFERRED_LANGUAGE_BONUS
        # The pages holding a character only where it ends a run after the others: only where it starts
        # a bigram (or stands alone) can FTS5 weigh it, and the others rank as they would without them.
        # So are those holding a run's pieces apart, after those holding it.
        ranked = _ranked(scores, ending_runs, after_apart)
        marks = compiled.marks + compiled.loose_marks if partial else compiled.marks
        apart_marks = compiled.marks + compiled.loose_marks if apart else []
        missing = self._held_by_none(compiled) if partial else ()
        return Found(
            ranked,
            partial,
            marks,
            compiled.corrections,
            compiled.mark_languages,
            frozenset(apart),
            apart_marks,
            missing,
            self._placing(marks),
        )

    def _placing(self, marks: Marks) -> Marks:
        """The marks that place a snippet's window (``searchsnippet.snippet``): all but the commonest,
        by the pages holding their terms (a phrase's by its rarest word's); none for marks all as
        common (or one mark): the first mark of any places it then."""
        if len(marks) < 2:
            return []
        documents = self.vocabulary.documents
        self.vocabulary.count(term for sequence in marks for terms in sequence for term in terms)
        pages = [min(sum(map(documents, terms)) for terms in sequence) if sequence else 0 for sequence in marks]
        if min(pages) == max(pages):
            return []
        commonest = pages.index(max(pages))
        order = sorted((count, number) for number, count in enumerate(pages) if number != commonest)
        return [marks[number] for _, number in order]

    def _held_by_none(self, compiled: Compiled) -> tuple[str, ...]:
        """The required groups, as typed (``Compiled.group_texts``), that no page of the index holds in
        any form (their FTS5 expression matches none), for a partial answer to name: a word only some
        pages of another language hold, or a phrase only stemmed, is not named."""
        sql = "SELECT 1 FROM fts WHERE fts MATCH ? LIMIT 1"  # (the first page found ends the walk)
        return tuple(
            text
            for (expression, _, _), text in zip(compiled.groups, compiled.group_texts, strict=True)
            if text is not None and self.db.execute(sql, (expression,)).fetchone() is None
        )

    def _forms_weighed(self, compiled: Compiled) -> dict[str, dict[str, int]]:
        """For each table scored from the vocabulary's counts (fts, titles_fts, anchors_fts): the pages
        each form of a word of several forms counts as holding, where that is not its own count: the
        most any of the word's forms is held by.  A word's forms are one word: its stem in each of the
        index's languages ("debian": "debi" in Spanish, "deb" in Catalan), its corrections.  Weighed
        apart, a language's rarer stem gave its pages the higher IDF: "debian" ranked every Spanish and
        Catalan page above the English and French ones.  The most, as Lucene's SynonymQuery and its
        blended fuzzy terms count a word's forms (the pages holding any of them, added up across
        languages, would count some pages twice).  A form of two words typed ("debian debi") counts as
        the fewer of their two: a word typed is never made commoner than its own forms make it."""
        weighed: dict[str, dict[str, int]] = {}
        if not any(len(forms) > 1 for forms in compiled.word_forms):
            return weighed
        for table in ("fts", *self.kept):
            own: dict[str, int] = {}
            most_of: dict[str, int] = {}  # each form: the fewest, of the words it is a form of, of their commonest
            for forms in compiled.word_forms:
                if not forms:  # (a word quoted alone that no page holds in any form: "debian "xyzzy"")
                    continue
                pages = [self.vocabulary.documents(form, table) for form in forms]
                most = max(pages)
                for form, held in zip(forms, pages, strict=True):
                    own[form] = held
                    most_of[form] = min(most_of.get(form, most), most)
            counts = {form: most for form, most in most_of.items() if 0 < own[form] < most}
            if counts:
                weighed[table] = counts
        return weighed

    def _body_bm25(self, expression: str | None, cost: tuple[int, int] | None) -> str:
        """The bm25() to score *expression* over the fts table with (*cost*: ``Compiled.scoring_cost``,
        None: not known): FTS5's own, or the same worked out in Python (``bm25function``) where that
        costs less and the expression is plain phrases, as that function needs."""
        if self._bm25_function is None or cost is None or not expression:
            return self._bm25
        rows, walked = cost
        phrases = expression.count('"') // 2
        if not fts5bm25.plain_phrases(expression) or not Bm25Function.worth_it(rows, phrases, walked):
            return self._bm25
        return self._python_bm25

    def snippet_heads(self, doc_ids: list[int]) -> dict[int, Head]:
        """What the snippets of the pages *doc_ids* work out first, stored when they were indexed (a
        page without one, or with one this code does not read, is left out: its snippet is then
        worked out whole)."""
        kept = self._heads
        found = {doc_id: kept[doc_id] for doc_id in doc_ids if doc_id in kept}
        missing = [doc_id for doc_id in doc_ids if doc_id not in kept]
        try:
            for start in range(0, len(missing), 500):
                chunk = missing[start : start + 500]
                marks = ",".join("?" * len(chunk))
                sql = f"SELECT doc_id, head FROM heads WHERE doc_id IN ({marks}) AND length(head) <= ?"
                for doc_id, blob in self.db.execute(sql, (*chunk, HEAD_BYTES)):
                    head = unpacked_head(blob)
                    if head is not None:
                        found[doc_id] = head
                        if self._heads_kept + len(blob) <= HEADS_KEPT_BYTES:
                            kept[doc_id] = head
                            self._heads_kept += len(blob)
        except apsw.Error:  # a file altered since it was written: the table is gone
            return {}
        return found

    def rests(self, doc_ids: list[int]) -> dict[int, str]:
        """The text past the stored text of each of the pages *doc_ids* that has one (``store.py``'s
        rests), for the snippets of pages that match only there; bounded (REST_BYTES), a damaged
        one left out."""
        kept = self._rests
        found = {doc_id: kept[doc_id] for doc_id in doc_ids if doc_id in kept}
        missing = [doc_id for doc_id in doc_ids if doc_id not in found]
        if not missing:
            return found
        try:
            marks = ",".join("?" * len(missing))
            for doc_id, blob in self.db.execute(f"SELECT doc_id, rest FROM rests WHERE doc_id IN ({marks})", missing):
                inflate = zlib.decompressobj()
                try:
                    rest = found[doc_id] = inflate.decompress(blob, REST_BYTES).decode("utf-8", "replace")
                except (TypeError, zlib.error):
                    continue
                if self._rests_kept + len(rest) > RESTS_KEPT_CHARACTERS:
                    kept.clear()
                    self._rests_kept = 0
                if len(rest) <= RESTS_KEPT_CHARACTERS:
                    kept[doc_id] = rest
                    self._rests_kept += len(rest)
        except apsw.Error:  # a file altered since it was written: the table is gone
            return {}
        return found

    def _matching(self, expression: str, table: str = "fts") -> set[int]:
        """The pages of *table* that match *expression*."""
        rows = self.db.execute(f"SELECT rowid FROM {table} WHERE {table} MATCH ?", (expression,))
        return set(chain.from_iterable(rows))

    def _stems_language(self, doc_id: int) -> str:
        """The language whose stems page *doc_id* holds (``analysis.stems_language``)."""
        return self.stems_languages.get(self.page_languages.get(doc_id, ""), analysis.UNSTEMMED_AS)

    def _in_their_languages(self, matched: set[int], compiled: Compiled, partial: bool = False) -> set[int]:
        """*matched* without the pages that answer a required group (*partial*: every group they answer)
        only through forms that are not the stems of its words in their language
        (``Compiled.restricted``): "in", the Catalan stem of "init", is on most English pages as the
        English "in"."""
        if not matched or not compiled.restricted:
            return matched
        # The pages matched, by the language whose stems they hold (``analysis.stems_language``).
        by_language = {language: matched & pages for language, pages in self.stems_language_pages.items()}
        wrong = [self._answering_otherwise(group, by_language) for group in compiled.restricted]
        suspects = set().union(*wrong)
        if not partial or not suspects:
            return matched - suspects
        # A partial match is kept when it answers some group in its language: a group of no such
        # forms, or one of its language's forms of one.
        restricted = {group.group: group for group in compiled.restricted}
        # The groups of no such forms answer alike in every language: their pages in doubt read in
        # one statement; then a language's forms of each other group, each read once for every
        # language.  (An expression of them all a language took seconds for a query of many words,
        # or of a typo beside a Japanese character: a tester's find.)
        alike = [loose for number, (_, loose, _) in enumerate(compiled.groups) if number not in restricted]
        kept = self._matching_in(" OR ".join(f"({expression})" for expression in alike), suspects) if alike else set()
        holding: dict[str, set[int]] = {}

        def held(expression: str) -> set[int]:
            if expression not in holding:
                holding[expression] = self._matching_in(expression, suspects - kept)
            return holding[expression]

        for language, pages in by_language.items():
            doubted = pages & suspects
            for group in compiled.restricted:
                own = [f'"{form}"' for form in group.own(language)]
                for expression in [*own, group.others] if group.others else own:
                    if not (doubted := doubted - kept):
                        break
                    kept |= doubted & held(expression)
        return matched - (suspects - kept)

    def _answering_otherwise(self, group: Restricted, by_language: dict[str, set[int]]) -> set[int]:
        """The pages of *by_language* holding forms of *group* that are not their language's, and none
        that is nor its clauses that are no word.  A form's pages are read only when pages of a
        language it is not a stem of were matched, or those pages looked up one by one when that costs
        less (``_looked_up_one_by_one``: a title's words match few pages, a stem may be on thousands)."""
        doubted: dict[str, set[int]] = {}
        for form, where in group.forms.items():
            elsewhere = [
                (language, pages) for language, pages in by_language.items() if pages and language not in where
            ]
            if not elsewhere:
                continue
            asked = set().union(*(pages for _, pages in elsewhere))
            if self._looked_up_one_by_one((form,), asked):
                pages_holding = self._matching_in(f'"{form}"', asked)
            else:
                pages_holding = self._form_holding(form)
            for language, pages in elsewhere:
                if found := pages & pages_holding:
                    doubted.setdefault(language, set()).update(found)
        suspects: dict[tuple[str, ...], set[int]] = {}
        for language, pages in doubted.items():
            suspects.setdefault(group.own(language), set()).update(pages)
        wrong: set[int] = set()
        for own, held in suspects.items():
            if held and group.others:
                held = held - self._matching_in(group.others, held)
            if held and own:
                if self._looked_up_one_by_one(own, held):
                    held = held - self._matching_in(" OR ".join(f'"{form}"' for form in own), held)
                else:  # the forms' pages read, the commonest first, until no page is left in doubt
                    for form in sorted(own, key=self.vocabulary.documents, reverse=True):
                        if not held:
                            break
                        held = held - self._form_holding(form)
            wrong |= held
        return wrong

    def _looked_up_one_by_one(self, forms: tuple[str, ...], doc_ids: set[int]) -> bool:
        """Whether seeking the pages *doc_ids* in the lists of *forms* (FTS5 seeks each page in each
        list: ROWID_LOOKUP_ROWS) costs less than reading the lists whole (and none is kept)."""
        if all(("fts", form) in self._form_pages for form in forms):
            return False
        return len(doc_ids) * len(forms) * ROWID_LOOKUP_ROWS < sum(map(self.vocabulary.documents, forms))

    def _excluded_in_their_languages(self, found: set[int], compiled: Compiled) -> set[int]:
        """The pages of *found* holding an excluded word's form that is its stem in some languages only
        (``Compiled.excluded_restricted``; the others are in the expressions' NOT), anywhere, when it is
        their language's (``analysis.stems_language``)."""
        dropped: set[int] = set()
        tables = ("fts", "beyond_fts") if self._has_beyond else ("fts",)
        for restricted in compiled.excluded_restricted:
            for language, pages in self.stems_language_pages.items():
                if candidates := found & pages:
                    for form, where in restricted.items():
                        for table in tables if language in where else ():
                            dropped |= candidates & self._form_holding(form, table)
        return dropped

    def _form_holding(self, form: str, table: str = "fts") -> frozenset[int]:
        """The pages holding *form* in *table* (fts, the words of phrases_fts, or the terms past long pages'
        bodies in beyond_fts), read or kept (FORM_PAGES_KEPT: the least used dropped)."""
        key = (table, form)
        found = self._form_pages.pop(key, None)  # (put back last: the last used)
        if found is None:
            expression = f'{{terms}} : "{form}"' if table == "beyond_fts" else f'"{form}"'
            found = frozenset(self._matching(expression, table))
            self._form_pages_kept += len(found) + 1
            while self._form_pages_kept > FORM_PAGES_KEPT and self._form_pages:
                self._form_pages_kept -= len(self._form_pages.pop(next(iter(self._form_pages)))) + 1
        self._form_pages[key] = found
        return found

    def _matching_in(self, expression: str, doc_ids: set[int]) -> set[int]:
        """Those of the pages *doc_ids* matching *expression* in fts: FTS5 seeks each page in each phrase
        (few pages, few phrases), or (more than MATCHED_AMONG seeks) the pages of the whole expression
        are read."""
        if len(doc_ids) * max(1, expression.count('"') // 2) > MATCHED_AMONG:
            return self._matching(expression) & doc_ids
        found: set[int] = set()
        ordered = sorted(doc_ids)
        marks = ",".join("?" * len(ordered))
        sql = f"SELECT rowid FROM fts WHERE fts MATCH ? AND rowid IN ({marks})"
        found.update(chain.from_iterable(self.db.execute(sql, (expression, *ordered))))
        return found

    def _add_title_and_anchor_scores(
        self, scores: dict[int, float], compiled: Compiled, loose: bool, weighed: dict[str, dict[str, int]]
    ) -> None:
        """The bm25() of the query's groups (*loose*: their loose expressions, ``Compiled.rare``) in the
        titles and the anchor text of the pages in *scores*, each table's weight times, added; a word's
        forms *weighed* as one (``_forms_weighed``)."""
        documents = self.vocabulary.documents
        for table, weight in (("titles_fts", TITLE_WEIGHT), ("anchors_fts", ANCHOR_WEIGHT)):
            counts = weighed.get(table, {})
            expression = compiled.rare(
                lambda term, table=table, counts=counts: counts.get(term) or documents(term, table),
                self.pages,
                " OR ",
                loose,
            )
            if not expression:
                continue
            if self.kept[table].add_scores(
                scores, weight, expression, compiled.mark_languages, self._stems_language, counts
            ):
                continue
            # (More pages than are scored from memory.)
            self._add_scores(scores, table, f"bm25({table})", weight, expression, counts)

    def _rarer_bigrams(self, bigrams: list[str]) -> str:
        """An expression of any of *bigrams* but those on more than one page in APART_SCORED_SHARE (at
        least the two rarest): they weigh little in BM25, and their pages are most of the rows it would
        score (the known-item bench's Chinese, Japanese and Korean titles: 453 rows, 95 without them)."""
        documents = self.vocabulary.documents
        self.vocabulary.count(bigrams)
        rarer = [bigram for bigram in bigrams if documents(bigram) * APART_SCORED_SHARE <= self.pages]
        return " OR ".join(f'"{bigram}"' for bigram in rarer or sorted(bigrams, key=documents)[:2])

    def _apart(self, compiled: Compiled, matched: set[int]) -> set[int]:
        """The pages not in *matched* that answer every required group, a run of a bigram script by
        its pieces anywhere (``Compiled.apart``), and none of the excluded clauses."""
        found: set[int] | None = None
        for table, expression in compiled.apart:
            pages = self._matching(expression, table)
            found = pages - matched if found is None else found & pages
            if not found:
                return set()
        if found and compiled.apart_excluded:
            found -= self._matching(compiled.apart_excluded)
        return found or set()

    def _ending_runs(self, compiled: Compiled, matched: set[int], partial: bool = False) -> set[int]:
        """The pages not in *matched* that answer the query (*partial*: any of its groups) through a
        single character of a bigram script held where it ends a run, starting no bigram for the fts
        expression to find (``Compiled.characters``), and none of its excluded clauses.  Most queries
        have no such character; with one, most pages holding it are matched: the other groups' lists
        are read only when some are not."""
        if not compiled.characters:
            return set()
        holding = " OR ".join(f"({characters})" for characters, _ in compiled.characters)
        found = self._matching(holding, "phrases_fts") - matched
        if not partial:
            groups = compiled.characters
            for characters, expression in groups if len(groups) > 1 else ():  # (one: answered by any)
                if found:
                    held = self._matching(characters, "phrases_fts")
                    found &= held | self._matching(expression) if expression else held
            if found and compiled.others_all_of:
                found &= self._matching(compiled.others_all_of)
                return found
        if found and compiled.excluded_any:
            found -= self._matching(compiled.excluded_any)
        return found

    def _exactly(self, matched: set[int], compiled: Compiled, partial: bool, characters: bool = False) -> set[int]:
        """The pages of *matched* whose quoted phrases stand as typed (FTS5 matched them stemmed): with
        every group holding one answered so (*partial*: any group answered); *characters*: also by a
        single character of the group held where it ends a run (``_ending_runs``)."""
        if not matched or not compiled.exact:
            return matched

        def answering(phrases: list[str], others: str | None, held: str | None) -> set[int]:
            found = self._matching(others) & matched if others else set()
            for phrase in phrases:
                found |= self._matching(phrase, "phrases_fts") & matched
            if held and characters:
                found |= self._matching(held, "phrases_fts") & matched
            return found

        if partial:
            kept = self._matching(compiled.plain_any_of) & matched if compiled.plain_any_of else set()
            for phrases, others, held in compiled.exact:
                kept |= answering(phrases, others, held)
            return kept
        for phrases, others, held in compiled.exact:
            matched = matched & answering(phrases, others, held)
        return matched

    def _add_scores(
        self,
        scores: dict[int, float],
        table: str,
        bm25: str,
        weight: float,
        expression: str,
        weighed: Mapping[str, int] | None = None,
    ) -> None:
        """The BM25 in *table* of the pages in *scores*, times *weight*, added (bm25() is lower for
        better matches), the forms of *weighed* weighed so (``_add_weighing``).  Another table's
        matches add to a page's score; alone, they do not make a page an answer."""
        _add_weighed(scores, self._scores(table, bm25, expression), weight)
        if weighed:
            self._add_weighing(scores, table, bm25, weight, expression, weighed)

    def _add_weighing(
        self,
        scores: dict[int, float],
        table: str,
        bm25: str,
        weight: float,
        expression: str,
        weighed: Mapping[str, int],
    ) -> None:
        """What FTS5's *bm25* of *expression* in *table* lacks, for the pages in *scores*, to weigh the
        forms of *weighed* as held by that many rows (``_forms_weighed``), added.  Its bm25() is a sum
        over the expression's phrases of each one's IDF times its saturated frequency in the row: a
        form's part is its own bm25() alone, and it is weighed anew by that part times the ratio of the
        two IDFs, less one (a statement a form, over its own rows: a rarer form's, the fewer).  Nothing
        for the Python bm25() (``bm25function``), which weighs them so itself."""
        rows = self._table_rows.get(table, 0)
        if not bm25.startswith("bm25(") or not rows:
            return
        for form in sorted(set(_single_terms(expression)) & weighed.keys()):
            own = self.vocabulary.documents(form, table)
            if not own:
                continue
            ratio = fts5bm25.idf(rows, weighed[form]) / fts5bm25.idf(rows, own) - 1.0
            if ratio:
                _add_weighed(scores, self._scores(table, bm25, f'"{form}"'), weight * ratio)

    def _scores(self, table: str, bm25: str, expression: str) -> list[tuple[int, float | None]]:
        """The pages of *table* that match *expression*, each with its *bm25*."""
        return self.db.execute(f"SELECT rowid, {bm25} FROM {table} WHERE {table} MATCH ?", (expression,)).fetchall()

    def _add_phrase_bonus(self, scores: dict[int, float], phrase: str, candidates: list[int]) -> None:
        """The bonus of the pages *candidates* (the first PHRASE_CANDIDATES) that hold *phrase*."""
        # The phrase over every page, not restricted by rowid: FTS5 would evaluate it once per rowid.
        for doc_id in self._matching(phrase).intersection(candidates):
            scores[doc_id] *= 1 + PHRASE_BONUS

    def close(self) -> None:
        self.db.close()


class KeptField:
    """A one-column FTS5 table (titles, anchors) scored as its ``bm25()`` does (``rules.queries.fts5bm25``)
    from its rows' tokens, read as needed and kept: FTS5 would walk each phrase's whole list of rows
    a query to count them, and score every row holding one, where only the matched pages' are wanted.

    Not thread-safe: the app's handlers run on its event loop's thread (search/app.py)."""

    def __init__(self, db: Connection, table: str, rows: str, vocabulary: Vocabulary, largest: int | None = None):
        """*rows*: the query giving the docIDs and texts as inserted in *table* of the docIDs in its
        ``{}``; *vocabulary*: the index's, which counts a word's rows; *largest*: the most tokens the
        table may hold in all to be scored here (None: any)."""
        self.db = db
        self.table = table
        self.vocabulary = vocabulary
        self._rows_sql = rows
        record = db.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
        try:
            self.count, tokens = fts5bm25.averages(record[0]) if record else (0, 0)
            self.readable = largest is None or tokens <= largest
        except ValueError:  # a record this code does not read: FTS5 scores every query
            self.count, tokens, self.readable = 0, 0, False
        # As FTS5 divides: each count a double first.
        self.average = float(tokens) / float(self.count) if self.count else 0.0
        self.rows: dict[int, tuple[str, ...]] = {}
        self._tokens_kept = 0

    def add_scores(
        self,
        scores: dict[int, float],
        weight: float,
        expression: str,
        only_in: Mapping[str, Collection[str]] | None = None,
        stems_language: Callable[[int], str] | None = None,
        weighed: Mapping[str, int] | None = None,
    ) -> bool:
        """The bm25() of *expression* of the pages in *scores*, times *weight*, added, as
        ``SearchIndex._add_scores`` adds FTS5's; False (nothing added) when it is FTS5's to do: an
        expression other than phrases joined by OR (a prefix query, say), more than KEPT_SCORED
        pages, an averages record not read, a table of more tokens than *largest*.  A term of
        *only_in* (``Compiled.mark_languages``) counts only on the pages of its languages (by
        *stems_language*): elsewhere it is another word, and the bm25() is that of the others.  A word
        of *weighed* counts as held by its number of rows there (``SearchIndex._forms_weighed``)."""
        phrases = _expression_phrases(expression)
        if phrases is None or len(scores) > KEPT_SCORED or not self.readable:
            return False
        if not self.average:  # no row holds a token: none matches
            return True
        held = [(phrase, self.held(phrase)) for phrase in phrases]
        # A phrase no row holds adds exactly 0.0 to every row's sum (most of a word's stems in the
        # index's other languages): left out, the float is the same.
        phrases_held = [phrase for phrase, rows in held if rows]
        weighed = weighed or {}
        idfs = [
            fts5bm25.idf(self.count, weighed.get(phrase[0], rows) if len(phrase) == 1 else rows)
            for phrase, rows in held
            if rows
        ]
        if not phrases_held:
            return True
        rows = self._read(scores.keys())
        # The phrases scored on a page of a language, their IDFs, and their first tokens: a row holding
        # no phrase's first token holds no phrase, and is not scored (FTS5 would not return it).
        every = (phrases_held, idfs, frozenset(phrase[0] for phrase in phrases_held))
        by_language: dict[str, tuple[list[tuple[str, ...]], list[float], frozenset[str]]] = {}

        def scored(doc_id: int) -> tuple[list[tuple[str, ...]], list[float], frozenset[str]]:
            if not only_in or stems_language is None:
                return every
            language = stems_language(doc_id)
            found = by_language.get(language)
            if found is None:
                kept = [
                    (phrase, idf)
                    for phrase, idf in zip(phrases_held, idfs, strict=True)
                    if len(phrase) > 1 or phrase[0] not in only_in or language in only_in[phrase[0]]
                ]
                found = by_language[language] = (
                    [phrase for phrase, _ in kept],
                    [idf for _, idf in kept],
                    frozenset(phrase[0] for phrase, _ in kept),
                )
            return found

        for doc_id in scores:
            tokens = rows.get(doc_id)
            phrases, phrase_idfs, firsts = scored(doc_id)
            held_any = tokens and not firsts.isdisjoint(tokens)
            score = fts5bm25.bm25(tokens, phrases, phrase_idfs, self.average) if held_any else None
            if score is not None:
                scores[doc_id] -= weight * score
        return True

    def _read(self, doc_ids: Collection[int]) -> dict[int, tuple[str, ...]]:
        """The rows kept, with those of *doc_ids* among them (an empty title as no tokens)."""
        missing = [doc_id for doc_id in doc_ids if doc_id not in self.rows]
        if not missing:
            return self.rows
        sql = self._rows_sql.format(", ".join("?" * len(missing)))
        read = dict.fromkeys(missing, ())
        for doc_id, text in self.db.execute(sql, missing):
            # Interned: a word in many titles (a site's name) is kept once.
            read[doc_id] = tuple(map(sys.intern, fts5bm25.ascii_tokens(text)))
        size = _size(read)
        if self._tokens_kept + size > KEPT_TOKENS:  # the others forgotten
            self.rows = {doc_id: self.rows[doc_id] for doc_id in doc_ids if doc_id in self.rows}
            self._tokens_kept = _size(self.rows)
        self.rows.update(read)
        self._tokens_kept += size
        return self.rows

    def held(self, phrase: tuple[str, ...]) -> int:
        """How many rows hold *phrase*."""
        return self.vocabulary.holding(phrase, self.table)


def _expression_phrases(expression: str) -> tuple[tuple[str, ...], ...] | None:
    """``fts5bm25.expression_phrases``, kept when short: the titles and the anchor text are scored for
    the same expression, and queries repeat."""
    if len(expression) <= EXPRESSION_KEPT_CHARACTERS:
        return _kept_expression_phrases(expression)
    found = fts5bm25.expression_phrases(expression)
    return None if found is None else tuple(found)


@lru_cache(maxsize=EXPRESSIONS_KEPT)
def _kept_expression_phrases(expression: str) -> tuple[tuple[str, ...], ...] | None:
    found = fts5bm25.expression_phrases(expression)
    return None if found is None else tuple(found)


def _add_typed_title_bonus(
    scores: dict[int, float],
    query: SearchQuery,
    titles: Callable[[list[int]], dict[int, str]],
    after: Set[int],
    among: Collection[int] | None = None,
) -> None:
    """The bonus of the first TYPED_TITLE_CANDIDATES pages (but those ranked *after* the others; of
    *among* only, when given) whose title holds the query's words as typed, the larger one where
    they are all of it."""
    for doc_id, title in titles(_first(scores, TYPED_TITLE_CANDIDATES, after, among)).items():
        if query.answered_as_typed(title):
            scores[doc_id] *= 1 + (WHOLE_TITLE_BONUS if query.is_whole_title(title) else TYPED_TITLE_BONUS)


def _first(scores: dict[int, float], count: int, after: Set[int], among: Collection[int] | None = None) -> list[int]:
    """The first *count* pages of *scores* as they rank (best score first, then the lowest docID), but
    those ranked *after* the others; of *among* only, when given."""
    candidates = scores if among is None else {doc_id: scores[doc_id] for doc_id in among}
    if after:
        candidates = {doc_id: score for doc_id, score in candidates.items() if doc_id not in after}
    if len(candidates) <= count:
        return sorted(candidates, key=lambda doc_id: (-candidates[doc_id], doc_id))
    # The count-th best score found in C, then the pages scoring more (fewer than *count*), ordered,
    # and the lowest docIDs of those scoring it: no key made in Python for each of thousands of pages.
    least = heapq.nlargest(count, candidates.values())[-1]
    kept = [(doc_id, score) for doc_id, score in candidates.items() if score >= least]
    better = sorted((pair for pair in kept if pair[1] > least), key=lambda pair: (-pair[1], pair[0]))
    tied = sorted(doc_id for doc_id, score in kept if score == least)
    return [doc_id for doc_id, _ in better] + tied[: count - len(better)]


def _ranked(scores: dict[int, float], last: Set[int], later: Set[int]) -> list[tuple[int, float]]:
    """The pages of *scores* and their scores, best first (the lowest docID first among equal scores),
    but those of *later* after the others, and those of *last* after them all."""
    if last or later:
        return sorted(scores.items(), key=lambda pair: (pair[0] in last, pair[0] in later, -pair[1], pair[0]))
    # (Most queries.)  Two sorts in C, no key made in Python for each of thousands of pages.
    ranked = sorted(scores.items())
    ranked.sort(key=itemgetter(1), reverse=True)  # (stable, reversed too: equal scores stay by docID)
    return ranked


def _add_weighed(scores: dict[int, float], found: list[tuple[int, float | None]], weight: float) -> None:
    """Each bm25() of *found* (lower for better matches) of a page in *scores*, times *weight*, added
    (none for a NULL score: a damaged table's, which FTS5 scores NaN)."""
    for doc_id, score in found:
        if doc_id in scores and score is not None:
            scores[doc_id] -= weight * score


_SINGLE_TERM = re.compile(r'"([^"\s]+)"(?!\*)')


def _single_terms(expression: str) -> list[str]:
    """The phrases of one term of an FTS5 *expression* (not prefix queries)."""
    return _SINGLE_TERM.findall(expression)


def _rows_of(db: Connection, table: str) -> int:
    """The rows FTS5 counts in *table* (its averages record), 0 where it cannot be read."""
    record = db.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    try:
        return fts5bm25.averages(record[0])[0] if record else 0
    except ValueError:
        return 0


def _size(rows: dict[int, tuple[str, ...]]) -> int:
    """What *rows* count for in KEPT_TOKENS: their tokens, and one a row."""
    return sum(map(len, rows.values())) + len(rows)


def _has_table(db: Connection, name: str) -> bool:
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None
