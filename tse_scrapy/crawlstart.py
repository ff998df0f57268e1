"""Before a crawl starts: check its arguments and decide how it starts.

Shared by ``tse crawl``, the project's ``scrapy crawl`` (both before Scrapy
starts, so a refusal is one line and nothing is written or fetched) and the
spider itself: a new crawl, a resumed one, a finished one (nothing to do), or
a distributed crawl, created or joined in Redis.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from .crawl.warcindex import cdxj_path
from .resume.pagedirlock import PageDirectoryLock, lock_page_directory
from .resume.startmode import StartMode, pages_saved, start_mode
from .resume.statedb import (
    CATALOG_UPDATE,
    ENDED,
    OUTPUTS,
    CrawlStateDB,
    UnreadableDatabase,
    output_files,
    state_path,
    stored_meta,
)
from .rules.crawling.changes import CHANGES_FILE
from .rules.crawling.crawlargs import (
    EXTENSION_SETTINGS,
    PAGE_LIMIT_SETTINGS,
    UNTYPED_SETTING_KINDS,
    ArgumentError,
    CrawlArgs,
    check_crawl_args,
    check_page_limit,
    check_same_crawl,
    check_same_outputs,
    check_setting_names,
    check_setting_values,
    check_yes_no_arguments,
    is_yes,
    setting_is_on,
)
from .rules.crawling.secrets import shown_message
from .rules.files import pagedir
from .rules.files.outputfile import OutputFileRefused, check_output_file
from .update import catalog

Setting = Callable[[str], Any]  # reads one setting by name
T = TypeVar("T")


@dataclass(frozen=True)
class CrawlStart:
    """How a crawl starts: its checked arguments, and its mode or its distributed crawl's name."""

    args: CrawlArgs
    mode: StartMode = StartMode.NEW
    distributed_name: str | None = None  # set for a worker of a distributed crawl
    updated_at: float | None = None  # UPDATED: when the update finished (Unix time)
    page_limit: int = 0  # LIMIT_REACHED: the page limit asked for, and the pages saved already
    saved: int = 0
    # RESUME: the crawl had ended (its close reason) when its clean-up stopped (a full disk, a kill):
    # the resume does the clean-up alone, fetching nothing (``statedb.ENDED``).
    ended: str | None = None
    # The page directory's, held by a crawl of one process that has something to do; released
    # when the crawl has closed.
    lock: PageDirectoryLock | None = field(default=None, compare=False)
    # The pages the crawl starts from, as checked here (``_check_catalog``): the spider hands them to
    # UpdateExtension.setup, which read them a second time, and which takes them (``PagesBefore.take``).
    # None: not read (a resume whose crawl state holds them).
    pages_before: catalog.PagesBefore | None = field(default=None, compare=False, repr=False)

    @property
    def update(self) -> bool:
        """A new update (a resumed one knows it is one from its crawl state)."""
        return self.mode is StartMode.UPDATE

    @property
    def nothing_to_do(self) -> str | None:
        """Why the crawl has nothing to do (a message for the user), or None."""
        if self.mode is StartMode.FINISHED:
            return f"{self.args.pagedir} holds a finished crawl: nothing to resume"
        if self.mode is StartMode.UPDATED:
            when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.updated_at or 0))
            return (
                f"{self.args.pagedir} holds an update finished at {when}: nothing to resume "
                "(to update it again, leave out --resume or -a resume=yes)"
            )
        if self.mode is StartMode.LIMIT_REACHED:
            return (
                f"the page limit ({self.page_limit}) is already reached: {self.saved} pages saved in "
                f"{self.args.pagedir}; its crawl is kept: resume it with a higher page limit, or none, to go on"
            )
        return None


# How each entry point names the options its messages speak of: the user is told what they gave.
OPTION_NAMES = {
    "tse crawl": {"update": "--update", "changes": "--changes"},
    "scrapy crawl tse": {"update": "-a update=yes", "changes": "-s TSE_CHANGES"},
}


def prepare_crawl(
    spider_args: dict[str, Any], setting: Setting, program: str = "tse crawl", given: Iterable[str] = ()
) -> CrawlStart:
    """Check the spider's arguments and the settings; raise ArgumentError (one line) to refuse.
    *program* (``OPTION_NAMES``) says how the options were given; *given* names the settings given
    (``-s``): a misspelt one is refused, one no one knows said once the crawl is to run.

    A crawl of one process holds its page directory's lock from here until it
    has closed (``CrawlStart.lock``, ``resume/pagedirlock.py``); one that is
    refused, or has nothing to do, lets it go.  With TSE_REDIS_URL, the
    distributed crawl is created in Redis (first worker) or joined (later ones).
    """
    check_yes_no_arguments(spider_args)
    unknown = check_setting_names(given, known_setting_names())
    if setting("TSE_REDIS_URL"):
        check_setting_values(setting_defaults(), setting)
        start = _prepare_distributed_crawl(spider_args, setting)
        _warn_unknown_settings(program, unknown)
        return start
    args = check_crawl_args(**spider_args)
    check_setting_values(setting_defaults(), setting)
    lock = lock_page_directory(args.pagedir)
    try:
        start = _prepare_local_crawl(args, spider_args, setting, OPTION_NAMES[program])
    except BaseException:
        lock.release()
        raise
    if start.nothing_to_do:
        lock.release()
        return start
    _warn_unknown_settings(program, unknown)
    return replace(start, lock=lock)


def _warn_unknown_settings(program: str, unknown: list[str]) -> None:
    """One line a setting given that nothing this crawl runs reads (said, not refused: a user's own
    extension may read it), once the crawl is to run."""
    for name in unknown:
        said = (
            f"-s {name} is not a setting of Scrapy, tse or their extensions (only an extension of yours would read it)"
        )
        sys.stderr.write(f"{program}: warning: {shown_message(said)}\n")  # (its control characters escaped)


def known_setting_names() -> frozenset[str]:
    """The names of the settings a crawl's code reads: Scrapy's and the project's (``setting_defaults``),
    those without a default (``UNTYPED_SETTING_KINDS``) and its extensions' (``EXTENSION_SETTINGS``)."""
    return frozenset(setting_defaults()) | UNTYPED_SETTING_KINDS.keys() | EXTENSION_SETTINGS


# Settings whose default is an int that Scrapy reads as a float (``settings.getfloat``): 2.5 is good.
# (tests/test_crawl_settings.py checks the list against every getfloat in Scrapy and in tse_scrapy.)
READ_AS_FLOAT = ("DNS_TIMEOUT", "DOWNLOAD_TIMEOUT")


def page_limit(setting: Setting) -> int:
    """The crawl's page limit (0: none), as the spider takes it: CLOSESPIDER_PAGECOUNT, else
    TSE_MAX_PAGES (both checked already by ``check_setting_values``)."""
    for name in PAGE_LIMIT_SETTINGS:
        value = setting(name)
        limit = check_page_limit(value, f"-s {name}") if value is not None else 0
        if limit:
            return limit
    return 0


def setting_defaults() -> dict[str, Any]:
    """Every setting's default, Scrapy's (``scrapy.settings.default_settings``) overridden by the
    project's (``tse_scrapy/settings.py``), as ``check_setting_values`` reads them: a default's type
    says how Scrapy converts the setting (an int read as a float is given as a float)."""
    from scrapy.settings import default_settings

    from . import settings as project

    defaults: dict[str, Any] = {}
    for module in (default_settings, project):
        defaults.update((name, getattr(module, name)) for name in dir(module) if name.isupper())
    for name in READ_AS_FLOAT:
        if type(defaults.get(name)) is int:
            defaults[name] = float(defaults[name])
    return defaults


def _prepare_local_crawl(
    args: CrawlArgs, spider_args: dict[str, Any], setting: Setting, option: dict[str, str]
) -> CrawlStart:
    update = is_yes(spider_args.get("update"))
    resume = is_yes(spider_args.get("resume"))
    keeps_catalog = update or setting_is_on(setting("TSE_VALIDATORS"))
    no_state = setting("TSE_STATE_ENABLED") is not None and not setting_is_on(setting("TSE_STATE_ENABLED"))
    if no_state and keeps_catalog:
        raise ArgumentError("an update, and validators, need the crawl state (TSE_STATE_ENABLED)")
    if keeps_catalog and setting("JOBDIR"):
        raise ArgumentError("an update, and validators, keep their state in PAGEDIR: drop JOBDIR")
    stored = finished = None
    if keeps_catalog or setting("TSE_WARC"):  # a crawl that reads and writes the page catalog
        try:
            stored = catalog.catalog_arguments(args.pagedir)
            finished = catalog.finished_update(args.pagedir) if update and resume else None
        except UnreadableDatabase as error:
            raise ArgumentError(f"cannot read the page catalog: {error}") from None
    update_finished = finished is not None and finished.outputs == output_files(setting)
    mode = start_mode(args, resume, setting("JOBDIR"), update, update_finished=update_finished)
    ended = None
    if mode is StartMode.RESUME:
        _check_same_outputs(args, setting)
        try:
            ended = stored_meta(state_path(args.pagedir, setting("JOBDIR")), ENDED)
        except UnreadableDatabase as error:
            raise ArgumentError(f"cannot read the crawl state: {error}") from None
        # A page limit the crawl has reached already: the scheduler would hand out no page, and the
        # crawl would end at once on its page limit, its state removed. Nothing is done, and the
        # state stays for a resume with a higher limit.  (Not when the crawl had ended, at its
        # limit or not, and its clean-up had not: that is what is left to do.)
        limit = page_limit(setting) if ended is None else 0
        saved = pages_saved(args, setting("JOBDIR")) if limit else 0
        if limit and saved >= limit:
            return CrawlStart(args, StartMode.LIMIT_REACHED, page_limit=limit, saved=saved)
    if mode is StartMode.FINISHED:
        return CrawlStart(args, mode)  # nothing will be written: the output files are not looked at
    if mode in (StartMode.UPDATE, StartMode.UPDATED):
        if stored is not None:
            check_same_crawl(args, stored, "update", _SAME_SITE)
        if mode is StartMode.UPDATED:
            return CrawlStart(args, mode, updated_at=finished.at)
        _readable_for_update(pagedir.check_page_files, args.pagedir)  # the update reads them all
    pages_before = None
    if keeps_catalog or setting("TSE_WARC"):
        pages_before = _check_catalog(args, mode, setting("JOBDIR"))
        if no_state:  # (a WARC without a crawl state: no UpdateExtension takes them)
            pages_before = None
    if setting("TSE_CHANGES") and mode is StartMode.NEW:
        raise ArgumentError(f"{option['changes']} goes with {option['update']} (a first crawl's pages are all new)")
    _check_output_files(setting, args.pagedir, append=mode is StartMode.RESUME, resume=resume, update=update)
    if mode is not StartMode.RESUME and not no_state:
        _try_state(args, setting)
    return CrawlStart(args, mode, ended=ended, pages_before=pages_before)


def _check_catalog(args: CrawlArgs, mode: StartMode, jobdir: str | None) -> catalog.PagesBefore | None:
    """Read the page catalog's pages, and an update's ``.tse-gone``, as the crawl would once it has
    begun (``UpdateExtension.setup``: a new crawl, or one stopped before it had read them), and
    refuse the crawl in one line when one cannot be read: a row or a list edited by hand, or written
    by another program.  Found by then, it was a traceback, and a crawl state was left behind.  The
    pages read, for the crawl to take (None: a resume whose crawl state holds them)."""
    if mode is StartMode.RESUME:
        try:
            if stored_meta(state_path(args.pagedir, jobdir), "update_id") is not None:
                return None  # read already: the crawl state holds them
            update = stored_meta(state_path(args.pagedir, jobdir), "catalog") == CATALOG_UPDATE
        except UnreadableDatabase as error:
            raise ArgumentError(f"cannot read the crawl state: {error}") from None
    elif mode in (StartMode.NEW, StartMode.UPDATE):
        update = mode is StartMode.UPDATE
    else:
        return None
    try:
        if update:  # (the catalog, then .tse-gone: a catalog's error is said first)
            return catalog.PagesBefore(True, _readable_for_update(catalog.pages_before_update, args.pagedir))
        return catalog.PagesBefore(False, catalog.read_catalog(args.pagedir) or [])
    except UnreadableDatabase as error:
        raise ArgumentError(f"cannot read the page catalog: {error}") from None


def _readable_for_update(read: Callable[[str], T], directory: str) -> T:
    """*read* (the page files' check, the pages before an update) of *directory*; ArgumentError, in one
    line, when what an update reads cannot be read."""
    try:
        return read(directory)
    except pagedir.PageFileError as error:
        raise ArgumentError(f"cannot update: {error}") from None
    except OSError as error:
        raise ArgumentError(f"cannot update: {error.filename}: {error.strerror}") from None


def _check_same_outputs(args: CrawlArgs, setting: Setting) -> None:
    """A resume names the output files of the crawl it goes on with (``--warc``, ``--record``,
    ``--changes``): otherwise the WARC or the record would lack the rest of the crawl (and the
    WARC its CDXJ), or hold only it.  A state made before it kept them says nothing."""
    try:
        stored = stored_meta(state_path(args.pagedir, setting("JOBDIR")), OUTPUTS)
    except UnreadableDatabase as error:
        raise ArgumentError(f"cannot read the crawl state: {error}") from None
    try:
        outputs = json.loads(stored) if stored is not None else None
    except ValueError:
        outputs = None
    if isinstance(outputs, dict):
        check_same_outputs(outputs, output_files(setting))


def _try_state(args: CrawlArgs, setting: Setting) -> None:
    """Make the new crawl's state and remove it again, or refuse the crawl in one line when it cannot be
    written (a full disk, a file-size limit): made once Scrapy has started (``CrawlStateExtension``), it
    failed with a traceback.  A state that cannot be made leaves no file behind (``CrawlStateDB``), so a
    later crawl starts anew.  (There is no state to keep: a new crawl's has no arguments yet.  Nor is one
    left: a crawl given EXTENSIONS of its own may keep none.)"""
    path = state_path(args.pagedir, setting("JOBDIR"))
    try:
        CrawlStateDB(path, synchronous=setting("TSE_STATE_SYNCHRONOUS") or "NORMAL").close(remove=True)
    except sqlite3.Error as error:
        raise ArgumentError(f"cannot write the crawl state: {error}") from None
    except OSError as error:
        raise ArgumentError(f"cannot write the crawl state: {error.strerror or error}") from None


def _prepare_distributed_crawl(spider_args: dict[str, Any], setting: Setting) -> CrawlStart:
    if is_yes(spider_args.get("update")) or setting_is_on(setting("TSE_VALIDATORS")):
        raise ArgumentError("an update, and validators, are for a crawl of one process: drop --redis")
    try:
        from .distributed.join import check_no_page_limit, create_or_join_crawl
    except ImportError as error:
        raise ArgumentError(
            f"a distributed crawl needs the redis extra (pip install tse-scrapy[redis]): {error}"
        ) from None
    check_no_page_limit(setting)
    # scrapy_redis's scheduler says "Resuming crawl (N requests scheduled)" with Spider.log(), which
    # Scrapy deprecates: a worker joining a crawl under way would show the deprecation warning on an
    # otherwise quiet stderr, about code that is not the project's.  Only that warning is silenced.
    from scrapy.exceptions import ScrapyDeprecationWarning

    warnings.filterwarnings(
        "ignore",
        message=r"Spider\.log\(\) is deprecated",
        category=ScrapyDeprecationWarning,
        module=r"scrapy_redis\.",
    )
    crawl, args, _ = create_or_join_crawl(
        setting("TSE_REDIS_URL"), setting("TSE_CRAWL_NAME"), spider_args, setting_is_on(setting("TSE_REDIS_MIGRATE"))
    )
    _check_output_files(setting, args.pagedir, append=True)  # a worker may restart and go on with its WARC
    return CrawlStart(args, distributed_name=crawl.name)


# What must match for an update: the same site, depth and filters (the order
# and the link scanner may differ: an update may revisit in priority order).
# Only a crawl that kept a catalog says what it was; a directory without one
# is taken as the user says.
_SAME_SITE = ("seed", "depth", "prefix", "allow", "deny", "deny_ext", "pdf", "sitemaps", "render")


def _check_output_files(
    setting: Setting, page_directory: str, *, append: bool, resume: bool = False, update: bool = False
) -> None:
    """The WARC, record, changes and log files can be written, are distinct, and are none of the page
    directory's own files; the changes file replaces only a changes file, an empty file or nothing
    (``CHANGES_FILE``: no device, no file of another page directory); a new crawl or *update* never
    overwrites a WARC or a record (even when asked to *resume*: there was nothing to resume, so no crawl
    was writing them)."""
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
        # This crawl's page directory, or any other (one holding .crawler): a --log-file or --record
        # named after another crawl's page file would be appended to it (a review's find).  (--changes
        # in another's is check_output_file's, below, which names what the file is.)
        directory = os.path.dirname(real)
        in_page_directory = directory == os.path.realpath(page_directory) or (
            name != "--changes" and os.path.lexists(os.path.join(directory, pagedir.MARKER))
        )
        if in_page_directory and pagedir.is_page_directory_file(os.path.basename(real)):
            raise ArgumentError(f"{name}: {path} is a file of the page directory {directory}")
        if name == "--changes":  # replaced whole at the end: only last time's changes, an empty file, or nothing
            try:
                check_output_file(path, CHANGES_FILE)
            except OutputFileRefused as error:
                raise ArgumentError(f"{name}: {error}") from None
    warc = outputs["--warc"]
    if warc and not str(warc).endswith(".warc.gz"):
        raise ArgumentError(f"--warc: the file name must end in .warc.gz: {warc}")
    if warc:
        # The WARC's index, written beside it at the end (crawl.warc.gz -> crawl.cdxj), replaced whole: it
        # overwrote a --record, --changes or --log-file of its name (a reviewer's find).
        index = cdxj_path(warc)
        if (other := seen.get(os.path.realpath(index))) is not None:
            raise ArgumentError(f"{other}: {outputs[other]} is the index --warc {warc} writes beside it ({index.name})")
    for name, what in (("--warc", "a new WARC file"), ("--record", "a new record")):
        path = outputs[name]
        if path and os.path.exists(path) and not append:
            if resume:
                raise ArgumentError(
                    f"{name}: {path} exists, and no interrupted crawl of {page_directory} was writing it"
                )
            if update:
                # A finished crawl or update: nothing of it is left to append (--resume says so).
                raise ArgumentError(f"{name}: {path} exists: an update writes {what}: give a new file name")
            # (Not "--resume appends": that goes on only with an interrupted crawl's own file, and was
            # refused for this one, which no crawl of the directory was writing: a helper's find.)
            raise ArgumentError(
                f"{name}: {path} exists: a new crawl writes {what}: give a new file name"
                " (--resume goes on with an interrupted crawl's own)"
            )
