"""Scale benchmark: a generated site of 100,000 pages on 8 virtual hosts,
crawled breadth-first with no delay by one process (frontier in the crawl
state on disk), then by 1 and 2 distributed workers sharing a real Redis
(and 4 with ``BENCH_SCALE_WORKERS=1,2,4``).

The crawls of a round run one after the other (every other round in the
reverse order); with ``BENCH_SCALE_ROUNDS`` > 1 each speed is a ratio to the
single process of its own round, and the table gives medians (other work on
the machine moves all crawls of a round alike).  Each worker logs its stats
to a file; ``tse/redis_round_trips`` (counted by the worker's Redis client,
``distributed/store.py``) over the pages saved is the Redis round trips per
page.  The CPU seconds of the crawl processes, of Redis and of the proxy
show how busy the machine's cores were: a worker's Redis work runs on the same cores.

Run by bench/run.py, or alone: ``python bench/scale_bench.py [PAGES]``
(or ``BENCH_SCALE_PAGES``).
"""

from __future__ import annotations

import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BIN, MEMORY_OUT, ROOT, WORK, env_with_proxy
from tests.support.redisserver import RedisServer

PAGES = int(os.environ.get("BENCH_SCALE_PAGES", "100000"))
HOSTS = [f"h{i}.test" for i in range(8)]
FANOUT = 8
WORKERS = tuple(int(n) for n in os.environ.get("BENCH_SCALE_WORKERS", "1,2").split(","))
ROUNDS = int(os.environ.get("BENCH_SCALE_ROUNDS", "1"))
CONCURRENCY = 16
CORES = len(os.sched_getaffinity(0))
ROUND_TRIPS = re.compile(r"'tse/redis_round_trips': (\d+)")


def page_url(i: int) -> str:
    return f"http://{HOSTS[i % len(HOSTS)]}/p{i}.html"


def generate(root: Path, pages: int) -> None:
    """Page i links to its FANOUT children (a tree of depth log8 N), two random
    pages and the first page: every page is within depth 6 of p0."""
    stamp = root / ".generated"
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


def cpu_seconds(pid: int) -> float:
    """User and system CPU seconds so far of the running process *pid*."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_workers(commands: list[list[str]], env: dict, proxy_pid: int) -> tuple[float, list[float], float, float]:
    """Wall seconds until every command has exited, each one's peak RSS in MB, their CPU
    seconds, and the proxy's CPU seconds meanwhile."""
    proxy_before = cpu_seconds(proxy_pid)
    start = time.perf_counter()
    processes = [
        subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for command in commands
    ]
    rss, cpu = [], 0.0
    for process in processes:
        _, status, usage = os.wait4(process.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"bench: a crawl failed: {' '.join(process.args)}")
        rss.append(usage.ru_maxrss / 1024)
        cpu += usage.ru_utime + usage.ru_stime
    return time.perf_counter() - start, rss, cpu, cpu_seconds(proxy_pid) - proxy_before


def pages_in(out: Path) -> int:
    return sum(1 for name in os.listdir(out) if name.isdigit())


def fresh(directory: Path) -> Path:
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    return directory


class Result:
    """One crawl of one round: pages, wall seconds, peak RSS per process, CPU seconds
    (the crawl processes, Redis, the proxy), Redis figures."""

    def __init__(self, pages: int, wall: float, rss: list[float], cpu: tuple[float, float, float], **redis_figures):
        self.pages, self.wall, self.rss, self.cpu = pages, wall, rss, cpu
        self.speed = pages / wall
        self.redis = redis_figures


def single_process(out: Path, env: dict, proxy_pid: int) -> Result:
    wall, rss, cpu, proxy_cpu = run_workers([crawl_command(fresh(out))], env, proxy_pid)
    return Result(pages_in(out), wall, rss, (cpu, 0.0, proxy_cpu))


def distributed(out: Path, work: Path, workers: int, env: dict, proxy_pid: int) -> Result:
    """*workers* workers on a fresh Redis; each logs its stats (INFO) to its own file."""
    fresh(out)
    logs = [fresh(work / "logs") / f"worker{i}.log" for i in range(workers)]
    with RedisServer(work / "redis") as redis_server:
        client = redis_server.client()
        baseline = client.info("memory")["used_memory"]
        commands = [
            crawl_command(out, "--redis", redis_server.url, "--keep", "--log-file", str(log), "-s", "LOG_LEVEL=INFO")
            for log in logs
        ]
        wall, rss, cpu, proxy_cpu = run_workers(commands, env, proxy_pid)
        redis_cpu = client.info("cpu")
        memory = client.info("memory")
        seen = sum(client.scard(key) for key in client.scan_iter(match="tse:*:seen"))
    pages = pages_in(out)
    round_trips = sum(int(ROUND_TRIPS.findall(log.read_text())[-1]) for log in logs)
    return Result(
        pages,
        wall,
        rss,
        (cpu, redis_cpu["used_cpu_user"] + redis_cpu["used_cpu_sys"], proxy_cpu),
        round_trips=round_trips / pages,
        peak=(memory["used_memory_peak"] - baseline) / seen,
        after=(memory["used_memory"] - baseline) / seen,
    )


def run(pages: int = PAGES, rounds: int = ROUNDS, workers: tuple[int, ...] = WORKERS) -> list[str]:
    scale = WORK / "scale"
    # Pages in memory (common.py): after the removal of a crawl's 100,000 pages,
    # ext4 took 0.3-0.7 ms to create a file, which weighed on the crawls that came next.
    work = MEMORY_OUT / f"tse-scale-bench-{os.getpid()}"  # another benchmark may run beside this one
    site = scale / f"site-{pages}"
    generate(site, pages)
    server = subprocess.Popen(
        [sys.executable, "-m", "tse_scrapy.devtools.siteserver", str(site)], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    proxy = server.stdout.readline().split()[-1]
    env = env_with_proxy(proxy)
    results: dict[int, list[Result]] = {n: [] for n in (0, *workers)}  # 0: the single process
    try:
        for round_number in range(rounds):
            # Every other round the other way round: whatever drifts during a run
            # (the machine's other work) does not always favour the same crawl.
            crawls = [0, *workers] if round_number % 2 == 0 else [*workers, 0]
            for n in crawls:
                if n == 0:
                    results[0].append(single_process(work / "out", env, server.pid))
                else:
                    results[n].append(distributed(work / "out", work, n, env, server.pid))
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(work, ignore_errors=True)
    return report(pages, rounds, results)


def report(pages: int, rounds: int, results: dict[int, list[Result]]) -> list[str]:
    def median(values) -> float:
        return statistics.median(list(values))

    def cpu(runs: list[Result]) -> str:
        crawl, redis, proxy = (median(r.cpu[i] for r in runs) for i in range(3))
        busy = median(sum(r.cpu) / r.wall for r in runs)
        return f"{crawl:.0f} / {redis:.0f} / {proxy:.0f} | {busy:.2f}"

    singles = results[0]
    rows = [
        "| crawl | pages | wall s | pages/s | vs one process | Redis round trips per page | "
        "CPU s: crawl / Redis / proxy | cores busy | peak RSS MB (each process) | Redis peak B/URL | "
        "Redis after B/URL |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        f"| one process, `order=bfs` | {singles[0].pages} | {median(r.wall for r in singles):.0f} | "
        f"{median(r.speed for r in singles):.0f} | 1.00x | - | {cpu(singles)} | "
        f"{max(r.rss[0] for r in singles):.0f} | - | - |",
    ]
    for n, runs in results.items():
        if n == 0:
            continue
        ratios = [r.speed / single.speed for r, single in zip(runs, singles, strict=True)]
        peak_rss = [max(r.rss[i] for r in runs) for i in range(n)]
        rows.append(
            f"| {n} worker{'s' if n > 1 else ''} + Redis | {runs[0].pages} | {median(r.wall for r in runs):.0f} | "
            f"{median(r.speed for r in runs):.0f} | {median(ratios):.2f}x | "
            f"{median(r.redis['round_trips'] for r in runs):.2f} | {cpu(runs)} | "
            f"{', '.join(f'{r:.0f}' for r in peak_rss)} | "
            f"{median(r.redis['peak'] for r in runs):.0f} | {median(r.redis['after'] for r in runs):.0f} |"
        )
    each = "One run each" if rounds == 1 else f"Medians of {rounds} rounds (ratios taken within each round)"
    return [
        f"## Scale: a generated site of {pages:,} pages on {len(HOSTS)} virtual hosts, breadth-first",
        "",
        f"`DOWNLOAD_DELAY=0`, `CONCURRENT_REQUESTS={CONCURRENCY}` per process, through one proxy on "
        f"127.0.0.1 (`tse_scrapy/devtools/siteserver.py`, one Python process). {each}; "
        "the crawls of a round run one after the other (every other round in the reverse order) "
        f"on the same {CORES} cores as the proxy and Redis, "
        f"writing their pages to {'memory (tmpfs)' if MEMORY_OUT != WORK else 'bench/work'}.",
        "Redis round trips per page: the workers' `tse/redis_round_trips` (counted by their Redis client) "
        "over the pages saved. Redis bytes per URL: memory used above the empty server's, divided by the "
        "URLs seen, at the peak (frontier full) and after the crawl (kept with `--keep`: seen set and docID records). "
        "CPU: medians of the crawl processes' CPU seconds (all workers together), Redis's and the proxy's "
        f"during the crawl; cores busy: their sum over the wall time, out of {CORES}.",
        "",
        *rows,
        "",
    ]


if __name__ == "__main__":
    print("\n".join(run(int(sys.argv[1]) if len(sys.argv) > 1 else PAGES)))
