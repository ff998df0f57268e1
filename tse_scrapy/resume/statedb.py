"""The durable crawl state: frontier, seen set, docID counter and pages in
flight, in one SQLite database (WAL mode), so a crawl killed at any instant
resumes as if it had never stopped.  No Scrapy import.

Commit order (one page at a time):
  links found and the seen set  -> held in memory
  ``writing(row, N)``           -> commit, with the links held: row ``row`` is being saved as docID N
  page file N renamed in place
  ``saved(row, N)``             -> commit: row gone, page N recorded, next docID N+1
A crash before the first commit loses the page's links with it and the page
is fetched again; between the two, the page file either exists (it is read
back, never written twice) or not (the page is fetched again).  The links are
held outside the transaction because the next page may be fetched while a
thread writes this one's file: this one's ``saved`` must not commit half of
the next page's links.  A failed page's ``finished`` commits the links held too,
and so does the ``saved`` of a page that is not written (read back on resume,
unchanged in an update): it has no ``writing`` commit.  Like those two, it
commits every link held, other pages' too when several are fetched at a time:
such a page is fetched again on resume, and its links are then duplicates.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ..rules.files.legacyentries import REQUEST_CLASSES, PlainValues

STATE_NAME = ".tse-state.sqlite"
# The ``catalog`` meta value: what a crawl keeps beyond SPEC 2 (update/).
CATALOG_UPDATE = "update"  # an update of a finished crawl
CATALOG_VALIDATORS = "validators"  # a crawl asked to keep validators (or a WARC)
# The meta key of the crawl's output files (JSON: ``output_files``), which a resume must name again; a
# state made before it was kept has none.
OUTPUTS = "outputs"
# The meta key set when the crawl has ended, to its close reason (a success), before its clean-up
# (an update's results, the WARC's index, the record's last lines): a crawl stopped in its clean-up
# (a full disk, a kill) is resumed to that clean-up alone, fetching nothing (``crawlstart``), as if it
# had ended with the same reason (an update cut short by its page limit takes nothing for gone).
ENDED = "ended"
# The stat set with ``tse/error`` when such a clean-up failed: the reason line says how to go on
# (``crawl/outcome.py``).
RESUMABLE = "tse/error_resumable"
# The settings that name a crawl's output files, and the state's and the catalog's names for them.
OUTPUT_SETTINGS = {"warc": "TSE_WARC", "record": "TSE_RECORD", "changes": "TSE_CHANGES"}


def output_files(setting: Callable[[str], Any]) -> dict[str, str | None]:
    """The output files of the crawl whose settings *setting* reads, as the state and the catalog
    record them: absolute, links resolved, None when not asked for."""
    given = {name: setting(setting_name) for name, setting_name in OUTPUT_SETTINGS.items()}
    return {name: os.path.realpath(path) if path else None for name, path in given.items()}


# Between a page's URL and a link's in the ``reached`` table's keys (``add_link``): no URL holds a line
# feed (a crawl's start's key: from the empty URL).
_LINKED = "\n"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS frontier (
    row INTEGER PRIMARY KEY AUTOINCREMENT, request BLOB NOT NULL, writing_doc INTEGER);
CREATE TABLE IF NOT EXISTS seen (key TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS pages (doc_id INTEGER PRIMARY KEY, request BLOB NOT NULL);
-- Updates and validators (update/): the page directory as it was when the
-- crawl began, what this crawl learnt of each page, the URLs found as links.
CREATE TABLE IF NOT EXISTS before (doc_id INTEGER PRIMARY KEY, url TEXT NOT NULL, record TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS visits (doc_id INTEGER PRIMARY KEY, record TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS reached (key TEXT PRIMARY KEY);
"""


def state_path(pagedir: str | os.PathLike, jobdir: str | os.PathLike | None = None) -> Path:
    """Where a crawl into *pagedir* keeps its state: in JOBDIR when given."""
    return Path(jobdir) / "tse-state.sqlite" if jobdir else Path(pagedir) / STATE_NAME


def stored_arguments(path: str | os.PathLike) -> dict[str, Any] | None:
    """The arguments a crawl's state was created with, or None without state; UnreadableDatabase
    when they are not a JSON object (a damaged or foreign state)."""
    value = stored_meta(path, "arguments")
    return _arguments(path, value) if value is not None else None


def _arguments(path: str | os.PathLike, value: Any) -> dict[str, Any]:
    try:
        arguments = json.loads(value)
    except (TypeError, ValueError):
        arguments = None
    if type(arguments) is not dict:
        raise UnreadableDatabase(f"{path}: its crawl's arguments are not what tse records (a damaged state)")
    return arguments


# A request of the state is a pickle this crawl made (``CrawlStateDB.push``), but the file may come
# from anywhere (a page directory or a JOBDIR copied from someone else, a damaged disk): it is loaded
# as data only (``legacyentries.PlainValues``: a pickle that names any global, the only way one runs
# code, is refused), then checked to be a request dict as Scrapy's ``Request.to_dict`` makes it for a plain
# ``Request`` (``_check_request``: another ``_class``, or a key another class's constructor takes,
# would make ``request_from_dict`` import and call what the file names).
MAX_REQUEST_BYTES = 1 << 20  # a tse request is a few hundred bytes; its URL at most 2,083 characters
_REQUEST_FIELDS: dict[str, tuple[type, ...]] = {
    "url": (str,),
    "callback": (str, type(None)),
    "errback": (str, type(None)),
    "method": (str,),
    "headers": (dict,),
    "body": (bytes,),
    "cookies": (dict, list),
    "meta": (dict,),
    "encoding": (str,),
    "priority": (int,),
    "dont_filter": (bool,),
    "flags": (list,),
    "cb_kwargs": (dict,),
    "_class": (str,),
}


def load_request(blob: Any, where: str) -> dict[str, Any]:
    """The request dict stored in *blob* (a frontier or pages row, *where*), loaded without running
    anything it names; UnreadableDatabase (one line) when it is not a request this crawl stored."""
    if type(blob) is not bytes or len(blob) > MAX_REQUEST_BYTES:
        raise UnreadableDatabase(f"{where} is not a request tse stored (a damaged state)")
    try:
        value = PlainValues(io.BytesIO(blob)).load()
    except Exception as error:  # (any: a damaged pickle raises many kinds)
        reason = str(error).splitlines()[0][:200] if str(error) else type(error).__name__
        raise UnreadableDatabase(f"{where} is not a request tse stored: {reason}") from None
    _check_request(value, where)
    return value


def check_requests(path: str | os.PathLike) -> None:
    """Load every request of the state at *path* as a resume will (``load_request``), and its docID
    counter, read-only: UnreadableDatabase (one line) at the first that is not one this crawl stored,
    before Scrapy starts."""
    counter = stored_meta(path, "next_doc_id")
    if counter is not None and not (type(counter) is str and counter.isascii() and counter.isdecimal()):
        raise UnreadableDatabase(f"{path}: its next docID is not a number (a damaged state)")
    rows = query_read_only(path, "SELECT 'frontier row ' || row, request FROM frontier") or []
    rows += query_read_only(path, "SELECT 'the request of page ' || doc_id, request FROM pages") or []
    for where, blob in rows:
        load_request(blob, f"{path}: {where}")


def _check_request(value: Any, where: str) -> None:
    if type(value) is not dict or type(value.get("url")) is not str:
        raise UnreadableDatabase(f"{where} is not a request tse stored: not a request dict")
    for key, item in value.items():
        kinds = _REQUEST_FIELDS.get(key) if type(key) is str else None
        if kinds is None or type(item) not in kinds:
            raise UnreadableDatabase(f"{where} is not a request tse stored: its field {str(key)[:40]!r}")
    if value.get("_class", "scrapy.Request") not in REQUEST_CLASSES:
        raise UnreadableDatabase(f"{where} is not a request tse stored: of class {value['_class'][:80]!r}")
    depth = value.get("meta", {}).get("depth", 0)
    if type(depth) is not int or depth < 0:
        raise UnreadableDatabase(f"{where} is not a request tse stored: its depth")


class UnreadableDatabase(Exception):
    """A file that is no SQLite database of ours (not a database, not a file); its message says why."""


def stored_meta(path: str | os.PathLike, key: str) -> str | None:
    """One meta value of the crawl state at *path*, or None (no state, no such value);
    UnreadableDatabase when there is a file that is no crawl state."""
    rows = query_read_only(path, "SELECT value FROM meta WHERE key = ?", (key,))
    return rows[0][0] if rows else None


def query_read_only(path: str | os.PathLike, sql: str, parameters: tuple = ()) -> list[tuple] | None:
    """The rows of *sql* on the database at *path*, opened read-only; None when there is no such
    file, or an empty one (a database being made when its crawl stopped); UnreadableDatabase when
    the file is no database."""
    path = Path(path)
    if not path.exists():
        return None
    if not path.is_file():
        raise UnreadableDatabase(f"{path} is not a file")
    try:
        try:
            return _read(path, sql, parameters)
        except sqlite3.OperationalError as error:
            if (getattr(error, "sqlite_errorcode", 0) or 0) & 0xFF not in _NEEDS_WRITING:
                raise
            # A hot journal (a writer killed in its transaction: a crawl killed while it wrote the
            # page catalog), or a WAL without its index, which a read-only connection cannot use and
            # every later read would refuse, for good: opened for writing once, SQLite recovers it,
            # and the read goes on.
            _roll_back_journal(path)
            return _read(path, sql, parameters)
    except sqlite3.OperationalError as error:
        if str(error).startswith("no such table"):
            return None
        raise UnreadableDatabase(f"{path}: {error}") from None
    except sqlite3.DatabaseError as error:
        raise UnreadableDatabase(f"{path}: {error}") from None


# The primary result codes of a read-only connection that needs to write to read (a hot journal, a
# WAL without its index): SQLITE_READONLY, SQLITE_CANTOPEN.
_NEEDS_WRITING = frozenset({8, 14})


def _read(path: Path, sql: str, parameters: tuple) -> list[tuple]:
    connection = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
    try:
        return connection.execute(sql, parameters).fetchall()
    finally:
        connection.close()


def _roll_back_journal(path: Path) -> None:
    """Open the database at *path* for writing and read it, once: SQLite rolls back a hot journal
    (the database as its last commit left it, which any reader would have read) and recovers a WAL's
    index.  A journal that is not hot (its writer is alive) is left alone.  Nothing else is written; a
    database that cannot be opened so (a read-only directory) says so in the read that follows."""
    try:
        connection = sqlite3.connect(f"{path.absolute().as_uri()}?mode=rw", uri=True)
    except sqlite3.Error:
        return
    try:
        connection.execute("SELECT COUNT(*) FROM sqlite_master").fetchall()
    except sqlite3.Error:
        pass  # (said by the read that follows, read-only)
    finally:
        connection.close()


class CrawlStateDB:
    """One crawl's state database; ``writing``, ``saved`` and ``finished`` commit, the rest waits for them."""

    def __init__(self, path: str | os.PathLike, *, synchronous: str = "NORMAL"):
        """Open the state at *path*, made if there is none.  A state that cannot be made (a full disk,
        a file-size limit) raises sqlite3.Error or OSError and leaves no file behind: half made, it
        would be unreadable, and would keep a new crawl of the directory from starting."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        made = not self.path.exists()
        self.db = sqlite3.connect(self.path, isolation_level=None)
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute(f"PRAGMA synchronous={synchronous}")
            self.db.executescript(_SCHEMA)
        except sqlite3.Error:
            self.db.close()
            if made:
                self._remove_files()
            raise
        self._open = False
        # Links found (frontier rows, seen keys) since the last ``writing`` or ``finished``.
        self._held_rows: dict[int, bytes] = {}
        self._held_seen: list[str] = []
        (last_row,) = self.db.execute("SELECT MAX(seq) FROM sqlite_sequence WHERE name = 'frontier'").fetchone()
        self._next_row = (last_row or 0) + 1
        stored_next = self.meta("next_doc_id")
        self._next_doc_id = int(stored_next) if stored_next else 1  # this connection is the state's only writer

    # -- reading, at start -------------------------------------------------
    def arguments(self) -> dict[str, Any] | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = 'arguments'").fetchone()
        return _arguments(self.path, row[0]) if row else None

    def set_arguments(self, arguments: dict[str, Any], meta: dict[str, str] | None = None) -> None:
        """Record the crawl's arguments (and other *meta* values): from now on, it can be resumed."""
        self._begin()
        self.db.execute("INSERT OR REPLACE INTO meta VALUES ('arguments', ?)", (json.dumps(arguments),))
        self.db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", (meta or {}).items())
        self.commit()

    def next_doc_id(self) -> int:
        return self._next_doc_id

    def seen_keys(self) -> list[str]:
        return [key for (key,) in self.db.execute("SELECT key FROM seen")]

    def frontier(self) -> Iterator[tuple[int, dict[str, Any], int | None]]:
        """(row, request dict, docID being written or None), in push order."""
        for row, blob, writing in self.db.execute("SELECT row, request, writing_doc FROM frontier ORDER BY row"):
            yield row, load_request(blob, f"{self.path}: frontier row {row}"), writing

    def request(self, row: int) -> dict[str, Any]:
        blob = self._held_rows.get(row)
        if blob is None:
            (blob,) = self.db.execute("SELECT request FROM frontier WHERE row = ?", (row,)).fetchone()
        return load_request(blob, f"{self.path}: frontier row {row}")

    def writing_docs(self) -> list[int]:
        """DocIDs of the pages that were being saved when the crawl stopped."""
        return [doc for (doc,) in self.db.execute("SELECT writing_doc FROM frontier WHERE writing_doc IS NOT NULL")]

    def pages(self) -> Iterator[tuple[int, dict[str, Any]]]:
        for doc_id, blob in self.db.execute("SELECT doc_id, request FROM pages ORDER BY doc_id"):
            yield doc_id, load_request(blob, f"{self.path}: the request of page {doc_id}")

    def saved_count(self) -> int:
        """Pages this crawl has saved (in an update, not the highest docID)."""
        return self.db.execute("SELECT COUNT(*) FROM pages").fetchone()[0]

    def meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def before(self) -> Iterator[dict[str, Any]]:
        """The pages as they were when the crawl began (``set_before``)."""
        for (record,) in self.db.execute("SELECT record FROM before ORDER BY doc_id"):
            yield json.loads(record)

    def visits(self) -> Iterator[dict[str, Any]]:
        """What this crawl learnt of each page it fetched or failed (``visit``), by docID."""
        for (record,) in self.db.execute("SELECT record FROM visits ORDER BY doc_id"):
            yield json.loads(record)

    def visit_of(self, doc_id: int) -> dict[str, Any] | None:
        """The ``visit`` record of page *doc_id*, or None."""
        row = self.db.execute("SELECT record FROM visits WHERE doc_id = ?", (doc_id,)).fetchone()
        return json.loads(row[0]) if row else None

    def links_from(self, source: str) -> list[str]:
        """The targets of the links recorded from *source* (``add_link``): a range of the ``reached``
        table's keys, read by its index."""
        rows = self.db.execute(
            "SELECT key FROM reached WHERE key > ? AND key < ?", (source + _LINKED, source + chr(ord(_LINKED) + 1))
        )
        return [key[len(source) + 1 :] for (key,) in rows]

    # -- writing, during the crawl -----------------------------------------
    def set_before(self, records: list[dict[str, Any]], meta: dict[str, str]) -> None:
        """Record the pages as they are before the crawl, and *meta*, in one commit."""
        self._begin()
        try:
            self.db.execute("DELETE FROM before")
            self.db.executemany(
                "INSERT INTO before VALUES (?, ?, ?)",
                ((record["doc_id"], record["url"], json.dumps(record)) for record in records),
            )
            self.db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", meta.items())
            self.commit()
        except sqlite3.Error:  # (a full disk) nothing of it is kept: the state stays as it was
            self._roll_back()
            raise

    def ended(self, reason: str) -> None:
        """The crawl has ended, with *reason*: committed with everything held (``ENDED``)."""
        self._write_held()
        self.db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (ENDED, reason))
        self.commit()

    def visit(self, record: dict[str, Any]) -> None:
        """What the crawl learnt of page ``record['doc_id']``; committed with the next ``saved``/``finished``."""
        self._begin()
        self.db.execute("INSERT OR REPLACE INTO visits VALUES (?, ?)", (record["doc_id"], json.dumps(record)))

    def add_link(self, source: str, target: str) -> None:
        """Record a link from the page of *source* (the empty URL: the crawl's starts) to *target*
        (an update in priority order's, update/extension.py); committed with the next commit."""
        self._begin()
        self.db.execute("INSERT OR IGNORE INTO reached VALUES (?)", (source + _LINKED + target,))

    def push(self, request_dict: dict[str, Any]) -> int:
        """Add a request to the frontier (held until the next ``writing`` or ``finished``); its row."""
        row = self._next_row
        self._next_row += 1
        self._held_rows[row] = pickle.dumps(request_dict, protocol=4)
        return row

    def add_seen(self, key: str) -> None:
        self._held_seen.append(key)

    def writing(self, row: int | None, doc_id: int) -> None:
        self._write_held()
        if row is not None:
            self.db.execute("UPDATE frontier SET writing_doc = ? WHERE row = ?", (doc_id, row))
        self.commit()

    def saved(self, row: int | None, doc_id: int, *, with_links: bool = False) -> None:
        """Page *doc_id* is on disk: its frontier row becomes its pages row.  A page whose file was not
        written now (read back, or unchanged in an update) had no ``writing`` commit: *with_links*
        commits the links held with it."""
        if with_links:
            self._write_held()
        else:
            self._begin()
        if row is not None:
            self.db.execute("INSERT OR REPLACE INTO pages SELECT ?, request FROM frontier WHERE row = ?", (doc_id, row))
            self.db.execute("DELETE FROM frontier WHERE row = ?", (row,))
        next_doc_id = max(doc_id + 1, self._next_doc_id)
        self.db.execute("INSERT OR REPLACE INTO meta VALUES ('next_doc_id', ?)", (str(next_doc_id),))
        self.commit()
        self._next_doc_id = next_doc_id

    def finished(self, row: int | None) -> None:
        """The page of *row* is over (failed, or saved already)."""
        self._write_held()
        if row is not None:
            self.db.execute("DELETE FROM frontier WHERE row = ?", (row,))
        self.commit()

    def _write_held(self) -> None:
        """Open a transaction with the links held in it."""
        self._begin()
        if self._held_rows:
            self.db.executemany("INSERT INTO frontier (row, request) VALUES (?, ?)", self._held_rows.items())
            self._held_rows.clear()
        if self._held_seen:
            self.db.executemany("INSERT OR IGNORE INTO seen VALUES (?)", ((key,) for key in self._held_seen))
            self._held_seen.clear()

    def commit(self) -> None:
        if self._open:
            self.db.execute("COMMIT")
            self._open = False

    def close(self, *, remove: bool = False) -> None:
        """Commit and close; *remove* the files too (not when the commit failed)."""
        try:
            self.commit()
        finally:
            self.db.close()
        if remove:
            self._remove_files()

    def _remove_files(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            try:
                os.remove(str(self.path) + suffix)
            except FileNotFoundError:
                pass

    def _roll_back(self) -> None:
        """End the open transaction, if SQLite has not ended it already, keeping none of it."""
        self._open = False
        if self.db.in_transaction:
            try:
                self.db.execute("ROLLBACK")
            except sqlite3.Error:
                pass  # (nothing was committed: the state is as it was)

    def _begin(self) -> None:
        if not self._open:
            self.db.execute("BEGIN")
            self._open = True
