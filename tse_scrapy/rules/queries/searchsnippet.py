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
import zlib
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass

from ..text import analysis

SNIPPET_CHARACTERS = 240
BEFORE_CHARACTERS = 60  # shown before the first mark
ELLIPSIS = "\u2026"
# A snippet's marks are looked for in the text's first FIRST_READ characters, then in READ_GROWTH
# times as many, until the window after the first mark is read (or the text is).
FIRST_READ = 1_000
READ_GROWTH = 5
HEAD_BYTES = 200_000  # a stored head larger than this once uncompressed is not read


@dataclass(frozen=True)
class Head:
    """What a snippet works out first of a page's text, whatever the query, worked out when the page is
    indexed (as Lucene stores term vectors for its highlighter): the text's first read (see FIRST_READ)
    folded, its distinct words and their stems in the page's language; and a digest of that first read,
    so that a head is used only for the text it was made from, by the same analysis
    (``analysis.ANALYSIS_VERSION``)."""

    digest: str
    language: str
    folded: str
    distinct: tuple[str, ...]
    stems: tuple[str, ...]  # empty where the language has no stemmer

    def packed(self) -> bytes:
        fields = [self.digest, self.language, " ".join(self.distinct), " ".join(self.stems), self.folded]
        return zlib.compress("\x00".join(fields).encode("utf-8", "surrogatepass"), 1)


def snippet_head(text: str, language: str | None) -> Head | None:
    """The ``Head`` of *text* (a page's text as results show it) written in *language*; None where the
    snippet reads it otherwise (text whose folding moves characters, text in a bigram script)."""
    first = first_read(text)
    folded = analysis.aligned_fold(first)
    if folded is None or analysis.has_bigram_script(folded):
        return None
    distinct = list(dict.fromkeys(analysis.word_runs_of(folded)))
    stems = analysis.stem(distinct, language) if analysis.stemmer(language) else []
    return Head(_digest(first), language or "", folded, tuple(distinct), tuple(stems))


def unpacked_head(blob: object) -> Head | None:
    """The ``Head`` that ``Head.packed`` gave *blob*; None for anything it did not give (a damaged or
    tampered file: too large, not bytes, fields missing, an empty word, which a search would find at
    the same place again and again)."""
    try:
        decompressor = zlib.decompressobj()
        data = decompressor.decompress(blob, HEAD_BYTES)  # type: ignore[arg-type]
        if decompressor.unconsumed_tail or not decompressor.eof:
            return None
        digest, language, distinct, stems, folded = data.decode("utf-8", "surrogatepass").split("\x00", 4)
    except (zlib.error, UnicodeDecodeError, ValueError, TypeError):
        return None
    words = tuple(distinct.split(" ")) if distinct else ()
    stemmed = tuple(stems.split(" ")) if stems else ()
    # (A stem may be empty: Greek's of "οταν".)
    if (stemmed and len(stemmed) != len(words)) or "" in words:
        return None
    return Head(digest, language, folded, words, stemmed)


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
    marks: Collection[Sequence[Collection[str]]],
    languages: Iterable[str | None],
    window: int | None = None,
) -> list[tuple[int, int]]:
    """The ``[start, end)`` ranges of *text* where one of *marks* stands: a sequence of consecutive
    words (a phrase; a word of several bigrams), each giving one of the terms of its position.  A
    single character of a bigram script marks the bigrams it starts.  With *window*, the text is
    read only to *window* characters past the first mark (what a snippet can show)."""
    found, _ = _found(text, marks, tuple(languages), window)
    return _merged(found)


def _found(
    text: str,
    marks: Collection[Sequence[Collection[str]]],
    languages: tuple[str | None, ...],
    window: int | None,
    head: Head | None = None,
) -> tuple[list[tuple[int, int]], bool]:
    """The marks of *text* in the order their last words are read, and whether the text read was
    enough: it reaches *window* characters past the first mark (more would change nothing).  *head*:
    *text*'s own, worked out already."""
    wanted = {term for sequence in marks for terms in sequence for term in terms}
    # A single character of a bigram script (a prefix query) is given by the bigrams it starts.
    starts = {term for term in wanted if len(term) == 1 and analysis.is_segmented(term)}
    words: Iterable[tuple[analysis.Token, bool]]
    if head is not None:
        words = _folded_words(head.folded, languages, wanted, head)
    elif (folded := analysis.aligned_fold(text)) is not None and not analysis.has_bigram_script(folded):
        # Folding kept every character in its place (most text): the folded text's words are the
        # analyzer's, where they stand, and each distinct word is stemmed once, a language at a time.
        words = _folded_words(folded, languages, wanted)
    else:
        words = analysis.tokens_giving(text, languages, wanted, starts)
    longest = max((len(sequence) for sequence in marks), default=0)
    found: list[tuple[int, int]] = []
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
                found.append((recent[len(recent) - len(sequence)].start, token.end))
    return found, bool(found) and window is not None and len(text) > found[0][0] + window


def _merged(found: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(found):
        if merged and merged[-1][1] >= start:  # overlapping or touching (bigrams): one range
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _window_ranges(
    text: str,
    marks: Collection[Sequence[Collection[str]]],
    languages: tuple[str | None, ...],
    window: int,
    head: Head | None = None,
) -> list[tuple[int, int]]:
    """``marked_ranges(text, marks, languages, window)``, read from longer and longer beginnings of
    *text*: what matched is most often near a page's start, and the words, their stems and the
    marks of a beginning cut at a space are those of the whole text up to there.  *head*: the
    ``snippet_head`` stored for the page, used when it is this text's in these *languages*."""
    first = first_read(text)
    if head is not None and not _head_serves(head, first, languages):
        head = None
    length = FIRST_READ
    while length < len(text):
        cut = text.find(" ", length)
        if cut == -1:
            break
        found, stopped = _found(text[:cut], marks, languages, window, head if length == FIRST_READ else None)
        if stopped:
            return _merged(found)
        length *= READ_GROWTH
    return _merged(_found(text, marks, languages, window, head if len(first) == len(text) else None)[0])


def _head_serves(head: Head, first: str, languages: tuple[str | None, ...]) -> bool:
    """Whether *head* is that of the first read *first* for a snippet in *languages*."""
    if analysis.stemming_languages(languages) != ((head.language,) if head.stems else ()):
        return False
    return len(head.folded) == len(first) and head.digest == _digest(first)


def _folded_words(
    folded: str, languages: tuple[str | None, ...], wanted: set[str], head: Head | None = None
) -> Iterator[tuple[analysis.Token, bool]]:
    """The words of *folded* (normalized and folded text) that give a term of *wanted* (unstemmed or
    stemmed in one of *languages*) with their terms, each with whether it follows the one before
    with no other word between.  *head*: *folded*'s, with its distinct words stemmed in *languages*."""
    if head is not None:
        distinct, stemmed = head.distinct, [head.stems] if head.stems else []
    else:
        distinct = list(dict.fromkeys(analysis.word_runs_of(folded)))
        # Each distinct word stemmed once a language (a language without a stemmer leaves it as it
        # is); only the words giving a wanted term, as the word or a stem, are kept with their terms.
        stemmed = [analysis.stem(distinct, language) for language in analysis.stemming_languages(languages)]
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


def _index(items: Sequence[str], item: str, start: int) -> int:
    """Where *item* stands in *items* from *start*, or -1."""
    try:
        return items.index(item, start)
    except ValueError:
        return -1


def _gives(token_terms: tuple[str, ...], terms: Collection[str]) -> bool:
    if any(term in terms for term in token_terms):
        return True
    # A single character of a bigram script (a prefix query) marks the bigrams it starts.
    return any(len(term) == 1 and analysis.is_segmented(term) and token_terms[0].startswith(term) for term in terms)


def snippet(
    text: str,
    marks: Collection[Sequence[Collection[str]]],
    languages: Iterable[str | None] = (None,),
    size: int = SNIPPET_CHARACTERS,
    head: Head | None = None,
) -> tuple[str, list[tuple[int, int]]]:
    """About *size* characters of *text* around the first of *marks* (see ``marked_ranges``), and the
    ranges marked in it; the start of the text when none is there.  A cut is shown by "… ".  *head*:
    the page's ``snippet_head``, stored when it was indexed (ignored when it is not *text*'s)."""
    ranges = _window_ranges(text, marks, tuple(languages), size, head)
    first = ranges[0][0] if ranges else 0
    start = max(0, first - BEFORE_CHARACTERS)
    if start > 0:
        space = text.find(" ", start, first)
        start = space + 1 if space != -1 else start
    end = min(len(text), start + size)
    if end < len(text):
        space = text.rfind(" ", start + size // 2, end)
        end = space if space != -1 else end
    prefix = ELLIPSIS + " " if start > 0 else ""
    suffix = " " + ELLIPSIS if end < len(text) else ""
    shift = len(prefix) - start
    kept = [(max(a, start) + shift, min(b, end) + shift) for a, b in ranges if a < end and b > start]
    return prefix + text[start:end] + suffix, kept
