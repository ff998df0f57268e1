"""What a search result shows of a page: its title, its visible text, a snippet.

Pure functions over page bytes (any bytes: broken markup, NUL bytes, invalid
UTF-8), built on compiled regular expressions rather than an HTML parser, as
they run over every page when the index is written.  None of them raises.

A tag is ``<`` followed by a letter, ``/``, ``!`` or ``?``, up to the next
``>``; it separates the text on either side, as it separates the indexer's
words.  A ``<`` followed by anything else is text, as in a browser.  A tag left
unclosed at the end of the page drops the rest of the page.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator

from . import markuppass
from .cleaning import HIDDEN_ELEMENTS, NAV_START, NAVIGATION_VALUE, TAG, clean, cut_at_word
from .encodings import decode_page

# A title longer than this is cut at a word boundary and ends with " …".
MAX_TITLE_CHARACTERS = 300
# A <title> whose </title> does not start within this many characters takes
# this many: a page cannot make the title's search read the whole page.
TITLE_SCAN_CHARACTERS = 1000
ELLIPSIS = "\u2026"
# A snippet longer than this (a page of huge unbroken "words") is cut around its first highlight.
MAX_SNIPPET_CHARACTERS = 400

_TAG_START = re.compile(r"<[A-Za-z/!?]")
# The contents of these elements are not shown (cleaning.HIDDEN_ELEMENTS says why).
_HIDDEN_ELEMENTS = HIDDEN_ELEMENTS
_ELEMENT_END = r"(?=[\s/>])[^>]*>"
# A hidden element or a comment runs to its end, or to the end of the page when
# unclosed (as in a browser): a match never fails after its start, which keeps
# it linear.  Its contents are matched a run of characters at a time (not .*?),
# which is several times faster over the large scripts of real pages.
_COMMENT = r"!--(?:-?>|[^-]*(?:(?!--!?>)-[^-]*)*(?:--!?>|\Z))"
_HIDDEN_ELEMENT = rf"({_HIDDEN_ELEMENTS}){_ELEMENT_END}[^<]*(?:<(?!/\1{_ELEMENT_END})[^<]*)*(?:</\1{_ELEMENT_END}|\Z)"
_TITLE_ELEMENT = (
    rf"title{_ELEMENT_END}(?:.{{0,{TITLE_SCAN_CHARACTERS}}}?</title{_ELEMENT_END}|.{{0,{TITLE_SCAN_CHARACTERS}}})"
)
# Everything of a page that is not visible text, each match replaced by a space.  A tag whose first
# character starts none of the others (most tags: <a, </div) is taken first, without trying them
# (a sixth of the indexer's cleaning); the long s (U+017F) and the Kelvin sign fold to "s" and "k"
# in both patterns alike.
_NOT_VISIBLE = re.compile(
    rf"<(?:[A-MOPQRU-Za-mopqru-z/?][^>]*>|{_COMMENT}|{_HIDDEN_ELEMENT}|{_TITLE_ELEMENT}|[A-Za-z/!?][^>]*>)",
    re.I | re.S,
)
# The first <title> open tag is the first one outside comments and hidden elements.
_TITLE_OR_SKIPPED = re.compile(rf"<(?=[A-Za-z!])(?:{_COMMENT}|{_HIDDEN_ELEMENT}|(title){_ELEMENT_END})", re.I | re.S)
_TITLE_END = re.compile(r"</title(?=[\s/>])", re.I)
_LETTERS = re.compile(r"[A-Za-z]+")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_ASCII_LETTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


# Navigation is no page's text (a <nav> element, or any element whose role is "navigation": ARIA's
# landmark, which Sphinx's sidebars and breadcrumbs and MediaWiki's portlets carry): the same menus,
# tables of contents and language lists on every page of a site made every Python docs snippet start
# "Table of Contents ..." and matched "Deutsch" on every Wikipedia page.  Its links stay links
# (``pagefields.anchors`` reads the whole page).  A page is read as its markup first: what _NOT_VISIBLE
# drops whole (comments, hidden elements, titles) dropped, its tags kept, found where _NOT_VISIBLE finds
# them (never inside a tag, which runs to its first ">"); then each navigation element runs from its
# start tag to the end tag that closes it (the start and end tags of its name counted, those inside
# another tag's attributes not); one never closed is text, and so is what follows it.  A role is
# compared as browsers compare it, ASCII case-insensitively (role="NaviGation" is navigation in Chrome,
# Firefox and Safari: w3c/aria#2548), its tokens split on ASCII whitespace.  Linear, whatever the page:
# only a page holding "<nav", the word "navigation" (as typed, or in capitals, a plain search), or an
# "=" right before it in any case (cleaning.NAVIGATION_VALUE: a value that may start with the role, a search
# twice as slow; a case-insensitive search of the word reads a page ten times slower) is looked at for
# navigation (``markuppass.navigation_spans``); each stretch of the text is searched back once; at most
# cleaning.NAVIGATION_NAMES names a page are looked for.
_NAVIGATION_WORDS = ("avigation", "AVIGATION")
_FOLDING_TO_ASCII = ("\u0130", "\u0131", "\u017f", "\u212a")
# What _NOT_VISIBLE drops whole, from where it starts (markuppass.dropped_spans finds those).
_DROPPED_WHOLE = re.compile(rf"<(?:{_COMMENT}|{_HIDDEN_ELEMENT}|{_TITLE_ELEMENT})", re.I | re.S)


def _markup(text: str, folding: bool) -> str:
    """*text* without what _NOT_VISIBLE drops whole, each replaced by a space, its tags kept: the same
    text once cleaning.TAG_FOLDING drops them as _NOT_VISIBLE leaves (*folding*: the text holds _FOLDING_TO_ASCII)."""
    # (typed where compiled: markuppass.pyx, the search for where each may start)
    spans = markuppass.dropped_spans(text, folding, _DROPPED_WHOLE.match)
    return _without_spans(text, spans)


def _without_spans(text: str, spans: list[tuple[int, int]]) -> str:
    """*text* without its *spans* (in order, apart), each replaced by a space; *text* itself for none."""
    if not spans:
        return text
    pieces, at = [], 0
    for start, end in spans:
        pieces.append(text[at:start])
        at = end
    pieces.append(text[at:])
    return " ".join(pieces)


def _may_hold_navigation(markup: str) -> bool:
    return (
        any(word in markup for word in _NAVIGATION_WORDS)
        or NAV_START.search(markup) is not None
        or NAVIGATION_VALUE.search(markup) is not None
    )


def page_title(body: bytes, http_charset: str | None = None) -> str:
    """The text of the page's first ``<title>``, or "" when it has none.

    Tags inside it removed, entities decoded, whitespace collapsed; at most
    ``MAX_TITLE_CHARACTERS``, a longer title cut at a word and ending " …".
    The page is decoded as a browser decodes it (``encodings``; *http_charset*:
    the charset of the HTTP header it came with).
    """
    return title_of(_without_unclosed_tag(decode_page(body, http_charset)))


def title_of(text: str) -> str:
    """``page_title`` of a page already decoded, with any unclosed tag at its end cut off."""
    start = _title_start(text)
    if start is None:
        return ""
    end_tag = _TITLE_END.search(text, start, start + TITLE_SCAN_CHARACTERS + len("</title") + 1)
    end = end_tag.start() if end_tag is not None else start + TITLE_SCAN_CHARACTERS
    title = clean(TAG.sub(" ", _without_unclosed_tag(text[start:end])))
    if len(title) <= MAX_TITLE_CHARACTERS:
        return title
    return cut_at_word(title, MAX_TITLE_CHARACTERS - 2) + " " + ELLIPSIS


def _title_start(text: str) -> int | None:
    """Where the text of the page's first ``<title>`` starts (past its tag), None when it has none."""
    pos = 0
    while True:
        found = _TITLE_OR_SKIPPED.search(text, pos)
        if found is None:
            return None
        if found.group(2) is not None:
            return found.end()
        pos = found.end()


def _without_long_title(text: str) -> str:
    """*text* without the text of its first ``<title>`` when its ``</title>`` is past the
    TITLE_SCAN_CHARACTERS the title's pattern looks for it in: all of it is the title's (a title of
    1,500 characters showed its last 500 as the page's text; one of a megabyte made the page's own
    words past the body's bounds).  An unclosed title still hides only those characters."""
    start = _title_start(text)
    if start is None or _TITLE_END.search(text, start, start + TITLE_SCAN_CHARACTERS + len("</title") + 1):
        return text
    end = _TITLE_END.search(text, start + TITLE_SCAN_CHARACTERS)
    return text if end is None else text[:start] + text[end.start() :]


def visible_text(body: bytes, limit: int = 20_000, http_charset: str | None = None) -> str:
    """The text a reader sees on the page, at most *limit* characters.

    Everything outside tags except comments, the title, the contents of
    ``<script>``, ``<style>``, ``<template>`` and ``<noscript>``, and
    navigation (``shown_text``; unless the page is all navigation);
    entities decoded, whitespace collapsed to single spaces, cut at a word
    boundary.  Text in the head outside those elements shows, as a browser
    moves it into the body.
    """
    return visible_text_of(_without_unclosed_tag(decode_page(body, http_charset)), limit)


def visible_text_of(text: str, limit: int = 20_000) -> str:
    """``visible_text`` of a page already decoded, with any unclosed tag at its end cut off."""
    return shown_text(text, limit)[1]


def shown_text(text: str, limit: int) -> tuple[str, str]:
    """The markup of *text* (a page decoded, no unclosed tag at its end) whose text is shown: its tags
    and text, nothing _NOT_VISIBLE drops whole left in it, nor navigation (whole again when that shows
    nothing: a page that is all navigation, a site map); and that text to *limit* (``visible_text``)."""
    folding = any(letter in text for letter in _FOLDING_TO_ASCII)
    markup = _markup(_without_long_title(text), folding)
    # (typed where compiled: markuppass.pyx, four fifths of the navigation's instructions)
    content = _without_spans(markup, markuppass.navigation_spans(markup)) if _may_hold_navigation(markup) else markup
    # (typed where compiled: markuppass.pyx, a third of this function's instructions)
    visible = markuppass.cleaned_text(content, limit, folding)
    if not visible and content is not markup:
        return markup, markuppass.cleaned_text(markup, limit, folding)
    return content, visible


def snippet(text: str, words: Collection[str], size: int = 30) -> tuple[str, list[tuple[int, int]]]:
    """About *size* terms of *text* around the first occurrence of any of *words*.

    Returns the snippet and the ``[start, end)`` ranges in it of every
    occurrence of any of *words*.  A word occurs where a maximal run of ASCII
    letters equals it, ignoring case (the indexer's words): ``Cat's`` holds
    ``cat``, ``concatenate`` does not.  Terms are separated by whitespace.  The
    snippet starts ``size // 3`` terms before the term of the first occurrence
    (10 of 30), shifted to stay within the text, or is the first *size* terms
    when no word occurs; a cut is marked by "… " at the start, " …" at the end.
    """
    if size < 1:
        return "", []
    occurrence = _occurrence_pattern(words)
    start = _first_occurrence(text, occurrence.pattern_words) if occurrence is not None else 0
    # Only the terms the window can use, whatever the length of the text.
    before = text[:start].rsplit(maxsplit=size + 1)
    more_before = len(before) > size + 1
    if more_before:
        del before[0]  # the rest of the text, not one term
    after = text[start:].split(maxsplit=size)
    more_after = len(after) > size
    if more_after:
        del after[-1]
    if not after:
        return "", []
    if start > 0 and not text[start - 1].isspace():
        after[0] = before.pop() + after[0]  # the occurrence is inside a term: "(cat" or "l'ami"
    taken_before = min(len(before), max(size // 3, size - len(after)))
    taken_after = min(len(after), size - taken_before)
    prefix = ELLIPSIS + " " if more_before or taken_before < len(before) else ""
    suffix = " " + ELLIPSIS if more_after or taken_after < len(after) else ""
    shown = prefix + " ".join(before[len(before) - taken_before :] + after[:taken_after]) + suffix
    if occurrence is None:
        return _shortened(shown, [])
    lowered = _ascii_lowered(shown)
    return _shortened(
        shown, [found.span() for found in occurrence.finditer(lowered, len(prefix), len(shown) - len(suffix))]
    )


def _shortened(shown: str, ranges: list[tuple[int, int]]) -> tuple[str, list[tuple[int, int]]]:
    """*shown* cut to about MAX_SNIPPET_CHARACTERS around its first range, which it keeps, and the ranges kept."""
    if len(shown) <= MAX_SNIPPET_CHARACTERS:
        return shown, ranges
    first_start, first_end = ranges[0] if ranges else (0, 0)
    begin = max(0, first_start - MAX_SNIPPET_CHARACTERS // 4)
    end = max(begin + MAX_SNIPPET_CHARACTERS, first_end)
    prefix = ELLIPSIS + " " if begin > 0 else ""
    suffix = " " + ELLIPSIS if end < len(shown) else ""
    moved = len(prefix) - begin
    kept = [(start + moved, stop + moved) for start, stop in ranges if begin <= start and stop <= end]
    return prefix + shown[begin:end] + suffix, kept


def _ascii_lowered(text: str) -> str:
    """*text* with its ASCII letters lowercased, every other character as it was (same length)."""
    # str.lower is fast, and only two characters besides A-Z lowercase to an ASCII letter or
    # to more than one character: the Kelvin sign and the dotted capital I.
    if "\u212a" in text or "\u0130" in text:
        return text.translate(_ASCII_LOWER)
    return text.lower()


class _Occurrences:
    """A maximal letter run equal to one of some words, in ASCII-lowercased text."""

    def __init__(self, words: set[str]):
        self.pattern_words = words
        # Only ASCII letters match each other ignoring case (not "K" and the Kelvin sign).
        self.pattern = re.compile(rf"(?<![a-zA-Z])(?:{'|'.join(sorted(words))})(?![a-zA-Z])")

    def finditer(self, lowered: str, start: int, end: int) -> Iterator[re.Match[str]]:
        return self.pattern.finditer(lowered, start, end)


def _occurrence_pattern(words: Collection[str]) -> _Occurrences | None:
    """What matches a maximal letter run equal to one of *words*, or None when nothing can."""
    # A word that is not all letters never equals a letter run.
    letter_words = {word.lower() for word in words if _LETTERS.fullmatch(word)}
    return _Occurrences(letter_words) if letter_words else None


def _first_occurrence(text: str, words: set[str]) -> int:
    """Where the first of *words* occurs in *text* as a maximal letter run, ignoring case; else 0.

    str.find is far faster than a case-insensitive pattern over a long text:
    the usual spellings (``word``, ``Word``, ``WORD``) are looked for as they
    are, and only when none occurs is the lowercased text searched (``wOrD``).
    """
    first = _first_run(text, {spelling for word in words for spelling in (word, word.capitalize(), word.upper())})
    if first is None:
        first = _first_run(_ascii_lowered(text), words)
    return first or 0


def _first_run(text: str, spellings: set[str]) -> int | None:
    """The first position of one of *spellings* in *text* that is a maximal letter run, or None.

    str.find says fast whether and from where to look; the pattern then checks
    the boundaries in one pass (a loop over every find would be quadratic on a
    hostile page: a query of many "a...a" words over a page of "aaaa...")."""
    found = [position for position in map(text.find, spellings) if position != -1]
    if not found:
        return None
    pattern = re.compile(rf"(?<![A-Za-z])(?:{'|'.join(sorted(spellings))})(?![A-Za-z])")
    match = pattern.search(text, min(found))
    return match.start() if match else None


def _without_unclosed_tag(text: str) -> str:
    # After this every tag start has a ">" after it, which keeps the patterns
    # that scan to a ">" linear.
    unclosed = _TAG_START.search(text, text.rfind(">") + 1)
    return text if unclosed is None else text[: unclosed.start()]
