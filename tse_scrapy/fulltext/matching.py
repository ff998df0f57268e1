"""A parsed search query (``rules.queries.searchquery``) to FTS5 match expressions, with typo tolerance.

Each word matches its folded form and its stem in every language of the
index (the query's language is not known; a page's words were stemmed in the
page's), only the forms the index holds; a stem of some languages only, on
the pages of those languages (``stemmed_only_in``: the searcher checks the
others').  A word none of whose forms the index holds matches the index's
words within one edit (from 5 characters) or two (from 9), a transposition
counting as one (OSA distance, as Lucene's fuzzy queries), bigram scripts
excepted; so does a word no page has as a word, held only by stems (on pages
of their languages), when a close word is on more pages than those stems and
none of the closest is another form of it (stemmed alike in a language most
of its pages are in): "deiban" is another language's stem.  A single
character of a bigram script matches the bigrams it starts (a prefix query),
and the pages holding it anywhere (phrases_fts's characters: also where it
ends a run, starting no bigram).
A word or group typed twice is matched and scored once.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, TypeVar

import apsw

from ..rules.queries.searchquery import Clause, SearchQuery, cased_like
from ..rules.text import analysis
from ..rules.text.pagefields import VOCABULARY_MIN
from .store import first_holding, respellings_of

ONE_EDIT_FROM = 5
# Two words typed apart are also looked for joined from this many characters (``_with_joined_words``).
SHORT_JOINED = 4
RARE_WORD_SHARE = 100  # ... when one of the two is on one page in this many at most (``Vocabulary.rare_word``)
TWO_EDITS_FROM = 9
CORRECTIONS = 3  # the closest words a misspelt one matches
CANDIDATES = 50  # the words within its edits looked at for a misspelt word
# A query's first this many words the index does not hold are looked for among close words, the others
# taken as typed: a word's search costs about 5 ms (a query of 100 made-up words took a second).
LOOKED_UP = 10
# A word on this many pages or fewer as a word (a typo some page made: "debain", "pythn") that a close
# word is on SUGGESTED_TIMES as many pages as: that word is suggested, the word typed still searched.
RARE_TYPED = 2
SUGGESTED_TIMES = 10
# ... and whose forms are on about this many pages at most (a stem of another language's counted for its
# share of the pages, ``_pages_of``: "debain" is the Catalan "deb" of 78 pages, 2.9 of 2,256): a word whose
# stems are on more is not looked for (a statement each, most words of a title in a stemmed language).
RARE_FORMS = 10
DOCUMENT_COUNTS_KEPT = 100_000
PHRASE_COUNTS_KEPT = 100_000  # phrases of several words whose pages are counted and kept
# ... holding this many words in all: a phrase can be a hyphenated word of hundreds (a query of them,
# each new, kept 0.8 GB in 30 s when only the phrases were counted).
PHRASE_WORDS_KEPT = 200_000
COUNTED_TOGETHER = 500  # terms counted in a statement
FORMS_KEPT = 10_000  # the query words whose stems in an index's languages a process keeps (queries repeat words)
_stems_kept: dict[tuple[str, tuple[str, ...]], tuple[str, ...]] = {}
_restricted_kept: dict[tuple[tuple[str, ...], ...], dict[str, frozenset[str]]] = {}  # stemmed_only_in's answers

# The search index's connection: apsw's (the system's SQLite cannot read its tables: store.py).
Connection = apsw.Connection

# What a snippet marks: sequences of positions, each the terms a word there may give.
Marks = list[tuple[frozenset[str], ...]]
# What ``_clause`` gives: a clause's expression, its terms, those of them stems of some languages only.
ClauseCompiled = tuple[str, list[str] | None, dict[str, frozenset[str]] | None]


class Restricted(NamedTuple):
    """A required group of a query holding forms some languages' stems only (``Compiled.restricted``)."""

    group: int  # its number in Compiled.groups
    terms: list[str]  # the terms of its words
    forms: dict[str, frozenset[str]]  # those of them stems in some languages only, with those languages
    others: str | None  # the expression of its clauses that are no word (any language), None for none

    def own(self, language: str) -> tuple[str, ...]:
        """The terms the group's words give a page holding *language*'s stems (``analysis.stems_language``)."""
        return tuple(term for term in self.terms if language in self.forms.get(term, (language,)))


class KeptLanguage(NamedTuple):
    """The language the results are kept to (``lang=``), as corrections see it."""

    language: str  # its code
    pages_holding: Callable[[str], int]  # how many of its pages hold a form (in fts)
    holds_word: Callable[[str], bool]  # whether one of its pages has a word as a word (in phrases_fts)


@dataclass
class Compiled:
    """FTS5 expressions of a query: all required clauses, any of them, and the phrase of all its words
    (for the proximity bonus); each required group (its expression, its loose one for partial
    matches, and the terms it may match, for ``rare``); what to mark; the corrections made (typed ->
    as pages spell it)."""

    all_of: str
    any_of: str
    phrase: str | None
    exclusion: str = ""  # the " NOT (...)" clauses all_of and any_of end with
    excluded: str | None = None  # any excluded clause over beyond_fts (the text past a page's body)
    groups: list[tuple[str, str, list[str]]] = field(default_factory=list)
    # Quoted phrases match the words as typed, in phrases_fts (all_of and any_of match them stemmed:
    # a superset).  Each required group holding one: its quoted phrases, its other clauses' expression
    # and its single characters' (``characters``); the excluded quoted phrases; any group without a
    # quoted clause (partial matches).
    exact: list[tuple[list[str], str | None, str | None]] = field(default_factory=list)
    exact_excluded: list[str] = field(default_factory=list)
    plain_any_of: str | None = None
    # A single character of a bigram script matches the bigrams it starts (fts) and the pages holding
    # it anywhere: where it ends a run it starts none.  Each required group holding one: a phrases_fts
    # expression over its characters column, and the group's fts expression when it has other
    # alternatives (None for none); the other groups' all_of (None for none) and the excluded clauses'
    # fts expression (None for none), which the pages holding those characters must answer too.
    characters: list[tuple[str, str | None]] = field(default_factory=list)
    others_all_of: str | None = None
    excluded_any: str | None = None
    marks: Marks = field(default_factory=list)
    # What partial matches mark besides: each word of a clause that they match by any of its words
    # (``_loose``), which they hold apart, as its phrase's marks do not mark them ("설치" of "Debian을설치").
    loose_marks: Marks = field(default_factory=list)
    # The forms that are the stems of a word typed (or of its correction) in some of the index's
    # languages only, with those languages (``stemmed_only_in``), for the pages of the others to be
    # checked (``SearchIndex._in_their_languages``): of each required group holding such forms, its
    # number in ``groups``, its terms, those forms, and the expression of its clauses that are no
    # word (phrases, bigram scripts: matched in any language), None for none; for the marks, every
    # such form the query marks only so; each excluded word's, left out of ``exclusion`` and
    # ``excluded`` (``SearchIndex._excluded_in_their_languages``).
    restricted: list[Restricted] = field(default_factory=list)
    mark_languages: dict[str, frozenset[str]] = field(default_factory=dict)
    excluded_restricted: list[dict[str, frozenset[str]]] = field(default_factory=list)
    corrections: dict[str, str] = field(default_factory=dict)
    # Each required group as typed (its alternatives joined by " OR "), for a partial answer to name
    # those no page holds (``SearchIndex._held_by_none``); None for a group that FTS5's expression
    # alone does not answer: a single character of a bigram script (found where it ends a run too), a
    # run of one typed without spaces (found by its pieces apart).
    group_texts: list[str | None] = field(default_factory=list)
    # A run of a bigram script typed without spaces (as Chinese and Japanese are typed) is a phrase
    # of its bigrams; the pages holding its pieces anywhere (``_apart``: its Han characters, its Katakana
    # words) answer it too, ranked after those holding it as typed (``SearchIndex._apart``).  Each
    # required group: a phrases_fts expression of such a run's pieces, else its fts expression (table,
    # expression); and the excluded clauses' fts expression (None for none).  Empty for a query
    # without such a run.
    apart: list[tuple[str, str]] = field(default_factory=list)
    apart_excluded: str | None = None
    apart_bigrams: list[str] = field(default_factory=list)  # those runs' bigrams, each once (scoring)
    looked_up: int = 0  # the words looked for among close words (see LOOKED_UP)
    # The forms of each word typed (its stems in the index's languages, its corrections), quoted or
    # not, that pages hold: weighed as one word (``SearchIndex._forms_weighed``).
    word_forms: list[tuple[str, ...]] = field(default_factory=list)
    # The language the results are kept to (``lang=``), None for any: a word is corrected as if its
    # pages were the index's (``_corrections``).
    kept_language: KeptLanguage | None = None

    def rare(self, documents: Callable[[str], int], pages: int, joiner: str, loose: bool = False) -> str | None:
        """The groups (*loose*: their loose expressions) joined by *joiner* (" AND ", " OR ") leaving
        out those all of whose terms are in more than half the *pages* (by *documents*): FTS5's BM25
        gives such a term no weight (an IDF at most 0 counts 1e-6), and scoring it costs the most.
        None when all are common."""
        kept = [
            loose_expression if loose else expression
            for expression, loose_expression, _ in self._rare(documents, pages)
        ]
        return joiner.join(f"({expression})" for expression in kept) or None

    def _rare(self, documents: Callable[[str], int], pages: int) -> list[tuple[str, str, list[str]]]:
        """The groups ``rare`` keeps."""
        return [
            group for group in self.groups if not (terms := group[2]) or any(documents(t) * 2 <= pages for t in terms)
        ]

    def scoring_cost(self, documents: Callable[[str], int], pages: int) -> tuple[int, int] | None:
        """For ``rare``'s groups joined by AND: at most how many pages match them all (the fewest
        pages a group of words holds, its terms' pages added up), and how many pages hold its words
        in all (what FTS5's bm25() walks to weigh them).  None when no group is of words (phrases,
        prefix queries)."""
        words = [terms for _, _, terms in self._rare(documents, pages) if terms]
        if not words:
            return None
        return min(sum(map(documents, terms)) for terms in words), sum(documents(t) for terms in words for t in terms)

    def all_of_but_everywhere(self, documents: Callable[[str], int], pages: int) -> str:
        """``all_of`` without the groups one of whose terms is on every one of the *pages*: such a
        group matches every page, so leaving it out matches the same pages, and its list (every
        page, every position) is the longest to read.  A site's name in every title is one.  All of
        ``all_of`` when every group is such a group."""
        kept = [
            expression
            for expression, _, terms in self.groups
            if not terms or all(documents(term) < pages for term in terms)
        ]
        if not kept or len(kept) == len(self.groups):
            return self.all_of
        required = " AND ".join(f"({expression})" for expression in kept)
        return f"({required}){self.exclusion}" if self.exclusion else required


class Vocabulary:
    """The index's terms (FTS5's vocabulary) and words (for corrections), read as needed."""

    def __init__(self, db: Connection, counted: bool = False):
        """*counted*: whether the index's term_counts table holds its terms' page counts (``store.py``);
        else they are counted by FTS5 (fts5vocab) as needed."""
        self.db = db
        self._counted = counted
        if not counted:
            for table in ("fts", "titles_fts", "anchors_fts"):
                db.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}_terms USING fts5vocab(main, {table}, row)")
        self._by_length: dict[int, list[str]] | None = None
        self._documents: dict[tuple[str, str], int] = {}
        self._phrases: dict[tuple[tuple[str, ...], str], int] = {}
        self._phrase_words = 0  # the words of the phrases kept
        self._words: dict[str, bool] = {}  # is_word's answers
        self._listed: dict[str, bool] = {}  # listed's answers
        self._rare: dict[str, bool] = {}  # rare_word's answers
        self._language_pages: dict[str, int] | None = None  # language -> its pages ("" for none said)
        self._documents_in: dict[tuple[str, frozenset[str]], int] = {}

    def documents(self, term: str, table: str = "fts") -> int:
        """How many pages hold *term* in *table* (fts, titles_fts or anchors_fts)."""
        key = (term, table)
        found = self._documents.get(key)
        if found is None:
            self.count((term,), table)
            found = self._documents[key]
        return found

    def holding(self, phrase: tuple[str, ...], table: str = "fts") -> int:
        """How many pages hold *phrase* (tokens at consecutive positions) in *table*: a word's as
        ``documents`` counts them, a longer phrase's counted by FTS5 once and kept."""
        if len(phrase) == 1:
            return self.documents(phrase[0], table)
        key = (phrase, table)
        found = self._phrases.get(key)
        if found is None:
            found = 0
            if phrase:
                sql = f"SELECT count(*) FROM {table} WHERE {table} MATCH ?"
                found = self.db.execute(sql, ('"' + " ".join(phrase) + '"',)).fetchone()[0]
            if len(self._phrases) >= PHRASE_COUNTS_KEPT or self._phrase_words + len(phrase) > PHRASE_WORDS_KEPT:
                self._phrases.clear()
                self._phrase_words = 0
            self._phrases[key] = found
            self._phrase_words += len(phrase)
        return found

    def count(self, terms: Iterable[str], table: str = "fts") -> None:
        """Count the pages of each of *terms* in *table* not counted yet, for ``documents``: a few
        statements, not one a term (fts5vocab's statement costs about four times its term)."""
        # Read from term_counts, or counted by fts5vocab, which walks a term's list (a common word
        # costs milliseconds); either way kept (the index is read-only; the cache is bounded).
        documents = self._documents
        missing = [term for term in dict.fromkeys(terms) if (term, table) not in documents]
        for start in range(0, len(missing), COUNTED_TOGETHER):
            chunk = missing[start : start + COUNTED_TOGETHER]
            marks = ",".join("?" * len(chunk))
            if self._counted:
                sql = f"SELECT term, pages FROM term_counts WHERE tbl = ? AND term IN ({marks})"
                found = dict(self.db.execute(sql, (table, *chunk)))
            else:
                sql = f"SELECT term, doc FROM temp.{table}_terms WHERE term IN ({marks})"
                found = dict(self.db.execute(sql, chunk))
            if len(documents) + len(chunk) > DOCUMENT_COUNTS_KEPT:
                documents.clear()
            documents.update(((term, table), found.get(term, 0)) for term in chunk)

    def closest(self, word: str) -> list[tuple[str, int]]:
        """The words within the edits allowed for *word*'s length that the vocabulary lists (the words
        pages hold), and their distances, closest first (at most CANDIDATES)."""
        edits = 2 if len(word) >= TWO_EDITS_FROM else 1
        if self._by_length is None:
            self._by_length = {}
            for (known,) in self.db.execute("SELECT word FROM vocabulary"):
                self._by_length.setdefault(len(known), []).append(known)
        candidates = [
            known for size in range(len(word) - edits, len(word) + edits + 1) for known in self._by_length.get(size, ())
        ]
        # Imported here: `tse serve` starts sooner without it, and only a misspelt word needs it.
        from rapidfuzz import process
        from rapidfuzz.distance import OSA

        # Every word within the edits, the CANDIDATES closest taken (by distance, then as listed).
        found = process.extract(word, candidates, scorer=OSA.distance, score_cutoff=edits, limit=None)
        found.sort(key=lambda match: (match[1], match[2]))
        held = [(known, distance) for known, distance, _ in found[:CANDIDATES]]
        if len(word) == VOCABULARY_MIN:
            # One letter fewer is a word the vocabulary does not list (too short): looked for among the
            # pages' words ("grubb" is "grub", on hundreds of pages, before "grubs", on one).
            shorter = dict.fromkeys(word[:cut] + word[cut + 1 :] for cut in range(len(word)))
            held += [(known, 1) for known in shorter if self.is_word(known)]
        return sorted(held, key=lambda match: (match[1], match[0]))

    def is_word(self, word: str) -> bool:
        """Whether a page's title or body holds *word* (folded, a letter or digit run) as a word
        (asked of phrases_fts: words of any length)."""
        sql = "SELECT 1 FROM phrases_fts WHERE phrases_fts MATCH ? LIMIT 1"
        return _remembered(self._words, word, lambda: self.db.execute(sql, ('"' + word + '"',)).fetchone() is not None)

    def rare_word(self, word: str) -> bool:
        """Whether at most one page in RARE_WORD_SHARE holds *word* as a word (at least one may)."""
        if self._language_pages is None:
            self._language_pages = dict(self.db.execute("SELECT lang, count(*) FROM pages GROUP BY lang"))
        most = max(1, sum(self._language_pages.values()) // RARE_WORD_SHARE)
        return _remembered(self._rare, word, lambda: self.pages_having(word, most) <= most)

    def pages_having(self, word: str, most: int) -> int:
        """How many pages have *word* as a word (``is_word``), counted to *most* + 1 at most (FTS5
        stops there: a common word costs no more than a rare one)."""
        sql = "SELECT count(*) FROM (SELECT 1 FROM phrases_fts WHERE phrases_fts MATCH ? LIMIT ?)"
        return self.db.execute(sql, ('"' + word + '"', most + 1)).fetchone()[0]

    def share(self, languages: Iterable[str]) -> float:
        """The share of the index's pages whose words hold the stems of *languages*
        (``analysis.stems_language``)."""
        counted = self._with_unstemmed(languages)
        every = sum(self._language_pages.values())
        return sum(self._language_pages[language] for language in counted) / every if every else 0.0

    def documents_in(self, term: str, languages: frozenset[str]) -> int:
        """How many pages whose words hold the stems of *languages* (``analysis.stems_language``) hold
        *term* in fts (its list read: a few terms a query, those a misspelt word is held by)."""

        def count() -> int:
            counted = sorted(self._with_unstemmed(languages))
            marks = ",".join("?" * len(counted))
            sql = (
                "SELECT count(*) FROM fts JOIN pages ON pages.doc_id = fts.rowid"
                f" WHERE fts MATCH ? AND pages.lang IN ({marks})"
            )
            return self.db.execute(sql, (f'"{term}"', *counted)).fetchone()[0] if counted else 0

        return _remembered(self._documents_in, (term, languages), count)

    def _with_unstemmed(self, languages: Iterable[str]) -> set[str]:
        """The languages of the index's pages ("" for none said) whose words hold the stems of
        *languages* (``analysis.stems_language``)."""
        if self._language_pages is None:
            self._language_pages = dict(self.db.execute("SELECT lang, count(*) FROM pages GROUP BY lang"))
        wanted = set(languages)
        return {language for language in self._language_pages if analysis.stems_language(language) in wanted}

    def listed(self, word: str) -> bool:
        """Whether the vocabulary lists *word* (folded, of VOCABULARY_MIN characters or more): a page
        holds it (a seek in its table, not a walk of an FTS5 list)."""
        sql = "SELECT 1 FROM vocabulary WHERE word = ?"
        return _remembered(self._listed, word, lambda: self.db.execute(sql, (word,)).fetchone() is not None)

    def spelling(self, word: str) -> str:
        """How pages spell *word* (the first spelling the index met, case folded: a Greek word's last
        sigma written ς again): the vocabulary's, or for a word too short for it (``closest``'s one
        letter fewer), as the first page holding it spells it (its respellings)."""
        row = self.db.execute("SELECT spelling FROM vocabulary WHERE word = ?", (word,)).fetchone()
        if row is None and len(word) == VOCABULARY_MIN - 1 and (first := first_holding(self.db, word)) is not None:
            row = (respellings_of(self.db, first).get(word, word),)
        return analysis.with_final_sigma(row[0] if row else word)


_Key = TypeVar("_Key")
_Value = TypeVar("_Value")


def _remembered(kept: dict[_Key, _Value], key: _Key, work_out: Callable[[], _Value]) -> _Value:
    """*kept*'s answer for *key*, worked out and kept when it has none (DOCUMENT_COUNTS_KEPT answers at
    most: then it starts again)."""
    found = kept.get(key)
    if found is None:
        found = work_out()
        if len(kept) >= DOCUMENT_COUNTS_KEPT:
            kept.clear()
        kept[key] = found
    return found


def compile_query(
    query: SearchQuery,
    vocabulary: Vocabulary,
    languages: Sequence[str],
    kept_language: KeptLanguage | None = None,
) -> Compiled:
    """The FTS5 expressions of *query* over an index of pages in *languages*; *kept_language*: the
    language the results are kept to (``Compiled.kept_language``)."""
    languages = tuple(languages)
    compiled = Compiled("", "", None, kept_language=kept_language)
    query = _quoted_corrected(query, vocabulary, languages, compiled)
    query = _with_joined_words(query, vocabulary)
    query = _with_joined_corrections(query, vocabulary, languages, compiled)
    plain = []
    # The pages of every form of every word counted together (see Vocabulary.count), and of the words
    # of phrases that may be corrected (_corrected_phrase: their forms only for those no page holds).
    words = [clause.words[0] for clause in (*query.clauses, *query.excluded) if len(clause.words) == 1]
    phrases_words = [
        word
        for clause in query.clauses
        if len(clause.words) > 1 and not clause.quoted
        for word in clause.words
        if len(word) >= ONE_EDIT_FROM
    ]
    vocabulary.count([*(form for word in words for form in word_forms(word, languages)), *phrases_words])
    others = []
    unrestricted: set[str] = set()  # the forms some clause matches in any language
    aparts: list[str | None] = []  # each group's run of a bigram script as its pieces (_apart)
    apart_bigrams: list[str] = []  # and those runs' bigrams
    for alternatives in distinct_groups(query.required):
        aparts.append(_apart(alternatives[0]) if len(alternatives) == 1 else None)
        if aparts[-1] is not None:
            apart_bigrams += alternatives[0].words
        # Two words a page has joined (``_with_joined_words``: a word of the index) are not misspelt:
        # neither is corrected ("instal lation" finds "installation", and suggests no "instal latin").
        joined = any(isinstance(clause, JoinedWord) for clause in alternatives)  # (a SplitWord's is: pyhton3)
        clauses = [_clause(clause, vocabulary, languages, compiled, not joined) for clause in alternatives]
        for clause, (_, found, _) in zip(alternatives, clauses, strict=True):
            if not clause.is_phrase and found:
                compiled.word_forms.append(tuple(found))
            elif clause.quoted and len(clause.words) == 1:  # (its forms are its phrase's)
                compiled.word_forms.append(tuple(_held(clause.words[0], vocabulary, languages)))
        expression = " OR ".join(expression for expression, _, _ in clauses)
        everywhere = _everywhere(clauses)
        unrestricted |= everywhere
        restricted = _group_restricted(clauses, everywhere)
        if restricted:
            terms_of_words = [term for _, found, only in clauses if only is not None for term in found or ()]
            not_words = " OR ".join(expression for expression, _, only in clauses if only is None) or None
            compiled.restricted.append(Restricted(len(compiled.groups), terms_of_words, restricted, not_words))
        # Quoted or not, one character is itself: found by its prefix query, or held anywhere.
        single = [clause.words[0] for clause in alternatives if _single_character(clause)]
        held = " OR ".join(f'"{character}"' for character in single)
        characters = f"characters : ({held})" if single else None
        if characters:
            compiled.characters.append((characters, expression if len(single) < len(alternatives) else None))
        else:
            others.append(expression)
        # A group with a phrase or a prefix query (no terms listed) is never left out as common.
        terms = (
            [] if any(found is None for _, found, _ in clauses) else [term for _, found, _ in clauses for term in found]
        )
        loose = [_loose(clause) or expression for clause, (expression, _, _) in zip(alternatives, clauses, strict=True)]
        compiled.groups.append((expression, " OR ".join(loose), terms))
        typed = [clause.typed() for clause in alternatives if type(clause) is Clause]  # (not those added)
        compiled.group_texts.append(None if single or aparts[-1] is not None else " OR ".join(typed) or None)
        for clause in alternatives:
            if _loose(clause) is not None:
                # (Not a single character beside the clause's other words: Korean's particle 을 of
                # "Debian을" was marked wherever a page has it.)
                compiled.loose_marks += [
                    (frozenset([word]),) for word in dict.fromkeys(clause.words) if not _lone_character(word)
                ]
        if any(clause.quoted and not _single_character(clause) for clause in alternatives):
            unquoted = [
                expression
                for clause, (expression, _, _) in zip(alternatives, clauses, strict=True)
                if not clause.quoted or _single_character(clause)
            ]
            phrases = [_exact(clause) for clause in alternatives if clause.quoted and not _single_character(clause)]
            compiled.exact.append((phrases, " OR ".join(unquoted) or None, characters))
        else:
            plain.append(" OR ".join(loose))
    # A word typed twice, compiled once: corrected wherever it was typed ("Recoevring recoevring").
    corrected_words = {
        (clause.words, clause.quoted): compiled.corrections[clause.text]
        for clause in query.clauses
        if clause.text in compiled.corrections
    }
    for clause in query.clauses:
        if (clause.words, clause.quoted) in corrected_words:
            compiled.corrections.setdefault(clause.text, corrected_words[(clause.words, clause.quoted)])
    # A word's correction in the case it was typed in, each time ("Recoevring recoevring"); a phrase's
    # words were (_corrected_phrase).
    for clause in query.clauses:
        if not clause.is_phrase and clause.text in compiled.corrections:
            compiled.corrections[clause.text] = cased_like(compiled.corrections[clause.text], clause.text)
    compiled.plain_any_of = " OR ".join(f"({loose})" for loose in plain) or None
    # A form marked in a phrase, or matched in any language by a clause, is marked in any language.
    unrestricted.update(
        term for sequence in compiled.marks if len(sequence) > 1 for terms in sequence for term in terms
    )
    for restricted in compiled.restricted:
        for form, where in restricted.forms.items():
            if form not in unrestricted:
                compiled.mark_languages[form] = compiled.mark_languages.get(form, frozenset()) | where
    # Quoted exclusions leave out the pages holding the words as typed, found apart.
    # A form that is an excluded word's stem in some languages only leaves out the pages of those
    # languages holding it (``excluded_restricted``), not the others, where it is another word.
    excluded = []
    for clause in query.excluded:
        if not clause.quoted:
            expression, held, only = _clause(clause, vocabulary, languages, None)
            if only is not None:
                # (Every form, also those no page's body holds: the text past long pages' bodies too.)
                only = stemmed_only_in(list(clause.words), word_forms(clause.words[0], languages), languages)
            if only:
                compiled.excluded_restricted.append(only)
                expression = " OR ".join(f'"{form}"' for form in held or () if form not in only)
            if expression:
                excluded.append(expression)
    exclusion = "".join(f" NOT ({expression})" for expression in excluded)
    # (Not with OR, nor with a single character: their pages are found otherwise.)
    single = all(len(alternatives) == 1 for alternatives in query.required)
    if any(aparts) and single and not compiled.characters:
        compiled.apart = [
            ("phrases_fts", apart) if apart else ("fts", expression)
            for apart, (expression, _, _) in zip(aparts, compiled.groups, strict=True)
        ]
        compiled.apart_excluded = " OR ".join(f"({expression})" for expression in excluded) or None
        compiled.apart_bigrams = list(dict.fromkeys(apart_bigrams))
    # Quoted exclusions, and one character of a bigram script also where it ends a run, starting no
    # bigram for the fts expression's NOT to see (phrases_fts's characters).
    compiled.exact_excluded = [
        _exact(clause) for clause in query.excluded if clause.quoted or _single_character(clause)
    ]
    if query.excluded:
        compiled.excluded = " OR ".join(
            f"({{words}} : ({_exact(clause)}))"
            if clause.quoted
            else f"({{terms}} : ({_excluded(clause, vocabulary, languages)}))"
            for clause in query.excluded
        )
    compiled.all_of = " AND ".join(f"({group})" for group, _, _ in compiled.groups)
    # The partial matches: any group, and a word of a bigram script by any of its bigrams (a typo in
    # it breaks the bigrams around it, not the others), a query of that word alone too (インストルール
    # finds インストール, ranked by the bigrams a page holds; flagged partial as the others).
    if len(compiled.groups) > 1 or any(loose != expression for expression, loose, _ in compiled.groups):
        compiled.any_of = " OR ".join(f"({loose})" for _, loose, _ in compiled.groups)
    else:
        compiled.any_of = compiled.all_of
    compiled.exclusion = exclusion
    if compiled.characters:
        required = " AND ".join(f"({group})" for group in others)
        compiled.others_all_of = (f"({required}){exclusion}" if exclusion else required) if others else None
        compiled.excluded_any = " OR ".join(f"({expression})" for expression in excluded) or None
    if exclusion:
        compiled.all_of = f"({compiled.all_of}){exclusion}"
        compiled.any_of = f"({compiled.any_of}){exclusion}"
    words = [word for clause in query.clauses for word in clause.words]
    if single and len(query.required) > 1:
        compiled.phrase = _held_phrase(words, languages, vocabulary)
    return compiled


def _quoted_corrected(
    query: SearchQuery, vocabulary: Vocabulary, languages: Sequence[str], compiled: Compiled
) -> SearchQuery:
    """*query* with each required quoted phrase holding a misspelt word (``_corrected_phrase``: one no
    page holds, close to one pages hold) as corrected, the correction recorded: the phrase as typed
    matches no page, the corrected one what the person meant ("Did you mean", results for it)."""
    required = []
    for alternatives in query.required:
        group = []
        for clause in alternatives:
            if clause.quoted and not _single_character(clause):
                words = _corrected_phrase(clause, vocabulary, languages, compiled)
                if words != list(clause.words):
                    clause = Clause(compiled.corrections[clause.text], tuple(words), quoted=True)
            group.append(clause)
        required.append(tuple(group))
    return SearchQuery(tuple(required), query.excluded)


@dataclass(frozen=True)
class JoinedWord(Clause):
    """The word two words typed make joined, an alternative ``_with_joined_words`` adds to theirs (never
    equal to a clause typed: ``instal lation installation`` tells the one added from the one typed)."""


class SplitWord(Clause):
    """The runs of letters and of digits of a word typed, apart (a phrase), an alternative
    ``_with_joined_words`` adds to it (``_split_word``)."""


# The runs of letters and of digits of a word ("debian12": "debian", "12").
_LETTERS_OR_DIGITS = re.compile(r"\d+|[^\W\d_]+")


def _with_joined_words(query: SearchQuery, vocabulary: Vocabulary) -> SearchQuery:
    """*query* with two words typed one after the other also matching the word they make joined, where
    the vocabulary lists it: an alternative of both (a page holding both words anywhere still answers
    both).  A word a page spells with a character dropped inside it (the middle dot of Catalan's
    "instal·lació") is found typed with a space there ("instal lació"), and so is "Word press"; two
    words joined by punctuation (a phrase) also match the word they make: "pre-seeding" finds the pages
    that write "preseeding", "e-mail" those that write "email"."""
    groups = [list(alternatives) for alternatives in query.required]
    plain = [
        len(group) == 1 and not group[0].is_phrase and not analysis.is_segmented(group[0].words[0]) for group in groups
    ]
    for group in groups:
        group += [joined for clause in list(group) if (joined := _joined_phrase(clause, vocabulary)) is not None]
        if len(group) == 1 and (split := _split_word(group[0], vocabulary)) is not None:
            group.append(split)
    # (Excluded, a phrase's word leaves out the pages writing it: "-pre-seeding" those of "preseeding".)
    excluded = [*query.excluded]
    excluded += [joined for clause in query.excluded if (joined := _joined_phrase(clause, vocabulary)) is not None]
    for number in range(len(groups) - 1):
        if not (plain[number] and plain[number + 1]):
            continue
        first, second = groups[number][0], groups[number + 1][0]
        joined = first.words[0] + second.words[0]
        # A shorter word ("Wi Fi": "wifi") is looked for among the pages' words, of two parts of two
        # characters or more, one of them rare as a word (a piece, not a word of its own: "is a" is no
        # "isa", nor "in it" "init", "so on" "soon").
        short = (
            len(joined) == SHORT_JOINED
            and min(len(first.words[0]), len(second.words[0])) >= 2
            and vocabulary.is_word(joined)
            and any(vocabulary.rare_word(word) for word in (first.words[0], second.words[0]))
        )
        if short or (len(joined) >= ONE_EDIT_FROM and vocabulary.listed(joined)):
            clause = JoinedWord(first.text + second.text, (joined,))
            groups[number].append(clause)
            groups[number + 1].append(clause)
    if len(excluded) == len(query.excluded) and all(
        len(group) == len(alternatives) for group, alternatives in zip(groups, query.required, strict=True)
    ):
        return query
    return SearchQuery(tuple(map(tuple, groups)), tuple(excluded))


def _joined_phrase(clause: Clause, vocabulary: Vocabulary) -> JoinedWord | None:
    """The word the two words of an unquoted *clause* joined by a hyphen or a dash (``pre-seeding``,
    ``wi-fi``) make joined, where a page has it as a word; else None."""
    joined = _hyphen_joined(clause)
    if joined is None:
        return None
    # (The vocabulary lists the words of VOCABULARY_MIN characters or more; a shorter one, "wifi", is
    # looked for among the pages' words.)
    held = vocabulary.listed(joined) if len(joined) >= VOCABULARY_MIN else vocabulary.is_word(joined)
    return JoinedWord(joined, (joined,)) if held else None


def _hyphen_joined(clause: Clause) -> str | None:
    """The word the two words of an unquoted *clause* joined by a hyphen or a dash make joined; else
    None.  Not by an apostrophe or a dot: "Debian's" is no "debians" (whose stem is every Debian
    page's), "os.path" no "ospath"."""
    if clause.quoted or len(clause.words) != 2 or any(map(analysis.is_segmented, clause.words)):
        return None
    runs = analysis.word_runs_at(clause.text)
    if len(runs) != 2:
        return None
    (start, first), (second_start, _) = runs
    between = clause.text[start + len(first) : second_start]
    if not between or not all(unicodedata.category(character) == "Pd" for character in between):
        return None
    return "".join(clause.words)


def _with_joined_corrections(
    query: SearchQuery, vocabulary: Vocabulary, languages: Sequence[str], compiled: Compiled
) -> SearchQuery:
    """*query* with a hyphenated word typed with a typo (``pre-seding``, ``Netzwerk-Konfiguraton``: a
    word of it on no page, the word they make joined on none either) also matching the closest word
    pages hold to the joined one, recorded as its correction: pages write "preseeding" and
    "Netzwerkkonfiguration", and the phrase corrected a word at a time ("pre seeing") was on none, so
    nothing was found nor suggested (a tester's find)."""
    kept = compiled.kept_language

    def on_pages(word: str) -> bool:  # in some form: "working" is held as "work" ("non-working")
        return any(_pages_holding(form, vocabulary, kept) for form in _held(word, vocabulary, languages))

    groups = [list(alternatives) for alternatives in query.required]
    for group in groups:
        if len(group) != 1 or (joined := _hyphen_joined(clause := group[0])) is None:
            continue  # (two words joined that pages hold are a JoinedWord already: a group of two)
        if all(map(on_pages, clause.words)):
            continue  # (each word on some page: the phrase is as typed, or corrected as a phrase)
        found = _corrections(joined, _held(joined, vocabulary, languages), vocabulary, languages, compiled)
        if found:
            known = found[0][0]
            compiled.corrections[clause.text] = cased_like(vocabulary.spelling(known), clause.text)
            group.append(JoinedWord(known, (known,)))
    if all(len(group) == len(alternatives) for group, alternatives in zip(groups, query.required, strict=True)):
        return query
    return SearchQuery(tuple(map(tuple, groups)), query.excluded)


def _split_word(clause: Clause, vocabulary: Vocabulary) -> SplitWord | None:
    """An unquoted word of letters and digits that no page has as a word, as its runs of letters and
    of digits typed apart, where pages write them so: "debian12" is "Debian 12", "PEP8" "PEP 8" (it
    found nothing, a tester's find); else None.  A word pages have ("python3", "utf8") is as typed."""
    if clause.is_phrase:
        return None
    (word,) = clause.words
    parts = _LETTERS_OR_DIGITS.findall(word)
    if len(parts) < 2 or "".join(parts) != word or analysis.is_segmented(word) or vocabulary.is_word(word):
        return None
    return SplitWord(clause.text, tuple(parts))


def distinct_groups(required: Sequence[Sequence[Clause]]) -> list[list[Clause]]:
    """The required groups of a query, each with its alternatives once, each once: a word typed twice
    (``debian debian``, ``the OR the``) is matched and scored as once, at the cost of once."""
    groups: dict[frozenset[tuple[tuple[str, ...], bool]], list[Clause]] = {}
    for alternatives in required:
        distinct: dict[tuple[tuple[str, ...], bool], Clause] = {}
        for clause in alternatives:
            # (the first as typed; one character is itself, quoted or not)
            distinct.setdefault((clause.words, clause.quoted and not _single_character(clause)), clause)
        groups.setdefault(frozenset(distinct), list(distinct.values()))
    return list(groups.values())


def _clause(
    clause: Clause,
    vocabulary: Vocabulary,
    languages: Sequence[str],
    compiled: Compiled | None,
    corrected: bool = True,
) -> ClauseCompiled:
    """The expression of one clause, the terms it matches (None for a phrase or a prefix) and those of
    them that are stems in some of the *languages* only (``stemmed_only_in``; None for a phrase or a
    word of a bigram script); with *compiled*, what it marks and corrects (unless not *corrected*) is
    recorded there."""
    if clause.is_phrase:
        words = list(clause.words)
        if compiled is not None:
            if not clause.quoted and corrected:
                words = _corrected_phrase(clause, vocabulary, languages, compiled)
            # Quoted: the words as typed; a word of several terms (6.2, what's): any forms.
            forms = (lambda word: [word]) if clause.quoted else (lambda word: word_forms(word, languages))
            compiled.marks.append(tuple(frozenset(forms(word)) for word in words))
        return _phrase(words, languages), None, None
    (word,) = clause.words
    if analysis.is_segmented(word):
        if compiled is not None:
            compiled.marks.append((frozenset([word]),))
        return (f'"{word}"*', None, None) if len(word) == 1 else (f'"{word}"', [word], None)
    forms = word_forms(word, languages)
    held = [form for form in forms if vocabulary.documents(form)]
    found = (
        _corrections(word, held, vocabulary, languages, compiled, clause.text)
        if compiled is not None and corrected
        else []
    )
    if found and compiled is not None:
        compiled.corrections[clause.text] = vocabulary.spelling(found[0][0])  # (cased at the end)
        held = []
        for _, known_held in found:
            held += [form for form in known_held if form not in held]
    elif compiled is not None and corrected and (suggested := _suggested(word, held, vocabulary, languages, compiled)):
        compiled.corrections[clause.text] = vocabulary.spelling(suggested)  # (its pages found as typed)
    # Only the forms the index holds: FTS5 adds up the scores of every term of an OR, so a word
    # must not count once a form; and the expression stays short.
    held = held or forms[:1]
    if compiled is not None:
        compiled.marks.append((frozenset(held),))
    typed = [known for known, _ in found] or [word]
    return " OR ".join(f'"{form}"' for form in held), held, stemmed_only_in(typed, held, languages)


def stemmed_only_in(words: list[str], forms: list[str], languages: Sequence[str]) -> dict[str, frozenset[str]]:
    """Those of *forms* (of *words*, folded) that are none of the words, and their stem in only some
    of the index's *languages* (``analysis.stems_language`` of each: a page whose words are not
    stemmed holds English stems), each with those languages.  A page's terms are its words stemmed
    in its own language: a page of another language holding such a form holds it as the stem of
    another word ("in", the Catalan stem of "init", is "in" on an English page)."""
    key = (tuple(words), tuple(forms), tuple(languages))
    found = _restricted_kept.get(key)
    if found is not None:
        return found
    columns = [_stems(word, tuple(languages))[1:] for word in words]
    stemmed = len(set(map(analysis.stems_language, languages)))
    found = {}
    for form in forms:
        if form in words:
            continue
        where = frozenset(
            language for column in columns for language, stem in zip(languages, column, strict=True) if stem == form
        )
        if len(where) < stemmed:
            found[form] = where
    if len(_restricted_kept) >= FORMS_KEPT:
        _restricted_kept.clear()
    _restricted_kept[key] = found
    return found


def _everywhere(clauses: list[ClauseCompiled]) -> set[str]:
    """The terms some of a group's *clauses* matches in any language (none a stem of some only)."""
    return {form for _, found, only in clauses for form in found or () if form not in (only or {})}


def _group_restricted(clauses: list[ClauseCompiled], everywhere: set[str]) -> dict[str, frozenset[str]]:
    """The forms a required group's word *clauses* match in some languages only, with those languages
    (but those another clause matches in any: *everywhere*)."""
    restricted: dict[str, frozenset[str]] = {}
    for _, _, only in clauses:
        for form, where in (only or {}).items():
            if form not in everywhere:
                restricted[form] = restricted.get(form, frozenset()) | where
    return restricted


def _corrections(
    word: str, held: list[str], vocabulary: Vocabulary, languages: Sequence[str], compiled: Compiled, typed: str = ""
) -> list[tuple[str, list[str]]]:
    """The closest words the index holds for *word* (folded; its forms *held* are those the index
    holds; *typed*: the word as typed, its accents kept) when it is taken as misspelt, best first, at
    most CORRECTIONS, each with its forms held; [] when it is not, or none is close (at most LOOKED_UP
    words a query are looked for)."""
    # Results kept to a language: its pages are as if they were the index's.  The forms they do not hold
    # are as if held by none, and the words they do not have as if no page had them: the close words
    # are theirs ("partitionierng" with lang=en is "partitioning", not the German "partitionierung",
    # which would find nothing there), and a word one page of another language has is corrected
    # ("debain", on one Japanese page, is "debian" with lang=en).
    kept = compiled.kept_language
    if kept is not None:
        held = [form for form in held if kept.pages_holding(form)]
    # A word no page holds, or one held only by stems when no page has it as a word: the Hungarian
    # stem of "deiban" is "dei", an Italian word, and that of "debain" is "deb", a word of its own.
    if not (
        len(word) >= ONE_EDIT_FROM
        and compiled.looked_up < LOOKED_UP
        and (not held or (held[0] != word and not _is_word(word, vocabulary, kept)))
    ):
        return []
    # Its stems held only where they are another word (on pages of other languages than theirs: the
    # searcher leaves those out) hold nothing: "pythno"'s Czech stem "pythn" is on no Czech page.
    held = _held_in_their_languages(word, held, vocabulary, languages)
    # The closest words the index holds; at the same distance, the one on the most pages first.
    compiled.looked_up += 1
    corrected = []
    closest = vocabulary.closest(word)
    vocabulary.count(form for known, _ in closest for form in word_forms(known, languages))
    for known, distance in closest:
        if kept is not None and not kept.holds_word(known):
            continue
        known_held = _held(known, vocabulary, languages)
        if kept is not None:
            known_held = [form for form in known_held if kept.pages_holding(form)]
        if known_held:
            corrected.append((distance, -_pages(known, known_held, vocabulary, languages, kept), known, known_held))
    corrected.sort()
    written = analysis.written(typed) if typed and not typed.isascii() else ""
    if len(corrected) > 1 and written and analysis.fold(written) != written:
        # Typed with accents: at the same distance, the words that pages spell closest to them first
        # ("réseu" is "réseau", as far from "reseu" as "reset" is, which more pages hold).
        from rapidfuzz.distance import OSA

        spelt = {known: OSA.distance(written, vocabulary.spelling(known)) for _, _, known, _ in corrected}
        corrected.sort(key=lambda found: (found[0], spelt[found[2]], found[1], found[2]))
    # Held by stems only, the word is taken as misspelt when a close word is on more pages than
    # its stems are, and no closest word is another form of it ("routers" is a form of "router",
    # whatever "routes" is on; nor is "installations" corrected).  A farther one sharing a stem does
    # not keep it as typed: "colections" is one edit from "collections", two from the Spanish
    # "colectivos" (stemmed "colect" as "colections" is in Spanish).
    closest_distance = corrected[0][0] if corrected else 0
    if corrected and (
        not held
        or (
            -corrected[0][1] > _pages(word, held, vocabulary, languages, kept)
            and not any(
                _is_a_form_of(word, known, -pages, held, vocabulary, languages, kept)
                for distance, pages, known, _ in corrected
                if distance <= closest_distance
            )
        )
    ):
        return [(known, known_held) for _, _, known, known_held in corrected[:CORRECTIONS]]
    return []


def _suggested(
    word: str, held: list[str], vocabulary: Vocabulary, languages: Sequence[str], compiled: Compiled
) -> str | None:
    """The word to suggest for *word* (folded), which is not taken as misspelt (``_corrections``: a
    page has it), when it is on RARE_TYPED pages or fewer as a word and the closest word on the most
    pages is on SUGGESTED_TIMES as many or more: a typo a page made ("debain", on one Japanese page,
    and by the Catalan stem "deb" on every Catalan page of Debian), "Did you mean debian" above its
    pages.  None otherwise, and with the results kept to a language (corrected there already)."""
    if (
        compiled.kept_language is not None
        or len(word) < ONE_EDIT_FROM
        or analysis.is_segmented(word)
        or compiled.looked_up >= LOOKED_UP
        # (Counted already: most words stop here.  On no page as a term, it is a form of a word pages
        # write, stemmed otherwise, or on no page at all: ``_corrections`` looked for it.)
        or not 1 <= vocabulary.documents(word) <= RARE_TYPED
        # (A word whose forms, its stems, are on more pages is a form of a word pages write: "books".)
        or not held
        or _pages_of(word, held, vocabulary, languages) > RARE_FORMS
    ):
        return None
    typed_pages = vocabulary.pages_having(word, RARE_TYPED)
    # (On no page as a word: ``_corrections`` looked it up already.  On more: a word pages write.)
    if not 1 <= typed_pages <= RARE_TYPED:
        return None
    compiled.looked_up += 1
    closest = [(distance, known) for known, distance in vocabulary.closest(word) if known != word]
    if not closest:
        return None
    nearest = min(distance for distance, _ in closest)
    pages = {
        known: _pages_of(known, _held(known, vocabulary, languages), vocabulary, languages)
        for distance, known in closest
        if distance == nearest
    }
    best = max(pages, key=lambda known: (pages[known], known))
    if pages[best] < SUGGESTED_TIMES * typed_pages:
        return None
    # Another form of the word ("routers" of "router") is no typo of it.
    return None if _is_a_form_of(word, best, pages[best], held, vocabulary, languages) else best


def _is_word(word: str, vocabulary: Vocabulary, kept: KeptLanguage | None) -> bool:
    """Whether a page has *word* as a word: one of the language the results are kept to, if any."""
    return vocabulary.is_word(word) if kept is None else kept.holds_word(word)


def _pages_holding(form: str, vocabulary: Vocabulary, kept: KeptLanguage | None) -> int:
    """How many pages hold *form*: of the language the results are kept to, if any."""
    return vocabulary.documents(form) if kept is None else kept.pages_holding(form)


def _pages(
    word: str, held: list[str], vocabulary: Vocabulary, languages: Sequence[str], kept: KeptLanguage | None
) -> float:
    """``_pages_of``; with the results kept to a language, how many of its pages hold a form of *held*,
    those that are *word*'s stems in other languages only left out (there they are other words)."""
    if kept is None:
        return _pages_of(word, held, vocabulary, languages)
    restricted = stemmed_only_in([word], held, languages)
    stems_language = analysis.stems_language(kept.language)
    return max(
        kept.pages_holding(form) if form not in restricted or stems_language in restricted[form] else 0 for form in held
    )


def _is_a_form_of(
    word: str,
    known: str,
    pages: float,
    held: list[str],
    vocabulary: Vocabulary,
    languages: Sequence[str],
    kept: KeptLanguage | None = None,
) -> bool:
    """Whether *word* (its forms *held*) is another form of *known* (on about *pages* pages): both stemmed
    alike in a language, a stem some page holds, and in a language most of *known*'s pages are in.  A
    stem shared across two languages is a coincidence ("exceptoin" is the Catalan "except", the English
    stem of "exception"), and so is one shared in a language of few of its pages: "firmwre" and
    "firmware" are both "firmw" in Catalan, but "firmware" is on English pages mostly (where it is
    "firmwar"), and "firmwre" is a typo of it, not a Catalan word.  With the results kept to a language,
    its pages are the index's: a stem shared in other languages is a coincidence there ("debain" and
    "debian" are both "deb" in Catalan, not in French)."""
    word_stems, known_stems = _stems(word, tuple(languages))[1:], _stems(known, tuple(languages))[1:]
    shared: dict[str, set[str]] = {}  # a stem both have in some languages, those languages
    for language, stem, known_stem in zip(languages, word_stems, known_stems, strict=True):
        if stem == known_stem and stem in held:
            shared.setdefault(stem, set()).add(language)
    if kept is not None:
        stems_language = analysis.stems_language(kept.language)
        return any(2 * kept.pages_holding(stem) >= pages for stem, where in shared.items() if stems_language in where)
    return any(2 * vocabulary.documents_in(stem, frozenset(where)) >= pages for stem, where in shared.items())


def _held_in_their_languages(word: str, held: list[str], vocabulary: Vocabulary, languages: Sequence[str]) -> list[str]:
    """Those of *word*'s forms *held* that some page holds as that word's form: the word itself, or a
    stem of some languages only (``stemmed_only_in``) on a page of one of them (``documents_in``)."""
    restricted = stemmed_only_in([word], held, languages)
    return [form for form in held if form not in restricted or vocabulary.documents_in(form, restricted[form])]


def _pages_of(word: str, held: list[str], vocabulary: Vocabulary, languages: Sequence[str]) -> float:
    """About how many pages hold *word* (its forms *held*): the most any form is on, a form that is its
    stem in some languages only counted for their share of the pages (``stemmed_only_in``; read
    exactly, a form's list would be read for each of 50 close words): "part", the Italian stem of
    "partito", is mostly the English "part", and "partition" is what "partiton" means."""
    restricted = stemmed_only_in([word], held, languages)
    return max(
        vocabulary.documents(form) * (vocabulary.share(restricted[form]) if form in restricted else 1.0)
        for form in held
    )


def _corrected_phrase(
    clause: Clause, vocabulary: Vocabulary, languages: Sequence[str], compiled: Compiled
) -> list[str]:
    """The words of a quoted clause or an unquoted one of several words (``l'instalaltion``), each
    misspelt one replaced by its closest word, the correction recorded as the clause typed again; the words as
    they are when none is, or when they are not the runs typed (NFKC made or joined some, a run of
    a bigram script is several)."""
    runs = analysis.word_runs_at(clause.text)
    words = list(clause.words)
    if len(runs) != len(words) or any(
        analysis.fold(analysis.normalize(run)) != word for (_, run), word in zip(runs, words, strict=True)
    ):
        return words
    replaced: dict[int, str] = {}
    candidates: dict[int, list[str]] = {}  # each misspelt word's close words, the closest first
    for number, word in enumerate(words):
        # (A short word is never looked up, nor one the index holds as it is: it is as typed.  Quoted, a
        # word is as typed when a page has it as a word, and no other form of it is taken for it: a
        # close word sharing a stem with it is that word in another form, "requirement" is not corrected
        # to "requirements", quoted.)
        if len(word) < ONE_EDIT_FROM or analysis.is_segmented(word):
            continue
        if clause.quoted:
            forms = set(word_forms(word, languages))
            found = (
                []
                if _is_word(word, vocabulary, compiled.kept_language)
                else _corrections(word, [], vocabulary, languages, compiled, runs[number][1])
            )
            found = [(known, held) for known, held in found if forms.isdisjoint(held)]
        elif not _pages_holding(word, vocabulary, compiled.kept_language):
            found = _corrections(
                word, _held(word, vocabulary, languages), vocabulary, languages, compiled, runs[number][1]
            )
        else:
            found = []
        if found:
            replaced[number] = found[0][0]
            candidates[number] = [known for known, _ in found]
    if not replaced:
        return words
    _choose_held_phrase(words, replaced, candidates, vocabulary)
    # The typed text from its first run to its last, each corrected run replaced (Clause.typed).
    pieces, position = [], runs[0][0]
    for number, (start, run) in enumerate(runs):
        spelled = cased_like(vocabulary.spelling(replaced[number]), run) if number in replaced else run
        pieces += [clause.text[position:start], spelled]
        position = start + len(run)
    compiled.corrections[clause.text] = "".join(pieces)
    return [replaced.get(number, word) for number, word in enumerate(words)]


def _choose_held_phrase(
    words: list[str], replaced: dict[int, str], candidates: dict[int, list[str]], vocabulary: Vocabulary
) -> None:
    """*replaced* (a phrase's misspelt words, by their place in *words*: their closest word) changed, a
    word at a time, to the first of its *candidates* that makes the phrase one pages hold as words,
    when the closest does not: "boot-loadr" is "boot loader", not "boot loads" (as close, on more
    pages).  A phrase with a misspelt word only: a count of pages (kept) for each close word tried."""

    def held(choice: dict[int, str]) -> bool:
        phrase = tuple(choice.get(number, word) for number, word in enumerate(words))
        return vocabulary.holding(phrase, "phrases_fts") > 0

    if held(replaced):
        return
    for number, close in candidates.items():
        for known in close[1:]:
            if held({**replaced, number: known}):
                replaced[number] = known
                return


def _excluded(clause: Clause, vocabulary: Vocabulary, languages: Sequence[str]) -> str:
    """An unquoted excluded clause over the text past a page's body: a word in every form (also those
    no page's body holds, which the fts expression leaves out) but the stems of some languages only
    (``Compiled.excluded_restricted``), else as ``_clause`` compiles it."""
    if clause.is_phrase or analysis.is_segmented(clause.words[0]):
        return _clause(clause, vocabulary, languages, None)[0]
    forms = word_forms(clause.words[0], languages)
    only = stemmed_only_in(list(clause.words), forms, languages)
    return " OR ".join(f'"{form}"' for form in forms if form not in only)


def _exact(clause: Clause) -> str:
    """A quoted clause's words as typed (accents folded), consecutive, for phrases_fts."""
    return _quoted(" ".join(clause.words))


def _quoted(phrase: str) -> str:
    """*phrase* (terms separated by spaces) as an FTS5 phrase; ending in a single character of a bigram
    script, a prefix phrase: that character is found in the bigrams it starts, as it is unquoted (and
    in phrases_fts, where it ends a run: its characters column)."""
    return f'"{phrase}"*' if analysis.is_one_segmented_character(phrase[phrase.rfind(" ") + 1 :]) else f'"{phrase}"'


def _single_character(clause: Clause) -> bool:
    """Whether *clause* is one character of a bigram script, quoted or not."""
    return len(clause.words) == 1 and analysis.is_one_segmented_character(clause.words[0])


def _lone_character(word: str) -> bool:
    """Whether *word* is one character of a bigram script (a particle beside a Latin word)."""
    return len(word) == 1 and analysis.is_segmented(word)


def _loose(clause: Clause) -> str | None:
    """An unquoted word of several bigrams, or of bigrams and words of other scripts typed together, as
    any of them (the words as written), else None.  Japanese and Korean join a particle to a Latin
    word ("Debian을설치", "apt-getでインストール"): the best partial matches, where no page has the
    phrase."""
    if clause.quoted or len(clause.words) < 2 or not any(analysis.is_segmented(word) for word in clause.words):
        return None
    return " OR ".join(f'"{word}"' for word in dict.fromkeys(clause.words))


def _apart(clause: Clause) -> str | None:
    """An unquoted word of a bigram script (a run typed without spaces) as its pieces anywhere, else
    None: "设置网络" (set up the network) is answered by a page saying "网络设置" or "通过网络 ... 设置"
    too, after those saying it.  Its Han characters are each held (phrases_fts's characters column: a
    Han character is a word or part of one), a piece of Katakana, Hangul or another bigram script whole
    by its bigrams (a character of them is on most pages in its language: ン, ー, 안), Hiragana left
    out (particles and endings: "ネットワークの設定" is held by a page of "ネットワーク設定").  None
    when that asks no more than the run's phrase (a piece alone, not Han), or nothing."""
    if clause.quoted or len(clause.words) < 2 or not all(map(analysis.is_segmented, clause.words)):
        return None
    characters: list[str] = []
    bigrams: list[str] = []
    for run in _runs_of_bigrams(clause.words):
        for kind, piece in analysis.script_pieces(run):
            if kind == analysis.HAN or (kind != analysis.HIRAGANA and len(piece) == 1):
                characters += piece
            elif kind != analysis.HIRAGANA:
                bigrams += analysis.bigrams(piece)
    if not characters and len(bigrams) == len(clause.words):  # (no more than the phrase, order aside)
        return None
    held = [
        f"({column} : ({_all_of(terms)}))"
        for column, terms in (("characters", characters), ("{title body}", bigrams))
        if terms
    ]
    return " AND ".join(held) or None


def _all_of(terms: list[str]) -> str:
    """An FTS5 expression of every one of *terms* (each once), anywhere."""
    return " AND ".join('"' + term + '"' for term in dict.fromkeys(terms))


def _runs_of_bigrams(words: Sequence[str]) -> list[str]:
    """The runs a word's bigrams were cut from ("设置", "置网", "网络" is "设置网络"): a bigram not
    overlapping the one before starts another run (punctuation typed between two: "设置" then "网络")."""
    runs: list[str] = []
    for number, word in enumerate(words):
        if number and len(words[number - 1]) == 2 and len(word) == 2 and words[number - 1][1] == word[0]:
            runs[-1] += word[1]
        else:
            runs.append(word)
    return runs


def word_forms(word: str, languages: Sequence[str]) -> list[str]:
    """*word* (folded) and its stem in each language, each once."""
    return list(dict.fromkeys(_stems(word, tuple(languages))))


def _stems(word: str, languages: tuple[str, ...]) -> tuple[str, ...]:
    """*word*, then its stem in each of *languages* (an index's: a query's word is stemmed in all)."""
    key = (word, languages)
    found = _stems_kept.get(key)
    if found is None:
        found = (word, *(analysis.stem_word(word, language) for language in languages))
        if len(word) <= analysis.MEMO_WORD_CHARACTERS:  # (a longer word, as rare, is stemmed each time)
            if len(_stems_kept) >= FORMS_KEPT:
                _stems_kept.clear()
            _stems_kept[key] = found
    return found


def _held(word: str, vocabulary: Vocabulary, languages: Sequence[str]) -> list[str]:
    return [form for form in word_forms(word, languages) if vocabulary.documents(form)]


def _phrase(words: list[str], languages: Sequence[str]) -> str:
    """Words at consecutive positions, stemmed alike in one of the languages (or not at all)."""
    return " OR ".join(map(_quoted, _phrase_variants(words, languages)))


def _held_phrase(words: list[str], languages: Sequence[str], vocabulary: Vocabulary) -> str | None:
    """``_phrase`` without the variants holding a term no page has (most of a word's stems in the
    index's other languages), which match nothing: FTS5 looks each term up, a phrase at a time
    (the known-item bench's titles: 5 variants, 3 held, 0.18 -> 0.15 ms); None when none is held."""
    variants = _phrase_variants(words, languages)
    vocabulary.count(term for variant in variants for term in variant.split())  # (counted together)
    held = [variant for variant in variants if all(vocabulary.documents(term) for term in variant.split())]
    return " OR ".join(f'"{variant}"' for variant in held) or None


def _phrase_variants(words: list[str], languages: Sequence[str]) -> list[str]:
    # Each word's column of stems, one a language: a variant is a row across them.
    columns = [_stems(word, tuple(languages)) for word in words]
    return list(dict.fromkeys(" ".join(column[row] for column in columns) for row in range(len(languages) + 1)))
