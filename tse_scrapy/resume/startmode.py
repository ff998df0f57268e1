"""How a crawl into a page directory starts: new, resumed, or already finished.

The durable state (``statedb``) exists from a crawl's start until it has
finished; a directory with page files and no state file holds a finished crawl.
No Scrapy import: the commands decide this before Scrapy starts.
"""

from __future__ import annotations

import enum
import os

from ..rules.crawlargs import ArgumentError, CrawlArgs, check_no_pages
from ..rules.pagedir import holds_pages
from .statedb import state_path, stored_arguments


class StartMode(enum.Enum):
    """How a crawl starts."""

    NEW = "new"
    RESUME = "resume"
    FINISHED = "finished"  # asked to resume a crawl that has finished: nothing to do


def start_mode(args: CrawlArgs, resume: bool = False, jobdir: str | os.PathLike | None = None) -> StartMode:
    """How the crawl of *args* starts; ArgumentError when it must not (it would
    mix with or overwrite another crawl's pages)."""
    path = state_path(args.pagedir, jobdir)
    stored = stored_arguments(path)
    if stored is None:
        if resume and not path.exists() and holds_pages(args.pagedir):
            return StartMode.FINISHED
        check_no_pages(args.pagedir)
        return StartMode.NEW
    if not (resume or jobdir):
        raise ArgumentError(
            f"{args.pagedir} holds an interrupted crawl of {stored['seed']}: "
            f"continue it with --resume (-a resume=yes), or use an empty directory"
        )
    for name, value in args.identity().items():
        if stored.get(name) != value:
            raise ArgumentError(f"cannot resume: {name} was {stored.get(name)} and is now {value}")
    return StartMode.RESUME
