"""``make run``: serve the demo site on 127.0.0.1, crawl it one page a second,
index the pages and answer two example queries.

    python -m tse_scrapy.devtools.demo PAGEDIR

PAGEDIR is created, or emptied when it holds an earlier demo crawl; any
other directory that is not empty is refused.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from ..exitcodes import USAGE
from ..resume.statedb import STATE_NAME
from ..rules.files.pagedir import MARKER, is_page_name, read_page, read_page_url
from .siteserver import SiteServer

SITE = Path(__file__).resolve().parent / "demo_site"
DEPTH = "3"
QUERIES = "crawler and polite\nindexer or querier\n"
_DEMO_URL = re.compile(r"http://127\.0\.0\.1:\d+/(.*)")


def is_demo_crawl(pagedir: Path) -> bool:
    """Whether *pagedir* holds only a crawl of the demo site (what this demo may remove)."""
    names = os.listdir(pagedir)
    for name in names:
        if is_page_name(name):
            try:
                found = _DEMO_URL.fullmatch(read_page_url(pagedir, int(name)))
            except OSError:
                return False
            if found is None or not (SITE / found.group(1)).exists():
                return False
        elif name not in (MARKER, STATE_NAME, STATE_NAME + "-wal", STATE_NAME + "-shm"):
            return False
    return MARKER in names


def main(argv: list[str]) -> int:
    pagedir = Path(argv[1] if len(argv) > 1 else "data/demo")
    if pagedir.exists() and not (pagedir.is_dir() and (not os.listdir(pagedir) or is_demo_crawl(pagedir))):
        sys.stderr.write(f"demo: {pagedir} is not an earlier demo crawl: give a new or empty directory\n")
        return USAGE
    shutil.rmtree(pagedir, ignore_errors=True)
    index = pagedir.with_name(pagedir.name + ".index")
    for stale in (index, *(index.with_name(index.name + suffix) for suffix in (".bin", ".docs"))):
        stale.unlink(missing_ok=True)  # the earlier demo's: make serve must not show it over this crawl
    pagedir.mkdir(parents=True)
    tse = str(Path(sys.executable).parent / "tse")
    with SiteServer(SITE) as server:
        seed = f"{server.url}/index.html"
        command = ["tse", "crawl", seed, str(pagedir), DEPTH, "--prefix", f"{server.url}/", "-s", "LOG_LEVEL=WARNING"]
        print(f"Serving the demo site ({SITE}) on {server.url}/ (loopback only)")
        print("$ " + " ".join(command), flush=True)
        status = subprocess.call([tse, *command[1:]])
    doc_ids = sorted(int(name) for name in os.listdir(pagedir) if is_page_name(name))
    print(f"\nThe crawl exited {status}; {len(doc_ids)} pages went to {pagedir}/ (1 to {len(doc_ids)}):")
    for doc_id in doc_ids:
        page = read_page(pagedir, doc_id)
        print(f"  {pagedir}/{doc_id:<3} depth {page.depth}  {page.url}")
    if status != 0:
        return status
    print(f"\n$ tse index {pagedir} {index}", flush=True)
    status = subprocess.call([tse, "index", str(pagedir), str(index)])
    print(f"$ printf {QUERIES!r} | tse query {pagedir} {index}", flush=True)
    return status or subprocess.run([tse, "query", str(pagedir), str(index)], input=QUERIES.encode()).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv))
