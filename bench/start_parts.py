"""Where `tse serve`'s start goes on the 20,000-page bench (bench/start_ab.py's pages and index): this
checkout's server started STARTS times (and COMMIT's in turn, serving the same index), each process
saying when it reached each part of the start (seconds from the bench starting it, one clock for all),
then each part's median, and that of the CPU time the server's processes had taken when it answered.
`.venv/bin/python -m bench.start_parts [STARTS [COMMIT]]`.

The parts are marked by wrapping the functions that begin and end them (nothing of the server is
changed): the parent's imports, its opening and checking of the index, its listening socket, the fork
of each worker, each worker's opening of the index and its server listening, the first search."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from bench.common import BIN, ROOT, WORK, round_order, unpack_mirror
from bench.index_bench import large_directory, page_directories, worktree
from bench.search_bench import HOST, get
from tests.support.net import free_port

# Run in the server's process in place of the ``tse`` script: marks each part as it is reached.
_MARKED = r"""
import functools, importlib.abc, importlib.util, os, sys, time
T0 = float(os.environ["TSE_PARTS_T0"])
sys.path.insert(0, os.environ["TSE_PARTS_CODE"])
def mark(name):
    os.write(2, f"part {os.getpid()} {name} {time.monotonic() - T0:.4f}\n".encode())
mark("python started")
def marked(owner, name, before, after=None):
    function = getattr(owner, name)
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if before: mark(before)
        try:
            return function(*args, **kwargs)
        finally:
            if after: mark(after)
    setattr(owner, name, wrapper)
def answer_marked(engine):
    first = engine.QueryEngine.answer
    def answer(self, *args, **kwargs):
        mark("search begun")
        try:
            return first(self, *args, **kwargs)
        finally:
            mark("search ended")
    engine.QueryEngine.answer = answer
# Each module's functions wrapped once it is imported, whenever the command imports it.
PATCHES = {
    "tse_scrapy.cli": lambda m: marked(m, "serve", "serve called"),
    "tse_scrapy.index.indexer": lambda m: marked(m, "check_page_directory", "", "pages checked"),
    "tse_scrapy.index.engine": answer_marked,
    "tse_scrapy.search.server": lambda m: (mark("server imported"), marked(m, "listen", "", "socket listening"),
                                           marked(m, "serve_forever", "serving", "")),
    "tse_scrapy.search.app": lambda m: marked(m, "create_app_from_environment", "app making", "app made"),
    "tse_scrapy.search.balancing": lambda m: marked(m.BalancedServer, "startup", "", "worker listening"),
}
class Patching(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name not in PATCHES:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        execute = spec.loader.exec_module
        def exec_module(module):
            execute(module)
            PATCHES[name](module)
        spec.loader.exec_module = exec_module
        return spec
sys.meta_path.insert(0, Patching())
os.register_at_fork(after_in_child=lambda: mark("forked"))
from tse_scrapy import cli
mark("cli imported")
sys.argv[0] = "tse"
raise SystemExit(cli.main())
"""

ORDER = [
    "python started",
    "cli imported",
    "serve called",
    "server imported",
    "pages checked",
    "socket listening",
    "serving",
    "forked",
    "app making",
    "app made",
    "worker listening",
    "search begun",
    "search ended",
    "answered",
    "CPU of the server's processes",
]


def start(directory: Path, index: Path, code: Path) -> dict[str, list[float]]:
    """One start of the server of *code* (a checkout): each part's times (a part each worker reaches:
    one time each), and the answer's."""
    port = free_port()
    environment = {**os.environ, "TSE_PARTS_T0": repr(time.monotonic()), "TSE_PARTS_CODE": str(code)}
    process = subprocess.Popen(
        [str(BIN / "python"), "-c", _MARKED, "serve", str(directory), str(index), "--host", HOST, "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=environment,
        text=True,
    )
    t0 = float(environment["TSE_PARTS_T0"])
    try:
        while True:
            if process.poll() is not None:
                raise SystemExit(f"bench: tse serve exited {process.returncode}")
            try:
                status, _ = get(port, "/api/search?q=computer")
            except ConnectionRefusedError:
                time.sleep(0.002)
                continue
            if status != 200:
                raise SystemExit(f"bench: tse serve answered {status}")
            answered = time.monotonic() - t0
            cpu = cpu_seconds(process.pid)
            break
    finally:
        process.send_signal(2)
        _, stderr = process.communicate(timeout=30)
    parts: dict[str, list[float]] = defaultdict(list)
    for line in stderr.splitlines():
        if line.startswith("part "):
            _, _pid, rest = line.split(" ", 2)
            name, seconds = rest.rsplit(" ", 1)
            parts[name].append(float(seconds))
    parts["answered"] = [answered]
    parts["CPU of the server's processes"] = [cpu]
    return parts


def cpu_seconds(pid: int) -> float:
    """The CPU seconds the server's processes ran so far (a loaded machine's time to an answer is
    mostly these shared with others): the process's and its children's, and those of children it ended
    and waited for (in clock ticks)."""
    import psutil

    process = psutil.Process(pid)
    total = 0.0
    for each in (process, *process.children(recursive=True)):
        try:
            total += int(Path(f"/proc/{each.pid}/schedstat").read_text().split()[0]) / 1e9
        except (OSError, IndexError, ValueError):
            pass
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return total + (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def run(starts: int, commit: str | None) -> list[str]:
    directory = large_directory(page_directories(unpack_mirror())["wikipedia-2"])
    index = WORK / "start-this" / "large.index"
    if not index.is_file():
        raise SystemExit(f"bench: no {index}: run bench.start_ab first (it writes it)")
    contenders = {"this checkout": ROOT}
    if commit is not None:  # (start_ab's worktree of it; both serve the same index)
        contenders[commit] = worktree(WORK / f"latency-{commit}", commit)
    found: dict[str, dict[str, list[float]]] = {name: defaultdict(list) for name in contenders}
    for number in range(starts):
        for name in round_order(contenders, number):
            parts = start(directory, index, contenders[name])
            # The first time each part was reached (the first worker to reach it), and the first search's end.
            for part, times in parts.items():
                found[name][part].append(min(times))
            print(f"start {number + 1} {name}: answered after {parts['answered'][0]:.3f} s", flush=True)
    lines = [
        "| part | " + " | ".join(f"{name}: median s" for name in contenders) + " |",
        "|---|" + "---|" * len(contenders),
    ]
    for part in ORDER:
        if all(part in found[name] for name in contenders):
            medians = (statistics.median(found[name][part]) for name in contenders)
            lines.append(f"| {part} | " + " | ".join(f"{median:.3f}" for median in medians) + " |")
    return lines


if __name__ == "__main__":
    print("\n".join(run(int(sys.argv[1]) if len(sys.argv) > 1 else 8, sys.argv[2] if len(sys.argv) > 2 else None)))
