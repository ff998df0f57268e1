"""The indexer: a page directory -> an inverted index (SPEC 3)."""

from __future__ import annotations

from itertools import count

from . import pagedir
from .indexfile import Postings
from .words import word_counts


class PageDirError(ValueError):
    """The page directory cannot be indexed; the message is for the user."""


def check_page_directory(directory) -> None:
    """PAGEDIR must hold a readable ``.crawler`` and a readable ``1``."""
    for name, problem in ((pagedir.MARKER, "is not a crawler directory (no readable .crawler)"),
                          ("1", "has no readable page 1")):
        try:
            with open(pagedir.page_path(directory, name), "rb"):
                pass
        except OSError:
            raise PageDirError(f"{directory} {problem}") from None


def build_index(directory) -> dict[bytes, Postings]:
    """Index pages 1, 2, ... until the first one that cannot be opened."""
    index: dict[bytes, Postings] = {}
    for doc_id in count(1):
        try:
            data = pagedir.page_path(directory, doc_id).read_bytes()
        except OSError:
            break
        for word, occurrences in word_counts(page_body(data, directory, doc_id)).items():
            postings = index.get(word)
            if postings is None:
                index[word] = {doc_id: occurrences}
            else:
                postings[doc_id] = occurrences
    return index


def page_body(data: bytes, directory, doc_id: int) -> bytes:
    """The body of a page file: everything after the URL and depth lines."""
    url, newline, rest = data.partition(b"\n")
    depth, newline2, body = rest.partition(b"\n")
    if not (newline and newline2 and depth.strip().isdigit()):
        raise PageDirError(f"{pagedir.page_path(directory, doc_id)}: not a page file (URL, depth, page)")
    return body
