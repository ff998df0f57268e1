"""How well each order finds important pages early: on the mirrored wikipedia
site at depth 2, with --max-pages 100, how many of the 100 pages with the most
in-links (in the full crawl) each order saves.  Run by bench/run.py."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BIN, WORK, env_with_proxy
from tests.support.pages import page_count
from tse_scrapy.devtools.siteserver import SiteServer
from tse_scrapy.rules.files import pagedir
from tse_scrapy.rules.web.links import extract_links_html
from tse_scrapy.rules.web.urls import is_internal, normalize_url

SEED = "http://cs50tse.cs.dartmouth.edu/tse/wikipedia/index.html"
LIMIT = 100


def crawl(server, out: Path, *options) -> list[str]:
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    subprocess.run(
        [str(BIN / "tse"), "crawl", SEED, str(out), "2", "-s", "DOWNLOAD_DELAY=0", "-s", "LOG_LEVEL=WARNING", *options],
        env=env_with_proxy(server.url),
        stdout=subprocess.DEVNULL,
        check=True,
    )
    return [pagedir.read_page(out, i).url for i in range(1, page_count(out) + 1)]


def inlink_counts(directory: Path) -> dict[str, int]:
    """For each crawled page, how many other crawled pages link to it."""
    crawled = {}
    for doc_id in range(1, page_count(directory) + 1):
        page = pagedir.read_page(directory, doc_id)
        crawled[page.url] = {
            u for u in map(normalize_url, extract_links_html(page.body, page.url)) if is_internal(u) and u != page.url
        }
    counts = dict.fromkeys(crawled, 0)
    for targets in crawled.values():
        for url in targets & counts.keys():
            counts[url] += 1
    return counts


def run(mirror: Path) -> list[str]:
    with SiteServer(mirror) as server:
        full = WORK / "frontier" / "full"
        crawl(server, full, "--order", "bfs")
        counts = inlink_counts(full)
        ranked = sorted(counts, key=lambda url: (-counts[url], url))
        top = set(ranked[:LIMIT])
        threshold = counts[ranked[LIMIT - 1]]
        rows = [
            f"| order | pages saved | of the top {LIMIT} by in-links | median in-links of its pages |",
            "|---|---|---|---|",
        ]
        for order in ("tse", "bfs", "priority"):
            pages = crawl(server, WORK / "frontier" / order, "--order", order, "--max-pages", str(LIMIT))
            inlinks = sorted(counts.get(url, 0) for url in pages)
            rows.append(f"| `{order}` | {len(pages)} | {len(top & set(pages))} | {inlinks[len(inlinks) // 2]} |")
    return [
        "## Which pages a 100-page crawl captures (wikipedia, depth 2)",
        "",
        f"Full crawl: {len(counts)} pages; the 100th most linked-to page has {threshold} in-links",
        "(distinct crawled pages linking to it, `links=html`).",
        "",
        *rows,
        "",
    ]
