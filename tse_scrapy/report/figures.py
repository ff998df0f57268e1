"""The report's plots, drawn with matplotlib into SVG text that can be inlined in HTML.

Each function takes plain numbers and returns one ``<svg>`` element.  The
figures use matplotlib's object API (no pyplot, no global figure state), text
drawn as paths (no font needed by the reader), mathtext off (a host name
with ``$`` signs is text, not a formula), and a fixed hash salt so the same
data gives the same bytes.  An empty input draws "no data".
"""

from __future__ import annotations

import io
import math
import re
import warnings
from collections.abc import Callable, Mapping, Sequence

import matplotlib
import numpy
from matplotlib.axes import Axes
from matplotlib.backends.backend_svg import FigureCanvasSVG
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, MaxNLocator, NullFormatter

from ..rules.files.crawlrecord import IGNORED_KINDS

TIMELINE_HOSTS = 10  # busiest hosts drawn in rows of their own; the rest share one
TIMELINE_TICKS = 5000  # above this many requests, the timeline draws rates, not ticks
TIMELINE_BINS = 120
FAILURE_ROWS = 8  # failure reasons drawn apart; the rest share one bar
LABEL_CHARACTERS = 40  # hosts and failure reasons are cut to this length in a figure
WIDE_RANGE = 100  # a histogram spanning more than this ratio gets a log scale

_STYLE = {
    "svg.hashsalt": "tse-report",
    "svg.fonttype": "path",
    "text.parse_math": False,
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.edgecolor": "#666666",
    "axes.axisbelow": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.6,
    "xtick.color": "#444444",
    "ytick.color": "#444444",
}
_NO_METADATA = {"Creator": None, "Date": None, "Format": None, "Type": None}

SAVED = "#2e7d32"
FAILED = "#c62828"
BAR = "#3f6fb5"
OUTCOME_COLORS = {
    "saved": SAVED,
    "unchanged": "#81c784",
    "redirect": "#1e88e5",
    "retried": "#ef6c00",
    "robots": "#7b1fa2",
    "sitemap": "#00897b",
    "unsaved": "#78909c",
}
IGNORED_COLOR = "#b0bec5"


# Bars drawn for depths one by one; the deeper ones are one bar ("≥ d"): each bar and its label cost
# matplotlib about 9 ms and 15 KB of SVG (a hostile record of 10,000 depths took 94 s; the table below
# the figure still lists every depth).
FIGURE_DEPTHS = 60


def depths_figure(saved_per_depth: Sequence[tuple[int, int]]) -> str:
    """Bars of the pages saved at each depth, from (depth, pages) pairs in depth order."""
    with matplotlib.rc_context(_STYLE):
        figure, axes = _new_figure(5.2, 2.9)
        axes.set(title="Pages saved per depth", xlabel="depth (links from the seed)", ylabel="pages saved")
        if not saved_per_depth:
            return _svg(_no_data(figure, axes), "depths")
        bars = [(str(depth), count) for depth, count in saved_per_depth[: FIGURE_DEPTHS - 1]]
        deeper = saved_per_depth[FIGURE_DEPTHS - 1 :]
        if len(deeper) == 1:
            bars.append((str(deeper[0][0]), deeper[0][1]))
        elif deeper:
            bars.append((f"≥{deeper[0][0]}", sum(count for _, count in deeper)))
        # A bar per pair, side by side, labelled with its depth (the depths may skip).
        places = range(len(bars))
        drawn = axes.bar(places, [count for _, count in bars], color=BAR, width=0.7)
        axes.bar_label(drawn, fmt="{:,.0f}", padding=2, fontsize=8)
        if len(places) <= 20:
            axes.set_xticks(places, [label for label, _ in bars])
        else:
            axes.xaxis.set_major_locator(MaxNLocator(integer=True))
            axes.xaxis.set_major_formatter(FuncFormatter(lambda place, _: _label_at(bars, place)))
        axes.yaxis.set_major_locator(_count_ticks())
        axes.yaxis.grid(True)
        axes.margins(y=0.15)
        return _svg(figure, "depths")


def _label_at(bars: Sequence[tuple[str, int]], place: float) -> str:
    index = round(place)
    return bars[index][0] if 0 <= index < len(bars) else ""


def outcomes_figure(outcomes: Mapping[str, int], failures: Mapping[str, int], ignored: Mapping[str, int]) -> str:
    """Horizontal bars: requests by outcome (failures by reason, sitemap fetches apart), then links ignored by kind."""
    rows: list[tuple[str, int, str]] = []  # (label, count, color), top row first
    rows.append(("saved", outcomes.get("saved", 0), SAVED))
    rows.append(("unchanged", outcomes.get("unchanged", 0), OUTCOME_COLORS["unchanged"]))
    reasons = sorted(failures.items(), key=lambda item: (-item[1], item[0]))
    for reason, count in reasons[:FAILURE_ROWS]:
        rows.append((f"failed: {_label(reason)}", count, FAILED))
    rest = sum(count for _, count in reasons[FAILURE_ROWS:])
    rows.append(("failed: other reasons", rest, FAILED))
    for outcome in ("redirect", "retried", "robots", "sitemap", "unsaved"):
        rows.append((outcome, outcomes.get(outcome, 0), OUTCOME_COLORS[outcome]))
    for kind in IGNORED_KINDS:
        rows.append((f"link ignored: {kind}", ignored.get(kind, 0), IGNORED_COLOR))
    rows = [row for row in rows if row[1] > 0]
    with matplotlib.rc_context(_STYLE):
        figure, axes = _new_figure(5.2, max(2.9, 0.9 + 0.27 * len(rows)))
        axes.set(title="Requests by outcome, links ignored", xlabel="requests (links, in the ignored rows)")
        if not rows:
            return _svg(_no_data(figure, axes), "outcomes")
        labels, counts, colors = zip(*rows, strict=True)
        places = range(len(rows))
        bars = axes.barh(places, counts, color=colors, height=0.7)
        axes.bar_label(bars, fmt="{:,.0f}", padding=2, fontsize=8)
        axes.set_yticks(places, labels)
        axes.invert_yaxis()
        axes.xaxis.set_major_locator(_count_ticks())
        axes.xaxis.grid(True)
        axes.margins(x=0.15)
        return _svg(figure, "outcomes")


def response_times_figure(seconds: Sequence[float]) -> str:
    """A histogram of the seconds from each request to its answer."""
    return _histogram_figure(
        seconds, "Response times", "time from request to answer", "requests", floor=1e-4, unit=_seconds_label
    )


def page_sizes_figure(sizes: Sequence[float]) -> str:
    """A histogram of the bytes of each saved page."""
    return _histogram_figure(sizes, "Page sizes", "size of a saved page", "pages", floor=1, unit=_bytes_label)


def _histogram_figure(
    values: Sequence[float], title: str, xlabel: str, ylabel: str, *, floor: float, unit: Callable[[float], str]
) -> str:
    name = title.lower().replace(" ", "-")
    with matplotlib.rc_context(_STYLE):
        figure, axes = _new_figure(5.2, 2.9)
        axes.set(title=title, xlabel=xlabel, ylabel=ylabel)
        if not len(values):
            return _svg(_no_data(figure, axes), name)
        _histogram(axes, values, floor=floor, unit=unit)
        return _svg(figure, name)


def timeline_figure(starts_per_host: Mapping[str, Sequence[float]], first_start: float | None) -> str:
    """The requests over time, one row per busy host: a tick per request, or the request rate when there are many."""
    rows = _timeline_rows(starts_per_host, first_start or 0.0)
    total = sum(len(offsets) for _, offsets in rows)
    with matplotlib.rc_context(_STYLE):
        height = 1.3 + 0.28 * len(rows) if total <= TIMELINE_TICKS else 3.4
        figure, axes = _new_figure(10.0, max(height, 2.2))
        axes.set(title="Requests over time, per host", xlabel="seconds since the crawl's first request")
        if not total:
            return _svg(_no_data(figure, axes), "timeline")
        if total <= TIMELINE_TICKS:
            _draw_ticks(axes, rows)
        else:
            _draw_rates(axes, rows)
        return _svg(figure, "timeline")


def _timeline_rows(
    starts_per_host: Mapping[str, Sequence[float]], first_start: float
) -> list[tuple[str, numpy.ndarray]]:
    """(label, seconds since the first start) of the busiest hosts, then one row for the others (numpy
    arrays: a million requests' offsets as Python floats took 32 MB a copy)."""
    by_size = sorted(starts_per_host.items(), key=lambda item: (-len(item[1]), item[0]))
    rows = [(f"{_label(host or 'no host')} ({len(starts)})", starts) for host, starts in by_size[:TIMELINE_HOSTS]]
    if others := [starts for _, starts in by_size[TIMELINE_HOSTS:]]:
        rows.append((f"other hosts ({sum(map(len, others))})", numpy.concatenate(others)))
    return [(label, numpy.asarray(starts, dtype=float) - first_start) for label, starts in rows if len(starts)]


def _draw_ticks(axes: Axes, rows: list[tuple[str, numpy.ndarray]]) -> None:
    colors = matplotlib.colormaps["tab10"].colors
    for row, (_, offsets) in enumerate(rows):
        # One path per host, its ticks separated by NaN: a third of the SVG
        # that eventplot's one path per tick makes.
        xs = [x for offset in offsets for x in (offset, offset, math.nan)]
        ys = [y for _ in offsets for y in (row - 0.38, row + 0.38, math.nan)]
        axes.plot(xs, ys, color=colors[row % len(colors)], linewidth=0.7, solid_capstyle="butt")
    axes.set_yticks(range(len(rows)), [label for label, _ in rows])
    axes.set_ylim(len(rows) - 0.5, -0.5)  # the busiest host on top
    axes.xaxis.grid(True)
    axes.set_xlim(left=-max(_span(rows) * 0.01, 0.5))


def _draw_rates(axes: Axes, rows: list[tuple[str, numpy.ndarray]]) -> None:
    span = max(_span(rows), 1.0)
    edges = numpy.linspace(0.0, span, TIMELINE_BINS + 1)
    width = edges[1] - edges[0]
    centers = (edges[:-1] + edges[1:]) / 2
    colors = matplotlib.colormaps["tab10"].colors
    for row, (label, offsets) in enumerate(rows):
        counts, _ = numpy.histogram(offsets, bins=edges)
        color = colors[row % len(colors)] if row < TIMELINE_HOSTS else "#555555"
        axes.plot(centers, counts / width, label=label, color=color, linewidth=1.0)
    axes.set_ylabel(f"requests per second\n(mean over {width:.3g} s)")
    axes.set_ylim(bottom=0)
    axes.grid(True)
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)


def _span(rows: list[tuple[str, numpy.ndarray]]) -> float:
    return max((float(offsets.max()) for _, offsets in rows if len(offsets)), default=0.0)


def _histogram(axes: Axes, values: Sequence[float], *, floor: float, unit: Callable[[float], str]) -> None:
    """Bars of *values* in 30 bins; on a log scale (values below *floor* raised to it) when their range is wide."""
    values = numpy.asarray(values, dtype=float)
    low, high = max(values.min(), floor), max(values.max(), floor)
    if high / low > WIDE_RANGE:
        values = numpy.maximum(values, floor)
        bins = numpy.geomspace(low, high, 31)
        axes.set_xscale("log")
    elif values.min() == values.max():
        # One value: bins around it, not matplotlib's default of +-0.5 (negative seconds and bytes).
        middle = values[0]
        spread = max(middle * 0.1, floor)
        bins = numpy.linspace(max(middle - spread, 0.0), middle + spread, 12)  # 11 bins: the value in the middle one
    else:
        bins = 30
    if axes.get_xscale() == "linear":
        axes.xaxis.set_major_locator(MaxNLocator(nbins=5))  # room for the labels' units
    axes.hist(values, bins=bins, color=BAR, edgecolor="white", linewidth=0.4)
    # Plain labels with a unit (matplotlib's log labels are mathtext, which is off).
    axes.xaxis.set_major_formatter(FuncFormatter(lambda value, _: unit(value)))
    axes.xaxis.set_minor_formatter(NullFormatter())
    axes.yaxis.set_major_locator(_count_ticks())
    axes.yaxis.grid(True)


def _seconds_label(seconds: float) -> str:
    if seconds == 0:
        return "0"
    return f"{seconds:g} s" if abs(seconds) >= 1 else f"{seconds * 1000:.4g} ms"


def _bytes_label(count: float) -> str:
    if count == 0:
        return "0"
    for unit in ("B", "kB", "MB", "GB"):
        if abs(count) < 1000:
            return f"{count:.4g} {unit}"
        count /= 1000
    return f"{count:g} TB"


def _count_ticks() -> MaxNLocator:
    """Ticks for an axis of counts: whole numbers only."""
    return MaxNLocator(nbins="auto", integer=True)


def _new_figure(width: float, height: float) -> tuple[Figure, Axes]:
    figure = Figure(figsize=(width, height), layout="constrained")
    return figure, figure.add_subplot()


def _no_data(figure: Figure, axes: Axes) -> Figure:
    axes.text(0.5, 0.5, "no data", transform=axes.transAxes, ha="center", va="center", color="#888888", fontsize=12)
    axes.set_xticks([])
    axes.set_yticks([])
    return figure


_XML_PROLOG = re.compile(r"\A\s*(<\?xml[^>]*\?>\s*)?(<!DOCTYPE[^>]*>\s*)?")
_SIZE = re.compile(r'(<svg[^>]*?) width="[^"]*" height="[^"]*"')
_ID = re.compile(r'\bid="([^"]+)"')
_REFERENCE = re.compile(r'(xlink:href="#|url\(#)')


def _svg(figure: Figure, name: str) -> str:
    """The figure as an ``<svg>`` element for an HTML page: no XML prolog, sized by CSS, ids prefixed by *name*."""
    out = io.StringIO()
    with warnings.catch_warnings():
        # A host or reason in a script the bundled font lacks is drawn as boxes: no warning a line on stderr.
        warnings.filterwarnings("ignore", "Glyph .* missing from font", UserWarning)
        FigureCanvasSVG(figure).print_svg(out, metadata=_NO_METADATA)
    svg = _XML_PROLOG.sub("", out.getvalue(), count=1)
    # Without a fixed size the page's CSS scales the figure (its viewBox keeps the shape).
    svg = _SIZE.sub(r"\1", svg, count=1)
    # Five figures share one HTML document: each one's ids (glyphs, clip paths) get its own prefix.
    svg = _ID.sub(rf'id="{name}-\1"', svg)
    svg = _REFERENCE.sub(rf"\1{name}-", svg)
    return svg.replace("<svg ", '<svg role="img" ', 1).strip() + "\n"


def _label(text: str) -> str:
    """*text* fit for a figure: cut short, control characters and lone surrogates replaced."""
    text = "".join(character if character.isprintable() else "\ufffd" for character in text)
    return text if len(text) <= LABEL_CHARACTERS else text[: LABEL_CHARACTERS - 1] + "…"
