from dataclasses import dataclass


@dataclass
class PageItem:
    """A fetched page, saved by PageDirPipeline as the next docID."""

    url: str
    depth: int
    body: bytes
