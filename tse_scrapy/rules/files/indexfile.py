"""The index file's text format (SPEC 3): ``word docID count [docID count]...`` a line.

It is written sorted (words, then docIDs ascending) so two runs diff clean;
it is read back strictly, naming the file and line of the first fault.
"""

from __future__ import annotations

import re
from typing import TypeAlias
from urllib.parse import quote

from .outputfile import OutputKind
from .pagedir import DOCID_DIGITS

Postings: TypeAlias = dict[int, int]  # docID -> count
Index: TypeAlias = dict[bytes, Postings]  # word (lowercase ASCII bytes) -> its postings

_WORD = re.compile(rb"[a-z]+")
_INT = re.compile(rb"[1-9][0-9]*")
# A docID or count has at most as many digits as a page file's name may (18): a longer one is no index's,
# and Python's int() refuses one past 4,300 digits, SQLite one past 64 bits, a float one past 308.
MAX_DIGITS = DOCID_DIGITS


class IndexFileError(ValueError):
    """A malformed index file: the message names the file and the line."""


def format_index(index: Index) -> bytes:
    """The text form of *index*, sorted."""
    lines = []
    for word in sorted(index):
        postings = index[word]
        pairs = " ".join(f"{doc_id} {postings[doc_id]}" for doc_id in sorted(postings))
        lines.append(f"{word.decode('ascii')} {pairs}\n")
    return "".join(lines).encode("ascii")


def parse_index(data: bytes, name: str = "index") -> Index:
    """Parse the text form; raise IndexFileError naming *name* and the line."""
    index: Index = {}
    for number, line in enumerate(data.split(b"\n"), start=1):
        fields = line.split()
        if not fields:
            continue
        word, numbers = fields[0], fields[1:]
        if not _WORD.fullmatch(word):
            raise IndexFileError(f"{name}:{number}: not a lowercase word: {_show(word)}")
        if not numbers or len(numbers) % 2:
            raise IndexFileError(f"{name}:{number}: expected docID count pairs after the word")
        bad = next((n for n in numbers if not _INT.fullmatch(n)), None)
        if bad is not None:
            raise IndexFileError(f"{name}:{number}: not a positive integer: {_show(bad)}")
        long = next((n for n in numbers if len(n) > MAX_DIGITS), None)
        if long is not None:
            raise IndexFileError(f"{name}:{number}: a number of more than {MAX_DIGITS} digits: {_show(long)}")
        postings = {int(numbers[i]): int(numbers[i + 1]) for i in range(0, len(numbers), 2)}
        if len(postings) * 2 != len(numbers):
            raise IndexFileError(f"{name}:{number}: a docID appears twice for {_show(word)}")
        if word in index:
            raise IndexFileError(f"{name}:{number}: the word {_show(word)} appears on two lines")
        index[word] = postings
    return index


def looks_like_an_index(start: bytes, whole: bool) -> bool:
    """Whether *start*, the start of a file (*whole*: all of it), begins as SPEC 3's index does: its
    first line (blank lines skipped, as ``parse_index`` skips them) a word and docID count pairs, the
    last field of a line cut where the read stopped left out."""
    text = start.lstrip()
    if not text:
        return whole  # blank: nothing to lose
    line, newline, _ = text.partition(b"\n")
    fields = line.split()
    complete = bool(newline) or whole
    if not complete and len(fields) > 1:
        fields = fields[:-1]  # (cut where the read stopped)
    words, numbers = fields[:1], fields[1:]
    if not words or not _WORD.fullmatch(words[0]):
        return False
    if not numbers:
        # Cut where the read stopped, the line may still go on with its pairs: a page's word of more
        # letters than the read (a 70,000-letter run, first in sorted order) made tse index refuse the
        # index it wrote itself.
        return not complete
    if not all(_INT.fullmatch(number) for number in numbers):
        return False
    return not (complete and len(numbers) % 2)


# What a fault's token may hold that a terminal must not be given as it is, percent-encoded as a URL's are
# (``rules/crawling/progress.shown_url``, which this package may not import): control characters (C0,
# DEL, C1), bidirectional controls (a U+202E would turn the rest of the line around) and line separators,
# bytes that are no UTF-8 (lone surrogates once decoded), and "%" itself (a literal "%1B" is no escaped ESC).
_NOT_SHOWN = re.compile("[%\x00-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069\udc80-\udcff]")


# The most of a fault's token a message shows: a file of 3 MB of NULs (a device copied, say) is one token.
SHOWN_CHARACTERS = 40


def _show(token: bytes) -> str:
    """*token* quoted as UTF-8 text (``'café'``: decoded as ASCII, its é was two U+FFFD), its control
    characters and its bytes that are no UTF-8 percent-encoded (``'x%1B[2J'``, ``'caf%E9'``); its first
    SHOWN_CHARACTERS characters only, then "…", when it is longer."""
    text = token[: 4 * SHOWN_CHARACTERS + 4].decode("utf-8", "surrogateescape")  # (4 bytes the longest character)
    cut = len(text) > SHOWN_CHARACTERS
    text = text[:SHOWN_CHARACTERS]
    shown = _NOT_SHOWN.sub(lambda found: quote(found.group(), safe="", errors="surrogateescape"), text)
    return "'" + shown + ("…'" if cut else "'")


# tse index's INDEXFILE and tse indextest's NEWINDEX replace only an index (``outputfile``).
INDEX_FILE = OutputKind(
    noun="an index",
    what="the index",
    not_it="its first line is no 'word docID count ...'",
    recognises=looks_like_an_index,
    # Its sidecar, stamp, document store and search index (``index.storage``, ``index.docstore``,
    # ``fulltext.store``, which this package may not import).
    beside=(".bin", ".stamp", ".docs", ".search"),
)
