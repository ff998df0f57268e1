"""The durable crawl state: frontier, seen set, docID counter and pages in
flight, in one SQLite database (WAL mode), so a crawl killed at any instant
resumes as if it had never stopped.  No Scrapy import.

Commit order (one page at a time):
  links found and the seen set  -> pending in the open transaction
  ``writing(row, N)``           -> commit: row ``row`` is being saved as docID N
  page file N renamed in place
  ``saved(row, N)``             -> commit: row gone, page N recorded, next docID N+1
A crash before the first commit loses the page's links with it and the page
is fetched again; between the two, the page file either exists (it is read
back, never written twice) or not (the page is fetched again).
"""

from __future__ import annotations

import json
import os
import pickle
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

STATE_NAME = ".tse-state.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS frontier (
    row INTEGER PRIMARY KEY AUTOINCREMENT, request BLOB NOT NULL, writing_doc INTEGER);
CREATE TABLE IF NOT EXISTS seen (key TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS pages (doc_id INTEGER PRIMARY KEY, request BLOB NOT NULL);
"""


def state_path(pagedir: str | os.PathLike, jobdir: str | os.PathLike | None = None) -> Path:
    """Where a crawl into *pagedir* keeps its state: in JOBDIR when given."""
    return Path(jobdir) / "tse-state.sqlite" if jobdir else Path(pagedir) / STATE_NAME


def stored_arguments(path: str | os.PathLike) -> dict[str, Any] | None:
    """The arguments a crawl's state was created with, or None without state."""
    if not Path(path).is_file():
        return None
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = connection.execute("SELECT value FROM meta WHERE key = 'arguments'").fetchone()
    except sqlite3.DatabaseError:
        return None
    finally:
        connection.close()
    return json.loads(row[0]) if row else None


class CrawlStateDB:
    """One crawl's state database; ``writing`` and ``saved`` commit, the rest waits for them."""

    def __init__(self, path: str | os.PathLike, *, synchronous: str = "NORMAL"):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(f"PRAGMA synchronous={synchronous}")
        self.db.executescript(_SCHEMA)
        self._open = False

    # -- reading, at start -------------------------------------------------
    def arguments(self) -> dict[str, Any] | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = 'arguments'").fetchone()
        return json.loads(row[0]) if row else None

    def set_arguments(self, arguments: dict[str, Any]) -> None:
        self._begin()
        self.db.execute("INSERT OR REPLACE INTO meta VALUES ('arguments', ?)", (json.dumps(arguments),))
        self.commit()

    def next_doc_id(self) -> int:
        row = self.db.execute("SELECT value FROM meta WHERE key = 'next_doc_id'").fetchone()
        return int(row[0]) if row else 1

    def seen_keys(self) -> list[str]:
        return [key for (key,) in self.db.execute("SELECT key FROM seen")]

    def frontier(self) -> Iterator[tuple[int, dict[str, Any], int | None]]:
        """(row, request dict, docID being written or None), in push order."""
        for row, blob, writing in self.db.execute("SELECT row, request, writing_doc FROM frontier ORDER BY row"):
            yield row, pickle.loads(blob), writing

    def request(self, row: int) -> dict[str, Any]:
        (blob,) = self.db.execute("SELECT request FROM frontier WHERE row = ?", (row,)).fetchone()
        return pickle.loads(blob)

    def writing_docs(self) -> list[int]:
        """DocIDs of the pages that were being saved when the crawl stopped."""
        return [doc for (doc,) in self.db.execute("SELECT writing_doc FROM frontier WHERE writing_doc IS NOT NULL")]

    def pages(self) -> Iterator[tuple[int, dict[str, Any]]]:
        for doc_id, blob in self.db.execute("SELECT doc_id, request FROM pages ORDER BY doc_id"):
            yield doc_id, pickle.loads(blob)

    # -- writing, during the crawl -----------------------------------------
    def push(self, request_dict: dict[str, Any]) -> int:
        self._begin()
        cursor = self.db.execute("INSERT INTO frontier (request) VALUES (?)", (pickle.dumps(request_dict, protocol=4),))
        return cursor.lastrowid

    def add_seen(self, key: str) -> None:
        self._begin()
        self.db.execute("INSERT OR IGNORE INTO seen VALUES (?)", (key,))

    def writing(self, row: int | None, doc_id: int) -> None:
        self._begin()
        if row is not None:
            self.db.execute("UPDATE frontier SET writing_doc = ? WHERE row = ?", (doc_id, row))
        self.commit()

    def saved(self, row: int | None, doc_id: int) -> None:
        """Page *doc_id* is on disk: its frontier row becomes its pages row."""
        self._begin()
        if row is not None:
            self.db.execute("INSERT OR REPLACE INTO pages SELECT ?, request FROM frontier WHERE row = ?", (doc_id, row))
            self.db.execute("DELETE FROM frontier WHERE row = ?", (row,))
        self.db.execute(
            "INSERT OR REPLACE INTO meta VALUES ('next_doc_id', ?)", (str(max(doc_id + 1, self.next_doc_id())),)
        )
        self.commit()

    def finished(self, row: int | None) -> None:
        """The page of *row* is over (failed, or saved already)."""
        if row is not None:
            self._begin()
            self.db.execute("DELETE FROM frontier WHERE row = ?", (row,))
        self.commit()

    def commit(self) -> None:
        if self._open:
            self.db.execute("COMMIT")
            self._open = False

    def close(self, *, remove: bool = False) -> None:
        self.commit()
        self.db.close()
        if remove:
            for suffix in ("", "-wal", "-shm"):
                try:
                    os.remove(str(self.path) + suffix)
                except FileNotFoundError:
                    pass

    def _begin(self) -> None:
        if not self._open:
            self.db.execute("BEGIN")
            self._open = True
