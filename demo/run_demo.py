"""`make run`: serve the demo site on 127.0.0.1, crawl it one page a second,
index the pages and answer two example queries.

    python demo/run_demo.py PAGEDIR
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tse_scrapy.siteserver import SiteServer  # noqa: E402

SITE = ROOT / "tse_scrapy" / "demo_site"
DEPTH = "3"
QUERIES = "crawler and polite\nindexer or querier\n"


def main(argv: list[str]) -> int:
    pagedir = Path(argv[1] if len(argv) > 1 else "data/demo")
    if pagedir.exists():
        shutil.rmtree(pagedir)
    pagedir.mkdir(parents=True)
    with SiteServer(SITE) as server:
        seed = f"{server.url}/index.html"
        command = ["tse", "crawl", seed, str(pagedir), DEPTH, "--prefix", f"{server.url}/",
                   "-s", "LOG_LEVEL=WARNING"]
        print(f"Serving {SITE.relative_to(ROOT)} on {server.url}/ (loopback only)")
        print("$ " + " ".join(command), flush=True)
        status = subprocess.call([str(Path(sys.executable).parent / "tse"), *command[1:]])
    pages = sorted((p for p in pagedir.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    print(f"\nThe crawl exited {status}; {len(pages)} pages went to {pagedir}/ (1 to {len(pages)}):")
    for page in pages:
        url, depth = page.read_bytes().split(b"\n", 2)[:2]
        print(f"  {pagedir}/{page.name:<3} depth {depth.decode()}  {url.decode()}")
    if status != 0:
        return status
    index = pagedir.with_name(pagedir.name + ".index")
    tse = str(Path(sys.executable).parent / "tse")
    print(f"\n$ tse index {pagedir} {index}", flush=True)
    status = subprocess.call([tse, "index", str(pagedir), str(index)])
    print(f"$ printf {QUERIES!r} | tse query {pagedir} {index}", flush=True)
    return status or subprocess.run([tse, "query", str(pagedir), str(index)], input=QUERIES.encode()).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv))
