"""The search index file, ``INDEXFILE.search``: an SQLite database of FTS5 tables and tables beside them.

Written by ``tse index`` beside the SPEC index (which stays exactly the
reference's).  Its tables:

- ``fts``: a page's title, headings, URL words and body, as index terms
  (``rules.text.pagefields``; the ``ascii`` tokenizer only splits them at the
  spaces), for matching and the body's score.  Contentless, with deletes
  (``contentless_delete``, SQLite 3.43): the text is not stored at all, and a
  page's rows are deleted by its docID;
- ``phrases_fts``: the title's and body's words again, unstemmed (accents
  folded), for quoted phrases, which match the words as typed; and
  ``characters``, each character of a bigram script the page holds, once,
  so that a query of one such character finds, and ``-c`` leaves out, a
  page holding it at a run's end, where it starts no bigram (not in
  ``fts``: its tokens would change the pages' lengths, and scores);
- ``titles_fts``: the title again, scored apart: its own length and document
  frequencies (a word on every page is rare in titles), as BM25F normalizes
  each field by its own length;
- ``pages``: each page's URL, language and title terms;
- ``anchors_fts`` and ``anchors``: the anchor text of the links from other
  pages to a page (gathered once every page is read, so the big table is
  filled as pages come in), and its terms (scored in Python: ``searcher.KeptField``);
- ``links``: each page's links (target URL, anchor terms), compressed, so that
  anchors can be gathered again when pages change;
- ``beyond_fts``: the terms and words of a long page past its body's bounds
  (``pagefields.BEYOND_CHARACTERS``), for exclusions only;
- ``same``: each page's content digest (of its title's and body's words) and
  the canonical URL it names (noted at crawl time), and ``groups``: for each
  page in a group of duplicates (same digest, or joined by a canonical URL
  naming another page of the index), the page that stands for the group in
  results (``rules.web.duplicates.duplicate_groups``), worked out again whenever
  pages change;
- ``vocabulary``: the words (folded, unstemmed, of 5 characters or more) of
  the pages' titles and bodies, for typo tolerance and "did you mean": how the
  first page holding a word spells it, and that page's docID (an update
  finds a word's first page again when that page changes or goes), and
  ``respellings``: each page's words that it spells otherwise (accents, ß),
  with their spellings there, from which an update takes a word's spelling
  on its new first page (and "Did you mean" the spelling of a word one letter
  shorter than the vocabulary's, on the first page holding it);
- ``heads``: what a snippet reads first of a page's stored text whatever the
  query, its terms and where they stand (``rules.queries.searchsnippet.snippet_head``);
- ``rests``: the visible text past the document store's (``pagefields.REST_CHARACTERS``
  more), compressed, for the snippet of a page that matches only there
  (``searchsnippet.later_snippet``);
- ``term_counts``: how many pages hold each term of ``fts``, ``titles_fts`` and
  ``anchors_fts`` (``_count_terms``);
- ``meta``: the SPEC index it was written with (size and digest), the text
  analysis that made its terms (``analysis.ANALYSIS_VERSION``: another one's
  terms would not meet this one's queries, nor an update's pages the others)
  and the languages of its pages.

Written whole into ``.NAME.partial`` and renamed into place; ``prepare_update``
applies the changes of ``tse index --update`` to a copy, renamed likewise
(``PreparedUpdate.put_in_place``): FTS5 keeps its statistics (pages, lengths,
document frequencies) exact through deletions, and the vocabulary is made
what a full build's is (``_update_vocabulary``), so an updated index answers
as a full build does.

Written and read with apsw's SQLite: the system's (Python's ``sqlite3``, 3.40
on Debian 12) has no ``contentless_delete``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import operator
import os
import pickle
import shutil
import threading
import zlib
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import NamedTuple

import apsw

from ..atomicfile import create_new, open_partial, partial_path, put_in_place
from ..rules.queries.searchsnippet import snippet_head
from ..rules.text.analysis import ANALYSIS_VERSION
from ..rules.text.pagefields import PageFields, PageText
from ..rules.web.duplicates import EMPTY_DIGEST, agreed_canonical, duplicate_groups, words_digest

SEARCH_SUFFIX = ".search"
# 2: phrases_fts, beyond_fts, pages_by_language; 3: pages read in the WHATWG order; 4: same, groups;
# 5: heads; 6: heads as terms and places, for text in any script; 7: contentless_delete FTS5 tables, no
# copy of what they were given (pages' bodies, beyond); 8: phrases_fts's ends column (characters ending
# a run); 9: its characters column instead (every character of a bigram script); 10: rests, and
# the pages' digests of their words as they are (duplicates.words_digest); 11: the vocabulary's first
# pages, and respellings (an update's vocabulary is a full build's); 12: respellings of words one
# letter shorter than the vocabulary's too (a correction to one spelled as the page spells it); 13: a
# page whose text is too short to tell its language has the one its URL names (pagefields.url_language);
# 14: pages' text, headings and heads without their navigation (pagetext.shown_text); 15: a role read
# as its tag's first role attribute, and charset labels by WHATWG's table (rot13, cp037 ... unknown);
# 16: a role's tokens compared ASCII case-insensitively, split at ASCII whitespace only (`NaviGation`)
FORMAT = "16"
FIELDS = ("title", "headings", "url", "body")
# The anchor terms gathered for a page: from its first linking pages, at most this many terms
# (a link in every page's menu must not make one page's anchors the size of the site).
ANCHOR_TERMS = 2_000
# The anchor texts held while they are gathered, in characters, at most: then written to a temporary
# table, each page's as one piece, and joined page by page at the end (``_gather_anchors``).
ANCHORS_HELD = 8_000_000
# A page's anchor texts are joined every this many while they are held: one string object, not one an
# anchor text (the 20,000-page bench: 1,674 pages linked to, 900,000 links; peak -43 MB).
ANCHORS_JOINED = 64

# The vocabulary's words as pages are added: a word -> (its spelling, the docID of the page it was met
# on first).
Spellings = dict[str, tuple[str, int]]

# No copy of the text kept, by FTS5 or beside it: FTS5 deletes a row by its docID.
_CONTENTLESS = "content='', contentless_delete=1, tokenize='ascii'"
_SCHEMA = f"""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE pages (doc_id INTEGER PRIMARY KEY, url TEXT NOT NULL, lang TEXT NOT NULL, title TEXT NOT NULL);
CREATE INDEX pages_by_url ON pages (url);
CREATE INDEX pages_by_language ON pages (lang);
CREATE TABLE anchors (doc_id INTEGER PRIMARY KEY, terms TEXT NOT NULL);
CREATE TABLE links (source INTEGER PRIMARY KEY, links BLOB NOT NULL);
CREATE TABLE vocabulary (word TEXT PRIMARY KEY, spelling TEXT NOT NULL, doc_id INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE respellings (doc_id INTEGER PRIMARY KEY, words TEXT NOT NULL);
CREATE TABLE same (doc_id INTEGER PRIMARY KEY, digest TEXT NOT NULL, canonical TEXT NOT NULL);
CREATE TABLE groups (doc_id INTEGER PRIMARY KEY, representative INTEGER NOT NULL);
CREATE TABLE heads (doc_id INTEGER PRIMARY KEY, head BLOB NOT NULL);
CREATE TABLE rests (doc_id INTEGER PRIMARY KEY, rest BLOB NOT NULL);
CREATE VIRTUAL TABLE fts USING fts5({", ".join(FIELDS)}, {_CONTENTLESS});
CREATE VIRTUAL TABLE phrases_fts USING fts5(title, body, characters, {_CONTENTLESS});
CREATE VIRTUAL TABLE titles_fts USING fts5(title, {_CONTENTLESS});
CREATE VIRTUAL TABLE anchors_fts USING fts5(anchors, {_CONTENTLESS});
CREATE VIRTUAL TABLE beyond_fts USING fts5(terms, words, {_CONTENTLESS});
"""
FTS_TABLES = ("fts", "phrases_fts", "titles_fts", "anchors_fts", "beyond_fts")
# The tables besides FTS_TABLES every search reads (a search does without heads or rests: unmarked snippets).
_SEARCHED_TABLES = ("pages", "vocabulary")
# Those filled as pages are added (anchors_fts is filled once every page is: ``prepare``).
PAGES_FTS_TABLES = tuple(table for table in FTS_TABLES if table != "anchors_fts")
# The tables whose terms' page counts are kept in term_counts (``_count_terms``), and the meta key
# naming what they were counted from (``counted_key``).
COUNTED_TABLES = ("fts", "titles_fts", "anchors_fts")
COUNTED_WITH = "terms_counted_with"
# The row of an FTS5 table's %_data table holding its structure (FTS5_STRUCTURE_ROWID in fts5_index.c).
_FTS5_STRUCTURE = 10


def search_path(indexfile: str | os.PathLike) -> Path:
    return Path(str(indexfile) + SEARCH_SUFFIX)


class PackedPage(NamedTuple):
    """A page's fields as the writer inserts them, made in the indexing worker (``packed``): its links
    compressed as the links table keeps them, the content digest and the snippet's head, so that the
    writer, one process for all the workers, does only what must be done once."""

    fields: PageFields  # links left empty: they are below
    links: bytes  # "target\tterms" lines, compressed; b"" for no links
    digest: str
    head: bytes  # the snippet's head of the page's stored text (searchsnippet.Head.packed), b"" for none
    rest: bytes = b""  # the text past the stored text (PageText.text_past), compressed; b"" for none

    def links_listed(self) -> list[tuple[str, str]]:
        return _decode_links(self.links) if self.links else []


def packed(fields: PageFields, text: str, read: PageText, *, compressed: bool = False) -> bytes:
    """*fields* as a ``PackedPage``, pickled for the trip from an indexing worker to the writer (its
    text as UTF-8, about 40 KB a wikipedia page); *compressed* for one kept a while (an update holds
    every changed page's: a third of that); *text*: the page's text as the document store keeps it,
    which results show; *read*: the page as read (``page_text``), whose text past *text* is kept."""
    head = snippet_head(text, fields.language or None)
    rest = read.text_past(text)
    listed = "\n".join(f"{target}\t{terms}" for target, terms in fields.links)
    page = PackedPage(
        dataclasses.replace(fields, links=()),
        _compressed(listed) if listed else b"",
        words_digest(fields.title_words, fields.body_words),
        head.packed() if head is not None else b"",
        _compressed(rest) if rest else b"",
    )
    blob = pickle.dumps(page, pickle.HIGHEST_PROTOCOL)
    return zlib.compress(blob, 1) if compressed else blob


def unpacked(blob: bytes) -> PackedPage:
    """The page ``packed`` made (in a worker process of this indexer: never read from outside)."""
    # A pickle (protocol 2 and up) starts with 0x80, a zlib stream of ours with 0x78.
    if blob[:1] != b"\x80":
        blob = zlib.decompress(blob)
    # Bytes of our own worker, through its pipe (which multiprocessing pickles anyway).
    page = pickle.loads(blob)
    assert isinstance(page, PackedPage)
    return page


class SearchIndexWriter:
    """Writes a search index whole: pages are added in docID order; ``finish`` gathers each page's
    anchor text and puts the file in place."""

    def __init__(self, path: str | os.PathLike, canonicals: dict[str, str] | None = None):
        """*canonicals*: URL -> the canonical URL the page's Link headers name (``rules/files/pagenotes.py``)."""
        self.path = Path(path)
        self.canonicals = canonicals or {}
        self._prepared = False
        self._closed = False  # (by ``ready``)
        partial = partial_path(self.path)
        os.close(create_new(partial))  # (a link left at its name unlinked, not written through)
        self.db = connect(partial, writable=True)
        try:
            _fast_writes(self.db)
            self.db.execute(_SCHEMA)
            _merges_left_to_the_end(self.db)
            self.db.execute("BEGIN")  # one transaction: the file is a partial one until renamed
        except apsw.Error:
            self.db.close()
            partial.unlink(missing_ok=True)
            raise

    def add(self, doc_id: int, url: str, page: PackedPage) -> None:
        """Page *doc_id* with its respellings; its vocabulary's words are given apart (``add_vocabulary``)."""
        _insert_page(self.db, doc_id, url, page, self.canonicals.get(url))

    def add_vocabulary(self, spellings: Spellings) -> None:
        """Words of the pages added, in docID order (word: its spelling and page), a word's first kept."""
        _insert_vocabulary(self.db, spellings)

    def prepare(self, merged: tuple[str, ...] = ()) -> None:
        """Gather the anchors, group the duplicates, merge (the FTS5 tables but those *merged*
        already) and count, and write it all to the partial file: what can fail (a full disk) done
        before the SPEC index is put in place."""
        _index_anchors(self.db, _gather_anchors(self.db, None))
        _group_duplicates(self.db)
        _merge_segments(self.db, tuple(table for table in FTS_TABLES if table not in merged))
        _count_terms(self.db)
        self.db.execute("COMMIT")
        self._prepared = True

    @contextmanager
    def preparing(self, on_error: Callable[[], object] = lambda: None) -> Iterator[Callable[[], None]]:
        """``prepare`` begun beside the caller's own work (the SPEC index's merge): within, the
        segments of the tables of the pages (all there are once every page is added) are merged in a
        thread, SQLite's work, which runs without the GIL, on the second core.  The function given
        waits for it (raising its error) and does the rest of ``prepare``.  Left with an error,
        *on_error* is called (the indexer's: Ctrl-C ignored from then on), and the thread stops after
        the table it is merging, its statement interrupted, and is waited for: nothing uses the file
        once this is left."""
        stopping = threading.Event()

        def merge() -> None:
            for table in PAGES_FTS_TABLES:
                if stopping.is_set():
                    return
                _merge_segments(self.db, (table,))

        with ThreadPoolExecutor(1, thread_name_prefix="search-index") as executor:
            merging = executor.submit(merge)

            def prepare() -> None:
                merging.result()
                self.prepare(merged=PAGES_FTS_TABLES)

            try:
                yield prepare
            except BaseException:
                on_error()
                stopping.set()
                # (From any thread.)  A statement at work stops; between two, the next is not begun.  Not
                # once ``ready`` closed the connection (a file of the index could not be put in place): it
                # would raise, and hide the error to tell.
                if not self._closed:
                    self.db.interrupt()
                raise

    def finish(self, index_size: int, index_digest: bytes) -> None:
        """Record the SPEC index the search index belongs with (``prepare`` first), put it in place."""
        self.ready(index_size, index_digest)
        self.put_in_place()

    def ready(self, index_size: int, index_digest: bytes) -> None:
        """Record the SPEC index the search index belongs with (``prepare`` first), all of it written to
        the partial file (closed), not yet in place (``put_in_place``)."""
        if not self._prepared:
            self.prepare()
        with self.db:  # a transaction
            _write_meta(self.db, index_size, index_digest)
        self.db.close()
        self._closed = True

    def put_in_place(self) -> None:
        put_in_place(partial_path(self.path), self.path)

    def __enter__(self) -> SearchIndexWriter:
        return self

    def __exit__(self, kind: type | None, error: BaseException | None, traceback: TracebackType | None) -> None:
        if error is not None:
            self.db.close()
            partial_path(self.path).unlink(missing_ok=True)


@dataclasses.dataclass(frozen=True)
class PreparedUpdate:
    """An updated search index written whole to its partial file, not yet in place."""

    partial: Path
    path: Path

    def put_in_place(self) -> None:
        put_in_place(self.partial, self.path)

    def discard(self) -> None:
        self.partial.unlink(missing_ok=True)


# The search index is copied for an update this many bytes at a time.
COPY_BYTES = 1 << 20


def prepare_update(
    indexfile: str | os.PathLike,
    old: tuple[int, bytes],
    new: tuple[int, bytes],
    removed: Iterable[int],
    added: dict[int, tuple[str, bytes]],
    canonicals: dict[str, str] | None = None,
) -> PreparedUpdate | str:
    """Write an update of the search index beside *indexfile*, written with the SPEC index *old*
    (size, digest), for the SPEC index *new*, to its partial file: the pages *removed* (gone or
    changed) lose their rows, the pages *added* (new or changed: URL and ``packed`` fields) gain
    theirs, and the pages whose anchor text changed with them get it anew.  The result answers every
    query as a full build does once put in place (``PreparedUpdate.put_in_place``), after the SPEC
    index: what can fail (a full disk) fails before any file of the index is changed.

    Returns why it cannot (missing, of another index: nothing written)."""
    path = search_path(indexfile)
    problem = check(path, *old)
    if problem:
        return problem
    partial = partial_path(path)
    db: apsw.Connection | None = None
    try:
        # Copied into a file made anew: a link at the partial file's name is not written through.
        with open(path, "rb") as source, open_partial(path) as copy:
            shutil.copyfileobj(source, copy, COPY_BYTES)
        db = connect(partial, writable=True)
        _fast_writes(db)
        db.execute("BEGIN")
        # The URLs whose anchors may change: those the removed and added pages link(ed) to, and
        # the pages added (a new URL may be linked to by pages that did not change).
        targets: set[str] = set()
        removed = sorted(set(removed))
        for doc_id in removed:
            targets.update(target for target, _ in _links_of(db, doc_id))
            _delete_page(db, doc_id)
        spellings: Spellings = {}
        for doc_id in sorted(added):
            url, blob = added[doc_id]
            page = unpacked(blob)
            _insert_page(db, doc_id, url, page, (canonicals or {}).get(url))
            targets.update(target for target, _ in page.links_listed())
            targets.add(url)
            _first_spellings(doc_id, page, spellings)
        _update_vocabulary(db, removed, spellings)
        gathered = _gather_anchors(db, targets)
        for doc_id, url in list(db.execute("SELECT doc_id, url FROM pages ORDER BY doc_id")):
            if url in targets:
                _delete_anchors(db, doc_id)
        _index_anchors(db, gathered)
        _group_duplicates(db)
        _write_meta(db, *new)
        _merge_segments(db)
        _count_terms(db)
        db.execute("COMMIT")
    except BaseException:
        if db is not None:
            db.close()
        partial.unlink(missing_ok=True)
        raise
    db.close()
    return PreparedUpdate(partial, path)


def check(path: Path, index_size: int, index_digest: bytes) -> str | None:
    """Why the search index *path* is not the one of that SPEC index, or None when it is."""
    found = open_checked(path, index_size, index_digest)
    if isinstance(found, str):
        return found
    found.close()
    return None


def open_checked(path: Path, index_size: int, index_digest: bytes) -> apsw.Connection | str:
    """The search index *path* opened read-only, when it is the one of that SPEC index (checked on
    this connection: a file renamed over it after a check and before an opening would be another);
    else why it is not."""
    if not path.is_file():
        return f"no search index {path}"
    try:
        db = connect(path)
    except apsw.Error as error:
        return f"{path} cannot be read ({error})"
    try:
        meta = dict(db.execute("SELECT key, value FROM meta"))
        _first_rows_read(db)
    except apsw.Error as error:
        db.close()
        return f"{path} cannot be read ({error})"
    problem = None
    if meta.get("format") != FORMAT or meta.get("analysis") != ANALYSIS_VERSION:
        problem = f"{path} was written by another version of tse index"
    elif meta.get("index_size") != str(index_size) or meta.get("index_digest") != index_digest.hex():
        problem = f"{path} does not match the index"
    if problem is not None:
        db.close()
        return problem
    return db


def _first_rows_read(db: apsw.Connection) -> None:
    """Read the first row of each table every search reads, each FTS5 table's structure with it: a
    search index damaged there (an FTS5 table's configuration or structure, a table's root) raises
    at its opening, where ``tse index --update`` takes it for one to write anew and a server for one
    it cannot serve, not at each search.  Damage deeper in shows when a search reads it: reading the
    whole file (``PRAGMA quick_check``) takes seconds on a large index."""
    for table in (*_SEARCHED_TABLES, *FTS_TABLES):
        db.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchall()


def connect(path: Path, *, writable: bool = False) -> apsw.Connection:
    """The search index file *path* opened with apsw, read-only unless *writable* (created if need be).
    By its file URI: apsw takes a path as UTF-8, which a directory's name need not be (the URI
    percent-encodes its bytes).  Read-only, it is opened immutable: a search index is never written
    in place (a new one is renamed over it, and this connection keeps reading the file it opened), so
    SQLite need not lock it and look for changes at each statement (a search runs dozens: 6 % of its
    CPU, bench/RESULTS.md)."""
    if writable:  # (a symbolic link at its name is refused, not written through)
        flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE | apsw.SQLITE_OPEN_URI | apsw.SQLITE_OPEN_NOFOLLOW
        return apsw.Connection(path.resolve().as_uri(), flags=flags)
    return apsw.Connection(
        f"{path.resolve().as_uri()}?mode=ro&immutable=1", flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI
    )


def _fast_writes(db: apsw.Connection) -> None:
    # The file is a partial one, renamed into place when whole: a crash leaves only a partial file.
    db.execute("PRAGMA journal_mode=OFF").fetchall()
    db.execute("PRAGMA synchronous=OFF")
    # 16 MB of pages cached (the rest is in the system's file cache): the writer's share of the
    # indexer's memory bound (bench/RESULTS.md: 20,000 pages under 250 MB).
    db.execute("PRAGMA cache_size=-16000")


def _insert_page(
    db: apsw.Connection, doc_id: int, url: str, page: PackedPage, noted_canonical: str | None = None
) -> None:
    """*noted_canonical*: the one the page's Link headers named (``.tse-canonical``); its head's is in *page*."""
    fields = page.fields
    canonical = agreed_canonical(noted_canonical, fields.canonical)
    db.execute("INSERT INTO same VALUES (?, ?, ?)", (doc_id, page.digest, canonical or ""))
    db.execute("INSERT INTO pages VALUES (?, ?, ?, ?)", (doc_id, url, fields.language, fields.title))
    db.execute(
        "INSERT INTO fts(rowid, title, headings, url, body) VALUES (?, ?, ?, ?, ?)",
        (doc_id, fields.title, fields.headings, fields.url, fields.body),
    )
    db.execute(
        "INSERT INTO phrases_fts(rowid, title, body, characters) VALUES (?, ?, ?, ?)",
        (doc_id, fields.title_words, fields.body_words, fields.characters),
    )
    db.execute("INSERT INTO titles_fts(rowid, title) VALUES (?, ?)", (doc_id, fields.title))
    if page.head:
        db.execute("INSERT INTO heads VALUES (?, ?)", (doc_id, page.head))
    if page.rest:
        db.execute("INSERT INTO rests VALUES (?, ?)", (doc_id, page.rest))
    if fields.beyond:
        db.execute(
            "INSERT INTO beyond_fts(rowid, terms, words) VALUES (?, ?, ?)", (doc_id, fields.beyond, fields.beyond_words)
        )
    if page.links:
        db.execute("INSERT INTO links VALUES (?, ?)", (doc_id, page.links))
    spelled = [*((word, spelling) for word, spelling in fields.vocabulary if spelling != word), *fields.short_spellings]
    if respelled := " ".join(f"{word} {spelling}" for word, spelling in spelled):
        db.execute("INSERT INTO respellings VALUES (?, ?)", (doc_id, respelled))


def _first_spellings(doc_id: int, page: PackedPage, spellings: Spellings) -> Spellings:
    """*spellings* with the words of *page* (``PageFields.vocabulary``), whose docID is *doc_id*, it
    does not have yet, each with its spelling there."""
    for word, spelling in page.fields.vocabulary:
        spellings.setdefault(word, (spelling, doc_id))
    return spellings


def _insert_vocabulary(db: apsw.Connection, spellings: Spellings) -> None:
    """*spellings* added to the vocabulary, where its words are not in it yet (the first spelling kept).
    In one sorted statement, not a page's at a time: a word is on many pages, and the table's B-tree
    is walked once."""
    rows = ((word, spelling, doc_id) for word, (spelling, doc_id) in sorted(spellings.items()))
    db.executemany("INSERT OR IGNORE INTO vocabulary VALUES (?, ?, ?)", rows)


def _update_vocabulary(db: apsw.Connection, removed: list[int], added: Spellings) -> None:
    """The vocabulary of a full build, once the pages *removed* (gone or changed; docIDs, ascending)
    have lost their rows in phrases_fts and respellings and the pages added gained theirs (*added*:
    their words, each with its spelling on the first of them holding it).

    A word's row names the first page holding it: a page unchanged stays the first among those
    unchanged, so only the words whose first page was removed are sought again, in phrases_fts,
    whose pages are the vocabulary's (its title and body words); a page added may come before."""
    db.execute("CREATE TEMP TABLE removed_pages (doc_id INTEGER PRIMARY KEY)")
    db.executemany("INSERT INTO temp.removed_pages VALUES (?)", ((doc_id,) for doc_id in removed))
    sql = "SELECT word FROM vocabulary WHERE doc_id IN (SELECT doc_id FROM temp.removed_pages)"
    orphaned = [word for (word,) in db.execute(sql)]
    db.execute("DROP TABLE temp.removed_pages")
    db.executemany("DELETE FROM vocabulary WHERE word = ?", ((word,) for word in orphaned))
    upsert = (
        "INSERT INTO vocabulary VALUES (?, ?, ?) ON CONFLICT (word) DO UPDATE"
        " SET spelling = excluded.spelling, doc_id = excluded.doc_id WHERE excluded.doc_id < vocabulary.doc_id"
    )
    db.executemany(upsert, ((word, spelling, doc_id) for word, (spelling, doc_id) in sorted(added.items())))
    # A word whose first page was removed: now held first by a page unchanged, by a page added (its row
    # written just above), or by none.
    held_first: dict[int, list[str]] = {}
    for word in orphaned:
        found = first_holding(db, word)
        if found is not None and (word not in added or found < added[word][1]):
            held_first.setdefault(found, []).append(word)
    for doc_id in sorted(held_first):
        spellings = respellings_of(db, doc_id)
        rows = ((word, spellings.get(word, word), doc_id) for word in held_first[doc_id])
        db.executemany("INSERT OR REPLACE INTO vocabulary VALUES (?, ?, ?)", rows)


def first_holding(db: apsw.Connection, word: str) -> int | None:
    """The docID of the first page whose title or body holds *word* (folded, a letter or digit run)."""
    sql = "SELECT rowid FROM phrases_fts WHERE phrases_fts MATCH ? ORDER BY rowid LIMIT 1"
    found = db.execute(sql, ('{title body} : "' + word + '"',)).fetchone()
    return found[0] if found else None


def respellings_of(db: apsw.Connection, doc_id: int) -> dict[str, str]:
    """The words page *doc_id* spells otherwise than folded, and how (its respellings row)."""
    row = db.execute("SELECT words FROM respellings WHERE doc_id = ?", (doc_id,)).fetchone()
    pieces = row[0].split(" ") if row else []
    return dict(zip(pieces[::2], pieces[1::2], strict=True))


def _links_of(db: apsw.Connection, doc_id: int) -> list[tuple[str, str]]:
    row = db.execute("SELECT links FROM links WHERE source = ?", (doc_id,)).fetchone()
    return _decode_links(row[0]) if row else []


def _decode_links(blob: bytes) -> list[tuple[str, str]]:
    return [tuple(line.split("\t", 1)) for line in _decompressed(blob).split("\n")]  # type: ignore[misc]


def _all_links(db: apsw.Connection) -> Iterator[tuple[int, list[tuple[str, str]]]]:
    for source, blob in db.execute("SELECT source, links FROM links ORDER BY source"):
        yield source, _decode_links(blob)


def _gather_anchors(db: apsw.Connection, targets: set[str] | None) -> Iterator[tuple[int, str]]:
    """The anchor terms of the pages at *targets* (None: every page) from the links of the pages, a
    page's at a time in docID order, read once every link is: ANCHORS_HELD characters of them held,
    the rest in ``temp.anchor_pieces`` (a review's find: every page's anchors were held at once, about
    40 KB of peak a much-linked page, 4 GB at 100,000; held now besides: a count and the docIDs of
    each URL)."""
    pages_at: dict[str, list[int]] = {}
    for doc_id, url in db.execute("SELECT doc_id, url FROM pages ORDER BY doc_id"):
        if targets is None or url in targets:
            pages_at.setdefault(url, []).append(doc_id)
    held: dict[int, list[str]] = {}
    size = pieces = 0
    for doc_id, terms in anchor_pieces(pages_at, _all_links(db)):
        parts = held.setdefault(doc_id, [])
        parts.append(terms)
        if len(parts) >= ANCHORS_JOINED:
            parts[:] = [" ".join(parts)]
        size += len(terms) + 1
        if size > ANCHORS_HELD:
            _write_anchor_pieces(db, held, pieces)
            size, pieces = 0, pieces + 1
    if not pieces:  # (all held: no temporary table, as on the 20,000-page bench)
        return ((doc_id, " ".join(held.pop(doc_id))) for doc_id in sorted(held))
    _write_anchor_pieces(db, held, pieces)
    return _written_anchors(db)


def _write_anchor_pieces(db: apsw.Connection, held: dict[int, list[str]], piece: int) -> None:
    """Each page's anchor texts *held* (emptied) as its *piece*-th piece."""
    if piece == 0:
        db.execute("DROP TABLE IF EXISTS temp.anchor_pieces")
        db.execute("CREATE TEMP TABLE anchor_pieces (doc_id INTEGER, piece INTEGER, terms TEXT)")
    rows = ((doc_id, piece, " ".join(parts)) for doc_id, parts in held.items())
    db.executemany("INSERT INTO temp.anchor_pieces VALUES (?, ?, ?)", rows)
    held.clear()


def _written_anchors(db: apsw.Connection) -> Iterator[tuple[int, str]]:
    """Each page's anchor pieces (``_write_anchor_pieces``) joined, in docID order; then dropped."""
    rows = db.execute("SELECT doc_id, terms FROM temp.anchor_pieces ORDER BY doc_id, piece")
    for doc_id, pieces in itertools.groupby(rows, key=operator.itemgetter(0)):
        yield doc_id, " ".join(piece for _, piece in pieces)
    db.execute("DROP TABLE temp.anchor_pieces")


def anchor_pieces(
    pages_at: dict[str, list[int]], links: Iterable[tuple[int, list[tuple[str, str]]]]
) -> Iterator[tuple[int, str]]:
    """The anchor terms of the pages at the URLs of *pages_at* (URL: its docIDs), from *links* (each
    source page's (target URL, anchor terms), in docID order), as (docID, terms) pieces in the order a
    page's are joined: in that order and then in page order, at most ANCHOR_TERMS a URL, none from a
    page to itself."""
    sizes: dict[str, int] = {}
    for source, page_links in links:
        for target, terms in page_links:
            doc_ids = pages_at.get(target)
            if doc_ids is None:
                continue
            count = terms.count(" ") + 1
            if sizes.get(target, 0) + count > ANCHOR_TERMS:
                continue
            sizes[target] = sizes.get(target, 0) + count
            for doc_id in doc_ids:
                if doc_id != source:
                    yield doc_id, terms


def _index_anchors(db: apsw.Connection, anchors: Iterable[tuple[int, str]]) -> None:
    for doc_id, terms in anchors:
        db.execute("INSERT INTO anchors VALUES (?, ?)", (doc_id, terms))
        db.execute("INSERT INTO anchors_fts(rowid, anchors) VALUES (?, ?)", (doc_id, terms))


def _delete_anchors(db: apsw.Connection, doc_id: int) -> None:
    db.execute("DELETE FROM anchors_fts WHERE rowid = ?", (doc_id,))
    db.execute("DELETE FROM anchors WHERE doc_id = ?", (doc_id,))


def _delete_page(db: apsw.Connection, doc_id: int) -> None:
    # A docID a table does not hold (a page without text past its body) is deleted from it as well:
    # FTS5 then changes nothing (its statistics neither).
    for table in FTS_TABLES:
        db.execute(f"DELETE FROM {table} WHERE rowid = ?", (doc_id,))
    for table in ("anchors", "same", "heads", "rests", "respellings", "pages"):
        db.execute(f"DELETE FROM {table} WHERE doc_id = ?", (doc_id,))
    db.execute("DELETE FROM links WHERE source = ?", (doc_id,))


def _group_duplicates(db: apsw.Connection) -> None:
    """Fill ``groups`` anew from every page's digest and canonical URL (a canonical URL outside
    the index joins nothing: the page stands alone)."""
    urls = dict(db.execute("SELECT doc_id, url FROM pages"))
    doc_at: dict[str, int] = {}
    for doc_id, url in sorted(urls.items()):
        doc_at.setdefault(url, doc_id)
    digests: dict[int, str] = {}
    canonicals: dict[int, int] = {}
    for doc_id, digest, canonical in db.execute("SELECT doc_id, digest, canonical FROM same"):
        if digest != EMPTY_DIGEST:  # pages that show nothing are not duplicates of one another
            digests[doc_id] = digest
        named = doc_at.get(canonical) if canonical else None
        if named is not None and named != doc_id:
            canonicals[doc_id] = named
    db.execute("DELETE FROM groups")
    groups = duplicate_groups(digests, canonicals, urls)
    db.executemany("INSERT INTO groups VALUES (?, ?)", sorted(groups.items()))


def _merges_left_to_the_end(db: apsw.Connection) -> None:
    """FTS5's segments left unmerged while pages are added (but in 64s: a level of 64 is merged), as
    ``_merge_segments`` merges them all at the end anyway: each term's list is written about twice,
    not once a level of 4 (the writer's instructions -16 % on 1,000 pages, bench/RESULTS.md)."""
    for table in FTS_TABLES:
        db.execute(f"INSERT INTO {table}({table}, rank) VALUES ('automerge', 0)")
        db.execute(f"INSERT INTO {table}({table}, rank) VALUES ('crisismerge', 64)")


def _merge_segments(db: apsw.Connection, tables: tuple[str, ...] = FTS_TABLES) -> None:
    """Each FTS5 table's segments merged into one: a query then reads one list a term, not one a
    segment (the 20,000-page bench: 8.3 to 7.2 ms a query, median, for 2 % of a build's time)."""
    for table in tables:
        db.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")


def counted_key(db: apsw.Connection) -> str:
    """What the COUNTED_TABLES hold, as far as term counts go: a digest of each one's FTS5 structure
    record (its segments and its count of writes, which every write changes), "" when one cannot
    be read.  The SPEC index's digest would not do: a page whose title and body swap words leaves
    it as it is, and changes the titles' counts."""
    digest = hashlib.blake2b(digest_size=16)
    try:
        for table in COUNTED_TABLES:
            row = db.execute(f"SELECT block FROM {table}_data WHERE id = ?", (_FTS5_STRUCTURE,)).fetchone()
            if row is None or not isinstance(row[0], bytes):
                return ""
            digest.update(len(row[0]).to_bytes(8, "little") + row[0])
    except apsw.Error:
        return ""
    return digest.hexdigest()


def _count_terms(db: apsw.Connection) -> None:
    """How many pages hold each term of the COUNTED_TABLES, counted anew (a build's and an update's
    alike): FTS5 counts a term's pages by walking its list, a common word's in milliseconds, which a
    query would pay the first time a process meets the word; the whole vocabulary once here costs
    about half a second on the 20,000-page bench.  Recorded with ``counted_key``: a search index
    changed since (by a version of ``tse index`` that does not count, an older one) is read without
    them (``matching.Vocabulary``)."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS term_counts (tbl TEXT NOT NULL, term TEXT NOT NULL, pages INTEGER NOT NULL,"
        " PRIMARY KEY (tbl, term)) WITHOUT ROWID"
    )
    db.execute("DELETE FROM term_counts")
    for table in COUNTED_TABLES:
        db.execute(f"CREATE VIRTUAL TABLE temp.{table}_counted USING fts5vocab(main, {table}, row)")
        db.execute(f"INSERT INTO term_counts SELECT ?, term, doc FROM temp.{table}_counted", (table,))
        db.execute(f"DROP TABLE temp.{table}_counted")
    db.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (COUNTED_WITH, counted_key(db)))


def _compressed(text: str) -> bytes:
    return zlib.compress(text.encode("utf-8"), 1)


def _decompressed(blob: bytes) -> str:
    return zlib.decompress(blob).decode("utf-8")


def _write_meta(db: apsw.Connection, index_size: int, index_digest: bytes) -> None:
    languages = sorted(language for (language,) in db.execute("SELECT DISTINCT lang FROM pages") if language)
    meta = {
        "format": FORMAT,
        "analysis": ANALYSIS_VERSION,
        "index_size": str(index_size),
        "index_digest": index_digest.hex(),
        "languages": " ".join(languages),
    }
    db.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", meta.items())
