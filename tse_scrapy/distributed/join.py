"""Creating a distributed crawl (the first worker) or joining it (every later one).

No Scrapy import: the commands do this before Scrapy starts, so a refused
worker exits with one line and nothing started.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from typing import Any

import redis

from ..resume.statedb import state_path
from ..rules.crawling.crawlargs import (
    ArgumentError,
    CrawlArgs,
    check_crawl_args,
    check_crawl_name,
    check_no_pages,
    crawl_name,
    split_list,
)
from ..rules.crawling.secrets import mask_url
from ..rules.files import pagedir as pagedirs
from ..rules.web.urls import normalize_url
from .store import CRAWL_FORMAT, PICKLED_FORMAT, RedisCrawl, connect, redis_url

# The crawls this process created (the extension stores their politeness: RedisCrawl.set_delay).
CREATED_HERE: set[str] = set()

# The arguments a joining worker may give that must match the crawl's.
SHARED_ARGUMENTS = ("seed", "depth", "links", "prefix", "allow", "deny", "deny_ext", "pdf", "sitemaps", "render")


def check_no_page_limit(setting: Callable[[str], Any]) -> None:
    """A distributed crawl has no page limit (its workers save pages independently)."""
    if any(str(setting(name) or 0).strip() not in ("", "0") for name in ("CLOSESPIDER_PAGECOUNT", "TSE_MAX_PAGES")):
        raise ArgumentError("a page limit is not available in a distributed crawl")


def create_or_join_crawl(
    given_url: str, name: str | None, arguments: dict[str, Any], migrate: bool = False
) -> tuple[RedisCrawl, CrawlArgs, bool]:
    """Connect, then create the crawl (first worker) or join it (later workers).

    *arguments* are the spider's (seed, pagedir, depth, ...; a joining worker
    may give none).  Returns the crawl, its checked arguments (the stored ones,
    with this worker's pagedir when given) and whether this worker created it.
    A crawl begun before requests were stored as data is converted first if
    *migrate* (``migrate.py``), else refused.  Raises ArgumentError with a
    one-line message (the URL's password masked).
    """
    given = {
        key: value for key, value in arguments.items() if value not in (None, "") and key not in ("order", "resume")
    }
    if arguments.get("order") not in (None, "", "bfs"):
        raise ArgumentError(f"a distributed crawl is breadth-first: order={arguments['order']} is not possible")
    if name is None:
        if "seed" not in given:
            raise ArgumentError("a distributed crawl needs its seed(s) or its name (TSE_CRAWL_NAME)")
        name = crawl_name([normalize_url(url) or url for url in split_list(given["seed"])])
    check_crawl_name(name)
    crawl = RedisCrawl(connect(given_url), name)
    shown_url = mask_url(redis_url(given_url))
    try:
        stored = crawl.parameters()
        leftovers = crawl.leftover_keys() if stored is None else []
    except (redis.RedisError, ValueError) as error:  # not a crawl's record (another program's key?)
        raise ArgumentError(f"cannot read crawl {name} in Redis at {shown_url}: {error}") from None
    k = crawl.keys
    if stored is None:
        if {k.seen, k.doc_id, k.push_id, k.seeded, k.finishing} & set(leftovers):
            # A crawl whose record Redis lost (restarted without persistence): its seen set, docID
            # counter, finishing mark ... would mislead a new crawl under its name (URLs and docIDs
            # skipped, no clean-up), and nothing says which pages they were.  (Entries of the other
            # structures are checked, and quarantined, as the crawl meets them.)
            shown = ", ".join(leftovers[:4]) + (f" and {len(leftovers) - 4} more" if len(leftovers) > 4 else "")
            raise ArgumentError(
                f"Redis at {shown_url} holds {len(leftovers)} leftover key(s) of a crawl named {name} whose "
                f"record is lost ({shown}): remove them (redis-cli --scan --pattern 'tse:{name}:*', then DEL "
                "each), or give another --name"
            )
        if "seed" not in given:
            raise ArgumentError(
                f"no crawl named {name} in Redis at {shown_url}: start it with its seed, pagedir and depth"
            )
        checked = check_crawl_args(**given, order="bfs")
        if state_path(checked.pagedir).exists():
            # (Its pages were taken for a finished crawl's: "crawl it again with --update", a review's find.)
            raise ArgumentError(
                f"{checked.pagedir} holds a crawl in one process, interrupted or still running: continue it "
                "with --resume (in one process), or crawl into an empty directory"
            )
        check_no_pages(checked.pagedir, checked.seeds, distributed=True)
        try:
            pagedirs.mark(checked.pagedir)  # before the crawl exists: a worker joining finds it
        except OSError as error:
            raise ArgumentError(f"cannot create {checked.pagedir}/{pagedirs.MARKER}: {error.strerror}") from None
        # The directory as an absolute path: a worker joining from another folder finds it.  The id
        # tells this crawl from a later one of the same name and arguments (store.RedisCrawl.join).
        wanted = {
            **checked.identity(),
            "pagedir": os.path.abspath(checked.pagedir),
            "format": CRAWL_FORMAT,
            "id": secrets.token_hex(8),
        }
        try:
            stored = crawl.create(wanted)
        except redis.RedisError as error:  # gone since the read above: the same one line as then
            raise ArgumentError(f"cannot create crawl {name} in Redis at {shown_url}: {error}") from None
        if stored == wanted:
            CREATED_HERE.add(name)
            return crawl, checked, True
    if stored.get("format") == PICKLED_FORMAT:
        if not migrate:
            raise ArgumentError(
                f"crawl {name} in Redis at {shown_url} was begun by an earlier version of tse-scrapy, "
                "which stored requests pickled: stop its workers, then start one with --migrate "
                "(-s TSE_REDIS_MIGRATE=True) to convert it, checking every entry and running none"
            )
        from .migrate import migrate_crawl

        stored = migrate_crawl(crawl, stored)
    if stored.get("format") != CRAWL_FORMAT:
        raise ArgumentError(
            f"crawl {name} in Redis at {shown_url} was begun by another version of tse-scrapy "
            f"(crawl format {stored.get('format', 1)}, this one reads {CRAWL_FORMAT}): "
            f"finish it with that version, or remove its keys (tse:{name}:*) and start again"
        )
    check_not_finished(crawl, stored, shown_url)
    merged = {key: stored.get(key) for key in (*SHARED_ARGUMENTS, "pagedir")}
    checked = check_crawl_args(**{**merged, **given}, order="bfs")
    for key in SHARED_ARGUMENTS:
        if key in given and checked.identity()[key] != stored.get(key):
            raise ArgumentError(f"crawl {name} has {key}={stored.get(key)}, not {checked.identity()[key]}")
    # A crawl of this version (it has an id) marked its directory before it existed.
    if "id" in stored and not os.path.isfile(os.path.join(checked.pagedir, pagedirs.MARKER)):
        # Not the crawl's directory (a relative path taken from another folder, or a mount missing):
        # its pages would be saved where no other worker's are.
        raise ArgumentError(
            f"{checked.pagedir} holds no {pagedirs.MARKER}: it is not crawl {name}'s page directory "
            f"({stored.get('pagedir')}); give the page directory as this machine mounts it"
        )
    return crawl, checked, False


def check_not_finished(crawl: RedisCrawl, stored: dict[str, Any], shown_url: str) -> None:
    """ArgumentError when the crawl is over, its keys kept (``--keep``) or being removed: a worker
    joining it would do nothing.  (Over but not cleaned up, its last worker killed: one that joins
    cleans it up.)"""
    k = crawl.keys
    pipe = crawl.server.pipeline()
    pipe.pttl(k.finishing)
    pipe.exists(k.keep)
    pipe.hlen(k.pages)
    try:
        expires_in, kept, pages = pipe.execute()
    except redis.RedisError:  # a key of the wrong type: the workers name it (store.refused_line)
        return
    if expires_in == -2:  # no mark
        return
    state = "finished (kept with --keep)" if kept else "finishing (its last worker is removing its keys)"
    if not kept and expires_in >= 0:
        # The mark names its worker and expires unless renewed: that worker may have been killed in its clean-up.
        state = (
            "finishing (its last worker is removing its keys; if that worker was stopped, its mark"
            f" goes within {-(-expires_in // 1000)} s, and a worker started then finishes the crawl)"
        )
    raise ArgumentError(
        f"crawl {crawl.name} in Redis at {shown_url} is {state}: {pages} pages saved in {stored.get('pagedir')}; "
        f"to crawl again, give another --name, or remove its keys (tse:{crawl.name}:*) first"
    )
