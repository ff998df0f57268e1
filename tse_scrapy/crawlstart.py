"""Before a crawl starts: check its arguments and decide how it starts.

Shared by ``tse crawl``, the project's ``scrapy crawl`` (both before Scrapy
starts, so a refusal is one line and nothing is written or fetched) and the
spider itself: a new crawl, a resumed one, a finished one (nothing to do), or
a distributed crawl, created or joined in Redis.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .resume.startmode import StartMode, start_mode
from .rules import pagedir
from .rules.crawlargs import ArgumentError, CrawlArgs, check_crawl_args, check_same_crawl, is_yes
from .update.catalog import catalog_arguments

Setting = Callable[[str], Any]  # reads one setting by name


@dataclass(frozen=True)
class CrawlStart:
    """How a crawl starts: its checked arguments, and its mode or its distributed crawl's name."""

    args: CrawlArgs
    mode: StartMode = StartMode.NEW
    distributed_name: str | None = None  # set for a worker of a distributed crawl

    @property
    def update(self) -> bool:
        """A new update (a resumed one knows it is one from its crawl state)."""
        return self.mode is StartMode.UPDATE

    @property
    def nothing_to_do(self) -> str | None:
        """Why the crawl has nothing to do (a message for the user), or None."""
        if self.mode is StartMode.FINISHED:
            return f"{self.args.pagedir} holds a finished crawl: nothing to resume"
        return None


def prepare_crawl(spider_args: dict[str, Any], setting: Setting) -> CrawlStart:
    """Check the spider's arguments and the settings; raise ArgumentError (one line) to refuse.

    With TSE_REDIS_URL, the distributed crawl is created in Redis (first
    worker) or joined (later ones).
    """
    redis_url = setting("TSE_REDIS_URL")
    update = is_yes(spider_args.get("update"))
    if not redis_url:
        args = check_crawl_args(**spider_args)
        mode = start_mode(args, is_yes(spider_args.get("resume")), setting("JOBDIR"), update)
        if mode is StartMode.UPDATE:
            stored = catalog_arguments(args.pagedir)
            if stored is not None:
                check_same_crawl(args, stored, "update", _SAME_SITE)
            try:
                pagedir.check_page_files(args.pagedir)  # the update reads them all
            except pagedir.PageFileError as error:
                raise ArgumentError(f"cannot update: {error}") from None
            except OSError as error:
                raise ArgumentError(f"cannot update: {error.filename}: {error.strerror}") from None
        keeps_catalog = update or is_yes(setting("TSE_VALIDATORS"))
        no_state = setting("TSE_STATE_ENABLED") is not None and not is_yes(setting("TSE_STATE_ENABLED"))
        if no_state and keeps_catalog:
            raise ArgumentError("an update, and validators, need the crawl state (TSE_STATE_ENABLED)")
        if keeps_catalog and setting("JOBDIR"):
            raise ArgumentError("an update, and validators, keep their state in PAGEDIR: drop JOBDIR")
        if setting("TSE_CHANGES") and mode is StartMode.NEW:
            raise ArgumentError("--changes goes with --update (a first crawl's pages are all new)")
        _check_output_files(setting, args.pagedir, append=mode is StartMode.RESUME)
        return CrawlStart(args, mode)
    if update or is_yes(setting("TSE_VALIDATORS")):
        raise ArgumentError("an update, and validators, are for a crawl of one process: drop --redis")
    try:
        from .distributed.join import check_no_page_limit, create_or_join_crawl
    except ImportError as error:
        raise ArgumentError(
            f"a distributed crawl needs the redis extra (pip install tse-scrapy[redis]): {error}"
        ) from None
    check_no_page_limit(setting)
    crawl, args, _ = create_or_join_crawl(redis_url, setting("TSE_CRAWL_NAME"), spider_args)
    _check_output_files(setting, args.pagedir, append=True)  # a worker may restart and go on with its WARC
    return CrawlStart(args, distributed_name=crawl.name)


def _is_page_directory_file(name: str) -> bool:
    """A page file, the marker, or one of the crawl's own files (.tse-state.sqlite, .tse-gone ...)."""
    return pagedir.is_page_name(name) or name == pagedir.MARKER or name.startswith(".tse-")


# What must match for an update: the same site, depth and filters (the order
# and the link scanner may differ: an update may revisit in priority order).
# Only a crawl that kept a catalog says what it was; a directory without one
# is taken as the user says.
_SAME_SITE = ("seed", "depth", "prefix", "allow", "deny", "deny_ext")


def _check_output_files(setting: Setting, page_directory: str, *, append: bool) -> None:
    """The WARC, record, changes and log files can be written, are distinct, and are none of the page
    directory's own files; a new crawl never overwrites a WARC or a record."""
    outputs = {
        "--warc": setting("TSE_WARC"),
        "--record": setting("TSE_RECORD"),
        "--changes": setting("TSE_CHANGES"),
        "--log-file": setting("LOG_FILE"),
    }
    seen: dict[str, str] = {}
    for name, path in outputs.items():
        if not path:
            continue
        path = str(path)
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise ArgumentError(f"{name}: no directory {directory}")
        if os.path.isdir(path):
            raise ArgumentError(f"{name}: {path} is a directory")
        real = os.path.realpath(path)
        if real in seen:
            raise ArgumentError(f"{name}: {path} is also the {seen[real]} file")
        seen[real] = name
        in_page_directory = os.path.dirname(real) == os.path.realpath(page_directory)
        if in_page_directory and _is_page_directory_file(os.path.basename(real)):
            raise ArgumentError(f"{name}: {path} is a file of the page directory")
    warc = outputs["--warc"]
    if warc and not str(warc).endswith(".warc.gz"):
        raise ArgumentError(f"--warc: the file name must end in .warc.gz: {warc}")
    for name, what in (("--warc", "a new WARC file"), ("--record", "a new record")):
        path = outputs[name]
        if path and os.path.exists(path) and not append:
            raise ArgumentError(f"{name}: {path} exists: a new crawl writes {what} (--resume appends)")
