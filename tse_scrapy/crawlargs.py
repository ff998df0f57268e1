"""Checking the crawler's arguments (SPEC 2.1, 2.4) before anything is written or fetched."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from .pagedir import MARKER
from .state import state_path, stored_arguments
from .urls import DEFAULT_PREFIX, is_internal, normalize_url

ORDERS = ("tse", "bfs", "priority")
LINK_EXTRACTORS = ("html", "tse")
MAX_DEPTH = 10


class ArgumentError(ValueError):
    """A bad argument; its message is the one line shown to the user."""


@dataclass(frozen=True)
class CrawlArgs:
    seeds: tuple[str, ...]
    pagedir: str
    depth: int
    order: str = "tse"
    links: str = "html"
    prefixes: tuple[str, ...] = (DEFAULT_PREFIX,)
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    deny_ext: str | None = None

    @property
    def seed(self) -> str:
        return self.seeds[0]

    def identity(self) -> dict:
        """What a resumed crawl (or a worker joining it) must share with the crawl it continues."""
        return {"seed": ",".join(self.seeds), "depth": self.depth, "order": self.order, "links": self.links,
                "prefix": ",".join(self.prefixes), "allow": ",".join(self.allow),
                "deny": ",".join(self.deny), "deny_ext": self.deny_ext}


def check_crawl_args(seed=None, pagedir=None, depth=None, order=None, links="html",
                     prefix=None, resume=None, allow=None, deny=None, deny_ext=None, **_ignored) -> CrawlArgs:
    """Return the checked arguments, or raise ArgumentError.

    ``seed`` may list several URLs, comma-separated.  Other keyword arguments
    (scrapyd's ``_job``, ...) are ignored.
    """
    for name, value in (("seed", seed), ("pagedir", pagedir), ("depth", depth)):
        if value is None or value == "":
            raise ArgumentError(f"missing argument: {name}")
    prefixes = _check_prefixes(prefix)
    for value, name in ((allow, "allow"), (deny, "deny")):
        try:
            check_patterns(value, name)
        except ValueError as error:
            raise ArgumentError(str(error)) from None
    seeds = []
    for url in split_list(seed):
        normalized = normalize_url(url, tse_extensions=deny_ext is None)
        if normalized is None:
            raise ArgumentError(f"seed URL cannot be normalized: {url}")
        if not is_internal(normalized, prefixes):
            raise ArgumentError(f"seed URL is not internal (prefix {', '.join(prefixes)}): {url}")
        if normalized not in seeds:
            seeds.append(normalized)
    if not seeds:
        raise ArgumentError("missing argument: seed")
    max_depth = _check_depth(depth)
    order = order or "tse"
    if order not in ORDERS:
        raise ArgumentError(f"order must be one of {', '.join(ORDERS)}: {order}")
    if links not in LINK_EXTRACTORS:
        raise ArgumentError(f"links must be one of {', '.join(LINK_EXTRACTORS)}: {links}")
    _check_pagedir(str(pagedir))
    return CrawlArgs(tuple(seeds), str(pagedir), max_depth, order, links, prefixes,
                     tuple(split_list(allow)), tuple(split_list(deny)),
                     None if deny_ext is None else ",".join(split_list(deny_ext)))


def check_resume(args: CrawlArgs, resume=False, jobdir=None) -> bool:
    """Whether the crawl resumes an interrupted one; raise ArgumentError when
    it must not start (it would mix with or overwrite another crawl's pages)."""
    stored = stored_arguments(state_path(args.pagedir, jobdir))
    if stored is None:
        if any(name.isdigit() for name in os.listdir(args.pagedir)):
            raise ArgumentError(f"{args.pagedir} already holds the pages of another crawl; "
                                f"crawl into an empty directory")
        return False
    if not (is_yes(resume) or jobdir):
        raise ArgumentError(f"{args.pagedir} holds an interrupted crawl of {stored['seed']}: "
                            f"continue it with --resume (-a resume=yes), or use an empty directory")
    for name, value in args.identity().items():
        if stored.get(name) != value:
            raise ArgumentError(f"cannot resume: {name} was {stored.get(name)} and is now {value}")
    return True


def crawl_name(seeds) -> str:
    """The default name of a distributed crawl: the first seed's host and a
    digest of all the seeds, so workers given the same seeds find each other."""
    seeds = split_list(seeds)
    digest = hashlib.sha1(",".join(seeds).encode()).hexdigest()[:10]
    host = re.sub(r"[^A-Za-z0-9.-]+", "-", urlsplit(seeds[0]).hostname or "crawl") if seeds else "crawl"
    return f"{host}-{digest}"


def check_crawl_name(name: str) -> str:
    if not _CRAWL_NAME.fullmatch(name or ""):
        raise ArgumentError(f"crawl name must be 1-100 letters, digits, '.', '_' or '-': {name}")
    return name


_CRAWL_NAME = re.compile(r"[A-Za-z0-9._-]{1,100}")


def check_crawl_start(spider_args: dict, setting) -> None:
    """Everything checked before Scrapy starts (``setting(name)`` reads a setting).

    A distributed crawl (TSE_REDIS_URL) is created or joined here."""
    redis_url = setting("TSE_REDIS_URL")
    if not redis_url:
        args = check_crawl_args(**spider_args)
        check_resume(args, spider_args.get("resume"), setting("JOBDIR"))
        return
    check_no_page_limit(setting)
    from .redisstore import join_crawl

    join_crawl(redis_url, setting("TSE_CRAWL_NAME"), spider_args)


def check_no_page_limit(setting) -> None:
    """A distributed crawl has no page limit (its workers save pages independently)."""
    if int(setting("CLOSESPIDER_PAGECOUNT") or 0) or int(setting("TSE_MAX_PAGES") or 0):
        raise ArgumentError("a page limit is not available in a distributed crawl")


def split_list(value) -> list[str]:
    """``a,b`` (or a list) as a list of non-empty strings."""
    if value is None or value == "":
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if str(v)]
    return [part for part in str(value).split(",") if part]


def check_patterns(value, name: str) -> None:
    """Raise ValueError naming the first bad regular expression."""
    for pattern in split_list(value):
        try:
            re.compile(pattern)
        except re.error as error:
            raise ValueError(f"{name}: bad regular expression {pattern!r}: {error}") from None


def is_yes(value) -> bool:
    return value is True or str(value).lower() in ("1", "yes", "true", "on")


def _check_prefixes(prefix) -> tuple[str, ...]:
    if prefix is None:
        return (DEFAULT_PREFIX,)
    raw = [p for p in str(prefix).split(",") if p] if isinstance(prefix, str) else list(prefix)
    if not raw:
        raise ArgumentError("prefix is empty")
    prefixes = []
    for p in raw:
        normalized = normalize_url(p)
        if normalized is None or not normalized.lower().startswith(("http://", "https://")):
            raise ArgumentError(f"prefix must be an absolute http(s) URL with a path: {p}")
        prefixes.append(normalized)
    return tuple(prefixes)


def _check_depth(depth) -> int:
    text = str(depth).strip()
    if not text.lstrip("+-").isdigit():
        raise ArgumentError(f"maxDepth must be an integer: {depth}")
    value = int(text)
    if not 0 <= value <= MAX_DEPTH:
        raise ArgumentError(f"maxDepth must be in [0, {MAX_DEPTH}]: {depth}")
    return value


def _check_pagedir(pagedir: str) -> None:
    if not os.path.exists(pagedir):
        raise ArgumentError(f"pageDirectory does not exist: {pagedir}")
    if not os.path.isdir(pagedir):
        raise ArgumentError(f"pageDirectory is not a directory: {pagedir}")
    if not os.access(pagedir, os.W_OK | os.X_OK):
        raise ArgumentError(f"pageDirectory is not writable: {pagedir}")
    marker = os.path.join(pagedir, MARKER)
    if os.path.lexists(marker) and not os.path.isfile(marker):
        raise ArgumentError(f"cannot create {marker}: not a regular file")
