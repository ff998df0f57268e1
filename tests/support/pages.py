"""Reading page directories back in tests."""

from __future__ import annotations

from pathlib import Path

from tse_scrapy.rules import pagedir


def write_pages(directory: Path, pages: dict[int, tuple[str | bytes, int, bytes]]) -> Path:
    """A page directory written by hand, as the crawler writes one: ``.crawler`` and, for each
    docID, ``URL\nDEPTH\n`` + the body + ``\n``."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / ".crawler").touch()
    for doc_id, (url, depth, body) in pages.items():
        url = url if isinstance(url, bytes) else url.encode()
        (directory / str(doc_id)).write_bytes(url + b"\n%d\n" % depth + body + b"\n")
    return directory


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
