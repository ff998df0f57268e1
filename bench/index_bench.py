"""Index and query benchmark: `tse index` on the wikipedia depth-2 and toscrape
depth-2 pages, querier start-up, and 1,000 generated queries.  Run by bench/run.py.

Baselines, run side by side: reading the same page files (`cat`), the querier
starting from the text index alone (no sidecar), a bare Python start, and the
same queries answered from the text index loaded into memory.
"""

from __future__ import annotations

import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BIN, REPEAT, SHARED, WORK, env_with_proxy, measure
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
        querier = Querier(directory, reader)
        for line in queries[:50]:
            querier.answer(line)  # warm the URL cache the same way for both
        times, listed = [], 0
        for line in queries:
            start = time.perf_counter()
            output = querier.answer(line)
            times.append((time.perf_counter() - start) * 1000)
            listed += output.count("\nscore ")
        times.sort()
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
    rows += [
        "## Query latency (wikipedia-2)",
        "",
        f"{QUERIES} generated queries (bench/index_bench.py, seed 1), timed one by one in-process:",
        "parse, score, rank and format, URLs from the page files.",
        "",
        *latencies(directories["wikipedia-2"], wikipedia_index),
        "",
    ]
    return rows
