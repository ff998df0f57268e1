"""The index a ``tse serve`` process answers from, opened again when ``tse index`` writes it anew.

``tse index`` and ``tse index --update`` write each file of the index whole and
rename it into place, one after the other (the index and its sidecar, then the
document store, then the search index).  A server process looks every
CHECK_SECONDS at those files (size, modification time, inode), from its first
request on; when one is another, it opens the index again in a thread (the
requests meanwhile are answered from the index open), and it answers from the
new one only when it is whole: its document store and search index
written with it, as usable as those it replaces.  A rewrite caught halfway
(the index new, the document store not yet) is tried again when the files
change again; an index removed or unreadable leaves the process answering from
the one it has, said in one line on stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from dataclasses import dataclass
from pathlib import Path

from starlette.concurrency import run_in_threadpool

from ..fulltext.store import search_path
from ..index.docstore import docs_path
from ..index.engine import QueryEngine
from ..index.pagefiles import file_key
from ..index.storage import IndexReader, sidecar_path
from ..rules.files.pagenotes import NotedPages, read_page_notes

# How often a server process looks for an index written anew (a stat of four files).
CHECK_SECONDS = 1.0

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


class ServedIndex:
    """The index a server process answers from: ``current()`` gives the newest whole one."""

    def __init__(self, engine: QueryEngine, check_seconds: float = CHECK_SECONDS):
        self._current = Served.of(engine)
        self._path = Path(engine.index.path)
        # The keys of the files opened: the index's that of the very file read (written anew since, it
        # is another), the others' as they are now (opened with it, they were checked against it).
        self._seen = (engine.index.key, *index_file_keys(self._path)[1:])
        self._check_seconds = check_seconds
        self._watching: asyncio.Task[None] | None = None  # (kept: a task only weakly held may vanish)

    def current(self) -> Served:
        """The index to answer from: the one open, or one written anew and found whole since.  Called in
        the event loop, where the first call starts the task that looks for a new one (``_watch``)."""
        if self._watching is None:
            self._watching = asyncio.get_running_loop().create_task(self._watch())
        return self._current

    async def _watch(self) -> None:
        """Every CHECK_SECONDS, the index's files looked at; when one changed, the index opened again in a
        thread (no request waits for it), answered from once it is whole.  Whatever the process's
        requests: each of a server's processes answers from the new index within seconds of another."""
        while True:
            await asyncio.sleep(self._check_seconds)
            keys = index_file_keys(self._path)
            if keys == self._seen:
                continue
            self._seen = keys  # tried once: again only when a file changes again
            opened = await run_in_threadpool(self._opened)
            if opened is not None:
                replaced, self._current = self._current, opened
                # No request is using it: they run in the event loop, and none uses the engine across an
                # await.  (Closing is the end of its use: a failure there leaves nothing to do.)
                with contextlib.suppress(Exception):
                    replaced.engine.close()

    def _opened(self) -> Served | None:
        """The index at the path opened anew, when it is as whole as the one open; else None."""
        engine = None
        try:
            engine = QueryEngine(self._current.engine.directory, IndexReader(self._path))
            opened = Served.of(engine)
            if all(new >= old for new, old in zip(opened.usable(), self._current.usable(), strict=True)):
                return opened
        except Exception as error:  # whatever the new files hold, the server goes on answering
            logger.warning(
                "tse serve: %s changed but cannot be opened (%s): answering from the index open", self._path, error
            )
        if engine is not None:
            engine.close()
        return None
