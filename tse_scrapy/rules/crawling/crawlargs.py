"""The crawler's arguments (SPEC 2.1, 2.4), checked before anything is written or fetched."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from w3lib.url import safe_url_string

from ..files.pagedir import MARKER, SYMBOLIC_LINK_REFUSED, holds_pages, read_page_url
from ..web.links import EXTRACTORS
from ..web.urls import DEFAULT_PREFIX, TSE_AND_PDF, is_internal, normalize_url
from .secrets import mask_url

ORDERS = ("tse", "bfs", "priority")
# The spider's yes/no arguments (``-a NAME=yes``); anything but yes or no is refused.
YES_NO_ARGUMENTS = ("pdf", "sitemaps", "render", "resume", "update")
# The settings that limit a crawl's pages (``spiders/tse.py`` takes the first as the second).
PAGE_LIMIT_SETTINGS = ("CLOSESPIDER_PAGECOUNT", "TSE_MAX_PAGES")
# --render's counts (TSE_RENDER_*), and the least each may be: a page load at once at least; 0 browser
# requests a page (none fetched) and 0 for TSE_RENDER_RECYCLE (never) are meaningful.  They were
# clamped in silence.
RENDER_COUNTS = {"TSE_RENDER_PAGES": 1, "TSE_RENDER_MAX_REQUESTS": 0, "TSE_RENDER_RECYCLE": 0}
# The most TSE_RENDER_TIMEOUT may be, in seconds: Playwright's timers (node's) hold 2**31 - 1 ms at most, and
# one past that became 1 ms (every page load cut at once, saved unrendered, a TimeoutOverflowWarning dumped).
RENDER_TIMEOUT_MOST = (2**31 - 1) // 1000
MAX_DEPTH = 10
_CRAWL_NAME = re.compile(r"[A-Za-z0-9._-]{1,100}")


class ArgumentError(ValueError):
    """A bad argument; its message is the one line shown to the user."""


@dataclass(frozen=True)
class CrawlArgs:
    """A crawl's checked arguments: seeds normalized, depth an int, lists as tuples."""

    seeds: tuple[str, ...]
    pagedir: str
    depth: int
    order: str = "tse"
    links: str = "html"
    prefixes: tuple[str, ...] = (DEFAULT_PREFIX,)
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    deny_ext: str | None = None
    pdf: bool = False  # --pdf: PDF documents are fetched, saved and indexed too
    sitemaps: bool = False  # --sitemaps: the URLs of the prefixes' sitemaps are entry points
    render: bool = False  # --render: HTML pages are rendered by a browser, the rendered document kept

    @property
    def seed(self) -> str:
        return self.seeds[0]

    @property
    def extension_rule(self) -> bool | frozenset[str]:
        """What ``normalize_url`` takes as *tse_extensions* in this crawl."""
        return extension_rule(self.deny_ext, self.pdf)

    def identity(self) -> dict[str, Any]:
        """What a resumed crawl (or a worker joining it) must share with the crawl it continues."""
        return {
            "seed": ",".join(self.seeds),
            "depth": self.depth,
            "order": self.order,
            "links": self.links,
            "prefix": ",".join(self.prefixes),
            "allow": ",".join(self.allow),
            "deny": ",".join(self.deny),
            "deny_ext": self.deny_ext,
            # "yes" or None: a crawl begun before these options existed stored neither.
            "pdf": "yes" if self.pdf else None,
            "sitemaps": "yes" if self.sitemaps else None,
            "render": "yes" if self.render else None,
        }


def check_crawl_args(
    seed: Any = None,
    pagedir: Any = None,
    depth: Any = None,
    order: str | None = None,
    links: str | None = None,
    prefix: Any = None,
    allow: Any = None,
    deny: Any = None,
    deny_ext: Any = None,
    pdf: Any = None,
    sitemaps: Any = None,
    render: Any = None,
    max_pages: Any = None,
    **_ignored: Any,
) -> CrawlArgs:
    """Return the checked arguments, or raise ArgumentError.

    ``seed`` may list several URLs, comma-separated.  Other keyword arguments
    (``resume``, scrapyd's ``_job``, ...) are ignored, but for ``max_pages``:
    the page limit is a setting, and a limit given as an argument would not be kept.
    """
    if max_pages is not None:
        raise ArgumentError(
            f"max_pages is not a spider argument: give the page limit as the setting "
            f"-s CLOSESPIDER_PAGECOUNT=N (a whole number, 0 for none): {max_pages}"
        )
    for name, value in (("seed", seed), ("pagedir", pagedir), ("depth", depth)):
        if value is None or value == "":
            raise ArgumentError(f"missing argument: {name}")
    prefixes = _check_prefixes(prefix)
    for value, name in ((allow, "allow"), (deny, "deny")):
        check_patterns(value, name)
    with_pdf, with_sitemaps = _check_yes_no(pdf, "pdf"), _check_yes_no(sitemaps, "sitemaps")
    with_render = _check_yes_no(render, "render")
    for name, wanted in (("pdf", with_pdf), ("sitemaps", with_sitemaps), ("render", with_render)):
        if wanted and (links or "html") != "html":
            raise ArgumentError(f"--{name} goes with --links html (tse is the reference's)")
    seeds: list[str] = []
    for url in split_list(seed):
        _check_no_credentials(url, "seed URL")
        normalized = normalize_url(url, extension_rule(deny_ext, with_pdf))
        if normalized is None and normalize_url(url, False) is not None:
            # A URL the crawl would not fetch for its extension alone (SPEC 1.1 rule 9): say which way in.
            pdf_url = urlsplit(url).path.lower().endswith(".pdf")
            way = "--pdf takes PDFs, " if pdf_url and not with_pdf and deny_ext is None else ""
            raise ArgumentError(
                f"seed URL is not a page the crawl fetches, by its extension ({way}--deny-ext replaces the rule): {url}"
            )
        if normalized is None:
            raise ArgumentError(f"seed URL cannot be normalized: {url}")
        # (The seed stays as given, normalized: the crawl names it so; its request's URL, what the
        # prefixes and filters are compared with, is Scrapy's.)
        requested = as_requested(normalized, "seed URL", url)
        if not is_internal(requested, prefixes):
            raise ArgumentError(f"seed URL is not internal (prefix {', '.join(prefixes)}): {url}")
        # (A seed the filters refuse is not fetched: the crawl saved nothing, exit 0, saying the seed
        # was "redirected out of the prefixes": a reviewer's find.)
        if (refusal := _filtered_out(requested, allow, deny)) is not None:
            raise ArgumentError(f"seed URL {refusal}: {url}")
        if normalized not in seeds:
            seeds.append(normalized)
    if not seeds:
        raise ArgumentError("missing argument: seed")
    max_depth = _check_depth(depth)
    order = order or "tse"
    links = links or "html"
    if order not in ORDERS:
        raise ArgumentError(f"order must be one of {', '.join(ORDERS)}: {order}")
    if links not in EXTRACTORS:
        raise ArgumentError(f"links must be one of {', '.join(EXTRACTORS)}: {links}")
    _check_pagedir(str(pagedir))
    return CrawlArgs(
        tuple(seeds),
        str(pagedir),
        max_depth,
        order,
        links,
        prefixes,
        tuple(split_list(allow)),
        tuple(split_list(deny)),
        None if deny_ext is None else ",".join(split_list(deny_ext)),
        with_pdf,
        with_sitemaps,
        with_render,
    )


def extension_rule(deny_ext: str | None, pdf: bool) -> bool | frozenset[str]:
    """The extension rule of ``normalize_url``: the TSE rule (``.htm*``, and ``.pdf`` with
    *pdf*) unless *deny_ext* replaces it."""
    if deny_ext is not None:
        return False
    return TSE_AND_PDF if pdf else True


def check_yes_no_arguments(arguments: Mapping[str, Any]) -> None:
    """Raise ArgumentError naming the first yes/no spider argument (``resume``, ``pdf`` ...) that is
    neither yes nor no: ``-a resume=maybe`` is not taken as no."""
    for name in YES_NO_ARGUMENTS:
        _check_yes_no(arguments.get(name), name)


def _check_yes_no(value: Any, name: str) -> bool:
    """A yes/no option given as ``-a NAME=yes`` (or True/False from the command line)."""
    if value is None or value is False or value == "":
        return False
    if value is True:
        return True
    text = str(value).strip().lower()
    if text in ("yes", "true", "1", "on"):
        return True
    if text in ("no", "false", "0", "off"):
        return False
    raise ArgumentError(f"{name} must be yes or no: {value}")


def check_same_crawl(args: CrawlArgs, stored: dict[str, Any], action: str, names: Iterable[str] | None = None) -> None:
    """Raise ArgumentError (``cannot ACTION: NAME was ... and is now ...``) when *args* differ
    from the *stored* identity of an earlier crawl, in *names* (default: all of it)."""
    identity = args.identity()
    for name in identity if names is None else names:
        if stored.get(name) != identity[name]:
            was, now = _shown(name, stored.get(name)), _shown(name, identity[name])
            raise ArgumentError(f"cannot {action}: {name} was {was} and is now {now}")


# A crawl's output files (``resume.statedb.output_files``'s names) and the options that name them.
OUTPUT_OPTIONS = {"warc": "--warc", "record": "--record", "changes": "--changes"}


def check_same_outputs(stored: Mapping[str, str | None], now: Mapping[str, str | None], action: str = "resume") -> None:
    """Raise ArgumentError (``cannot ACTION: --warc was FILE and is now not given``) when the output
    files *now* (absolute paths, None when not asked for) are not those *stored* by the crawl it goes
    on with: a WARC or a record must hold a crawl's every exchange, the changes file its every page."""
    for name, option in OUTPUT_OPTIONS.items():
        was, is_now = stored.get(name), now.get(name)
        if was != is_now:
            raise ArgumentError(
                f"cannot {action}: {option} was {was or 'not given'} and is now {is_now or 'not given'} "
                f"(go on with the output files the crawl began with)"
            )


def _shown(name: str, value: Any) -> str:
    """A value of a crawl's identity as the user reads it: a yes/no option ``given`` or ``not given``,
    an option left out ``not given``, an empty list ``(none)``."""
    if name in YES_NO_ARGUMENTS:
        return "given" if is_yes(value) else "not given"
    if value is None:
        return "not given"
    return str(value) if str(value) != "" else "(none)"


def check_no_pages(pagedir: str, seeds: Iterable[str] = (), distributed: bool = False) -> None:
    """A new crawl starts in a directory without page files: it never mixes with another's.  One of the
    same seeds (*seeds*: the new crawl's, normalized) is said to be one: it is crawled again with
    --update (in one process, when the new crawl is *distributed*)."""
    if holds_pages(pagedir):
        try:
            first = read_page_url(pagedir, 1)
        except OSError:  # (no page 1, or unreadable: nothing tells whose crawl it is)
            first = None
        raise ArgumentError(pages_held_refusal(pagedir, first, seeds, distributed))


def pages_held_refusal(pagedir: str, first_url: str | None, seeds: Iterable[str], distributed: bool = False) -> str:
    """Why a new crawl of *seeds* is refused in *pagedir*, a finished crawl whose page 1 is *first_url*
    (None: unknown): a crawl of the same seed (page 1 one of *seeds*) is crawled again with --update,
    where "another crawl" sent the user to an empty directory; an update runs in one process, which a
    *distributed* crawl's refusal says (``--update`` with ``--redis`` is refused)."""
    if first_url is not None and first_url in set(seeds):
        one_process = " in one process (an update is not distributed)" if distributed else ""
        return (
            f"{pagedir} holds a finished crawl of {first_url}: crawl it again with --update (-a update=yes)"
            f"{one_process}, or crawl into an empty directory"
        )
    return f"{pagedir} already holds the pages of another crawl; crawl into an empty directory"


def crawl_name(seeds: Any) -> str:
    """The default name of a distributed crawl: the first seed's host and a
    digest of all the seeds, so workers given the same seeds find each other."""
    seeds = split_list(seeds)
    digest = hashlib.sha1(",".join(seeds).encode()).hexdigest()[:10]
    host = re.sub(r"[^A-Za-z0-9.-]+", "-", urlsplit(seeds[0]).hostname or "crawl") if seeds else "crawl"
    return f"{host}-{digest}"


# What every crawl's politeness leases are named after in Redis (``tse:polite:HOST``, distributed/keys.py):
# no crawl may take it (its "leftover keys" would be every crawl's leases).
POLITENESS_NAME = "polite"


def check_crawl_name(name: str | None) -> str:
    """*name* if it can name a distributed crawl (it becomes part of Redis keys, and is not POLITENESS_NAME):
    ``tse crawl --name`` and ``tse status`` refuse the others alike."""
    if not _CRAWL_NAME.fullmatch(name or ""):
        raise ArgumentError(f"crawl name must be 1-100 letters, digits, '.', '_' or '-': {name}")
    if name == POLITENESS_NAME:
        raise ArgumentError(f"crawl name {POLITENESS_NAME} is reserved (the politeness leases use it)")
    return name


def split_list(value: str | Iterable[Any] | None) -> list[str]:
    """``a,b`` (or a list) as a list of non-empty strings."""
    if value is None or value == "":
        return []
    if isinstance(value, (list, tuple)):
        return [str(v) for v in value if str(v)]
    return [part for part in str(value).split(",") if part]


def check_patterns(value: str | Iterable[str] | None, name: str) -> None:
    """Raise ArgumentError naming the first bad regular expression."""
    for pattern in split_list(value):
        try:
            re.compile(pattern)
        except re.error as error:
            raise ArgumentError(f"{name}: bad regular expression {pattern!r}: {error}") from None


def is_yes(value: Any) -> bool:
    """A yes/no argument given as text (``-a resume=yes``) or as a bool."""
    return value is True or str(value).lower() in ("1", "yes", "true", "on")


def _check_prefixes(prefix: Any) -> tuple[str, ...]:
    if prefix is None:
        return (DEFAULT_PREFIX,)
    if not split_list(prefix):
        raise ArgumentError("prefix is empty")
    prefixes = []
    for given in split_list(prefix):
        _check_no_credentials(given, "prefix")
        normalized = normalize_url(given)
        if normalized is None or not normalized.lower().startswith(("http://", "https://")):
            raise ArgumentError(f"prefix must be an absolute http(s) URL with a path: {given}")
        prefixes.append(as_requested(normalized, "prefix", given))
    return tuple(prefixes)


def _filtered_out(url: str, allow: Any, deny: Any) -> str | None:
    """Why the allow and deny patterns keep *url* (normalized) out of the crawl (as the crawl's
    ``UrlFilter`` searches them in it), or None."""
    allowed = split_list(allow)
    if allowed and not any(re.search(pattern, url) for pattern in allowed):
        return f"matches no allow pattern ({', '.join(allowed)})"
    denied = next((pattern for pattern in split_list(deny) if re.search(pattern, url)), None)
    return None if denied is None else f"matches the deny pattern {denied}"


def as_requested(url: str, what: str, given: str) -> str:
    """The normalized *url* as the crawl requests it (a Scrapy request's URL: w3lib's
    ``safe_url_string`` percent-encodes what is not ASCII and spaces, writes a host in IDNA, drops an
    empty port), so that a seed or prefix typed so is compared with the URLs requested: a prefix
    ``http://h/日本/`` took none of them, and the crawl saved nothing, exit 0.  ArgumentError, saying
    *what* was *given*, for a URL no request can be made of (a port out of range, a host in brackets
    that is no address: a traceback, and a page directory left holding a crawl that could not go on)."""
    try:
        urlsplit(url).port  # noqa: B018 (its checks)
        return safe_url_string(url)
    except ValueError as error:
        raise ArgumentError(f"{what} is not a URL a request can be made of ({error}): {given}") from None


def _check_no_credentials(url: str, what: str) -> None:
    """Refuse a URL with a user name or password (``http://user:secret@host/``): the crawler sends
    none (its links would not carry them either), and Scrapy took the URL's ``user:secret@host`` for
    a host name, logging the password and writing it in the crawl record.  The URL is shown with its
    password masked."""
    try:
        netloc = urlsplit(url.strip()).netloc
    except ValueError:  # not a URL at all: normalize_url says so
        return
    if "@" in netloc:
        raise ArgumentError(f"{what} holds a user name or password, not supported: {mask_url(url)}")


def check_page_limit(value: Any, name: str, *, none: bool = True) -> int:
    """The page limit *value* (``--max-pages``, ``CLOSESPIDER_PAGECOUNT``) as an int, or ArgumentError
    naming *name*: a whole number of pages, at least 1, or 0 (no limit, the setting's default) when *none*.
    A negative limit would stop the crawl before its first request, and then it would never end."""
    text = str(value).strip()
    lowest = 0 if none else 1
    if not (text.isascii() and text.lstrip("+").isdigit()) or int(text) < lowest:
        kind = "a whole number of pages, 0 for no limit" if none else "a whole number of pages, at least 1"
        raise ArgumentError(f"{name} must be {kind}: {value}")
    return int(text)


def check_setting_values(defaults: Mapping[str, Any], setting: Callable[[str], Any]) -> None:
    """Raise ArgumentError (``-s NAME must be a number: VALUE``) for the first setting given a value
    Scrapy cannot read: one whose default (in *defaults*) is an int, a float or a bool must convert as
    Scrapy's ``Settings.getint``, ``getfloat`` and ``getbool`` convert it, and the page limits must be
    whole numbers, 0 or more (``check_page_limit``).  *setting* reads a setting's value (None: not set).

    A number read as a float (a delay, a timeout, a patience) must be finite and 0 or more besides:
    Scrapy reads ``inf`` and ``nan``, and a delay of ``inf`` never fetched a page nor let the crawl end,
    one of ``nan`` or ``-1`` dropped the politeness delay.  ``LOG_LEVEL`` must be a level's name.

    Settings whose default is None (or that have none) but that Scrapy reads as numbers, booleans or
    names are checked as ``UNTYPED_SETTING_KINDS`` says.

    Scrapy reads most settings once the crawl has begun: a value it cannot convert would end the crawl
    with a traceback, after its state was made (and a negative page limit would never let it end)."""
    for name in PAGE_LIMIT_SETTINGS:
        value = setting(name)
        if value is not None:
            check_page_limit(value, f"-s {name}")
    level = setting("LOG_LEVEL")
    if level is not None and not isinstance(level, int) and level not in _LOG_LEVELS:
        raise ArgumentError(f"-s LOG_LEVEL must be one of {', '.join(_LOG_LEVELS)}: {level}")
    kinds = [(name, _SETTING_KINDS.get(type(default))) for name, default in defaults.items()]
    for name, kind in [*kinds, *UNTYPED_SETTING_KINDS.items()]:
        value = setting(name) if kind is not None else None
        if value is None:
            continue
        convert, wanted = kind
        try:
            convert(value)
        except (TypeError, ValueError, OverflowError):
            raise ArgumentError(f"-s {name} must be {wanted}: {value}") from None
    for name, lowest in RENDER_COUNTS.items():
        value = setting(name)
        if value is not None and int(value) < lowest:  # int: checked above
            raise ArgumentError(f"-s {name} must be a whole number, at least {lowest}: {value}")
    timeout = setting("TSE_RENDER_TIMEOUT")
    if timeout is not None and float(timeout) > RENDER_TIMEOUT_MOST:  # float: checked above
        raise ArgumentError(f"-s TSE_RENDER_TIMEOUT must be at most {RENDER_TIMEOUT_MOST} seconds: {timeout}")


# The settings a crawl's code reads that Scrapy's defaults and tse_scrapy/settings.py do not name: Scrapy's
# own without a default (and UNTYPED_SETTING_KINDS's), scrapy-redis's (the distributed crawl's), scrapy-
# playwright's (its README) and the one the spider sets itself.  (tests/test_crawl_settings.py checks the
# list against Scrapy's, scrapy-redis's and the project's sources.)
EXTENSION_SETTINGS = frozenset(
    {
        "META_COPY_WARN_SKIP_KEYS",
        *("DUPEFILTER_CLASS", "DUPEFILTER_DEBUG", "REDIS_CLS", "REDIS_DB", "REDIS_DECODE_RESPONSES"),
        *("REDIS_ENCODING", "REDIS_HOST", "REDIS_ITEMS_KEY", "REDIS_ITEMS_SERIALIZER", "REDIS_PARAMS"),
        *("REDIS_PORT", "REDIS_START_URLS_AS_SET", "REDIS_START_URLS_AS_ZSET", "REDIS_START_URLS_BATCH_SIZE"),
        *("REDIS_START_URLS_KEY", "REDIS_URL", "SCHEDULER_DUPEFILTER_CLASS", "SCHEDULER_DUPEFILTER_KEY"),
        *("SCHEDULER_FLUSH_ON_START", "SCHEDULER_IDLE_BEFORE_CLOSE", "SCHEDULER_PERSIST", "SCHEDULER_QUEUE_CLASS"),
        *("SCHEDULER_QUEUE_KEY", "SCHEDULER_SERIALIZER", "STATS_KEY", "MAX_IDLE_TIME_BEFORE_CLOSE"),
        *("PLAYWRIGHT_ABORT_REQUEST", "PLAYWRIGHT_BROWSER_TYPE", "PLAYWRIGHT_CDP_KWARGS", "PLAYWRIGHT_CDP_URL"),
        *("PLAYWRIGHT_CONNECT_KWARGS", "PLAYWRIGHT_CONNECT_URL", "PLAYWRIGHT_CONTEXTS", "PLAYWRIGHT_LAUNCH_OPTIONS"),
        *("PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT", "PLAYWRIGHT_MAX_CONTEXTS", "PLAYWRIGHT_MAX_PAGES_PER_CONTEXT"),
        *("PLAYWRIGHT_PROCESS_REQUEST_HEADERS", "PLAYWRIGHT_RESTART_DISCONNECTED_BROWSER"),
        "TSE_UPDATE",
        # Read by common third-party middlewares a user may add (random user agents, rotating proxies):
        # USER_AGENTS is one edit from USER_AGENT, and was refused as its misspelling.
        *("USER_AGENTS", "USER_AGENT_LIST", "PROXY_LIST", "PROXY_MODE", "ROTATING_PROXY_LIST"),
        *("ROTATING_PROXY_LIST_PATH", "FAKEUSERAGENT_PROVIDERS", "FAKEUSERAGENT_FALLBACK"),
        # Set by Scrapy's get_project_settings from SCRAPY_CHECK, SCRAPY_PROJECT, SCRAPY_PYTHON_SHELL and
        # SCRAPY_SETTINGS_MODULE (a script's settings hold them: a review's find, warned of every run).
        *("CHECK", "PROJECT", "PYTHON_SHELL", "SETTINGS_MODULE"),
    }
)


def setting_edits_allowed(name: str) -> int:
    """How many edits (a letter added, dropped, changed, or two neighbours swapped) from a known setting's
    name *name* may be and still be taken for its misspelling: one in a short name, two in a long one
    (``DOWNLOAD_DELEY``); a name of three letters or fewer is too short to tell."""
    return 0 if len(name) <= 3 else 1 if len(name) < 10 else 2


def misspelt_setting(name: str, known: Collection[str]) -> str | None:
    """The known setting *name* (given with ``-s``) is most likely a misspelling of: one spelt the same in
    another case (settings are case-sensitive: ``download_delay`` is ignored), else the nearest one within
    ``setting_edits_allowed`` edits, the first in alphabetical order of the nearest.  None when *name* is
    known, or near none: a user's own extension may read a setting no one else knows."""
    if name in known:
        return None
    wanted = name.upper()
    if same := sorted(other for other in known if other.upper() == wanted):
        return same[0]
    allowed = setting_edits_allowed(name)
    if not allowed:
        return None
    from rapidfuzz import process
    from rapidfuzz.distance import OSA

    found = process.extractOne(wanted, sorted(known), scorer=OSA.distance, processor=str.upper, score_cutoff=allowed)
    return found[0] if found is not None else None


def check_setting_names(given: Iterable[str], known: Collection[str]) -> list[str]:
    """Raise ArgumentError (``-s DOWNLOAD_DELEY is not a setting: did you mean DOWNLOAD_DELAY?``) for the
    first setting *given* that is a misspelling of a *known* one (``misspelt_setting``): Scrapy ignores a
    setting no one reads, and the crawl ran as if it had not been given.  Return the names given that are
    neither known nor near a known one (only a user's own extension would read them)."""
    unknown = []
    for name in given:
        if (meant := misspelt_setting(name, known)) is not None:
            case = " (names are case-sensitive)" if meant.upper() == name.upper() else ""
            raise ArgumentError(f"-s {name} is not a setting{case}: did you mean {meant}?")
        if name not in known:
            unknown.append(name)
    return unknown


def setting_is_on(value: Any) -> bool:
    """A boolean setting's value (None: not set, off) as Scrapy's ``Settings.getbool`` reads it, once
    ``check_setting_values`` has let it through: ``2`` is on there, as for Scrapy (``is_yes`` is for
    the spider's yes/no arguments)."""
    return value is not None and _as_bool(value)


def _as_bool(value: Any) -> bool:
    """As Scrapy's ``Settings.getbool``: an int (0 or not), or True/False spelt True, true, False, false."""
    try:
        return bool(int(value))
    except (TypeError, ValueError):
        if value in ("True", "true"):
            return True
        if value in ("False", "false"):
            return False
        raise ValueError(value) from None


def _dict_or_bool(value: Any) -> None:
    """As Scrapy's ``PeriodicLog`` reads ``PERIODIC_LOG_STATS`` and ``PERIODIC_LOG_DELTA``: a dict
    (``Settings.getdict``: a JSON object, or pairs), else a boolean (``getbool``)."""
    try:
        dict(json.loads(value) if isinstance(value, str) else value)
    except (TypeError, ValueError):
        _as_bool(value)


def _tls_version(value: Any) -> None:
    """As Scrapy reads ``DOWNLOAD_TLS_MIN_VERSION`` and ``DOWNLOAD_TLS_MAX_VERSION``: one of its names."""
    if value not in TLS_VERSIONS:
        raise ValueError(value)


def duration_seconds(value: Any) -> float:
    """As Scrapy's ``Settings.getfloat``, but only a finite number, 0 or more (ValueError else)."""
    number = float(value)
    if not 0 <= number < math.inf:  # (nan is no number 0 or more)
        raise ValueError(value)
    return number


# A default's type: how Scrapy converts a value given to it (getint, getfloat, getbool), and what that wants.
_SETTING_KINDS: dict[type, tuple[Callable[[Any], Any], str]] = {
    bool: (_as_bool, "True or False (or 1 or 0)"),
    int: (int, "a whole number"),
    float: (duration_seconds, "a number, 0 or more"),
}
# The TLS versions Scrapy knows (scrapy/utils/ssl.py, _STDLIB_VERSION_MAP): another value failed every
# request of the crawl, http:// ones too ("the seed URL could not be fetched (NotSupported)").
TLS_VERSIONS = ("TLSv1.0", "TLSv1.1", "TLSv1.2", "TLSv1.3")
# Settings with no default, or None, that Scrapy reads as more than text (the type of a default says how
# the others are read): how each is read, and what that wants.  A value it cannot read was a traceback
# once the crawl had begun (its state made), or a crawl that fetched nothing.  (AWS_MAX_POOL_CONNECTIONS,
# read as a whole number, is read by the files and images pipelines only, which a crawl does not use.)
UNTYPED_SETTING_KINDS: dict[str, tuple[Callable[[Any], Any], str]] = {
    # Deprecated and gone from Scrapy's defaults, yet still read by its downloader (getint).
    "CONCURRENT_REQUESTS_PER_IP": (int, "a whole number"),
    # Read when the PeriodicLog extension is enabled (-s EXTENSIONS=...).
    "PERIODIC_LOG_STATS": (_dict_or_bool, "a JSON object, or True or False (or 1 or 0)"),
    "PERIODIC_LOG_DELTA": (_dict_or_bool, "a JSON object, or True or False (or 1 or 0)"),
    "DOWNLOAD_TLS_MIN_VERSION": (_tls_version, f"one of {', '.join(TLS_VERSIONS)}"),
    "DOWNLOAD_TLS_MAX_VERSION": (_tls_version, f"one of {', '.join(TLS_VERSIONS)}"),
}
# The names logging (and so Scrapy's LOG_LEVEL) knows, in capitals: "debug" is no level of Python's.
_LOG_LEVELS = ("CRITICAL", "FATAL", "ERROR", "WARNING", "WARN", "INFO", "DEBUG", "NOTSET")


# An integer as the reference's C reads maxDepth (``sscanf("%d")``): one sign at most, then ASCII digits.
# (``str.isdigit`` takes full-width digits and "²"; a sign stripped before it let "+-2" through to int: a traceback.)
_DEPTH = re.compile(r"([+-]?)([0-9]+)")
# What C's ``isspace`` skips before a number (``str.strip`` would strip Unicode spaces too).
_C_SPACES = " \t\n\v\f\r"


def _check_depth(depth: Any) -> int:
    """maxDepth as an int in [0, MAX_DEPTH], or ArgumentError."""
    found = _DEPTH.fullmatch(str(depth).strip(_C_SPACES))
    if found is None:
        raise ArgumentError(f"maxDepth must be an integer: {depth}")
    sign, digits = found[1], found[2].lstrip("0") or "0"
    # (Past two digits it is out of range: int() of thousands of digits is refused with a ValueError.)
    if len(digits) > 2 or not 0 <= int(sign + digits) <= MAX_DEPTH:
        raise ArgumentError(f"maxDepth must be in [0, {MAX_DEPTH}]: {depth}")
    return int(sign + digits)


def _check_pagedir(pagedir: str) -> None:
    if not os.path.exists(pagedir):
        raise ArgumentError(f"pageDirectory does not exist: {pagedir}")
    if not os.path.isdir(pagedir):
        raise ArgumentError(f"pageDirectory is not a directory: {pagedir}")
    if not os.access(pagedir, os.W_OK | os.X_OK):
        raise ArgumentError(f"pageDirectory is not writable: {pagedir}")
    marker = os.path.join(pagedir, MARKER)
    # (A link is refused here, before the crawl's state is made: ``pagedir.mark`` refuses it too, but
    # later, and the directory was left holding an "interrupted crawl".  isfile follows links.)
    if os.path.islink(marker):
        raise ArgumentError(f"cannot create {marker}: {SYMBOLIC_LINK_REFUSED}")
    if os.path.lexists(marker) and not os.path.isfile(marker):
        raise ArgumentError(f"cannot create {marker}: not a regular file")
