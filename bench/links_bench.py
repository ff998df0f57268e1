"""Cost per link found: `tse crawl` at depth 2 of a generated site whose pages carry
hundreds of links each, against a control site of the same pages without their links.

The current code ("now") and the previous commit ("before", the git worktree that
bench/index_bench.py makes) run side by side in every round; the two must write
byte-identical page directories.  Run alone: ``python bench/links_bench.py``.
"""

from __future__ import annotations

import filecmp
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REPEAT, ROOT, WORK, env_with_proxy
from bench.index_bench import PREVIOUS_COMMIT, previous_code, tse_from
from tse_scrapy.devtools.siteserver import SiteServer

PAGES = 40  # P: pages of each site, all linked from its index
LINKS = 500  # L: <a href> on each page of the links site
HOST = "cs50tse.cs.dartmouth.edu"
SITE = WORK / "links_site"  # the proxy's directory: SITE/HOST/tse/{links,nolinks}/...
OUT = WORK / "links_out"
DEPTH = 2  # index at 0, pages at 1 (scanned), their links at 2 (all duplicates or ignored)

# One link in 20 of each kind, in this order, cycled over a page: like a documentation
# page, mostly links to other pages of the site (IgnDupl), some to other hosts (IgnExtrn,
# never fetched), some to files that are not pages (IgnExtrn) and some in-page fragments
# (not found at all: the html extractor skips ``#...``).
KINDS = ("internal",) * 14 + ("external",) * 3 + ("file",) * 2 + ("fragment",)
WORDS = ("the", "crawler", "saves", "each", "page", "and", "scans", "it", "for", "links", "to", "pages", "not", "seen")


def _href(kind: str, rng: random.Random, k: int) -> str:
    """One link of *kind*, in the forms documentation pages use."""
    if kind == "internal":
        page = rng.randint(1, PAGES)
        return rng.choice(
            (
                f"{page}.html",
                f"./{page}.html",
                f"{page}.html#section-{k % 7}",
                f"../links/{page}.html",
                f"http://{HOST}/tse/links/{page}.html",
                "index.html",
            )
        )
    if kind == "external":
        return rng.choice(
            (
                f"https://docs.python.org/3/library/module{k}.html",
                f"https://github.com/example/project/blob/main/src/file{k}.py",
                f"http://www.example.org/reference/{k}.html#top",
            )
        )
    if kind == "file":
        return rng.choice((f"_sources/{k}.rst.txt", f"_images/figure{k}.png", f"downloads/manual{k}.pdf"))
    return f"#section-{k % 7}"


def _page(number: int, links: bool) -> tuple[str, int]:
    """Page *number* (with its links, or their text alone) and how many links the crawler finds on it."""
    rng = random.Random(number)  # the same links every time the site is made
    items, found = [], 0
    for k in range(LINKS):
        kind = KINDS[k % len(KINDS)]
        text = " ".join(rng.choice(WORDS) for _ in range(6))
        if links:
            found += kind != "fragment"
            items.append(f'<li><a href="{_href(kind, rng, k)}">{text}</a> {text}</li>')
        else:
            items.append(f"<li>{text} {text}</li>")  # the same words, no anchor
    body = "\n".join(items)
    html = (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Page {number}</title></head>\n'
        f"<body><h1>Page {number}</h1>\n<ul>\n{body}\n</ul>\n</body></html>\n"
    )
    return html, found


def make_sites() -> dict[str, int]:
    """The links and control sites under SITE (made again unless a stamp names these parameters),
    and the links the crawler will find on each: exactly the ``Found`` lines of its log."""
    stamp = SITE / f".complete-{PAGES}x{LINKS}-v2"
    fresh = not stamp.is_file()
    if fresh:
        shutil.rmtree(SITE, ignore_errors=True)
    found = {}
    for name, links in (("links", True), ("nolinks", False)):
        directory = SITE / HOST / "tse" / name
        directory.mkdir(parents=True, exist_ok=True)
        index = "".join(f'<li><a href="{n}.html">Page {n}</a></li>\n' for n in range(1, PAGES + 1))
        if fresh:
            (directory / "index.html").write_text(f"<!DOCTYPE html>\n<html><body><ul>\n{index}</ul></body></html>\n")
        found[name] = PAGES  # the index's links
        for number in range(1, PAGES + 1):
            html, count = _page(number, links)
            found[name] += count
            if fresh:
                (directory / f"{number}.html").write_text(html)
    stamp.write_bytes(b"")
    return found


def timed(command: list[str], env: dict, log: Path) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run; its stdout (the progress log) to *log*.

    Like bench.common.measure, which has no CPU time, and index_bench.measure_cpu, which takes no env."""
    start = time.perf_counter()
    with log.open("wb") as out, log.with_suffix(".err").open("wb") as err:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"bench: failed: {' '.join(command)}\n{log.with_suffix('.err').read_text()}")
    return wall, usage.ru_utime + usage.ru_stime


def verdicts(log: Path) -> Counter:
    """The progress words of a crawl's log (``Found``, ``IgnDupl``, ``Fetched``...), counted."""
    return Counter(line.split(":", 1)[0].split()[-1] for line in log.read_text().splitlines())


def differing_files(one: Path, other: Path) -> list[str]:
    """The files (by relative path, dot files included) that differ or exist on one side only."""
    files = {p.relative_to(one) for p in one.rglob("*") if p.is_file()}
    files |= {p.relative_to(other) for p in other.rglob("*") if p.is_file()}
    return sorted(
        str(name)
        for name in files
        if not ((one / name).is_file() and (other / name).is_file() and filecmp.cmp(one / name, other / name, False))
    )


def run() -> list[str]:
    """The section's markdown lines: REPEAT rounds of the four crawls (before/now x links/control)."""
    found = make_sites()
    code = {"before": previous_code(), "now": ROOT}
    # Both through the same launcher (tse_from: that code's tse_scrapy first on sys.path), so
    # only the code differs.  --no-progress: both versions accept it; stderr is a file anyway.
    fast = ["-s", "DOWNLOAD_DELAY=0", "-s", "LOG_LEVEL=WARNING", "--no-progress"]
    runs: dict[tuple[str, str], list[tuple[float, float]]] = {(v, s): [] for v in code for s in found}
    logs: dict[tuple[str, str], Counter] = {}
    with SiteServer(SITE) as server:
        env = env_with_proxy(server.url)
        # One crawl each, untimed: compiles the worktree's bytecode and fills the page cache.
        for version in code:
            warm = OUT / "warm-up" / version
            shutil.rmtree(warm, ignore_errors=True)
            warm.mkdir(parents=True)
            seed = f"http://{HOST}/tse/links/index.html"
            timed(tse_from(code[version], "crawl", seed, warm, DEPTH, *fast), env, OUT / f"warm-up-{version}.log")
        for round_ in range(REPEAT):
            # Alternate who goes first, so that neither always runs on a warmer machine.
            for version in list(code)[:: 1 if round_ % 2 == 0 else -1]:
                for site in found:
                    pagedir = OUT / version / site
                    shutil.rmtree(pagedir, ignore_errors=True)
                    pagedir.mkdir(parents=True)
                    seed = f"http://{HOST}/tse/{site}/index.html"
                    command = tse_from(code[version], "crawl", seed, pagedir, DEPTH, *fast)
                    runs[version, site].append(timed(command, env, OUT / f"{version}-{site}.log"))
                    logs[version, site] = verdicts(OUT / f"{version}-{site}.log")
                    if logs[version, site]["Found"] != found[site]:
                        raise SystemExit(
                            f"bench: {version} found {logs[version, site]['Found']} links on {site}, not {found[site]}"
                        )
            for site in found:
                differ = differing_files(OUT / "before" / site, OUT / "now" / site)
                if differ:
                    raise SystemExit(f"bench: before and now wrote different pages for {site}: {', '.join(differ)}")
        # Nothing but the two sites' host was asked for: external links are dropped unfetched.
        hosts = {hit.key.split("/", 1)[0] for hit in server.hits}
    if hosts != {HOST}:
        raise SystemExit(f"bench: requests reached {sorted(hosts)}")

    compared = sum(1 for site in found for p in (OUT / "now" / site).rglob("*") if p.is_file())
    extra = found["links"] - found["nolinks"]
    rows = [
        f"## Cost per link: generated site, {PAGES} pages x {LINKS} links",
        "",
        f"`tse crawl` depth {DEPTH} from an index linking {PAGES} pages, each with {LINKS} `<a href>`: "
        f"{KINDS.count('internal')} in 20 to pages of the site, {KINDS.count('external')} to other hosts, "
        f"{KINDS.count('file')} to files that are not pages, {KINDS.count('fragment')} in-page `#` fragments "
        "(not links found). The control site has the same pages with the same words and no anchors. "
        f"Generated by bench/links_bench.py in bench/work/links_site; served by the site server in the "
        f"bench's process. {REPEAT} rounds, before ({PREVIOUS_COMMIT[:7]}, git worktree) and now side by "
        "side, both sites each; medians. Per link: (links site - control) / extra links found, paired "
        "within each round, median over rounds. CPU is user + system of the crawl process.",
        "",
        "| version | pages | links found | wall s | CPU s | µs CPU per link (vs control) | µs wall per link |",
        "|---|---|---|---|---|---|---|",
    ]
    for version in code:
        for site in found:
            measured = runs[version, site]
            wall = statistics.median(w for w, _ in measured)
            cpu = statistics.median(c for _, c in measured)
            if site == "links":
                control = runs[version, "nolinks"]
                per_cpu = statistics.median(
                    (c - k) / extra * 1e6 for (_, c), (_, k) in zip(measured, control, strict=True)
                )
                per_wall = statistics.median(
                    (w - k) / extra * 1e6 for (w, _), (k, _) in zip(measured, control, strict=True)
                )
                label, cost = version, f"{per_cpu:.1f} | {per_wall:.1f}"
            else:
                label, cost = f"{version}, control", "— | —"
            pages = logs[version, site]["Fetched"]
            rows.append(f"| {label} | {pages} | {found[site]:,} | {wall:.2f} | {cpu:.2f} | {cost} |")
    words = logs["now", "links"]
    rows += [
        "",
        "Verdicts on the links site (now): "
        + ", ".join(f"{word} {words[word]:,}" for word in ("Found", "IgnDupl", "IgnExtrn") if words[word])
        + f". Page directories of before and now: byte-identical in every round ({compared} files, `.crawler` "
        "included, both sites).",
        "",
    ]
    return rows


if __name__ == "__main__":
    start = time.perf_counter()
    print("\n".join(run()))
    print(f"({time.perf_counter() - start:.0f} s)", file=sys.stderr)
