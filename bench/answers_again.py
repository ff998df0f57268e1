"""The server's CPU a search when the same titles are asked again: `tse serve` keeping its answers
(search/answercache.py, by default) against keeping none (`--answer-cache 0`), side by side in the same
rounds, on the known-item bench's all-sites index with 8 keep-alive clients.  Each round starts a server,
sends WARM_UP titles, then the next titles once (each asked for the first time) and the same titles again;
it prints the server's CPU a request (all its processes) for each pass, and for `/healthz` (HTTP and
Starlette alone).  `.venv/bin/python -m bench.answers_again [ROUNDS]`"""

from __future__ import annotations

import statistics
import sys

from bench.common import round_order
from bench.known_item_bench import (
    ALL,
    CLIENTS,
    KNOWN,
    WARM_UP,
    Server,
    api_path,
    ask_all,
    build,
    index_path,
    known_items,
    sites,
)
from bench.search_bench import cpu_seconds

CONTENDERS = {"answers kept": (), "none kept (--answer-cache 0)": ("--answer-cache", "0")}
HEALTH_REQUESTS = 3000


def one_round(options: tuple, queries: list[str]) -> dict[str, float]:
    """The server's CPU ms a request for /healthz, the titles' first pass and their second."""
    server = Server(KNOWN / "pages" / ALL, index_path(ALL), None, options=options)
    try:
        server.first_answer("/healthz")
        ask_all(server.port, [api_path(query, "relevance", per_page=None) for query in queries[:WARM_UP]], CLIENTS)
        titles = [api_path(query, "relevance", per_page=None) for query in queries[WARM_UP:]]
        measured = {}
        for name, paths in (("healthz", ["/healthz"] * HEALTH_REQUESTS), ("first", titles), ("again", titles)):
            used = cpu_seconds(server.process.pid)
            answers = ask_all(server.port, paths, CLIENTS)
            assert all(status == 200 for status, _, _ in answers), name
            measured[name] = (cpu_seconds(server.process.pid) - used) * 1000 / len(paths)
        return measured
    finally:
        server.stop()


def run(rounds: int) -> list[str]:
    build(sites())
    items, _, _ = known_items(KNOWN / "pages" / ALL, lambda _: ("", ""))
    queries = [item.title for item in items]
    found: dict[str, list[dict[str, float]]] = {name: [] for name in CONTENDERS}
    lines = []
    for number in range(rounds):
        for name in round_order(CONTENDERS, number):
            found[name].append(one_round(CONTENDERS[name], queries))
            values = found[name][-1]
            lines.append(
                f"round {number + 1} {name}: server CPU a request: /healthz {values['healthz']:.2f} ms, "
                f"titles asked first {values['first']:.2f} ms, the same asked again {values['again']:.2f} ms"
            )
            print(lines[-1], flush=True)
    for name, values in found.items():
        lines.append(
            f"{name} ({len(queries) - WARM_UP} titles, medians): "
            + ", ".join(f"{part} {statistics.median(v[part] for v in values):.2f} ms" for part in values[0])
        )
    return lines


if __name__ == "__main__":
    print("\n".join(run(int(sys.argv[1]) if len(sys.argv) > 1 else 2)))
