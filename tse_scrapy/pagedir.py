"""The page-directory format, shared by the crawler, the indexer and the querier.

A page directory holds an empty ``.crawler`` marker and page files named
``1, 2, 3 ...`` with no gaps.  A page file is ``URL\\nDEPTH\\n`` + the body
bytes unchanged + ``\\n`` (the reference appended it; readers strip it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

MARKER = ".crawler"


@dataclass(frozen=True)
class Page:
    url: str
    depth: int
    body: bytes


def page_path(pagedir: str | os.PathLike, doc_id: int) -> Path:
    return Path(pagedir) / str(doc_id)


def mark(pagedir: str | os.PathLike) -> None:
    """Create the empty ``.crawler`` marker (raises OSError on failure)."""
    with open(Path(pagedir) / MARKER, "wb"):
        pass


def is_page_directory(pagedir: str | os.PathLike) -> bool:
    return (Path(pagedir) / MARKER).is_file()


def encode_page(page: Page) -> bytes:
    return b"%s\n%d\n%s\n" % (page.url.encode("utf-8"), page.depth, page.body)


def decode_page(data: bytes) -> Page:
    """Inverse of ``encode_page``; raises ValueError on a malformed file."""
    url, nl1, rest = data.partition(b"\n")
    depth, nl2, body = rest.partition(b"\n")
    if not (nl1 and nl2 and depth.isdigit() and body.endswith(b"\n")):
        raise ValueError("not a page file")
    return Page(url.decode("utf-8", "surrogateescape"), int(depth), body[:-1])


def partial_path(pagedir: str | os.PathLike, doc_id: int) -> Path:
    return Path(pagedir) / f".{doc_id}.partial"


def remove_partial_files(pagedir: str | os.PathLike) -> None:
    """Remove what an interrupted ``write_page`` left behind."""
    for path in Path(pagedir).glob(".*.partial"):
        path.unlink(missing_ok=True)


def write_page(pagedir: str | os.PathLike, doc_id: int, page: Page, *, fsync: bool = False) -> Path:
    """Write page file ``doc_id`` whole or not at all (temporary file + rename)."""
    final = page_path(pagedir, doc_id)
    temporary = partial_path(pagedir, doc_id)
    try:
        with open(temporary, "wb") as out:
            out.write(encode_page(page))
            if fsync:
                out.flush()
                os.fsync(out.fileno())
        os.replace(temporary, final)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return final


def read_page(pagedir: str | os.PathLike, doc_id: int) -> Page:
    return decode_page(page_path(pagedir, doc_id).read_bytes())


def page_count(pagedir: str | os.PathLike) -> int:
    """The number of contiguous page files ``1, 2, ...``."""
    doc_id = 0
    while page_path(pagedir, doc_id + 1).is_file():
        doc_id += 1
    return doc_id


def move_page(pagedir: str | os.PathLike, old: int, new: int) -> None:
    """Give page ``old`` the docID ``new`` (the file holds no docID, only its name)."""
    os.replace(page_path(pagedir, old), page_path(pagedir, new))


def remove_page(pagedir: str | os.PathLike, doc_id: int) -> None:
    page_path(pagedir, doc_id).unlink(missing_ok=True)
    partial_path(pagedir, doc_id).unlink(missing_ok=True)
