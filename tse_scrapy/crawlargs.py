"""Checking the crawler's arguments (SPEC 2.1, 2.4) before anything is written or fetched."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

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
    seed: str
    pagedir: str
    depth: int
    order: str = "tse"
    links: str = "html"
    prefixes: tuple[str, ...] = (DEFAULT_PREFIX,)
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    deny_ext: str | None = None

    def identity(self) -> dict:
        """What a resumed crawl must share with the crawl it continues."""
        return {"seed": self.seed, "depth": self.depth, "order": self.order, "links": self.links,
                "prefix": ",".join(self.prefixes), "allow": ",".join(self.allow),
                "deny": ",".join(self.deny), "deny_ext": self.deny_ext}


def check_crawl_args(seed=None, pagedir=None, depth=None, order="tse", links="html",
                     prefix=None, resume=None, allow=None, deny=None, deny_ext=None, **_ignored) -> CrawlArgs:
    """Return the checked arguments, or raise ArgumentError.

    Other keyword arguments (scrapyd's ``_job``, ...) are ignored.
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
    normalized = normalize_url(str(seed), tse_extensions=deny_ext is None)
    if normalized is None:
        raise ArgumentError(f"seed URL cannot be normalized: {seed}")
    if not is_internal(normalized, prefixes):
        raise ArgumentError(f"seed URL is not internal (prefix {', '.join(prefixes)}): {seed}")
    max_depth = _check_depth(depth)
    if order not in ORDERS:
        raise ArgumentError(f"order must be one of {', '.join(ORDERS)}: {order}")
    if links not in LINK_EXTRACTORS:
        raise ArgumentError(f"links must be one of {', '.join(LINK_EXTRACTORS)}: {links}")
    _check_pagedir(str(pagedir))
    return CrawlArgs(normalized, str(pagedir), max_depth, order, links, prefixes,
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
