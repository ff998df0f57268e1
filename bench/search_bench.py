"""Search benchmark: a running `tse serve` over real HTTP on 127.0.0.1 (the
wikipedia depth-2 pages and index), 8 concurrent clients sending the 1,000
generated queries of bench/index_bench.py, and `tse query` given a 1 MB line.
Run by bench/run.py.

Each round starts a fresh server and measures, from the process start, its
listening message, its first /healthz 200 and its first /api/search answer;
then a warm-up pass (not counted), then one pass per endpoint, then the
server's RSS from /proc.  Baselines, side by side in the same rounds: `tse
query` starting and exiting on empty input (the index load without the web
server), and /healthz through the same clients (what the HTTP stack and this
load generator cost, with no search).

The load generator is our own, about 70 lines (threads, one keep-alive
`http.client` connection each), because the measurement wants exactly the
1,000 given queries once per pass, each request's latency kept (exact medians
and p99), and every answer checked (status, and for /api/search the number of
documents against the engine's own answer); `ab` sends one URL, `wrk` runs for
a duration with a Lua script, and neither is installed by the project.  It
shares the machine's 2 cores with the server: its CPU per request is shown.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import BIN, REPEAT, ROOT, WORK, measure
from bench.index_bench import QUERIES, page_directories
from tests.support.net import free_port
from tse_scrapy.fulltext import store
from tse_scrapy.index.storage import stamped_digest

CLIENTS = 8
# `tse serve` as by default (a worker process a core, at most 4), and as one process.
DEFAULT_WORKERS = min(os.cpu_count() or 1, 4)
SERVERS = {"default": None, "one process": 1}
HOST = "127.0.0.1"
WARM_UP_OTHERS = 100  # /search and rank=bm25 requests in the warm-up, after every query through /api/search
GOAL_P50_MS = 10.0
GOAL_RATE = 300.0
GOAL_CLI_SECONDS = 1.0
GOAL_CLI_EXTRA_MB = 50.0
TICKS = os.sysconf("SC_CLK_TCK")
# The queries and what the engine answers to each (the number of documents, or
# None when it refuses the line), computed in a child so that this process,
# which forks every measured command, never holds an index.
_EXPECTED = """
import json, sys
sys.path.insert(0, sys.argv[1])
from bench.index_bench import generate_queries
from tse_scrapy.index.engine import QueryEngine
from tse_scrapy.index.storage import IndexReader
engine = QueryEngine(sys.argv[2], IndexReader(sys.argv[3]))
answers = []
for line in generate_queries(sys.argv[3], int(sys.argv[4])):
    answer = engine.answer(line, limit_size=True)
    answers.append([line, None if answer is None or answer.error else len(answer.ranked)])
json.dump(answers, sys.stdout)
"""
# 1 MB lines for `tse query` (the two, and the second made a valid query).
CLI_LINES = {
    '"book" x 200,000': "book " * 200_000,
    '"the and" x 125,000 (ends in `and`: refused)': "the and " * 125_000,
    '"the and" x 125,000, then "the"': "the and " * 125_000 + "the",
}


@dataclass
class Pass:
    """One pass of requests: per-request latencies and outcomes, wall time, CPU used."""

    latencies: list[float]
    ok: int
    refused: int
    errors: int
    wall: float
    server_cpu: float
    client_cpu: float

    @property
    def requests(self) -> int:
        return len(self.latencies)

    def p50(self) -> float:
        return statistics.median(self.latencies)

    def p99(self) -> float:
        ordered = sorted(self.latencies)
        return ordered[int(len(ordered) * 0.99)]

    def rate(self) -> float:
        return self.requests / self.wall


def ensure_index(directory: Path, index: Path) -> None:
    """*index* of *directory*, written again when a file is missing or its search index is not the one
    of that index (of another format, say)."""
    if not all(Path(f"{index}{suffix}").is_file() for suffix in ("", ".bin", ".docs")) or not _current(index):
        subprocess.run([str(BIN / "tse"), "index", str(directory), str(index)], check=True)


def _current(index: Path) -> bool:
    # The digest its stamp records, not the index read (this process never holds an index).
    digest = stamped_digest(index, index.stat())
    return digest is not None and store.check(store.search_path(index), index.stat().st_size, digest) is None


def expected_answers(directory: Path, index: Path) -> list[tuple[str, int | None]]:
    output = subprocess.run(
        [sys.executable, "-c", _EXPECTED, str(ROOT), str(directory), str(index), str(QUERIES)],
        capture_output=True,
        check=True,
    ).stdout
    return [(line, total) for line, total in json.loads(output)]


def process_tree(pid: int) -> list[int]:
    """*pid* and its descendants (`tse serve`'s worker processes)."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            continue
    tree = [pid]
    for member in tree:
        tree += [child for child, parent in parents.items() if parent == member]
    return tree


def connections_by_worker(pid: int, port: int) -> dict[int, int]:
    """How many established connections to *port* each worker process of server *pid* holds (read in
    /proc: each worker's socket inodes among the established ones)."""
    established = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == port and fields[3] == "01":  # 01: established
                established.add(f"socket:[{fields[9]}]")
    held = {}
    for member in process_tree(pid)[1:]:
        try:
            held[member] = sum(_link(fd) in established for fd in Path(f"/proc/{member}/fd").iterdir())
        except OSError:  # gone meanwhile
            continue
    return held


def _link(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:  # closed meanwhile
        return ""


def cpu_seconds(pid: int) -> float:
    """User + system CPU so far of process *pid* and its descendants."""
    total = 0
    for member in process_tree(pid):
        fields = Path(f"/proc/{member}/stat").read_text().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    return total / TICKS


def memory_mb(pid: int) -> dict[str, float]:
    """VmRSS and VmHWM of process *pid* and its descendants, summed, in MB."""
    values = {"VmRSS": 0.0, "VmHWM": 0.0}
    for member in process_tree(pid):
        for line in Path(f"/proc/{member}/status").read_text().splitlines():
            name, _, value = line.partition(":")
            if name in values:
                values[name] += int(value.split()[0]) / 1024
    return values


def get(port: int, path: str, timeout: float = 30) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


class Server:
    """`tse serve` in its own process, timed from its start to its first answers."""

    def __init__(
        self, directory: Path, index: Path, workers: int | None, tse: list[str] | None = None, options: tuple = ()
    ):
        """*tse*: the command that runs ``tse`` (another version's, say); by default this checkout's;
        *options*: more of ``tse serve``'s options."""
        self.port = free_port()
        self.listening: float | None = None
        self.stderr: list[str] = []
        self.start = time.perf_counter()
        command = [*(tse or [str(BIN / "tse")]), "serve", str(directory), str(index), "--host", HOST]
        self.process = subprocess.Popen(
            [*command, "--port", str(self.port), *options] + (["--workers", str(workers)] if workers else []),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.reader = threading.Thread(target=self._read_stderr, daemon=True)
        self.reader.start()

    def _read_stderr(self) -> None:
        for line in self.process.stderr:
            if self.listening is None and line.startswith("tse serve: searching"):
                self.listening = time.perf_counter() - self.start
            self.stderr.append(line)

    def first_answer(self, path: str, deadline: float = 60) -> float:
        """Seconds from the process start until *path* answers 200 (polled every 2 ms until it does)."""
        while time.perf_counter() - self.start < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"bench: tse serve exited {self.process.returncode}: {''.join(self.stderr)}")
            try:
                status, body = get(self.port, path)
            except ConnectionRefusedError:
                time.sleep(0.002)
                continue
            if status != 200:
                raise SystemExit(f"bench: tse serve answered {status} to {path}: {body[:200]!r}")
            return time.perf_counter() - self.start
        raise SystemExit(f"bench: tse serve did not answer {path} within {deadline} s")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)
        try:
            code = self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise SystemExit("bench: tse serve did not stop on SIGINT within 30 s") from None
        self.reader.join(timeout=5)
        if code != 0:
            raise SystemExit(f"bench: tse serve exited {code} on SIGINT: {''.join(self.stderr)}")


def load(server: Server, requests: list[tuple[str, int | None]], clients: int, check_totals: bool) -> Pass:
    """Send every (path, expected total) once, from *clients* threads with a keep-alive
    connection each.  An answer counts as refused when the engine refuses the query
    (expected None) and the server says 400; any other non-200, a failed request or
    (with *check_totals*) a JSON total other than the engine's counts as an error."""
    pending = iter(requests)
    lock = threading.Lock()
    outcomes: list[tuple[float, str]] = []
    ready = threading.Barrier(clients + 1, timeout=60)

    def client() -> None:
        connection = http.client.HTTPConnection(HOST, server.port, timeout=30)
        connection.connect()
        mine = []
        ready.wait()
        while True:
            with lock:
                item = next(pending, None)
            if item is None:
                break
            path, total = item
            began = time.perf_counter()
            try:
                connection.request("GET", path)
                response = connection.getresponse()
                body = response.read()
                status = response.status
            except (OSError, http.client.HTTPException):
                status, body = 0, b""
                connection.close()  # reopened by the next request
            mine.append(((time.perf_counter() - began) * 1000, outcome(status, body, total, check_totals)))
        connection.close()
        with lock:
            outcomes.extend(mine)

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    server_cpu, client_cpu = cpu_seconds(server.process.pid), time.process_time()
    ready.wait()
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    kinds = [kind for _, kind in outcomes]
    return Pass(
        [elapsed for elapsed, _ in outcomes],
        kinds.count("ok"),
        kinds.count("refused"),
        kinds.count("error") + len(requests) - len(outcomes),
        wall,
        cpu_seconds(server.process.pid) - server_cpu,
        time.process_time() - client_cpu,
    )


def outcome(status: int, body: bytes, total: int | None, check_totals: bool) -> str:
    if status == 400 and total is None:
        return "refused"
    if status != 200 or total is None:
        return "error"
    if check_totals and json.loads(body)["total"] != total:
        return "error"
    return "ok"


def search_path(route: str, line: str, rank: str = "tse") -> str:
    return f"{route}?{urlencode({'q': line, 'rank': rank})}"


# (label, route, rank, clients, queries): the first is the baseline, the last one client
# alone (the latency without queueing; the first queries only, to keep the round short).
SINGLE = 200
PASSES = (
    ("`/healthz` (baseline: HTTP only)", "/healthz", None, CLIENTS, QUERIES),
    ("`/api/search` rank=tse", "/api/search", "tse", CLIENTS, QUERIES),
    ("`/api/search` rank=bm25", "/api/search", "bm25", CLIENTS, QUERIES),
    ("`/search` (HTML page) rank=tse", "/search", "tse", CLIENTS, QUERIES),
    ("`/api/search` rank=tse, 1 client", "/api/search", "tse", 1, SINGLE),
)


def server_round(directory: Path, index: Path, answers: list[tuple[str, int | None]], workers: int | None) -> dict:
    first_query = next(line for line, total in answers if total is not None)
    server = Server(directory, index, workers)
    try:
        start = {
            "healthz": server.first_answer("/healthz"),
            "api": server.first_answer(search_path("/api/search", first_query)),
        }
        start["listening"] = server.listening
        idle = memory_mb(server.process.pid)["VmRSS"]
        warm = [(search_path("/api/search", line), total) for line, total in answers]
        warm += [(search_path("/search", line), total) for line, total in answers[:WARM_UP_OTHERS]]
        warm += [(search_path("/api/search", line, "bm25"), total) for line, total in answers[:WARM_UP_OTHERS]]
        load(server, warm, CLIENTS, check_totals=False)
        passes = {}
        for label, route, rank, clients, count in PASSES:
            if rank is None:
                requests = [(route, 0)] * count
            else:
                requests = [(search_path(route, line, rank), total) for line, total in answers[:count]]
            passes[label] = load(server, requests, clients, check_totals=route == "/api/search")
        memory = memory_mb(server.process.pid)
    finally:
        server.stop()
    return {"start": start, "idle": idle, "memory": memory, "passes": passes}


def cli_round(directory: Path, index: Path) -> dict[str, tuple[float, float]]:
    command = [str(BIN / "tse"), "query", str(directory), str(index)]
    runs = {"empty input (baseline)": measure(command, stdin=b"")}
    for label, line in CLI_LINES.items():
        runs[label] = measure(command, stdin=(line + "\n").encode())
    return runs


def cli_outputs(directory: Path, index: Path) -> dict[str, str]:
    """What `tse query` prints after its echo of each 1 MB line (checked once, not timed)."""
    summaries = {}
    for label, line in CLI_LINES.items():
        output = subprocess.run(
            [str(BIN / "tse"), "query", str(directory), str(index)],
            input=(line + "\n").encode(),
            capture_output=True,
            check=True,
        ).stdout.decode()
        after_echo = output.split("\n", 2)[1] if output.startswith("Query") else output.split("\n", 1)[0]
        summaries[label] = after_echo.replace("Error: ", "").rstrip(".:")
    return summaries


def verdict(met: bool) -> str:
    return "met" if met else "missed"


def median(values) -> float:
    return statistics.median(list(values))


def start_table(rounds: list[dict], clis: list[dict]) -> list[str]:
    rows = [
        f"| from the process start to | wall s (median of {len(rounds)}) | min s | max s | goal |",
        "|---|---|---|---|---|",
    ]
    for label, key in (
        ("`tse serve`'s listening message", "listening"),
        ("the first 200 of `/healthz`", "healthz"),
        ("the first `/api/search` answer", "api"),
    ):
        values = [r["start"][key] for r in rounds]
        rows.append(f"| {label} | {median(values):.3f} | {min(values):.3f} | {max(values):.3f} | none set |")
    values = [c["empty input (baseline)"][0] for c in clis]
    rows.append(
        f"| baseline: `tse query` on empty input, start to exit | {median(values):.3f} | {min(values):.3f} "
        f"| {max(values):.3f} | none set |"
    )
    return rows


def memory_table(rounds: list[dict], clis: list[dict]) -> list[str]:
    baseline = median(c["empty input (baseline)"][1] for c in clis)
    return [
        "| process | RSS MB (median) | goal |",
        "|---|---|---|",
        f"| `tse serve`, idle after its first answer (VmRSS) | {median(r['idle'] for r in rounds):.0f} | none set |",
        f"| `tse serve`, after all the passes (VmRSS) | {median(r['memory']['VmRSS'] for r in rounds):.0f} "
        "| none set |",
        f"| `tse serve`, peak (VmHWM) | {median(r['memory']['VmHWM'] for r in rounds):.0f} | none set |",
        f"| baseline: `tse query` on empty input, peak (ru_maxrss) | {baseline:.0f} | none set |",
    ]


def load_table(rounds: list[dict]) -> list[str]:
    rows = [
        "| requests | clients | sent | 200 | 400 (refused queries) | errors | p50 ms | p99 ms | requests/s "
        "| server CPU ms/request | server busy | client CPU ms/request "
        f"| goal p50 <= {GOAL_P50_MS:.0f} ms | goal >= {GOAL_RATE:.0f} requests/s |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, _, rank, clients, _ in PASSES:
        passes: list[Pass] = [r["passes"][label] for r in rounds]
        p50, p99 = median(p.p50() for p in passes), median(p.p99() for p in passes)
        rate = median(p.rate() for p in passes)
        server_cpu = median(p.server_cpu / p.requests * 1000 for p in passes)
        busy = median(p.server_cpu / p.wall * 100 for p in passes)
        client_cpu = median(p.client_cpu / p.requests * 1000 for p in passes)
        goals = rank is not None and clients == CLIENTS
        rows.append(
            f"| {label} | {clients} | {len(passes)} x {passes[0].requests} | {sum(p.ok for p in passes)} "
            f"| {sum(p.refused for p in passes)} | {sum(p.errors for p in passes)} | {p50:.1f} | {p99:.1f} "
            f"| {rate:.0f} | {server_cpu:.2f} | {busy:.0f}% | {client_cpu:.2f} "
            f"| {verdict(p50 <= GOAL_P50_MS) if goals else '-'} | {verdict(rate >= GOAL_RATE) if goals else '-'} |"
        )
    return rows


def cli_table(clis: list[dict], outputs: dict[str, str]) -> list[str]:
    baseline_wall = median(c["empty input (baseline)"][0] for c in clis)
    baseline_rss = median(c["empty input (baseline)"][1] for c in clis)
    rows = [
        f"| input (one line of 1 MB) | wall s (median of {len(clis)}) | peak RSS MB | extra MB over empty input "
        f"| answer | goal < {GOAL_CLI_SECONDS:.0f} s | goal < {GOAL_CLI_EXTRA_MB:.0f} MB extra |",
        "|---|---|---|---|---|---|---|",
        f"| empty input (baseline) | {baseline_wall:.3f} | {baseline_rss:.0f} | - | - | - | - |",
    ]
    for label in CLI_LINES:
        wall, rss = median(c[label][0] for c in clis), median(c[label][1] for c in clis)
        rows.append(
            f"| {label} | {wall:.3f} | {rss:.0f} | {rss - baseline_rss:.0f} | {outputs[label]} "
            f"| {verdict(wall < GOAL_CLI_SECONDS)} | {verdict(rss - baseline_rss < GOAL_CLI_EXTRA_MB)} |"
        )
    return rows


def run(mirror: Path) -> list[str]:
    directory = page_directories(mirror)["wikipedia-2"]
    index = WORK / "wikipedia-2.index"
    ensure_index(directory, index)
    answers = expected_answers(directory, index)
    refused = sum(total is None for _, total in answers)
    began = time.perf_counter()
    clis, rounds = [], {setting: [] for setting in SERVERS}
    for _ in range(REPEAT):
        clis.append(cli_round(directory, index))
        for setting, workers in SERVERS.items():
            rounds[setting].append(server_round(directory, index, answers, workers))
    outputs = cli_outputs(directory, index)
    minutes = (time.perf_counter() - began) / 60
    return [
        "## Search server (wikipedia-2, `tse serve` over HTTP on 127.0.0.1)",
        "",
        f"{REPEAT} rounds, {minutes:.1f} min; each starts a fresh `tse serve` (Starlette on uvicorn) "
        "on the wikipedia-2 index and pages,",
        f"once with one process (`--workers 1`) and once as by default (a worker a core: {DEFAULT_WORKERS} here); "
        "medians. CPU and memory are summed over the server's processes.",
        "Baselines in the same rounds: `tse query` starting and exiting on empty input, and `/healthz`",
        "through the same load generator (bench/search_bench.py: threads, one keep-alive `http.client`",
        "connection each, on the same 2 cores as the server).",
        "",
        "### Start-up (by default)",
        "",
        *start_table(rounds["default"], clis),
        "",
        "### Load: 8 concurrent clients, keep-alive",
        "",
        f"The {QUERIES} generated queries of bench/index_bench.py (seed 1), each sent once per pass; "
        f"{refused} of them are refused by the engine",
        "(an `and` or `or` in the wrong place), and a 400 for those is expected, not an error.",
        f"Before the passes, a warm-up (not counted): every query through `/api/search`, then {WARM_UP_OTHERS} "
        "through `/search` and with rank=bm25.",
        "Errors: any other non-200, a failed request, or a `/api/search` total other than the engine's.",
        "p50 and p99: per-request latency, request sent to body read, each round's percentile then the median.",
        "Server busy: its CPU time over the pass's wall time (100% = one core, all a single process can use);",
        f"the last row is one client alone on the first {SINGLE} queries (latency without queueing).",
        "",
        f"By default ({DEFAULT_WORKERS} worker processes):",
        "",
        *load_table(rounds["default"]),
        "",
        "One process (`--workers 1`):",
        "",
        *load_table(rounds["one process"]),
        "",
        "### Server memory",
        "",
        f"By default ({DEFAULT_WORKERS} worker processes, each with the index; RSS summed):",
        "",
        *memory_table(rounds["default"], clis),
        "",
        "One process (`--workers 1`):",
        "",
        *memory_table(rounds["one process"], clis),
        "",
        "## A 1 MB query in `tse query` (wikipedia-2)",
        "",
        f"{REPEAT} rounds, side by side with `tse query` on empty input; medians. "
        "Peak RSS is the child's ru_maxrss, so the extra memory is the difference.",
        "",
        *cli_table(clis, outputs),
        "",
    ]


if __name__ == "__main__":
    from bench.common import unpack_mirror

    print("\n".join(run(unpack_mirror())))
