"""Answers the processes of one ``tse serve`` share: an answer one of them made, sent by any.

Each process keeps the answers it sent (``answercache``), but a reader's
kept-alive connection stays with one process: a search another process
answered was made again (with two processes, half of the searches asked
again).  Here the processes share them as well, in an SQLite file (WAL: the
readers never wait for a writer) in a directory of the server's own, made by
the process that starts the others and removed when it stops; its name says
that process's ID, so a server killed outright leaves one that the next
server started removes.  (Python's shared memory would need a hash table,
an allocator and locks that outlive a killed process written here; SQLite is
all three, well kept, and a look-up costs about 20 us, an answer made 2 to 6 ms.)

An answer is found by a digest of what it is made of: the request (as the
process's own cache keys it) and the files the process answers from
(``ServedIndex.version``: the index's and the gone list's), so an answer made
from another index is never sent.  The file's size is bounded (SQLite's
``max_page_count``): an answer that would pass the bound pushes out the
oldest ones, and one that cannot be kept is not.  Whatever goes wrong with the
file (removed, a full disk) is said once by the process and it goes on with
its own answers alone.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import sqlite3
import tempfile
from pathlib import Path

from .answercache import Key

logger = logging.getLogger(__name__)

PREFIX = "tse-serve-answers-"
NAME = "answers.sqlite"
# SQLite's pages of the file: its bound is the answers' bytes and this share more (its b-tree, pages
# partly filled); the write-ahead log is kept to a few MB besides (journal_size_limit).
PAGE_SIZE = 4096
ROOM = 1.25
WAL_BYTES = 4 * 1024 * 1024
# What a row costs beyond its body and headers (its digest, size and the b-tree's record), counted
# against the bound.
ROW_BYTES = 64
# How long a process waits for another's write before it leaves an answer unkept (a look-up never waits).
BUSY_MILLISECONDS = 20


class SharedAnswers:
    """The answers of a server's processes, in *directory* (``create``), at most *limit_bytes*."""

    def __init__(self, directory: Path, limit_bytes: int):
        self.directory = directory
        self.limit_bytes = limit_bytes
        self._db: sqlite3.Connection | None = None
        self._pid = 0  # the process the connection is open in (one must not cross a fork)
        self._broken = False

    @classmethod
    def create(cls, limit_bytes: int, root: str | None = None) -> SharedAnswers | None:
        """A store of its own for a server starting now, in a new directory of *root* (shared memory,
        ``/dev/shm``, where there is one; else the system's temporary directory); None when none
        can be made (said in one line: the processes keep their own answers)."""
        root = root or ("/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None)
        remove_stale(root or tempfile.gettempdir())
        try:
            directory = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-", dir=root))
        except OSError as error:
            logger.warning("tse serve: the processes cannot share their answers (%s): each keeps its own", error)
            return None
        store = cls(directory, limit_bytes)
        try:
            with contextlib.closing(store._connect(create=True)):
                pass
        except sqlite3.Error as error:
            logger.warning("tse serve: the processes cannot share their answers (%s): each keeps its own", error)
            store.remove()
            return None
        return store

    def remove(self) -> None:
        """Remove the store (the server stops)."""
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None
        shutil.rmtree(self.directory, ignore_errors=True)

    def answer(self, key: Key, version: str) -> tuple[bytes, list[tuple[bytes, bytes]]] | None:
        """The body and headers kept for *key* made from the files of *version*, or None."""
        db = self._connection()
        if db is None:
            return None
        try:
            row = db.execute("SELECT body, headers FROM answers WHERE digest = ?", (_digest(key, version),)).fetchone()
        except sqlite3.Error as error:
            self._failed(error)
            return None
        if row is None:
            return None
        body, headers = row
        return bytes(body), _headers(bytes(headers))

    def keep(self, key: Key, version: str, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
        """Keep an answer, the oldest ones pushed out as the bound needs; not when another process is
        writing for longer than BUSY_MILLISECONDS, nor one larger than a sixteenth of the bound."""
        db = self._connection()
        if db is None:
            return
        listed = b"\r\n".join(name + b": " + value for name, value in headers)
        size = len(body) + len(listed) + ROW_BYTES
        if size * 16 > self.limit_bytes:
            return
        row = (_digest(key, version), body, listed, size)
        try:
            try:
                self._insert(db, row, 0)
            except sqlite3.OperationalError as error:
                if "full" not in str(error):
                    raise
                # SQLite's pages at their bound before the bytes counted are (answers of a little more
                # than half a page take one each): a quarter of the bound pushed out, and once more.
                self._insert(db, row, self.limit_bytes // 4)
        except sqlite3.OperationalError as error:
            # Busy (another process writing), or full again: not kept.
            if "locked" not in str(error) and "full" not in str(error):
                self._failed(error)
        except sqlite3.Error as error:
            self._failed(error)

    def _insert(self, db: sqlite3.Connection, row: tuple[bytes, bytes, bytes, int], more: int) -> None:
        """Keep *row*, pushing out the oldest answers first as the bound needs, and *more* bytes."""
        size = row[3]
        with db:  # one transaction
            db.execute("BEGIN IMMEDIATE")
            (kept,) = db.execute("SELECT bytes FROM kept").fetchone()
            if kept + size + more > self.limit_bytes:
                kept -= _pushed_out(db, kept + size + more - self.limit_bytes)
            inserted = db.execute(
                "INSERT OR IGNORE INTO answers (digest, body, headers, size) VALUES (?, ?, ?, ?)", row
            ).rowcount
            db.execute("UPDATE kept SET bytes = ?", (kept + size * inserted,))

    def _connection(self) -> sqlite3.Connection | None:
        if self._broken:
            return None
        if self._db is None or self._pid != os.getpid():
            try:
                self._db, self._pid = self._connect(), os.getpid()
            except sqlite3.Error as error:
                self._failed(error)
                return None
        return self._db

    def _connect(self, create: bool = False) -> sqlite3.Connection:
        path = self.directory / NAME
        if not create and not path.is_file():
            raise sqlite3.OperationalError(f"no {path}")
        db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=BUSY_MILLISECONDS / 1000)
        try:
            db.execute(f"PRAGMA page_size = {PAGE_SIZE}")
            db.execute("PRAGMA journal_mode = WAL").fetchone()
            db.execute("PRAGMA synchronous = OFF")  # (a cache: lost with the machine, as it would be anyway)
            db.execute(f"PRAGMA journal_size_limit = {WAL_BYTES}")
            db.execute(f"PRAGMA max_page_count = {max(16, int(self.limit_bytes * ROOM) // PAGE_SIZE)}")
            if create:
                db.execute(
                    "CREATE TABLE answers (id INTEGER PRIMARY KEY, digest BLOB UNIQUE NOT NULL,"
                    " body BLOB NOT NULL, headers BLOB NOT NULL, size INTEGER NOT NULL)"
                )
                db.execute("CREATE TABLE kept (bytes INTEGER NOT NULL)")
                db.execute("INSERT INTO kept VALUES (0)")
        except BaseException:
            db.close()
            raise
        return db

    def _failed(self, error: sqlite3.Error) -> None:
        """Said once by this process, which then keeps its own answers only."""
        logger.warning("tse serve: the answers the processes share cannot be used (%s): this one keeps its own", error)
        self._broken = True
        if self._db is not None:
            with contextlib.suppress(sqlite3.Error):
                self._db.close()
            self._db = None


def _pushed_out(db: sqlite3.Connection, needed: int) -> int:
    """Remove the oldest answers until *needed* bytes are freed (or none is left): the bytes freed."""
    freed = 0
    last = None
    for row_id, size in db.execute("SELECT id, size FROM answers ORDER BY id"):
        if freed >= needed:
            break
        freed, last = freed + size, row_id
    if last is not None:
        db.execute("DELETE FROM answers WHERE id <= ?", (last,))
    return freed


def _digest(key: Key, version: str) -> bytes:
    path, query, language = key
    digest = hashlib.blake2b(digest_size=16)
    for part in (version.encode(), _encoded(path), query, _encoded(language)):
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)
    return digest.digest()


def _encoded(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _headers(listed: bytes) -> list[tuple[bytes, bytes]]:
    headers = []
    for line in listed.split(b"\r\n") if listed else ():
        name, _, value = line.partition(b": ")
        headers.append((name, value))
    return headers


def remove_stale(root: str) -> None:
    """Remove the stores in *root* of servers that are gone (killed: the stores they made stayed), the
    current user's only."""
    try:
        names = os.listdir(root)
    except OSError:
        return
    for name in names:
        if not name.startswith(PREFIX):
            continue
        pid = name[len(PREFIX) :].partition("-")[0]
        path = os.path.join(root, name)
        try:
            owned = os.lstat(path).st_uid == os.getuid()
        except OSError:
            continue
        if owned and pid.isdigit() and not _runs(int(pid)):
            shutil.rmtree(path, ignore_errors=True)


def _runs(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
