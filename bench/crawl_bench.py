"""Crawl benchmark (`make bench`): tse-scrapy against wget on the mirrored
wikipedia site at depth 2, through a proxy on 127.0.0.1, side by side in one
run; then one crawl of toscrape depth 1 at the default 1-second politeness.

Writes bench/RESULTS.md.  Needs ../shared/tse-sites/mirror.tar.xz.
"""

from __future__ import annotations

import os
import platform
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.siteserver import SiteServer  # noqa: E402

ARCHIVE = ROOT.parent / "shared" / "tse-sites" / "mirror.tar.xz"
WORK = ROOT / "bench" / "work"
BIN = Path(sys.executable).parent
HOST = "http://cs50tse.cs.dartmouth.edu"
WIKIPEDIA = f"{HOST}/tse/wikipedia/index.html"
REPEAT = int(os.environ.get("BENCH_REPEAT", "3"))


def unpack() -> Path:
    mirror = WORK / "mirror"
    if not (mirror / "cs50tse.cs.dartmouth.edu").is_dir():
        mirror.mkdir(parents=True, exist_ok=True)
        with tarfile.open(ARCHIVE) as tar:
            tar.extractall(mirror, filter="data")
    return mirror


def env_with_proxy(proxy: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "no_proxy")}
    env["http_proxy"] = proxy
    return env


def measure(command: list[str], env: dict, output: Path) -> tuple[float, float, int]:
    """Wall seconds, peak RSS in MB, and files written under *output*.

    wget exits 8 when some links answer 404 (31 are dead on this site)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in ((0, 8) if command[0] == "wget" else (0,)):
        raise SystemExit(f"failed: {' '.join(command)}")
    files = sum(1 for p in output.rglob("*") if p.is_file() and p.name != ".crawler")
    return wall, usage.ru_maxrss / 1024, files


def contenders(proxy: str, out: Path) -> dict[str, tuple[list[str], Path]]:
    fast = ["-s", "DOWNLOAD_DELAY=0", "-s", "LOG_LEVEL=WARNING"]
    return {
        "tse-scrapy `order=tse`": ([str(BIN / "tse"), "crawl", WIKIPEDIA, str(out / "tse"), "2", *fast], out / "tse"),
        "tse-scrapy `order=bfs`, `CONCURRENT_REQUESTS=8`": (
            [str(BIN / "tse"), "crawl", WIKIPEDIA, str(out / "bfs"), "2", "--order", "bfs",
             "-s", "CONCURRENT_REQUESTS=8", *fast], out / "bfs"),
        "`wget -r -l 2 --no-parent`": (
            ["wget", "-r", "-l", "2", "--no-parent", "-q", "-P", str(out / "wget"),
             "-e", "use_proxy=yes", "-e", f"http_proxy={proxy}", WIKIPEDIA], out / "wget"),
    }


def fast_crawls(mirror: Path) -> list[str]:
    server = subprocess.Popen([sys.executable, "-m", "tests.support.siteserver", str(mirror)],
                              cwd=ROOT, stdout=subprocess.PIPE, text=True)
    proxy = server.stdout.readline().split()[-1]
    results: dict[str, list[tuple[float, float, int]]] = {}
    try:
        for _ in range(REPEAT):
            out = WORK / "out"
            shutil.rmtree(out, ignore_errors=True)
            for name, (command, output) in contenders(proxy, out).items():
                output.mkdir(parents=True)
                results.setdefault(name, []).append(measure(command, env_with_proxy(proxy), output))
    finally:
        server.terminate()
        server.wait()
    wget = statistics.median(w for w, _, _ in results["`wget -r -l 2 --no-parent`"])
    rows = ["| crawler | pages | wall s (median) | pages/s | peak RSS MB | time vs wget |",
            "|---|---|---|---|---|---|"]
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
        subprocess.run([str(BIN / "tse"), "crawl", f"{HOST}/tse/toscrape/index.html", str(out), "1",
                        "-s", "LOG_LEVEL=WARNING"], env=env_with_proxy(server.url),
                       stdout=subprocess.DEVNULL, check=True)
        wall = time.perf_counter() - start
        times = [hit.time for hit in server.hits]
    gaps = [b - a for a, b in zip(times, times[1:])]
    pages = sum(1 for p in out.iterdir() if p.name.isdigit())
    return [f"| pages | requests (robots.txt included) | wall s | bound N x 1 s + 2 s | smallest gap s |",
            "|---|---|---|---|---|",
            f"| {pages} | {len(times)} | {wall:.1f} | {pages + 2} | {min(gaps):.3f} |"]


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    import scrapy
    return (f"{platform.system()} {platform.release()} {platform.machine()}, {os.cpu_count()} cores ({cpu}), "
            f"Python {platform.python_version()}, Scrapy {scrapy.__version__}")


def main() -> int:
    if not ARCHIVE.is_file():
        print(f"bench: {ARCHIVE} not found; the benchmark needs the reference mirror", file=sys.stderr)
        return 1
    mirror = unpack()
    fast = fast_crawls(mirror)
    polite = polite_crawl(mirror)
    report = "\n".join([
        "# Benchmark results", "",
        f"Produced by `make bench` (`bench/crawl_bench.py`) on {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC.",
        f"Machine: {machine()}.", "",
        f"## Fast crawl: mirrored wikipedia, depth 2, through a proxy on 127.0.0.1",
        "",
        f"`-s DOWNLOAD_DELAY=0`; {REPEAT} rounds, the contenders side by side in each round; medians.",
        "The proxy is `tests/support/siteserver.py` (Python) in its own process, the same for all.",
        "", *fast, "",
        "## Polite crawl: toscrape, depth 1, default settings (1 s between requests)",
        "", *polite, "",
        "Gaps are measured on the server's request log, robots.txt included.", ""])
    (ROOT / "bench" / "RESULTS.md").write_text(report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
