"""The page catalog, ``PAGEDIR/.tse-pages.sqlite``: what a crawl knows of each
page beyond the SPEC 2 files (validators, digest, history, live or gone).

It is written only by a crawl asked to keep it (``--validators``, ``--warc``)
and by every update, once, when the crawl has finished: during a crawl, what
it learns lives in the crawl state (``resume/statedb.py``), so a crawl killed
at any instant resumes to the same catalog.  No Scrapy import.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..resume.statedb import query_read_only
from ..rules.crawling.changes import Version
from ..rules.files import pagedir

CATALOG_NAME = ".tse-pages.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pages (doc_id INTEGER PRIMARY KEY, url TEXT NOT NULL, record TEXT NOT NULL);
"""


@dataclass(frozen=True)
class KnownPage:
    """One page of the directory as the catalog knows it."""

    doc_id: int
    url: str
    depth: int
    digest: str  # of the body in the page file (hex)
    live: bool = True  # False: listed in .tse-gone
    etag: str | None = None
    last_modified: str | None = None
    fetched: str | None = None  # WARC-Date of the last download of its body
    visits: int = 1  # fetches that gave the page (200 or 304), the first included
    changes: int = 0  # of those, the ones that found it changed
    first_seen: float = 0.0  # Unix times
    last_visit: float = 0.0
    last_change: float | None = None
    lastmod: str | None = None  # the last lastmod a sitemap gave it (--sitemaps), YYYY-MM-DDTHH:MM:SSZ
    # The URLs (normalized) whose redirects led to it when it was last fetched: an update that cannot
    # fetch one of them now follows the redirect as it was (docs/updating.md).  A catalog written
    # before it was kept has none.
    redirects: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "redirects", tuple(self.redirects))  # a list, read back from JSON

    @property
    def version(self) -> Version:
        return Version(self.depth, bytes.fromhex(self.digest))

    def record(self) -> dict[str, Any]:
        return asdict(self)


def body_digest(body: bytes) -> str:
    """What the catalog records of a body (hex)."""
    return hashlib.blake2b(body, digest_size=16).hexdigest()


def catalog_path(directory: str | os.PathLike) -> Path:
    return Path(directory) / CATALOG_NAME


def catalog_arguments(directory: str | os.PathLike) -> dict[str, Any] | None:
    """The arguments of the crawl that wrote the catalog, or None without one."""
    rows = _query(directory, "SELECT value FROM meta WHERE key = 'arguments'")
    return json.loads(rows[0][0]) if rows else None


def read_catalog(directory: str | os.PathLike) -> list[KnownPage] | None:
    """The catalog's pages, or None when the directory has no catalog."""
    rows = _query(directory, "SELECT record FROM pages ORDER BY doc_id")
    return None if rows is None else [KnownPage(**json.loads(record)) for (record,) in rows]


def last_update(directory: str | os.PathLike) -> str | None:
    """The id of the last crawl merged into the catalog."""
    rows = _query(directory, "SELECT value FROM meta WHERE key = 'update'")
    return rows[0][0] if rows else None


@dataclass(frozen=True)
class FinishedUpdate:
    """The last update merged into a catalog: its output files (``output_files``) and when it finished."""

    outputs: dict[str, str | None]
    at: float  # Unix time


def finished_update(directory: str | os.PathLike) -> FinishedUpdate | None:
    """The last crawl merged into the catalog, if it was an update (else None).

    A page directory without a crawl state holds either a finished update or one stopped before
    it wrote anything (docs/updating.md): an ``--update --resume`` with the same output files
    is taken for the finished one."""
    rows = _query(directory, "SELECT value FROM meta WHERE key = 'finished'")
    try:
        finished = json.loads(rows[0][0]) if rows else {}
        if finished.get("update"):
            return FinishedUpdate(dict(finished["outputs"]), float(finished["at"]))
    except (ValueError, TypeError, KeyError, AttributeError):  # not written by this program
        pass
    return None


def record_finished(
    directory: str | os.PathLike, update: bool, outputs: dict[str, str | None], *, synchronous: str = "NORMAL"
) -> None:
    """Record that the last crawl merged into the catalog, an *update* or not, finishes now with *outputs*."""
    finished = {"update": update, "outputs": outputs, "at": time.time()}
    with _transaction(directory, synchronous) as connection:
        _set_meta(connection, {"finished": json.dumps(finished)})


def _query(directory: str | os.PathLike, sql: str) -> list[tuple] | None:
    """The rows of *sql* on the catalog; None without one; UnreadableDatabase when its file is no catalog."""
    return query_read_only(catalog_path(directory), sql)


def pages_from_files(directory: str | os.PathLike) -> list[KnownPage]:
    """The catalog of a directory that has none, read from its page files (no validators)."""
    gone = pagedir.gone_docs(directory)
    pages = []
    doc_id = 1
    while True:
        path = pagedir.page_path(directory, doc_id)
        try:
            data = path.read_bytes()
            seen = path.stat().st_mtime
        except OSError:
            return pages
        try:
            page = pagedir.decode_page(data)
        except pagedir.PageFileError as error:
            raise pagedir.PageFileError(f"{path}: {error}") from None
        pages.append(
            KnownPage(
                doc_id,
                page.url,
                page.depth,
                body_digest(page.body),
                live=doc_id not in gone,
                first_seen=seen,
                last_visit=seen,
            )
        )
        doc_id += 1


def write_catalog(
    directory: str | os.PathLike,
    pages: Iterable[KnownPage],
    arguments: dict[str, Any],
    update_id: str,
    *,
    synchronous: str = "NORMAL",
) -> None:
    """Replace the catalog's pages and arguments, and record *update_id*, in one transaction."""
    with _transaction(directory, synchronous) as connection:
        connection.execute("DELETE FROM pages")
        connection.executemany(
            "INSERT INTO pages VALUES (?, ?, ?)", ((p.doc_id, p.url, json.dumps(p.record())) for p in pages)
        )
        _set_meta(connection, {"arguments": json.dumps(arguments), "update": update_id})


def _set_meta(connection: sqlite3.Connection, values: dict[str, str]) -> None:
    connection.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", values.items())


@contextmanager
def _transaction(directory: str | os.PathLike, synchronous: str) -> Iterator[sqlite3.Connection]:
    """A connection to the catalog (created if need be) inside one transaction, committed at the end."""
    connection = sqlite3.connect(catalog_path(directory), isolation_level=None)
    try:
        connection.execute(f"PRAGMA synchronous={synchronous}")
        connection.executescript(_SCHEMA)
        connection.execute("BEGIN")
        yield connection
        connection.execute("COMMIT")
    finally:
        connection.close()
