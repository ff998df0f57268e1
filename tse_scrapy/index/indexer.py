"""The indexer (SPEC 3): a page directory to an inverted index."""

from __future__ import annotations

import os

from ..rules import pagedir
from ..rules.indexfile import Index
from ..rules.words import word_counts
from .docstore import DocStoreWriter


class PageDirError(ValueError):
    """The page directory cannot be indexed; the message is for the user."""


def check_page_directory(directory: str | os.PathLike) -> None:
    """PAGEDIR must hold a readable ``.crawler`` and a readable ``1``."""
    for name, problem in (
        (pagedir.MARKER, "is not a crawler directory (no readable .crawler)"),
        ("1", "has no readable page 1"),
    ):
        try:
            with open(pagedir.page_path(directory, name), "rb"):
                pass
        except OSError:
            raise PageDirError(f"{directory} {problem}") from None


def build_index(directory: str | os.PathLike, docs: DocStoreWriter | None = None) -> Index:
    """Index pages 1, 2, ... until the first one that cannot be opened; record each in *docs*.

    A page that is not a page file raises ``pagedir.PageFileError``, naming it.
    """
    index: Index = {}
    for doc_id, page in pagedir.read_pages(directory):
        counts = word_counts(page.body)
        for word, occurrences in counts.items():
            postings = index.get(word)
            if postings is None:
                index[word] = {doc_id: occurrences}
            else:
                postings[doc_id] = occurrences
        if docs is not None:
            docs.add(doc_id, page, sum(counts.values()))
    return index
