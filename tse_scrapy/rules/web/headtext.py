"""Where a page's head holds text, not tags: comments and the contents of ``<script>``, ``<style>``,
``<template>``, ``<noscript>`` and ``<title>``, as HTML reads them.  A ``<link rel="canonical">`` or
a ``<meta name="robots">`` written there (a commented-out directive, a string of a script) is no tag.
Pure functions over bytes, no Scrapy import.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Collection

# The elements whose contents are text in a head, by their opening (lowercased); a comment always is.
TEXT_ELEMENTS = ("script", "style", "template", "noscript", "title")
_COMMENT = (b"<!--", b"-->")


class HiddenSpans:
    """The [start, end) spans of *lowered* (a lowercased head) inside comments and the contents of
    *elements* (``TEXT_ELEMENTS`` or some of them), found from the start only as far as they are
    asked about; one left open runs to the end."""

    def __init__(self, lowered: bytes, elements: Collection[str] = TEXT_ELEMENTS):
        self._lowered = lowered
        pairs = [_COMMENT, *((f"<{name}".encode(), f"</{name}".encode()) for name in elements)]
        self._opening = re.compile(b"|".join(re.escape(opening) for opening, _ in pairs))
        self._closing = dict(pairs)
        self._spans: list[tuple[int, int]] = []
        self._starts: list[int] = []  # the spans' starts, for bisect
        self._position = 0  # where the search for the next span goes on; past the end: all found

    def covers(self, position: int) -> bool:
        while self._position <= position and self._find_next():
            pass
        # The spans are in order and apart: the last one starting at or before *position* decides.
        index = bisect.bisect_right(self._starts, position) - 1
        return index >= 0 and position < self._spans[index][1]

    def _find_next(self) -> bool:
        """Find the next span; False when there is none."""
        lowered = self._lowered
        while True:
            opening = self._opening.search(lowered, self._position)
            if opening is None:
                self._position = len(lowered) + 1
                return False
            start, after = opening.start(), opening.end()
            name = opening.group()
            if name != b"<!--" and lowered[after : after + 1].isalnum():
                self._position = start + 1  # "<scripts", "<titles": another element's name
                continue
            if name == b"<!--":
                end = _comment_end(lowered, after)
            else:
                end = lowered.find(self._closing[name], after)
                close = lowered.find(b">", end) if end >= 0 else -1
                end = len(lowered) if close < 0 else close + 1
            self._spans.append((start, end))
            self._starts.append(start)
            self._position = end if end > start else start + 1
            return True


def _comment_end(lowered: bytes, after: int) -> int:
    """Where a comment whose "<!--" ends at *after* ends, as HTML reads it: "<!-->" and "<!--->" are
    empty ones, "-->" or "--!>" close one; else it runs to the end."""
    if lowered.startswith(b">", after):
        return after + 1
    if lowered.startswith(b"->", after):
        return after + 2
    # One search for either close, which stops at the comment's end: two finds, each to the text's end
    # when a close is missing ("--!>" nearly always), made 6,500 comments in a 64 KB head quadratic (0.14 s).
    found = _COMMENT_CLOSE.search(lowered, after)
    return len(lowered) if found is None else found.end()


_COMMENT_CLOSE = re.compile(rb"--!?>")
