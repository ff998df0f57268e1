"""The indexer (SPEC 3): a page directory to an inverted index."""

from __future__ import annotations

import os
from collections.abc import Callable

from ..rules import pagedir
from ..rules.indexfile import Index
from ..rules.words import word_counts
from .docstore import DocStoreWriter
from .pagefiles import PageScan


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


def build_index(
    pages: str | os.PathLike | PageScan,
    docs: DocStoreWriter | None = None,
    on_page: Callable[[int], object] | None = None,
) -> Index:
    """Index pages 1, 2, ... until the first one that cannot be opened, without the gone ones
    (of a directory, or of a scan not yet walked); record each in *docs*; call *on_page*
    with 1 after each page file (a progress bar's update).

    A page that is not a page file raises ``pagedir.PageFileError``, naming it.
    """
    scan = pages if isinstance(pages, PageScan) else PageScan(pages)
    index: Index = {}
    for found in scan.files():
        if on_page is not None:
            on_page(1)
        if found.page is None:  # gone
            continue
        doc_id = found.doc_id
        counts = word_counts(found.page.body)
        for word, occurrences in counts.items():
            postings = index.get(word)
            if postings is None:
                index[word] = {doc_id: occurrences}
            else:
                postings[doc_id] = occurrences
        if docs is not None:
            docs.add(doc_id, found.page, counts, found.key)
    return index
