"""Snippets for ``rank=relevance`` results: a window of a page's text around what matched, marked,
in any script.

A word is marked when one of the terms it gives (``analysis.tokens``: unstemmed
or stemmed, accents folded) is one the query matched, so stems, accent-free
and corrected words are marked where they stand in the page's own spelling.
Windows are counted in characters, not in space-separated words, since
Chinese, Japanese and Thai put no spaces between words.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from . import analysis

SNIPPET_CHARACTERS = 240
BEFORE_CHARACTERS = 60  # shown before the first mark
ELLIPSIS = "\u2026"


def marked_ranges(text: str, terms: Collection[str], languages: Iterable[str | None]) -> list[tuple[int, int]]:
    """The ``[start, end)`` ranges of the words of *text* that give one of *terms*."""
    prefixes = tuple(term for term in terms if len(term) == 1 and analysis.is_segmented(term))
    found = []
    for token in analysis.tokens(text, languages):
        if any(term in terms for term in token.terms) or (prefixes and token.terms[0].startswith(prefixes)):
            if found and found[-1][1] > token.start:  # overlapping bigrams: one range
                found[-1] = (found[-1][0], token.end)
            else:
                found.append((token.start, token.end))
    return found


def snippet(
    text: str, terms: Collection[str], languages: Iterable[str | None] = (None,), size: int = SNIPPET_CHARACTERS
) -> tuple[str, list[tuple[int, int]]]:
    """About *size* characters of *text* around the first word giving one of *terms*, and the ranges of
    the marked words in it; the start of the text when none does.  A cut is shown by "… "."""
    ranges = marked_ranges(text, terms, languages)
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
