"""The document store beside an index: each page's URL, title, length and visible text.

``tse index`` writes it as ``INDEXFILE.docs``, an SQLite database, so that
search results get their titles and snippets, and BM25 its document lengths,
without reading pages.  It records the text index it was written with (size
and digest) and the page files it read (their sizes and modification times:
a page's URL is not in the index); a store that does not match both, or is
missing (an index written by the reference indexer), is rebuilt in memory
from the pages.
"""

from __future__ import annotations

import hashlib
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


def pages_fingerprint(directory: str | os.PathLike, pages: int) -> str:
    """What the page files 1..*pages* are now (sizes, modification times), and that page pages+1 is not there."""
    digest = hashlib.blake2b(digest_size=16)
    for doc_id in range(1, pages + 1):
        try:
            status = pagedir.page_path(directory, doc_id).stat()
        except OSError:
            return "changed"
        digest.update(b"%d %d %d\n" % (doc_id, status.st_size, status.st_mtime_ns))
    if pagedir.page_path(directory, pages + 1).exists():
        return "changed"
    return digest.hexdigest()


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
        try:
            self.db.execute("PRAGMA journal_mode=OFF")
            self.db.execute("PRAGMA synchronous=OFF")
            self.db.executescript(_SCHEMA)
        except sqlite3.Error:
            self.db.close()
            raise

    def add(self, doc_id: int, page: pagedir.Page, length: int) -> None:
        """Record page *doc_id*, whose words the indexer counted *length* times."""
        # A URL line that is not UTF-8 is shown as the querier shows it (U+FFFD for each bad byte).
        url = page.url.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        self.db.execute(
            "INSERT INTO docs VALUES (?, ?, ?, ?, ?)",
            (doc_id, url, page_title(page.body), length, visible_text(page.body, TEXT_LIMIT)),
        )

    def finish(self, index_size: int, index_digest: bytes, directory: str | os.PathLike) -> DocStore | None:
        """Record the index and pages the store belongs to; in memory, return the store, else put the file in place."""
        (pages,) = self.db.execute("SELECT count(*) FROM docs").fetchone()
        meta = {
            "index_size": str(index_size),
            "index_digest": index_digest.hex(),
            "pages": pages_fingerprint(directory, pages),
        }
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
        if error is not None:
            self.db.close()
            if self.path is not None:
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
    def open(
        cls, indexfile: str | os.PathLike, index_size: int, index_digest: bytes, directory: str | os.PathLike
    ) -> DocStore | None:
        """The store written with this index and these page files, or None (missing, stale, corrupt)."""
        path = docs_path(indexfile)
        if not path.is_file():
            return None
        db = None
        try:
            db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
            meta = dict(db.execute("SELECT key, value FROM meta"))
            store = cls(db, from_file=True)
            if (
                meta.get("index_size") == str(index_size)
                and meta.get("index_digest") == index_digest.hex()
                and meta.get("pages") == pages_fingerprint(directory, store.pages)
            ):
                return store
        except sqlite3.Error:
            pass
        if db is not None:
            db.close()
        return None

    @classmethod
    def build(cls, directory: str | os.PathLike, index_size: int = 0, index_digest: bytes = b"") -> DocStore:
        """The store of the pages of *directory*, built in memory."""
        writer = DocStoreWriter(None)
        for doc_id, page in pagedir.read_pages(directory):
            writer.add(doc_id, page, sum(word_counts(page.body).values()))
        store = writer.finish(index_size, index_digest, directory)
        assert store is not None
        return store

    def document(self, doc_id: int) -> Document | None:
        row = self.db.execute("SELECT url, title, text FROM docs WHERE doc_id = ?", (doc_id,)).fetchone()
        return Document(doc_id, *row) if row else None
