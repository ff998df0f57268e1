"""Crawl record files read and merged into the aggregates the report shows.

A record file is input like any other: each line is read with a bound
(``MAX_LINE``), a line that is not a record is skipped and counted, and a
last line cut short by a killed crawl (no newline) is counted apart.
Several files (one per distributed worker, or several runs) make one
``Records``.  Only what the report draws is kept: counts, the response
times, page sizes and start times as compact arrays, the link in-degrees
(as sorted arrays of URL hashes and their counts: 16 bytes a link target, where
a Counter took about 170), and the 20 slowest requests; never the record lines themselves.
"""

from __future__ import annotations

import errno
import heapq
import itertools
import os
import stat
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import BinaryIO
from urllib.parse import urlsplit

import numpy

from ..rules.crawling.secrets import mask_secrets
from ..rules.files.crawlrecord import MAX_LINE, RecordError, RequestRecord, parse_record
from ..rules.files.outputfile import file_type

TOP = 20  # rows of the most-linked and the slowest tables
MAX_DEPTH_ROWS = 100  # depths shown one by one, empty ones too, up to this depth
REASONS_KEPT = 3  # reasons shown for a file's bad lines
# Link targets whose in-links are counted: past this many distinct ones (a huge or hostile
# record), new targets are not counted, and the report says so.
MAX_LINK_TARGETS = 2_000_000
# Links (their URLs' hashes) held before they are counted into the sorted targets (8 MB).
LINK_BATCH = 1_000_000
_SKIP_CHUNK = 1024 * 1024  # read size while skipping the rest of an over-long line


class ReportError(ValueError):
    """A record file that cannot make a report; the message names the file and says why."""


class NotARegularFile(ReportError):
    """A RECORD that is a device, a FIFO or a socket: read for ever (``/dev/zero``), or waiting for a writer."""


@dataclass
class RecordFile:
    """One record file as read: the records used, the lines skipped and the first reasons why."""

    path: str
    records: int = 0
    requests: int = 0  # the records that are requests sent (not ``moved`` lines, nor pages refused before sending)
    bad_lines: int = 0
    torn_last_line: bool = False
    reasons: list[str] = field(default_factory=list)
    update: bool = False  # a line says it is an update's (or is an unchanged page, which only an update has)

    def skip(self, line_number: int, reason: str) -> None:
        """Count a bad line, keeping the first few reasons for the report."""
        self.bad_lines += 1
        if len(self.reasons) < REASONS_KEPT:
            self.reasons.append(f"line {line_number}: {reason}")


@dataclass
class Totals:
    """The crawl's totals, as the report's totals table shows them."""

    requests: int  # requests sent: record lines other than ``moved`` ones and pages refused before sending
    not_sent: int  # ``failed`` lines of pages refused before they were sent (robots.txt, offsite)
    pages_saved: int
    pages_failed: int
    ignored_external: int
    ignored_duplicate: int
    ignored_denied: int
    bytes: int
    wall_seconds: float  # the time the crawl's runs took (``covered_seconds``), not the time between them
    pages_per_minute: float
    hosts: int
    workers: int  # 1 for a crawl that names no worker
    max_depth: int  # of a saved page
    # An update's pages found as they were (304, or the same body): checked, their files kept.
    pages_unchanged: int = field(default=0, kw_only=True)
    update: bool = field(default=False, kw_only=True)  # the record is an update's
    runs: int = field(default=1, kw_only=True)  # a record file's runs (a crawl and its resumptions), the most of any


@dataclass(frozen=True)
class LinkedPage:
    """A requested page and the number of distinct scanned pages that link to it."""

    url: str
    in_links: int


@dataclass(frozen=True)
class SlowRequest:
    """A request and the seconds from its start to its answer."""

    url: str
    seconds: float
    status: int | None
    failure: str | None
    outcome: str


@dataclass
class _Run:
    """Where a record file's worker stands in its runs: a resumed crawl asks for robots.txt again."""

    index: int | None = None  # its current run's place in Records.runs (None: none begun)
    count: int = 0
    robots: set[str] = field(default_factory=set)  # the robots.txt answered in the current run (not a 5xx)
    pages_since_robots: bool = False  # a line other than robots.txt came after the last robots.txt


@dataclass
class Records:
    """What the report shows of the requests in one or several record files."""

    files: list[RecordFile] = field(default_factory=list)
    requests: int = 0  # requests sent
    outcomes: Counter[str] = field(default_factory=Counter)  # by request_kind: OUTCOMES and "sitemap"
    failures: Counter[str] = field(default_factory=Counter)  # failed pages by reason ("http 404", "robots.txt")
    not_sent: Counter[str] = field(default_factory=Counter)  # failed pages never sent, by reason ("robots.txt")
    ignored: Counter[str] = field(default_factory=Counter)  # ignored links by IGNORED_KINDS
    saved_per_depth: Counter[int] = field(default_factory=Counter)
    requests_per_host: Counter[str] = field(default_factory=Counter)  # requests sent
    workers: set[str] = field(default_factory=set)
    bytes: int = 0
    first_start: float | None = None
    last_time: float | None = None
    response_times: array = field(default_factory=lambda: array("d"))  # seconds, of requests with both times
    page_sizes: array = field(default_factory=lambda: array("d"))  # bytes, of saved pages
    starts_per_host: dict[str, array] = field(default_factory=dict)  # Unix start times, of requests sent
    # The in-degree of every link target; a page scanned twice (a crawl run
    # again into the same record) counts by its first scan only, so that each
    # (page, target) pair counts once without keeping every pair.  Link targets are
    # kept as their URLs' hashes (this process's), the text only of the URLs requested, each with whether
    # it was scanned (one dict: two sets, and keys by hash, took 140 MB more for a million URLs).
    # The targets, sorted, and their in-links: the links of the last pages wait in _link_batch.
    _targets: numpy.ndarray = field(default_factory=lambda: numpy.empty(0, numpy.int64), init=False, repr=False)
    _target_links: numpy.ndarray = field(default_factory=lambda: numpy.empty(0, numpy.int64), init=False, repr=False)
    _link_batch: array = field(default_factory=lambda: array("q"), init=False, repr=False)
    requested_urls: dict[str, bool] = field(default_factory=dict)  # URL -> scanned
    _capped: bool = field(default=False, init=False, repr=False)  # MAX_LINK_TARGETS reached
    update: bool = False  # a line says it is an update's (or is an unchanged page, which only an update has)
    # Each run's [first time, last time]: a crawl resumed hours later ran for its runs' time, not the hours.
    runs: list[list[float]] = field(default_factory=list)
    _runs_of: dict[tuple[str, str | None], _Run] = field(default_factory=dict, init=False, repr=False)
    _slowest: list[tuple[float, int, SlowRequest]] = field(default_factory=list, init=False, repr=False)  # a min-heap

    def add(self, record: RequestRecord, source: str = "") -> bool:
        """Count one record (of the record file *source*) in every aggregate; False for a record that is
        not a request sent."""
        if record.outcome == "moved":
            return False  # a saved page given a freed docID at the end of a distributed crawl
        shown_as = request_kind(record)
        self._add_to_run(record, shown_as, source)
        sent = not is_refused(record)
        self.requests += sent
        self.outcomes[shown_as] += 1
        self.update = self.update or record.update or shown_as == "unchanged"
        if shown_as == "failed":
            self.failures[failure_reason(record)] += 1
            if not sent:
                self.not_sent[failure_reason(record)] += 1
        if shown_as == "saved":
            self.saved_per_depth[record.depth] += 1
            self.page_sizes.append(record.bytes)
        for kind, count in record.ignored.items():
            self.ignored[kind] += count
        if record.host and sent:  # a host off the site, refused, was never asked
            self.requests_per_host[record.host] += 1
        if record.worker is not None:
            self.workers.add(record.worker)
        self.bytes += record.bytes
        scanned = self.requested_urls.setdefault(record.url, False)
        if record.links and not scanned:
            self.requested_urls[record.url] = True
            self._count_links({hash(link) for link in record.links})
        self._add_times(record, shown_as)
        return sent

    def _add_to_run(self, record: RequestRecord, shown_as: str, source: str) -> None:
        """Count *record*'s times in its run.  A run of a record file's worker ends where a robots.txt
        answered before is asked for again after pages: a resumed crawl (or a worker started again) asks anew.  A
        robots.txt that failed (no answer, a 5xx) may be asked again in the same run (a retry, whatever
        came between): only one answered counts."""
        run = self._runs_of.setdefault((source, record.worker), _Run())
        if shown_as == "robots":
            if record.url in run.robots and run.pages_since_robots:
                run.index, run.robots = None, set()
            if record.status is not None and record.status < 500:
                run.robots.add(record.url)
            run.pages_since_robots = False
        else:
            run.pages_since_robots = True
        times = [time for time in (record.start, record.end) if time is not None]
        if not times:
            return
        if run.index is None:
            run.index, run.count = len(self.runs), run.count + 1
            self.runs.append([min(times), max(times)])
        else:
            span = self.runs[run.index]
            span[0], span[1] = min(span[0], *times), max(span[1], *times)

    def _count_links(self, targets: set[int]) -> None:
        self._link_batch.extend(targets)
        if len(self._link_batch) >= LINK_BATCH:
            self._count_batch()

    def _count_batch(self) -> None:
        """Count the links of _link_batch into _targets: past MAX_LINK_TARGETS distinct targets, the new ones
        after the first that fit (in the record's order) are not counted.  Merged in place, by binary search
        (no sort of all the targets again: its copies were the report's peak of memory)."""
        if not self._link_batch:
            return
        batch = numpy.array(self._link_batch, dtype=numpy.int64)
        self._link_batch = array("q")
        targets, first, links = numpy.unique(batch, return_index=True, return_counts=True)
        at = numpy.searchsorted(self._targets, targets)
        known = numpy.zeros(len(targets), bool)
        inside = at < len(self._targets)
        known[inside] = self._targets[at[inside]] == targets[inside]
        self._target_links[at[known]] += links[known]  # (targets are distinct: no index twice)
        new = numpy.flatnonzero(~known)
        room = MAX_LINK_TARGETS - len(self._targets)
        if len(new) > room:
            self._capped = True
            new = numpy.sort(new[numpy.argsort(first[new], kind="stable")[: max(room, 0)]])
        self._targets = numpy.insert(self._targets, at[new], targets[new])
        self._target_links = numpy.insert(self._target_links, at[new], links[new])

    @property
    def link_targets_capped(self) -> bool:
        """Whether MAX_LINK_TARGETS was reached: some in-links not counted."""
        self._count_batch()
        return self._capped

    def _add_times(self, record: RequestRecord, shown_as: str) -> None:
        for time in (record.start, record.end):
            if time is not None and (self.last_time is None or time > self.last_time):
                self.last_time = time
        if record.start is None:
            return
        if self.first_start is None or record.start < self.first_start:
            self.first_start = record.start
        self.starts_per_host.setdefault(record.host, array("d")).append(record.start)
        elapsed = record.elapsed
        if elapsed is None:
            return
        self.response_times.append(elapsed)
        slow = SlowRequest(record.url, elapsed, record.status, record.failure and failure_reason(record), shown_as)
        # Ties go to the earlier request: the later one has the smaller key.
        entry = (elapsed, -self.requests, slow)
        if len(self._slowest) < TOP:
            heapq.heappush(self._slowest, entry)
        elif entry[:2] > self._slowest[0][:2]:
            heapq.heapreplace(self._slowest, entry)

    @property
    def bad_lines(self) -> int:
        """Lines skipped in all the files (torn last lines included)."""
        return sum(file.bad_lines + file.torn_last_line for file in self.files)

    def totals(self) -> Totals:
        """The totals table."""
        wall = covered_seconds(self.runs)
        saved = self.outcomes["saved"]
        return Totals(
            requests=self.requests,
            not_sent=sum(self.not_sent.values()),
            pages_saved=saved,
            pages_failed=self.outcomes["failed"],
            ignored_external=self.ignored["external"],
            ignored_duplicate=self.ignored["duplicate"],
            ignored_denied=self.ignored["denied"],
            bytes=self.bytes,
            wall_seconds=wall,
            pages_per_minute=saved / (wall / 60) if wall > 0 else 0.0,
            hosts=len(self.requests_per_host),
            workers=max(len(self.workers), 1),
            max_depth=max(self.saved_per_depth, default=0),
            pages_unchanged=self.outcomes["unchanged"],
            update=self.update,
            runs=max((run.count for run in self._runs_of.values()), default=1) or 1,
        )

    def depth_rows(self) -> list[tuple[int, int]]:
        """(depth, pages saved) in depth order: every depth from 0 when they are few, else only those with pages."""
        if not self.saved_per_depth:
            return []
        deepest = max(self.saved_per_depth)
        depths = range(deepest + 1) if deepest <= MAX_DEPTH_ROWS else sorted(self.saved_per_depth)
        return [(depth, self.saved_per_depth[depth]) for depth in depths]

    def most_linked(self, count: int = TOP) -> list[LinkedPage]:
        """The requested pages most linked to, most first (ties by URL)."""
        self._count_batch()
        requested = self.requested_urls  # (not changed meanwhile: iterated twice in the same order)
        keys = numpy.fromiter(map(hash, requested), numpy.int64, len(requested))
        links = numpy.zeros(len(keys), numpy.int64)  # each requested URL's in-links, in the set's order
        if len(self._targets):
            at = numpy.minimum(numpy.searchsorted(self._targets, keys), len(self._targets) - 1)
            found = self._targets[at] == keys
            links[found] = self._target_links[at[found]]
        least = 1
        if numpy.count_nonzero(links) > count:  # those linked to as much as the count-th (ties by URL among them)
            least = max(numpy.partition(links, len(links) - count)[len(links) - count], 1)
        taken = links >= least
        linked = zip(itertools.compress(requested, taken.tolist()), links[taken].tolist(), strict=False)  # (as many)
        top = heapq.nsmallest(count, linked, key=lambda item: (-item[1], item[0]))
        return [LinkedPage(url, n) for url, n in top]

    def slowest(self) -> list[SlowRequest]:
        """The slowest requests, slowest first (ties in record order)."""
        return [slow for _, _, slow in sorted(self._slowest, key=lambda entry: entry[:2], reverse=True)]


def covered_seconds(spans: Iterable[Sequence[float]]) -> float:
    """The seconds within any of *spans* ((start, end) pairs; an end before its start is no time), each
    second once: runs of distributed workers overlap, a crawl's runs do not."""
    covered = 0.0
    reached = float("-inf")  # the end of the time counted so far
    for start, end in sorted((start, end) for start, end in spans if end > start):
        if end > reached:
            covered += end - max(start, reached)
            reached = end
    return covered


def is_refused(record: RequestRecord) -> bool:
    """Whether *record* is a page refused before it was sent (by robots.txt, off the site): a ``failed`` line
    without a start time.  Such a line is not a request: the crawl's summary line does not count it."""
    return record.outcome == "failed" and record.start is None


# How the last segment of a sitemap URL's path ends (in lower case), in a record written before the
# crawl said ``sitemap`` (request_kind).
_SITEMAP_ENDINGS = (".xml", ".xml.gz", ".txt", ".txt.gz", ".gz")


def request_kind(record: RequestRecord) -> str:
    """What the report shows a request as: its outcome, but ``sitemap`` for the fetch of a sitemap file.

    The crawl records a ``--sitemaps`` sitemap fetch as ``sitemap``; a record written before that
    was an outcome calls it ``unsaved`` (or ``failed``, a 404 at ``PREFIX/sitemap.xml`` say), and the
    report tells it by its URL: a request sent at depth 0, neither saved nor a redirect, whose URL
    names an XML, text or gzip file; the same line for ``/robots.txt`` (read for its ``Sitemap:``
    lines when robots.txt is not obeyed) is a ``robots`` fetch.

    A 304 recorded ``saved`` (by a crawl before ``unchanged`` was an outcome) is ``unchanged``:
    only an update asks with validators, and its file was kept.
    """
    if record.outcome == "saved" and record.status == 304:
        return "unchanged"
    if record.outcome not in ("unsaved", "failed") or record.depth != 0 or record.start is None:
        return record.outcome
    try:
        path = urlsplit(record.url).path.lower()
    except ValueError:  # not a URL (a record is input like any other)
        return record.outcome
    if path == "/robots.txt":
        return "robots"
    name = path.rsplit("/", 1)[-1]
    if name.endswith(_SITEMAP_ENDINGS):  # (not "sitemap" in the name: a seed sitemap.html is a page)
        return "sitemap"
    return record.outcome


def failure_reason(record: RequestRecord) -> str:
    """Why a failed request failed: its ``failure`` (a URL's password in it masked: a report is shared),
    else ``http STATUS``."""
    if record.failure:
        return mask_secrets(record.failure)
    if record.status is not None:
        return f"http {record.status}"
    return "unknown"


def read_records(paths: Iterable[str | os.PathLike]) -> Records:
    """Every record of the files at *paths*, merged; ReportError for a file that cannot be read or holds only
    bad lines, or when no file holds a record."""
    records = Records()
    opened: set[tuple[int, int]] = set()
    for path in paths:
        file = RecordFile(os.fspath(path))
        try:
            with _opened_record(file.path) as lines:
                identity = os.fstat(lines.fileno())
                if (identity.st_dev, identity.st_ino) in opened:
                    raise ReportError(f"{file.path} is given twice")
                opened.add((identity.st_dev, identity.st_ino))
                _read_file(lines, file, records)
        except OSError as error:
            raise ReportError(f"cannot read {file.path}: {error.strerror or error}") from None
        skipped = file.bad_lines + file.torn_last_line
        if file.records == 0 and skipped:
            raise ReportError(f"{file.path} holds no crawl record line ({skipped} bad line{'s' * (skipped != 1)})")
        # An empty file is kept (a distributed worker that never got a page writes one).
        records.files.append(file)
    if not records.files:
        raise ReportError("no record file given")
    if not any(file.records for file in records.files):
        raise ReportError(f"{', '.join(file.path for file in records.files)}: no crawl record line")
    crawl = next((file for file in records.files if file.records and not file.update), None)
    update = next((file for file in records.files if file.update), None)
    if crawl is not None and update is not None:  # one report would describe neither
        raise ReportError(f"{crawl.path} is a crawl's record and {update.path} an update's: report each alone")
    return records


def _opened_record(path: str) -> BinaryIO:
    """The record file at *path* opened for reading; NotARegularFile for a device, a FIFO or a socket (without
    blocking: opening a FIFO for reading waits for a writer), OSError for a directory."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(descriptor).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        if not stat.S_ISREG(mode):
            raise NotARegularFile(f"cannot read {path}: not a regular file ({file_type(mode)})")
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def _read_file(lines: BinaryIO, file: RecordFile, records: Records) -> None:
    line_number = 0
    while True:
        line = lines.readline(MAX_LINE + 1)
        if not line:
            return
        line_number += 1
        if not line.endswith(b"\n"):
            if len(line) > MAX_LINE:
                _skip_rest_of_line(lines)
                file.skip(line_number, f"a line longer than {MAX_LINE} bytes")
                continue
            # The last line, cut short: a crawl killed mid-write.  Its record
            # is kept if only the newline is missing.
            try:
                record = parse_record(line)
            except RecordError:
                file.torn_last_line = True
                return
            _add(records, file, record)
            return
        if not line.strip():
            continue  # a blank line holds nothing to count
        try:
            record = parse_record(line[:-1])
        except RecordError as error:
            file.skip(line_number, str(error))
            continue
        _add(records, file, record)


def _add(records: Records, file: RecordFile, record: RequestRecord) -> None:
    file.requests += records.add(record, file.path)
    file.records += 1
    file.update = file.update or record.update or request_kind(record) == "unchanged"


def _skip_rest_of_line(lines: BinaryIO) -> None:
    while True:
        chunk = lines.readline(_SKIP_CHUNK)
        if not chunk or chunk.endswith(b"\n"):
            return
