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
import math
import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from ..resume.statedb import UnreadableDatabase, query_read_only
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
    return _meta(directory, "arguments", _arguments)


def read_catalog(directory: str | os.PathLike) -> list[KnownPage] | None:
    """The catalog's pages, or None when the directory has no catalog; UnreadableDatabase, naming
    the file and the page, when a row is not one this program writes (``known_page``)."""
    rows = _query(directory, "SELECT doc_id, url, record FROM pages ORDER BY doc_id")
    if rows is None:
        return None
    pages, by_url = [], {}
    for doc_id, url, record in rows:
        try:
            page = known_page(doc_id, url, record)
            if page.url in by_url:
                raise ValueError(f"its URL is also docID {by_url[page.url]}'s")
        except ValueError as error:
            raise UnreadableDatabase(f"{catalog_path(directory)}: docID {doc_id}: {error}") from None
        by_url[page.url] = doc_id
        pages.append(page)
    return pages


@dataclass
class PagesBefore:
    """The pages a crawl starts from, read as it was checked (``crawlstart``), for ``UpdateExtension.setup``
    to take rather than read them again (1.5 s for 100,000 rows): an update's (``pages_before_update``),
    or a crawl with validators' (the catalog's)."""

    update: bool
    pages: list[KnownPage] | None  # None once taken

    def take(self) -> list[KnownPage] | None:
        """The pages, once: what holds this (the CrawlStart, the spider) keeps them no longer (43 MB for
        100,000 pages, the whole crawl long)."""
        pages, self.pages = self.pages, None
        return pages


def pages_before_update(directory: str | os.PathLike) -> list[KnownPage]:
    """The pages of the directory as an update finds them: the catalog's (or, without one, the page
    files'), each live unless its docID is listed in ``.tse-gone``: that list is what ``tse index``
    skips, and a user may write it by hand (docs/indexing.md), to take a page out (its docID added)
    or bring it back (taken out).  A docID listed that names no page is left out of it (the next
    new page may get it).  Raises UnreadableDatabase, PageFileError or OSError."""
    pages = read_catalog(directory)
    if pages is None:
        return pages_from_files(directory)
    gone = pagedir.gone_docs(directory)
    return [replace(page, live=page.doc_id not in gone) for page in pages]


def last_update(directory: str | os.PathLike) -> str | None:
    """The id of the last crawl merged into the catalog."""
    return _meta(directory, "update", _text)


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
    return _meta(directory, "finished", _finished)


# -- reading what this program wrote, and only that ----------------------------
# A catalog is the program's own file, but a user may edit it (sqlite3 is at hand) or another
# version may have written it: a value not as written here is refused, before the crawl writes
# anything, in one line naming the file and the row (``crawlstart``), not as a traceback once
# the crawl has begun (which left a crawl state behind, each --resume failing the same way).


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_time(value: Any) -> bool:
    return (_is_int(value) or isinstance(value, float)) and math.isfinite(value)


_HEX = re.compile(r"(?:[0-9a-f]{2})+")  # as hexdigest() writes it


def _is_hex(value: Any) -> bool:
    return isinstance(value, str) and _HEX.fullmatch(value) is not None


def _is_text_or_none(value: Any) -> bool:
    return value is None or isinstance(value, str)


# Each field of a record, what its value must be, said as the refusal says it.
RECORD_FIELDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "doc_id": (lambda v: _is_int(v) and v > 0, "a docID"),
    "url": (lambda v: isinstance(v, str) and v != "", "a URL"),
    "depth": (lambda v: _is_int(v) and v >= 0, "a depth (a whole number from 0)"),
    "digest": (_is_hex, "a digest (hex)"),
    "live": (lambda v: isinstance(v, bool), "true or false"),
    "etag": (_is_text_or_none, "text or null"),
    "last_modified": (_is_text_or_none, "text or null"),
    "fetched": (_is_text_or_none, "text or null"),
    "visits": (lambda v: _is_int(v) and v >= 0, "a count"),
    "changes": (lambda v: _is_int(v) and v >= 0, "a count"),
    "first_seen": (_is_time, "a time (seconds)"),
    "last_visit": (_is_time, "a time (seconds)"),
    "last_change": (lambda v: v is None or _is_time(v), "a time (seconds) or null"),
    "lastmod": (_is_text_or_none, "text or null"),
    "redirects": (lambda v: isinstance(v, list) and all(isinstance(u, str) for u in v), "a list of URLs"),
}
# Those a record always has; the others have defaults (a catalog written before they were kept lacks them).
REQUIRED_FIELDS = ("doc_id", "url", "depth", "digest")
_REQUIRED = frozenset(REQUIRED_FIELDS)
assert set(RECORD_FIELDS) == {field.name for field in fields(KnownPage)}


def known_page(doc_id: Any, url: Any, record: Any) -> KnownPage:
    """The page of the catalog row (*doc_id*, *url*, *record*), as ``write_catalog`` writes it;
    ValueError, saying what is wrong, for any other row."""
    if not isinstance(record, str):
        raise ValueError("its record is not text")
    try:
        values = json.loads(record)
    except (ValueError, RecursionError):  # (nested past Python's recursion limit: no record of ours)
        raise ValueError("its record is not JSON") from None
    if not isinstance(values, dict):
        raise ValueError("its record is not a JSON object")
    names = values.keys()
    if not names <= RECORD_FIELDS.keys():
        unknown = next(name for name in names if name not in RECORD_FIELDS)
        raise ValueError(f"its record has a field this program does not write: {unknown!r}")
    if not names >= _REQUIRED:
        missing = next(name for name in REQUIRED_FIELDS if name not in names)
        raise ValueError(f"its record has no {missing!r}")
    for name, value in values.items():
        is_right, what = RECORD_FIELDS[name]
        if not is_right(value):
            raise ValueError(f"its record's {name!r} is not {what}: {json.dumps(value)[:80]}")
    if values["doc_id"] != doc_id or values["url"] != url:
        raise ValueError("its record names another page than its row")
    return KnownPage(**values)


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("not text")
    return value


def _json(value: Any) -> Any:
    try:
        return json.loads(_text(value))
    except (json.JSONDecodeError, RecursionError):  # (nested past Python's recursion limit: none of ours)
        raise ValueError("not JSON") from None


def _arguments(value: Any) -> dict[str, Any]:
    arguments = _json(value)
    if not isinstance(arguments, dict):
        raise ValueError("not a JSON object")
    return arguments


def _finished(value: Any) -> FinishedUpdate | None:
    finished = _json(value)
    if not (isinstance(finished, dict) and isinstance(finished.get("update"), bool)):
        raise ValueError("not a JSON object with 'update'")
    if not finished["update"]:
        return None
    outputs, at = finished.get("outputs"), finished.get("at")
    if not (isinstance(outputs, dict) and all(_is_text_or_none(path) for path in outputs.values())):
        raise ValueError("its 'outputs' are not file names")
    if not _is_time(at):
        raise ValueError("its 'at' is not a time")
    return FinishedUpdate(dict(outputs), float(at))


def _meta(directory: str | os.PathLike, key: str, parse: Callable[[Any], Any]) -> Any:
    """The meta value *key* of the catalog, read by *parse* (ValueError for a value this program does
    not write: UnreadableDatabase, naming the file and the key); None without one."""
    rows = _query(directory, "SELECT value FROM meta WHERE key = ?", (key,))
    if not rows:
        return None
    try:
        return parse(rows[0][0])
    except ValueError as error:
        raise UnreadableDatabase(f"{catalog_path(directory)}: meta {key!r}: {error}") from None


def record_finished(
    directory: str | os.PathLike, update: bool, outputs: dict[str, str | None], *, synchronous: str = "NORMAL"
) -> None:
    """Record that the last crawl merged into the catalog, an *update* or not, finishes now with *outputs*."""
    finished = {"update": update, "outputs": outputs, "at": time.time()}
    with _transaction(directory, synchronous) as connection:
        _set_meta(connection, {"finished": json.dumps(finished)})


def _query(directory: str | os.PathLike, sql: str, parameters: tuple = ()) -> list[tuple] | None:
    """The rows of *sql* on the catalog; None without one; UnreadableDatabase when its file is no catalog."""
    return query_read_only(catalog_path(directory), sql, parameters)


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
