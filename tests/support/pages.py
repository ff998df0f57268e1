"""Reading page directories back in tests."""

from __future__ import annotations

from pathlib import Path

from tse_scrapy.rules import pagedir


def page_count(directory: Path) -> int:
    """The number of contiguous page files ``1, 2, ...``."""
    doc_id = 0
    while pagedir.page_path(directory, doc_id + 1).is_file():
        doc_id += 1
    return doc_id


def saved_pages(directory: Path) -> list[tuple[str, int]]:
    """(URL, depth) of each page file, in docID order."""
    return [
        (page.url, page.depth)
        for page in (pagedir.read_page(directory, i) for i in range(1, page_count(directory) + 1))
    ]
