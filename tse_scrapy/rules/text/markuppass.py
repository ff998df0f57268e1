"""A page's markup read as the indexer reads it: the Python path of ``markuppass.pyx``.

``make`` compiles ``markuppass.pyx`` (typed Cython: one pass over the characters, no Python object
a character) in place of this module (``tse_scrapy/compiled.py``); without a C compiler, or with
``TSE_PURE_PYTHON=1``, this module is loaded.  Both give the same: tests/test_markuppass.py compares
them on a table and on hostile markup of every script.

- ``cleaned_text``: the text of markup, its tags dropped, cleaned and cut (``pagetext``'s visible text).
- ``links``: the links of a page's text with their anchor text (``pagefields.anchors``).
- ``dropped_spans``: where what a page shows nothing of starts and ends (``pagetext._markup``).
- ``navigation_spans``: where a page's navigation elements are (``pagetext.shown_text`` drops them).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator

from .cleaning import (
    DROPPED_START,
    DROPPED_START_FOLDING,
    NAV_START,
    NAVIGATION_NAMES,
    NAVIGATION_VALUE,
    TAG,
    TAG_FOLDING,
    cleaned,
    navigation_role_tag,
    tag_open_at,
)

# A link is its start tag and what is before its end tag, when that end tag starts within
# ELEMENT_CHARACTERS of the start tag's end (pagefields says why it is read so).
ELEMENT_CHARACTERS = 2000
_ANCHOR_START = re.compile(
    r"<a(?=[\s>])(?=([^<>]*?\shref\s*=))\1\s*"
    r"(?:\"([^\"<]*)\"[^<>]*|'([^'<]*)'[^<>]*|([^\s<>]+)(?:\s[^<>]*)?)>",
    re.I,
)
_ANCHOR_END = re.compile(r"</a\s*>", re.I)


def cleaned_text(markup: str, limit: int, folding: bool) -> str:
    """The text of *markup*: each tag (``cleaning.TAG``, ``TAG_FOLDING`` where *folding*) a space,
    entities decoded, whitespace and control characters collapsed to single spaces, stripped; at most
    *limit* characters, cut at a word (``cleaning.cleaned``)."""
    tags = TAG_FOLDING if folding else TAG
    return cleaned(tags.sub(" ", markup), limit)


def links(text: str) -> Iterator[tuple[str, str]]:
    """Each link of *text* (a page decoded): its href's value as written ("" for none) and what is
    between its start tag and its end tag, in order; lazy, as ``anchors`` stops at MAX_LINKS targets.
    A start tag's first ``href=`` is its link's (never one after it)."""
    search_start, search_end = _ANCHOR_START.search, _ANCHOR_END.search
    end_start = end_stop = -1  # the next end tag found (its span), -1 before the first look; None: none left
    at = 0
    while (start := search_start(text, at)) is not None:
        tag_end = start.end()
        if end_start is not None and end_start < tag_end:
            end = search_end(text, tag_end)
            end_start, end_stop = (None, -1) if end is None else end.span()
        if end_start is None or end_start - tag_end > ELEMENT_CHARACTERS:
            at = start.start() + 1
            continue
        yield start.group(2) or start.group(3) or start.group(4) or "", text[tag_end:end_start]
        at = end_stop


def dropped_spans(
    text: str, folding: bool, match_whole: Callable[[str, int], re.Match[str] | None]
) -> list[tuple[int, int]]:
    """The [start, end) spans, in order, apart, of what *match_whole* (``pagetext._DROPPED_WHOLE.match``:
    a comment, a hidden element, a title) matches in *text* where ``cleaning.DROPPED_START`` (its
    letters folding to ASCII where *folding*) finds one may start outside a tag (a "<!--" in an
    attribute's value is the tag's)."""
    spans: list[tuple[int, int]] = []
    pos = 0
    starts = DROPPED_START_FOLDING if folding else DROPPED_START
    while (candidate := starts.search(text, pos)) is not None:
        start = candidate.start()
        if tag_open_at(text, start, pos):
            pos = text.find(">", start) + 1
            if pos == 0:
                break
            continue
        found = match_whole(text, start)
        if found is None:
            pos = start + 1
            continue
        spans.append(found.span())
        pos = found.end()
    return spans


def navigation_spans(markup: str) -> list[tuple[int, int]]:
    """The [start, end) spans of the navigation elements of *markup* (``pagetext._markup``), in order,
    apart: each from its start tag past the end tag that closes it (pagetext says what is navigation).
    A start inside the last one is that one's; at most NAVIGATION_NAMES names are looked for; the first
    one never closed ends the list (it and what follows are text)."""
    spans: list[tuple[int, int]] = []
    names: set[str] = set()
    for start, name in _navigation_starts(markup):
        if spans and start < spans[-1][1]:  # within the last one
            continue
        if name not in names and len(names) == NAVIGATION_NAMES:
            continue
        names.add(name)
        end = _element_end(markup, start, name)
        if end is None:  # never closed: it and what follows stay text (nor is a later one looked for)
            break
        spans.append((start, end))
    return spans


def _navigation_starts(markup: str) -> list[tuple[int, str]]:
    """Where each navigation element of *markup* starts, and its name (lowercased), in order: start tags
    only (a "<nav" inside another tag is that tag's)."""
    starts = set()
    floor = 0
    for found in NAV_START.finditer(markup):
        if tag_open_at(markup, found.start(), floor) is None:
            starts.add((found.start(), "nav"))
        floor = found.start()
    floor = 0  # where no tag is open
    value = NAVIGATION_VALUE.search(markup)
    while value is not None:
        at = value.start()
        opened = tag_open_at(markup, at, floor)
        if opened is None:  # in the text: the next one may be in the very next tag
            floor = at
            value = NAVIGATION_VALUE.search(markup, value.end())
            continue
        end = markup.find(">", at)  # the end of the tag it is in
        if end == -1:
            break
        name = navigation_role_tag(markup, opened.start(), end)
        if name is not None:
            starts.add((opened.start(), name))
        floor = end + 1
        value = NAVIGATION_VALUE.search(markup, floor)
    return sorted(starts)


def _element_end(markup: str, start: int, name: str) -> int | None:
    """Where the element of *name* whose start tag is at *start* ends (past its end tag), None when it
    is never closed.  Its name's tags within another tag (an attribute's "<div>") do not count."""
    depth = 0
    floor = start
    for tag in _tags_named(name).finditer(markup, start):
        at, floor_before = tag.start(), floor
        floor = at
        if at != start and tag_open_at(markup, at, floor_before):
            continue
        depth += -1 if tag.group(1) else 1
        if depth == 0:
            return markup.find(">", tag.end()) + 1  # (every tag is closed: see pagetext._without_unclosed_tag)
    return None


@functools.lru_cache(maxsize=32)
def _tags_named(name: str) -> re.Pattern[str]:
    """The start and end tags of *name* (group 1: "/" for an end tag)."""
    return re.compile(rf"<(/?){re.escape(name)}(?=[\s/>])", re.I)
