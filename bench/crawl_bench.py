"""Crawl benchmark: tse-scrapy (now and before issue 15) against wget on the
mirrored wikipedia site at depth 2, through a proxy on 127.0.0.1, side by side
in one run; the same against wget on the Python 3.11 documentation; `tse crawl`
start-up to its first request; then one crawl of toscrape depth 1 at the default
1-second politeness.  Run by bench/run.py.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BIN, MEMORY_OUT, REPEAT, ROOT, WORK, env_with_proxy, measure, site_server
from bench.index_bench import PREVIOUS_COMMIT, previous_code, tse_from
from tse_scrapy.devtools.siteserver import SiteServer

HOST = "http://cs50tse.cs.dartmouth.edu"
# wget's time alone varies by a third from round to round here: more rounds than the others.
FAST_ROUNDS = max(REPEAT, 7)
WIKIPEDIA = f"{HOST}/tse/wikipedia/index.html"


def files_under(output: Path) -> int:
    return sum(1 for p in output.rglob("*") if p.is_file() and p.name != ".crawler")


def contenders(proxy: str, out: Path, urls: Path) -> dict[str, tuple[list[str], Path | None]]:
    fast = ["-s", "DOWNLOAD_DELAY=0", "-s", "LOG_LEVEL=WARNING"]
    before = previous_code()
    bfs = ["--order", "bfs", "-s", "CONCURRENT_REQUESTS=8"]
    no_state = ["-s", "TSE_STATE_ENABLED=False"]
    floor = [sys.executable, str(ROOT / "bench" / "scrapy_floor.py"), str(urls)]
    return {
        # Scrapy's own cost: the requests of ``tse crawl`` from a list, nothing of ours (no files written).
        "Scrapy alone, 1 request at a time": ([*floor, "1"], None),
        "Scrapy alone, 8 at a time": ([*floor, "8"], None),
        "Scrapy bare, 1 request at a time": ([*floor, "1", "bare"], None),
        "Scrapy bare, 8 at a time": ([*floor, "8", "bare"], None),
        "Scrapy with tse's components, 1 request at a time": ([*floor, "1", "tse-components"], None),
        "Scrapy with tse's components, 8 at a time": ([*floor, "8", "tse-components"], None),
        f"before ({PREVIOUS_COMMIT[:7]}) `order=tse`": (
            tse_from(before, "crawl", WIKIPEDIA, out / "before-tse", "2", *fast),
            out / "before-tse",
        ),
        f"before ({PREVIOUS_COMMIT[:7]}) `order=bfs`, `CONCURRENT_REQUESTS=8`": (
            tse_from(before, "crawl", WIKIPEDIA, out / "before-bfs", "2", *bfs, *fast),
            out / "before-bfs",
        ),
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
        # What the durable crawl state (kill -9 at any instant, --resume) costs.
        "tse-scrapy `order=bfs`, `CONCURRENT_REQUESTS=8`, no crawl state (`TSE_STATE_ENABLED=False`)": (
            [str(BIN / "tse"), "crawl", WIKIPEDIA, str(out / "bfs-no-state"), "2", *bfs, *fast, *no_state],
            out / "bfs-no-state",
        ),
        WGET: (wget_command(proxy, out / "wget", WIKIPEDIA), out / "wget"),
    }


def fetched_urls(proxy: str, work: Path) -> Path:
    """The URLs ``tse crawl`` fetches (robots.txt, the pages saved, the pages that failed), in a file."""
    pages = work / "pages"
    pages.mkdir(parents=True)
    log = subprocess.run(
        [str(BIN / "tse"), "crawl", WIKIPEDIA, str(pages), "2", "-s", "DOWNLOAD_DELAY=0", "-s", "LOG_LEVEL=WARNING"],
        env=env_with_proxy(proxy),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    urls = [f"{HOST}/robots.txt"]
    urls += [line.split(": ", 1)[1] for line in log.splitlines() if "Fetched: " in line or "Failed: " in line]
    listed = work / "urls.txt"
    listed.write_text("\n".join(urls) + "\n")
    return listed


def digest(path: Path) -> str:
    with open(path, "rb") as file:
        return hashlib.file_digest(file, "sha256").hexdigest()


def same_directories(now: Path, before: Path, *, same_ids: bool) -> None:
    """Raise unless the page directories *now* and *before* hold the same files byte for byte
    (*same_ids*), or the same pages under any docIDs (concurrent saves come in any order)."""

    def files(directory: Path) -> list[tuple[str, str]]:
        # Digests, not the bodies: this process stays small, and a child's peak RSS counts it at fork.
        found = [(p.name if same_ids or not p.name.isdigit() else "", digest(p)) for p in directory.iterdir()]
        return sorted(found)

    if files(now) != files(before):
        raise RuntimeError(f"{now} and {before} differ")


def fast_crawls(mirror: Path) -> list[str]:
    def checked(out: Path) -> None:
        for version in ("tse", "bfs"):
            same_directories(out / version, out / f"before-{version}", same_ids=version == "tse")
        same_directories(out / "bfs-no-state", out / "bfs", same_ids=False)

    def contenders_of(proxy: str, out: Path, work: Path) -> dict[str, tuple[list[str], Path | None]]:
        if not (work / "urls" / "urls.txt").exists():
            fetched_urls(proxy, work / "urls")
        return contenders(proxy, out, work / "urls" / "urls.txt")

    return ratio_rows(side_by_side(mirror, contenders_of, checked), WGET)


WGET = "`wget -r -l 2 --no-parent`"
PYTHON_DOCS = "http://docs.python.org/3.11/index.html"
PYTHON_DOCS_PREFIX = "http://docs.python.org/3.11/"
PYTHON_DOCS_WGET = "`wget -r -l 2 --no-parent -A html`"


def python_docs_mirror() -> Path:
    """A mirror holding the Python 3.11 documentation of Debian's python3.11-doc at
    ``http://docs.python.org/3.11/`` (copied: the site server serves no symbolic link)."""
    mirror = WORK / "python-docs-mirror"
    site = mirror / "docs.python.org" / "3.11"
    if not (site / "index.html").is_file():
        subprocess.run([str(ROOT / "bench" / "install-docs.sh"), "python3.11-doc"], check=True)
        shutil.rmtree(site, ignore_errors=True)
        site.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree("/usr/share/doc/python3.11-doc/html", site, symlinks=False)
    return mirror


def python_docs_contenders(proxy: str, out: Path) -> dict[str, tuple[list[str], Path | None]]:
    fast = ["--prefix", PYTHON_DOCS_PREFIX, "-s", "DOWNLOAD_DELAY=0", "-s", "LOG_LEVEL=WARNING"]
    tse = [str(BIN / "tse"), "crawl", PYTHON_DOCS]
    return {
        "tse-scrapy `order=tse`": ([*tse, str(out / "tse"), "2", *fast], out / "tse"),
        "tse-scrapy `order=bfs`, `CONCURRENT_REQUESTS=8`": (
            [*tse, str(out / "bfs"), "2", "--order", "bfs", "-s", "CONCURRENT_REQUESTS=8", *fast],
            out / "bfs",
        ),
        # Only the HTML pages, as the TSE rule takes: not the documentation's images, styles and sources.
        PYTHON_DOCS_WGET: (wget_command(proxy, out / "wget", PYTHON_DOCS, "-A", "html"), out / "wget"),
    }


def python_docs_crawls() -> list[str]:
    def checked(out: Path) -> None:
        same_directories(out / "bfs", out / "tse", same_ids=False)

    results = side_by_side(python_docs_mirror(), lambda proxy, out, _: python_docs_contenders(proxy, out), checked)
    return ratio_rows(results, PYTHON_DOCS_WGET)


def wget_command(proxy: str, output: Path, url: str, *options: str) -> list[str]:
    return [
        "wget",
        "-r",
        "-l",
        "2",
        "--no-parent",
        *options,
        "-q",
        "-P",
        str(output),
        "-e",
        "use_proxy=yes",
        "-e",
        f"http_proxy={proxy}",
        url,
    ]


Contenders = Callable[[str, Path, Path], dict[str, tuple[list[str], "Path | None"]]]


def side_by_side(
    mirror: Path, contenders_of: Contenders, checked: Callable[[Path], None]
) -> dict[str, list[tuple[float, float, int | None]]]:
    """FAST_ROUNDS rounds of the crawls *contenders_of* (proxy, round directory, work directory)
    gives, through the site server of *mirror*, each round starting with the next one; *checked*
    compares a round's page directories.  Wall seconds, peak RSS MB and files of each run."""
    results: dict[str, list[tuple[float, float, int | None]]] = {}
    work = MEMORY_OUT / f"tse-crawl-bench-{os.getpid()}"  # pages in memory (common.py)
    try:
        with site_server(mirror) as proxy:
            shutil.rmtree(work, ignore_errors=True)
            for round_ in range(FAST_ROUNDS):
                # A directory of its own for each round, removed at the end.
                out = work / f"round-{round_}"
                # Each round starts with the next contender.
                runs = list(contenders_of(proxy, out, work).items())
                start = round_ % len(runs)
                for name, (command, output) in runs[start:] + runs[:start]:
                    if output is not None:
                        output.mkdir(parents=True)
                    wall, rss = measure(command, env_with_proxy(proxy), ok=(0, 8) if command[0] == "wget" else (0,))
                    pages = files_under(output) if output is not None else None
                    results.setdefault(name, []).append((wall, rss, pages))
                checked(out)
                shutil.rmtree(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return results


def ratio_rows(results: dict[str, list[tuple[float, float, int | None]]], baseline: str) -> list[str]:
    """A table row for each contender: medians, and its time against *baseline*'s in the same rounds."""
    wget_runs = [w for w, _, _ in results[baseline]]
    wget = statistics.median(wget_runs)
    rows = [
        "| crawler | pages | wall s (median) | pages/s | peak RSS MB | time vs wget | per round vs wget (range) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, runs in results.items():
        wall = statistics.median(w for w, _, _ in runs)
        rss = statistics.median(r for _, r, _ in runs)
        pages = runs[0][2]
        ratios = [w / base for (w, _, _), base in zip(runs, wget_runs, strict=True)]
        spread = f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"
        pages_per_s = f"{pages / wall:.0f}" if pages is not None else "-"
        row = [name, str(pages or "-"), f"{wall:.2f}", pages_per_s, f"{rss:.0f}", f"{wall / wget:.2f}x", spread]
        rows.append("| " + " | ".join(row) + " |")
    return rows


def first_request_after(command: list[str]) -> float:
    """Seconds from starting *command* (a crawl through a proxy on a socket of
    ours) to its first request reaching that socket."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(60)
        env = env_with_proxy(f"http://127.0.0.1:{listener.getsockname()[1]}")
        start = time.perf_counter()
        crawl = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            connection, _ = listener.accept()
            connection.recv(1)
            elapsed = time.perf_counter() - start
            connection.close()
        finally:
            crawl.kill()
            crawl.wait()
    return elapsed


def start_up() -> list[str]:
    rounds = max(REPEAT, 7)
    out = WORK / "startup"
    versions = {f"before ({PREVIOUS_COMMIT[:7]})": previous_code(), "now": ROOT}
    times: dict[str, list[float]] = {name: [] for name in versions}
    for _ in range(rounds):
        for name, code in versions.items():
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir(parents=True)
            times[name].append(first_request_after(tse_from(code, "crawl", WIKIPEDIA, out, "1", "--no-progress")))
    rows = ["| version | start-up to first request s (median) | min | max |", "|---|---|---|---|"]
    for name, runs in times.items():
        rows.append(f"| {name} | {statistics.median(runs):.3f} | {min(runs):.3f} | {max(runs):.3f} |")
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
        f"`-s DOWNLOAD_DELAY=0`; {FAST_ROUNDS} rounds, the contenders side by side in each round, each round"
        " starting with the next one and writing into new directories, in memory (tmpfs, `/dev/shm`): on"
        " this machine's ext4, creating a file takes 0.06 to 0.9 ms depending on where the directory lands,"
        " which moved wget alone from 1.3 to 2.5 s between runs.  Medians, and the median and range of the"
        " ratios to wget's time in the same round.",
        "The proxy is `tse_scrapy/devtools/siteserver.py` (Python) in its own process, the same for all.",
        "",
        *fast_crawls(mirror),
        "",
        "Before is the code before issue 15, run from a git worktree.  In every round its page",
        "directories are checked against now's: byte for byte for `order=tse`; for the concurrent",
        "`order=bfs` crawl, the same page files under any docIDs (saves come in any order).",
        "No crawl state is `-s TSE_STATE_ENABLED=False`: no SQLite state, so no `--resume` and no",
        "safety against a kill; its page files are checked against the bfs crawl's the same way.",
        "Scrapy alone is `bench/scrapy_floor.py`: Scrapy with its default components fetching the",
        "URLs `tse crawl` requests (robots.txt, the pages saved and those that failed) from a list and",
        "throwing the answers away: no link extraction, no page files, no robots.txt rules, no crawl",
        "state, no progress log.  Scrapy bare is the same with nothing but Scrapy's engine, default",
        "scheduler, downloader and core stats, and a proxy middleware (tse-scrapy's cached one): no",
        "spider middleware, no other extension.  That is the floor of a crawler on Scrapy; Scrapy alone is not, since",
        "some default components cost much (Scrapy's proxy middleware scans the environment on every",
        "request, MetaRefreshMiddleware decodes every body) and a crawler may replace or drop them.",
        "Scrapy with tse's components runs the Scrapy components a `tse crawl` runs, set as its",
        "settings set them (robots.txt obeyed, redirects, retries, timeouts, compression, the",
        "downloader stats and HttpError), with tse-scrapy's drop-in replacements for Scrapy's",
        "proxy middleware, stats collector and log formatter, and one item a page through Scrapy's item",
        "path: `tse crawl` minus that row is what the rest of tse-scrapy costs (its scheduler,",
        "dupefilter, offsite and robots rules, links, pipeline, crawl state and progress log).",
        "",
        "## Fast crawl: the Python 3.11 documentation, depth 2, through a proxy on 127.0.0.1",
        "",
        f"Debian's python3.11-doc served at `{PYTHON_DOCS_PREFIX}` by the same proxy, `--prefix` that folder,"
        f" `-s DOWNLOAD_DELAY=0`; {FAST_ROUNDS} rounds as above.  wget takes the HTML pages only (`-A html`), as"
        " the TSE rule does; it still fetches robots.txt.  Pages of about 100 KB with about 200 links each:"
        " link scanning weighs more here than on the wikipedia mirror.",
        "",
        *python_docs_crawls(),
        "",
        "## `tse crawl` start-up: from exec to its first request",
        "",
        f"{max(REPEAT, 7)} rounds, before and now alternating; the first request (robots.txt) is",
        "timed where it reaches a listening socket on 127.0.0.1 (the crawl's proxy).",
        "",
        *start_up(),
        "",
        "## Polite crawl: toscrape, depth 1, default settings (1 s between requests)",
        "",
        *polite_crawl(mirror),
        "",
        "Gaps are measured on the server's request log, robots.txt included.",
        "",
    ]
