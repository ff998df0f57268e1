"""Seeing a crawl (issue 14): how right the status line's ETA is, and what the
status line and the crawl record (`--record`) cost.

1. ``eta``: toscrape at depth 1 at the default politeness (1 s between
   requests, 73 pages, about 75 s), with ``tse crawl``'s stderr on a
   pseudo-terminal (200 columns), so that the status line is drawn.  The
   benchmark reads the terminal as it goes, timing every redraw from the
   process start, and compares the ETA shown at 5, 15, 30 and 60 s with the
   time actually left (until the summary line ``tse crawl: N pages saved``).
   The site server's request log gives the pace of the page fetches.
2. ``cost``: wikipedia at depth 2 with ``-s DOWNLOAD_DELAY=0`` (1,675 pages,
   a few seconds): ``--no-progress`` with stderr to a file (the baseline)
   against the status line (stderr on a pseudo-terminal) with ``--record``,
   the status line alone and the record alone, interleaved in each round
   (the order rotated by one place from round to round).

The mirror is served by the project's site server (in this process) as an HTTP
proxy for ``http://cs50tse.cs.dartmouth.edu/``.  Run by bench/run.py, or alone:
``.venv/bin/python bench/progress_bench.py [eta] [cost]`` (default both); the
section is also written to bench/work/progress_results.md.
"""

from __future__ import annotations

import codecs
import fcntl
import itertools
import os
import pty
import re
import select
import shutil
import statistics
import struct
import subprocess
import sys
import termios
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BIN, REPEAT, ROOT, WORK, env_with_proxy
from tse_scrapy.devtools.siteserver import Hit, SiteServer

HOST = "http://cs50tse.cs.dartmouth.edu"
TOSCRAPE = f"{HOST}/tse/toscrape/index.html"
WIKIPEDIA = f"{HOST}/tse/wikipedia/index.html"
ETA_RUNS = max(REPEAT, 3)
COST_ROUNDS = max(REPEAT, 10)  # the rounds vary by +-10 %: enough of them to see 3 %
INSTANTS = (5, 15, 30, 60)  # seconds from the process start at which the ETA is read
WIKIPEDIA_PAGES = 1675
PARTS = ("eta", "cost")

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
STATUS = re.compile(
    r"saved (?P<saved>\d+) . queued (?P<queued>\d+)(?: \((?P<depths>[^)]*)\))? . failed (?P<failed>\d+)"
    r" . (?P<rate>[\d.]+) req/s . (?P<clock>[\d:]+)(?: . ETA (?P<bound>\u2265 |>= )?(?P<eta>[\d:]+))?$"
)
SUMMARY = re.compile(r"tse crawl: (\d+) pages saved")


@dataclass
class Status:
    """One drawing of the status line, and when it arrived (seconds from the process start)."""

    time: float
    saved: int
    queued: int
    eta: float | None  # None: no ETA shown
    lower_bound: bool
    text: str


@dataclass
class Run:
    """One finished ``tse crawl``: what its terminal showed, and when."""

    wall: float  # process start to exit
    cpu: float  # user + system seconds of the process
    code: int
    pages: int  # page files in the page directory
    statuses: list[Status] = field(default_factory=list)
    odd: list[tuple[float, str]] = field(default_factory=list)  # terminal lines that are neither
    summary: float | None = None  # when the summary line arrived
    started: float = 0.0  # time.time() at the process start (to place the server's log)


def clock_seconds(text: str) -> float:
    """``m:ss`` or ``h:mm:ss`` as seconds."""
    seconds = 0
    for part in text.split(":"):
        seconds = seconds * 60 + int(part)
    return float(seconds)


def terminal_lines(chunks: list[tuple[float, bytes]]) -> list[tuple[float, str]]:
    """What the terminal received, split into lines (tqdm redraws with ``\\r``), each with the time its
    text arrived (a line's text comes in one write; its end only with the next redraw)."""
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    lines, current, when = [], "", 0.0
    for moment, chunk in chunks:
        for piece in re.split(r"([\r\n])", decoder.decode(chunk)):
            if piece in ("\r", "\n"):
                lines.append((when, current))
                current = ""
            elif piece:
                current, when = current + piece, moment
    lines.append((when, current + decoder.decode(b"", final=True)))
    return [(when, ANSI.sub("", line).strip()) for when, line in lines]


def file_line(run: Run, when: float, line: str) -> None:
    """File one line of stderr as a status line, the summary line, or another line."""
    if not line:
        return
    found = STATUS.search(line)
    if found:
        eta = clock_seconds(found["eta"]) if found["eta"] else None
        run.statuses.append(Status(when, int(found["saved"]), int(found["queued"]), eta, bool(found["bound"]), line))
    elif SUMMARY.search(line):
        run.summary = when
    else:
        run.odd.append((when, line))


def crawl(
    seed: str, depth: str, out: Path, options: list[str], proxy: str, *, on_terminal: bool, runner: tuple = ()
) -> Run:
    """``tse crawl SEED OUT DEPTH OPTIONS`` into a fresh *out*, stdout to a file; stderr on a
    pseudo-terminal (read as it comes) when *on_terminal*, else to a file (its lines are then
    all timed at the exit); *runner* goes before ``tse`` (a profiler)."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    command = [*runner, str(BIN / "tse"), "crawl", seed, str(out), depth, *options]
    stderr_log = WORK / "progress-stderr.log"
    with open(WORK / "progress-stdout.log", "wb") as stdout, open(stderr_log, "wb") as stderr:
        if on_terminal:
            master, terminal = pty.openpty()
            fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 200, 0, 0))
        started, start = time.time(), time.perf_counter()
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env_with_proxy(proxy),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=terminal if on_terminal else stderr,
        )
        if on_terminal:
            os.close(terminal)
            lines = terminal_lines(read_terminal(master, start))
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
    if not on_terminal:
        lines = [(wall, line.strip()) for line in stderr_log.read_text(errors="replace").splitlines()]
    pages = sum(1 for entry in os.scandir(out) if entry.name.isdigit())
    run = Run(wall, usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status), pages, started=started)
    for when, line in lines:
        file_line(run, when, line)
    if run.code != 0:
        raise RuntimeError(f"exit {run.code}: {' '.join(command)}\n" + "\n".join(line for _, line in run.odd[-20:]))
    return run


def read_terminal(master: int, start: float) -> list[tuple[float, bytes]]:
    """Everything written to the pseudo-terminal, with its arrival time (from *start*), until
    the child has closed it."""
    chunks = []
    try:
        while True:
            select.select([master], [], [])
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every writer has closed the terminal
                break
            if not chunk:
                break
            chunks.append((time.perf_counter() - start, chunk))
    finally:
        os.close(master)
    return chunks


# -- 1. The ETA -----------------------------------------------------------------


def shown_at(run: Run, instant: float) -> Status | None:
    """The last status line drawn at or before *instant*."""
    return next((s for s in reversed(run.statuses) if s.time <= instant), None)


def eta_runs(mirror: Path) -> list[tuple[Run, list[Hit]]]:
    out = WORK / "progress-eta"
    runs = []
    with SiteServer(mirror) as server:
        for _ in range(ETA_RUNS):
            first = len(server.hits)
            run = crawl(TOSCRAPE, "1", out, [], server.url, on_terminal=True)
            runs.append((run, list(server.hits[first:])))
    shutil.rmtree(out, ignore_errors=True)
    return runs


def crawl_end(run: Run) -> float:
    """When the crawl was over: its summary line, else its exit."""
    return run.summary if run.summary is not None else run.wall


def eta_table(runs: list[tuple[Run, list[Hit]]]) -> list[str]:
    """One row a crawl: the ETA shown at each instant against the time actually left; then the medians."""
    columns = ["run", "pages", "wall s", "summary at s", "first line at s", "last page answered at s"]
    columns += [f"ETA at {t} s: shown / real / error" for t in INSTANTS]
    rows = ["| " + " | ".join(columns) + " |", "|---" * len(columns) + "|"]
    errors: dict[int, list[float]] = {t: [] for t in INSTANTS}
    for number, (run, hits) in enumerate(runs, 1):
        end = crawl_end(run)
        cells = [str(number), str(run.pages), f"{run.wall:.1f}", f"{end:.1f}"]
        cells += [f"{run.statuses[0].time:.2f}" if run.statuses else "-", f"{last_page(run, hits):.1f}"]
        for t in INSTANTS:
            shown = shown_at(run, t)
            if shown is None or shown.eta is None or end <= t:
                cells.append("-" if shown is None or end <= t else "no ETA")
                continue
            real = end - t
            errors[t].append((shown.eta - real) / real)
            bound = " (≥)" if shown.lower_bound else ""
            cells.append(f"{shown.eta:.0f}{bound} / {real:.1f} / {errors[t][-1]:+.1%}")
        rows.append("| " + " | ".join(cells) + " |")
    medians = [f"{statistics.median(errors[t]):+.1%}" if errors[t] else "-" for t in INSTANTS]
    rows.append("| median error |" + " |" * (len(columns) - len(INSTANTS) - 1) + " " + " | ".join(medians) + " |")
    return rows


def last_page(run: Run, hits: list[Hit]) -> float:
    """When the server answered the crawl's last request (seconds from the process start)."""
    return max(h.done or h.time for h in hits) - run.started if hits else float("nan")


def eta_section(runs: list[tuple[Run, list[Hit]]]) -> list[str]:
    rows = eta_table(runs)
    ends = [(crawl_end(run) - last_page(run, hits), run.wall - last_page(run, hits)) for run, hits in runs]
    odd = sorted({line for run, _ in runs for _, line in run.odd})
    gaps = [gap for _, hits in runs for gap in page_pace(hits)]
    jumps = max_jump(runs)
    return [
        "### 1. The ETA",
        "",
        f"Toscrape, depth 1, default politeness (`DOWNLOAD_DELAY=1`), {len(runs)} crawls; stderr on a",
        "pseudo-terminal of 200 columns, read as it comes, each redraw timed from the process start. Shown: the ETA",
        "of the last status line drawn at or before t (≥: marked as a lower bound); real: the time from t to the",
        "summary line `tse crawl: ... pages saved`; error: (shown - real) / real.",
        "",
        "```sh",
        f"tse crawl {TOSCRAPE} DIR 1 2>/dev/pts/N",
        "```",
        "",
        *rows,
        "",
        "Page fetches (site server's log, page requests after the first): interval between the arrivals of",
        f"consecutive page requests median {statistics.median(gaps):.3f} s, mean {statistics.mean(gaps):.3f} s,"
        f" min {min(gaps):.3f} s, max {max(gaps):.3f} s ({len(gaps)} intervals); the server answered each in"
        f" {statistics.median(answer_times(runs)) * 1000:.1f} ms (median).",
        f"From the last page answered to the summary line: {fmt_range(e for e, _ in ends)} s; to the exit: "
        f"{fmt_range(x for _, x in ends)} s. From the first page saved on, the largest change of the ETA between two"
        f" redraws, beyond the time elapsed: {jumps:.1f} s.",
        "The first status lines (run 1): "
        + "; ".join(f"`{s.text}` at {s.time:.2f} s" for s in first_lines(runs))
        + ".",
        "ETA shown minus the time actually left from the moment it was drawn, every redraw from the first page"
        f" saved: {bias_text(runs)}.",
        "Other lines on the terminal: " + ("; ".join(f"`{line[:100]}`" for line in odd[:6]) or "none") + ".",
        "",
    ]


def page_pace(hits: list[Hit]) -> list[float]:
    """Seconds between the arrivals of consecutive page requests (robots.txt left out)."""
    times = [h.time for h in hits if not h.key.endswith("/robots.txt")]
    return [b - a for a, b in itertools.pairwise(times)]


def bias_text(runs: list[tuple[Run, list[Hit]]]) -> str:
    """How far the ETA is off at the moment it is drawn (seconds), early and late in the crawl."""
    early, late, every = [], [], []
    for run, _ in runs:
        end = crawl_end(run)
        drawn = [(s.eta - (end - s.time), end - s.time) for s in with_eta(run) if s.saved > 0 and s.time < end]
        every += [bias for bias, _ in drawn]
        early += [bias for bias, left in drawn if left > 40]
        late += [bias for bias, left in drawn if left < 15]
    return (
        f"median {statistics.median(every):+.2f} s (min {min(every):+.2f}, max {max(every):+.2f});"
        f" with more than 40 s left {statistics.median(early):+.2f} s, with less than 15 s left"
        f" {statistics.median(late):+.2f} s (the ETA is shown to the second)"
    )


def with_eta(run: Run) -> list[Status]:
    return [s for s in run.statuses if s.eta is not None]


def first_lines(runs: list[tuple[Run, list[Hit]]]) -> list[Status]:
    """The status lines of the first run up to the first with a page saved."""
    statuses = runs[0][0].statuses
    end = next((i for i, s in enumerate(statuses) if s.saved > 0), len(statuses) - 1)
    return statuses[: end + 1]


def answer_times(runs: list[tuple[Run, list[Hit]]]) -> list[float]:
    return [h.done - h.time for _, hits in runs for h in hits if h.done is not None]


def max_jump(runs: list[tuple[Run, list[Hit]]]) -> float:
    """The largest |ETA change + time elapsed| between consecutive status lines of a run, from
    the first page saved (before it, the seed's links are not known yet)."""
    jump = 0.0
    for run, _ in runs:
        since = [s for s in with_eta(run) if s.saved > 0]
        for a, b in itertools.pairwise(since):
            jump = max(jump, abs((b.eta - a.eta) + (b.time - a.time)))
    return jump


def fmt_range(values, form: str = "{:.2f}") -> str:
    values = sorted(values)
    low, high = form.format(values[0]), form.format(values[-1])
    return low if low == high else f"{low} to {high}"


# -- 2. The cost ----------------------------------------------------------------

# name -> (with --record, stderr on a terminal: the status line drawn)
VARIANTS = {
    "baseline: `--no-progress`, stderr to a file": (False, False),
    "status line (stderr on a terminal) + `--record`": (True, True),
    "status line alone": (False, True),
    "`--record` alone, `--no-progress`, stderr to a file": (True, False),
}


@dataclass
class Cost:
    """The runs of each variant (in round order), and a record file's lines."""

    runs: dict[str, list[Run]]
    record_sizes: list[tuple[int, int]]  # bytes, lines of each record written
    record_lines: list[bytes]  # the last record's lines
    profile: dict[str, float] = field(default_factory=dict)  # share of a profiled crawl's time, by feature


def cost_runs(mirror: Path) -> Cost:
    out, record = WORK / "progress-cost", WORK / "progress-record.jsonl"
    cost = Cost({name: [] for name in VARIANTS}, [], [])
    with SiteServer(mirror) as server:
        for number in range(COST_ROUNDS):
            for name in rotated(list(VARIANTS), number):
                recorded, on_terminal = VARIANTS[name]
                record.unlink(missing_ok=True)
                options = ["-s", "DOWNLOAD_DELAY=0"]
                options += ["--record", str(record)] if recorded else []
                options += [] if on_terminal else ["--no-progress"]
                run = crawl(WIKIPEDIA, "2", out, options, server.url, on_terminal=on_terminal)
                if run.pages != WIKIPEDIA_PAGES:
                    raise RuntimeError(f"{name}: {run.pages} pages saved, not {WIKIPEDIA_PAGES}")
                cost.runs[name].append(run)
                if recorded:
                    cost.record_lines = record.read_bytes().splitlines(keepends=True)
                    cost.record_sizes.append((sum(map(len, cost.record_lines)), len(cost.record_lines)))
        cost.profile = profile_shares(out, record, server.url)
    shutil.rmtree(out, ignore_errors=True)
    record.unlink(missing_ok=True)
    return cost


# Each feature's code, by file under tse_scrapy/; the census of the frontier (FrontierCensus, in
# rules/crawling/eta.py) is kept with or without the status line.
FEATURES = {
    "the crawl record": ("crawl/downloader/record.py", "rules/files/crawlrecord.py"),
    "the status line": ("crawl/extensions/progress.py", "terminal.py", "rules/crawling/eta.py"),
    "the frontier census": (),
}
CENSUS_METHODS = {"__init__", "host", "add", "remove", "__len__", "shallowest"}
PROFILER = (sys.executable, "-m", "cProfile", "-o")


def feature_of(function: tuple) -> str | None:
    """The feature whose code *function* (a pstats key: path, line, name) is, if any."""
    path, _, name = function
    where = Path(path).as_posix().rpartition("tse_scrapy/")[2] if "tse_scrapy/" in path else ""
    if where == "rules/crawling/eta.py" and name in CENSUS_METHODS:
        return "the frontier census"
    return next((title for title, files in FEATURES.items() if where in files), None)


def profile_shares(out: Path, record: Path, proxy: str) -> dict[str, float]:
    """One crawl with the status line and the record under cProfile: the share of its time spent in
    each feature's code (the cumulative time of its functions called from outside the feature)."""
    import pstats

    profile = WORK / "progress.prof"
    record.unlink(missing_ok=True)
    options = ["-s", "DOWNLOAD_DELAY=0", "--record", str(record)]
    crawl(WIKIPEDIA, "2", out, options, proxy, on_terminal=True, runner=(*PROFILER, str(profile)))
    stats = pstats.Stats(str(profile)).stats
    profile.unlink()
    total = max(cumulative for _, _, _, cumulative, _ in stats.values())
    shares = dict.fromkeys(FEATURES, 0.0)
    for function, (_, _, _, cumulative, callers) in stats.items():
        title = feature_of(function)
        if title is not None and not any(feature_of(caller) == title for caller in callers):
            shares[title] += cumulative / total
    return shares


def rotated(names: list[str], by: int) -> list[str]:
    """*names*, starting *by* places on (each variant takes each place in the round in turn)."""
    by %= len(names)
    return names[by:] + names[:by]


def formatting_seconds(lines: list[bytes]) -> float:
    """In this process: the best of 10 times to format a whole record's lines again (format_record)."""
    from tse_scrapy.rules.files.crawlrecord import format_record, parse_record

    records = [parse_record(line) for line in lines]
    best = float("inf")
    for _ in range(10):
        start = time.perf_counter()
        for record in records:
            format_record(record).encode("ascii")
        best = min(best, time.perf_counter() - start)
    return best


def cost_section(cost: Cost) -> list[str]:
    names = list(cost.runs)
    baseline = cost.runs[names[0]]
    base_wall = statistics.median(run.wall for run in baseline)
    base_cpu = statistics.median(run.cpu for run in baseline)
    rows = [
        "| variant | pages, exit | wall s, each round | wall s (median) | ratio of medians "
        "| median of the rounds' ratios | CPU s (median) | CPU ratio of medians | status lines drawn (median) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, runs in cost.runs.items():
        wall = statistics.median(run.wall for run in runs)
        cpu = statistics.median(run.cpu for run in runs)
        per_round = statistics.median(run.wall / base.wall for run, base in zip(runs, baseline, strict=True))
        saved = f"all {WIKIPEDIA_PAGES}" if all(r.pages == WIKIPEDIA_PAGES for r in runs) else "NOT all"
        exits = "0" if all(r.code == 0 for r in runs) else "NOT 0"
        drawn = statistics.median(len(run.statuses) for run in runs)
        rows.append(
            f"| {name} | {saved}, {exits} | {', '.join(f'{run.wall:.2f}' for run in runs)} | {wall:.2f} "
            f"| {wall / base_wall:.3f} | {per_round:.3f} | {cpu:.2f} | {cpu / base_cpu:.3f} | {drawn:.0f} |"
        )
    sizes = fmt_range((size for size, _ in cost.record_sizes), "{:,.0f}")
    lines = fmt_range((count for _, count in cost.record_sizes), "{:,.0f}")
    formatting = formatting_seconds(cost.record_lines)
    return [
        "### 2. What the status line and the record cost",
        "",
        f"Wikipedia, depth 2, `-s DOWNLOAD_DELAY=0` ({WIKIPEDIA_PAGES} pages), {len(baseline)} rounds,"
        " the four variants one after the other in each round (the order rotated by one place each round), each"
        " into a fresh empty directory (and the record file deleted before); stdout to a file; wall time from the"
        " process start to its exit, CPU time (user + system) of the crawl process; medians.",
        "",
        "```sh",
        f"tse crawl {WIKIPEDIA} DIR 2 -s DOWNLOAD_DELAY=0 --no-progress 2>FILE",
        f"tse crawl {WIKIPEDIA} DIR 2 -s DOWNLOAD_DELAY=0 --record FILE.jsonl 2>/dev/pts/N",
        "```",
        "",
        *rows,
        "",
        f"The record file: {sizes} bytes, {lines} lines (each run with `--record`). Formatting its lines again in",
        f"the benchmark's process (`format_record`, best of 10): {formatting * 1000:.1f} ms a crawl,"
        f" {formatting / max(len(cost.record_lines), 1) * 1e6:.1f} µs a line, {formatting / base_cpu:.2%} of the"
        " baseline's CPU time.",
        "One more crawl with both, under cProfile (which slows it about twice; indicative): the share of its time"
        " spent in "
        + ", ".join(f"{title} {share:.1%}" for title, share in cost.profile.items())
        + " (the census of the frontier by host and depth is kept with or without the status line).",
        "",
    ]


def code_version() -> str:
    """The commit measured, and whether the working tree differed from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "tse_scrapy"], cwd=ROOT, capture_output=True, text=True)
    except OSError:
        return "an unknown commit"
    if head.returncode != 0:
        return "an unknown commit"
    return f"`{head.stdout.strip()}`" + (" with uncommitted changes in tse_scrapy/" if dirty.stdout.strip() else "")


def run(mirror: Path, parts: tuple[str, ...] = PARTS) -> list[str]:
    sections = []
    if "eta" in parts:
        sections += eta_section(eta_runs(mirror))
    if "cost" in parts:
        sections += cost_section(cost_runs(mirror))
    for name in ("progress-stdout.log", "progress-stderr.log"):
        (WORK / name).unlink(missing_ok=True)
    report = [
        "## Seeing a crawl (issue 14)",
        "",
        "The status line (`tse_scrapy/crawl/extensions/progress.py`, ETA from `tse_scrapy/rules/crawling/eta.py`)",
        f"and the crawl record (`--record`). Through the site server as a proxy on 127.0.0.1 for `{HOST}/` (in the",
        "benchmark's process), from the repository root; `tse` is `.venv/bin/tse`;",
        f"code at {code_version()}. `bench/progress_bench.py`.",
        "",
        *sections,
    ]
    WORK.mkdir(parents=True, exist_ok=True)
    (WORK / "progress_results.md").write_text("\n".join(report) + "\n")
    return report


if __name__ == "__main__":
    from bench.common import unpack_mirror

    chosen = tuple(sys.argv[1:]) or PARTS
    if not set(chosen) <= set(PARTS):
        raise SystemExit(f"usage: progress_bench.py [{'] ['.join(PARTS)}]")
    print("\n".join(run(unpack_mirror(), chosen)))
