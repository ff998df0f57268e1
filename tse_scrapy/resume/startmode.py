"""How a crawl into a page directory starts: new, resumed, or already finished.

The durable state (``statedb``) exists from a crawl's start until it has
finished: it is made before any other file of the crawl and removed after all
of them are whole.  A directory with page files and no state file holds a
finished crawl, which ``--update`` may crawl again in place, or an update
stopped before it had written anything.
No Scrapy import: the commands decide this before Scrapy starts.
"""

from __future__ import annotations

import enum
import os

from ..rules.crawling.crawlargs import ArgumentError, CrawlArgs, check_no_pages, check_same_crawl
from ..rules.files.pagedir import holds_pages, page_path
from .statedb import (
    CATALOG_UPDATE,
    CATALOG_VALIDATORS,
    UnreadableDatabase,
    check_requests,
    query_read_only,
    state_path,
    stored_arguments,
    stored_meta,
)


class StartMode(enum.Enum):
    """How a crawl starts."""

    NEW = "new"
    RESUME = "resume"
    FINISHED = "finished"  # asked to resume a crawl that has finished: nothing to do
    UPDATE = "update"  # crawl a finished crawl again, in place
    UPDATED = "updated"  # asked to resume an update that has finished: nothing to do
    LIMIT_REACHED = "limit reached"  # asked to resume a crawl with a page limit it has reached: nothing to do


def start_mode(
    args: CrawlArgs,
    resume: bool = False,
    jobdir: str | os.PathLike | None = None,
    update: bool = False,
    update_finished: bool = False,
) -> StartMode:
    """How the crawl of *args* starts; ArgumentError when it must not (it would
    mix with or overwrite another crawl's pages).

    *update_finished*: the catalog says that the last update of the directory,
    with the output files this one names, has finished."""
    path = state_path(args.pagedir, jobdir)
    try:
        stored = stored_arguments(path)
        catalog_mode = stored_meta(path, "catalog") if stored is not None else None
    except UnreadableDatabase as error:
        raise ArgumentError(f"cannot read the crawl state: {error}") from None
    if stored is None:
        if update:
            if not holds_pages(args.pagedir):
                raise ArgumentError(f"{args.pagedir} holds no crawl to update: crawl it first (without --update)")
            # Without a state, an update to resume has either finished or not written anything
            # yet (killed before it made its state): then it starts again, from the beginning.
            return StartMode.UPDATED if resume and update_finished else StartMode.UPDATE
        if resume and not path.exists() and holds_pages(args.pagedir):
            return StartMode.FINISHED
        check_no_pages(args.pagedir, args.seeds)
        return StartMode.NEW
    interrupted = "update" if catalog_mode == CATALOG_UPDATE else "crawl"
    if not (resume or jobdir):
        again = "--update --resume" if interrupted == "update" else "--resume (-a resume=yes)"
        raise ArgumentError(
            f"{args.pagedir} holds an interrupted {interrupted} of {stored['seed']}: "
            f"continue it with {again}, or use an empty directory"
        )
    if update and interrupted != "update":
        raise ArgumentError(f"{args.pagedir} holds an interrupted crawl, not an update: continue it with --resume")
    check_same_crawl(args, stored, "resume")
    try:
        check_requests(path)  # a damaged or foreign state: one line now, not a traceback in the scheduler
    except UnreadableDatabase as error:
        raise ArgumentError(f"cannot read the crawl state: {error}") from None
    return StartMode.RESUME


def pages_saved(args: CrawlArgs, jobdir: str | os.PathLike | None = None) -> int:
    """The pages the interrupted crawl of *args* has saved, as its page limit counts them when it
    resumes (``TseScheduler._restore``): the docIDs it has given (a crawl with a catalog: the pages
    it has recorded), less those recorded whose files are lost (fetched again).  Read-only;
    ArgumentError when the state cannot be read."""
    path = state_path(args.pagedir, jobdir)
    try:
        catalog_mode = stored_meta(path, "catalog")
        if catalog_mode in (CATALOG_UPDATE, CATALOG_VALIDATORS):
            (count,) = (query_read_only(path, "SELECT COUNT(*) FROM pages") or [(0,)])[0]
        else:
            count = int(stored_meta(path, "next_doc_id") or 1) - 1
        recorded = query_read_only(path, "SELECT doc_id FROM pages") or []
    except UnreadableDatabase as error:
        raise ArgumentError(f"cannot read the crawl state: {error}") from None
    lost = sum(1 for (doc_id,) in recorded if not page_path(args.pagedir, doc_id).is_file())
    return count - lost
