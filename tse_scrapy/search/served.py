"""The index a ``tse serve`` process answers from, opened again when ``tse index`` writes it anew.

``tse index`` and ``tse index --update`` write each file of the index whole and
rename it into place, one after the other (the index and its sidecar, then the
document store, then the search index).  Each server process looks every
CHECK_SECONDS (TSE_SERVE_CHECK_SECONDS), from its start, at those files (size, modification time, inode).
When they are other files than those open and have stayed so for one look (a
rewrite renames them within moments), it opens the index again in a thread (the
requests meanwhile are answered from the index open), and answers from the new
one when it is as usable as the one it replaces: its document store and
search index written with it where the open one's were.  Else, or when the new
files cannot be opened at all, it says why in one line on stderr, once for
those files, goes on answering from the index it has, and tries again when the
files change, or RETRY_SECONDS later.  With several processes (forked, on Linux),
that line is said by the first of them only (``SaidOnce``): the files are the
same for all.

It looks at ``PAGEDIR/.tse-gone`` too (``tse crawl --update`` writes it whole,
or removes it): once it is another file (or none) and has stayed so for one
look, it reads it in a thread, and from then on answers without the pages it
lists, as a server started on these files would: no result of any ranking,
not counted in BM25's statistics, 404 for their ``/doc/DOCID``.  The index
open stays open (a document store and search index written before the pages
went are still used, where a server started now would not use them); the
pages the list no longer holds are answers again (those gone when the index
was written are not in it: ``tse index`` brings them back).  An index whose
document store was built from the pages is opened again, its store built
again from the pages as they are.  A list that cannot be read is said in one
line on stderr, once for that file (by one process of the server, as above), and
the pages gone are those of the list before.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import mmap
import multiprocessing
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from starlette.concurrency import run_in_threadpool

from ..fulltext.store import search_path
from ..index.docstore import docs_path
from ..index.engine import QueryEngine
from ..index.pagefiles import file_key
from ..index.storage import IndexReader, sidecar_path
from ..rules.files import pagedir
from ..rules.files.pagenotes import NotedPages, read_page_notes

# How often a server process looks for an index written anew and a new gone list (a stat of five files), and
# how long after a new index it could not use it tries the same files again (a failure may pass: too many
# open files).
CHECK_SECONDS = 1.0
RETRY_SECONDS = 30.0
# The environment variable that sets another CHECK_SECONDS (the tests look sooner), read in check_interval.
CHECK_SECONDS_VARIABLE = "TSE_SERVE_CHECK_SECONDS"

logger = logging.getLogger(__name__)

FileKey = tuple[int, int, int] | None
FileKeys = tuple[FileKey, ...]
# The key of a gone list not known yet (a process's first look reads the list, whatever its key).
UNKNOWN: FileKey = (-1, -1, -1)


# What a server's processes warn of, each remembered apart (a warning of one kind does not make the
# other's said again): a new index that cannot be used, a gone list that cannot be read.
NEW_INDEX, GONE_LIST = 0, 1


class SaidOnce:
    """What one of a server's processes said, in memory the processes forked after it is made share: a
    warning the others would say about the same files is said once, not once a process."""

    _DIGEST = 16
    _KINDS = 2  # NEW_INDEX, GONE_LIST

    def __init__(self) -> None:
        self._said = mmap.mmap(-1, self._DIGEST * self._KINDS)  # anonymous and shared: no file
        self._lock = multiprocessing.get_context("fork").Lock()

    def first(self, what: str, kind: int = NEW_INDEX) -> bool:
        """Whether *what* is new: not the last thing of its *kind* said (it is then)."""
        digest = hashlib.blake2b(what.encode(errors="surrogateescape"), digest_size=self._DIGEST).digest()
        at = slice(kind * self._DIGEST, (kind + 1) * self._DIGEST)
        if not self._lock.acquire(timeout=1):  # (a process killed holding it: said, as before)
            return True
        try:
            if self._said[at] == digest:
                return False
            self._said[at] = digest
            return True
        finally:
            self._lock.release()


# Set by the server before it forks its processes (``server.serve_forever``); None: each says its own.
said_once: SaidOnce | None = None


def index_file_keys(indexfile: Path) -> FileKeys:
    """The ``file_key`` of each file of the index that a server reads (None for one missing)."""
    keys = []
    for path in (indexfile, sidecar_path(indexfile), docs_path(indexfile), search_path(indexfile)):
        try:
            keys.append(file_key(os.stat(path)))
        except OSError:
            keys.append(None)
    return tuple(keys)


def gone_file_key(directory: str | os.PathLike) -> FileKey:
    """The ``file_key`` of ``PAGEDIR/.tse-gone`` (None when there is none)."""
    try:
        return file_key(os.stat(os.path.join(directory, pagedir.GONE_NAME)))
    except OSError:
        return None


@dataclass(frozen=True)
class GoneList:
    """A gone list read anew, for an index open whose store was written with it (``tse index``): the gone
    pages, and the document lengths of the others, which BM25 counts (``DocStore.count``)."""

    gone: frozenset[int]
    lengths: dict[int, int]

    def given_to(self, engine: QueryEngine) -> None:
        """*engine* answering without these gone pages (called in the event loop: no request sees it half done)."""
        engine.gone = self.gone
        engine.docs.count(self.lengths)


def _without_pages(lengths: dict[int, int], gone: frozenset[int]) -> dict[int, int]:
    """The document lengths *lengths* without the pages *gone*."""
    return {doc_id: length for doc_id, length in lengths.items() if doc_id not in gone}


@dataclass(frozen=True)
class Served:
    """An index opened, and what the app reads of it and of its pages once."""

    engine: QueryEngine
    default_rank: str  # relevance where the search index can be used, else SPEC 4's scores
    languages: list[str]  # of the search index's pages
    notes: NotedPages  # the pages' HTTP charsets and PDFs, noted at crawl time

    @classmethod
    def of(cls, engine: QueryEngine) -> Served:
        search = engine.search_index
        if isinstance(search, str):
            return cls(engine, "tse", [], read_page_notes(engine.directory))
        return cls(engine, "relevance", search.languages, read_page_notes(engine.directory))

    def usable(self) -> tuple[bool, bool]:
        """Whether its document store, and its search index, were written with it."""
        return self.engine.stored_docs() is not None, self.default_rank == "relevance"

    def less_usable_than(self, other: Served) -> str | None:
        """Why this index is less usable than *other* (its document store or search index not
        written with it where *other*'s are), or None when it is not."""
        (docs, search), (other_docs, other_search) = self.usable(), other.usable()
        if other_docs and not docs:
            return self.engine.docs_problem
        if other_search and not search:
            return str(self.engine.search_index)
        return None


def check_interval() -> float:
    """CHECK_SECONDS, or TSE_SERVE_CHECK_SECONDS when the environment sets it (set empty: unset, as a
    shell's `VAR= cmd` leaves it); ValueError (its one line) when that is no number of seconds from 0.01
    to 3600 (0 would look without a pause, nan never)."""
    given = os.environ.get(CHECK_SECONDS_VARIABLE)
    if not given:
        return CHECK_SECONDS
    try:
        seconds = float(given)
    except ValueError:
        seconds = float("nan")
    if not 0.01 <= seconds <= 3600:
        raise ValueError(f"{CHECK_SECONDS_VARIABLE} must be a number of seconds from 0.01 to 3600: {given}")
    return seconds


class ServedIndex:
    """The index a server process answers from: ``current()`` gives the newest usable one."""

    def __init__(self, engine: QueryEngine, check_seconds: float | None = None, retry_seconds: float = RETRY_SECONDS):
        self._current = Served.of(engine)
        self._path = Path(engine.index.path)
        self._directory = engine.directory
        # The keys of the files open: the index's that of the very file read (written anew since, it is
        # another), the others' as they are now (opened with it, they were checked against it).
        self._open = (engine.index.key, *index_file_keys(self._path)[1:])
        # The key of the gone list the engine open answers with (read again at the first look: it may have
        # changed since the engine read it), and its store's document lengths as opened (with every page
        # the list then held taken out: kept once a list changes, to take others out).
        self._gone_key = UNKNOWN
        self._stored_lengths: dict[int, int] | None = None
        stored = engine.stored_docs()
        if stored is not None and engine.gone & stored.lengths.keys():
            # A process the server started in place of one that died opens the store its parent found
            # matching the pages at the start, not checked again: the pages a list written since holds
            # are taken out of it here, as its siblings took them when the list came (their /doc/N
            # answered 404 and this one's 200, its BM25 counting them).
            self._stored_lengths = dict(stored.lengths)
            GoneList(engine.gone, _without_pages(stored.lengths, engine.gone)).given_to(engine)
        self._check_seconds = check_interval() if check_seconds is None else check_seconds
        self._retry_seconds = retry_seconds
        self._watching: asyncio.Task[None] | None = None  # (kept: a task only weakly held may vanish)
        self._version: tuple[Served, frozenset[int], str] | None = None  # (version(): for that index and gone list)

    def current(self) -> Served:
        """The index to answer from: the one open, or one written anew and usable since.  Called in
        the event loop, where it starts the task looking for a new index if none runs (``watch``)."""
        if self._watching is None or self._watching.done():
            self.watch()
        return self._current

    def version(self) -> str:
        """What the answers from the index answered from now are made from, the same in each process of
        the server answering from the same files (``sharedanswers``): the keys of the index's files open,
        and the pages gone."""
        gone = self._current.engine.gone
        if self._version is None or self._version[0] is not self._current or self._version[1] is not gone:
            digest = hashlib.blake2b(" ".join(map(str, sorted(gone))).encode(), digest_size=16).hexdigest()
            self._version = (self._current, gone, f"{self._open} {digest}")
        return self._version[2]

    def watch(self) -> asyncio.Task[None]:
        """Start looking for a new index (``_watch``) in the running event loop: at the server's start,
        else at a request (as a ``TestClient`` runs the app); the task, to cancel at the end."""
        if self._watching is not None and not self._watching.done():
            return self._watching
        if self._watching is not None and not self._watching.cancelled() and self._watching.exception():
            logger.warning("tse serve: looking for a new index stopped (%s): started again", self._watching.exception())
        self._watching = asyncio.get_running_loop().create_task(self._watch())
        return self._watching

    async def _watch(self) -> None:
        """Every CHECK_SECONDS, the index's files and the gone list looked at; a new index, settled, taken
        when usable; a new gone list, settled, answered with."""
        before = (self._open, gone_file_key(self._directory))  # the files' keys at the look before
        tried, retry_at = None, 0.0  # the keys of the last new files not taken, and when to try them again
        gone_tried: FileKey = UNKNOWN  # the key of the last gone list that could not be read
        while True:
            await asyncio.sleep(self._check_seconds)
            keys, gone_key = index_file_keys(self._path), gone_file_key(self._directory)
            settled, before = (keys, gone_key) == before, (keys, gone_key)
            now = time.monotonic()
            if not settled:
                continue
            if keys != self._open and not (keys == tried and now < retry_at):
                opened, why = await run_in_threadpool(self._opened)
                if opened is not None:
                    # (It read the gone list as it was after this look, or as it is now: compared next time.)
                    self._take(opened, keys, gone_key)
                    continue
                # Said once for these files, by one process of the server.
                if keys != tried and (said_once is None or said_once.first(f"{self._path} {keys}")):
                    logger.warning(
                        "tse serve: %s was written anew but %s: answering from the index open", self._path, why
                    )
                tried, retry_at = keys, now + self._retry_seconds
            if gone_key in (self._gone_key, gone_tried):
                continue
            served = self._current
            try:
                renewed = await run_in_threadpool(self._gone_renewed, served, keys == self._open)
            except Exception as error:  # (a list that is none, pages not read): said once for this list
                # By one process of the server: each reads the same file.
                if said_once is None or said_once.first(f"{self._directory} {gone_key}", GONE_LIST):
                    logger.warning("tse serve: the gone pages cannot be read again (%s): answering as before", error)
                gone_tried = gone_key
                continue
            if isinstance(renewed, GoneList):
                renewed.given_to(served.engine)
            elif isinstance(renewed, Served):
                self._take(renewed, self._open, gone_key)
                continue
            elif renewed is None:  # (the index open is not the one at the path: the list is read again later)
                continue
            self._gone_key = gone_key

    def _take(self, opened: Served, keys: FileKeys, gone_key: FileKey) -> None:
        """Answer from *opened*, of the index files with *keys* and the gone list with *gone_key*."""
        replaced, self._current, self._open = self._current, opened, keys
        self._gone_key, self._stored_lengths = gone_key, None
        # No request is using it: they run in the event loop, and none uses the engine across an
        # await.  (Closing is the end of its use: a failure there leaves nothing to do; the index it
        # may share with *opened* is not closed.)
        with contextlib.suppress(Exception):
            replaced.engine.close()

    def _gone_renewed(self, served: Served, index_open: bool) -> GoneList | Served | Literal[False] | None:
        """What the gone list, read again, makes of *served* (in a thread; raises OSError or PageFileError
        for a list that cannot be read): False when it lists the pages *served* answers without; else
        its pages taken out of *served*'s store's lengths; or, for a store built from the pages (none
        written with the index), the index open with a store built again from the pages (None: not now,
        the index at the path is not the one open, which is taken first)."""
        engine = served.engine
        gone = pagedir.gone_docs(self._directory)
        if gone == engine.gone:
            return False
        if engine.stored_docs() is None:
            if not index_open:
                return None
            # As a server started now opens it: the store built again from the pages, here, not in the loop.
            opened = QueryEngine(self._directory, engine.index)
            try:
                renewed = Served.of(opened)
                opened.docs  # noqa: B018
            except BaseException:
                with contextlib.suppress(Exception):
                    opened.close()
                raise
            return renewed
        if self._stored_lengths is None:  # the store's lengths as opened, before any list changed them
            self._stored_lengths = dict(engine.docs.lengths)
        # Counted as DocStore counts them: the same BM25 scores as a store built without them.
        return GoneList(gone, _without_pages(self._stored_lengths, gone))

    def _opened(self) -> tuple[Served | None, str]:
        """The index at the path opened anew when it is as usable as the one open, else None and why."""
        engine = None
        try:
            engine = QueryEngine(self._current.engine.directory, IndexReader(self._path))
            opened = Served.of(engine)
            why = opened.less_usable_than(self._current)
            if why is None:
                engine.docs  # noqa: B018 (without a store of its own, built from the pages here, not in the loop)
                return opened, ""
            why = f"cannot be used ({why})"
        except Exception as error:  # whatever the new files hold, the server goes on answering
            why = f"cannot be opened ({error})"
        if engine is not None:
            with contextlib.suppress(Exception):
                engine.close()
        return None, why
