"""Short connections to `tse serve` (each asks /healthz once, with ``Connection: close``), this
checkout against another commit's code side by side in the same rounds: connections a second and
their median time with 1, 2 and 16 clients at once, and the workers' CPU a connection.  What a
worker's accepting costs, which kept-alive connections (bench.latency_ab) do not show.
`.venv/bin/python -m bench.connections_ab COMMIT [ROUNDS]`; prints one line a measure and round, then
the medians."""

from __future__ import annotations

import socket
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from bench.common import round_order
from bench.known_item_bench import ALL, KNOWN
from bench.latency_ab import servers
from bench.search_bench import HOST, Server, cpu_seconds

CLIENTS = (1, 2, 16)
CONNECTIONS = 2_000  # a measure
REQUEST = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"


def ask_once(port: int) -> float:
    """Seconds to connect, ask and read the whole answer."""
    began = time.perf_counter()
    with socket.create_connection((HOST, port)) as connection:
        connection.sendall(REQUEST)
        answer = b""
        while chunk := connection.recv(4096):
            answer += chunk
    if not answer.startswith(b"HTTP/1.1 200"):
        raise SystemExit(f"bench: /healthz answered {answer[:40]!r}")
    return time.perf_counter() - began


def measure(port: int, pid: int, clients: int) -> tuple[float, float, float]:
    """Connections a second, their median in ms, and the server's CPU a connection in us."""
    used, began = cpu_seconds(pid), time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        times = list(pool.map(lambda _: ask_once(port), range(CONNECTIONS)))
    wall = time.perf_counter() - began
    return CONNECTIONS / wall, statistics.median(times) * 1000, (cpu_seconds(pid) - used) * 1e6 / CONNECTIONS


def run(commit: str, rounds: int) -> list[str]:
    contenders, indexes = servers(commit)
    found: dict[tuple[str, int], list[tuple[float, float, float]]] = {}
    lines = []
    for number in range(rounds):
        for name in round_order(contenders, number):
            server = Server(KNOWN / "pages" / ALL, indexes[name], None, contenders[name])
            try:
                server.first_answer("/healthz")
                for _ in range(200):  # warm-up
                    ask_once(server.port)
                for clients in CLIENTS:
                    rate, median, cpu = measure(server.port, server.process.pid, clients)
                    found.setdefault((name, clients), []).append((rate, median, cpu))
                    lines.append(
                        f"round {number + 1} {name}, {clients} clients: {rate:.0f} connections/s, "
                        f"median {median:.2f} ms, server CPU {cpu:.0f} us a connection"
                    )
                    print(lines[-1], flush=True)
            finally:
                server.stop()
    for (name, clients), values in found.items():
        lines.append(
            f"{name}, {clients} clients: median {statistics.median(v[0] for v in values):.0f} connections/s, "
            f"{statistics.median(v[1] for v in values):.2f} ms, "
            f"server CPU {statistics.median(v[2] for v in values):.0f} us a connection"
        )
    return lines


if __name__ == "__main__":
    print("\n".join(run(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 4)))
