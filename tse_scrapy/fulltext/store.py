"""The search index file, ``INDEXFILE.search``: an SQLite database with an FTS5 table.

Written by ``tse index`` beside the SPEC index (which stays exactly the
reference's).  Its tables:

- ``fields``: each page's language and fields as index terms (``rules.pagefields``),
  the body compressed, and the anchor terms it was indexed with: FTS5 is
  contentless here (no second copy of the text), and removing a page's row
  needs the values it was inserted with;
- ``links``: each page's links (target URL, anchor terms), so that the anchor
  text of a page can be gathered from the pages linking to it, and gathered
  again when one of those changes;
- ``vocabulary``: the words (folded, unstemmed, of 5 characters or more) the
  pages hold, for typo tolerance and "did you mean";
- ``fts``: the FTS5 table of the five fields, terms as the analyzer wrote them
  (the ``ascii`` tokenizer only splits them at the spaces);
- ``meta``: the SPEC index it was written with (size and digest) and the
  languages of its pages.

Written whole into ``.NAME.partial`` and renamed into place; ``update``
applies the changes of ``tse index --update`` to a copy, renamed likewise.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import zlib
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

from ..atomicfile import partial_path
from ..rules.pagefields import PageFields

SEARCH_SUFFIX = ".search"
FORMAT = "1"
FIELDS = ("title", "headings", "url", "anchors", "body")
# The anchor terms gathered for a page: from its first linking pages, at most this many terms
# (a link in every page's menu must not make one page's anchors the size of the site).
ANCHOR_TERMS = 2_000

_SCHEMA = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE fields (doc_id INTEGER PRIMARY KEY, url TEXT NOT NULL, lang TEXT NOT NULL, title TEXT NOT NULL,
                     headings TEXT NOT NULL, url_terms TEXT NOT NULL, anchors TEXT, body BLOB NOT NULL);
CREATE TABLE links (source INTEGER NOT NULL, seq INTEGER NOT NULL, target TEXT NOT NULL, terms TEXT NOT NULL,
                    PRIMARY KEY (source, seq)) WITHOUT ROWID;
CREATE INDEX links_by_target ON links (target, source, seq);
CREATE TABLE vocabulary (word TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE VIRTUAL TABLE fts USING fts5({", ".join(FIELDS)}, content='', tokenize='ascii');
"""


def search_path(indexfile: str | os.PathLike) -> Path:
    return Path(str(indexfile) + SEARCH_SUFFIX)


class SearchIndexWriter:
    """Writes a search index whole: pages are added in docID order, ``finish`` gathers each page's
    anchor text, fills the FTS5 table and puts the file in place."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        partial = partial_path(self.path)
        partial.unlink(missing_ok=True)
        self.db = sqlite3.connect(partial, check_same_thread=False)
        try:
            _fast_writes(self.db)
            self.db.executescript(_SCHEMA)
        except sqlite3.Error:
            self.db.close()
            raise

    def add(self, doc_id: int, url: str, fields: PageFields) -> None:
        _insert_page(self.db, doc_id, url, fields)

    def finish(self, index_size: int, index_digest: bytes) -> None:
        """Fill the FTS5 table, record the SPEC index the search index belongs with, put it in place."""
        rows = self.db.execute("SELECT doc_id FROM fields ORDER BY doc_id").fetchall()
        _index_pages(self.db, [doc_id for (doc_id,) in rows])
        _write_meta(self.db, index_size, index_digest)
        self.db.commit()
        self.db.execute("INSERT INTO fts(fts) VALUES ('optimize')")
        self.db.commit()
        self.db.close()
        os.replace(partial_path(self.path), self.path)

    def __enter__(self) -> SearchIndexWriter:
        return self

    def __exit__(self, kind: type | None, error: BaseException | None, traceback: TracebackType | None) -> None:
        if error is not None:
            self.db.close()
            partial_path(self.path).unlink(missing_ok=True)


def update(
    indexfile: str | os.PathLike,
    old: tuple[int, bytes],
    new: tuple[int, bytes],
    removed: Iterable[int],
    added: dict[int, tuple[str, PageFields]],
) -> str | None:
    """Apply an update to the search index beside *indexfile*, written with the SPEC index *old*
    (size, digest), for the SPEC index *new*: the pages *removed* (gone or changed) lose their rows,
    the pages *added* (new or changed: URL and fields) gain theirs, and every page whose anchor text
    changed with them is indexed again.  The result answers every query as a full build does.

    Returns why it cannot (missing, of another index: nothing written), else None."""
    path = search_path(indexfile)
    problem = check(path, *old)
    if problem:
        return problem
    partial = partial_path(path)
    shutil.copyfile(path, partial)
    db = sqlite3.connect(partial, check_same_thread=False)
    try:
        _fast_writes(db)
        removed = sorted(set(removed))
        touched_targets: set[str] = set()
        for doc_id in removed:
            touched_targets.update(target for (target,) in db.execute("SELECT target FROM links WHERE source = ?", (doc_id,)))
            _delete_page(db, doc_id)
        for doc_id in sorted(added):
            url, fields = added[doc_id]
            _insert_page(db, doc_id, url, fields)
            touched_targets.update(target for target, _ in fields.links)
        # The pages whose anchors may have changed: those the removed and added pages link(ed) to.
        again = set(added)
        for target in touched_targets:
            for (doc_id,) in db.execute("SELECT doc_id FROM fields WHERE url = ?", (target,)):
                if doc_id not in added:
                    again.add(doc_id)
        changed = []
        for doc_id in sorted(again):
            stored = db.execute("SELECT anchors FROM fields WHERE doc_id = ?", (doc_id,)).fetchone()
            if doc_id in added or stored[0] != _anchors(db, doc_id):
                if doc_id not in added:
                    _delete_fts_row(db, doc_id)
                changed.append(doc_id)
        _index_pages(db, changed)
        _write_meta(db, *new)
        db.commit()
    except BaseException:
        db.close()
        partial.unlink(missing_ok=True)
        raise
    db.close()
    os.replace(partial, path)
    return None


def check(path: Path, index_size: int, index_digest: bytes) -> str | None:
    """Why the search index *path* is not the one of that SPEC index, or None when it is."""
    if not path.is_file():
        return f"no search index {path}"
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            meta = dict(db.execute("SELECT key, value FROM meta"))
        finally:
            db.close()
    except sqlite3.Error as error:
        return f"{path} cannot be read ({error})"
    if meta.get("format") != FORMAT:
        return f"{path} was written by another version of tse index"
    if meta.get("index_size") != str(index_size) or meta.get("index_digest") != index_digest.hex():
        return f"{path} does not match the index"
    return None


def _fast_writes(db: sqlite3.Connection) -> None:
    # The file is a partial one, renamed into place when whole: a crash leaves only a partial file.
    db.execute("PRAGMA journal_mode=OFF")
    db.execute("PRAGMA synchronous=OFF")
    db.execute("PRAGMA cache_size=-32000")


def _insert_page(db: sqlite3.Connection, doc_id: int, url: str, fields: PageFields) -> None:
    body = zlib.compress(fields.body.encode("utf-8"), 1)
    db.execute(
        "INSERT INTO fields VALUES (?, ?, ?, ?, ?, ?, NULL, ?)",
        (doc_id, url, fields.language, fields.title, fields.headings, fields.url, body),
    )
    db.executemany(
        "INSERT INTO links VALUES (?, ?, ?, ?)",
        [(doc_id, seq, target, terms) for seq, (target, terms) in enumerate(fields.links)],
    )
    db.executemany("INSERT OR IGNORE INTO vocabulary VALUES (?)", [(word,) for word in sorted(fields.vocabulary)])


def _anchors(db: sqlite3.Connection, doc_id: int) -> str:
    """The anchor terms of the links to page *doc_id* from other pages, in the order of those pages."""
    gathered: list[str] = []
    size = 0
    rows = db.execute(
        "SELECT links.terms FROM fields AS page JOIN links ON links.target = page.url "
        "WHERE page.doc_id = ? AND links.source != ? ORDER BY links.source, links.seq",
        (doc_id, doc_id),
    )
    for (terms,) in rows:
        count = terms.count(" ") + 1
        if size + count > ANCHOR_TERMS:
            break
        gathered.append(terms)
        size += count
    return " ".join(gathered)


def _index_pages(db: sqlite3.Connection, doc_ids: list[int]) -> None:
    """Gather the anchors of pages *doc_ids* and add them to the FTS5 table."""
    for doc_id in doc_ids:
        anchors = _anchors(db, doc_id)
        db.execute("UPDATE fields SET anchors = ? WHERE doc_id = ?", (anchors, doc_id))
        title, headings, url_terms, body = db.execute(
            "SELECT title, headings, url_terms, body FROM fields WHERE doc_id = ?", (doc_id,)
        ).fetchone()
        db.execute(
            "INSERT INTO fts(rowid, title, headings, url, anchors, body) VALUES (?, ?, ?, ?, ?, ?)",
            (doc_id, title, headings, url_terms, anchors, zlib.decompress(body).decode("utf-8")),
        )


def _delete_fts_row(db: sqlite3.Connection, doc_id: int) -> None:
    row = db.execute(
        "SELECT title, headings, url_terms, anchors, body FROM fields WHERE doc_id = ?", (doc_id,)
    ).fetchone()
    if row is None or row[3] is None:  # never indexed
        return
    title, headings, url_terms, anchors, body = row
    db.execute(
        "INSERT INTO fts(fts, rowid, title, headings, url, anchors, body) VALUES ('delete', ?, ?, ?, ?, ?, ?)",
        (doc_id, title, headings, url_terms, anchors, zlib.decompress(body).decode("utf-8")),
    )


def _delete_page(db: sqlite3.Connection, doc_id: int) -> None:
    _delete_fts_row(db, doc_id)
    db.execute("DELETE FROM fields WHERE doc_id = ?", (doc_id,))
    db.execute("DELETE FROM links WHERE source = ?", (doc_id,))


def _write_meta(db: sqlite3.Connection, index_size: int, index_digest: bytes) -> None:
    languages = sorted(language for (language,) in db.execute("SELECT DISTINCT lang FROM fields") if language)
    meta = {
        "format": FORMAT,
        "index_size": str(index_size),
        "index_digest": index_digest.hex(),
        "languages": " ".join(languages),
    }
    db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", meta.items())
