"""Word splitting of the indexer (SPEC 3): pure functions, no Scrapy import.

Words come from the page body outside ``<...>``; an unclosed ``<`` ends the
page's words.  A word is a maximal run of ASCII letters, lowercased, kept when
it has at least 3 letters.  Words are ASCII ``bytes``, as the index stores them.
"""

from __future__ import annotations

import re
from collections import Counter

MIN_LENGTH = 3
_TAG = re.compile(rb"<[^>]*>")
_WORD = re.compile(rb"[a-z]{%d,}" % MIN_LENGTH)


def page_words(body: bytes) -> list[bytes]:
    """The words of *body*, in order."""
    unclosed = body.find(b"<", body.rfind(b">") + 1)
    if unclosed != -1:
        body = body[:unclosed]
    # A tag separates the words on either side of it.
    return _WORD.findall(_TAG.sub(b" ", body).lower())


def word_counts(body: bytes) -> Counter[bytes]:
    """How many times each word occurs in *body*."""
    return Counter(page_words(body))
