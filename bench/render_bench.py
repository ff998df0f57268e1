"""``tse crawl --render`` beside the plain crawl of the same site, and its memory over a long crawl.

The site is the mirrored wikipedia (pages of real HTML, each with scripts of its own that the
mirror leaves out: what is measured is the browser's page load), through the site server, no
delay.  In each round, alternating which goes first: the plain crawl and the ``--render`` crawl of
the same first PAGES pages (``--max-pages``).  Seconds a page, and the render's extra cost a page,
medians.  Then one ``--render`` crawl of LONG pages, its memory (the crawl's and the browser's
processes, summed: RSS and PSS) read every 2 seconds: the first and last tenths compared.
Run by bench/run.py, or alone: ``.venv/bin/python bench/render_bench.py`` (BENCH_REPEAT rounds).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BIN, MEMORY_OUT, REPEAT, env_with_proxy, measure, site_server, unpack_mirror

PAGES = 100
LONG = int(os.environ.get("BENCH_RENDER_LONG", "1000"))
WIKIPEDIA = "http://cs50tse.cs.dartmouth.edu/tse/wikipedia/index.html"
FAST = ("-s", "DOWNLOAD_DELAY=0", "-s", "LOG_LEVEL=WARNING", "--no-progress")


def crawl_command(pagedir: Path, pages: int, *options: str) -> list[str]:
    return [str(BIN / "tse"), "crawl", WIKIPEDIA, str(pagedir), "3", "--max-pages", str(pages), *FAST, *options]


def tree_memory(root_pid: int) -> tuple[float, float, float]:
    """RSS and PSS (MB) of a process and all its descendants (the browser's processes too), and the
    PSS of the process alone."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    rss = pss = own = 0
    stack = [root_pid]
    while stack:
        pid = stack.pop()
        stack += children.get(pid, [])
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Rss:"):
                    rss += int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss += int(line.split()[1])
                    own += int(line.split()[1]) if pid == root_pid else 0
        except OSError:
            continue
    return rss / 1024, pss / 1024, own / 1024


def long_crawl(proxy: str, out: Path) -> list[str]:
    pagedir = out / "long"
    pagedir.mkdir(parents=True)
    process = subprocess.Popen(
        crawl_command(pagedir, LONG, "--render"),
        env=env_with_proxy(proxy),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    samples: list[tuple[int, float, float, float]] = []
    while process.poll() is None:
        time.sleep(2)
        saved = sum(1 for p in pagedir.iterdir() if p.name.isdigit())
        samples.append((saved, *tree_memory(process.pid)))
    summary = process.stderr.read().decode().strip().splitlines()[-1:]
    saved = sum(1 for p in pagedir.iterdir() if p.name.isdigit())
    tenth = max(1, len(samples) // 10)
    first, last = samples[:tenth], samples[-tenth:]
    rows = [
        f"One `--render` crawl of {saved} pages; memory of the crawl and its browser processes every 2 s"
        f" ({len(samples)} samples): `{summary[0] if summary else ''}`",
        "",
        "| samples | pages saved | RSS MB, all (median) | PSS MB, all | PSS MB, the crawl process"
        " | PSS MB, the browser and its driver |",
        "|---|---|---|---|---|---|",
    ]
    for name, part in (
        ("first tenth", first),
        ("middle tenth", samples[len(samples) // 2 :][:tenth]),
        ("last tenth", last),
    ):
        rows.append(
            f"| {name} | {part[0][0]}-{part[-1][0]} | {statistics.median(s[1] for s in part):.0f} |"
            f" {statistics.median(s[2] for s in part):.0f} | {statistics.median(s[3] for s in part):.0f} |"
            f" {statistics.median(s[2] - s[3] for s in part):.0f} |"
        )
    return rows


def long_only() -> list[str]:
    """The long crawl alone (``BENCH_RENDER_ONLY_LONG=1``)."""
    out = MEMORY_OUT / f"tse-render-bench-{os.getpid()}"
    try:
        with site_server(unpack_mirror()) as proxy:
            return long_crawl(proxy, out)
    finally:
        shutil.rmtree(out, ignore_errors=True)


def run(mirror: Path | None = None) -> list[str]:
    out = MEMORY_OUT / f"tse-render-bench-{os.getpid()}"
    walls: dict[str, list[float]] = {"plain": [], "--render": []}
    rss: dict[str, list[float]] = {"plain": [], "--render": []}
    try:
        with site_server(mirror or unpack_mirror()) as proxy:
            rounds = max(REPEAT, 3)
            for round_ in range(rounds):
                kinds = [("plain", ()), ("--render", ("--render",))]
                if round_ % 2:
                    kinds.reverse()
                for name, options in kinds:
                    pagedir = out / f"{round_}-{name}"
                    pagedir.mkdir(parents=True)
                    wall, peak = measure(crawl_command(pagedir, PAGES, *options), env_with_proxy(proxy))
                    walls[name].append(wall)
                    rss[name].append(peak)
            rows = [
                "## `tse crawl --render` beside the plain crawl",
                "",
                f"The first {PAGES} pages of the wikipedia mirror (`--max-pages {PAGES}`, no delay), {rounds} rounds,"
                " medians; peak RSS is the crawl's process alone (the browser runs in processes of its own).",
                "",
                "| crawl | wall s | s a page | peak RSS MB (crawl process) |",
                "|---|---|---|---|",
            ]
            for name in walls:
                wall = statistics.median(walls[name])
                rows.append(f"| {name} | {wall:.2f} | {wall / PAGES:.3f} | {statistics.median(rss[name]):.0f} |")
            extra = [(r - p) / PAGES for r, p in zip(walls["--render"], walls["plain"], strict=True)]
            cost = statistics.median(extra) * 1000
            rows += ["", f"`--render` costs {cost:.0f} ms more a page (median of the rounds).", ""]
            rows += [*long_crawl(proxy, out), ""]
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return rows


if __name__ == "__main__":
    print("\n".join(long_only() if os.environ.get("BENCH_RENDER_ONLY_LONG") else run()))
