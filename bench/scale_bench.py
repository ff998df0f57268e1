"""Scale benchmark: a generated site of 100,000 pages on 8 virtual hosts,
crawled breadth-first with no delay by one process (frontier in the crawl
state on disk), then by 1, 2 and 4 distributed workers sharing a real Redis.
Run by bench/run.py, or alone: ``python bench/scale_bench.py [PAGES]``.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BIN, ROOT, WORK, env_with_proxy
from tests.support.redisserver import RedisServer

PAGES = int(os.environ.get("BENCH_SCALE_PAGES", "100000"))
HOSTS = [f"h{i}.test" for i in range(8)]
FANOUT = 8
WORKERS = (1, 2, 4)
CONCURRENCY = 16


def page_url(i: int) -> str:
    return f"http://{HOSTS[i % len(HOSTS)]}/p{i}.html"


def generate(root: Path, pages: int) -> None:
    """Page i links to its FANOUT children (a tree of depth log8 N), two random
    pages and the first page: every page is within depth 6 of p0."""
    stamp = root / f".generated-{pages}"
    if stamp.is_file():
        return
    shutil.rmtree(root, ignore_errors=True)
    for host in HOSTS:
        (root / host).mkdir(parents=True)
    rng = random.Random(0)
    for i in range(pages):
        targets = [c for c in range(FANOUT * i + 1, FANOUT * i + FANOUT + 1) if c < pages]
        targets += [rng.randrange(pages), rng.randrange(pages), 0]
        anchors = "".join(f'<li><a href="{page_url(t)}">page {t}</a></li>\n' for t in targets)
        (root / HOSTS[i % len(HOSTS)] / f"p{i}.html").write_text(
            f"<html><head><title>Page {i}</title></head><body><h1>Page {i}</h1>\n"
            f"<p>Words for the index: page number {i} of the scale site.</p>\n<ul>\n{anchors}</ul></body></html>\n"
        )
    stamp.touch()


def crawl_command(out: Path, *extra: str) -> list[str]:
    return [
        str(BIN / "tse"),
        "crawl",
        page_url(0),
        str(out),
        "10",
        "--order",
        "bfs",
        "--prefix",
        ",".join(f"http://{host}/" for host in HOSTS),
        "-s",
        "DOWNLOAD_DELAY=0",
        "-s",
        f"CONCURRENT_REQUESTS={CONCURRENCY}",
        "-s",
        "LOG_LEVEL=WARNING",
        *extra,
    ]


def run_workers(commands: list[list[str]], env: dict) -> tuple[float, list[float]]:
    """Wall seconds until every command has exited, and each one's peak RSS in MB."""
    start = time.perf_counter()
    processes = [
        subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for command in commands
    ]
    rss = []
    for process in processes:
        _, status, usage = os.wait4(process.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"bench: a crawl failed: {' '.join(process.args)}")
        rss.append(usage.ru_maxrss / 1024)
    return time.perf_counter() - start, rss


def pages_in(out: Path) -> int:
    return sum(1 for name in os.listdir(out) if name.isdigit())


def run(pages: int = PAGES) -> list[str]:
    site, out = WORK / "scale" / "site", WORK / "scale" / "out"
    generate(site, pages)
    server = subprocess.Popen(
        [sys.executable, "-m", "tse_scrapy.devtools.siteserver", str(site)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    proxy = server.stdout.readline().split()[-1]
    env = env_with_proxy(proxy)
    rows = [
        "| crawl | pages | wall s | pages/s | vs one process | peak RSS MB (each process) | "
        "Redis peak B/URL | Redis after B/URL |",
        "|---|---|---|---|---|---|---|---|",
    ]
    try:
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        wall, rss = run_workers([crawl_command(out)], env)
        single = pages_in(out) / wall
        rows.append(
            f"| one process, `order=bfs` | {pages_in(out)} | {wall:.0f} | {single:.0f} | 1.00x | {rss[0]:.0f} | - | - |"
        )
        for workers in WORKERS:
            shutil.rmtree(out)
            out.mkdir()
            with RedisServer(WORK / "scale" / "redis") as redis_server:
                client = redis_server.client()
                baseline = client.info("memory")["used_memory"]
                commands = [crawl_command(out, "--redis", redis_server.url, "--keep") for _ in range(workers)]
                wall, rss = run_workers(commands, env)
                memory = client.info("memory")
                seen = sum(client.scard(key) for key in client.scan_iter(match="tse:*:seen"))
            speed = pages_in(out) / wall
            rows.append(
                f"| {workers} worker{'s' if workers > 1 else ''} + Redis | {pages_in(out)} | {wall:.0f} | "
                f"{speed:.0f} | {speed / single:.2f}x | {', '.join(f'{r:.0f}' for r in rss)} | "
                f"{(memory['used_memory_peak'] - baseline) / seen:.0f} | "
                f"{(memory['used_memory'] - baseline) / seen:.0f} |"
            )
    finally:
        server.terminate()
        server.wait()
    return [
        f"## Scale: a generated site of {pages:,} pages on {len(HOSTS)} virtual hosts, breadth-first",
        "",
        f"`DOWNLOAD_DELAY=0`, `CONCURRENT_REQUESTS={CONCURRENCY}` per process, through one proxy on "
        "127.0.0.1 (`tse_scrapy/devtools/siteserver.py`, one Python process). One run each (a round takes "
        "minutes); the crawls run one after the other on the same 2 cores as the proxy and Redis.",
        "Redis bytes per URL: memory used above the empty server's, divided by the URLs seen, at the "
        "peak (frontier full) and after the crawl (kept with `--keep`: seen set and docID records).",
        "",
        *rows,
        "",
    ]


if __name__ == "__main__":
    print("\n".join(run(int(sys.argv[1]) if len(sys.argv) > 1 else PAGES)))
