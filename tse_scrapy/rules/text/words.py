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
# Every byte but an ASCII letter to a space, the capitals to lower case: split, the letter runs.
_LETTERS_LOWERED = bytes(byte + 32 if 65 <= byte <= 90 else byte if 97 <= byte <= 122 else 32 for byte in range(256))


def page_words(body: bytes) -> list[bytes]:
    """The words of *body*, in order."""
    return [run for run in _letter_runs(body) if len(run) >= MIN_LENGTH]


def word_counts(body: bytes) -> Counter[bytes]:
    """How many times each word occurs in *body* (``page_words``, counted), in the order they first occur."""
    # Every letter run counted, in C, then the few distinct ones too short dropped: a fifth faster
    # than a regular expression finding only the long ones (bench/RESULTS.md, issue 27).
    counts = Counter(_letter_runs(body))
    for short in [run for run in counts if len(run) < MIN_LENGTH]:
        del counts[short]
    return counts


def _letter_runs(body: bytes) -> list[bytes]:
    """The runs of ASCII letters of *body* outside tags, lowercased, short ones too; an unclosed
    ``<`` and what follows it is left out (it ends the page's words)."""
    unclosed = body.find(b"<", body.rfind(b">") + 1)
    if unclosed != -1:
        body = body[:unclosed]
    # A tag separates the words on either side of it.
    return _TAG.sub(b" ", body).translate(_LETTERS_LOWERED).split()
