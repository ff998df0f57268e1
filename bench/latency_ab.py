"""Latency of `tse serve` with rank=relevance, this checkout against another commit's code, side by
side in the same rounds (the known-item bench's all-sites index, titles as typed, 8 keep-alive
clients, the first page of results), the server's CPU a request (all its processes), and how many of
the clients' connections each worker process holds.  The p50 of the requests that asked a title first
in the round is shown apart: a server that keeps its answers (search/answercache.py) sends the
titles asked again from memory.
`.venv/bin/python -m bench.latency_ab COMMIT [ROUNDS]`; the
other commit is checked out as a git worktree under bench/work, and serves an index its own `tse index`
wrote there (its search index's format may be another).  Prints one line a round and the medians."""

from __future__ import annotations

import statistics
import subprocess
import sys
import threading
from pathlib import Path

from bench.common import BIN, WORK, round_order
from bench.index_bench import tse_from, worktree
from bench.known_item_bench import (
    ALL,
    CLIENTS,
    KNOWN,
    WARM_UP,
    Server,
    _latency_round,
    api_path,
    ask_all,
    build,
    index_path,
    known_items,
    sites,
)
from bench.search_bench import connections_by_worker, cpu_seconds


def servers(commit: str) -> tuple[dict[str, list[str]], dict[str, Path]]:
    """The ``tse`` command of *commit* (a worktree under bench/work) and of this checkout, and the
    all-sites index each serves (*commit*'s written by its own ``tse index``)."""
    build(sites())
    other = worktree(WORK / f"latency-{commit}", commit)
    contenders = {commit: tse_from(other), "this checkout": [str(BIN / "tse")]}
    other_index = WORK / f"latency-{commit}-index" / "all-sites.index"
    other_index.parent.mkdir(parents=True, exist_ok=True)
    command = [*tse_from(other), "index", str(KNOWN / "pages" / ALL), str(other_index), "--jobs", "2"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)  # written anew: the pages may have changed
    return contenders, {commit: other_index, "this checkout": index_path(ALL)}


def run(commit: str, rounds: int) -> list[str]:
    contenders, indexes = servers(commit)
    items, _, _ = known_items(KNOWN / "pages" / ALL, lambda _: ("", ""))
    queries = [item.title for item in items]
    found: dict[str, list[tuple[float, float, float, int, float, float]]] = {name: [] for name in contenders}
    lines = []
    for number in range(rounds):
        order = round_order(contenders, number)
        for name in order:
            server = Server(KNOWN / "pages" / ALL, indexes[name], None, contenders[name])
            try:
                server.first_answer("/healthz")
                ask_all(server.port, [api_path(query, "relevance") for query in queries[:WARM_UP]], CLIENTS)
                used = cpu_seconds(server.process.pid)
                # How the clients' kept-alive connections are shared among the workers, a second in.
                split: list[list[int]] = []
                looked = threading.Timer(1.0, _look, (split, server.process.pid, server.port))
                looked.start()
                measured = _latency_round(server.port, queries, "relevance", number, None)  # the first page
                looked.join()
                used = (cpu_seconds(server.process.pid) - used) * 1000 / len(measured.latencies)
            finally:
                server.stop()
            found[name].append(
                (measured.p50, measured.p99, measured.rate, measured.errors, used, measured.first_asked_p50)
            )
            lines.append(
                f"round {number + 1} {name}: p50 {measured.p50:.1f} ms (titles asked first in the round "
                f"{measured.first_asked_p50:.1f} ms, {len(measured.first_asked)} of {len(measured.latencies)}), "
                f"p99 {measured.p99:.1f} ms, "
                f"{measured.rate:.0f} requests/s, {measured.errors} errors, server CPU {used:.2f} ms a request, "
                f"connections a worker {split[0] if split else '?'}"
            )
            print(lines[-1], flush=True)
    for name, values in found.items():
        lines.append(
            f"{name}: median p50 {statistics.median(v[0] for v in values):.1f} ms "
            f"(titles asked first {statistics.median(v[5] for v in values):.1f} ms), "
            f"p99 {statistics.median(v[1] for v in values):.1f} ms, "
            f"{statistics.median(v[2] for v in values):.0f} requests/s, errors {sum(v[3] for v in values)}, "
            f"server CPU {statistics.median(v[4] for v in values):.2f} ms a request"
        )
    return lines


def _look(split: list[list[int]], pid: int, port: int) -> None:
    split.append(sorted(connections_by_worker(pid, port).values()))


if __name__ == "__main__":
    print("\n".join(run(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 4)))
