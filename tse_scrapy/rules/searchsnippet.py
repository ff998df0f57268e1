"""Snippets for ``rank=relevance`` results: a window of a page's text around what matched, marked,
in any script.

A word is marked when one of the terms it gives (``analysis.tokens``: unstemmed
or stemmed, accents folded) is one the query matched, so stems, accent-free
and corrected words are marked where they stand in the page's own spelling.
Windows are counted in characters, not in space-separated words, since
Chinese, Japanese and Thai put no spaces between words.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence

from . import analysis

SNIPPET_CHARACTERS = 240
BEFORE_CHARACTERS = 60  # shown before the first mark
ELLIPSIS = "\u2026"


def marked_ranges(
    text: str, marks: Collection[Sequence[Collection[str]]], languages: Iterable[str | None]
) -> list[tuple[int, int]]:
    """The ``[start, end)`` ranges of *text* where one of *marks* stands: a sequence of consecutive
    words (a phrase; a word of several bigrams), each giving one of the terms of its position.  A
    single character of a bigram script marks the bigrams it starts."""
    tokens = list(analysis.tokens(text, languages))
    found: list[tuple[int, int]] = []
    for index in range(len(tokens)):
        for sequence in marks:
            if index + len(sequence) <= len(tokens) and all(
                _gives(tokens[index + offset].terms, terms) for offset, terms in enumerate(sequence)
            ):
                start, end = tokens[index].start, tokens[index + len(sequence) - 1].end
                if found and found[-1][1] >= start:  # overlapping or touching (bigrams): one range
                    found[-1] = (found[-1][0], max(end, found[-1][1]))
                else:
                    found.append((start, end))
    return found


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
) -> tuple[str, list[tuple[int, int]]]:
    """About *size* characters of *text* around the first of *marks* (see ``marked_ranges``), and the
    ranges marked in it; the start of the text when none is there.  A cut is shown by "… "."""
    ranges = marked_ranges(text, marks, languages)
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
