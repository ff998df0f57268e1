"""Snippets for ``rank=relevance`` results: a window of a page's text around what matched, marked,
in any script.

A word is marked when one of the terms it gives (``analysis.tokens``: unstemmed
or stemmed, accents folded) is one the query matched, so stems, accent-free
and corrected words are marked where they stand in the page's own spelling.
Windows are counted in characters, not in space-separated words, since
Chinese, Japanese and Thai put no spaces between words.
"""

from __future__ import annotations

import hashlib
import re
import sys
import unicodedata
from array import array
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate, chain, pairwise

from ..text import analysis

SNIPPET_CHARACTERS = 240
BEFORE_CHARACTERS = 60  # shown before the first mark
ELLIPSIS = "\u2026"
# A snippet's marks are looked for in the text's first FIRST_READ characters, then in READ_GROWTH
# times as many, until the window after the first mark is read (or the text is).
FIRST_READ = 1_000
READ_GROWTH = 5
HEAD_BYTES = 200_000  # a stored head larger than this is not read
# A first read longer than this (text without spaces) has no head: a head holds about 15 bytes a
# character of text in a bigram script (a bigram a character), 2 of other text.
HEAD_CHARACTERS = 2_000


@dataclass(frozen=True)
class Head:
    """What a snippet reads first of a page's text, whatever the query, worked out when the page is
    indexed (as Lucene stores term vectors with positions and offsets for its highlighter): each
    term the words of the text's first read give (``analysis.tokens`` in the page's language), and
    where.  A digest of that first read and of the analysis (``analysis.ANALYSIS_VERSION``) makes a
    head serve only the text it was made from, as it would be read now."""

    digest: str
    language: str
    size: int  # the first read's length
    # The terms in UTF-8, each followed by a space: a query wants a few of a head's hundreds, found
    # by a search each in these bytes (not by decoding them all).
    listed: bytes
    count: int  # how many terms are listed
    # Unsigned 16-bit numbers, read only where a query wants them, in three parts: for each term,
    # where its places start in the second part (and one more: where the second part ends); each
    # place, two numbers (the word's number among the first read's words, and the term's rank
    # among the word's terms); then each word's start and end.
    numbers: array

    @classmethod
    def of(cls, digest: str, language: str, size: int, terms: Iterable[str], numbers: array) -> Head:
        """A head listing *terms*."""
        listed = [_encoded(term) + b" " for term in terms]
        return cls(digest, language, size, b"".join(listed), len(listed), numbers)

    @property
    def terms(self) -> tuple[str, ...]:
        """The terms the first read's words give, in the order of their first places."""
        return tuple(self.listed.decode("utf-8", "surrogatepass").split(" ")[:-1])

    def packed(self) -> bytes:
        fields = [self.digest, self.language, str(self.size), str(self.count)]
        header = _encoded("\x00".join(fields)) + b"\x00" + self.listed[:-1]
        numbers = array("H", self.numbers)
        if sys.byteorder == "big":  # stored little-endian
            numbers.byteswap()
        return header + b"\x00" + numbers.tobytes()

    @property
    def _places_at(self) -> int:
        return self.count + 1

    @property
    def _spans_at(self) -> int:
        return self._places_at + self.numbers[self.count]

    @property
    def words(self) -> int:
        """How many words the first read holds."""
        return (len(self.numbers) - self._spans_at) // 2

    def places(self, wanted: Iterable[str]) -> dict[str, tuple[Sequence[int], Sequence[int]]] | None:
        """The terms of *wanted* that the words give, each with its words' numbers and its ranks
        among their terms; None for a damaged head (a term's places not in the second part, or
        a word that is not there)."""
        return self._places(_listed_patterns(wanted))

    def _places(self, patterns: Iterable[tuple[str, bytes]]) -> dict[str, tuple[Sequence[int], Sequence[int]]] | None:
        """``places`` of the terms of *patterns* (``_listed_patterns``)."""
        numbers, count = self.numbers, self.count
        at, end = count + 1, numbers[count]
        listed = b" " + self.listed
        found = {}
        for term, pattern in patterns:
            # Where " term " stands: the spaces before it count the terms before it.
            place = listed.find(pattern)
            if place == -1:
                continue
            index = listed.count(b" ", 0, place)
            first, last = numbers[index], numbers[index + 1]
            if not first < last <= end or (last - first) % 2:
                return None
            found[term] = (numbers[at + first : at + last : 2], numbers[at + first + 1 : at + last : 2])
        if found and max([max(words) for words, _ in found.values()]) >= self.words:
            return None
        return found

    def spans(self, words: Iterable[int]) -> dict[int, tuple[int, int]]:
        """Where each of the first read's *words* (by number) stands: its start and end."""
        numbers, at = self.numbers, self._spans_at
        return {number: (numbers[at + 2 * number], numbers[at + 2 * number + 1]) for number in words}


def snippet_head(text: str, language: str | None) -> Head | None:
    """The ``Head`` of *text* (a page's text as results show it) written in *language*; None for a
    first read of more than HEAD_CHARACTERS (text without spaces) or too many words for its numbers."""
    first = first_read(text)
    if len(first) > HEAD_CHARACTERS:
        return None
    places: dict[str, list[int]] = {}
    spans = array("H")
    try:
        for number, (start, end, terms) in enumerate(_words(first, language)):
            spans.extend((start, end))
            for rank, term in enumerate(terms):
                places.setdefault(term, []).extend((number, rank))
        numbers = array("H", accumulate(map(len, places.values()), initial=0))
        numbers.extend(chain.from_iterable(places.values()))
    except OverflowError:  # a number past 16 bits
        return None
    return Head.of(_digest(first), language or "", len(first), places, numbers + spans)


def _words(text: str, language: str | None) -> list[tuple[int, int, tuple[str, ...]]]:
    """Each word of *text* (``analysis.tokens`` in *language*) as its start, end and terms."""
    folded = analysis.aligned_fold(text)
    if folded is None or analysis.has_bigram_script(folded):
        return [(token.start, token.end, token.terms) for token in analysis.tokens(text, (None, language))]
    # Folding kept every character in its place (most text): the folded text's runs are the
    # analyzer's words, and each distinct one is stemmed once.
    runs = analysis.word_runs_at(folded)
    distinct = list(dict.fromkeys(run for _, run in runs))
    stems = analysis.stem(distinct, language)
    terms = {word: tuple(dict.fromkeys((word, stem))) for word, stem in zip(distinct, stems, strict=True)}
    return [(start, start + len(run), terms[run]) for start, run in runs]


def unpacked_head(blob: object) -> Head | None:
    """The ``Head`` that ``Head.packed`` gave *blob*; None for anything it did not give (a damaged or
    tampered file: too large, not bytes, fields missing or not matching).  Its places are checked
    when they are read (``Head.places``)."""
    if not isinstance(blob, bytes) or len(blob) > HEAD_BYTES:
        return None
    try:
        digest, language, size, count, terms, numbers = blob.split(b"\x00", 5)
        read = array("H")
        read.frombytes(numbers)
        if sys.byteorder == "big":
            read.byteswap()
        listed = terms + b" " if count != b"0" else b""
        head = Head(digest.decode(), language.decode(), int(size), listed, int(count), read)
    except (UnicodeDecodeError, ValueError):
        return None
    if count != str(head.count).encode() or listed.count(b" ") != head.count:
        return None
    if len(read) <= head.count or read[0] != 0:
        return None
    if head._spans_at > len(read) or (len(read) - head._spans_at) % 2:  # the parts do not add up
        return None
    return head


def _encoded(term: str) -> bytes:
    return term.encode("utf-8", "surrogatepass")


def _listed_patterns(terms: Iterable[str]) -> list[tuple[str, bytes]]:
    """Each of *terms* with what it is in a head's list of terms (" term "); a term holding a space is
    left out (no term holds one: " a b " would match across two)."""
    patterns = []
    for term in terms:
        encoded = _encoded(term)
        if b" " not in encoded:
            patterns.append((term, b" %b " % encoded))
    return patterns


class PreparedMarks:
    """A query's marks (see ``marked_ranges``) and what reading a text for them needs, worked out
    once for the snippets of all its results."""

    __slots__ = ("alone", "later", "longest", "patterns", "sequences", "starts", "wanted", "words_only")

    def __init__(self, sequences: Collection[Sequence[Collection[str]]]):
        self.sequences = sequences
        self.wanted = {term for sequence in sequences for terms in sequence for term in terms}
        # A single character of a bigram script (a prefix query) is given by the bigrams it starts, and
        # marked alone where it ends a run (a mark of one word: the index finds it there only so).
        self.starts = set(filter(analysis.is_one_segmented_character, self.wanted))
        self.alone = {term for sequence in sequences if len(sequence) == 1 for term in sequence[0]} & self.starts
        self.longest = max((len(sequence) for sequence in sequences), default=0)
        self.words_only = all(len(sequence) == 1 for sequence in sequences)  # every mark one word
        self.patterns = _listed_patterns(self.wanted)
        # What later_snippet looks for: each mark's places (``_places_looked_for``), and the pieces a text's
        # places give (``_later_pieces``), compiled once for the results.
        self.later: tuple[list[list[set[str]]], dict[frozenset[str], _LaterPieces]] | None = None


def marks_in(
    marks: Sequence[Sequence[Collection[str]]], only_in: Mapping[str, Collection[str]], language: str | None
) -> list[tuple[frozenset[str], ...]]:
    """*marks* for a page in *language* (None: not known): without the terms *only_in* gives other
    languages than it, another language's stems of a word typed, which the page holds as another word
    ("in", the Catalan stem of "init", on an English page); a mark left with a position of no term is
    left out.  A page whose words are not stemmed (no language said, or one without a stemmer) holds
    English stems (``analysis.stems_language``)."""
    language = analysis.stems_language(language)
    kept = []
    for sequence in marks:
        terms = tuple(
            frozenset(term for term in position if term not in only_in or language in only_in[term])
            for position in sequence
        )
        if all(terms):
            kept.append(terms)
    return kept


def _prepared(marks: PreparedMarks | Collection[Sequence[Collection[str]]]) -> PreparedMarks:
    return marks if isinstance(marks, PreparedMarks) else PreparedMarks(marks)


def first_read(text: str) -> str:
    """What a snippet reads of *text* first: its first FIRST_READ characters and the word then begun,
    else all of it."""
    if len(text) <= FIRST_READ:
        return text
    cut = text.find(" ", FIRST_READ)
    return text if cut == -1 else text[:cut]


def _digest(text: str) -> str:
    """A digest of a first read and of the analysis that worked out its head."""
    digest = hashlib.blake2b(analysis.ANALYSIS_VERSION.encode(), digest_size=16)
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def marked_ranges(
    text: str,
    marks: PreparedMarks | Collection[Sequence[Collection[str]]],
    languages: Iterable[str | None],
    window: int | None = None,
) -> list[tuple[int, int]]:
    """The ``[start, end)`` ranges of *text* where one of *marks* stands: a sequence of consecutive
    words (a phrase; a word of several bigrams), each giving one of the terms of its position.  A
    single character of a bigram script is found where it starts a bigram and, alone, where it ends
    a run: it marks itself there.  With *window*, the text is read only to *window* characters past
    the first mark (what a snippet can show)."""
    found, _ = _found(text, _prepared(marks), tuple(languages), window)
    return _merged(found)


def _found(
    text: str,
    prepared: PreparedMarks,
    languages: tuple[str | None, ...],
    window: int | None,
    head: Head | None = None,
    first: tuple[int, int] | None = None,
    places: dict[str, tuple[Sequence[int], Sequence[int]]] | None = None,
) -> tuple[list[tuple[int, int]], bool]:
    """The marks of *text*, the first being the first found reading it word by word (their last
    words' order: it places the window), and whether the text read was enough: it reaches *window*
    characters past the first mark (more would change nothing).  *head*: *text*'s own, stored.
    *first*: the first mark, found before *text* (where it stands from *text*'s start: before it),
    which then places the window and comes first in the marks (no head then)."""
    marks, wanted, starts, longest = prepared.sequences, prepared.wanted, prepared.starts, prepared.longest
    alone = prepared.alone
    if places is None:  # (given: the places of these marks' terms or more, read from *head* already)
        places = head._places(prepared.patterns) if head is not None and not starts else None
    if head is not None and places is not None:
        marked = _head_marks(head, places, prepared, window, len(text))
        if marked is not None:
            return marked
    # (A damaged head gives None: the text is read then.)
    words: Iterable[tuple[analysis.Token, bool | None]]
    if (folded := _aligned_unsegmented(text)) is not None:
        # Folding kept every character in its place (most text): the folded text's words are the
        # analyzer's, where they stand, and each distinct word is stemmed once, a language at a time.
        words = _folded_words(folded, languages, wanted)
    else:
        words = analysis.tokens_giving(text, languages, wanted, starts)
    found: list[tuple[int, int]] = [] if first is None else [first]
    if longest == 1 and not starts:
        # Every mark is one word, and every word read gives a term of one: each is a mark.
        for token, _ in words:
            if window is not None and found and token.start > found[0][0] + window:
                return found, True
            found.append((token.start, token.end))
        return found, bool(found) and window is not None and len(text) > found[0][0] + window
    # Each mark is looked for where it ends: at a word giving a term of its last position.
    ending: dict[str, list[Sequence[Collection[str]]]] = {}
    for sequence in marks:
        for term in sequence[-1] if sequence else ():
            ending.setdefault(term, []).append(sequence)
    recent: list[analysis.Token] = []  # the last consecutive words that give a term, as many as the longest mark
    for token, follows in words:
        if window is not None and found and token.start > found[0][0] + window:
            return found, True
        if follows is None:  # a run's last character alone: a mark of its own, in no phrase
            if token.terms[0] in alone:
                found.append((token.start, token.end))
            continue
        if not follows:  # a word that gives no term of any mark came between: no mark runs through it
            recent.clear()
        recent.append(token)
        if len(recent) > longest:
            del recent[0]
        given = (*token.terms, token.terms[0][:1]) if starts else token.terms
        candidates = dict.fromkeys(sequence for term in given for sequence in ending.get(term, ()))
        for sequence in candidates:
            if len(sequence) <= len(recent) and all(
                _gives(recent[len(recent) - len(sequence) + offset].terms, terms)
                for offset, terms in enumerate(sequence)
            ):
                start = recent[len(recent) - len(sequence)].start
                if len(sequence) == 1 and starts and token.terms[0] not in sequence[0]:
                    # A single character typed, given by the bigram it starts: that character is marked.
                    found.append((start, start + 1))
                else:
                    found.append((start, token.end))
    return found, bool(found) and window is not None and len(text) > found[0][0] + window


def _aligned_unsegmented(text: str) -> str | None:
    """``analysis.aligned_fold(text)`` when it is not None and holds no character of a bigram script,
    else None; kept for a long text that is not ASCII (``_kept_fold``)."""
    if len(text) > FIRST_READ and not text.isascii():
        return _kept_fold(text)
    folded = analysis.aligned_fold(text)
    return None if folded is None or analysis.has_bigram_script(folded) else folded


# The texts past a first read that _found read last (non-ASCII), as ``_aligned_unsegmented`` gives
# them: a page's text read on past its first read is read again, cut at the same places, by every
# search its page answers, and folding it again (NFKC checked, case folded, accents taken off) was 5 %
# of a search's instructions with the known-item titles warm.  The text itself is the key: a search
# reads a page anew, and hashing and comparing it cost less than folding it.  At most FOLDS_KEPT
# characters, each counted twice (the text, its fold): then they are forgotten, and kept again.
FOLDS_KEPT = 20_000_000
_folds: dict[str, str | None] = {}
_folds_kept = 0


def _kept_fold(text: str) -> str | None:
    """``_aligned_unsegmented(text)`` worked out, kept (FOLDS_KEPT)."""
    global _folds_kept
    try:
        return _folds[text]
    except KeyError:
        pass
    folded = analysis.aligned_fold(text)
    if folded is not None and analysis.has_bigram_script(folded):
        folded = None
    _folds_kept = _kept(_folds, text, folded, 2 * len(text), _folds_kept, FOLDS_KEPT)
    return folded


def _kept(store: dict, text: str, value: object, size: int, kept: int, limit: int) -> int:
    """Keep *value* under *text* in *store*, which holds *kept* of at most *limit* characters, this one
    counting *size* (emptied first when it would pass the limit; not kept when alone it would): what
    *store* then holds."""
    if kept + size > limit:
        store.clear()
        kept = 0
    if size <= limit:
        store[text] = value
        kept += size
    return kept


def _whole_characters(text: str, ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """*ranges* (merged) of *text*, each widened to the combining marks it cuts off: a bigram is two
    characters of the text, and in Thai, Lao, Khmer or Myanmar the second may carry a vowel or tone
    mark after it (ที่), or the first be one; a mark is shown with the letter it sits on."""
    widened = False
    size = len(text)
    found = []
    for start, end in ranges:
        while end < size and text[end] >= "\u0300" and unicodedata.category(text[end])[0] == "M":
            end += 1
            widened = True
        while 0 < start < size and text[start] >= "\u0300" and unicodedata.category(text[start])[0] == "M":
            if text[start - 1].isspace():
                break
            start -= 1
            widened = True
        found.append((start, end))
    return _merged(found) if widened else ranges


def _merged(found: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(found):
        if merged and merged[-1][1] >= start:  # overlapping or touching (bigrams): one range
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


# A page's text past the text results show (``later_snippet``): the places where a mark may stand are
# found by a search for its pieces (``_LaterPieces``), at most LATER_PLACES of them; where the word
# there gives a wanted term, from LATER_MARGIN characters before it to a window's width after it is
# read word by word, at most LATER_TRIES times.
LATER_PLACES = 200
LATER_TRIES = 6
LATER_MARGIN = 100
LATER_PIECES = 16  # the longest pieces of a kind looked for (a query may have a hundred words)
LATER_SPACE = 100  # a read is cut at a space this close to its bound ...
LATER_WORD = 64  # ... else at a word's end this close (never inside a word of a script with spaces but a longer one)
LATER_PRESENT_READ = 50_000  # a text's characters read for the accented letters it holds (``later_snippet``)


def later_snippet(
    rest: str,
    marks: PreparedMarks | Collection[Sequence[Collection[str]]],
    languages: Iterable[str | None] = (None,),
    size: int = SNIPPET_CHARACTERS,
    shown: PreparedMarks | None = None,
) -> tuple[str, list[tuple[int, int]]] | None:
    """``snippet`` of *rest*, the text of a page past the text its results show (which holds no
    mark), as a part of the page ("… " before it); None when no mark is found.  Bounded: the pieces
    of the marks are looked for (the telling ones first, spelled as they are, then with accents), at
    most LATER_PLACES places are looked at, and at most LATER_TRIES of them read.  *shown*: the
    marks the snippet shows, where *marks* (some of them) only place it."""
    prepared = _prepared(marks)
    languages = tuple(languages)
    stemming = analysis.stemming_languages(languages)
    read = _later_text(rest)
    lowered = read.lowered
    spellings = [False, True] if analysis.may_be_folded(rest) else [False]  # (accented)
    # The accented letters the text holds, found once for every kind of piece (to a bound: Vietnamese
    # holds one a few characters; past it, None: every letter's accents).
    present: frozenset[str] | None = None
    places = tries = 0
    for pieces in _later_pieces(prepared, read):
        for accented in spellings:
            if accented and present is None and len(lowered) <= LATER_PRESENT_READ:
                present = read.present()
            last = -1
            for found in pieces.pattern(accented, present).finditer(lowered):
                places += 1
                if places > LATER_PLACES:
                    return None
                at = found.start()
                if at < last - LATER_MARGIN or not _gives_wanted(rest, at, found.end(), prepared.wanted, stemming):
                    continue  # (read already, or its word gives no wanted term: "when" for "whetted")
                tries += 1
                first, last = _cut_before(rest, at - LATER_MARGIN), _cut_after(rest, at + size + LATER_MARGIN)
                piece = rest[first:last]
                if shown is None:
                    text, ranges = snippet(piece, prepared, languages, size)
                else:
                    text, ranges, placed = placed_snippet(piece, shown, languages, size, placing=_placing_of(prepared))
                    ranges = ranges if placed else []
                if ranges:
                    return _as_later(text, ranges, last < len(rest))
                if tries == LATER_TRIES:
                    return None
        if tries:  # (the other pieces only where these stand nowhere)
            return None
    return None


class _LaterPieces:
    """Pieces of a query's marks, looked for in lowercased text (``later_snippet``): the longest
    LATER_PIECES, as they are or with any accents (``analysis.unfolded_pattern``: compiled when
    first needed, with accents for the accented letters a text holds: all of them can cost
    milliseconds)."""

    __slots__ = ("_patterns", "_sources", "pieces")

    def __init__(self, pieces: Iterable[str]):
        self.pieces = sorted(pieces, key=lambda piece: (-len(piece), piece))[:LATER_PIECES]
        self._patterns: dict[frozenset[str] | None, re.Pattern[str]] = {}
        self._sources: frozenset[str] | None = None  # what the pieces' letters may be folded from

    def pattern(self, accented: bool, present: frozenset[str] | None = None) -> re.Pattern[str]:
        """The pieces spelled as they are, or *accented* as a text holding the accented letters
        *present* (``analysis.unfolded_characters_in``; None: any) may hold them."""
        key: frozenset[str] | None = _AS_THEY_ARE
        if accented:
            key = None
            if present is not None:
                if self._sources is None:
                    self._sources = analysis.unfolded_characters_of(self.pieces)
                key = present & self._sources
        found = self._patterns.get(key)
        if found is None:
            if key is _AS_THEY_ARE:
                spelled = map(re.escape, self.pieces)
            else:
                spelled = (analysis.unfolded_pattern(piece, key) for piece in self.pieces)
            # The longest first where two start alike.
            found = self._patterns[key] = re.compile("|".join(spelled))
        return found


_AS_THEY_ARE: frozenset[str] = frozenset(["as they are"])  # (``_LaterPieces``' key of its pieces unaccented)


def _later_pieces(prepared: PreparedMarks, lowered: str | _LaterText) -> list[_LaterPieces]:
    """The pieces ``later_snippet`` looks for in *lowered* (a page's text, lowercased), each kind
    compiled once for a query's results."""
    if isinstance(lowered, str):
        lowered = _LaterText(lowered)
    if prepared.later is None:
        prepared.later = [_places_looked_for(sequence) for sequence in prepared.sequences], {}
    places, compiled = prepared.later
    found = []
    for pieces in _looked_for(places, lowered):
        key = frozenset(pieces)
        if key not in compiled:
            compiled[key] = _LaterPieces(pieces)
        found.append(compiled[key])
    return found


def _places_looked_for(sequence: Sequence[Collection[str]]) -> list[set[str]]:
    """What a place where the mark *sequence* may stand can be found by, normalized and folded, each
    a choice: a word of a bigram script whole (its bigrams joined); else the pieces of any one of its
    positions, each a term but its last character (a stem may end otherwise than its word: happi,
    happy), one of 4 or fewer whole (whet, not "whe" of every "when")."""
    pieces = _bigrams_joined(sequence)
    if pieces is not None:
        return [pieces]
    options = [{term[:-1] if len(term) > 4 else term for term in terms if term} for terms in sequence]
    return [option for option in options if option]


def _looked_for(places: Iterable[list[set[str]]], lowered: _LaterText) -> list[set[str]]:
    """What the places where the marks may stand hold (*places*: each mark's choices), in *lowered*:
    the telling pieces, then the others (when any).  A mark's pieces: of its most telling choices, the
    one *lowered* holds the fewest times (counted without accents, as the pieces are spelled: the
    rarest word of a phrase, "join", not "path", of "os.path.join" on the page of os.path), then the
    longest.  Telling ones are of 3 characters or more (2 of a bigram script): a word of one or two
    letters or digits is almost everywhere."""
    telling: set[str] = set()
    short: set[str] = set()
    counted: str | None = None  # the text as its pieces are spelled (folded), where a choice is made
    for choices in places:
        if len(choices) > 1:
            if counted is None:
                counted = lowered.folded()
            pieces = max(
                choices,
                key=lambda option: (min(_telling(option), 3), -sum(map(counted.count, option)), _telling(option)),
            )
        else:
            pieces = choices[0] if choices else set()
        if pieces:
            (telling if _telling(pieces) >= 3 else short).update(pieces)
    return [found for found in (telling, short) if found]


def _telling(pieces: Collection[str]) -> int:
    """How telling a place holding one of *pieces* is: the length of the shortest (3 for 2 characters
    of a bigram script)."""
    return min(3 if len(piece) == 2 and analysis.is_segmented(piece) else len(piece) for piece in pieces)


def _bigrams_joined(sequence: Sequence[Collection[str]]) -> set[str] | None:
    """The word of a bigram script whose bigrams are *sequence* (one a position, each starting with
    the last character of the one before), as one piece; None for another mark."""
    if len(sequence) < 2 or any(len(terms) != 1 for terms in sequence):
        return None
    bigrams = [next(iter(terms)) for terms in sequence]
    if any(len(bigram) != 2 or not analysis.is_segmented(bigram) for bigram in bigrams):
        return None
    if any(before[1] != after[0] for before, after in pairwise(bigrams)):
        return None
    return {bigrams[0][0] + "".join(bigram[1] for bigram in bigrams)}


class _LaterText:
    """A text ``later_snippet`` reads, lowercased (``_lowered``), and what it works out of it whatever the
    query: the text folded (``_looked_for`` counts pieces in it), and its accented letters."""

    __slots__ = ("_folded", "_present", "lowered")

    def __init__(self, lowered: str):
        self.lowered = lowered
        self._folded: str | None = None
        self._present: frozenset[str] | None = None

    def folded(self) -> str:
        if self._folded is None:
            lowered = self.lowered
            self._folded = analysis.fold(lowered) if analysis.may_be_folded(lowered) else lowered
        return self._folded

    def present(self) -> frozenset[str]:
        """``analysis.unfolded_characters_in`` the text."""
        if self._present is None:
            self._present = analysis.unfolded_characters_in(self.lowered)
        return self._present


# The texts later_snippet read last, as ``_LaterText``s: a page's rest (or its text past the first read)
# is read again by every search its page answers past the text results show, and lowercasing and folding
# it whole were 9 % of a search's instructions (the known-item titles: 1,334 reads of 694 texts, 5.6
# million characters).  At most LATER_TEXTS_KEPT characters, each text counted three times (as it is,
# lowercased, folded): then they are forgotten, and kept again.
LATER_TEXTS_KEPT = 20_000_000
_later_texts: dict[str, _LaterText] = {}
_later_texts_kept = 0


def _later_text(text: str) -> _LaterText:
    """*text*'s ``_LaterText``, kept (LATER_TEXTS_KEPT)."""
    global _later_texts_kept
    found = _later_texts.get(text)
    if found is None:
        found = _LaterText(_lowered(text))
        _later_texts_kept = _kept(_later_texts, text, found, 3 * len(text), _later_texts_kept, LATER_TEXTS_KEPT)
    return found


def _lowered(text: str) -> str:
    """*text* lowercased letter for letter (İ, which lowercasing spells as two, as i)."""
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    return "".join(letter[:1] for letter in map(str.lower, text))


def _gives_wanted(text: str, start: int, end: int, wanted: set[str], stemming: tuple[str, ...]) -> bool:
    """Whether the word of *text* holding ``text[start:end]`` (a piece found there) gives a term of
    *wanted*, unstemmed or stemmed in one of the languages *stemming* (a piece of a bigram script
    is taken at its word)."""
    if analysis.has_bigram_script(text[start:end]):
        return True
    offset = max(0, start - LATER_WORD)
    around = text[offset : end + LATER_WORD]
    held = [run for at, run in analysis.word_runs_at(around) if at < end - offset and at + len(run) > start - offset]
    words = analysis.words(" ".join(held))
    terms = set(words)
    for language in stemming:
        terms.update(analysis.stem(words, language))
    return not terms.isdisjoint(wanted)


def _cut_before(text: str, at: int) -> int:
    """Where a read of *text* starts, at or before *at*: after a space within LATER_SPACE characters,
    else at the start of the word of a script with spaces that *at* is in (LATER_WORD at most)."""
    if at <= 0:
        return 0
    space = text.rfind(" ", max(0, at - LATER_SPACE), at)
    if space != -1:
        return space + 1
    start = at
    while start > 0 and at - start < LATER_WORD and _cuts_a_word(text, start):
        start -= 1
    return grapheme_start(text, start)


def _cut_after(text: str, at: int) -> int:
    """Where a read of *text* ends, at or after *at*: at a space within LATER_SPACE characters, else at
    the end of the word of a script with spaces that *at* is in (LATER_WORD at most); its length past
    its end."""
    if at >= len(text):
        return len(text)
    space = text.find(" ", at, at + LATER_SPACE)
    if space != -1:
        return space
    end = at
    while end < len(text) and end - at < LATER_WORD and _cuts_a_word(text, end):
        end += 1
    return grapheme_start(text, end)


def _cuts_a_word(text: str, at: int) -> bool:
    """Whether *text* cut at *at* is cut inside a word of a script with spaces ("Win|dows", "e|\u0301")."""
    return (
        0 < at < len(text)
        and analysis.is_spaced_word_character(text[at - 1])
        and analysis.is_spaced_word_character(text[at])
    )


def _as_later(shown: str, ranges: list[tuple[int, int]], cut_after: bool) -> tuple[str, list[tuple[int, int]]]:
    """*shown*, a snippet of a part of a page's text past its start, with "… " before it (and after
    it, when the part stops before the text does), its *ranges* moved with it."""
    if not shown.startswith(ELLIPSIS):
        shown = f"{ELLIPSIS} {shown}"
        ranges = _shifted(ranges, 2)
    if cut_after and not shown.endswith(ELLIPSIS):
        shown = f"{shown} {ELLIPSIS}"
    return shown, ranges


def _window_ranges(
    text: str,
    marks: PreparedMarks,
    languages: tuple[str | None, ...],
    window: int,
    head: Head | None = None,
    places: dict[str, tuple[Sequence[int], Sequence[int]]] | None = None,
) -> list[tuple[int, int]]:
    """``marked_ranges(text, marks, languages, window)``, read from longer and longer beginnings of
    *text*: what matched is most often near a page's start, and the words, their stems and the
    marks of a beginning cut at a space are those of the whole text up to there.  *head*: the
    ``snippet_head`` stored for the page, used when it is this text's in these *languages*."""
    first = first_read(text)
    if head is not None and places is None and not _head_serves(head, first, languages):
        head = None  # (with *places*, the caller found it serves)
    if len(first) == len(text):
        return _merged(_found(text, marks, languages, window, head, places=places)[0])
    found, stopped = _found(first, marks, languages, window, head, places=places)
    if stopped:
        return _merged(found)
    start = _read_on_from(text, len(first), marks, languages)
    if start is None:  # read again from the start
        return _merged(_marks_past_first_read(text, 0, marks, languages, window))
    return _merged(_marks_read_on(text, start, found, marks, languages, window))


def _marks_past_first_read(
    text: str, start: int, marks: PreparedMarks, languages: tuple[str | None, ...], window: int
) -> list[tuple[int, int]]:
    """The marks of ``text[start:]``, where they stand in *text*, read (from *start*) to READ_GROWTH
    times the first read, then READ_GROWTH times that, ..., until the window past the first mark is
    read (or the text is)."""
    length = FIRST_READ * READ_GROWTH
    while length < len(text):
        cut = text.find(" ", length)
        if cut == -1:
            break
        found, stopped = _found(text[start:cut], marks, languages, window)
        if stopped:
            return _shifted(found, start)
        length *= READ_GROWTH
    return _shifted(_found(text[start:], marks, languages, window)[0], start)


def _shifted(marks: list[tuple[int, int]], by: int) -> list[tuple[int, int]]:
    return [(start + by, end + by) for start, end in marks]


# Words of the first read looked at, from its end, for one through which no mark runs (``_read_on_from``).
READ_ON_TRIES = 8


def _read_on_from(text: str, read: int, marks: PreparedMarks, languages: tuple[str | None, ...]) -> int | None:
    """Where ``_window_ranges`` can go on reading *text* past its first read, ``text[:read]`` (cut
    at a space), without reading that again: the words read from there on are those of the whole
    text, and so are the marks ending past it.  *read* itself when every mark is one word (a mark
    needs no word before it); else the end of one of the first read's last words that gives no
    wanted term (no mark runs through it) and is a whole word of its own script (not a bigram);
    None when there is none (or a character of a bigram script is wanted alone)."""
    if marks.starts:
        return None
    if marks.longest <= 1:
        return read
    offset = max(0, read - 400)
    runs = analysis.word_runs_at(text[offset:read])[1:]  # (the first may be cut)
    for start, run in reversed(runs[-READ_ON_TRIES:]):
        if analysis.has_bigram_script(run) or not analysis.words(run):
            continue  # several words of its own, or none (no mark's words are kept apart by it)
        if next(analysis.tokens_giving(run, languages, marks.wanted), None) is None:
            return offset + start + len(run)
    return None


def _marks_read_on(
    text: str,
    start: int,
    found: list[tuple[int, int]],
    marks: PreparedMarks,
    languages: tuple[str | None, ...],
    window: int,
) -> list[tuple[int, int]]:
    """What ``_window_ranges`` finds when the first read gave the marks *found* without reaching the
    window: the text read on from *start* (``_read_on_from``), as far as it would have been read
    from its beginning, the marks found there added (those ending in the first read again: merged)."""
    if not found:  # (no mark in the first read: the first found on places the window)
        return _marks_past_first_read(text, start, marks, languages, window)
    # The first mark places the window: read on to the first space past it.
    end = text.find(" ", found[0][0] + window + 1)
    read_on = text[start:] if end == -1 else text[start:end]
    first = (found[0][0] - start, found[0][1] - start)
    return found + _shifted(_found(read_on, marks, languages, window, first=first)[0][1:], start)


def _head_serves(head: Head, first: str, languages: tuple[str | None, ...]) -> bool:
    """Whether *head* is that of the first read *first* for a snippet in *languages* (their terms
    depend only on the languages with a stemmer)."""
    if analysis.stemming_languages(languages) != analysis.stemming_languages((head.language or None,)):
        return False
    return head.size == len(first) and head.digest == _first_read_digest(first)


# The digests of the first reads last checked against a head (``_head_serves``): a page's snippet is
# made again by every search it answers, and its digest worked out again (its UTF-8, then BLAKE2b) was
# 2 % of a search's instructions; a first read kept is found by its text (hashed, compared).  At most
# DIGESTS_KEPT (of at most HEAD_CHARACTERS each): then they are forgotten, and kept again.
DIGESTS_KEPT = 2_048
_digests: dict[str, str] = {}


def _first_read_digest(first: str) -> str:
    """``_digest(first)``, kept."""
    found = _digests.get(first)
    if found is None:
        found = _digest(first)
        if len(_digests) >= DIGESTS_KEPT:
            _digests.clear()
        _digests[first] = found
    return found


def _head_marks(
    head: Head,
    places: dict[str, tuple[Sequence[int], Sequence[int]]],
    prepared: PreparedMarks,
    window: int | None,
    length: int,
) -> tuple[list[tuple[int, int]], bool] | None:
    """What ``_found`` finds in *head*'s first read (of *length* characters), from the *places* of
    the terms it wants, by set operations on the words' numbers instead of a word at a time: the
    same marks, and the same first one (which places the window).  None for a damaged head."""
    if prepared.words_only:
        return _word_marks(head, places, window, length)
    marks = prepared.sequences
    numbers = {term: set(words) for term, (words, _) in places.items()}
    # A mark of L words ends at word n where words n-L+1 ... n each give a term of their position.
    ends: list[tuple[Sequence[Collection[str]], set[int]]] = []  # each mark and the words it ends at
    for sequence in marks:
        last_words = _words_giving(numbers, sequence[-1]) if sequence else set()
        for back in range(1, len(sequence)):
            if not last_words:
                break
            last_words &= {number + back for number in _words_giving(numbers, sequence[-1 - back])}
        if last_words:
            ends.append((sequence, last_words))
    if not ends:
        return [], False
    spans = head.spans({number - back for sequence, found in ends for number in found for back in range(len(sequence))})
    if not _in_order(spans, head.size):
        return None
    # The first mark the word-by-word reading finds: at the first word ending one, the first of the
    # marks ending there in the order that reading tries them (the word's terms' order, then the marks').
    first_end = min([min(found) for _, found in ends])
    terms = sorted(
        (ranks[list(words).index(first_end)], term)
        for term, (words, ranks) in places.items()
        if first_end in numbers[term]
    )
    first_size = _first_size(terms, ends, first_end)
    first = (spans[first_end - first_size + 1][0], spans[first_end][1])
    # Reading word by word stops at the first word giving a wanted term past the window: the marks
    # ending there or later are not found (those ending at the first word always are), and the text
    # read was enough when it goes on past the window.
    reach = None if window is None else first[0] + window
    found_marks = [first]
    found_marks += [
        (spans[number - len(sequence) + 1][0], spans[number][1])
        for sequence, found in ends
        for number in found
        if reach is None or number == first_end or spans[number][0] <= reach
    ]
    return found_marks, reach is not None and length > reach


def _first_size(
    terms: list[tuple[int, str]], ends: list[tuple[Sequence[Collection[str]], set[int]]], first_end: int
) -> int:
    """The length of the first mark ending at word *first_end* (``_head_marks``): of the first of *terms*
    (ranked) ending one of *ends* there."""
    for _, term in terms:
        for sequence, found in ends:
            if term in sequence[-1] and first_end in found:
                return len(sequence)
    raise StopIteration  # (as next() of no mark: there is always one)


def _words_giving(numbers: dict[str, set[int]], terms: Collection[str]) -> set[int]:
    """The words (by number) giving one of *terms*, from each term's words (*numbers*)."""
    found: set[int] = set()
    for term in terms:
        words = numbers.get(term)
        if words is not None:
            found |= words
    return found


def _word_marks(
    head: Head, places: dict[str, tuple[Sequence[int], Sequence[int]]], window: int | None, length: int
) -> tuple[list[tuple[int, int]], bool] | None:
    """``_head_marks`` where each mark is one word (most queries): every word giving a wanted term
    is a mark, the first of them the first mark."""
    words: set[int] = set()
    for numbers, _ in places.values():
        words.update(numbers)
    if not words:
        return [], False
    spans = head.spans(words)
    if not _in_order(spans, head.size):
        return None
    first_end = min(words)
    first = spans[first_end]
    if window is None:
        return [first, *spans.values()], False
    reach = first[0] + window
    found = [first]
    for span in spans.values():
        if span[0] <= reach:
            found.append(span)
    return found, length > reach


def _in_order(spans: dict[int, tuple[int, int]], size: int) -> bool:
    """Whether the words of *spans* (by number) are in the first read of *size* characters, in order
    (else a damaged head)."""
    # (Loops, not all() of generators: a snippet asks it once or twice, and a generator costs a scope.)
    last = -1
    for number in sorted(spans):
        start, end = spans[number]
        if not (0 <= start < end <= size) or start <= last:
            return False
        last = start
    return True


def _folded_words(
    folded: str, languages: tuple[str | None, ...], wanted: set[str]
) -> Iterator[tuple[analysis.Token, bool]]:
    """The words of *folded* (normalized and folded text) that give a term of *wanted* (unstemmed or
    stemmed in one of *languages*) with their terms, each with whether it follows the one before
    with no other word between."""
    stemming = analysis.stemming_languages(languages)
    kept = _text_words(folded, stemming)
    if kept is not None:
        distinct, stemmed, hits = kept.distinct, kept.stems(stemming), kept.hits(wanted, stemming)
    else:
        distinct = list(dict.fromkeys(analysis.word_runs_of(folded)))
        # Each distinct word stemmed once a language (a language without a stemmer leaves it as it
        # is); only the words giving a wanted term, as the word or a stem, are kept with their terms.
        stemmed = [analysis.stem(distinct, language) for language in stemming]
        # The words giving a wanted term, by their places in *distinct*: found by set operations and
        # searches in C, not by a test a word (a page's first read holds about 150 distinct words).
        hits = {distinct.index(word) for word in wanted.intersection(distinct)}
        for stems in stemmed:
            for stem in wanted.intersection(stems):  # each word of that stem
                at = stems.index(stem)
                while at != -1:
                    hits.add(at)
                    at = _index(stems, stem, at + 1)
    if not hits:
        return
    giving = {
        distinct[index]: tuple(dict.fromkeys([distinct[index], *(stems[index] for stems in stemmed)]))
        for index in sorted(hits)
    }
    # Found where they stand by a search for each (few words give a wanted term), not by reading every word.
    last_end = -1
    for start, word in analysis.word_positions(folded, giving):
        end = start + len(word)
        yield (
            analysis.Token(giving[word], start, end),
            last_end >= 0 and not analysis.has_word_between(folded, last_end, start),
        )
        last_end = end


# The words of the long texts _folded_words reads more than once, and their stems, kept: a page's text
# past its first read (cut where the first read ends and at the stored text's end) is read again by
# every search whose marks its page holds only there, and its words and their stems are the same
# whatever the query (cutting and stemming them were most of that read).  Kept for texts longer than a
# first read once read twice (the texts read once, by their hashes: READ_SEEN_KEPT), to WORDS_KEPT
# characters of text: then they are forgotten, and kept again.
WORDS_KEPT = 8_000_000
READ_SEEN_KEPT = 20_000


class _TextWords:
    """A text's distinct words (``analysis.word_runs_of``, in their first places' order), their stems
    in each language, and which of them give each term."""

    __slots__ = ("distinct", "giving", "stemmed")

    def __init__(self, distinct: list[str], stemming: tuple[str, ...]):
        self.distinct = distinct
        self.stemmed: dict[tuple[str, ...], list[list[str]]] = {}
        self.giving: dict[tuple[str, ...], dict[str, list[int]]] = {}
        self.stems(stemming)

    def stems(self, stemming: tuple[str, ...]) -> list[list[str]]:
        found = self.stemmed.get(stemming)
        if found is None:
            found = self.stemmed[stemming] = [analysis.stem(self.distinct, language) for language in stemming]
        return found

    def hits(self, wanted: set[str], stemming: tuple[str, ...]) -> set[int]:
        """The places in ``distinct`` of the words giving a term of *wanted*, as the word or a stem."""
        giving = self.giving.get(stemming)
        if giving is None:
            giving = self.giving[stemming] = {}
            for terms in (self.distinct, *self.stems(stemming)):
                for index, term in enumerate(terms):
                    giving.setdefault(term, []).append(index)
        found: set[int] = set()
        for term in wanted:
            if term in giving:
                found.update(giving[term])
        return found


_kept_words: dict[str, _TextWords] = {}
_kept_words_size = 0
_read_seen: set[int] = set()


def _text_words(folded: str, stemming: tuple[str, ...]) -> _TextWords | None:
    """*folded*'s ``_TextWords`` when it is long and was read before (kept: WORDS_KEPT), else None."""
    global _kept_words_size
    if len(folded) <= FIRST_READ:
        return None
    kept = _kept_words.get(folded)
    if kept is not None:
        return kept
    seen = hash(folded)
    if seen not in _read_seen:  # (read once: most texts cut at a search's own places are)
        if len(_read_seen) >= READ_SEEN_KEPT:
            _read_seen.clear()
        _read_seen.add(seen)
        return None
    if _kept_words_size + len(folded) > WORDS_KEPT:
        _kept_words.clear()
        _kept_words_size = 0
    kept = _kept_words[folded] = _TextWords(list(dict.fromkeys(analysis.word_runs_of(folded))), stemming)
    _kept_words_size += len(folded)
    return kept


def _index(items: Sequence[str], item: str, start: int) -> int:
    """Where *item* stands in *items* from *start*, or -1."""
    try:
        return items.index(item, start)
    except ValueError:
        return -1


def _gives(token_terms: tuple[str, ...], terms: Collection[str]) -> bool:
    if any(term in terms for term in token_terms):
        return True
    # A single character of a bigram script (a prefix query) is given by the bigrams it starts.
    return any(analysis.is_one_segmented_character(term) and token_terms[0].startswith(term) for term in terms)


def snippet(
    text: str,
    marks: PreparedMarks | Collection[Sequence[Collection[str]]],
    languages: Iterable[str | None] = (None,),
    size: int = SNIPPET_CHARACTERS,
    head: Head | None = None,
    placing: Placing | None = None,
) -> tuple[str, list[tuple[int, int]]]:
    """About *size* characters of *text* around the first of *marks* (see ``marked_ranges``), and the
    ranges marked in it; the start of the text when none is there.  A cut is shown by "… ".  *head*:
    the page's ``snippet_head``, stored when it was indexed (ignored when it is not *text*'s).
    *placing*: some of *marks*, the first place of one of them placing the window instead (all but
    the query's commonest word: not "der" of "Partitionierung der Festplatte", nor "installation" of
    "grub installation" in an installation guide)."""
    shown, ranges, _ = placed_snippet(text, marks, languages, size, head, placing)
    return shown, ranges


class Placing:
    """Marks that place a snippet's window (``snippet``): the first place a text holds one of them
    (prepared when first needed)."""

    __slots__ = ("_together", "sequences")

    def __init__(self, sequences: Sequence[Sequence[Collection[str]]]):
        self.sequences = sequences
        self._together: PreparedMarks | None = None

    @property
    def together(self) -> PreparedMarks:
        if self._together is None:
            self._together = PreparedMarks(self.sequences)
        return self._together


def placed_snippet(
    text: str,
    marks: PreparedMarks | Collection[Sequence[Collection[str]]],
    languages: Iterable[str | None] = (None,),
    size: int = SNIPPET_CHARACTERS,
    head: Head | None = None,
    placing: Placing | None = None,
) -> tuple[str, list[tuple[int, int]], bool]:
    """``snippet``, and whether one of *placing* placed its window (False without them).

    The window the first mark of any places is kept when it shows one of them; else the first of
    them the text holds places it, found where it costs little: in the first read by its stored
    head, past it as ``later_snippet`` reads a page's rest (their pieces found by a search in C, only
    those places read word by word), not word by word from the start; the marks around it then, from
    the head too.  A text holding none of them: the first mark of any places it."""
    prepared, languages = _prepared(marks), tuple(languages)
    if placing is not None and placing.sequences:
        read = first_read(text)
        served = head if head is not None and _head_serves(head, read, languages) else None
        # The places of every mark's terms in the first read, read from the head once for both.
        places = served._places(prepared.patterns) if served is not None and not prepared.starts else None
        wanted = placing.together.wanted
        placing_places = None if places is None else {term: at for term, at in places.items() if term in wanted}
        found = _found(read, placing.together, languages, None, served, places=placing_places)[0]
        if found:
            # The window the first mark of any places, when it shows one of them (most titles typed:
            # the cheapest), else one at the first of them.
            ranges = _whole_characters(text, _window_ranges(text, prepared, languages, size, served, places))
            start, end = _bounds(text, ranges[0][0] if ranges else 0, size)
            if any(start <= a and b <= end for a, b in found):
                return (*_cut(text, ranges, start, end), True)
            first = min(a for a, _ in found)
            ranges = _marks_around(text, first, prepared, languages, size, served)
            return (*_cut(text, ranges, *_bounds(text, first, size)), True)
        if len(read) < len(text):
            later = later_snippet(text[len(read) :], placing.together, languages, size, shown=prepared)
            if later is not None:
                return (*later, True)
    ranges = _whole_characters(text, _window_ranges(text, prepared, languages, size, head))
    return (*_cut(text, ranges, *_bounds(text, ranges[0][0] if ranges else 0, size)), False)


def _cut(text: str, ranges: list[tuple[int, int]], start: int, end: int) -> tuple[str, list[tuple[int, int]]]:
    """``text[start:end]`` as a snippet ("… " where cut) and the *ranges* in it, moved with it."""
    prefix = ELLIPSIS + " " if start > 0 else ""
    suffix = " " + ELLIPSIS if end < len(text) else ""
    shift = len(prefix) - start
    kept = [(max(a, start) + shift, min(b, end) + shift) for a, b in ranges if a < end and b > start]
    return prefix + text[start:end] + suffix, kept


def _bounds(text: str, first: int, size: int) -> tuple[int, int]:
    """Where a snippet of about *size* characters of *text* whose first mark is at *first* starts and
    ends: BEFORE_CHARACTERS before the mark, and cut at spaces where there are some."""
    start = max(0, first - BEFORE_CHARACTERS)
    if start > 0:
        space = text.find(" ", start, first)
        start = space + 1 if space != -1 else start
    start = grapheme_start(text, start)
    end = min(len(text), start + size)
    if end < len(text):
        space = text.rfind(" ", start + size // 2, end)
        end = space if space != -1 else end
    end = grapheme_start(text, end, start)
    return start, end


# How far a cut looks back for the start of the character shown there (its letter, before its marks).
GRAPHEME_BACK = 32
_ZWJ = "\u200d"
_SPACING_MARKS = frozenset("\u0e33\u0eb3")  # Thai and Lao SARA AM: letters in Unicode, marks in a character


def grapheme_start(text: str, at: int, floor: int = 0) -> int:
    """*at*, or where the character a reader sees there starts (a user-perceived character, UAX #29's
    grapheme cluster, in short) when a cut at *at* would cut it: a letter from its marks (Thai vowel and
    tone marks, an accent written apart), an emoji from the ZWJ sequence it is in (👨‍👩‍👧) or from its
    skin tone or tags, a flag's two regional indicators, a Hangul syllable's jamo.  At most
    GRAPHEME_BACK characters back (a letter under hundreds of marks is cut), never before *floor*."""
    bound = max(floor, at - GRAPHEME_BACK)
    while at > bound and _continues(text, at):
        at -= 1
    return at


def _continues(text: str, at: int) -> bool:
    """Whether ``text[at]`` continues the character shown before it (``grapheme_start``)."""
    if not 0 < at < len(text):
        return False
    character, before = text[at], text[at - 1]
    if character == _ZWJ or before == _ZWJ or character in _SPACING_MARKS:
        return True
    code = ord(character)
    if 0x1F3FB <= code <= 0x1F3FF or 0xE0020 <= code <= 0xE007F:  # skin tones, tags (flags of regions)
        return True
    if 0x1F1E6 <= code <= 0x1F1FF:  # a regional indicator: the second of a pair
        indicators = 0
        while at - indicators > 0 and 0x1F1E6 <= ord(text[at - indicators - 1]) <= 0x1F1FF:
            indicators += 1
        return indicators % 2 == 1
    if 0x1100 <= code <= 0x11FF or 0xA960 <= code <= 0xA97F or 0xD7B0 <= code <= 0xD7FF:  # Hangul jamo
        previous = ord(before)
        if 0x1100 <= code <= 0x115F or 0xA960 <= code <= 0xA97F:  # a leading consonant, after another
            return 0x1100 <= previous <= 0x115F or 0xA960 <= previous <= 0xA97F
        # a vowel or a final, after a jamo or a syllable
        return 0x1100 <= previous <= 0x11FF or 0xA960 <= previous <= 0xA97F or 0xAC00 <= previous <= 0xD7FF
    return character >= "\u0300" and unicodedata.category(character)[0] == "M"


# The text read each side of a snippet's window for the marks in it: a phrase (or a bigram) across
# its edge is read whole, and words cut by a slice's edge are outside the window.
AROUND_CHARACTERS = 80


def _marks_around(
    text: str, first: int, prepared: PreparedMarks, languages: tuple[str | None, ...], size: int, head: Head | None
) -> list[tuple[int, int]]:
    """The marks of *text* in and around the window a snippet shows when a mark at *first* places it:
    those of the first read from the page's stored *head* (None: no head serves) and the text read on
    past it (``_read_on_from``) as far as the window, else those of a slice of the text around the window."""
    end = first + size + AROUND_CHARACTERS
    read = first_read(text)
    if head is not None:
        found = _found(read, prepared, languages, None, head)[0]
        if end <= len(read):
            return _whole_characters(text, _merged(found))
        restart = _read_on_from(text, len(read), prepared, languages)
        if restart is not None:
            stop = text.find(" ", min(end, len(text)))
            piece = text[restart:] if stop == -1 else text[restart:stop]
            found += _shifted(_found(piece, prepared, languages, None)[0], restart)
            return _whole_characters(text, _merged(found))
    begin = max(0, first - BEFORE_CHARACTERS - AROUND_CHARACTERS)
    space = text.find(" ", begin, first)
    begin = space + 1 if begin > 0 and space != -1 else begin
    stop = text.find(" ", min(end, len(text)))
    piece = text[begin:] if stop == -1 else text[begin:stop]
    found = _shifted(_found(piece, prepared, languages, None)[0], begin)
    return _whole_characters(text, _merged(found))


def _placing_of(prepared: PreparedMarks) -> Placing:
    """*prepared*'s marks as one that places a window (``later_snippet``'s piece: the place found
    there is one of them)."""
    placing = Placing(list(prepared.sequences))
    placing._together = prepared
    return placing
