"""The index a ``tse serve`` process answers from, opened again when ``tse index`` writes it anew.

``tse index`` and ``tse index --update`` write each file of the index whole and
rename it into place, one after the other (the index and its sidecar, then the
document store, then the search index).  Each server process looks every
CHECK_SECONDS, from its start, at those files (size, modification time, inode).
When they are other files than those open and have stayed so for one look (a
rewrite renames them within moments), it opens the index again in a thread (the
requests meanwhile are answered from the index open), and answers from the new
one when it is as usable as the one it replaces: its document store and
search index written with it where the open one's were.  Else, or when the new
files cannot be opened at all, it says why in one line on stderr, once for
those files, goes on answering from the index it has, and tries again when the
files change, or RETRY_SECONDS later.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from starlette.concurrency import run_in_threadpool

from ..fulltext.store import search_path
from ..index.docstore import docs_path
from ..index.engine import QueryEngine
from ..index.pagefiles import file_key
from ..index.storage import IndexReader, sidecar_path
from ..rules.files.pagenotes import NotedPages, read_page_notes

# How often a server process looks for an index written anew (a stat of four files), and how long after
# a new index it could not use it tries the same files again (a failure may pass: too many open files).
CHECK_SECONDS = 1.0
RETRY_SECONDS = 30.0

logger = logging.getLogger(__name__)

FileKeys = tuple[tuple[int, int, int] | None, ...]


def index_file_keys(indexfile: Path) -> FileKeys:
    """The ``file_key`` of each file of the index that a server reads (None for one missing)."""
    keys = []
    for path in (indexfile, sidecar_path(indexfile), docs_path(indexfile), search_path(indexfile)):
        try:
            keys.append(file_key(os.stat(path)))
        except OSError:
            keys.append(None)
    return tuple(keys)


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


class ServedIndex:
    """The index a server process answers from: ``current()`` gives the newest usable one."""

    def __init__(self, engine: QueryEngine, check_seconds: float = CHECK_SECONDS, retry_seconds: float = RETRY_SECONDS):
        self._current = Served.of(engine)
        self._path = Path(engine.index.path)
        # The keys of the files open: the index's that of the very file read (written anew since, it is
        # another), the others' as they are now (opened with it, they were checked against it).
        self._open = (engine.index.key, *index_file_keys(self._path)[1:])
        self._check_seconds = check_seconds
        self._retry_seconds = retry_seconds
        self._watching: asyncio.Task[None] | None = None  # (kept: a task only weakly held may vanish)

    def current(self) -> Served:
        """The index to answer from: the one open, or one written anew and usable since.  Called in
        the event loop, where it starts the task looking for a new index if none runs (``watch``)."""
        if self._watching is None or self._watching.done():
            self.watch()
        return self._current

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
        """Every CHECK_SECONDS, the index's files looked at, and a new index, settled, taken when usable."""
        before = self._open  # the files' keys at the look before
        tried, retry_at = None, 0.0  # the keys of the last new files not taken, and when to try them again
        while True:
            await asyncio.sleep(self._check_seconds)
            keys = index_file_keys(self._path)
            settled, before = keys == before, keys
            now = time.monotonic()
            if keys == self._open or not settled or (keys == tried and now < retry_at):
                continue
            opened, why = await run_in_threadpool(self._opened)
            if opened is None:
                if keys != tried:  # said once for these files
                    logger.warning(
                        "tse serve: %s was written anew but %s: answering from the index open", self._path, why
                    )
                tried, retry_at = keys, now + self._retry_seconds
                continue
            replaced, self._current, self._open = self._current, opened, keys
            # No request is using it: they run in the event loop, and none uses the engine across an
            # await.  (Closing is the end of its use: a failure there leaves nothing to do.)
            with contextlib.suppress(Exception):
                replaced.engine.close()

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
