"""Crawl benchmark: tse-scrapy against wget on the mirrored wikipedia site at
depth 2, through a proxy on 127.0.0.1, side by side in one run; then one crawl
of toscrape depth 1 at the default 1-second politeness.  Run by bench/run.py.
"""

from __future__ import annotations

import itertools
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BIN, REPEAT, ROOT, WORK, env_with_proxy, measure
from tse_scrapy.devtools.siteserver import SiteServer

HOST = "http://cs50tse.cs.dartmouth.edu"
WIKIPEDIA = f"{HOST}/tse/wikipedia/index.html"


def files_under(output: Path) -> int:
    return sum(1 for p in output.rglob("*") if p.is_file() and p.name != ".crawler")


def contenders(proxy: str, out: Path) -> dict[str, tuple[list[str], Path]]:
    fast = ["-s", "DOWNLOAD_DELAY=0", "-s", "LOG_LEVEL=WARNING"]
    return {
        "tse-scrapy `order=tse`": ([str(BIN / "tse"), "crawl", WIKIPEDIA, str(out / "tse"), "2", *fast], out / "tse"),
        "tse-scrapy `order=bfs`, `CONCURRENT_REQUESTS=8`": (
            [
                str(BIN / "tse"),
                "crawl",
                WIKIPEDIA,
                str(out / "bfs"),
                "2",
                "--order",
                "bfs",
                "-s",
                "CONCURRENT_REQUESTS=8",
                *fast,
            ],
            out / "bfs",
        ),
        "`wget -r -l 2 --no-parent`": (
            [
                "wget",
                "-r",
                "-l",
                "2",
                "--no-parent",
                "-q",
                "-P",
                str(out / "wget"),
                "-e",
                "use_proxy=yes",
                "-e",
                f"http_proxy={proxy}",
                WIKIPEDIA,
            ],
            out / "wget",
        ),
    }


def fast_crawls(mirror: Path) -> list[str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "tse_scrapy.devtools.siteserver", str(mirror)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    proxy = server.stdout.readline().split()[-1]
    results: dict[str, list[tuple[float, float, int]]] = {}
    try:
        for _ in range(REPEAT):
            out = WORK / "out"
            shutil.rmtree(out, ignore_errors=True)
            for name, (command, output) in contenders(proxy, out).items():
                output.mkdir(parents=True)
                wall, rss = measure(command, env_with_proxy(proxy), ok=(0, 8) if command[0] == "wget" else (0,))
                results.setdefault(name, []).append((wall, rss, files_under(output)))
    finally:
        server.terminate()
        server.wait()
    wget = statistics.median(w for w, _, _ in results["`wget -r -l 2 --no-parent`"])
    rows = ["| crawler | pages | wall s (median) | pages/s | peak RSS MB | time vs wget |", "|---|---|---|---|---|---|"]
    for name, runs in results.items():
        wall = statistics.median(w for w, _, _ in runs)
        rss = statistics.median(r for _, r, _ in runs)
        pages = runs[0][2]
        rows.append(f"| {name} | {pages} | {wall:.2f} | {pages / wall:.0f} | {rss:.0f} | {wall / wget:.1f}x |")
    return rows


def polite_crawl(mirror: Path) -> list[str]:
    out = WORK / "polite"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    with SiteServer(mirror) as server:
        start = time.perf_counter()
        subprocess.run(
            [str(BIN / "tse"), "crawl", f"{HOST}/tse/toscrape/index.html", str(out), "1", "-s", "LOG_LEVEL=WARNING"],
            env=env_with_proxy(server.url),
            stdout=subprocess.DEVNULL,
            check=True,
        )
        wall = time.perf_counter() - start
        times = [hit.time for hit in server.hits]
    gaps = [b - a for a, b in itertools.pairwise(times)]
    pages = sum(1 for p in out.iterdir() if p.name.isdigit())
    return [
        "| pages | requests (robots.txt included) | wall s | bound N x 1 s + 2 s | smallest gap s |",
        "|---|---|---|---|---|",
        f"| {pages} | {len(times)} | {wall:.1f} | {pages + 2} | {min(gaps):.3f} |",
    ]


def run(mirror: Path) -> list[str]:
    return [
        "## Fast crawl: mirrored wikipedia, depth 2, through a proxy on 127.0.0.1",
        "",
        f"`-s DOWNLOAD_DELAY=0`; {REPEAT} rounds, the contenders side by side in each round; medians.",
        "The proxy is `tse_scrapy/devtools/siteserver.py` (Python) in its own process, the same for all.",
        "",
        *fast_crawls(mirror),
        "",
        "## Polite crawl: toscrape, depth 1, default settings (1 s between requests)",
        "",
        *polite_crawl(mirror),
        "",
        "Gaps are measured on the server's request log, robots.txt included.",
        "",
    ]
