"""The search index at scale (issue 27): `tse index` of 20,000 pages with and without it, its size,
`tse index --update` after 5 % of the pages changed, and `tse serve` on it (start, latency).

"Today's" indexer is the code before the search index (commit TODAY_COMMIT, a git worktree under
bench/work/today), run side by side with this checkout's in the same rounds.
Run alone: `.venv/bin/python -m bench.search_index_bench`.
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import time
from pathlib import Path

from bench.common import BIN, REPEAT, WORK, unpack_mirror
from bench.index_bench import (
    large_directory,
    measure_cpu,
    page_directories,
    page_files,
    serve_start_up,
    tse_from,
    worktree,
)

TODAY_COMMIT = "50c3a1d"  # the last commit before the search index
TODAY = WORK / "today"
CHANGED_SHARE = 0.05
LATENCY_QUERIES = 500
# `tse serve` is started this many times at least (a start takes half a second; the first after
# the builds above may find the files out of the system's cache).
STARTS = 5


def changed_copy(directory: Path, out: Path, share: float, seed: int = 5) -> Path:
    """A copy of *directory* (hard links) in which *share* of the pages are rewritten with a word more."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    files = page_files(directory)
    for path in [*files, directory / ".crawler"]:
        os.link(path, out / path.name)
    for path in random.Random(seed).sample(files, int(len(files) * share)):
        data = path.read_bytes()
        (out / path.name).unlink()
        (out / path.name).write_bytes(data + b"<p>zyzzyva changed</p>")
    return out


def titles_of(directory: Path, count: int, seed: int = 3) -> list[str]:
    from tse_scrapy.rules.files import pagedir
    from tse_scrapy.rules.text.pagetext import page_title

    files = sorted(page_files(directory), key=lambda path: int(path.name))
    chosen = random.Random(seed).sample(files, count)
    return [page_title(pagedir.decode_page(path.read_bytes()).body) or "computer" for path in chosen]


def latency(directory: Path, index: Path, queries: list[str]) -> tuple[float, float, float]:
    """Open the engine (seconds) and answer *queries* one by one after 50 (median and p99 ms)."""
    from tse_scrapy.index.engine import QueryEngine
    from tse_scrapy.index.storage import IndexReader

    start = time.perf_counter()
    engine = QueryEngine(directory, IndexReader(index))
    engine.search_index  # noqa: B018 (opened as tse serve opens it)
    opened = time.perf_counter() - start
    for line in queries[:50]:
        engine.answer(line, "relevance", limit_size=True)
    times = []
    for line in queries:
        start = time.perf_counter()
        engine.answer(line, "relevance", limit_size=True)
        times.append((time.perf_counter() - start) * 1000)
    times.sort()
    return opened, statistics.median(times), times[int(len(times) * 0.99)]


def run(mirror: Path) -> list[str]:
    directories = page_directories(mirror)
    directory = large_directory(directories["wikipedia-2"])
    today = worktree(TODAY, TODAY_COMMIT)
    out = WORK / "search-index"
    out.mkdir(exist_ok=True)
    page_bytes = sum(path.stat().st_size for path in page_files(directory))
    indexers = {
        "today (SPEC index and store)": tse_from(today, "index", directory, out / "today.index", "--jobs", "2"),
        "with the search index": [str(BIN / "tse"), "index", str(directory), str(out / "new.index"), "--jobs", "2"],
    }
    runs: dict[str, list[tuple[float, float, float]]] = {label: [] for label in indexers}
    for _ in range(REPEAT):
        for label, command in indexers.items():
            runs[label].append(measure_cpu(command))
    search_bytes = (out / "new.index.search").stat().st_size
    # --update after 5 % of the pages changed, against a full build of the same changed pages.
    changed = changed_copy(directory, out / "changed", CHANGED_SHARE)
    updates, fulls = [], []
    for _ in range(REPEAT):
        for suffix in ("", ".bin", ".docs", ".search", ".stamp"):
            shutil.copyfile(out / f"new.index{suffix}", out / f"updated.index{suffix}")
        updates.append(measure_cpu([str(BIN / "tse"), "index", str(changed), str(out / "updated.index"), "--update"]))
        fulls.append(measure_cpu([str(BIN / "tse"), "index", str(changed), str(out / "full.index"), "--jobs", "2"]))
    queries = titles_of(directory, LATENCY_QUERIES)
    opened, p50, p99 = latency(directory, out / "new.index", queries)
    starts = [serve_start_up(directory, out / "new.index", [str(BIN / "tse")]) for _ in range(max(REPEAT, STARTS))]

    today_wall = statistics.median(wall for wall, _, _ in runs["today (SPEC index and store)"])
    rows = [
        "## The search index at scale (issue 27)",
        "",
        f"20,000 pages ({page_bytes / 1e6:,.0f} MB, the wikipedia depth-2 pages copied under new URLs), "
        f"`tse index --jobs 2`; {REPEAT} rounds, today's indexer (commit {TODAY_COMMIT}, before the search "
        "index) and this one side by side; medians. Peak RSS is the largest process's.",
        "",
        "| indexer | wall s | CPU s (all processes) | peak RSS MB | wall vs today | goal |",
        "|---|---|---|---|---|---|",
    ]
    for label, measured in runs.items():
        wall = statistics.median(w for w, _, _ in measured)
        cpu = statistics.median(c for _, _, c in measured)
        rss = statistics.median(r for _, r, _ in measured)
        goal = "≤ 2.0x, ≤ 250 MB" if label.startswith("with") else ""
        rows.append(f"| {label} | {wall:.1f} | {cpu:.1f} | {rss:.0f} | {wall / today_wall:.2f}x | {goal} |")
    update_wall = statistics.median(w for w, _, _ in updates)
    full_wall = statistics.median(w for w, _, _ in fulls)
    rows += [
        "",
        f"Search index `INDEXFILE.search`: {search_bytes / 1e6:,.0f} MB, "
        f"{100 * search_bytes / page_bytes:.1f} % of the pages' bytes (goal ≤ 50 %).",
        "",
        f"`tse index --update` after {CHANGED_SHARE:.0%} of the pages changed (a word added to each): "
        f"{update_wall:.1f} s against {full_wall:.1f} s for a full `tse index --jobs 2` of the same pages: "
        f"{update_wall / full_wall:.2f}x (goal ≤ 0.3x).",
        "",
        f"rank=relevance on that index, in-process: opening it {opened:.2f} s; {LATENCY_QUERIES} page titles "
        f"one by one after 50: median {p50:.2f} ms, p99 {p99:.2f} ms (goal: p50 ≤ 10 ms). `tse serve` from its "
        f"start to its first `/api/search` answer: {statistics.median(a for _, a in starts):.2f} s "
        f"(median of {len(starts)}: {', '.join(f'{a:.2f}' for _, a in starts)}; goal ≤ 0.5 s).",
        "",
    ]
    return rows


if __name__ == "__main__":
    print("\n".join(run(unpack_mirror())))
