"""The crawl record (``tse crawl --record FILE.jsonl``): one JSON object a line, one line a request
(and a ``moved`` line for each page a distributed crawl renumbers at its end).

Each line says what happened to one request the crawler made::

    {"url": "http://h/a.html", "doc": 3, "depth": 1, "host": "h", "outcome": "saved",
     "status": 200, "failure": null, "bytes": 5120, "start": 1764522000.125,
     "end": 1764522000.131, "wait": 0.994, "worker": null,
     "links": ["http://h/b.html"], "ignored": {"duplicate": 2}}

``outcome`` is one of ``OUTCOMES``: ``saved`` (``doc`` is its docID),
``unchanged`` (an update's page found as it was, a 304 or the same body at
the same depth: ``doc`` is its docID, its file kept; records written before
it was an outcome call a 304 ``saved``, with ``status`` 304), ``failed``
(the page's last attempt: an HTTP status other than 200, or ``failure``, a
short reason such as ``timeout`` or ``robots.txt``),
``redirect`` (a 3xx answer that was followed), ``retried`` (an attempt that
failed and was tried again), ``robots`` (a robots.txt fetch), ``sitemap`` (a
sitemap file fetched for ``--sitemaps``, whatever its answer: records written
before it was an outcome call it ``unsaved`` or ``failed``) and ``unsaved``
(fetched, not saved: the crawl stopped first, or the page was dropped).
A page read back from its file on resume (written just before a kill) has a
``saved`` line with no times.  ``moved`` is not a request: at the end of a
distributed crawl, the worker that finishes it gives the last pages the
docIDs left free (by pages that failed, or were saved under their redirect's
URL), each page once at most, and says so in its record when it keeps one
(``doc`` the page's docID now, ``moved_from`` the docID of its ``saved``
line: join on it, since ``url`` is the page file's, normalized).
``start`` and ``end`` are Unix times of the exchange (``start`` is null for a
request refused before it was sent), ``wait`` the seconds the politeness
delay held it back.  A scanned page's line lists the links found on it
(``links``, the first MAX_LINKS, MAX_LINKS_TEXT bytes as written at most, none longer than MAX_URL
characters; ``more_links`` counts the rest) and counts
the links ignored since the line before (``ignored``, by ``IGNORED_KINDS``).
Every line of an update (``tse crawl --update``) says ``"update": true``.
Optional keys are left out when empty.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

OUTCOMES = ("saved", "unchanged", "failed", "redirect", "retried", "robots", "sitemap", "unsaved", "moved")
IGNORED_KINDS = ("external", "duplicate", "denied")

# Bounds on a line read back (a record file is input like any other), and on the links
# a line lists (``more_links`` counts the rest), so that every line written can be read.
MAX_LINE = 8 * 1024 * 1024
MAX_URL = 64 * 1024
MAX_TEXT = 1024  # host, failure reason, worker
MAX_LINKS = 10_000
MAX_LINKS_TEXT = 4 * 1024 * 1024


class RecordError(ValueError):
    """A line that is not a crawl record line; the message says why."""


@dataclass(frozen=True)
class RequestRecord:
    """One line of a crawl record."""

    url: str
    outcome: str
    depth: int = 0
    host: str = ""
    doc: int | None = None
    status: int | None = None
    failure: str | None = None
    bytes: int = 0
    start: float | None = None
    end: float | None = None
    wait: float = 0.0
    worker: str | None = None
    links: tuple[str, ...] = ()
    more_links: int = 0  # links found but not listed (beyond MAX_LINKS or MAX_LINKS_TEXT)
    ignored: dict[str, int] = field(default_factory=dict)
    moved_from: int | None = None  # a ``moved`` line: the docID the page had
    update: bool = False  # a line of an update

    @property
    def elapsed(self) -> float | None:
        """Seconds from the request's start to its answer (None when it was never sent)."""
        if self.start is None or self.end is None:
            return None
        return max(self.end - self.start, 0.0)


_ORDER = ("url", "doc", "depth", "host", "outcome", "status", "failure", "bytes", "start", "end", "wait", "worker")


def format_record(record: RequestRecord) -> str:
    """The record's line, newline included (keys in a fixed order, ASCII only)."""
    fields: dict[str, Any] = {name: getattr(record, name) for name in _ORDER}
    for name in ("start", "end", "wait"):
        if fields[name] is not None:
            fields[name] = round(fields[name], 6)
    if record.links:
        fields["links"] = list(record.links)
    if record.more_links:
        fields["more_links"] = record.more_links
    ignored = {kind: count for kind, count in record.ignored.items() if count}
    if ignored:
        fields["ignored"] = ignored
    if record.moved_from is not None:
        fields["moved_from"] = record.moved_from
    if record.update:
        fields["update"] = True
    return json.dumps(fields, separators=(",", ":")) + "\n"


def parse_record(line: str | bytes) -> RequestRecord:
    """The record on *line*; RecordError when it is not a well-formed record line."""
    if len(line) > MAX_LINE:
        raise RecordError(f"a line longer than {MAX_LINE} bytes")
    try:
        data = json.loads(line)
    except (ValueError, RecursionError) as error:
        raise RecordError(f"not JSON: {error}") from None
    if not isinstance(data, dict):
        raise RecordError("not a JSON object")
    url = _text(data, "url", MAX_URL, required=True)
    outcome = data.get("outcome")
    if outcome not in OUTCOMES:
        raise RecordError(f"outcome must be one of {', '.join(OUTCOMES)}")
    links = data.get("links", [])
    if not isinstance(links, list) or not all(isinstance(link, str) and len(link) <= MAX_URL for link in links):
        raise RecordError("links must be a list of URLs")
    ignored = data.get("ignored", {})
    if not isinstance(ignored, dict) or not all(
        kind in IGNORED_KINDS and _is_count(count) for kind, count in ignored.items()
    ):
        raise RecordError(f"ignored must map {', '.join(IGNORED_KINDS)} to counts")
    update = data.get("update", False)
    if not isinstance(update, bool):
        raise RecordError("update must be true or false")
    return RequestRecord(
        url=url,
        outcome=outcome,
        depth=_count(data, "depth", 0),
        host=_text(data, "host", MAX_TEXT) or "",
        doc=_count(data, "doc", None),
        status=_count(data, "status", None),
        failure=_text(data, "failure", MAX_TEXT),
        bytes=_count(data, "bytes", 0),
        start=_time(data, "start"),
        end=_time(data, "end"),
        wait=_time(data, "wait") or 0.0,
        worker=_text(data, "worker", MAX_TEXT),
        links=tuple(links),
        more_links=_count(data, "more_links", 0),
        ignored=dict(ignored),
        moved_from=_count(data, "moved_from", None),
        update=update,
    )


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63


def _count(data: dict, name: str, default: int | None) -> int | None:
    value = data.get(name)
    if value is None:
        return default
    if not _is_count(value):
        raise RecordError(f"{name} must be a whole number from 0")
    return value


def _text(data: dict, name: str, limit: int, *, required: bool = False) -> str | None:
    value = data.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (not value and required) or len(value) > limit:
        raise RecordError(f"{name} must be a text of at most {limit} characters")
    return value


def _time(data: dict, name: str) -> float | None:
    value = data.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise RecordError(f"{name} must be a number of seconds from 0")
    return float(value)
