"""The document store beside an index: each page's URL, title, length and visible text.

``tse index`` writes it as ``INDEXFILE.docs``, an SQLite database, so that
search results get their titles and snippets, and BM25 its document lengths,
without reading pages.  It records the text index it was written with (size
and digest) and the page files it read (their sizes and modification times,
and the gone pages: a page's URL is not in the index); a store that does not
match both, or is missing (an index written by the reference indexer), is
rebuilt in memory from the pages.

For ``tse index --update`` it also records, per page indexed, its file's
size, mtime and inode and its distinct words (compressed): enough to tell
which pages changed and to remove a changed page's old postings without
reading the page again.  Gone pages have no row.
"""

from __future__ import annotations

import os
import sqlite3
import zlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, NamedTuple

from ..atomicfile import partial_path
from ..rules.files import pagedir
from ..rules.files.pagenotes import read_page_notes
from ..rules.text.pagefields import PageText
from ..rules.text.pagetext import page_title, visible_text
from ..rules.text.wordpass import word_counts  # (typed where compiled: words.word_counts)
from .pagecontent import readable
from .pagefiles import FileKey, PageScan, live_fingerprint

DOCS_SUFFIX = ".docs"
TEXT_LIMIT = 5_000  # characters of visible text kept a page, for snippets (about 800 words)
# The titles a reader keeps once read (``DocStore.titles``: a search's first pages', for its typed-title
# bonus, the same pages search after search; one statement a search saved, about 1 % of its
# instructions).  A title is cut to 300 characters: 20,000 of them take 7 MB in ASCII, 26 MB at most
# (a title of 300 emoji: 1,276 bytes; a crawled site chooses its titles).
TITLES_KEPT = 20_000
# The characters of the documents (URL, title and text) a reader keeps once read (``DocStore.documents``:
# the results' pages, read for their snippets; popular pages are results again and again): about 16 MB.
DOCUMENTS_KEPT_CHARACTERS = 8_000_000
# 2: the files table (what --update needs); 3: pages read in the WHATWG order (rules/text/encodings.py);
# 4: pages' text without their navigation (rules/text/pagetext.py); 5: a role read as its tag's first
# role attribute, and charset labels by WHATWG's table; 6: a role's tokens compared ASCII case-insensitively
FORMAT = "6"

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE docs (doc_id INTEGER PRIMARY KEY, url TEXT NOT NULL, title TEXT NOT NULL,
                   length INTEGER NOT NULL, text TEXT NOT NULL);
CREATE TABLE files (doc_id INTEGER PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
                    inode INTEGER NOT NULL, words BLOB NOT NULL);
-- Every page's length, read when a store is opened, from this index (a few pages) rather than from
-- each row of docs (a page each): 15 -> 5 ms for 20,000 pages.  A store without it reads the rows.
CREATE INDEX docs_lengths ON docs(doc_id, length);
"""


class Document(NamedTuple):
    """What a search result shows of a page (a named tuple: a page of results reads ten a request)."""

    doc_id: int
    url: str
    title: str  # "" when the page has none
    text: str  # the visible text, at most TEXT_LIMIT characters


def docs_path(indexfile: str | os.PathLike) -> Path:
    return Path(str(indexfile) + DOCS_SUFFIX)


@dataclass(frozen=True)
class Rows:
    """What the store records of one page: its ``docs`` row and, for --update, its ``files`` row."""

    doc: tuple[int, str, str, int, str]
    file: tuple[int, int, int, int, bytes] | None


# The most of a URL a message about another crawl's directory shows (``other_crawl``).
SHOWN_URL = 300


def other_crawl(indexfile: str | os.PathLike, directory: str | os.PathLike) -> str | None:
    """Why *directory* is not the crawl the index *indexfile* was written from, when its document store
    says so: the page file of the store's first, middle or last page names another URL, or is missing
    and not gone (``tse serve PAGEDIR INDEXFILE`` given another crawl's directory would answer with its
    pages for the index's, blank where it has none; one crawl's pages may begin another's).  None when
    they all agree, or when nothing tells (no store, one that cannot be read, a page file unreadable)."""
    try:
        db = _read_only(docs_path(indexfile))
        try:
            urls = db.execute(
                "SELECT doc_id, url FROM docs WHERE doc_id IN ((SELECT min(doc_id) FROM docs),"
                " (SELECT doc_id FROM docs ORDER BY doc_id LIMIT 1 OFFSET (SELECT count(*) / 2 FROM docs)),"
                " (SELECT max(doc_id) FROM docs)) ORDER BY doc_id"
            ).fetchall()
        finally:
            db.close()
    except sqlite3.Error:
        return None
    gone = pagedir.gone_docs(directory)
    for doc_id, url in urls:
        try:
            found = pagedir.read_page_url(directory, doc_id)
        except FileNotFoundError:
            if doc_id in gone:  # (gone since: the server leaves it out)
                continue
            return (
                f"{directory} is not the crawl {indexfile} was written from (it has no page {doc_id},"
                f" the index's {url!r})"
            )
        except OSError:
            continue
        if found != url and found != _url_line_read(url):
            return (
                f"{directory} is not the crawl {indexfile} was written from (its page {doc_id} is"
                f" {_shown_url(found)}, the index's {_shown_url(url)})"
            )
    return None


def _url_line_read(url: str) -> str:
    """What ``pagedir.read_page_url`` reads of a page file whose URL line is *url*: its first
    URL_LINE_BYTES (a page file made by hand or imported may hold a URL of megabytes)."""
    return url.encode("utf-8", "replace")[: pagedir.URL_LINE_BYTES].decode("utf-8", "replace")


def _shown_url(url: str) -> str:
    """*url* quoted for a message, cut past SHOWN_URL characters (it may be megabytes long)."""
    return repr(url) if len(url) <= SHOWN_URL else repr(url[:SHOWN_URL]) + "\u2026"


def _read_only(path: Path) -> sqlite3.Connection:
    """The store *path* opened read-only (by its file URI: a directory's name need not be UTF-8), for
    any thread (the server's reads run in threads); immutable, as the search index is
    (``fulltext.store.connect``): a store is never written in place."""
    return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True, check_same_thread=False)


def page_rows(
    doc_id: int,
    page: pagedir.Page,
    counts: Counter[bytes],
    key: FileKey | None,
    http_charset: str | None = None,
    read: PageText | None = None,
) -> Rows:
    """The rows of page *doc_id*, whose words the indexer counted as *counts*, read from a file with *key*
    (*http_charset*: the charset its HTTP header declared, ``rules/files/pagenotes.py``; *read*: the page
    decoded, ``rules.text.pagefields.page_text``, when the indexer has it)."""
    # A URL line that is not UTF-8 is shown as the querier shows it (U+FFFD for each bad byte).
    url = page.url.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if read is not None:
        title, text = read.title, read.visible_text(TEXT_LIMIT)
    else:  # cleaning only the text kept, not the whole page as page_text does
        title, text = page_title(page.body, http_charset), visible_text(page.body, TEXT_LIMIT, http_charset)
    doc = (doc_id, url, title, sum(counts.values()), text)
    if key is None:
        return Rows(doc, None)
    size, mtime_ns, inode = key
    # The distinct words, in the order the page first has them (deterministic: a fresh index and
    # an update write the same bytes); level 1 halves them at a fraction of the cost of level 6.
    words = zlib.compress(b" ".join(counts), 1)
    return Rows(doc, (doc_id, size, mtime_ns, _signed(inode), words))


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
            if self.path is not None:
                partial_path(self.path).unlink(missing_ok=True)
            raise

    def add(
        self,
        doc_id: int,
        page: pagedir.Page,
        counts: Counter[bytes],
        key: FileKey | None = None,
        http_charset: str | None = None,
    ) -> None:
        """Record page *doc_id* with its word *counts*; with its file's *key*, for --update too."""
        self.insert(page_rows(doc_id, page, counts, key, http_charset))

    def insert(self, rows: Rows) -> None:
        self.db.execute("INSERT INTO docs VALUES (?, ?, ?, ?, ?)", rows.doc)
        if rows.file is not None:
            self.db.execute("INSERT INTO files VALUES (?, ?, ?, ?, ?)", rows.file)

    def finish(self, index_size: int, index_digest: bytes, scan: PageScan | None = None) -> DocStore | None:
        """Record the index and the page files (*scan*, walked) the store belongs to;
        in memory, return the store, else put the file in place."""
        self.ready(index_size, index_digest, scan)
        if self.path is None:
            return DocStore(self.db)
        self.put_in_place()
        return None

    def ready(self, index_size: int, index_digest: bytes, scan: PageScan | None = None) -> None:
        """Record the index and the page files (*scan*, walked) the store belongs to, all of it
        written to the temporary file (closed), not yet in place (``put_in_place``)."""
        meta = {
            "format": FORMAT,
            "index_size": str(index_size),
            "index_digest": index_digest.hex(),
            "pages": scan.fingerprint() if scan else "",
            "last": str(scan.last if scan else 0),
        }
        self.db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", meta.items())
        self.db.commit()
        if self.path is not None:
            self.db.close()

    def put_in_place(self) -> None:
        assert self.path is not None
        os.replace(partial_path(self.path), self.path)

    def discard(self) -> None:
        """The temporary file removed (an error once it was ready, before it was put in place)."""
        self.db.close()
        if self.path is not None:
            partial_path(self.path).unlink(missing_ok=True)

    def __enter__(self) -> DocStoreWriter:
        return self

    def __exit__(self, kind: type | None, error: BaseException | None, traceback: TracebackType | None) -> None:
        if error is not None:
            self.discard()


class DocStore:
    """Reads a store: documents by docID, and what BM25 needs (N, dl, avgdl)."""

    def __init__(self, db: sqlite3.Connection, *, from_file: bool = False):
        self.db = db
        self.from_file = from_file  # else built in memory from the pages
        self._titles: dict[int, str] = {}  # the titles read (``titles``)
        self._documents: dict[int, Document] = {}  # the documents read (``documents``)
        self._documents_kept = 0  # their characters
        # Gone pages have no row: they are no document, and not counted in N nor avgdl.
        self.count(dict(db.execute("SELECT doc_id, length FROM docs")))

    def count(self, lengths: dict[int, int]) -> None:
        """Count the documents of *lengths* (docID: dl) as BM25 does (N, avgdl), and only those (a
        server leaves out the pages a crawl said gone since)."""
        self.lengths = lengths
        self.pages = len(lengths)
        self.average_length = sum(lengths.values()) / self.pages if self.pages else 0.0

    @classmethod
    def open(
        cls,
        indexfile: str | os.PathLike,
        index_size: int,
        index_digest: bytes,
        directory: str | os.PathLike,
        check_pages: bool = True,
    ) -> DocStore | str:
        """The store written with this index and these page files (not compared without
        *check_pages*), or why there is none (missing, stale, corrupt), for the user."""
        path = docs_path(indexfile)
        if not path.is_file():
            return f"no document store {path}"
        db = None
        try:
            db = _read_only(path)
            meta = dict(db.execute("SELECT key, value FROM meta"))
            store = cls(db, from_file=True)
            # A format 1 store has no gone pages: its docIDs are 1..N.
            last = int(meta.get("last", store.pages))
            if meta.get("index_size") != str(index_size) or meta.get("index_digest") != index_digest.hex():
                problem = f"{path} was not written with {indexfile}"
            elif check_pages and meta.get("pages") != live_fingerprint(directory, last):
                # The page files' sizes, times and inodes, as the store recorded them: a copy made
                # without the times (cp -r) is other files, whatever they hold.
                problem = (
                    f"the page files of {directory} are not those {path} was written with (changed since,"
                    " or copied without their times: cp -a keeps them)"
                )
            else:
                return store
        except (sqlite3.Error, ValueError) as error:
            problem = f"{path} cannot be read ({error})"
        if db is not None:
            db.close()
        return problem

    @classmethod
    def build(cls, directory: str | os.PathLike, index_size: int = 0, index_digest: bytes = b"") -> DocStore:
        """The store of the pages of *directory*, built in memory."""
        writer = DocStoreWriter(None)
        scan = PageScan(directory)
        notes = read_page_notes(directory)
        for found in scan.files():
            # The pages the indexer keeps (build_index): not gone, not noindex.
            if found.page is not None and found.page.url not in notes.noindex:
                read = readable(found.page, notes)  # a PDF as its text
                writer.add(found.doc_id, read.page, word_counts(read.page.body), None, read.charset)
        store = writer.finish(index_size, index_digest, scan)
        assert store is not None
        return store

    def urls(self, doc_ids: list[int]) -> dict[int, str]:
        """The URLs of the pages *doc_ids* that have a row, in a few statements (not one a page)."""
        return dict(self._rows("doc_id, url", doc_ids))

    def titles(self, doc_ids: list[int]) -> dict[int, str]:
        """The titles of the pages *doc_ids* that have a row ("" for none); those read kept (TITLES_KEPT)."""
        kept = self._titles
        missing = [doc_id for doc_id in doc_ids if doc_id not in kept]
        if missing:
            read = dict(self._rows("doc_id, title", missing))
            if len(kept) + len(read) <= TITLES_KEPT:
                kept.update(read)
            else:
                read.update((doc_id, kept[doc_id]) for doc_id in doc_ids if doc_id in kept)
                return {doc_id: read[doc_id] for doc_id in doc_ids if doc_id in read}
        return {doc_id: kept[doc_id] for doc_id in doc_ids if doc_id in kept}

    def document(self, doc_id: int) -> Document | None:
        row = self.db.execute("SELECT url, title, text FROM docs WHERE doc_id = ?", (doc_id,)).fetchone()
        return Document(doc_id, *row) if row else None

    def documents(self, doc_ids: list[int]) -> dict[int, Document]:
        """The documents of *doc_ids* that have a row, in a few statements (a page of results: one);
        those read kept (DOCUMENTS_KEPT_CHARACTERS)."""
        kept = self._documents
        missing = [doc_id for doc_id in doc_ids if doc_id not in kept]
        if not missing:
            return {doc_id: kept[doc_id] for doc_id in doc_ids}
        read = {row[0]: Document(*row) for row in self._rows("doc_id, url, title, text", missing)}
        for doc_id, document in read.items():
            size = len(document.url) + len(document.title) + len(document.text)
            if self._documents_kept + size <= DOCUMENTS_KEPT_CHARACTERS:
                kept[doc_id] = document
                self._documents_kept += size
        return {
            doc_id: kept[doc_id] if doc_id in kept else read[doc_id]
            for doc_id in doc_ids
            if doc_id in kept or doc_id in read
        }

    def _rows(self, columns: str, doc_ids: list[int]) -> Iterator[tuple[Any, ...]]:
        """The *columns* of the rows of *doc_ids*, 500 docIDs a statement."""
        for start in range(0, len(doc_ids), 500):
            chunk = doc_ids[start : start + 500]
            marks = ",".join("?" * len(chunk))
            yield from self.db.execute(f"SELECT {columns} FROM docs WHERE doc_id IN ({marks})", chunk)

    def close(self) -> None:
        self.db.close()


class DamagedStore(ValueError):
    """A page's rows of the document store cannot be read; the message is one short line."""

    @classmethod
    def of(cls, doc_id: int, error: Exception | str) -> DamagedStore:
        # (SQLite's message may quote a whole column: "Could not decode to UTF-8 column 'text' with text ...")
        said = (str(error).splitlines() or [type(error).__name__])[0]
        return cls(f"page {doc_id}: {said if len(said) <= 100 else said[:100] + '…'}")


class StoredPages:
    """What a format 2 store recorded of the pages it was written with, for ``tse index --update``."""

    def __init__(self, db: sqlite3.Connection, meta: dict[str, str]):
        self.db = db
        self.fingerprint = meta["pages"]
        self.last = int(meta["last"])
        self.keys: dict[int, FileKey] = {
            doc_id: (size, mtime_ns, _unsigned(inode))
            for doc_id, size, mtime_ns, inode in db.execute("SELECT doc_id, size, mtime_ns, inode FROM files")
        }

    @classmethod
    def open(cls, indexfile: str | os.PathLike, index_size: int, index_digest: bytes) -> StoredPages | str:
        """The record of the store beside *indexfile* if it was written with this index, else why not."""
        path = docs_path(indexfile)
        if not path.is_file():
            return f"no document store {path}"
        db = None
        try:
            db = _read_only(path)
            meta = dict(db.execute("SELECT key, value FROM meta"))
            if meta.get("format") != FORMAT:
                problem = f"{path} was written by an older tse index"
            elif meta.get("index_size") != str(index_size) or meta.get("index_digest") != index_digest.hex():
                problem = f"{path} does not match {indexfile}"
            else:
                return cls(db, meta)
        except (sqlite3.Error, KeyError, ValueError) as error:
            problem = f"{path} cannot be read ({error})"
        if db is not None:
            db.close()
        return problem

    def words(self, doc_id: int) -> list[bytes]:
        """The distinct words page *doc_id* had when indexed (DamagedStore on a damaged row)."""
        try:
            (blob,) = self.db.execute("SELECT words FROM files WHERE doc_id = ?", (doc_id,)).fetchone()
            text = zlib.decompress(blob)
        except (sqlite3.DatabaseError, zlib.error, TypeError) as error:  # (TypeError: no row)
            raise DamagedStore.of(doc_id, error) from None
        return text.split(b" ") if text else []

    def rows(self, doc_id: int) -> Rows:
        """The rows recorded for page *doc_id*, as they are (DamagedStore when they cannot be read)."""
        try:
            doc = self.db.execute("SELECT * FROM docs WHERE doc_id = ?", (doc_id,)).fetchone()
            file = self.db.execute("SELECT * FROM files WHERE doc_id = ?", (doc_id,)).fetchone()
        except sqlite3.DatabaseError as error:
            raise DamagedStore.of(doc_id, error) from None
        if doc is None or file is None:
            raise DamagedStore.of(doc_id, "no row")
        return Rows(doc, file)

    def close(self) -> None:
        self.db.close()


# SQLite integers are signed 64-bit; an inode may use all 64 bits.
def _signed(number: int) -> int:
    return number - (1 << 64) if number >= 1 << 63 else number


def _unsigned(number: int) -> int:
    return number + (1 << 64) if number < 0 else number
