"""The search box's query language (``rank=relevance``), parsed.

- plain words: pages with all of them first, then (when none has all) the best partial matches;
- ``"quoted phrases"``: the words as typed (no other forms) at consecutive positions (in CJK,
  consecutive characters); a quote left open runs to the end of the line.  The typographic double
  quotes are ``"`` (``“…”``, ``„…“``, ``‟…”``, ``«…»``, ``»…«``, ``「…」``, ``『…』``, ``〝…〞``,
  the full-width one U+FF02: what phones, pasted text and other languages type); the single ones
  (U+2018, U+2019) are apostrophes, inside words;
- ``-word`` and ``-"phrase"``: no page holding it;
- ``OR`` (in capitals) between two words or phrases: either (``OR OR`` is one ``OR``).  An ``OR``
  with no word or phrase to find on one side (first, last, next to a ``-word``) is left out, as a
  search box's user means; a query with nothing else to find (``OR``, ``OR -word``) looks for
  the word "or".
- ``AND`` (in capitals): left out, wherever it stands (all words are required already:
  ``cat AND dog`` is ``cat dog``); a query with nothing else to find (``AND``, ``OR AND``) looks
  for the words.  Lowercase ``and`` and ``or`` are words here (they are operators only for
  ``rank=tse`` and ``rank=bm25``), and so are ``"AND"`` and ``"OR"`` quoted.

A word that analyzes to several terms (``6.2``, ``what's``, ``日本語``) is a
phrase of them.  Punctuation alone is nothing, as if not typed (``cat OR ! dog`` is ``cat OR
dog``); a query with nothing left to find gets a message.  A control character is a space, as
on the pages (``deb\x01ian`` is ``deb ian``).  Pure functions: no index here.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from itertools import chain

from ..text import analysis
from ..text.cleaning import CONTROL_CHARACTERS
from .query import MAX_QUERY_WORDS, TOO_MANY_WORDS, size_error

_PIECE = re.compile(r'(-?)"([^"]*)"?|(\S+)')
_WORD_CHARACTER = re.compile(r"[^\W_]")  # a letter or digit: a piece without one is no word

# Each typographic double quote, opening or closing, is ``"``: pairs then match as ASCII ones do
# (``„a“ „b“`` is two phrases), one mark for one, so the query keeps its length.  The curly
# single quotes are left alone: U+2019 is the apostrophe of "what's" and "l'installation" typed on a phone.
_AS_ASCII_QUOTES = str.maketrans(
    dict.fromkeys("\u201c\u201d\u201e\u201f\u00ab\u00bb\u300c\u300d\u300e\u300f\u301d\u301e\u301f\uff02", '"')
)
# The control characters a page's text shows as spaces (the others are whitespace already): typed, or
# pasted with a query, they separate words as they do on the pages, and are never part of a word, nor
# of a "Did you mean".  So does the zero-width space U+200B, the invisible character text copied from
# the web holds most (a word break where words are not spaced, as in Thai): a space, not punctuation
# making a phrase of the words on either side ("deb\u200bian" is "deb ian", which finds "debian" joined).
ZERO_WIDTH_SPACE = "\u200b"
_CONTROLS_AS_SPACES = str.maketrans(dict.fromkeys(CONTROL_CHARACTERS + ZERO_WIDTH_SPACE, " "))
_OPERATORS = ("OR", "AND")  # (in capitals; AND changes nothing: every clause is required already)


class SearchQueryError(ValueError):
    """The query cannot be searched; the message is for the person who typed it."""


@dataclass(frozen=True)
class Clause:
    """A word or a phrase as typed, and its words (normalized, folded, not stemmed)."""

    text: str
    words: tuple[str, ...]
    quoted: bool = False

    @property
    def is_phrase(self) -> bool:
        return self.quoted or len(self.words) > 1

    def typed(self, corrections: dict[str, str] | None = None) -> str:
        """The clause as it would be typed again (a word replaced by its correction, if any: the
        punctuation typed before and after it kept, as in ``(instalaltion`` or ``instalaltion,``)."""
        corrected = (corrections or {}).get(self.text)
        if self.quoted:
            return f'"{corrected or self.text}"'
        if corrected is None:
            return self.text
        runs = analysis.word_runs_at(self.text)
        if not runs:  # (a word NFKC makes of what is no letter or digit as typed)
            return corrected
        start, (end, last) = runs[0][0], runs[-1]
        return self.text[:start] + corrected + self.text[end + len(last) :]


@dataclass(frozen=True)
class SearchQuery:
    """All of ``required`` (each a list of alternatives, joined by OR), none of ``excluded``."""

    required: tuple[tuple[Clause, ...], ...]
    excluded: tuple[Clause, ...] = field(default=())

    @property
    def clauses(self) -> list[Clause]:
        return [clause for alternatives in self.required for clause in alternatives]

    @cached_property
    def _typed_words(self) -> tuple[tuple[frozenset[str], ...], ...]:
        """Each required group's clauses' words as typed (``analysis.written_words``)."""
        return tuple(tuple(analysis.written_words(clause.text) for clause in group) for group in self.required)

    @cached_property
    def _typed_runs(self) -> tuple[str, ...] | None:
        """The required words as typed, in order (``is_whole_title``), where each group is one clause."""
        if not all(len(group) == 1 for group in self.required):
            return None
        return tuple(
            word for (clause,) in self.required for word in analysis.word_runs_of(analysis.written(clause.text))
        )

    def answered_as_typed(self, text: str) -> bool:
        """Whether *text* (a title) holds, for each required group, every word of one of its clauses as
        typed (``analysis.written_words``): a word typed with accents with those accents, one typed
        without them with any (accents are optional: ``verifier`` is as typed in ``Vérifier``)."""
        title = _title_read(text)
        normalized = title.written

        # First whether each word is in the text at all (a search's first pages' titles: most are not).
        def appears(word: str) -> bool:
            if word in normalized:
                return True
            return analysis.fold(word) == word and word in title.folded_text

        if not all(any(all(map(appears, words)) for words in group) for group in self._typed_words):
            return False
        written, folded = title.words, title.folded_words

        def held(word: str) -> bool:
            return word in written or (word in folded and analysis.fold(word) == word)

        return all(any(all(map(held, words)) for words in group) for group in self._typed_words)

    def is_whole_title(self, text: str) -> bool:
        """Whether *text* (a title) is the query typed: its words are the query's, in the order typed
        (``5.2. Accessibility``, not ``Accessibility`` nor ``Référence Debian`` for ``Debian
        Reference``), each as typed (with the accents typed, or any when typed without); a query of
        alternatives (OR) only needs the title to hold no word none of them typed."""
        if not self.answered_as_typed(text):
            return False
        title = _title_read(text).runs
        typed = self._typed_runs
        if typed is not None:
            return len(typed) == len(title) and all(map(_typed_as, title, typed))
        every = frozenset().union(*chain.from_iterable(self._typed_words))
        return all(any(_typed_as(word, one) for one in every) for word in title)

    def typed(self, corrections: dict[str, str] | None = None) -> str:
        """The query as it would be typed again, its words replaced by their *corrections* (typed ->
        found); excluded words are not corrected."""
        shown = [" OR ".join(clause.typed(corrections) for clause in alternatives) for alternatives in self.required]
        return " ".join(shown + ["-" + clause.typed() for clause in self.excluded])


# The titles whose words ``_title_read`` keeps worked out: a search looks at its first pages' titles
# (searcher.TYPED_TITLE_CANDIDATES), the same few pages' search after search (normalizing and cutting
# a title again was half the typed-title bonus's time).  A title of 300 characters worked out takes
# about 12 KB (its words, folded and not, as sets): 2,048 of them about 24 MB at most.
TITLES_READ = 2_048


class _TitleRead:
    """A title's words as ``SearchQuery.answered_as_typed`` and ``is_whole_title`` read them."""

    __slots__ = ("folded_text", "folded_words", "runs", "words", "written")

    def __init__(self, text: str):
        self.written = analysis.written(text)
        self.folded_text = analysis.fold(self.written)
        self.runs = tuple(analysis.word_runs_of(self.written))
        self.words = frozenset(self.runs)
        self.folded_words = frozenset(analysis.fold(word) for word in self.words)


@lru_cache(maxsize=TITLES_READ)
def _title_read(text: str) -> _TitleRead:
    return _TitleRead(text)


def _typed_as(word: str, typed: str) -> bool:
    """Whether a title's *word* is the word *typed* (both ``analysis.written``): the same, or *typed*
    without accents and *word* the same without its."""
    return word == typed or (analysis.fold(typed) == typed and analysis.fold(word) == typed)


def cased_like(spelling: str, typed: str) -> str:
    """A correction's *spelling* (as pages spell it, case folded) in the case of the word *typed*:
    capitals where it was typed in capitals (of two letters or more), a capital first where it began
    with one ("Debain" suggests "Debian", not "debian"), else as it is.  Typed with a Turkish dotted
    capital or dotless small i, its i's capitals are dotted too ("İÇİNN" suggests "İÇİN", not "IÇIN").
    A spelling folded from a dotted capital ("i" and a combining dot above: "İstanbul" folds so) gets its
    capital once, dotted once."""
    letters = [character for character in typed if character.isalpha()]
    if not letters or not spelling:
        return spelling
    turkish = "\u0130" in typed or "\u0131" in typed  # (the dotted capital I, the dotless small i)
    if turkish:
        spelling = spelling.replace("i\u0307", "i")

    def upper(text: str) -> str:
        return unicodedata.normalize("NFC", (text.replace("i", "\u0130") if turkish else text).upper())

    if len(letters) > 1 and all(map(str.isupper, letters)):
        return greek_capitals(upper(spelling))
    if letters[0].isupper():
        return unicodedata.normalize("NFC", upper(spelling[0]) + spelling[1:])
    return spelling


# The accents and breathings a Greek letter written in capitals loses (capitals carry none in Greek: "ΕΛΛΑΔΑ",
# not "ΕΛΛΆΔΑ"), its diaeresis kept ("ΠΡΩΪΝΟ"): tonos/oxia, varia, perispomeni, psili, dasia.
_GREEK_CAPITALS_LOSE = frozenset("\u0301\u0300\u0342\u0313\u0314")


def _is_greek(character: str) -> bool:
    return "\u0370" <= character <= "\u03ff" or "\u1f00" <= character <= "\u1fff"


def greek_capitals(text: str) -> str:
    """*text* (in capitals) with its Greek letters written as Greek capitals are: without their
    accents and breathings (Python's ``upper`` keeps them: "ελλάδα" -> "ΕΛΛΆΔΑ"); other letters as they
    are ("É" keeps its accent)."""
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFD", text)
    kept, base = [], ""
    for character in decomposed:
        if character in _GREEK_CAPITALS_LOSE and _is_greek(base):
            continue
        if not unicodedata.combining(character):
            base = character
        kept.append(character)
    return unicodedata.normalize("NFC", "".join(kept))


def parse_search_query(line: str) -> SearchQuery:
    """The query *line* means; SearchQueryError when it is too long or has nothing to find."""
    if problem := size_error(line):
        raise SearchQueryError(problem)
    line = line.translate(_CONTROLS_AS_SPACES)  # (one character for one: the query keeps its length)
    pieces = list(_PIECE.finditer(line.translate(_AS_ASCII_QUOTES)))
    # (quoted ones written together: '"a""b"' is two; OR is none, nor quote marks or punctuation alone:
    # 201 quote marks were "too many words", a tester's find)
    if sum(piece.group() != "OR" and bool(_WORD_CHARACTER.search(piece.group())) for piece in pieces) > MAX_QUERY_WORDS:
        raise SearchQueryError(TOO_MANY_WORDS)
    required: list[list[Clause]] = []
    excluded: list[Clause] = []
    operators: list[Clause] = []  # the ORs and ANDs typed, as words: what is found when nothing else is
    after_required = False  # the last clause was a required one (ORs between: one OR)
    joined = False  # ... and an OR stands after it: the next required clause is its alternative
    for piece in pieces:
        minus, quoted, plain = piece.group(1), piece.group(2), piece.group(3)
        if plain is not None:  # (as typed: "Did you mean" shows a word's own quote marks, as in 'foo”')
            plain = line[piece.start(3) : piece.end(3)]
        if plain in _OPERATORS:
            operators.append(Clause(plain, tuple(analysis.words(plain))))
            if plain == "OR":
                joined = after_required
            continue
        negative = bool(minus) or (plain is not None and plain.startswith("-") and len(plain) > 1)
        text = quoted if quoted is not None else plain.removeprefix("-") if negative else plain
        clause = Clause(text, tuple(analysis.words(text)), quoted is not None)
        if not clause.words:  # (nothing, as if not typed)
            continue
        if negative:
            excluded.append(clause)
        elif joined:
            required[-1].append(clause)
        else:
            required.append([clause])
        after_required, joined = not negative, False
    if not required:
        if operators:  # nothing to find but ORs and ANDs: the words, as a person looking for them means
            required = [[clause] for clause in operators]
        elif excluded:
            raise SearchQueryError("Nothing to find: a query needs a word that is not excluded (-word).")
        else:
            raise SearchQueryError("Nothing to find: the query has no letters or digits.")
    return SearchQuery(tuple(tuple(alternatives) for alternatives in required), tuple(excluded))
