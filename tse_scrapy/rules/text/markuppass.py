"""A page's markup read as the indexer reads it: the Python path of ``markuppass.pyx``.

``make`` compiles ``markuppass.pyx`` (typed Cython: one pass over the characters, no Python object
a character) in place of this module (``tse_scrapy/compiled.py``); without a C compiler, or with
``TSE_PURE_PYTHON=1``, this module is loaded.  Both give the same: tests/test_markuppass.py compares
them on a table and on hostile markup of every script.

- ``cleaned_text``: the text of markup, its tags dropped, cleaned and cut (``pagetext``'s visible text).
- ``links``: the links of a page's text with their anchor text (``pagefields.anchors``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from .cleaning import TAG, TAG_FOLDING, cleaned

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
