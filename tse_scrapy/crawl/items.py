"""PageItem: what the spider yields for each fetched page."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PageItem:
    """A fetched page, saved by PageDirPipeline as the next docID."""

    url: str
    depth: int
    body: bytes
    # For the durable crawl state: the page's frontier row, a docID fixed
    # before the fetch (a resumed page), and whether the page file exists
    # already (a page read back from disk on resume, never written twice).
    state_row: int | None = None
    doc_id: int | None = None
    replayed: bool = False
