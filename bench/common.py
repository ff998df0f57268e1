"""What the benchmarks share: the mirror, child-process measurement, the machine."""

from __future__ import annotations

import compileall
import contextlib
import functools
import os
import platform
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "tse-sites"
WORK = ROOT / "bench" / "work"
BIN = Path(sys.executable).parent
REPEAT = int(os.environ.get("BENCH_REPEAT", "3"))
# Crawls whose speed is compared write their pages to memory (tmpfs) where there
# is one: on this machine's ext4, creating a file takes 0.06 to 0.9 ms depending
# on where in the disk the directory lands (a scan for a free inode after
# removals), which moved wget's time from 1.3 to 2.5 s between runs of the same
# code, and slows whichever crawl comes after the removal of another's pages.
MEMORY_OUT = Path("/dev/shm") if Path("/dev/shm").is_dir() else WORK


@functools.cache
def compile_code(code: Path) -> None:
    """Compile the tse_scrapy of *code* to bytecode (once a run), as pip does when it
    installs a package.  This machine sets PYTHONDONTWRITEBYTECODE, so the editable
    install would compile each of its modules again at every start: 0.08-0.1 s of
    CPU a crawl, which no installed copy pays.  Its search's modules too, with Cython,
    where that code has `make`'s step for it (tse_scrapy/devtools/compile.py), as `make` does."""
    compileall.compile_dir(code / "tse_scrapy", quiet=1)
    if (code / "tse_scrapy" / "devtools" / "compile.py").is_file():
        environment = {**os.environ, "PYTHONPATH": str(code)}
        command = [sys.executable, "-m", "tse_scrapy.devtools.compile"]
        subprocess.run(command, cwd=code, env=environment, check=True, stdout=subprocess.DEVNULL)


def unpack_mirror() -> Path:
    mirror = WORK / "mirror"
    if not (mirror / "cs50tse.cs.dartmouth.edu").is_dir():
        mirror.mkdir(parents=True, exist_ok=True)
        with tarfile.open(SHARED / "mirror.tar.xz") as tar:
            tar.extractall(mirror, filter="data")
    return mirror


@contextlib.contextmanager
def site_server(root: Path) -> Iterator[str]:
    """The site server (``tse_scrapy.devtools.siteserver``) serving the mirror *root* as an HTTP
    proxy on 127.0.0.1, in a process of its own while the block runs; yields its proxy URL."""
    server = subprocess.Popen(
        [sys.executable, "-m", "tse_scrapy.devtools.siteserver", str(root)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        yield server.stdout.readline().split()[-1]
    finally:
        server.terminate()
        server.wait()


def env_with_proxy(proxy: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "no_proxy")}
    env["http_proxy"] = proxy
    return env


def measure(command: list[str], env: dict | None = None, stdin: bytes | None = None, ok=(0,)) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one run of *command*.

    Linux counts the parent's resident size at fork in the child's peak, so
    measure from a small parent (before loading anything big in-process)."""
    start = time.perf_counter()
    process = subprocess.Popen(
        command,
        env=env,
        stdin=subprocess.PIPE if stdin is not None else None,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if stdin is not None:
        process.stdin.write(stdin)
        process.stdin.close()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in ok:
        raise SystemExit(f"bench: failed: {' '.join(command)}")
    return wall, usage.ru_maxrss / 1024


def machine() -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    import scrapy

    return (
        f"{platform.system()} {platform.release()} {platform.machine()}, {os.cpu_count()} cores ({cpu}), "
        f"Python {platform.python_version()}, Scrapy {scrapy.__version__}"
    )


def round_order(contenders, number: int) -> list:
    """The contenders (names, or a mapping's keys) in round *number*'s order: reversed every other
    round, so that neither always runs first while the machine's speed drifts."""
    names = list(contenders)
    return names if number % 2 == 0 else names[::-1]


def time_queries(querier, queries: list[str]) -> tuple[list[float], int]:
    """Each query's time in ms (sorted) through *querier*, after the first 50 as warm-up
    (they fill its URL cache), and how many documents the answers listed."""
    for line in queries[:50]:
        querier.answer(line)
    times, listed = [], 0
    for line in queries:
        start = time.perf_counter()
        output = querier.answer(line)
        times.append((time.perf_counter() - start) * 1000)
        listed += output.count("\nscore ")
    return sorted(times), listed
