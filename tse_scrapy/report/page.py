"""The crawl report page: record files read, drawn and written as one self-contained HTML file.

The page needs no network and runs no script: the figures are inline SVG,
the style an inline ``<style>``.  Every URL, host, failure reason and file
name comes from the record and is escaped by Jinja2's autoescaping; URLs are
shown as text, never as links.
"""

from __future__ import annotations

import os
import warnings
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import jinja2
from markupsafe import Markup

from ..atomicfile import write_atomically
from ..rules.crawling.secrets import mask_secrets
from ..rules.crawling.units import format_size
from ..rules.files.outputfile import OutputKind, check_output_file
from . import figures
from .records import MAX_LINK_TARGETS, Records, ReportError, Totals, read_records

URL_CHARACTERS = 300  # a URL in a table is cut to this length
TEXT_CHARACTERS = 120  # a host, failure reason or file name too

_TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).resolve().parent / "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)


# What the report writes in its head (templates/report.html), by which ``tse report --out`` tells a report it
# may replace from any other file (rules/files/outputfile.py).  Reports written before it held none began
# with these bytes.
REPORT_MARK = b'<meta name="generator" content="tse report">'
EARLIER_REPORT_HEAD = (
    b'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
    b'<meta name="viewport" content="width=device-width, initial-scale=1">\n<title>Crawl report</title>\n'
)


def looks_like_a_report(start: bytes, whole: bool) -> bool:
    """Whether a file beginning with *start* (*whole*: all of it) is a report ``tse report`` wrote: its
    head names tse report (or is an earlier report's)."""
    if start.startswith(EARLIER_REPORT_HEAD):
        return True
    head = start.partition(b"</head>")[0]
    return start.startswith(b"<!DOCTYPE html>\n") and REPORT_MARK in head


REPORT_FILE = OutputKind(
    noun="a report",
    what="the report",
    not_it="its head does not name tse report",
    recognises=looks_like_a_report,
)


class OverwritesRecord(ReportError):
    """The report's file is one of its record files."""


@dataclass
class ReportSummary(Totals):
    """The totals of a report written, where it was written, and the record files and bad lines behind it."""

    out_path: Path
    files: int
    bad_lines: int

    def describe(self) -> str:
        """One line for the terminal."""
        parts = [
            _count(self.requests, "request"),
            _count(self.pages_saved, "page") + " saved",
            f"{self.pages_failed:,} failed",
            "from " + _count(self.files, "record file"),
        ]
        if self.update:  # its unchanged pages were checked, not saved
            parts[1:2] = [f"an update: {_count(self.pages_saved, 'page')} saved", f"{self.pages_unchanged:,} unchanged"]
        if self.not_sent:  # failed pages too, never sent: no request
            parts.insert(1, _count(self.not_sent, "page") + " refused before sending")
        if self.bad_lines:
            parts.append(_count(self.bad_lines, "bad line") + " skipped")
        return f"wrote {self.out_path}: {', '.join(parts)}"


def _count(number: int, noun: str) -> str:
    return f"{number:,} {noun}{'s' * (number != 1)}"


def write_report(record_paths: Iterable[str | os.PathLike], out_path: str | os.PathLike) -> ReportSummary:
    """Read the record files, write their report to *out_path* (whole or not at all), and sum it up.

    ReportError, with a one-line message, for a record file that cannot be
    read or holds no record, and for a report that cannot be written;
    OutputFileRefused when *out_path* is what a report must not replace
    (``REPORT_FILE``: anything but a report, an empty file or nothing).
    """
    record_paths = list(record_paths)
    out_path = Path(out_path)
    for path in record_paths:
        if _same_file(path, out_path):
            raise OverwritesRecord(f"the report would overwrite its record file {os.fspath(path)}")
    check_output_file(out_path, REPORT_FILE)  # only a report, an empty file or nothing is replaced
    records = read_records(record_paths)
    html = render_report(records)
    try:
        # A lone surrogate (from a JSON "\ud800" escape) cannot be UTF-8: it becomes "?".
        write_atomically(out_path, html.encode("utf-8", "replace"))
    except OSError as error:
        raise ReportError(f"cannot write {out_path}: {error.strerror or error}") from None
    return ReportSummary(
        **asdict(records.totals()), out_path=out_path, files=len(records.files), bad_lines=records.bad_lines
    )


def render_report(records: Records) -> str:
    """The report page of *records*."""
    totals = records.totals()
    timeline_requests = sum(len(starts) for starts in records.starts_per_host.values())
    return _TEMPLATES.get_template("report.html").render(
        totals=totals,
        totals_rows=_totals_rows(totals, records.not_sent),
        wall_time=_duration(totals.wall_seconds),
        period=_period(records),
        files=records.files,
        bad_lines=records.bad_lines,
        per_depth=records.depth_rows(),
        figures=_figures(records, rates=timeline_requests > figures.TIMELINE_TICKS),
        most_linked=records.most_linked(),
        link_targets_capped=records.link_targets_capped,
        max_link_targets=MAX_LINK_TARGETS,
        slowest=records.slowest(),
    )


def _figures(records: Records, *, rates: bool) -> list[dict]:
    # Absurd numbers in a record (times near 1e300) overflow numpy's arithmetic: no warning on the terminal.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return _draw_figures(records, rates=rates)


def _draw_figures(records: Records, *, rates: bool) -> list[dict]:
    timeline = (
        "The request rate of each host over time (a line per host: the 10 busiest, the rest together)."
        if rates
        else "Each tick is one request, a row per host (the 10 busiest; the rest share a row): "
        "a polite crawl asks each host at an even rhythm, one request per download delay."
    )
    return [
        dict(
            id="fig-depths",
            caption="Pages saved at each depth: the seed is at depth 0, the pages it links to at depth 1, and so on.",
            svg=figures.depths_figure(records.depth_rows()),
        ),
        dict(
            id="fig-outcomes",
            caption="What became of each request (failures by reason: robots.txt and offsite ones were never sent; "
            "sitemap: a --sitemaps sitemap file fetched), and the links found but not followed, "
            "by why: off the site (external), already seen (duplicate), or refused by a rule (denied).",
            svg=figures.outcomes_figure(records.outcomes, records.failures, records.ignored),
        ),
        dict(
            id="fig-response-times",
            caption="Seconds from sending a request to its answer, for every request sent.",
            svg=figures.response_times_figure(records.response_times),
        ),
        dict(
            id="fig-page-sizes",
            caption="Bytes of each saved page.",
            svg=figures.page_sizes_figure(records.page_sizes),
        ),
        dict(
            id="fig-timeline",
            caption=timeline,
            svg=figures.timeline_figure(records.starts_per_host, records.first_start),
        ),
    ]


def _totals_rows(totals: Totals, not_sent: Counter[str]) -> list[dict]:
    """Rows of the totals table: the total's name, what it is, its plain value, and a note for the reader."""

    def row(name: str, label: str, note: str = "") -> dict:
        value = getattr(totals, name)
        plain = str(value) if isinstance(value, int) else repr(round(value, 3))
        return dict(name=name, label=label, plain=plain, note=note)

    unchanged = [row("pages_unchanged", "Pages unchanged", "found as they were (304, or the same body): kept")]
    return [
        row("requests", "Requests sent", "robots.txt and sitemap fetches, redirect hops and retries included"),
        row("not_sent", "Pages refused before sending", _refused_note(not_sent)),
        row("pages_saved", "Pages saved", "new or changed" if totals.update else ""),
        *(unchanged if totals.update else ()),
        row("pages_failed", "Pages failed"),
        row("ignored_external", "Links ignored: external", "off the crawled site"),
        row("ignored_duplicate", "Links ignored: duplicate", "already seen"),
        row("ignored_denied", "Links ignored: denied", "refused by a rule"),
        row("bytes", "Bytes downloaded", format_size(totals.bytes)),
        row("wall_seconds", "Wall-clock seconds", _duration(totals.wall_seconds)),
        row("pages_per_minute", "Pages saved per minute"),
        row("hosts", "Hosts"),
        row("workers", "Workers"),
        row("max_depth", "Deepest saved page", "links from the seed"),
    ]


def _refused_note(not_sent: Counter[str]) -> str:
    """What refused the pages never sent: "robots.txt 1, offsite 1" (the most first), or what could have."""
    if not not_sent:
        return "by robots.txt, or off the site: not requests"
    reasons = sorted(not_sent.items(), key=lambda item: (-item[1], item[0]))
    return "refused by " + ", ".join(f"{_shown(reason)} {count:,}" for reason, count in reasons)


def _period(records: Records) -> str | None:
    """When the crawl ran, in UTC (None for a record without times)."""
    if records.first_start is None or records.last_time is None:
        return None
    first, last = (_utc(time) for time in (records.first_start, records.last_time))
    if first[:10] == last[:10]:
        last = last[11:]
    return f"{first} to {last} UTC"


def _utc(time: float) -> str:
    try:
        return datetime.fromtimestamp(time, UTC).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):  # a time past year 9999 (a record's 1e300: not 301 digits)
        return f"{time:.4g} s after 1970"


# Past a million hours (114 years: a record's times, not a crawl's), seconds in few digits, not hundreds.
_MOST_HOURS_SHOWN = 1_000_000


def _duration(seconds: float) -> str:
    if not abs(seconds) < _MOST_HOURS_SHOWN * 3600:
        return f"{seconds:.4g} s"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def _shown(text: str | None, limit: int = TEXT_CHARACTERS) -> str:
    """*text* fit for the page (escaped later by Jinja2): passwords in URLs masked (a report is made to be
    shared), control characters replaced, cut to *limit*."""
    text = "".join(character if character.isprintable() else "\ufffd" for character in mask_secrets(text or ""))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _same_file(path: str | os.PathLike, other: Path) -> bool:
    try:
        return os.path.samefile(path, other)
    except OSError:
        return False


_TEMPLATES.filters["shown"] = _shown
_TEMPLATES.filters["seconds"] = lambda seconds: f"{seconds:.3f}" if abs(seconds) < 1e9 else f"{seconds:.4g}"
_TEMPLATES.filters["url"] = lambda url: _shown(url, URL_CHARACTERS)
_TEMPLATES.filters["svg"] = Markup  # the figures' SVG is ours: matplotlib escapes the text in it
