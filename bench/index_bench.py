"""Index and query benchmark: `tse index` on the wikipedia depth-2 and toscrape
depth-2 pages, querier start-up, and 1,000 generated queries.  Run by bench/run.py.

Baselines, run side by side: reading the same page files (`cat`), the querier
starting from the text index alone (no sidecar), a bare Python start, and the
same queries answered from the text index loaded into memory.
"""

from __future__ import annotations

import filecmp
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BIN, REPEAT, ROOT, SHARED, WORK, compile_code, env_with_proxy, measure, time_queries
from tests.support.reference import build_page_directory
from tse_scrapy.devtools.siteserver import SiteServer
from tse_scrapy.index.querier import Querier
from tse_scrapy.index.storage import IndexReader, read_index

QUERIES = 1000


def page_directories(mirror: Path) -> dict[str, Path]:
    """toscrape-2 from the reference crawl; wikipedia-2 crawled in reference
    order (stack order, the C scanner) from the mirror, as no .tsv exists for it."""
    pages = WORK / "pages"
    directories = {"wikipedia-2": pages / "wikipedia-2", "toscrape-2": pages / "toscrape-2"}
    if not (directories["toscrape-2"] / "1").is_file():
        shutil.rmtree(directories["toscrape-2"], ignore_errors=True)
        build_page_directory(SHARED / "reference", mirror, "toscrape-2", directories["toscrape-2"])
    if not (directories["wikipedia-2"] / "1").is_file():
        directories["wikipedia-2"].mkdir(parents=True, exist_ok=True)
        with SiteServer(mirror) as server:
            subprocess.run(
                [
                    str(BIN / "tse"),
                    "crawl",
                    "http://cs50tse.cs.dartmouth.edu/tse/wikipedia/index.html",
                    str(directories["wikipedia-2"]),
                    "2",
                    "--links",
                    "tse",
                    "-s",
                    "DOWNLOAD_DELAY=0",
                    "-s",
                    "LOG_LEVEL=WARNING",
                ],
                env=env_with_proxy(server.url),
                stdout=subprocess.DEVNULL,
                check=True,
            )
    return directories


def page_files(directory: Path) -> list[Path]:
    return [p for p in directory.iterdir() if p.name.isdigit()]


def indexing(directories: dict[str, Path]) -> list[str]:
    rows = [
        "| pages | count | MB | `tse index` s (median) | pages/s | MB/s | peak RSS MB "
        "| `cat` of the pages s | index / cat |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, directory in directories.items():
        files = page_files(directory)
        megabytes = sum(p.stat().st_size for p in files) / 1e6
        runs, reads = [], []
        for _ in range(REPEAT):
            reads.append(measure(["sh", "-c", f"cat {directory}/[0-9]* > /dev/null"])[0])
            runs.append(measure([str(BIN / "tse"), "index", str(directory), str(WORK / f"{name}.index")]))
        wall = statistics.median(w for w, _ in runs)
        rss = statistics.median(r for _, r in runs)
        read = statistics.median(reads)
        rows.append(
            f"| {name} | {len(files)} | {megabytes:.0f} | {wall:.2f} | {len(files) / wall:.0f} "
            f"| {megabytes / wall:.1f} | {rss:.0f} | {read:.2f} | {wall / read:.1f}x |"
        )
    return rows


def start_up(directory: Path, index: Path) -> list[str]:
    text_only = WORK / "text-only.index"
    shutil.copyfile(index, text_only)
    Path(str(text_only) + ".bin").unlink(missing_ok=True)
    commands = {
        "`tse query` start-up and exit, with the sidecar": [str(BIN / "tse"), "query", str(directory), str(index)],
        "`tse query`, text index only (no sidecar)": [str(BIN / "tse"), "query", str(directory), str(text_only)],
        "bare `python -c pass`": [sys.executable, "-c", "pass"],
    }
    rows = ["| run (wikipedia-2 index, empty input) | wall s (median of 5) | peak RSS MB |", "|---|---|---|"]
    for label, command in commands.items():
        runs = [measure(command, stdin=b"") for _ in range(5)]
        rows.append(
            f"| {label} | {statistics.median(w for w, _ in runs):.3f} | {statistics.median(r for _, r in runs):.0f} |"
        )
    return rows


def generate_queries(index: Path, count: int, seed: int = 1) -> list[str]:
    """Random words (half from the 200 most frequent), 1-4 per query, joined by
    nothing (implicit and), `and` or `or`."""
    postings = read_index(index)
    words = sorted(word.decode() for word in postings)
    frequent = sorted(postings, key=lambda w: -sum(postings[w].values()))[:200]
    frequent = [word.decode() for word in frequent]
    rng = random.Random(seed)
    queries = []
    for _ in range(count):
        terms = [rng.choice(frequent if rng.random() < 0.5 else words) for _ in range(rng.randint(1, 4))]
        line = terms[0]
        for term in terms[1:]:
            line += rng.choice([" ", " ", " and ", " or "]) + term
        queries.append(line)
    return queries


def latencies(directory: Path, index: Path) -> list[str]:
    queries = generate_queries(index, QUERIES)
    rows = [
        "| index opened from | queries | median ms | p99 ms | max ms | documents listed |",
        "|---|---|---|---|---|---|",
    ]
    for label, reader in (
        ("the sidecar (as `tse query` does)", IndexReader(index)),
        ("the text index, parsed into memory", IndexReader(WORK / "text-only.index")),
    ):
        times, listed = time_queries(Querier(directory, reader), queries)
        rows.append(
            f"| {label} | {len(queries)} | {statistics.median(times):.3f} "
            f"| {times[int(len(times) * 0.99)]:.3f} | {times[-1]:.2f} | {listed} |"
        )
    return rows


def run(mirror: Path) -> list[str]:
    directories = page_directories(mirror)
    wikipedia_index = WORK / "wikipedia-2.index"
    rows = [
        "## Indexing",
        "",
        f"{REPEAT} rounds, `tse index` and the `cat` baseline side by side; medians.",
        "wikipedia-2 is crawled in reference order (`--links tse`); toscrape-2 is the reference crawl.",
        "",
        *indexing(directories),
        "",
    ]
    rows += ["## Querier start-up", "", *start_up(directories["wikipedia-2"], wikipedia_index), ""]
    # Before the queries below load an index into this process (children forked later count its size).
    large = ["## Indexing at any size", "", *large_index(mirror), ""]
    rows += [
        "## Query latency (wikipedia-2)",
        "",
        f"{QUERIES} generated queries (bench/index_bench.py, seed 1), timed one by one in-process:",
        "parse, score, rank and format, URLs from the page files.",
        "",
        *latencies(directories["wikipedia-2"], wikipedia_index),
        "",
    ]
    return rows + large


# --- Indexing at any size: 20,000 pages ---------------------------------------------------------

LARGE_PAGES = 20_000
# The indexer and querier before sorted runs, worker processes and the stamp, run from a git worktree.
PREVIOUS_COMMIT = "430a4ace67b053676e92822ca29a78de6897d427"
PREVIOUS = WORK / "previous"
# Runs a `tse` command with the tse_scrapy of the directory given first (ahead of the checkout's).
_TSE_FROM = "import sys; sys.path.insert(0, sys.argv.pop(1)); from tse_scrapy.cli import main; raise SystemExit(main())"
# Opens the querier of the tse_scrapy given first and times the queries of a file, one by one (JSON out).
_LATENCY = r"""
import json, statistics, sys, time
sys.path.insert(0, sys.argv[5])  # this checkout's bench.common (it imports no tse_scrapy)...
from bench.common import time_queries
sys.path[0] = sys.argv[1]  # ...then the tse_scrapy being timed
from tse_scrapy.index.querier import Querier
from tse_scrapy.index.storage import IndexReader
start = time.perf_counter()
querier = Querier(sys.argv[2], IndexReader(sys.argv[3]))
opened = time.perf_counter() - start
queries = open(sys.argv[4]).read().splitlines()
times, listed = time_queries(querier, queries)
json.dump({"open": opened, "median": statistics.median(times), "p99": times[int(len(times) * 0.99)],
           "listed": listed}, sys.stdout)
"""


def previous_code() -> Path:
    """A git worktree of the code before this indexer (made once, under bench/work: git-ignored)."""
    return worktree(PREVIOUS, PREVIOUS_COMMIT)


def worktree(directory: Path, commit: str) -> Path:
    """A git worktree of *commit* at *directory* (made once), compiled as this checkout is."""
    if not (directory / "tse_scrapy" / "cli.py").is_file():
        subprocess.run(["git", "worktree", "prune"], cwd=ROOT, check=True)
        # Quiet: its "HEAD is now at ..." line went to stdout, which a section of RESULTS.md is made of.
        subprocess.run(["git", "worktree", "add", "--quiet", "--detach", str(directory), commit], cwd=ROOT, check=True)
    # Both sides of a comparison compiled alike, however the bench is run.
    compile_code(directory)
    compile_code(ROOT)
    return directory


def large_directory(source: Path, pages: int = LARGE_PAGES) -> Path:
    """*pages* page files made of the pages of *source* copied again and again under new URLs
    (``...?copy=K``), written once under bench/work and reused (a stamp says it is complete)."""
    directory = WORK / "pages" / f"wikipedia-copies-{pages}"
    stamp = directory / ".complete"
    if stamp.is_file():
        return directory
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    (directory / ".crawler").write_bytes(b"")
    originals = sorted((p for p in page_files(source)), key=lambda p: int(p.name))
    for doc_id in range(1, pages + 1):
        copy, original = divmod(doc_id - 1, len(originals))
        url, depth, body = originals[original].read_bytes().split(b"\n", 2)
        if copy:
            url += b"?copy=%d" % copy
        (directory / str(doc_id)).write_bytes(b"\n".join((url, depth, body)))
    stamp.write_bytes(b"")
    return directory


def tse_from(code: Path, *arguments: object) -> list[str]:
    """The command running ``tse ARGUMENTS`` with the tse_scrapy of *code*."""
    return [sys.executable, "-c", _TSE_FROM, str(code), *map(str, arguments)]


def same_store(one: Path, other: Path) -> bool:
    """Whether two document stores hold the same rows in every table (compared a row at a time)."""
    import contextlib
    import sqlite3
    from itertools import zip_longest

    with contextlib.closing(sqlite3.connect(one)) as first, contextlib.closing(sqlite3.connect(other)) as second:
        for table in ("meta", "docs", "files"):
            query = f"SELECT * FROM {table} ORDER BY 1"
            if any(a != b for a, b in zip_longest(first.execute(query), second.execute(query))):
                return False
    return True


def measure_cpu(command: list[str], stdin: bytes | None = None) -> tuple[float, float, float]:
    """As ``measure``, with the CPU seconds (user + system) of the command and its worker processes:
    what a run costs whatever else the machine runs."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bench: failed: {' '.join(command)}")
    return wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def large_index(mirror: Path) -> list[str]:
    """`tse index` of 20,000 pages, before and after (jobs 1 and 2), and the querier on that index."""
    directories = page_directories(mirror)
    source_index = WORK / "wikipedia-2.index"
    if not source_index.is_file():
        subprocess.run([str(BIN / "tse"), "index", str(directories["wikipedia-2"]), str(source_index)], check=True)
    directory = large_directory(directories["wikipedia-2"])
    previous = previous_code()
    out = WORK / "large"
    out.mkdir(exist_ok=True)
    megabytes = sum(p.stat().st_size for p in page_files(directory)) / 1e6
    indexers = {
        "previous (in memory)": ("previous", tse_from(previous, "index", directory, out / "previous.index")),
        "new, `--jobs 1`": (
            "jobs1",
            [str(BIN / "tse"), "index", str(directory), str(out / "jobs1.index"), "--jobs", "1"],
        ),
        "new, `--jobs 2`": (
            "jobs2",
            [str(BIN / "tse"), "index", str(directory), str(out / "jobs2.index"), "--jobs", "2"],
        ),
    }
    runs: dict[str, list[tuple[float, float, float]]] = {label: [] for label in indexers}
    for _ in range(REPEAT):
        for label, (_, command) in indexers.items():
            runs[label].append(measure_cpu(command))
    walls = {label: statistics.median(w for w, _, _ in measured) for label, measured in runs.items()}
    # The querier, previous and new, on the same index files (the new index also has its stamp).
    index = out / "jobs2.index"
    starts: dict[str, list[tuple[float, float]]] = {"previous": [], "new": []}
    for _ in range(5):
        starts["previous"].append(measure(tse_from(previous, "query", directory, index), stdin=b""))
        starts["new"].append(measure([str(BIN / "tse"), "query", str(directory), str(index)], stdin=b""))
    serving: dict[str, list[tuple[float, float]]] = {"previous": [], "new": []}
    for _ in range(5):
        for name, tse in (("previous", tse_from(previous)), ("new", [str(BIN / "tse")])):
            serving[name].append(serve_start_up(directory, index, tse))
    # After every `measure`: the comparisons below grow this process, which forked children would count.
    identical = []
    for name in ("jobs1", "jobs2"):
        files = []
        for suffix in ("", ".bin", ".docs"):
            same = filecmp.cmp(out / f"previous.index{suffix}", out / f"{name}.index{suffix}", shallow=False)
            files.append(f"{suffix or 'text'} {'=' if same else '≠'}")
        rows_same = same_store(out / "previous.index.docs", out / f"{name}.index.docs")
        identical.append(f"{name}: {', '.join(files)}; store rows {'=' if rows_same else '≠'}")
    rows = [
        f"{LARGE_PAGES:,} pages ({megabytes:,.0f} MB): the wikipedia depth-2 pages copied under new URLs "
        f"(`?copy=K`). {REPEAT} rounds, the three side by side; medians. The previous indexer is commit "
        f"{PREVIOUS_COMMIT[:7]} (a git worktree in bench/work/previous).",
        "",
        "| indexer | wall s | CPU s (all processes) | peak RSS MB | speed-up vs previous |",
        "|---|---|---|---|---|",
    ]
    for label, measured in runs.items():
        rss = statistics.median(r for _, r, _ in measured)
        cpu = statistics.median(c for _, _, c in measured)
        rows.append(
            f"| {label} | {walls[label]:.1f} | {cpu:.1f} | {rss:.0f} "
            f"| {walls['previous (in memory)'] / walls[label]:.2f}x |"
        )
    rows += [
        "",
        f"`--jobs 2` against `--jobs 1`: {walls['new, `--jobs 1`'] / walls['new, `--jobs 2`']:.2f}x. "
        f"Byte for byte against the previous index: {' · '.join(identical)}.",
        "",
    ]
    queries = out / "queries.txt"
    # The same vocabulary as wikipedia-2: the queries of its index (parsed here, after every `measure`).
    queries.write_text("".join(line + "\n" for line in generate_queries(source_index, QUERIES)))
    latency: dict[str, list[dict]] = {"previous": [], "new": []}
    for _ in range(REPEAT):
        for name, code in (("previous", previous), ("new", ROOT)):
            child = subprocess.run(
                [sys.executable, "-c", _LATENCY, str(code), str(directory), str(index), str(queries), str(ROOT)],
                capture_output=True,
                check=True,
            )
            latency[name].append(json.loads(child.stdout))
    rows += [
        f"The querier on that index: `tse query` starting and exiting on empty input (median of 5), and "
        f"{QUERIES} generated queries (the wikipedia-2 ones: same words) timed one by one in-process after "
        f"50 warm-up queries ({REPEAT} rounds; medians).",
        "",
        "| querier | start-up s | peak RSS MB | median ms | p99 ms | documents listed |",
        "|---|---|---|---|---|---|",
    ]
    for name in ("previous", "new"):
        found = latency[name]
        rows.append(
            f"| {name} | {statistics.median(w for w, _ in starts[name]):.3f} "
            f"| {statistics.median(r for _, r in starts[name]):.0f} "
            f"| {statistics.median(f['median'] for f in found):.3f} | {statistics.median(f['p99'] for f in found):.2f} "
            f"| {found[-1]['listed']:,} |"
        )
    rows += [
        "",
        "`tse serve` on that index (by default: a worker a core), from its process start to its listening",
        "message and to its first `/api/search` answer (5 rounds, previous and new alternating; medians):",
        "",
        "| server | listening s | first answer s |",
        "|---|---|---|",
    ]
    for name in ("previous", "new"):
        listening = statistics.median(first for first, _ in serving[name])
        answered = statistics.median(second for _, second in serving[name])
        rows.append(f"| {name} | {listening:.3f} | {answered:.3f} |")
    return rows


def serve_start_up(directory: Path, index: Path, tse: list[str]) -> tuple[float, float]:
    """Seconds from starting `tse serve` (run by *tse*) to its listening message and to its first answer."""
    # search_bench builds on this module: imported here, where it is needed, not at the top.
    from bench.search_bench import Server

    server = Server(directory, index, None, tse)
    try:
        answered = server.first_answer("/api/search?q=computer")
        return server.listening or answered, answered
    finally:
        server.stop()


if __name__ == "__main__":
    from bench.common import unpack_mirror

    print("\n".join(["## Indexing at any size", "", *large_index(unpack_mirror())]))
