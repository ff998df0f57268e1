"""The document store beside an index: each page's URL, title, length and visible text.

``tse index`` writes it as ``INDEXFILE.docs``, an SQLite database, so that
search results get their titles and snippets, and BM25 its document lengths,
without reading pages.  It records the text index it was written with (size
and digest); a store that does not match its index, or is missing (an index
written by the reference indexer), is rebuilt in memory from the pages.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from ..atomicfile import partial_path
from ..rules import pagedir
from ..rules.pagetext import page_title, visible_text
from ..rules.words import word_counts

DOCS_SUFFIX = ".docs"
TEXT_LIMIT = 5_000  # characters of visible text kept a page, for snippets (about 800 words)

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE docs (doc_id INTEGER PRIMARY KEY, url TEXT NOT NULL, title TEXT NOT NULL,
                   length INTEGER NOT NULL, text TEXT NOT NULL);
"""


@dataclass(frozen=True)
class Document:
    """What a search result shows of a page."""

    doc_id: int
    url: str
    title: str  # "" when the page has none
    text: str  # the visible text, at most TEXT_LIMIT characters


def docs_path(indexfile: str | os.PathLike) -> Path:
    return Path(str(indexfile) + DOCS_SUFFIX)


class DocStoreWriter:
    """Writes a store whole or not at all: to ``.NAME.partial``, renamed by ``finish``.

    With ``path=None`` the store is built in memory.
    """

    def __init__(self, path: str | os.PathLike | None):
        self.path = Path(path) if path is not None else None
        target = ":memory:"
        if self.path is not None:
            target = str(partial_path(self.path))
            Path(target).unlink(missing_ok=True)
        self.db = sqlite3.connect(target, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=OFF")
        self.db.execute("PRAGMA synchronous=OFF")
        self.db.executescript(_SCHEMA)

    def add(self, doc_id: int, page: pagedir.Page, length: int) -> None:
        """Record page *doc_id*, whose words the indexer counted *length* times."""
        self.db.execute(
            "INSERT INTO docs VALUES (?, ?, ?, ?, ?)",
            (doc_id, page.url, page_title(page.body), length, visible_text(page.body, TEXT_LIMIT)),
        )

    def finish(self, index_size: int, index_digest: bytes) -> DocStore | None:
        """Record the index the store belongs to; in memory, return the store, else put the file in place."""
        meta = {"index_size": str(index_size), "index_digest": index_digest.hex()}
        self.db.executemany("INSERT INTO meta VALUES (?, ?)", meta.items())
        self.db.commit()
        if self.path is None:
            return DocStore(self.db)
        self.db.close()
        os.replace(partial_path(self.path), self.path)
        return None

    def __enter__(self) -> DocStoreWriter:
        return self

    def __exit__(self, kind: type | None, error: BaseException | None, traceback: TracebackType | None) -> None:
        if error is not None and self.path is not None:
            self.db.close()
            partial_path(self.path).unlink(missing_ok=True)


class DocStore:
    """Reads a store: documents by docID, and what BM25 needs (N, dl, avgdl)."""

    def __init__(self, db: sqlite3.Connection, *, from_file: bool = False):
        self.db = db
        self.from_file = from_file  # else built in memory from the pages
        self.lengths: dict[int, int] = dict(db.execute("SELECT doc_id, length FROM docs"))
        self.pages = len(self.lengths)
        self.average_length = sum(self.lengths.values()) / self.pages if self.pages else 0.0

    @classmethod
    def open(cls, indexfile: str | os.PathLike, index_size: int, index_digest: bytes) -> DocStore | None:
        """The store written with the index of that size and digest, or None (missing, another index, corrupt)."""
        path = docs_path(indexfile)
        if not path.is_file():
            return None
        try:
            db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
            meta = dict(db.execute("SELECT key, value FROM meta"))
            if meta.get("index_size") != str(index_size) or meta.get("index_digest") != index_digest.hex():
                db.close()
                return None
            return cls(db, from_file=True)
        except sqlite3.Error:
            return None

    @classmethod
    def build(cls, directory: str | os.PathLike, index_size: int = 0, index_digest: bytes = b"") -> DocStore:
        """The store of the pages of *directory*, built in memory."""
        writer = DocStoreWriter(None)
        for doc_id, page in pagedir.read_pages(directory):
            writer.add(doc_id, page, sum(word_counts(page.body).values()))
        store = writer.finish(index_size, index_digest)
        assert store is not None
        return store

    def document(self, doc_id: int) -> Document | None:
        row = self.db.execute("SELECT url, title, text FROM docs WHERE doc_id = ?", (doc_id,)).fetchone()
        return Document(doc_id, *row) if row else None
